"""The MCP tools. The same code serves the embedded process and the gateway.

Tools are thin: the arguments are checked strictly against the published input schema
(``StrictMCPServer``: no string for a boolean, no boolean for an integer, no unknown
argument), the ``MemoryService`` is called, and its outcome becomes an ``Answer``
(``schemas``): a short text an agent reads and compact structured content. They never know
the transport, nor whether the service talks to SQLite in-process or to gRPC services.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from evomem import __version__
from evomem.app.access import GuardedService, visible_info
from evomem.app.memory import HISTORY_DEPTH_MAX, K_MAX, MemoryService
from evomem.domain.errors import EvoMemError
from evomem.domain.text import clean_label
from evomem.entrypoints.mcp import answers as schemas
from evomem.entrypoints.mcp import telemetry
from evomem.entrypoints.mcp.arguments import Checker

log = logging.getLogger("evomem.mcp")

INSTRUCTIONS = """\
EvoMem keeps decisions as chains of versions; recall answers with the version in force.
- Before deciding, or acting on a past decision, call recall.
- When a decision changes, remember the new one with supersedes=<id of the old decision>.
- When remember lists possible_supersedes, confirm the one it replaces with supersede(node_id, supersedes).
- A recall hit with maybe_replaced_by may be obsolete: read that newer note; if it replaces the hit, supersede it.
- A secret stored by mistake: forget(node_id, purge=true). Never forget to record a change: supersede it.
- Answers are brief; detail="full" returns whole nodes, get_node(id, full_text=true) pages a long note.
"""

T = TypeVar("T")

NodeId = Annotated[str, Field(description="A node id from remember or recall (26 characters).")]
Namespace = Annotated[str | None, Field(description="Memory space, e.g. a project. Default: the server's.")]
HistoryDepth = Annotated[int, Field(ge=0, le=HISTORY_DEPTH_MAX, description="Earlier versions per result.")]
Detail = Annotated[
    Literal["brief", "full"],
    Field(description="full: every non-empty field of every node."),
]


def search_words(hybrid: bool | None) -> str:
    """How recall searches, as the settings wire it (None: hybrid when the vectors are there)."""
    if hybrid is True:
        return "Hybrid search: BM25 over the words and the notes' meaning (embeddings), fused by rank."
    if hybrid is False:
        return "BM25 search over the words (vectors are off)."
    return "Hybrid search (BM25 over the words, fused with the notes' meaning) when vectors are loaded, else BM25."


SCOPE_WORDS = (
    "Decisions in force in this scope: that scope's own first, then the default scope's (unscoped or "
    "production), which hold everywhere until the scope decides otherwise. Other scopes are left out."
)


# ---------------------------------------------------------------------------- strict arguments


def compact_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The published input schema, small and strict: no titles, ``X | None`` as a type list,
    no unknown arguments."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        node = {k: walk(v) for k, v in node.items() if k != "title"}
        options = node.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
            (other,) = [o for o in options if o != {"type": "null"}]
            if isinstance(other.get("type"), str):
                node.pop("anyOf")
                merged = {**other, "type": [other["type"], "null"]}
                node = {**merged, **node}
        if node.get("default", 0) is None:
            node.pop("default")
        return node

    out = walk(schema)
    out["additionalProperties"] = False
    return out


_ARTICLE = {"integer": "an integer", "boolean": "a boolean (true or false)", "string": "a string", "array": "an array"}
_ARTICLE |= {"object": "an object", "number": "a number"}


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def schema_error(error: Any) -> str:
    """``field: reason`` for one schema violation (an ``arguments.Violation``, or a
    ``jsonschema`` error for a schema with other keywords), without echoing a long value."""
    path = ".".join(str(p) for p in error.absolute_path)
    kind = error.validator
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        return f"{missing}: is required"
    if kind == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"{', '.join(extra)}: not an argument of this tool (see its input schema)"
    field = path or "arguments"
    if kind == "type":
        want = error.validator_value
        names = want if isinstance(want, list) else [want]
        want = " or ".join(_ARTICLE.get(w, w) for w in names)
        return f"{field}: must be {want}, got {_short(error.instance)}"
    if kind in ("minimum", "maximum"):
        low, high = error.schema.get("minimum"), error.schema.get("maximum")
        span = f"from {low} to {high}" if low is not None and high is not None else f"{kind} {error.validator_value}"
        return f"{field}: must be {span}, got {_short(error.instance)}"
    if kind == "enum":
        return f"{field}: must be one of {', '.join(map(str, error.validator_value))}, got {_short(error.instance)}"
    return f"{field}: {error.message[:200]}"


def pydantic_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "arguments"
    return f"{field}: {first['msg']}"


class StrictMCPServer(MCPServer[Any]):
    """An ``MCPServer`` whose tool arguments are checked against the published input schema,
    strictly (JSON types as they are: ``"true"``, ``1`` or ``"yes"`` is not a boolean, ``true`` is
    not an integer), before the SDK's own (lax) validation and before the tool runs. Errors read
    ``[invalid_argument] field: reason`` like every other error."""

    _validators: dict[str, Checker]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            validators = self.__dict__.setdefault("_validators", {})
            validator = validators.get(name)
            if validator is None:
                validator = validators[name] = Checker(tool.parameters)
            errors = sorted(
                validator.iter_errors(arguments),
                key=lambda e: (e.validator != "additionalProperties", [str(p) for p in e.absolute_path]),
            )
            error = errors[0] if errors else None
            if error is not None:
                raise ToolError(f"Error executing tool {name}: [invalid_argument] {schema_error(error)}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(
                    f"Error executing tool {name}: [invalid_argument] {pydantic_error(exc.__cause__)}"
                ) from exc.__cause__
            raise


def _call(fn: Callable[[], T]) -> T:
    """Run a service call; domain errors become tool errors the agent can read and act on."""
    try:
        return fn()
    except EvoMemError as exc:
        raise ToolError(str(exc)) from exc


def _result(answer: schemas.Answer) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=answer.text)], structured_content=answer.data)


def build_mcp_server(
    service: Callable[[], MemoryService],
    *,
    name: str = "evomem",
    server_info: dict[str, str] | None = None,
    hybrid: bool | None = None,
    note_chars: int = schemas.DEFAULT_NOTE_CHARS,
    gate: Any = None,
) -> MCPServer[Any]:
    """Build the MCP server. ``service`` is called on first use, so start-up never waits on it.

    ``hybrid``: whether recall fuses the vectors (True), not (False) or when they are loaded
    (None); the descriptions say so. ``note_chars``: the longest note text an answer shows.
    ``gate`` (``evomem.security.gate.Gate``, HTTP with a token file): every call runs as
    the authenticated caller (``evomem.app.access``: roles, namespaces, attribution, audit), and
    the admin's ``audit`` tool is added. None: one local user, every call allowed.
    """
    base = functools.cache(service)
    get: Callable[[], Any] = base if gate is None else (lambda: gate.scoped(base()))  # --- auth (issue 14)
    info = {"version": __version__, **(server_info or {})}
    auth = gate.server_kwargs() if gate is not None else {}
    mcp = StrictMCPServer(name, version=__version__, instructions=INSTRUCTIONS, **auth)
    mcp.tool = telemetry.instrumented(mcp.tool)  # type: ignore[method-assign]  # one log line + metrics per call
    if gate is not None:
        gate.register(mcp, get)

    @mcp.tool(
        annotations=ToolAnnotations(title="Remember a note or decision", destructive_hint=False),
        description="Store a note (usually a decision) and return its id. When it changes an earlier decision, "
        "pass supersedes with that decision's id (find it with recall): recall then never answers with the old "
        "version. If it lists possible_supersedes (likely predecessors, with why) and the note does replace one, "
        "confirm it with one supersede call. The text is kept verbatim and indexed; why/what/alternatives/"
        "consequences are extracted.",
    )
    def remember(
        raw_text: Annotated[str, Field(description="The note, in the agent's or user's words.")],
        tags: Annotated[list[str] | None, Field(description="Labels for filtering, e.g. ['ledger'].")] = None,
        session: Annotated[str | None, Field(description="Conversation or task id the note came from.")] = None,
        relations: Annotated[
            dict[str, list[str]] | None,
            Field(description='Typed edges to other notes, e.g. {"caused_by": ["<id>"]}.'),
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
        detail: Detail = "brief",
    ) -> CallToolResult:
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
                idempotency_key=idempotency_key,
            )
        )
        return _result(schemas.remember_answer(out, detail=detail, note_chars=note_chars))

    @mcp.tool(
        annotations=ToolAnnotations(title="Recall decisions in force", read_only_hint=True),
        description=f"Find the decisions relevant to a question, each answered with the version in force. "
        f"{search_words(hybrid)} A hit on an old version answers with the current one and says what matched. "
        "Call it before acting on a past decision, and to find the id for supersedes. "
        "maybe_replaced_by: a newer note that may replace the hit (unconfirmed).",
    )
    def recall(
        query: Annotated[str, Field(description="Free text; quotes and operators are plain words.")],
        k: Annotated[int, Field(ge=1, le=K_MAX, description="How many decisions.")] = 5,
        include_history: Annotated[bool, Field(description="Add each decision's earlier versions.")] = False,
        history_depth: HistoryDepth = 5,
        scope: Annotated[str | None, Field(description=SCOPE_WORDS)] = None,
        tags: Annotated[list[str] | None, Field(description="Only decisions carrying all these tags.")] = None,
        namespace: Namespace = None,
        detail: Detail = "brief",
    ) -> CallToolResult:
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
        answer = schemas.recall_answer(out, detail=detail, note_chars=note_chars, scoped=scope is not None)
        return _result(answer)

    @mcp.tool(
        annotations=ToolAnnotations(title="Read one note", read_only_hint=True),
        description="Read one note by id, whatever its status, with the version in force if it was replaced. "
        "full_text=true returns the whole text in pages (offset, next_offset). To search, use recall.",
    )
    def get_node(
        node_id: NodeId,
        include_history: Annotated[bool, Field(description="Add the earlier versions.")] = False,
        history_depth: HistoryDepth = 5,
        detail: Detail = "brief",
        full_text: Annotated[
            bool, Field(description="The whole text as the text content, one page from offset.")
        ] = False,
        offset: Annotated[int, Field(ge=0, description="full_text: the character to start from.")] = 0,
    ) -> CallToolResult:
        node, head, history = _call(
            lambda: get().get_node(node_id, include_history=include_history, history_depth=history_depth)
        )
        if full_text:
            if offset > len(node.raw_text):
                raise ToolError(
                    f"[invalid_argument] offset: past the end of the text ({len(node.raw_text)} characters)"
                )
            return _result(schemas.page_answer(node, offset))
        return _result(schemas.get_node_answer(node, head, history, detail=detail, note_chars=note_chars))

    @mcp.tool(
        annotations=ToolAnnotations(title="Forget or purge a note", destructive_hint=True, idempotent_hint=True),
        description="Drop a note from recall (soft, kept as history), or with purge=true erase its text for good "
        "(a secret stored by mistake). Forgetting the version in force retracts that decision. To record a changed "
        "decision, use remember with supersedes instead.",
    )
    def forget(
        node_id: NodeId,
        purge: Annotated[
            bool, Field(description="true: erase the text from the table, the indexes and the file; a tombstone stays.")
        ] = False,
    ) -> CallToolResult:
        out = _call(lambda: get().forget(node_id, purge=purge))
        return _result(schemas.forget_answer(out))

    @mcp.tool(
        annotations=ToolAnnotations(title="Link an existing note as a replacement", idempotent_hint=False),
        description="Mark a stored note as the replacement of an older decision (e.g. confirm one of remember's "
        "possible_supersedes). Same rules as remember(supersedes=...): same namespace, the chain's head, no cycles.",
    )
    def supersede(
        node_id: Annotated[str, Field(description="The newer note.")],
        supersedes: Annotated[str, Field(description="The older decision it replaces.")],
        author: Annotated[str | None, Field(description="Who made the link.")] = None,
        detail: Detail = "brief",
    ) -> CallToolResult:
        node = _call(lambda: get().supersede(node_id, supersedes, author=author))
        return _result(schemas.supersede_answer(node, detail=detail, note_chars=note_chars))

    @mcp.tool(
        annotations=ToolAnnotations(title="Undo a wrong supersedes link", destructive_hint=False),
        description="Undo a wrong supersedes link: the version it replaced is in force again, and the note starts "
        "a chain of its own. The link's provenance is kept in an audit record.",
    )
    def unlink(
        node_id: Annotated[str, Field(description="The newer note, whose supersedes link is wrong.")],
        author: Annotated[str | None, Field(description="Who undid the link.")] = None,
        detail: Detail = "brief",
    ) -> CallToolResult:
        node, restored = _call(lambda: get().unlink(node_id, author=author))
        return _result(schemas.unlink_answer(node, restored, detail=detail, note_chars=note_chars))

    @mcp.tool(
        annotations=ToolAnnotations(title="Memory statistics", read_only_hint=True),
        description="Counts of notes by status, chains, extraction states and namespaces, and the database size.",
    )
    def stats(namespace: Namespace = None) -> CallToolResult:
        svc = get()
        result = _call(lambda: svc.stats(namespace))
        # Echo the namespace that was counted (normalised, None for all), not the raw argument.
        # With auth: the caller's default namespace when none is named; no paths or addresses unless admin.
        guarded = isinstance(svc, GuardedService)
        counted = _call(lambda: svc.counted_namespace(namespace)) if guarded else clean_label(namespace, "namespace")
        return _result(schemas.stats_answer(result, counted, visible_info(svc.principal if guarded else None, info)))

    for tool in mcp._tool_manager.list_tools():
        tool.parameters = compact_input_schema(tool.parameters)
        # The admin's audit tool (auth on) keeps the schema of its own result model.
        tool.fn_metadata.output_schema = schemas.OUTPUT.get(tool.name, tool.fn_metadata.output_schema)
    return mcp
