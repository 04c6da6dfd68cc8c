"""The streamable-HTTP ASGI app (MCP at /mcp, /healthz for probes), and serving it in-process."""

from __future__ import annotations

import socket
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse


def build_http_app(server: Any, *, host: str = "127.0.0.1", stateless: bool = False) -> Any:
    assert isinstance(server, MCPServer)

    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    security = None
    if host in ("0.0.0.0", "::"):
        # Bound to every interface (containers): the operator chose exposure; accept any Host header.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return server.streamable_http_app(host=host, stateless_http=stateless, transport_security=security)


def serve_http(server: Any, host: str, port: int, db: str, log_level: str) -> None:
    """The embedded server over streamable HTTP on ``host:port`` (0 picks a free port)."""
    import uvicorn

    app = build_http_app(server, host=host)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this. Without it, small JSON responses wait on the
    # peer's delayed ACK (~40 ms per call) when uvicorn serves a pre-bound socket.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    url = f"http://{host}:{sock.getsockname()[1]}/mcp"
    print(
        f"EvoMem MCP server (streamable HTTP) at {url}\n  database: {db}\n"
        f"  Claude Code:  claude mcp add --transport http evomem {url}\n"
        f"  other clients: point an MCP client at {url}\n"
        "  (stdio clients launch `evomem-mcp --db PATH` themselves; see README)\n  Ctrl-C to stop.",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.Server(uvicorn.Config(app, log_level=log_level.lower(), lifespan="on")).run(sockets=[sock])
