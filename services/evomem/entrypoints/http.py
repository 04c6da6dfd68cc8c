"""The streamable-HTTP ASGI app and serving it in-process.

Routes, all in ``build_http_app`` (the embedded server and the gateway serve the same app):

- ``/mcp``      MCP (streamable HTTP)
- ``/livez``    the process answers (no I/O): 200 ``{"status": "ok"}``
- ``/readyz``   the database answers a read (the gateway: the storage service does), and the
                embedding model has loaded when vectors are required (``--vectors on``):
                200 ``{"status": "ready", ...}``, else 503 with what is not ready
- ``/healthz``  kept for older probes: the same as ``/livez``
- ``/metrics``  Prometheus: tool calls by tool and outcome, latency histograms, notes by
                status, the extraction backlog, the model's load state (``evomem.telemetry``)
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

#: Seconds /readyz and /metrics wait for the store (the gateway: storage over gRPC) before answering without it.
PROBE_TIMEOUT_S = 2.0


def readiness(service: Any, *, model_required: bool = False) -> tuple[bool, dict[str, Any]]:
    """Whether ``service`` can answer now, and the detail /readyz shows."""
    from evomem import telemetry

    detail: dict[str, Any] = {}
    ready = True
    try:
        service.stats()
        detail["database"] = "ok"
    except Exception as exc:
        ready = False
        detail["database"] = f"error: {exc}"
    state = telemetry.model_state(service)
    detail["model"] = state
    if model_required and state not in ("loaded", "remote"):
        ready = False
    return ready, detail


def add_ops_routes(
    server: MCPServer[Any], service: Callable[[], Any] | None = None, *, model_required: bool = False
) -> None:
    """/livez, /readyz, /healthz and /metrics on ``server``'s HTTP app. ``service``: the
    ``MemoryService`` getter the tools use (None: /readyz and the service gauges are off)."""
    from evomem import telemetry

    telemetry.enable_metrics()

    @server.custom_route("/livez", methods=["GET"])
    async def livez(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @server.custom_route("/readyz", methods=["GET"])
    async def readyz(request: Request) -> JSONResponse:
        if service is None:
            return JSONResponse({"status": "ready"})
        import anyio
        import anyio.to_thread

        answer: tuple[bool, dict[str, Any]] = (False, {"database": f"error: no answer in {PROBE_TIMEOUT_S:g} s"})
        with anyio.move_on_after(PROBE_TIMEOUT_S):  # a probe answers in time, even when storage does not
            answer = await anyio.to_thread.run_sync(
                lambda: readiness(service(), model_required=model_required), abandon_on_cancel=True
            )
        ready, detail = answer
        return JSONResponse({"status": "ready" if ready else "not ready", **detail}, status_code=200 if ready else 503)

    @server.custom_route("/metrics", methods=["GET"])
    async def metrics(request: Request) -> Response:
        import anyio
        import anyio.to_thread

        page = None
        with anyio.move_on_after(PROBE_TIMEOUT_S):
            page = await anyio.to_thread.run_sync(
                lambda: telemetry.render_metrics(service() if service is not None else None), abandon_on_cancel=True
            )
        if page is None:  # the store did not answer in time: the process's own metrics, and say so
            body, content_type = telemetry.render_metrics(None)
            page = (body + telemetry.STORE_DOWN, content_type)
        return Response(page[0], media_type=page[1])


def build_http_app(
    server: Any,
    *,
    host: str = "127.0.0.1",
    stateless: bool = False,
    service: Callable[[], Any] | None = None,
    model_required: bool = False,
) -> Any:
    assert isinstance(server, MCPServer)
    add_ops_routes(server, service, model_required=model_required)
    security = None
    if host in ("0.0.0.0", "::"):
        # Bound to every interface (containers): the operator chose exposure; accept any Host header.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return server.streamable_http_app(host=host, stateless_http=stateless, transport_security=security)


def serve_http(
    server: Any,
    host: str,
    port: int,
    db: str,
    log_level: str,
    *,
    service: Callable[[], Any] | None = None,
    model_required: bool = False,
) -> None:
    """The embedded server over streamable HTTP on ``host:port`` (0 picks a free port)."""
    import uvicorn

    app = build_http_app(server, host=host, service=service, model_required=model_required)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this. Without it, small JSON responses wait on the
    # peer's delayed ACK (~40 ms per call) when uvicorn serves a pre-bound socket.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(
            exc.errno, f"cannot listen on {host}:{port} ({exc.strerror}): choose another with --port (0 picks one)"
        ) from exc
    sock.listen(2048)  # from here a client that read the URL below is queued, never refused
    url = f"http://{host}:{sock.getsockname()[1]}/mcp"
    print(
        f"EvoMem MCP server (streamable HTTP) at {url}\n  database: {db}\n"
        f"  Claude Code:  claude mcp add --transport http evomem {url}\n"
        f"  other clients: point an MCP client at {url}\n"
        "  (stdio clients launch `evomem-mcp --db PATH` themselves; see README)\n  Ctrl-C to stop.",
        file=sys.stderr,
        flush=True,
    )
    # log_config=None: uvicorn's loggers go through the root handler evomem.logs set up
    # (text or JSON), instead of uvicorn's own plain-text handlers.
    config = uvicorn.Config(app, log_level=log_level.lower(), lifespan="on", log_config=None)
    uvicorn.Server(config).run(sockets=[sock])
