"""The MCP tools: one plain function each, whose docstring is its description.

A tool's first parameter is its ``Resources`` (the service getter, the longest note text an
answer shows, what ``stats`` reports about the server). ``server.build_mcp_server`` binds them
when it registers the tool, so the SDK never sees that parameter: the published input schema
starts at the tool's own arguments, ``Annotated[..., Field(...)]`` as written here. There are
no globals: two servers in one process (tests, benchmarks) each bind their own.

A tool calls the ``MemoryService`` and turns its outcome into an ``Answer`` (``answers``): a
short text an agent reads and compact structured content. Tools never know the transport, nor
whether the service talks to SQLite in-process or to gRPC services. Strict argument checking,
the published schemas and the call's log line are the server's (``server``, ``telemetry``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from evomem.app import incidents
from evomem.app.access import GuardedService, visible_info
from evomem.app.memory import HISTORY_DEPTH_MAX, K_MAX
from evomem.domain.errors import EvoMemError
from evomem.domain.text import clean_label
from evomem.entrypoints.mcp import answers

T = TypeVar("T")


@dataclass(frozen=True)
class Resources:
    """What the tools of one server use, bound to them at registration.

    ``service``: the ``MemoryService`` getter (with auth, the service as the current caller may
    use it, ``evomem.app.access.GuardedService``); called on first use, so start-up never waits
    on it. ``note_chars``: the longest note text an answer shows. ``server_info``: what
    ``stats`` reports about the server (its version, wiring, database name...)."""

    service: Callable[[], Any]
    note_chars: int = answers.DEFAULT_NOTE_CHARS
    server_info: dict[str, str] = field(default_factory=dict)


NodeId = Annotated[str, Field(description="A node id from remember or recall (26 characters).")]
Namespace = Annotated[str | None, Field(description="Memory space, e.g. a project. Default: the server's.")]
HistoryDepth = Annotated[int, Field(ge=0, le=HISTORY_DEPTH_MAX, description="Earlier versions per result.")]
Detail = Annotated[
    Literal["brief", "full"],
    Field(description="full: every non-empty field of every node."),
]


def search_words(hybrid: bool | None) -> str:
    """How recall searches, as the settings wire it (None: hybrid when the vectors are there).
    recall's docstring says the None variant; ``server.describe`` puts the wired one in its place."""
    if hybrid is True:
        return "Hybrid search: BM25 over the words and the notes' meaning (embeddings), fused by rank."
    if hybrid is False:
        return "BM25 search over the words (vectors are off)."
    return "Hybrid search (BM25 over the words, fused with the notes' meaning) when vectors are loaded, else BM25."


SCOPE_WORDS = (
    "Decisions in force in this scope: that scope's own first, then the default scope's (unscoped or "
    "production), which hold everywhere until the scope decides otherwise. Other scopes are left out."
)


def _call(fn: Callable[[], T]) -> T:
    """Run a service call; domain errors become tool errors the agent can read and act on, with
    nothing of the server's insides (``incidents.for_caller``); any other exception is logged and
    answered ``[internal]`` with the reference the log has it under."""
    try:
        return fn()
    except EvoMemError as exc:
        raise ToolError(incidents.for_caller(exc)) from exc
    except Exception as exc:
        raise ToolError(incidents.unexpected("a tool call", exc)) from exc


def _result(answer: answers.Answer) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=answer.text)], structured_content=answer.data)


def remember(
    resources: Resources,
    raw_text: Annotated[str, Field(description="The note, in the agent's or user's words.")],
    tags: Annotated[list[str] | None, Field(description="Labels for filtering, e.g. ['ledger'].")] = None,
    session: Annotated[str | None, Field(description="Conversation or task id the note came from.")] = None,
    relations: Annotated[
        dict[str, list[str]] | None,
        Field(description='Typed edges to other notes, e.g. {"depends_on": ["<id>"]}.'),
    ] = None,
    supersedes: Annotated[
        str | None,
        Field(description="Id of the decision this note replaces (kept as history, status superseded)."),
    ] = None,
    scope: Annotated[
        str | None, Field(description="Where it applies, e.g. staging, eu-west. Inferred from the text if absent.")
    ] = None,
    namespace: Namespace = None,
    author: Annotated[str | None, Field(description="Who made the decision.")] = None,
    idempotency_key: Annotated[
        str | None,
        Field(description="A unique string per note: a retry with it stores nothing new.", max_length=200),
    ] = None,
    if_head: Annotated[
        bool,
        Field(description="With supersedes: [conflict] unless it is its chain's head."),
    ] = False,
    detail: Detail = "brief",
) -> CallToolResult:
    """Store a note (usually a decision) and return its id. When it changes an earlier decision,
    pass supersedes with that decision's id (find it with recall): recall then never answers with
    the old version. If it lists possible_supersedes (likely predecessors, each with p, the
    probability that the note replaces it, and what changes) and the note does replace one, confirm
    it with one supersede call. The text is kept verbatim and indexed;
    why/what/alternatives/consequences are extracted."""
    out = _call(
        lambda: resources.service().remember(
            raw_text,
            tags=tags,
            session=session,
            relations=relations,
            supersedes=supersedes,
            scope=scope,
            namespace=namespace,
            author=author,
            idempotency_key=idempotency_key,
            if_head=if_head,
        )
    )
    return _result(answers.remember_answer(out, detail=detail, note_chars=resources.note_chars))


def recall(
    resources: Resources,
    query: Annotated[str, Field(description="Free text; quotes and operators are plain words.")],
    k: Annotated[int, Field(ge=1, le=K_MAX, description="How many decisions.")] = 5,
    include_history: Annotated[bool, Field(description="Add each decision's earlier versions.")] = False,
    history_depth: HistoryDepth = 5,
    scope: Annotated[str | None, Field(description=SCOPE_WORDS)] = None,
    tags: Annotated[list[str] | None, Field(description="Only decisions carrying all these tags.")] = None,
    namespace: Namespace = None,
    detail: Detail = "brief",
) -> CallToolResult:
    """Find the decisions relevant to a question, each answered with the version in force.
    Hybrid search (BM25 over the words, fused with the notes' meaning) when vectors are loaded,
    else BM25. A hit on an old version answers with the current one and says what matched. Call
    it before acting on a past decision, and to find the id for supersedes. maybe_replaced_by: a
    newer note that may replace the hit (unconfirmed)."""
    out = _call(
        lambda: resources.service().recall(
            query,
            k=k,
            include_history=include_history,
            history_depth=history_depth,
            scope=scope,
            tags=tags,
            namespace=namespace,
        )
    )
    return _result(answers.recall_answer(out, detail=detail, note_chars=resources.note_chars, scoped=scope is not None))


def get_node(
    resources: Resources,
    node_id: NodeId,
    include_history: Annotated[bool, Field(description="Add the earlier versions.")] = False,
    history_depth: HistoryDepth = 5,
    detail: Detail = "brief",
    full_text: Annotated[bool, Field(description="The whole text as the text content, one page from offset.")] = False,
    offset: Annotated[int, Field(ge=0, description="full_text: the character to start from.")] = 0,
) -> CallToolResult:
    """Read one note by id, whatever its status, with the version in force if it was replaced.
    full_text=true returns the whole text in pages (offset, next_offset). To search, use recall."""
    node, head, history = _call(
        lambda: resources.service().get_node(node_id, include_history=include_history, history_depth=history_depth)
    )
    if full_text:
        if offset > len(node.raw_text):
            raise ToolError(f"[invalid_argument] offset: past the end of the text ({len(node.raw_text)} characters)")
        return _result(answers.page_answer(node, offset))
    return _result(answers.get_node_answer(node, head, history, detail=detail, note_chars=resources.note_chars))


def forget(
    resources: Resources,
    node_id: NodeId,
    purge: Annotated[
        bool, Field(description="true: erase the text from the table, the indexes and the file; a tombstone stays.")
    ] = False,
) -> CallToolResult:
    """Drop a note from recall (soft, kept as history), or with purge=true erase its text for good
    (a secret stored by mistake). Forgetting the version in force retracts that decision. To
    record a changed decision, use remember with supersedes instead."""
    out = _call(lambda: resources.service().forget(node_id, purge=purge))
    return _result(answers.forget_answer(out))


def supersede(
    resources: Resources,
    node_id: Annotated[str, Field(description="The newer note.")],
    supersedes: Annotated[str, Field(description="The older decision it replaces.")],
    author: Annotated[str | None, Field(description="Who made the link.")] = None,
    detail: Detail = "brief",
) -> CallToolResult:
    """Mark a stored note as the replacement of an older decision (e.g. confirm one of remember's
    possible_supersedes). Same rules as remember(supersedes=...): same namespace, the chain's
    head, no cycles."""
    node = _call(lambda: resources.service().supersede(node_id, supersedes, author=author))
    return _result(answers.supersede_answer(node, detail=detail, note_chars=resources.note_chars))


def unlink(
    resources: Resources,
    node_id: Annotated[str, Field(description="The newer note, whose supersedes link is wrong.")],
    author: Annotated[str | None, Field(description="Who undid the link.")] = None,
    detail: Detail = "brief",
) -> CallToolResult:
    """Undo a wrong supersedes link: the version it replaced is in force again, and the note
    starts a chain of its own. The link's provenance is kept in an audit record."""
    node, restored = _call(lambda: resources.service().unlink(node_id, author=author))
    return _result(answers.unlink_answer(node, restored, detail=detail, note_chars=resources.note_chars))


def check(
    resources: Resources,
    statement: Annotated[
        str | None, Field(description="What you assume, e.g. 'the ledger uses Postgres'.", max_length=2000)
    ] = None,
    node_id: Annotated[str | None, Field(description="Or a decision's id.")] = None,
    scope: Annotated[str | None, Field(description="Default: from the statement.")] = None,
    namespace: Namespace = None,
) -> CallToolResult:
    """Before acting on an assumption, ask if it holds: in_force, superseded (by what, when, why),
    contradicted or unknown."""
    out = _call(lambda: resources.service().check(statement, node_id=node_id, scope=scope, namespace=namespace))
    return _result(answers.check_answer(out, note_chars=resources.note_chars))


def review(
    resources: Resources,
    node_id: Annotated[str, Field(description="A decision flagged needs_review.")],
    still_valid: Annotated[bool, Field(description="true: it still holds.")] = True,
    superseded_by: Annotated[str | None, Field(description="The note that replaces it.")] = None,
    author: Annotated[str | None, Field(description="Who reviewed it.")] = None,
) -> CallToolResult:
    """Clear needs_review (a dependency was replaced): still valid, or superseded_by a stored note."""
    out = _call(
        lambda: resources.service().review(node_id, still_valid=still_valid, superseded_by=superseded_by, author=author)
    )
    return _result(answers.review_answer(out))


def stats(resources: Resources, namespace: Namespace = None) -> CallToolResult:
    """Counts of notes by status, chains, extraction states and namespaces, and the database size."""
    svc = resources.service()
    result = _call(lambda: svc.stats(namespace))
    # Echo the namespace that was counted (normalised, None for all), not the raw argument.
    # With auth: the caller's default namespace when none is named; no paths or addresses unless admin.
    guarded = isinstance(svc, GuardedService)
    counted = _call(lambda: svc.counted_namespace(namespace)) if guarded else clean_label(namespace, "namespace")
    server = visible_info(svc.principal if guarded else None, resources.server_info)
    return _result(answers.stats_answer(result, counted, server))


#: The tools in the order they are listed, each with its MCP annotations.
TOOLS: tuple[tuple[Callable[..., CallToolResult], ToolAnnotations], ...] = (
    (remember, ToolAnnotations(title="Remember a note or decision", destructive_hint=False)),
    (recall, ToolAnnotations(title="Recall decisions in force", read_only_hint=True)),
    (get_node, ToolAnnotations(title="Read one note", read_only_hint=True)),
    (forget, ToolAnnotations(title="Forget or purge a note", destructive_hint=True, idempotent_hint=True)),
    (supersede, ToolAnnotations(title="Link an existing note as a replacement", idempotent_hint=False)),
    (unlink, ToolAnnotations(title="Undo a wrong supersedes link", destructive_hint=False)),
    (check, ToolAnnotations(title="Check a premise", read_only_hint=True)),
    (review, ToolAnnotations(title="Review a flag", destructive_hint=False)),
    (stats, ToolAnnotations(title="Memory statistics", read_only_hint=True)),
)
