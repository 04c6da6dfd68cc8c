"""The stdio transport of ``evomem-mcp``: the MCP SDK's, with strict input.

The SDK's ``stdio_server`` decodes stdin with ``errors="replace"`` (invalid UTF-8 becomes
U+FFFD and is stored as such) and drops a line it cannot parse without answering (the client
waits forever). Here each line is read as bytes and:

- decoded as strict UTF-8: a bad byte is answered with a JSON-RPC parse error (-32700) that
  names the offset, and the line is not processed (nothing is stored);
- parsed as JSON: not JSON is a parse error (-32700, id null);
- validated as a JSON-RPC message: a request of the wrong shape (``params`` an array, no
  method, ...) is an invalid request (-32600) with its id when it has one; a lone surrogate
  escape (``"\\ud800"``, not Unicode text) is invalid params (-32602) with its id;
- a malformed notification or response gets no answer (JSON-RPC forbids one), only a log line.

Valid messages go to the SDK's server unchanged, and its answers are written as the SDK
writes them. While serving, file descriptor 1 points at stderr, so a stray print cannot
corrupt the protocol; the protocol is written to a duplicate of the original stdout.
See docs/UPSTREAM-stdio.md for what belongs in the SDK itself.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger("evomem.stdio")

PARSE_ERROR = types.PARSE_ERROR  # -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _request_id(obj: Any) -> int | str | None:
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            return rid
    return None


def _is_answerable(obj: Any) -> bool:
    """A request (or something that tried to be one): not a notification, not a response."""
    if not isinstance(obj, dict):
        return True  # an array or a scalar: invalid request, id null
    if "result" in obj or "error" in obj:
        return False
    return "id" in obj or "method" not in obj


def check_line(line: bytes) -> tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]:
    """A line of stdin as (the message to serve, None) or (None, the error to answer; None
    when JSON-RPC allows no answer). Blank lines are (None, None)."""
    line = line.rstrip(b"\r\n")
    if not line.strip():
        return None, None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        guess = line.decode("utf-8", errors="replace")
        try:
            rid = _request_id(json.loads(guess))
        except ValueError:
            rid = None
        return None, _error(
            rid,
            PARSE_ERROR,
            f"[invalid_text] the message is not valid UTF-8 (bad byte at offset {exc.start}); it was not "
            "processed and nothing was stored. Send UTF-8 text.",
        )
    try:
        return types.jsonrpc_message_adapter.validate_json(text, by_name=False), None
    except ValidationError as exc:
        problem = exc
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return None, _error(None, PARSE_ERROR, f"parse error: the line is not JSON ({exc.msg} at character {exc.pos})")
    rid = _request_id(obj)
    if _has_surrogate(obj):
        if not _is_answerable(obj):
            log.warning("dropped a notification or response with a lone surrogate escape")
            return None, None
        return None, _error(
            rid,
            INVALID_PARAMS if rid is not None else PARSE_ERROR,
            "[invalid_text] the message contains a lone surrogate escape (such as \\ud800): that is not valid "
            "Unicode text; it was not processed and nothing was stored",
        )
    if not _is_answerable(obj):
        log.warning("dropped a malformed notification or response: %s", _first_error(problem))
        return None, None
    return None, _error(rid, INVALID_REQUEST, f"invalid request: {_first_error(problem)}")


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ())[1:]) or "message"
    return f"{where}: {first.get('msg', 'invalid')}"


def _error(rid: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))


async def serve_stdio(server: Any) -> None:
    """Serve ``server`` (an ``MCPServer``) over this process's stdin and stdout."""
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async serves; no public accessor in 2.x
    protocol_fd = os.dup(1)
    saved_fd = os.dup(1)
    os.dup2(2, 1)  # stray writes to fd 1 (a print, a child process) land on stderr, not in the protocol
    out = os.fdopen(protocol_fd, "wb", buffering=0)
    stdin = anyio.wrap_file(os.fdopen(os.dup(0), "rb", buffering=0))
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)

    async def reader() -> None:
        try:
            async with read_writer:
                while True:
                    line = await stdin.readline()
                    if not line:
                        return
                    message, error = check_line(line)
                    if message is not None:
                        await read_writer.send(SessionMessage(message))
                    elif error is not None:
                        log.warning("answered a malformed line: %s", error.error.message)
                        await write_stream.send(SessionMessage(error))
        except anyio.ClosedResourceError:  # pragma: no cover - the server stopped first
            await anyio.lowlevel.checkpoint()

    async def writer() -> None:
        try:
            async with write_reader:
                async for session_message in write_reader:
                    data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await anyio.to_thread.run_sync(out.write, (data + "\n").encode("utf-8"))
        except anyio.ClosedResourceError:  # pragma: no cover
            await anyio.lowlevel.checkpoint()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()
    finally:
        os.dup2(saved_fd, 1)
        os.close(saved_fd)
        out.close()
        await stdin.aclose()
        sys.stdout.flush()


def run_stdio(server: Any) -> None:
    anyio.run(serve_stdio, server)


#: ``evomem-mcp``: the model starts loading after the first tool call is answered, or after this long.
MODEL_AFTER_S = 3.0


def serve_embedded(settings: Any, service: Any) -> int:
    """``evomem-mcp`` over stdio: the MCP server on the embedded ``service`` (``bootstrap``),
    served until the client closes stdin. The model loads, and earlier notes are embedded, off
    the handshake: once the first tool call is answered (or after ``MODEL_AFTER_S``); until
    then recall answers by words and says so. Returns the exit status."""
    from evomem.bootstrap.embedded import embedded_mcp_server
    from evomem.entrypoints.mcp import telemetry
    from evomem.entrypoints.mcp.running import run_embedded

    server = embedded_mcp_server(settings, service)
    return run_embedded(service, lambda: run_stdio(server), after=telemetry.FIRST_CALL, after_s=MODEL_AFTER_S)
