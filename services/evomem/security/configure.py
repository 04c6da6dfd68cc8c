"""The security settings, applied: the HTTP gate (tokens, JWTs, rate limits, the bind rule) and
how a process authenticates to and as a gRPC peer (the shared secret, mutual TLS, the bind rule).

Every function takes the one ``Settings`` object and answers what the composition root wires in;
a setting that cannot work (a token file that does not parse, TLS files missing one of three, a
non-loopback address without authentication) is a ``ConfigError`` naming the variable.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from evomem.ops.runtime import ConfigError
from evomem.settings import Settings

if TYPE_CHECKING:
    from evomem.security.gate import Gate

log = logging.getLogger("evomem.security")


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


# ---------------------------------------------------------------------------- gRPC peers


def grpc_peer(settings: Settings) -> dict[str, Any]:
    """How this process authenticates to (and as) a gRPC peer: ``secret`` (EVOMEM_GRPC_SECRET or
    _FILE) and ``tls`` (EVOMEM_GRPC_TLS_CA, _CERT, _KEY: all three, or none)."""
    from evomem.security.peer import TlsFiles

    a = settings.auth
    files = (a.grpc_tls_ca, a.grpc_tls_cert, a.grpc_tls_key)
    tls = None
    if any(files):
        if not all(files):
            raise ConfigError(
                "mutual TLS needs all three of EVOMEM_GRPC_TLS_CA, EVOMEM_GRPC_TLS_CERT and EVOMEM_GRPC_TLS_KEY"
            )
        try:
            tls = TlsFiles.load(*files)  # type: ignore[arg-type]
        except OSError as exc:
            raise ConfigError(f"EVOMEM_GRPC_TLS_*: cannot read {exc.filename}: {exc.strerror}") from None
    return {"secret": settings.grpc_secret(), "tls": tls}


def grpc_listen_secret(settings: Settings) -> str | None:
    """The secret a gRPC service demands of its callers (``grpc_listen_peer`` without TLS)."""
    return grpc_listen_peer(settings)["secret"]


def grpc_listen_peer(settings: Settings) -> dict[str, Any]:
    """What a gRPC service demands of its callers: the secret and/or mutual TLS. With neither,
    a non-loopback bind address is refused unless EVOMEM_GRPC_INSECURE is set (then warned at
    every start)."""
    from evomem.security.gate import is_loopback

    peer = grpc_peer(settings)
    host = settings.grpc.host
    if peer["secret"] is None and peer["tls"] is None and not is_loopback(host):
        if not settings.auth.grpc_insecure:
            raise ConfigError(
                f"refusing to serve gRPC on {host}, a non-loopback address, without EVOMEM_GRPC_SECRET "
                "(or EVOMEM_GRPC_SECRET_FILE): anyone reaching the port could read and purge every namespace. "
                "Set a secret, bind 127.0.0.1, or set EVOMEM_GRPC_INSECURE=true"
            )
        log.warning("INSECURE: gRPC on %s accepts calls without a secret (EVOMEM_GRPC_INSECURE)", host)
    return peer


# ---------------------------------------------------------------------------- /metrics


def metrics_listen(settings: Settings) -> tuple[int, str, str | None]:
    """Where a service serves /metrics and the bearer token it demands: ``(port, host, token)``
    (port 0: off). The rule of every listener: a non-loopback address needs a token
    (EVOMEM_METRICS_TOKEN or _FILE), or EVOMEM_METRICS_INSECURE, and then a warning at every start."""
    from evomem.security.gate import is_loopback

    port, host = settings.metrics.port, settings.metrics.host
    token = settings.metrics_token()  # an unreadable file is a SettingsError naming the variable
    if port and token is None and not is_loopback(host):
        if not settings.metrics.insecure:
            raise ConfigError(
                f"refusing to serve /metrics on {host}, a non-loopback address, without a token: set "
                "EVOMEM_METRICS_TOKEN_FILE (the scraper sends it as a bearer token), bind 127.0.0.1, or set "
                "EVOMEM_METRICS_INSECURE=true"
            )
        log.warning(
            "INSECURE: /metrics on %s:%d without a token (EVOMEM_METRICS_INSECURE): anyone reaching the port reads "
            "the service's counts and latencies",
            host,
            port,
        )
    return port, host, token
