"""The gate in front of the MCP tools over HTTP: bearer tokens, the caller's principal,
the ``audit`` tool, per-token rate limits, and the Host/Origin checks.

One ``Gate`` is built by ``evomem.security.configure.build_gate`` from the settings and used by both
HTTP wirings (the embedded server, the gateway), so both apply the same rules:

* ``server_kwargs()``: the MCP SDK's resource-server support (``token_verifier`` and
  ``AuthSettings``). A request without a valid token gets HTTP 401 with ``WWW-Authenticate``
  naming the protected-resource metadata (``/.well-known/oauth-protected-resource/mcp``).
* ``scoped(service)``: the ``MemoryService`` as the current caller may use it
  (``evomem.app.access.GuardedService``); the caller comes from the SDK's auth context.
* ``tools()``: the admin's ``audit`` tool (a plain function, bound and registered by the MCP server).
* ``wrap(app)``: per-token rate limits (HTTP 429 with ``Retry-After``), see ``evomem.security.ratelimit``.

Stdio never builds a gate: one local user, no tokens.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, Field

from evomem.app import incidents
from evomem.app.access import GuardedService, Principal
from evomem.domain.audit import AUDIT_PAGE_MAX
from evomem.domain.errors import EvoMemError, Forbidden, InvalidArgument
from evomem.security.tokens import TokenVerifier, principal_of

log = logging.getLogger("evomem.gate")

LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def current_principal() -> Principal | None:
    """The principal of the request being served (None: no authenticated caller)."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return principal_of(token.claims) if token is not None else None


def transport_security(host: str, allowed_hosts: list[str], allowed_origins: list[str]) -> Any:
    """Host and Origin checks, on whatever the bind address: loopback, the bind address
    itself when it is a specific one, and what EVOMEM_ALLOWED_HOSTS / _ORIGINS add."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts, origins = list(LOOPBACK_HOSTS), list(LOOPBACK_ORIGINS)
    if host not in ("0.0.0.0", "::", "") and not is_loopback(host):
        shown = f"[{host}]" if ":" in host else host
        hosts += [f"{shown}:*", shown]
        origins += [f"http://{shown}:*", f"https://{shown}:*", f"https://{shown}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts + allowed_hosts,
        allowed_origins=origins + allowed_origins,
    )


class AuditRecord(BaseModel):
    seq: int
    at: str = Field(description="When, ISO 8601 UTC.")
    identity: str = Field(description="The authenticated caller.")
    role: str
    tool: str = Field(description="remember, supersede, unlink, forget or purge.")
    namespace: str | None
    ids: list[str] = Field(description="Node ids involved: the node written first, then what it linked or restored.")
    outcome: str = Field(description="ok, or the error code the call ended with (forbidden, not_found...).")
    on_behalf_of: str | None = Field(None, description="The author an admin acted for.")
    detail: str | None = None


class AuditResult(BaseModel):
    entries: list[AuditRecord]
    next_before: int | None = Field(description="Pass as `before` for the next (older) page; null: no more.")


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ms(value: str | None, what: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"{what} must be an ISO 8601 time such as 2026-01-31T12:00:00Z") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


@dataclass
class Gate:
    verifier: TokenVerifier
    resource_url: str
    issuer_url: str
    limiter: Any = None  # evomem.security.ratelimit.RateLimiter

    def server_kwargs(self) -> dict[str, Any]:
        from mcp.server.auth.settings import AuthSettings

        return {
            "token_verifier": self.verifier,
            "auth": AuthSettings(
                issuer_url=self.issuer_url,  # type: ignore[arg-type]
                resource_server_url=self.resource_url,  # type: ignore[arg-type]
                # The verifier only knows tokens issued for this server (its own token file).
                validate_token_resource=False,
            ),
        }

    def scoped(self, service: Any) -> GuardedService:
        principal = current_principal()
        if principal is None:  # the SDK's middleware lets no such request through over HTTP
            raise Forbidden("no authenticated identity: send Authorization: Bearer <token>")
        return GuardedService(service, principal, service.storage)  # storage keeps the audit log

    def wrap(self, app: Any) -> Any:
        if self.limiter is None:
            return app
        from evomem.security.ratelimit import RateLimitMiddleware

        return RateLimitMiddleware(app, self.verifier, self.limiter)

    def tools(self) -> list[tuple[Callable[..., Any], Any]]:
        """The tools the gate adds, each with its MCP annotations: the admin's ``audit``."""
        from mcp.types import ToolAnnotations

        return [(audit, ToolAnnotations(title="Read the write audit log", read_only_hint=True))]


class Bound(Protocol):
    """What the server binds to a tool (``evomem.entrypoints.mcp.tools.Resources``): here, the
    service getter, which answers as the current caller may use the service."""

    @property
    def service(self) -> Callable[[], Any]: ...


def audit(
    resources: Bound,
    namespace: Annotated[str | None, Field(description="Only writes in this namespace.")] = None,
    since: Annotated[str | None, Field(description="Only writes at or after this ISO 8601 time.")] = None,
    until: Annotated[str | None, Field(description="Only writes before this ISO 8601 time.")] = None,
    before: Annotated[int | None, Field(description="Cursor: next_before of the previous page.")] = None,
    limit: Annotated[int, Field(ge=1, le=AUDIT_PAGE_MAX, description="Entries per page.")] = 50,
) -> AuditResult:
    """Page through the write audit log, newest first (admin only).

    Every remember, supersede, unlink, forget and purge made over authenticated HTTP is
    recorded with the caller's identity, the ids, the time and the outcome (failures and
    refusals too). Records hold no note text.
    """
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        entries = resources.service().audit(
            namespace=namespace,
            since_ms=_ms(since, "since"),
            until_ms=_ms(until, "until"),
            before_seq=before,
            limit=limit,
        )
    except EvoMemError as exc:
        raise ToolError(incidents.for_caller(exc)) from exc
    return AuditResult(
        entries=[
            AuditRecord(
                seq=e.seq,
                at=_iso(e.at),
                identity=e.identity,
                role=e.role,
                tool=e.tool,
                namespace=e.namespace,
                ids=list(e.ids),
                outcome=e.outcome,
                on_behalf_of=e.on_behalf_of,
                detail=e.detail,
            )
            for e in entries
        ],
        next_before=entries[-1].seq if len(entries) == limit else None,
    )
