"""The streamable-HTTP ASGI app (MCP at /mcp, /healthz for probes), and serving it in-process."""

from __future__ import annotations

import socket
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse


def build_http_app(
    server: Any,
    *,
    host: str = "127.0.0.1",
    stateless: bool = False,
    gate: Any = None,
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
) -> Any:
    """``gate``: ``evomem.entrypoints.gate.Gate`` (tokens, rate limits), None without auth.
    Host and Origin checks stay on whatever ``host`` is (loopback, ``host``, and the allowed lists)."""
    assert isinstance(server, MCPServer)
    from evomem.entrypoints.gate import transport_security

    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    security = transport_security(host, allowed_hosts or [], allowed_origins or [])
    app = server.streamable_http_app(host=host, stateless_http=stateless, transport_security=security)
    return gate.wrap(app) if gate is not None else app


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (0 picks a free port), so the URL is known before the app is built."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this. Without it, small JSON responses wait on the
    # peer's delayed ACK (~40 ms per call) when uvicorn serves a pre-bound socket.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    return sock


def serve_http(
    server: Any, host: str, port: int, db: str, log_level: str, *, sock: socket.socket | None = None, **app: Any
) -> None:
    """The embedded server over streamable HTTP on ``host:port`` (0 picks a free port), or on
    ``sock`` already bound; ``app``: ``build_http_app``'s gate and allowed lists."""
    import uvicorn

    sock = sock if sock is not None else bind(host, port)
    asgi = build_http_app(server, host=host, **app)
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
