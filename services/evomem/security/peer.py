"""Who may call a gRPC service: a shared secret in every call's metadata, and/or mutual TLS.

Storage, cronista and linker accept a call only when its ``authorization`` metadata is
``Bearer <EVOMEM_GRPC_SECRET>``, compared with ``hmac.compare_digest`` on SHA-256 digests
(constant time, whatever the lengths). The health service (``grpc.health.v1.Health``) stays
open: probes carry no metadata and health tells nothing about the data. A refused call gets
``UNAUTHENTICATED``, and the servicer never runs.

Clients (``adapters.grpc.clients``) add the metadata through a channel interceptor, so every
call of every client carries it, the vectors' probes included.

Mutual TLS (EVOMEM_GRPC_TLS_CA, _CERT, _KEY): the server presents its certificate and demands
one signed by the CA from every client; clients check the server's against the same CA (its
name must match the address they dial). Both can be on at once.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import grpc

log = logging.getLogger("evomem.grpc.auth")

METADATA_KEY = "authorization"
OPEN_PREFIXES = ("/grpc.health.v1.Health/",)


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


class SecretServerInterceptor(grpc.ServerInterceptor):
    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("an empty gRPC secret")
        self._expected = _digest("Bearer " + secret)

        def refuse(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "[unauthenticated] missing or wrong EVOMEM_GRPC_SECRET")

        self._refuse = grpc.unary_unary_rpc_method_handler(refuse)

    def allowed(self, metadata: Any) -> bool:
        given = ""
        for key, value in metadata or ():
            if key == METADATA_KEY and isinstance(value, str):
                given = value
        return hmac.compare_digest(_digest(given), self._expected)

    def intercept_service(self, continuation: Callable[[Any], Any], handler_call_details: Any) -> Any:
        if handler_call_details.method.startswith(OPEN_PREFIXES):
            return continuation(handler_call_details)
        if self.allowed(handler_call_details.invocation_metadata):
            return continuation(handler_call_details)
        log.warning("refused a gRPC call to %s: missing or wrong secret", handler_call_details.method)
        return self._refuse


class _Details(NamedTuple):
    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: bool | None
    compression: Any


class _CallDetails(_Details, grpc.ClientCallDetails):
    pass


class SecretClientInterceptor(grpc.UnaryUnaryClientInterceptor):
    def __init__(self, secret: str) -> None:
        self._pair = (METADATA_KEY, "Bearer " + secret)

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        metadata = [*(details.metadata or ()), self._pair]
        new = _CallDetails(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )
        return continuation(new, request)


def with_secret(channel: grpc.Channel, secret: str | None) -> grpc.Channel:
    """``channel`` whose every call carries the secret (unchanged when there is none)."""
    if not secret:
        return channel
    return grpc.intercept_channel(channel, SecretClientInterceptor(secret))


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """PEM bytes: the CA that signs every peer, this process's certificate chain and key."""

    ca: bytes
    cert: bytes
    key: bytes

    @classmethod
    def load(cls, ca: str, cert: str, key: str) -> TlsFiles:
        return cls(*(Path(p).expanduser().read_bytes() for p in (ca, cert, key)))

    def __repr__(self) -> str:  # never the key
        return "TlsFiles(<pem>)"


def server_credentials(tls: TlsFiles) -> grpc.ServerCredentials:
    return grpc.ssl_server_credentials([(tls.key, tls.cert)], root_certificates=tls.ca, require_client_auth=True)


def channel_credentials(tls: TlsFiles) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(root_certificates=tls.ca, private_key=tls.key, certificate_chain=tls.cert)
