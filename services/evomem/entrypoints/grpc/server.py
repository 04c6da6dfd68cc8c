"""A gRPC server for one EvoMem service: health (grpc.health.v1), metrics, message limits.

The status mapping of domain errors lives in ``errors`` (``servicer_method``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from evomem.ops.runtime import GRACE_S, ConfigError, metric
from evomem.security.peer import SecretServerInterceptor, TlsFiles, server_credentials

MAX_MESSAGE_BYTES = 64 * 1024 * 1024


@dataclass
class RunningServer:
    server: Any
    port: int
    health: Any
    names: tuple[str, ...]

    def set_serving(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", *self.names):
            self.health.set(name, status)

    def set_degraded(self, degraded: bool) -> None:
        """Degraded: the server answers ("" SERVING), but its services report NOT_SERVING
        (the cronista extracting with its fallback while Triton is down)."""
        if not degraded:
            self.set_serving(True)
            return
        self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        for name in self.names:
            self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)

    def stop(self, grace: float = GRACE_S) -> None:
        self.set_serving(False)
        self.server.stop(grace).wait()


def create_server(
    address: str,
    register: Callable[[Any], None],
    names: tuple[str, ...],
    *,
    max_workers: int = 16,
    metrics: bool = True,
    secret: str | None = None,
    tls: TlsFiles | None = None,
) -> RunningServer:
    """Start a gRPC server on ``address`` (port 0 picks one) with health and metrics.

    ``secret``: every call but health must carry it (``peer_auth``; UNAUTHENTICATED otherwise).
    ``tls``: mutual TLS, a client certificate signed by the CA required.
    Returns once it is listening; health is NOT_SERVING until the caller says otherwise.
    """
    interceptors: list[Any] = [SecretServerInterceptor(secret)] if secret else []  # first: refused calls do no work
    interceptors += [MetricsInterceptor()] if metrics else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers),
        interceptors=interceptors,
        options=[
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    register(server)
    health_servicer = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    port = server.add_secure_port(address, server_credentials(tls)) if tls else server.add_insecure_port(address)
    if port == 0:
        raise ConfigError(f"could not bind {address}")
    server.start()
    running = RunningServer(server=server, port=port, health=health_servicer, names=names)
    running.set_serving(False)
    return running


class MetricsInterceptor(grpc.ServerInterceptor):
    """Counts and times every RPC (Prometheus ``evomem_grpc_*``)."""

    def __init__(self) -> None:
        self._requests = metric("counter", "evomem_grpc_requests_total", "gRPC requests", ("method", "code"))
        self._latency = metric("histogram", "evomem_grpc_latency_seconds", "gRPC latency", ("method",))

    def intercept_service(self, continuation: Callable[[Any], Any], handler_call_details: Any) -> Any:
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None or self._requests is None:
            return handler
        method = handler_call_details.method.rsplit("/", 1)[-1]
        inner = handler.unary_unary
        requests, latency = self._requests, self._latency

        def wrapped(request: Any, context: Any) -> Any:
            started = time.perf_counter()
            code = "OK"
            try:
                return inner(request, context)
            except Exception:
                code = context.code().name if context.code() else "UNKNOWN"
                raise
            finally:
                latency.labels(method).observe(time.perf_counter() - started)
                requests.labels(method, code).inc()

        return grpc.unary_unary_rpc_method_handler(
            wrapped,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
