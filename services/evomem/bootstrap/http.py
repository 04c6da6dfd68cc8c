"""The HTTP wirings: who may call (the gate: tokens, JWTs, rate limits), the one HTTP front of
both wirings (``http_front``), and the embedded server's, bound to its socket (``embedded_http_front``)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evomem.security.configure import allowed, build_gate
from evomem.settings import Settings

if TYPE_CHECKING:
    from evomem.app.memory import MemoryService
    from evomem.security.gate import Gate

log = logging.getLogger("evomem.bootstrap")


@dataclass(frozen=True)
class HttpFront:
    """A bound HTTP wiring, ready to serve: the ASGI ``app`` on the listening ``sock`` at ``url``;
    ``gate`` is None without authentication."""

    app: Any
    sock: socket.socket
    url: str
    gate: Gate | None


def http_front(
    settings: Settings,
    server: Any,
    gate: Gate | None,
    *,
    service: Callable[[], Any] | None = None,
    stateless: bool = False,
    model_required: bool = False,
) -> Any:
    """The HTTP app of both wirings around an MCP ``server``: streamable HTTP at ``/mcp``, the
    gate (tokens, rate limits), Host/Origin checks (loopback, the bind address, the allowed
    lists), the body limit that follows the note limit, and the ops routes (``/readyz`` and
    ``/metrics`` ask ``service``, the ``MemoryService`` getter the tools use).

    ``stateless``: the gateway's transport (any worker answers any request, each POST answered
    with one JSON body, no event stream); else the embedded server's sessions. ``model_required``:
    ``/readyz`` waits for the embedding model (embedded, ``--vectors on``)."""
    from evomem.entrypoints.mcp.http_app import build_http_app

    return build_http_app(
        server,
        host=settings.mcp.host or "127.0.0.1",
        stateless=stateless,
        json_response=stateless,
        gate=gate,
        allowed_hosts=allowed(settings.auth.allowed_hosts),
        allowed_origins=allowed(settings.auth.allowed_origins),
        max_note_bytes=settings.memory.max_note_bytes,
        service=service,
        model_required=model_required,
    )


def embedded_http_front(settings: Settings, service: MemoryService) -> HttpFront:
    """``evomem-mcp --transport http`` on the embedded ``service``: the gate (tokens, rate
    limits; None without a token file; refuses a non-loopback host without auth), the socket
    bound first (``PortInUse`` when the port is taken), then the MCP server and its HTTP app.
    SIGHUP re-reads the token file."""
    from evomem.bootstrap.embedded import embedded_mcp_server
    from evomem.entrypoints.mcp.http_app import bind
    from evomem.security.tokens import install_reload_signal

    host = settings.mcp.host or "127.0.0.1"
    gate = build_gate(settings, host, settings.mcp.port)  # refuses non-loopback without auth
    sock = bind(host, settings.mcp.port)
    if gate is not None:
        if settings.mcp.port == 0 and not settings.auth.resource_url:  # the real port, now that it is known
            gate = build_gate(settings, host, sock.getsockname()[1])
            assert gate is not None
        if gate.verifier.registry is not None:
            install_reload_signal(gate.verifier.registry)
    server = embedded_mcp_server(settings, service, gate=gate)
    required = settings.vectors.mode == "on"
    app = http_front(settings, server, gate, service=lambda: service, model_required=required)
    return HttpFront(app, sock, f"http://{host}:{sock.getsockname()[1]}/mcp", gate)
