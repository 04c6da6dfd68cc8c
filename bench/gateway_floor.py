"""The no-op floor of the gateway: the same HTTP front with one tool that does nothing.

    gunicorn -k uvicorn_worker.UvicornWorker "bench.gateway_floor:create_app()"

Everything a gateway request crosses before and after a tool runs, built by the gateway's own
``evomem.bootstrap.http.http_front``: gunicorn and its uvicorn workers, the
MCP SDK's streamable HTTP (stateless), the bearer-token check against the same token file
(``EVOMEM_AUTH_FILE``), the rate-limit middleware, the Host/Origin checks, the strict argument
check and the per-call log line and metrics (``StrictMCPServer``, ``server.published``).
Its one tool, ``noop``, returns a short answer without touching storage. What the gateway's
``recall`` costs above this is what the tool itself costs. For benchmarks only
(``bench/gateway.py --throughput``); the product's tools never include it.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent

NOOP_ANSWER = "ok"


def create_app() -> Any:
    from evomem import __version__
    from evomem.bootstrap.http import http_front
    from evomem.entrypoints.mcp.server import INSTRUCTIONS, StrictMCPServer, published
    from evomem.ops import logs
    from evomem.security.configure import build_gate
    from evomem.settings import Settings

    settings = Settings.from_env()
    logs.configure(settings.logging.level, settings.log_format("json"))
    host = settings.mcp.host or "127.0.0.1"
    gate = build_gate(settings, host, settings.mcp.port)
    auth = gate.server_kwargs() if gate is not None else {}
    tools = [published(noop)]
    mcp = StrictMCPServer("evomem-floor", version=__version__, instructions=INSTRUCTIONS, tools=tools, **auth)
    # The gateway's own front: a change to it moves the floor too.
    return http_front(settings, mcp, gate, stateless=True)


def noop(query: str = "", k: int = 5) -> CallToolResult:
    """Do nothing (the benchmark's floor)."""
    return CallToolResult(content=[TextContent(type="text", text=NOOP_ANSWER)], structured_content={"ok": True})
