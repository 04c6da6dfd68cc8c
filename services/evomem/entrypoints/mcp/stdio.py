"""The stdio transport of ``evomem-mcp``: the MCP SDK's, with strict input.

The SDK's ``stdio_server`` decodes stdin with ``errors="replace"`` (invalid UTF-8 becomes
U+FFFD and is stored as such) and drops a line it cannot parse without answering (the client
waits forever). Here each line is read as bytes and:

- held to the limits every transport applies (``limits``): a line over the message size limit
  or nested deeper than ``limits.MAX_DEPTH`` is an invalid request (-32600, id null), read to its
  end and dropped without being parsed;
- decoded as strict UTF-8: a bad byte is answered with a JSON-RPC parse error (-32700) that
  names the offset, and the line is not processed (nothing is stored);
- parsed as JSON: not JSON is a parse error (-32700, id null);
- validated as a JSON-RPC message: a request of the wrong shape (``params`` an array, no
  method, an ``id`` that is neither a string, a number nor null, ...) is an invalid request
  (-32600) with its id when it has one; a lone surrogate
  escape (``"\\ud800"``, not Unicode text) is invalid params (-32602) with its id;
- a malformed notification or response gets no answer (JSON-RPC forbids one), only a log line.

Valid messages go to the SDK's own stdio transport unchanged, and its answers are written as
the SDK writes them (``serve_stdio``). While serving, file descriptor 1 points at stderr, so a
stray print cannot corrupt the protocol; the protocol is written to a duplicate of the original
stdout. Only the SDK's public API is used.
See docs/UPSTREAM-stdio.md for what belongs in the SDK itself.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, TextIO

import anyio
import mcp_types as types
from pydantic import ValidationError

from evomem.entrypoints.mcp import limits

log = logging.getLogger("evomem.stdio")

PARSE_ERROR = limits.PARSE_ERROR  # -32700
INVALID_REQUEST = limits.INVALID_REQUEST  # -32600
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
    deep = limits.too_deep(line)
    if deep is not None:  # refused before any parser recurses into it
        return None, _error(None, INVALID_REQUEST, deep)
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
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        problem = exc
    else:
        if isinstance(message, types.JSONRPCNotification) and '"id"' in text:
            bad = limits.bad_id(json.loads(text))  # a request whose id is no id is not a notification
            if bad is not None:
                return None, _error(None, INVALID_REQUEST, bad)
        return message, None
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return None, _error(None, PARSE_ERROR, f"parse error: the line is not JSON ({exc.msg} at character {exc.pos})")
    rid = _request_id(obj)
    bad = limits.bad_id(obj)
    if bad is not None and _is_answerable(obj):
        return None, _error(None, INVALID_REQUEST, bad)
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


class _CheckedLines(io.RawIOBase):
    """The client's stdin as the SDK's transport reads it: only the lines that are valid
    messages. Each bad line is answered (``answer``) and skipped; nothing of it reaches the SDK."""

    def __init__(self, source: BinaryIO, answer: Callable[[bytes], None], limit: int) -> None:
        self.source = source
        self.answer = answer
        self.limit = limit  # the most bytes a line may have (``limits.message_limit``)
        self.pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            line = self.source.readline(self.limit + 1)
            if not line:
                return 0
            if len(line) > self.limit and not line.endswith(b"\n"):
                self._skip_rest()  # over the limit: read to the line's end, never held whole
                message, error = None, _error(None, INVALID_REQUEST, limits.too_large(self.limit))
            else:
                message, error = check_line(line)
            if message is not None:  # the SDK splits lines at a lone CR too: here it is JSON whitespace
                self.pending = memoryview(line.rstrip(b"\r\n").replace(b"\r", b" ") + b"\n")
            elif error is not None:
                log.warning("answered a malformed line: %s", error.error.message)
                self.answer((error.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8"))
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n

    def _skip_rest(self) -> None:
        while True:
            chunk = self.source.readline(1 << 20)
            if not chunk or chunk.endswith(b"\n"):
                return


class _WholeLines(io.RawIOBase):
    """The client's stdout as the SDK's transport writes it: whole lines only, each written
    under ``lock``, so that an answer to a bad line never lands inside one of the SDK's."""

    def __init__(self, out: BinaryIO, lock: threading.Lock) -> None:
        self.out = out
        self.lock = lock
        self.partial = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.partial += data
        end = self.partial.rfind(b"\n") + 1
        if end:
            with self.lock:
                self.out.write(self.partial[:end])
            del self.partial[:end]
        return len(data)


class _Stream:
    """``sys.stdin`` or ``sys.stdout`` while serving. The SDK's stdio transport reads or writes
    its ``buffer`` (a stream without a file descriptor, which the SDK serves in place); all else
    is ``stray``'s: stderr for stdout, so a stray ``print`` lands there; an empty stream for stdin."""

    def __init__(self, buffer: io.BufferedIOBase, stray: TextIO) -> None:
        self.buffer = buffer
        self.stray = stray

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stray, name)


async def serve_stdio(server: Any, limit: int = limits.DEFAULT_MESSAGE_LIMIT) -> None:
    """Serve ``server`` (an ``MCPServer``) over this process's stdin and stdout, strictly.

    The SDK's own transport (``MCPServer.run_stdio_async``) serves it, reading and writing
    ``sys.stdin`` and ``sys.stdout``, which are replaced while it serves: it reads the client's
    lines that are valid messages (``_CheckedLines``) and writes whole lines (``_WholeLines``),
    between which the answers to bad lines are written. File descriptor 1 points at stderr
    meanwhile, so a stray write (a print, a child process) cannot corrupt the protocol."""
    sys.stdout.flush()
    lock = threading.Lock()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    saved_fd = os.dup(1)
    os.dup2(2, 1)  # stray writes to fd 1 (a child process) land on stderr, not in the protocol

    def answer(data: bytes) -> None:
        with lock:
            out.write(data)

    source = os.fdopen(os.dup(0), "rb")
    writing = io.BufferedWriter(_WholeLines(out, lock))
    saved = sys.stdin, sys.stdout
    sys.stdin = _Stream(io.BufferedReader(_CheckedLines(source, answer, limit)), io.StringIO())  # type: ignore[assignment]
    sys.stdout = _Stream(writing, sys.stderr)  # type: ignore[assignment]
    try:
        await server.run_stdio_async()
    finally:
        sys.stdin, sys.stdout = saved
        with contextlib.suppress(OSError, ValueError):  # the client may be gone
            writing.flush()
        os.dup2(saved_fd, 1)
        os.close(saved_fd)
        out.close()
        source.close()
        sys.stdout.flush()


def run_stdio(server: Any, limit: int = limits.DEFAULT_MESSAGE_LIMIT) -> None:
    anyio.run(serve_stdio, server, limit)


#: ``evomem-mcp``: the model starts loading after the first tool call is answered, or after this long.
MODEL_AFTER_S = 3.0


def serve_embedded(server: Any, service: Any) -> int:
    """``evomem-mcp`` over stdio: ``server`` (the MCP server the composition root wires on the
    embedded ``service``, ``evomem.bootstrap.embedded.embedded_mcp_server``; the command builds
    it) until the client closes stdin. The model loads, and earlier notes are embedded, off the
    handshake: once the first tool call is answered (or after ``MODEL_AFTER_S``); until then
    recall answers by words and says so. Returns the exit status."""
    from evomem.entrypoints.mcp import telemetry
    from evomem.entrypoints.mcp.running import run_embedded

    limit = limits.message_limit(service.config.max_note_bytes)
    return run_embedded(service, lambda: run_stdio(server, limit), after=telemetry.FIRST_CALL, after_s=MODEL_AFTER_S)
