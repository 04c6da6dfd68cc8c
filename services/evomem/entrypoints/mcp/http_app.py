"""The streamable-HTTP ASGI app and its listening socket: what an HTTP wiring is built from.

Routes, all in ``build_http_app`` (the embedded server and the gateway serve the same app,
``evomem.bootstrap.http.http_front`` builds it for both):

- ``/mcp``      MCP (streamable HTTP)
- ``/livez``    the process answers (no I/O): 200 ``{"status": "ok"}``
- ``/readyz``   the database answers a read (the gateway: the storage service does), and the
                embedding model has loaded when vectors are required (``--vectors on``):
                200 ``{"status": "ready", ...}``, else 503 with what is not ready
- ``/healthz``  kept for older probes: the same as ``/livez``
- ``/metrics``  Prometheus: tool calls by tool and outcome, latency histograms, notes by
                status, the extraction backlog, the model's load state (``evomem.entrypoints.mcp.telemetry``)
- ``/ui``       the decision timeline, read-only, under the tools' authentication
                (``evomem.entrypoints.web.timeline``)

``bind`` binds the listening socket first, so a busy port is reported before anything else
starts and the URL is known before the app is built.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from evomem.app import incidents
from evomem.domain.errors import EvoMemError
from evomem.entrypoints.mcp import limits
from evomem.entrypoints.mcp.messages import check_message

#: Seconds /readyz and /metrics wait for the store (the gateway: storage over gRPC) before answering without it.
PROBE_TIMEOUT_S = 2.0


def readiness(service: Any, *, model_required: bool = False) -> tuple[bool, dict[str, Any]]:
    """Whether ``service`` can answer now, and the detail /readyz shows."""
    from evomem.entrypoints.mcp import telemetry

    detail: dict[str, Any] = {}
    ready = True
    try:
        service.stats()
        detail["database"] = "ok"
    except EvoMemError as exc:
        ready = False
        detail["database"] = f"error: {incidents.for_caller(exc)}"
    except Exception as exc:
        ready = False
        detail["database"] = f"error: {incidents.unexpected('the readiness check', exc)}"
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
    from evomem.entrypoints.mcp import telemetry

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


def _json_rpc_error(
    status: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = (), *, answer: Any = None
) -> list[Any]:
    """The ASGI messages of an HTTP answer carrying a JSON-RPC error: ``answer`` (a
    ``JSONRPCError``), or -32600 with id null and ``message``."""
    if answer is not None:
        data = answer.model_dump_json(by_alias=True, exclude_unset=True).encode()
    else:
        error = {"code": limits.INVALID_REQUEST, "message": message}
        data = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers]
    return [
        {"type": "http.response.start", "status": status, "headers": head},
        {"type": "http.response.body", "body": data},
    ]


class JsonRpcGuard:
    """ASGI middleware: the MCP endpoint's requests held to the limits of every transport
    (``limits``) and checked as stdio checks a line (``messages.check_message``) before the SDK
    parses them. A POST body over the size limit is 413; one that is not a valid JSON-RPC message
    (too deep, not UTF-8, not JSON, an ``id`` that is neither a string nor an integer, a batch,
    ``params`` that are no object...) is 400 with the JSON-RPC error stdio would answer, its id
    kept when it has one; the SDK never sees it. With ``stateless`` (the gateway), a GET of the
    endpoint (an event stream, which a stateless server never opens) is 405 at once."""

    def __init__(self, app: Any, limit: int, stateless: bool = False) -> None:
        self.app = app
        self.limit = limit
        self.stateless = stateless

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].rstrip("/").endswith("/mcp"):
            await self.app(scope, receive, send)
            return
        user = scope.get("user")  # set by the SDK's authentication middleware when auth is on
        if user is not None and not getattr(user, "is_authenticated", False):
            await self.app(scope, receive, send)  # a caller without a valid token learns only 401
            return
        if scope["method"] == "GET" and self.stateless:
            message = "this endpoint answers POST only: the server is stateless and opens no event stream"
            for m in _json_rpc_error(405, message, ((b"allow", b"POST"),)):
                await send(m)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:  # refused before its body is read
            for r in _json_rpc_error(413, limits.too_large(self.limit)):
                await send(r)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            m = await receive()
            if m["type"] != "http.request":  # the client went away
                return
            chunks.append(m.get("body", b""))
            size += len(chunks[-1])
            more = m.get("more_body", False)
            if size > self.limit:
                for r in _json_rpc_error(413, limits.too_large(self.limit)):
                    await send(r)
                return
        body = b"".join(chunks)
        message, problem = check_message(body)
        if message is None:  # a bad message, or an empty body / a malformed notification (no answer due)
            why = "invalid request: the body is empty, or a malformed notification or response"
            for r in _json_rpc_error(400, why, answer=problem):
                await send(r)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def build_http_app(
    server: Any,
    *,
    host: str = "127.0.0.1",
    stateless: bool = False,
    json_response: bool = False,
    gate: Any = None,
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
    max_note_bytes: int | None = None,
    service: Callable[[], Any] | None = None,
    model_required: bool = False,
) -> Any:
    """``stateless``/``json_response``: the SDK's per-request transport, answering each POST with
    one JSON body instead of an event stream (the gateway: no SSE set-up per call).
    ``gate``: ``evomem.security.gate.Gate`` (tokens, rate limits), None without auth.
    Host and Origin checks stay on whatever ``host`` is (loopback, ``host``, and the allowed lists).
    ``max_note_bytes``: the body limit follows the note limit (an over-limit body is a JSON-RPC 413).
    ``service``: the ``MemoryService`` getter the tools use, for /readyz, /metrics and /ui."""
    assert isinstance(server, MCPServer)
    from evomem.security.gate import transport_security

    add_ops_routes(server, service, model_required=model_required)
    security = transport_security(host, allowed_hosts or [], allowed_origins or [])
    if service is not None:
        from evomem.entrypoints.web.timeline import add_ui_routes

        add_ui_routes(server, service, gate=gate, security=security)
    limit = limits.message_limit(max_note_bytes)
    app = server.streamable_http_app(
        host=host,
        stateless_http=stateless,
        json_response=json_response,
        transport_security=security,
        max_request_body_size=limit,
    )
    # After the SDK's own middleware (authentication among them): a caller is known before its
    # body is read. Starlette builds the stack on the first request.
    app.user_middleware.append(Middleware(JsonRpcGuard, limit=limit, stateless=stateless))
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
            "or choose another port with --port / EVOMEM_PORT (0 picks one)",
        ) from exc
    sock.listen(2048)  # from here a client that read the URL is queued, never refused
    return sock
