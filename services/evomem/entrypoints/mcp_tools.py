"""The MCP tools. The same code serves the embedded process and the gateway.

Tools are thin: validate the shape (pydantic, from the annotations), call the
``MemoryService``, convert its outcome to structured content. They never know the
transport, nor whether the service talks to SQLite in-process or to gRPC services.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from evomem import __version__
from evomem.access import GuardedService, visible_info
from evomem.domain.errors import EvoMemError
from evomem.domain.text import clean_label
from evomem.entrypoints import schemas
from evomem.service import HISTORY_DEPTH_MAX, K_MAX, MemoryService

log = logging.getLogger("evomem.mcp")

INSTRUCTIONS = """\
EvoMem is a memory of decisions kept as a history. When a decision changes, call `remember`
with `supersedes=<id of the old decision>`: the old note is kept but marked superseded, and
`recall` always answers with the version in force (status "active"), even when the question
matches an old version better. Use `recall(include_history=true)` to see how and why a
decision changed. Never act on a note whose status is "superseded" or "forgotten".
"""

T = TypeVar("T")

NodeId = Annotated[
    str,
    Field(description="A node id as returned by remember or recall (26 characters, e.g. 01J9ZK3V8W5Q6R7S8T9V0W1X2Y)."),
]
Namespace = Annotated[
    str | None,
    Field(description="Separate memory space (e.g. a project). Defaults to the server's namespace."),
]
Scope = Annotated[
    str | None,
    Field(description="Where the decision applies, e.g. production, staging, analytics, eu-west. Optional."),
]
HistoryDepth = Annotated[
    int, Field(ge=0, le=HISTORY_DEPTH_MAX, description="How many earlier versions to include per result.")
]


def _call(fn: Callable[[], T]) -> T:
    """Run a service call; domain errors become tool errors the agent can read and act on."""
    try:
        return fn()
    except EvoMemError as exc:
        raise ToolError(str(exc)) from exc


def build_mcp_server(
    service: Callable[[], MemoryService],
    *,
    name: str = "evomem",
    server_info: dict[str, str] | None = None,
    gate: Any = None,
) -> MCPServer[Any]:
    """Build the MCP server. ``service`` is called on first use, so start-up never waits on it.

    ``gate`` (``evomem.entrypoints.gate.Gate``, HTTP with a token file): every call runs as
    the authenticated caller (``evomem.access``: roles, namespaces, attribution, audit), and
    the admin's ``audit`` tool is added. None: one local user, every call allowed."""
    base = functools.cache(service)
    get: Callable[[], Any] = base if gate is None else (lambda: gate.scoped(base()))  # --- auth (issue 14)
    info = {"version": __version__, **(server_info or {})}
    auth = gate.server_kwargs() if gate is not None else {}
    mcp: MCPServer[Any] = MCPServer(name, version=__version__, instructions=INSTRUCTIONS, **auth)
    if gate is not None:
        gate.register(mcp, get)

    @mcp.tool(annotations=ToolAnnotations(title="Remember a note or decision", destructive_hint=False))
    def remember(
        raw_text: Annotated[
            str, Field(description="The note, in the agent's or user's words. Kept verbatim and indexed.")
        ],
        tags: Annotated[list[str] | None, Field(description="Labels for filtering, e.g. ['ledger', 'db'].")] = None,
        session: Annotated[str | None, Field(description="Conversation or task id the note came from.")] = None,
        relations: Annotated[
            dict[str, list[str]] | None,
            Field(description='Typed edges to other notes, e.g. {"caused_by": ["<node id>"]}.'),
        ] = None,
        supersedes: Annotated[
            str | None,
            Field(
                description="Id of the decision this note replaces. The old one is kept as history with "
                "status superseded. If it was already superseded, the current head of its chain is replaced."
            ),
        ] = None,
        scope: Scope = None,
        namespace: Namespace = None,
        author: Annotated[str | None, Field(description="Who made the decision (person or agent).")] = None,
    ) -> schemas.RememberResult:
        """Store a note (usually a decision) as a MemoryNode and return its id.

        Call this when something is decided, changed or learned. When the note changes an earlier
        decision, pass `supersedes` with that decision's id (find it with `recall`): this is what
        keeps `recall` from ever answering with the obsolete version. The cronista extracts the
        trigger (why), change (what), alternatives tried and consequences from the text; the raw
        text is always kept and searchable. Returns the id, the link made (if any, with its
        provenance), the extraction state and the server-side latency.
        """
        out = _call(
            lambda: get().remember(
                raw_text,
                tags=tags,
                session=session,
                relations=relations,
                supersedes=supersedes,
                scope=scope,
                namespace=namespace,
                author=author,
            )
        )
        return schemas.remember_result(out)

    @mcp.tool(annotations=ToolAnnotations(title="Recall decisions in force", read_only_hint=True))
    def recall(
        query: Annotated[str, Field(description="Free text. Any string is accepted; quotes and operators are words.")],
        k: Annotated[int, Field(ge=1, le=K_MAX, description="How many decisions to return.")] = 5,
        include_history: Annotated[
            bool, Field(description="Add each decision's earlier versions, newest first, with why each changed.")
        ] = False,
        history_depth: HistoryDepth = 5,
        scope: Annotated[str | None, Field(description="Only decisions with exactly this scope.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only decisions carrying all of these tags.")] = None,
        namespace: Namespace = None,
    ) -> schemas.RecallResult:
        """Find the decisions relevant to a question, each resolved to the version in force.

        BM25 search over the raw text and the extracted fields. A hit on an old version is
        answered with the current head of its chain (status "active"), and `matched` says which
        version matched and on which words. Use this before acting on any past decision, and
        to find the id to pass as `supersedes` when a decision changes. Forgotten notes are
        never returned.
        """
        out = _call(
            lambda: get().recall(
                query,
                k=k,
                include_history=include_history,
                history_depth=history_depth,
                scope=scope,
                tags=tags,
                namespace=namespace,
            )
        )
        return schemas.recall_result(out)

    @mcp.tool(annotations=ToolAnnotations(title="Read one note", read_only_hint=True))
    def get_node(
        node_id: NodeId,
        include_history: Annotated[bool, Field(description="Add the earlier versions of this node.")] = False,
        history_depth: HistoryDepth = 5,
    ) -> schemas.GetNodeResult:
        """Read one MemoryNode by id, whatever its status, with the version in force if it was replaced.

        Use it to inspect a specific note (for example one named in another note's relations).
        To search, use `recall` instead.
        """
        node, head, history = _call(
            lambda: get().get_node(node_id, include_history=include_history, history_depth=history_depth)
        )
        return schemas.get_node_result(node, head, history)

    @mcp.tool(annotations=ToolAnnotations(title="Forget or purge a note", destructive_hint=True, idempotent_hint=True))
    def forget(
        node_id: NodeId,
        purge: Annotated[
            bool,
            Field(
                description="False (default): drop from recall, keep the node and its history. True: erase the "
                "text for good, from the table, the search index and the database file (e.g. a secret "
                "stored by mistake). The chain keeps a tombstone so it stays consistent."
            ),
        ] = False,
    ) -> schemas.ForgetResult:
        """Remove a note from recall (soft), or erase its text for good (purge=true).

        Forgetting the version in force retracts that decision: recall stops returning its chain,
        and older versions do not come back into force (remember the decision again to restore it).
        Do not use forget to record a change of decision: use `remember` with `supersedes`.
        """
        out = _call(lambda: get().forget(node_id, purge=purge))
        return schemas.forget_result(out)

    @mcp.tool(annotations=ToolAnnotations(title="Link an existing note as a replacement", idempotent_hint=False))
    def supersede(
        node_id: Annotated[str, Field(description="The newer note, already stored with remember.")],
        supersedes: Annotated[str, Field(description="The older decision it replaces.")],
        author: Annotated[str | None, Field(description="Who made the link.")] = None,
    ) -> schemas.SupersedeResult:
        """Mark an already-stored note as the replacement of an older decision.

        Use this when `remember` was called without `supersedes` and you later notice the note
        changed an earlier decision. Same rules as `remember(supersedes=...)`: same namespace,
        re-targets to the current head, and refuses links that would create a cycle.
        """
        node = _call(lambda: get().supersede(node_id, supersedes, author=author))
        return schemas.SupersedeResult(
            id=node.id,
            supersedes=node.supersedes or "",
            version=node.version,
            chain_root=node.chain_root,
            link=schemas.link_view(node.link),
            node=schemas.node_view(node),
        )

    @mcp.tool(annotations=ToolAnnotations(title="Undo a wrong supersedes link", destructive_hint=False))
    def unlink(
        node_id: Annotated[str, Field(description="The note whose supersedes link is wrong (the newer one).")],
        author: Annotated[str | None, Field(description="Who undid the link (kept in the audit log).")] = None,
    ) -> schemas.UnlinkResult:
        """Undo a wrong supersedes link in one step: the version it replaced is in force again.

        Use it when a link (made by you or by the automatic linker) joined two decisions that
        are both still valid, e.g. a staging decision that was taken to replace production.
        The note keeps its text and becomes the first version of its own chain; the link's
        provenance is kept in an audit record.
        """
        node, restored = _call(lambda: get().unlink(node_id, author=author))
        return schemas.UnlinkResult(
            id=node.id,
            restored_head=restored.id,
            restored_status=str(restored.status),
            node=schemas.node_view(node),
            restored=schemas.node_view(restored),
            message=f"unlinked: {restored.id} is the head of its chain again ({restored.status}); "
            f"{node.id} now starts a chain of its own",
        )

    @mcp.tool(annotations=ToolAnnotations(title="Memory statistics", read_only_hint=True))
    def stats(namespace: Namespace = None) -> schemas.StatsResult:
        """Counts of nodes by status, chains, extraction states and namespaces, plus the database size.

        Use it to check the memory is healthy (e.g. nothing stuck in extraction "pending").
        """
        svc = get()
        result = _call(lambda: svc.stats(namespace))
        # Fix: echo the namespace that was counted (normalised, None for all), not the raw argument.
        # With auth: the caller's default namespace when none is named; no paths or addresses unless admin.
        guarded = isinstance(svc, GuardedService)
        counted = _call(lambda: svc.counted_namespace(namespace)) if guarded else clean_label(namespace, "namespace")
        return schemas.stats_result(result, counted, visible_info(svc.principal if guarded else None, info))

    return mcp
