"""The HTTP wirings: who may call (the gate: tokens, JWTs, rate limits), the one HTTP front of
both wirings (``http_front``), and the embedded server's, bound to its socket (``embedded_http_front``)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evomem.ops.runtime import ConfigError
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


def build_gate(settings: Settings, host: str, port: int) -> Gate | None:
    """The auth gate of an HTTP wiring (embedded HTTP or gateway) bound to ``host:port``, or
    None when no token file is set. Without one, a non-loopback ``host`` is refused unless
    EVOMEM_INSECURE_NO_AUTH is set, and then warned about at every start."""
    from evomem.security.gate import Gate, is_loopback

    jwt_on = bool(settings.auth.jwt_issuer or settings.auth.jwt_audience or settings.auth.jwt_jwks)
    if not settings.auth.file and not jwt_on:
        if not is_loopback(host):
            if not settings.auth.insecure_no_auth:
                raise ConfigError(
                    f"refusing to serve MCP on {host}, a non-loopback address, without authentication: "
                    "set --auth-file / EVOMEM_AUTH_FILE (see README, Share one memory across a team), "
                    "bind 127.0.0.1, or pass --insecure-no-auth / EVOMEM_INSECURE_NO_AUTH=true"
                )
            log.warning(
                "INSECURE: serving MCP on %s without authentication (--insecure-no-auth): anyone who can "
                "reach this port can read, rewrite and purge every namespace",
                host,
            )
        return None
    from evomem.security.tokens import AuthFileError, TokenRegistry, TokenVerifier

    try:
        registry = TokenRegistry(settings.auth.file) if settings.auth.file else None
    except AuthFileError as exc:
        raise ConfigError(str(exc)) from None
    jwt = _jwt_verifier(settings) if jwt_on else None
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    resource = settings.auth.resource_url or f"http://{shown}:{port}/mcp"
    issuer = settings.auth.issuer_url or _origin(resource)
    from evomem.security.ratelimit import build_limiter

    # Tokens with a ``rate`` are limited; the file may gain one at the next SIGHUP, so always built.
    limiter = build_limiter(settings.auth.rate_redis_url or settings.queue.redis_url)
    if registry is not None:
        log.info("authentication on: %d identities from %s", len(registry), settings.auth.file)
    if jwt is not None:
        log.info("authentication on: JWTs from %s for %s", settings.auth.jwt_issuer, settings.auth.jwt_audience)
    return Gate(TokenVerifier(registry, resource=resource, jwt=jwt), resource, issuer, limiter)


def _jwt_verifier(settings: Settings) -> Any:
    from evomem.security.jwt import JwtVerifier

    a = settings.auth
    if not (a.jwt_issuer and a.jwt_audience and a.jwt_jwks):
        raise ConfigError("JWTs need all three of EVOMEM_JWT_ISSUER, EVOMEM_JWT_AUDIENCE and EVOMEM_JWT_JWKS")
    try:
        return JwtVerifier(
            a.jwt_issuer,
            a.jwt_audience,
            a.jwt_jwks,
            name_claim=a.jwt_name_claim,
            role_claim=a.jwt_role_claim,
            namespaces_claim=a.jwt_namespaces_claim,
        )
    except (OSError, ValueError) as exc:
        raise ConfigError(f"EVOMEM_JWT_JWKS {a.jwt_jwks}: {exc}") from None


def _origin(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def allowed(value: str | None) -> list[str]:
    """A comma-separated setting (EVOMEM_ALLOWED_HOSTS, _ORIGINS) as a list."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]
