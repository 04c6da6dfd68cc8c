"""The stdio transport of ``evomem-mcp``: the MCP SDK's, with strict input.

The SDK's ``stdio_server`` decodes stdin with ``errors="replace"`` (invalid UTF-8 becomes
U+FFFD and is stored as such) and drops a line it cannot parse without answering (the client
waits forever). Here each line is read as bytes, at most the message size limit (``limits``: a
longer line is read to its end, never held whole, and answered -32600), and checked as every
transport checks a message (``messages.check_message``: depth, UTF-8, JSON, JSON-RPC shape);
a bad one is answered and goes no further.

Valid messages go to the SDK's own stdio transport unchanged, and its answers are written as
the SDK writes them (``serve_stdio``). While serving, file descriptor 1 points at stderr, so a
stray print cannot corrupt the protocol; the protocol is written to a duplicate of the original
stdout. Only the SDK's public API is used.
See docs/UPSTREAM-stdio.md for what belongs in the SDK itself.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, TextIO

import anyio

from evomem.entrypoints.mcp import limits
from evomem.entrypoints.mcp.messages import INVALID_REQUEST, check_message, error

log = logging.getLogger("evomem.stdio")


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
                message, problem = None, error(None, INVALID_REQUEST, limits.too_large(self.limit))
            else:
                message, problem = check_message(line)
            if message is not None:  # the SDK splits lines at a lone CR too: here it is JSON whitespace
                self.pending = memoryview(line.rstrip(b"\r\n").replace(b"\r", b" ") + b"\n")
            elif problem is not None:
                log.warning("answered a malformed line: %s", problem.error.message)
                self.answer((problem.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8"))
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
