"""The MCP server: the tools (``tools``) on an ``MCPServer``, through the SDK's public API only.

The same server serves the embedded process and the gateway. ``build_mcp_server`` makes one
SDK ``Tool`` per tool function (``published``):

- the function is bound to the server's ``tools.Resources`` (``with_resources``: the SDK reads a
  signature that starts at the tool's own arguments) and wrapped by ``telemetry.instrument``
  (one log line and the metrics per call);
- ``Tool.from_function`` reads the input schema from the signature, and the description from
  the docstring (``describe``: recall's says how it searches as the settings wire it);
- the tool publishes the compact, strict input schema (``arguments.compact_input_schema``) and
  the output schema of ``answers.OUTPUT``.

The tools are handed to the server when it is made (``MCPServer(tools=...)``).
``StrictMCPServer.call_tool`` checks each call's arguments against the published schema,
strictly (JSON types as they are: ``"true"``, ``1`` or ``"yes"`` is not a boolean, ``true`` is
not an integer, an unknown argument is refused), before the SDK's own (lax) validation and
before the tool runs. Errors read ``[invalid_argument] field: reason`` like every other error.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import ValidationError

from evomem import __version__
from evomem.entrypoints.mcp import answers, telemetry, tools
from evomem.entrypoints.mcp.arguments import Checker, compact_input_schema, first_error, pydantic_error

T = TypeVar("T")

INSTRUCTIONS = """\
EvoMem keeps decisions as chains of versions; recall answers with the version in force.
- Before deciding, or acting on a past decision, call recall; to test one assumption, check(statement=...).
- When a decision changes, remember the new one with supersedes=<id of the old decision>.
- Confirm the right one of remember's possible_supersedes (p: its chance) with supersede(node_id, supersedes).
- A recall hit with maybe_replaced_by may be obsolete: read that newer note; if it replaces the hit, supersede it.
- A secret stored by mistake: forget(node_id, purge=true). Never forget to record a change: supersede it.
- Answers are brief; detail="full" returns whole nodes, get_node(id, full_text=true) pages a long note.
"""


class StrictMCPServer(MCPServer[Any]):
    """An ``MCPServer`` whose tool arguments are checked against the published input schema,
    strictly, before the SDK's own validation. ``tools``: the SDK ``Tool`` objects it serves
    (``published``), each with the input schema it publishes."""

    def __init__(self, name: str, *, tools: Sequence[Tool], **kwargs: Any) -> None:
        super().__init__(name, tools=list(tools), **kwargs)
        self.input_schemas = {tool.name: tool.parameters for tool in tools}
        self.checkers: dict[str, Checker] = {}  # built on a tool's first call, not before the first answer

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        schema = self.input_schemas.get(name)
        if schema is not None:
            checker = self.checkers.get(name)
            if checker is None:
                checker = self.checkers[name] = Checker(schema)
            problem = first_error(checker, arguments)
            if problem is not None:
                raise ToolError(f"Error executing tool {name}: [invalid_argument] {problem}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(
                    f"Error executing tool {name}: [invalid_argument] {pydantic_error(exc.__cause__)}"
                ) from exc.__cause__
            raise


def with_resources(fn: Callable[..., T], resources: Any) -> Callable[..., T]:
    """``fn`` with ``resources`` given as its first argument. The bound function's signature
    (what the SDK reads: the input schema) starts at ``fn``'s second parameter."""
    signature = inspect.signature(fn, eval_str=True)
    first, *rest = signature.parameters.values()

    @functools.wraps(fn)
    def call(**arguments: Any) -> T:
        return fn(resources, **arguments)

    call.__signature__ = signature.replace(parameters=rest)  # type: ignore[attr-defined]
    call.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != first.name}
    return call


def describe(fn: Callable[..., Any], hybrid: bool | None = None) -> str:
    """A tool's description: its docstring, each paragraph on one line, paragraphs apart by a
    blank line. ``hybrid``: how recall searches as wired (``tools.search_words``), in place of
    the docstring's sentence for vectors that may or may not be loaded."""
    paragraphs = re.split(r"\n\s*\n", inspect.getdoc(fn) or "")
    text = "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())
    return text.replace(tools.search_words(None), tools.search_words(hybrid))


def published(
    fn: Callable[..., Any],
    *,
    annotations: ToolAnnotations | None = None,
    resources: Any = None,
    hybrid: bool | None = None,
) -> Tool:
    """The SDK ``Tool`` for ``fn``: bound to ``resources`` (None: ``fn`` takes only its
    arguments), logged and counted per call, described by its docstring, with the compact
    input schema and the output schema of ``answers.OUTPUT`` (else the SDK's own)."""
    name = fn.__name__
    body = with_resources(fn, resources) if resources is not None else fn
    tool = Tool.from_function(
        telemetry.instrument(name, body), name=name, description=describe(fn, hybrid), annotations=annotations
    )
    tool.parameters = compact_input_schema(tool.parameters)
    # FuncMetadata's fields are read at each call and listing: the schema is published as given.
    tool.fn_metadata.output_schema = answers.OUTPUT.get(name, tool.fn_metadata.output_schema)
    return tool


def build_mcp_server(
    service: Callable[[], Any],
    *,
    name: str = "evomem",
    server_info: dict[str, str] | None = None,
    hybrid: bool | None = None,
    note_chars: int = answers.DEFAULT_NOTE_CHARS,
    gate: Any = None,
) -> StrictMCPServer:
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
    resources = tools.Resources(get, note_chars, info)
    listed = [*(gate.tools() if gate is not None else ()), *tools.TOOLS]
    made = [published(fn, annotations=notes, resources=resources, hybrid=hybrid) for fn, notes in listed]
    auth = gate.server_kwargs() if gate is not None else {}
    return StrictMCPServer(name, version=__version__, instructions=INSTRUCTIONS, tools=made, **auth)
