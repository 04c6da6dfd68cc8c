"""The streamable-HTTP ASGI app: MCP at /mcp, plus /healthz for probes."""

from __future__ import annotations

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
