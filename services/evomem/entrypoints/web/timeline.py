"""The decision timeline (``/ui``): a read-only page over the same service as the MCP tools.

Routes, added to the HTTP app of both wirings by ``evomem.entrypoints.mcp.http_app``:

- ``GET /ui``                  search (recall), filtered by namespace, scope and tag; each result
                               a chain, drawn like a git log graph (``pages``). Without a query:
                               the chains changed last, newest first, a page at a time (``before``:
                               the cursor of the "more" link), under the same filters
- ``GET /ui/chain/{node_id}``  one whole chain, the version asked for highlighted, and the
                               decisions built on it (who depends on or implements any version)
- ``POST /ui/login``           a token in the form's body -> an HttpOnly, SameSite=Strict cookie
- ``POST /ui/logout``          the cookie cleared

Who may look: with a gate (a token file or JWTs), the caller of the tools, and the same rules:
``Authorization: Bearer <token>``, or the cookie the login form sets from the same token; never
a token in a URL. Every read goes through ``GuardedService`` as that caller (roles, namespaces).
Without a gate (the embedded default, on loopback) the page is open, like the tools. The
Host and Origin checks of ``/mcp`` (DNS rebinding) apply here too. Every answer carries a
Content-Security-Policy that lets only this response's own inline script run.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import parse_qs

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from evomem.app import incidents
from evomem.app.access import GuardedService, Principal
from evomem.app.memory import MemoryService
from evomem.app.recall import HISTORY_DEPTH_MAX
from evomem.domain.browse import dependency_kinds
from evomem.domain.errors import EvoMemError
from evomem.domain.model import MemoryNode
from evomem.entrypoints.web import pages
from evomem.security.ratelimit import UI_COOKIE

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

log = logging.getLogger("evomem.ui")

COOKIE = UI_COOKIE  # the rate limits read it too
#: Results a search shows (chains), and the versions of each it fetches.
RESULTS = 20
MAX_FORM_BYTES = 8192
_COOKIE_SAFE = re.compile(r"^[A-Za-z0-9._~+/=-]{1,4096}$")
_STATUS = {"not_found": 404, "forbidden": 403, "purged": 410, "unavailable": 503, "internal": 500}


def security_headers(nonce: str) -> dict[str, str]:
    """What every page answers with: only this response's inline style and script, no frames,
    the referrer only to this server (a form's POST keeps its Origin), no caching (the page
    shows what the caller may read)."""
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


def _status(exc: EvoMemError) -> int:
    if exc.code in _STATUS:
        return _STATUS[exc.code]
    return 400


class Verifier(Protocol):
    """Turns a token into its principal (``evomem.security.tokens.TokenVerifier``)."""

    def principal(self, token: str) -> Principal | None: ...


class SignIn(Protocol):
    """What the page needs of the gate (``evomem.security.gate.Gate``): the tools' token verifier."""

    @property
    def verifier(self) -> Verifier: ...


Handler = Callable[[Request], Awaitable[Response]]


class Routes(Protocol):
    """Where the routes go: the MCP server's HTTP app (``MCPServer.custom_route``)."""

    def custom_route(self, path: str, methods: list[str]) -> Callable[[Handler], Handler]: ...


#: The service as one viewer may read it: the service itself (no gate), or guarded as a principal.
Reads = MemoryService | GuardedService


@dataclass(frozen=True)
class Viewer:
    """Who is looking: ``principal`` None without a gate (one local user)."""

    principal: Principal | None

    @property
    def name(self) -> str | None:
        return self.principal.name if self.principal is not None else None


class Timeline:
    """The page's handlers over ``service`` (the ``MemoryService`` getter the tools use), behind
    ``gate`` (None: open) and ``security`` (the SDK's Host/Origin checks, or None)."""

    def __init__(
        self,
        service: Callable[[], MemoryService],
        gate: SignIn | None = None,
        security: TransportSecuritySettings | None = None,
    ) -> None:
        self.service = service
        self.gate = gate
        self.security = security

    # ------------------------------------------------------------------ who

    def _principal_of(self, request: Request) -> Principal | None:
        """The caller a request names: its bearer token (read by the SDK's middleware), else the
        login cookie (checked by the same verifier). None: nobody valid."""
        from evomem.security.tokens import principal_of

        user = request.scope.get("user")
        if user is not None and getattr(user, "is_authenticated", False):
            token = getattr(user, "access_token", None)
            found = principal_of(getattr(token, "claims", None))
            if found is not None:
                return found
        cookie = request.cookies.get(COOKIE)
        if cookie and self.gate is not None:
            return self.gate.verifier.principal(cookie)
        return None

    def _scoped(self, viewer: Viewer) -> Reads:
        base = self.service()
        if viewer.principal is None:
            return base
        return GuardedService(base, viewer.principal, base.storage)

    async def _checked(self, request: Request) -> Response | None:
        """The Host/Origin checks of /mcp (an answer when they fail)."""
        if self.security is None:
            return None
        from mcp.server.transport_security import TransportSecurityMiddleware

        return await TransportSecurityMiddleware(self.security).validate_request(request, is_post=False)

    async def _viewer(self, request: Request) -> Viewer | Response:
        refused = await self._checked(request)
        if refused is not None:
            return refused
        if self.gate is None:
            return Viewer(None)
        principal = await anyio.to_thread.run_sync(self._principal_of, request)
        if principal is None:
            nonce = secrets.token_urlsafe(16)
            problem = "the token in the cookie is no longer accepted" if request.cookies.get(COOKIE) else None
            response = self._html(pages.login_page(nonce=nonce, problem=problem), nonce, 401)
            response.headers["WWW-Authenticate"] = 'Bearer realm="evomem"'
            if problem:
                response.delete_cookie(COOKIE, path="/ui")
            return response
        return Viewer(principal)

    @staticmethod
    def _html(body: str, nonce: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(body, status_code=status, headers=security_headers(nonce))

    # ------------------------------------------------------------------ pages

    async def search(self, request: Request) -> Response:
        viewer = await self._viewer(request)
        if isinstance(viewer, Response):
            return viewer
        q = request.query_params
        filters = pages.Filters(
            q=q.get("q", "").strip()[:500],
            namespace=q.get("namespace", "").strip()[:100],
            scope=q.get("scope", "").strip()[:100],
            tag=q.get("tag", "").strip()[:100],
            view="all" if q.get("view") == "all" else "current",
            before=q.get("before", "").strip()[:40],
        )
        nonce = secrets.token_urlsafe(16)
        try:
            namespaces, counts, listing = await anyio.to_thread.run_sync(self._search, viewer, filters)
        except EvoMemError as exc:
            page = pages.search_page(
                filters, [], [], nonce=nonce, error=incidents.for_caller(exc, logger=log), who=viewer.name
            )
            return self._html(page, nonce, _status(exc))
        page = pages.search_page(
            filters,
            namespaces,
            listing.chains,
            nonce=nonce,
            notes=listing.notes,
            who=viewer.name,
            counts=counts,
            more=listing.more,
        )
        return self._html(page, nonce)

    def _namespaces(self, viewer: Viewer, service: Reads) -> tuple[list[str], dict[str, int]]:
        """The namespaces the caller may pick (theirs, or every one the store counts) and the
        notes in each, where the store says."""
        principal = viewer.principal
        if principal is not None and not principal.every_namespace:
            return list(principal.namespaces), {}
        counts = dict(service.stats().namespaces)
        return sorted(counts), counts

    def _search(self, viewer: Viewer, filters: pages.Filters) -> tuple[list[str], dict[str, int], pages.Listing]:
        service = self._scoped(viewer)
        namespaces, counts = self._namespaces(viewer, service)
        if filters.namespace and filters.namespace not in namespaces:
            namespaces.append(filters.namespace)
        if not filters.q:
            return namespaces, counts, self._recent(service, filters)
        out = service.recall(
            filters.q,
            k=RESULTS,
            include_history=True,
            history_depth=HISTORY_DEPTH_MAX,
            scope=filters.scope or None,
            tags=[filters.tag] if filters.tag else None,
            namespace=filters.namespace or None,
        )
        chains = []
        for resolved, history in out.results:
            versions = [resolved.head, *history]
            chains.append(
                pages.ChainView(
                    versions=versions,
                    older_not_shown=max(0, resolved.head.version - len(versions)),
                    matched={m.node_id for m in resolved.matches},
                    maybe_replaced_by=[s.node for s in resolved.maybe_replaced_by],
                    scope_match=resolved.scope_match,
                )
            )
        return namespaces, counts, pages.Listing(chains, list(out.notes))

    @staticmethod
    def _recent(service: Reads, filters: pages.Filters) -> pages.Listing:
        """No query: the chains changed last (one page, ``RESULTS``), each with its earlier versions
        (read with the page, in one storage call), and the cursor of the next page."""
        page = service.recent(
            filters.namespace or None,
            scope=filters.scope or None,
            tags=[filters.tag] if filters.tag else None,
            limit=RESULTS,
            before=filters.before or None,
            history_depth=HISTORY_DEPTH_MAX,
        )
        chains = []
        for head in page.heads:
            versions = [head, *page.histories.get(head.id, ())]
            chains.append(pages.ChainView(versions=versions, older_not_shown=max(0, head.version - len(versions))))
        return pages.Listing(chains, [], more=page.more)

    async def chain(self, request: Request) -> Response:
        viewer = await self._viewer(request)
        if isinstance(viewer, Response):
            return viewer
        node_id = request.path_params.get("node_id", "")
        nonce = secrets.token_urlsafe(16)
        try:
            view = await anyio.to_thread.run_sync(self._chain, viewer, node_id)
        except EvoMemError as exc:
            page = pages.error_page(incidents.for_caller(exc, logger=log), nonce=nonce, who=viewer.name)
            return self._html(page, nonce, _status(exc))
        return self._html(pages.chain_page(view, nonce=nonce, who=viewer.name), nonce)

    def _chain(self, viewer: Viewer, node_id: str) -> pages.ChainView:
        """The whole chain of ``node_id`` (up to ``HISTORY_DEPTH_MAX`` versions), newest first."""
        service = self._scoped(viewer)
        node, head, _ = service.get_node(node_id)
        first: MemoryNode = head if head is not None else node
        top, _, history = service.get_node(first.id, include_history=True, history_depth=HISTORY_DEPTH_MAX)
        versions = [top, *history]
        ids = [v.id for v in versions]
        built_on = [(dependency_kinds(d, ids) or ["depends_on"], d) for d in service.dependents(top.id)]
        return pages.ChainView(
            versions=versions,
            older_not_shown=max(0, top.version - len(versions)),
            focus=node.id,
            dependents=[(kind, d) for kinds, d in built_on for kind in kinds],
        )

    # ------------------------------------------------------------------ sign in / out

    async def login(self, request: Request) -> Response:
        refused = await self._checked(request)
        if refused is not None:
            return refused
        if self.gate is None:
            return RedirectResponse("/ui", status_code=303)
        nonce = secrets.token_urlsafe(16)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                return self._html(pages.login_page(nonce=nonce, problem="the form is too large"), nonce, 413)
        try:
            form = parse_qs(body.decode("utf-8"), max_num_fields=4)
        except (UnicodeDecodeError, ValueError):
            form = {}
        token = (form.get("token") or [""])[0].strip()
        if not token or not _COOKIE_SAFE.match(token):
            problem = "paste a token" if not token else "this token cannot be kept in a cookie; use the header"
            return self._html(pages.login_page(nonce=nonce, problem=problem), nonce, 401)
        principal = await anyio.to_thread.run_sync(self.gate.verifier.principal, token)
        if principal is None:
            return self._html(pages.login_page(nonce=nonce, problem="this token is not accepted"), nonce, 401)
        response = RedirectResponse("/ui", status_code=303, headers={"Cache-Control": "no-store"})
        response.set_cookie(
            COOKIE,
            token,
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def logout(self, request: Request) -> Response:
        refused = await self._checked(request)
        if refused is not None:
            return refused
        response = RedirectResponse("/ui", status_code=303)
        response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
        return response


def add_ui_routes(
    server: Routes,
    service: Callable[[], MemoryService],
    *,
    gate: SignIn | None = None,
    security: TransportSecuritySettings | None = None,
) -> Timeline:
    """The timeline's routes on ``server``'s HTTP app (``server.custom_route``)."""
    timeline = Timeline(service, gate, security)
    server.custom_route("/ui", methods=["GET"])(timeline.search)
    server.custom_route("/ui/", methods=["GET"])(timeline.search)
    server.custom_route("/ui/chain/{node_id}", methods=["GET"])(timeline.chain)
    server.custom_route("/ui/login", methods=["POST"])(timeline.login)
    server.custom_route("/ui/logout", methods=["POST"])(timeline.logout)
    return timeline
