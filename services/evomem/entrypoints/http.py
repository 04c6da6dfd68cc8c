"""The streamable-HTTP ASGI app (MCP at /mcp, /healthz for probes), and serving it in-process."""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

DEFAULT_BODY_LIMIT = 4 * 1024 * 1024  # the MCP SDK's default request body limit


def body_limit(max_note_bytes: int | None) -> int:
    """The request body limit for notes of up to ``max_note_bytes``: JSON escaping can grow a
    note (\\uXXXX is 6 bytes per character), so a body well over the note limit must still reach
    ``remember``, which answers ``[note_too_large]`` itself instead of a bare HTTP 413."""
    if max_note_bytes is None:
        return DEFAULT_BODY_LIMIT
    return max(DEFAULT_BODY_LIMIT, 16 * max_note_bytes + 1024 * 1024)


class TooLargeAsJsonRpc:
    """ASGI middleware: the SDK's bare 413 ("Request body too large") becomes a JSON-RPC error
    that says which limit was hit, still with status 413."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rewriting = False

        async def send_wrapper(message: Any) -> None:
            nonlocal rewriting
            if message["type"] == "http.response.start" and message["status"] == 413:
                rewriting = True
                return
            if rewriting and message["type"] == "http.response.body":
                if message.get("more_body"):
                    return
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {
                            "code": -32600,
                            "message": f"[note_too_large] the request body is over {self.limit:,} bytes, the most "
                            "this server reads; notes are limited by --max-note-bytes. Store a summary, or split it.",
                        },
                    }
                ).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 413, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, send_wrapper)


def build_http_app(
    server: Any,
    *,
    host: str = "127.0.0.1",
    stateless: bool = False,
    gate: Any = None,
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
    max_note_bytes: int | None = None,
) -> Any:
    """``gate``: ``evomem.entrypoints.gate.Gate`` (tokens, rate limits), None without auth.
    Host and Origin checks stay on whatever ``host`` is (loopback, ``host``, and the allowed lists).
    ``max_note_bytes``: the body limit follows the note limit (an over-limit body is a JSON-RPC 413)."""
    assert isinstance(server, MCPServer)
    from evomem.entrypoints.gate import transport_security

    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    security = transport_security(host, allowed_hosts or [], allowed_origins or [])
    limit = body_limit(max_note_bytes)
    app = server.streamable_http_app(
        host=host, stateless_http=stateless, transport_security=security, max_request_body_size=limit
    )
    app.add_middleware(TooLargeAsJsonRpc, limit=limit)
    return gate.wrap(app) if gate is not None else app


class PortInUse(OSError):
    """The HTTP port cannot be bound (in use, or not allowed): one line for the operator."""


def bind(host: str, port: int) -> socket.socket:
    """The listening socket for ``host:port`` (0 picks a free port), or ``PortInUse``; bound
    first, so the URL is known before the app is built."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this. Without it, small JSON responses wait on the
    # peer's delayed ACK (~40 ms per call) when uvicorn serves a pre-bound socket.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PortInUse(
            exc.errno,
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; stop the process that holds it "
            "or choose another port with --port / EVOMEM_PORT",
        ) from exc
    return sock


def serve_http(
    server: Any,
    host: str,
    port: int,
    db: str,
    log_level: str,
    *,
    max_note_bytes: int | None = None,
    sock: socket.socket | None = None,
    **app: Any,
) -> None:
    """The embedded server over streamable HTTP on ``host:port`` (0 picks a free port), or on
    ``sock`` when the caller bound it first (``bind``: a busy port is reported before anything
    else starts); ``app``: ``build_http_app``'s gate and allowed lists."""
    import uvicorn

    sock = sock if sock is not None else bind(host, port)
    asgi = build_http_app(server, host=host, max_note_bytes=max_note_bytes, **app)
    url = f"http://{host}:{sock.getsockname()[1]}/mcp"
    auth = "on (send Authorization: Bearer <token>)" if app.get("gate") is not None else "off"
    print(
        f"EvoMem MCP server (streamable HTTP) at {url}\n  database: {db}\n  authentication: {auth}\n"
        f"  Claude Code:  claude mcp add --transport http evomem {url}\n"
        f"  other clients: point an MCP client at {url}\n"
        "  (stdio clients launch `evomem-mcp --db PATH` themselves; see README)\n  Ctrl-C to stop.",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.Server(uvicorn.Config(asgi, log_level=log_level.lower(), lifespan="on")).run(sockets=[sock])
