"""The MCP gateway: the same MCP tools as the embedded server, wired to the services.

gunicorn (uvicorn workers, ``evomem-service gateway``) serves ``create_app()``. Streamable
HTTP runs *stateless*, so any worker can answer any request: MCP sessions do not pin a
client to one process. Each POST is answered with one JSON body (``json_response``): no tool
sends notifications mid-call, so no per-request event stream is set up. ``http_front`` is
that HTTP front (auth, limits, checks) around any MCP server; ``bench/gateway_floor.py``
measures it with one no-op tool. Settings: ``evomem.settings`` (docs/SERVICES.md lists the
gateway's).
"""

from __future__ import annotations

from typing import Any


def create_app() -> Any:
    from evomem.bootstrap.http import build_gate
    from evomem.bootstrap.services import build_gateway
    from evomem.entrypoints.mcp.server import build_mcp_server
    from evomem.ops import logs
    from evomem.settings import Settings

    settings = Settings.from_env()
    logs.configure(settings.logging.level, settings.log_format("json"))
    service = build_gateway(settings)
    info = {
        "wiring": "gateway",
        "storage": settings.addresses.storage,
        "auto_supersede": settings.linker.auto_supersede,
        "vectors": settings.vectors.mode,
    }
    host = settings.mcp.host or "127.0.0.1"
    gate = build_gate(settings, host, settings.mcp.port)  # tokens (issue 14); SIGHUP to gunicorn re-reads them
    # vectors=auto: hybrid when storage has vectors, which the gateway learns per call.
    hybrid = {"on": True, "off": False}.get(settings.vectors.mode)
    server = build_mcp_server(
        lambda: service, server_info=info, gate=gate, hybrid=hybrid, note_chars=settings.mcp.answer_note_chars
    )
    # /readyz asks storage (a stats call); the model lives in storage, so it is never required here.
    return http_front(settings, server, gate, service=lambda: service)


def http_front(settings: Any, server: Any, gate: Any, *, service: Any = None) -> Any:
    """The gateway's HTTP app around ``server``: stateless streamable HTTP answering JSON, the
    gate (tokens, rate limits), Host/Origin checks, the body limit, the ops routes."""
    from evomem.bootstrap.http import allowed
    from evomem.entrypoints.mcp.http import build_http_app

    return build_http_app(
        server,
        host=settings.mcp.host or "127.0.0.1",
        stateless=True,
        json_response=True,
        gate=gate,
        allowed_hosts=allowed(settings.auth.allowed_hosts),
        allowed_origins=allowed(settings.auth.allowed_origins),
        max_note_bytes=settings.memory.max_note_bytes,
        service=service,
    )
