"""Who may do what: principals, roles, namespaces, attribution and the write audit.

``GuardedService`` is a thin authorizing facade over ``MemoryService``, with the same method
names and arguments. The MCP tools call it instead of the service when authentication is on
(the embedded HTTP server and the gateway alike), so the rules are the same code in both:

* roles: ``reader`` may recall, get_node, check and stats; ``writer`` also remember, supersede,
  unlink, review and soft forget; ``admin`` also forget(purge=True), every namespace and the audit log.
  A call outside the role is ``[forbidden]``, naming the role it needs.
* namespaces: recall, stats and remember on a namespace outside the principal's list are
  ``[forbidden]``; an id that lives in such a namespace answers exactly like an id that does
  not exist (``[not_found]``, same message), so ids reveal nothing. No namespace named: the
  principal's first one.
* attribution: the author of a note, a link, an unlink or a forget is the principal. Only an
  admin may name an ``author``; the node then records "<author> (via <admin>)" and the audit
  entry both names.
* audit: every write call is recorded (``AuditLog`` port), with its outcome, failures included.

Plain Python: no HTTP, gRPC or MCP imports. ``evomem.security.tokens`` turns a bearer token into a
``Principal``; ``evomem.security.gate`` finds the principal of the current request.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from evomem.app.memory import ForgetOutcome, MemoryService, RecallOutcome, RememberOutcome
from evomem.app.ports import AuditLog, Storage
from evomem.app.premise import CheckOutcome, ReviewOutcome
from evomem.domain import text as textrules
from evomem.domain.audit import AUDIT_PAGE_MAX, AuditEntry, AuditQuery
from evomem.domain.browse import RecentPage, RecentQuery
from evomem.domain.errors import EvoMemError, Forbidden, InvalidArgument, NotFound
from evomem.domain.model import Extraction, ExtractionState, LinkProvenance, MemoryNode, Stats, is_valid_id, now_ms
from evomem.domain.recall import RecallAnswer, RecallQuery
from evomem.domain.remember import ContextQuery, NoteWrite, RememberContext, StoredNote

log = logging.getLogger("evomem.app.access")

ROLES = ("reader", "writer", "admin")
_RANK = {role: i for i, role in enumerate(ROLES)}
ALL = "*"

#: The least role each tool (and purge) needs.
TOOL_ROLES: dict[str, str] = {
    "recall": "reader",
    "get_node": "reader",
    "stats": "reader",
    "check": "reader",
    "remember": "writer",
    "supersede": "writer",
    "unlink": "writer",
    "review": "writer",
    "forget": "writer",
    "purge": "admin",
    "audit": "admin",
}

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: its name (recorded as the author), role and namespaces.

    ``namespaces``: non-empty; ``"*"`` means all. An admin sees every namespace whatever its
    list says (the list's first entry is still its default). ``rate``: calls per second
    allowed (None: no limit)."""

    name: str
    role: str
    namespaces: tuple[str, ...]
    rate: float | None = None

    def __post_init__(self) -> None:
        if self.role not in _RANK:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {self.role!r}")
        if not self.namespaces:
            raise ValueError("namespaces must name at least one namespace (or '*')")

    def at_least(self, role: str) -> bool:
        return _RANK[self.role] >= _RANK[role]

    @property
    def every_namespace(self) -> bool:
        return self.role == "admin" or ALL in self.namespaces

    def may_use(self, namespace: str) -> bool:
        return self.every_namespace or namespace in self.namespaces

    def default_namespace(self, fallback: str) -> str:
        first = self.namespaces[0]
        return fallback if first == ALL else first


def require_role(principal: Principal, tool: str) -> None:
    """``[forbidden]`` unless ``principal``'s role allows ``tool`` (a name in ``TOOL_ROLES``)."""
    needed = TOOL_ROLES[tool]
    if not principal.at_least(needed):
        what = "forget(purge=true)" if tool == "purge" else tool
        raise Forbidden(
            f"{what} needs the {needed} role; {principal.name!r} has the {principal.role} role. "
            "Ask an admin for a token with that role."
        )


#: What a non-admin may see of the server's own description in ``stats`` (no paths, no addresses).
PUBLIC_INFO = ("version", "wiring", "auto_supersede", "vectors")


#: What only an admin sees: where the server's peers listen (hosts and ports).
OPERATOR_INFO = ("storage",)


def visible_info(principal: Principal | None, info: Mapping[str, str]) -> dict[str, str]:
    """The server description ``principal`` may see: all of it for an admin; without auth, all
    but the peers' addresses (``OPERATOR_INFO``: an operator reads them in the settings and logs);
    for anyone else the public part."""
    if principal is not None and principal.role == "admin":
        return dict(info)
    if principal is None:
        return {k: v for k, v in info.items() if k not in OPERATOR_INFO}
    return {k: v for k, v in info.items() if k in PUBLIC_INFO}


class ScopedStorage:
    """The ``Storage`` of one principal: only the nodes of the namespaces it may use exist.

    Reads return nothing for a node elsewhere, and a link to one fails with the message storage
    gives for an id that does not exist, so the service answers "no node with id" word for word
    whether the id is unknown or merely hidden. Operations that name their namespace (recall,
    remember) are checked by ``GuardedService`` before they get here."""

    def __init__(self, storage: Storage, principal: Principal) -> None:
        self._storage = storage
        self._may = principal.may_use

    def _visible(self, node: MemoryNode | None) -> MemoryNode | None:
        return node if node is not None and self._may(node.namespace) else None

    def get(self, node_id: str) -> MemoryNode | None:
        return self._visible(self._storage.get(node_id))

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        return {r: n for r, n in self._storage.heads(chain_roots).items() if self._may(n.namespace)}

    def chain(self, node_id: str, depth: int) -> list[MemoryNode]:
        return [n for n in self._storage.chain(node_id, depth) if self._may(n.namespace)]

    def recall_nodes(self, query: RecallQuery) -> RecallAnswer:
        return self._storage.recall_nodes(query)

    def recent_heads(self, query: RecentQuery) -> RecentPage:
        page = self._storage.recent_heads(query)
        page.heads = [n for n in page.heads if self._may(n.namespace)]
        kept = {n.id for n in page.heads}
        page.histories = {k: v for k, v in page.histories.items() if k in kept}
        return page

    def dependents(self, node_id: str, limit: int = 50) -> list[MemoryNode]:
        if self.get(node_id) is None:
            return []
        return [n for n in self._storage.dependents(node_id, limit) if self._may(n.namespace)]

    def remember_context(self, query: ContextQuery) -> RememberContext:
        context = self._storage.remember_context(query)
        context.nodes = {i: n for i, n in context.nodes.items() if self._may(n.namespace)}
        return context

    def remember_note(self, write: NoteWrite) -> StoredNote:
        return self._storage.remember_note(write)

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        if self.get(supersedes) is None and self._storage.get(supersedes) is not None:
            raise NotFound(f"supersedes: no node with id {supersedes}")
        return self._storage.link(node_id, supersedes, link)

    def unlink(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, MemoryNode]:
        return self._storage.unlink(node_id, by=by)

    def forget(self, node_id: str, *, purge: bool = False) -> tuple[MemoryNode, bool]:
        return self._storage.forget(node_id, purge=purge)

    def review(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, bool]:
        if self.get(node_id) is None:
            raise NotFound(f"node_id: no node with id {node_id}")
        return self._storage.review(node_id, by=by)

    def set_extraction(
        self, node_id: str, extraction: Extraction | None, state: ExtractionState, error: str | None = None
    ) -> MemoryNode | None:
        return self._storage.set_extraction(node_id, extraction, state, error)

    def pending_extractions(self, limit: int = 100) -> list[str]:
        return self._storage.pending_extractions(limit)

    def stats(self, namespace: str | None = None) -> Stats:
        return self._storage.stats(namespace)

    def append_audit(self, entry: AuditEntry) -> None:
        self._storage.append_audit(entry)

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]:
        return self._storage.audit_page(query)

    def model_state(self) -> str:
        return self._storage.model_state()

    def close(self) -> None:
        self._storage.close()


class GuardedService:
    """``MemoryService`` as seen by one principal: same calls, checked, attributed and audited."""

    def __init__(self, service: MemoryService, principal: Principal, audit: AuditLog | None = None) -> None:
        self.principal = principal
        self.audit_log = audit
        self.config = service.config
        if principal.every_namespace:
            self.service = service
        else:  # the same service (its pool, linker, queue) over the principal's part of the store
            self.service = copy.copy(service)
            self.service.storage = ScopedStorage(service.storage, principal)

    # ------------------------------------------------------------------ checks

    def _namespace(self, namespace: object) -> str:
        ns = textrules.clean_label(namespace, "namespace")
        if ns is None:
            return self.principal.default_namespace(self.config.default_namespace)
        if not self.principal.may_use(ns):
            raise Forbidden(
                f"namespace {ns!r} is not one of the namespaces of {self.principal.name!r} "
                f"({', '.join(self.principal.namespaces)})"
            )
        return ns

    def _author(self, author: object) -> str:
        """The author to record: the principal; for an admin naming someone, "<author> (via <admin>)"."""
        named = self._behalf(author)
        return self.principal.name if named is None else f"{named} (via {self.principal.name})"

    def _behalf(self, author: object) -> str | None:
        """The author an admin acts on behalf of (None: the principal itself, or not an admin)."""
        if self.principal.role != "admin":
            return None
        named = textrules.clean_short(author, "author")
        return named if named not in (None, self.principal.name) else None

    def _audited(
        self,
        tool: str,
        ids: Sequence[str],
        call: Callable[[], T],
        done: Callable[[T], tuple[str | None, Sequence[str], str | None]] | None,
        namespace: str | None = None,
        on_behalf_of: object = None,
    ) -> T:
        """Run a write; record it as ``ok`` (namespace, ids, detail from ``done``; no ``done``: the
        write recorded itself) or with the error code it failed with (the requested ``ids``)."""
        try:
            result = call()
        except EvoMemError as exc:
            self._record(tool, namespace, ids, exc.code, on_behalf_of)
            raise
        except Exception:
            self._record(tool, namespace, ids, "internal", on_behalf_of)
            raise
        if done is not None:
            ns, final_ids, detail = done(result)
            self._record(tool, ns, final_ids, "ok", on_behalf_of, detail)
        return result

    def _record(
        self,
        tool: str,
        namespace: str | None,
        ids: Sequence[str],
        outcome: str,
        on_behalf_of: object,
        detail: str | None = None,
    ) -> None:
        if self.audit_log is None:
            return
        entry = self._entry(tool, namespace, ids, outcome, on_behalf_of, detail)
        try:
            self.audit_log.append_audit(entry)
        except Exception as exc:  # the write itself is done (or failed) already; say so loudly
            log.error("could not record the audit entry %s: %s", entry, exc)

    def _entry(
        self,
        tool: str,
        namespace: str | None,
        ids: Sequence[str],
        outcome: str,
        on_behalf_of: object,
        detail: str | None = None,
    ) -> AuditEntry:
        try:
            behalf = self._behalf(on_behalf_of)
        except EvoMemError:
            behalf = None
        return AuditEntry(
            at=now_ms(),
            identity=self.principal.name,
            role=self.principal.role,
            tool=tool,
            namespace=namespace,
            ids=tuple(i for i in ids if i),
            outcome=outcome,
            on_behalf_of=behalf,
            detail=detail,
        )

    @staticmethod
    def _requested(*values: object) -> list[str]:
        """The ids a call named, as far as they are ids (for the audit entry of a failed call)."""
        out = []
        for v in values:
            if isinstance(v, str) and is_valid_id(v.strip().upper()):
                out.append(v.strip().upper())
        return out

    def _audit_namespace(self, namespace: object) -> str | None:
        try:
            return textrules.clean_label(namespace, "namespace") or self.principal.default_namespace(
                self.config.default_namespace
            )
        except EvoMemError:
            return None

    # ------------------------------------------------------------------ reads

    def recall(self, query: object, *, namespace: object = None, **kwargs: Any) -> RecallOutcome:
        require_role(self.principal, "recall")
        return self.service.recall(query, namespace=self._namespace(namespace), **kwargs)

    def get_node(
        self, node_id: object, *, include_history: bool = False, history_depth: int = 5
    ) -> tuple[MemoryNode, MemoryNode | None, list[MemoryNode]]:
        require_role(self.principal, "get_node")
        return self.service.get_node(node_id, include_history=include_history, history_depth=history_depth)

    def recent(self, namespace: object = None, **filters: Any) -> RecentPage:
        """The timeline's listing: a read like recall, in one of the principal's namespaces."""
        require_role(self.principal, "recall")
        return self.service.recent(self._namespace(namespace), **filters)

    def dependents(self, node_id: object) -> list[MemoryNode]:
        """A read like get_node: a node of another namespace answers as one that does not exist."""
        require_role(self.principal, "get_node")
        return self.service.dependents(node_id)

    def check(
        self, statement: object = None, *, node_id: object = None, scope: object = None, namespace: object = None
    ) -> CheckOutcome:
        """A read: a statement is checked in one of the principal's namespaces; a node of another
        namespace answers as one that does not exist."""
        require_role(self.principal, "check")
        named = None if namespace in (None, "") else self._namespace(namespace)
        if node_id in (None, ""):
            named = named or self._namespace(None)
        return self.service.check(statement, node_id=node_id, scope=scope, namespace=named)

    def counted_namespace(self, namespace: object) -> str | None:
        """The namespace ``stats`` counts: the one named, else the principal's first, else all
        (an admin, or a principal with ``"*"``, naming none)."""
        if textrules.clean_label(namespace, "namespace") is None and self.principal.every_namespace:
            return None
        return self._namespace(namespace)

    def stats(self, namespace: object = None) -> Stats:
        require_role(self.principal, "stats")
        return self.service.stats(self.counted_namespace(namespace))

    # ------------------------------------------------------------------ writes

    def remember(
        self, raw_text: object, *, namespace: object = None, author: object = None, **kwargs: Any
    ) -> RememberOutcome:
        """A failed remember is recorded here; a written one by storage, with the write (one call)."""

        def call() -> RememberOutcome:
            require_role(self.principal, "remember")
            ns = self._namespace(namespace)
            given = textrules.clean_short(author, "author")
            recorded = self._author(author)
            entry = self._entry("remember", ns, (), "ok", author) if self.audit_log is not None else None
            out = self.service.remember(raw_text, namespace=ns, author=recorded, audit=entry, **kwargs)
            if self.principal.role != "admin" and given not in (None, recorded):
                out.warnings.append(f"author is the authenticated identity {self.principal.name!r}, not {given!r}")
            return out

        return self._audited(
            "remember",
            self._requested(kwargs.get("supersedes")),
            call,
            None,  # a written note's entry is storage's to record, in the write's call
            self._audit_namespace(namespace),
            author,
        )

    def supersede(self, node_id: object, supersedes: object, *, author: object = None) -> MemoryNode:
        def call() -> MemoryNode:
            require_role(self.principal, "supersede")
            return self.service.supersede(node_id, supersedes, author=self._author(author))

        return self._audited(
            "supersede",
            self._requested(node_id, supersedes),
            call,
            lambda node: (node.namespace, (node.id, node.supersedes or ""), None),
            on_behalf_of=author,
        )

    def unlink(self, node_id: object, *, author: object = None) -> tuple[MemoryNode, MemoryNode]:
        def call() -> tuple[MemoryNode, MemoryNode]:
            require_role(self.principal, "unlink")
            return self.service.unlink(node_id, author=self._author(author))

        return self._audited(
            "unlink",
            self._requested(node_id),
            call,
            lambda pair: (pair[0].namespace, (pair[0].id, pair[1].id), None),
            on_behalf_of=author,
        )

    def review(
        self, node_id: object, *, still_valid: object = True, superseded_by: object = None, author: object = None
    ) -> ReviewOutcome:
        def call() -> ReviewOutcome:
            require_role(self.principal, "review")
            return self.service.review(
                node_id, still_valid=still_valid, superseded_by=superseded_by, author=self._author(author)
            )

        return self._audited(
            "review",
            self._requested(node_id, superseded_by),
            call,
            lambda out: (
                out.node.namespace,
                (out.node.id, out.replaced_by.id if out.replaced_by else ""),
                "replaced" if out.replaced_by else ("cleared" if out.changed else "no change"),
            ),
            on_behalf_of=author,
        )

    def forget(self, node_id: object, *, purge: bool = False) -> ForgetOutcome:
        tool = "purge" if purge else "forget"

        def call() -> ForgetOutcome:
            require_role(self.principal, tool)
            return self.service.forget(node_id, purge=purge)

        return self._audited(
            tool,
            self._requested(node_id),
            call,
            lambda out: (out.node.namespace, (out.node.id,), None if out.changed else "no change"),
        )

    # ------------------------------------------------------------------ the log

    def audit(
        self,
        *,
        namespace: object = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        before_seq: int | None = None,
        limit: int = 50,
    ) -> list[AuditEntry]:
        """A page of the write audit log, newest first (admin only)."""
        require_role(self.principal, "audit")
        if self.audit_log is None:
            raise InvalidArgument("this server keeps no audit log")
        if not 1 <= limit <= AUDIT_PAGE_MAX:
            raise InvalidArgument(f"limit must be between 1 and {AUDIT_PAGE_MAX}, got {limit}")
        ns = textrules.clean_label(namespace, "namespace")
        query = AuditQuery(namespace=ns, since_ms=since_ms, until_ms=until_ms, before_seq=before_seq, limit=limit)
        return self.audit_log.audit_page(query)
