"""``evomem-service <name>``: one image, one command per service.

    evomem-service storage    gRPC StorageService over the SQLite file (its only writer), with
                              the file's vectors for hybrid recall (EVOMEM_VECTORS=auto|on|off)
    evomem-service cronista   gRPC CronistaService (lite backend)
    evomem-service linker     gRPC LinkerService (EVOMEM_LINKER=heuristic|scored|llm; llm: the
                              LLM behind the scored linker, EVOMEM_LINKER_MODEL/_BASE_URL)
    evomem-service worker     Redis Streams consumer that runs extraction jobs
    evomem-service gateway    MCP over streamable HTTP (gunicorn + uvicorn workers)

Each reads its address and its peers' addresses from the environment and fails fast
when one is missing. gRPC services report health (grpc.health.v1) as it really is,
export Prometheus metrics, log JSON to stderr, and drain in-flight calls on SIGTERM.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("evomem.services")

GRACE_S = 10.0


class ConfigError(RuntimeError):
    pass


def env(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None or value == "":
        raise ConfigError(f"{name} must be set (see compose.cpu.yaml for an example)")
    return value


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc


# ----------------------------------------------------------------------------- gRPC plumbing


@dataclass
class RunningServer:
    server: Any
    port: int
    health: Any
    names: tuple[str, ...]

    def set_serving(self, serving: bool) -> None:
        from grpc_health.v1 import health_pb2

        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", *self.names):
            self.health.set(name, status)

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
) -> RunningServer:
    """Start a gRPC server on ``address`` (port 0 picks one) with health and metrics.

    Returns once it is listening; health is NOT_SERVING until the caller says otherwise.
    """
    import grpc
    from grpc_health.v1 import health, health_pb2_grpc

    interceptors = [MetricsInterceptor()] if metrics else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers),
        interceptors=interceptors,
        options=[
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
        ],
    )
    register(server)
    health_servicer = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise ConfigError(f"could not bind {address}")
    server.start()
    running = RunningServer(server=server, port=port, health=health_servicer, names=names)
    running.set_serving(False)
    return running


class MetricsInterceptor:
    """Counts and times every RPC (Prometheus ``evomem_grpc_*``)."""

    def __init__(self) -> None:
        import grpc

        self._grpc = grpc
        self._requests, self._latency = _rpc_metrics()

    def intercept_service(self, continuation: Callable[[Any], Any], handler_call_details: Any) -> Any:
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
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

        return self._grpc.unary_unary_rpc_method_handler(
            wrapped,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


_METRICS: tuple[Any, Any] | None = None


def _rpc_metrics() -> tuple[Any, Any]:
    global _METRICS
    if _METRICS is None:
        from prometheus_client import Counter, Histogram

        _METRICS = (
            Counter("evomem_grpc_requests_total", "gRPC requests", ["method", "code"]),
            Histogram("evomem_grpc_latency_seconds", "gRPC latency", ["method"]),
        )
    return _METRICS


def start_metrics() -> None:
    port = env_int("EVOMEM_METRICS_PORT", 0)
    if port:
        from prometheus_client import start_http_server

        start_http_server(port)
        log.info("metrics on :%d/metrics", port)


def wait_for_signal(on_stop: Callable[[], None]) -> None:
    """Block until SIGTERM/SIGINT, then run ``on_stop`` (graceful drain)."""
    stop = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        log.info("signal %s: shutting down", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    stop.wait()
    on_stop()


# ----------------------------------------------------------------------------- services


def _listen(default_port: int, register: Callable[[Any], None], name: str) -> RunningServer:
    """Bind EVOMEM_GRPC_HOST:EVOMEM_GRPC_PORT (or ``default_port``) and start metrics; not yet SERVING."""
    address = f"{env('EVOMEM_GRPC_HOST', '0.0.0.0')}:{env_int('EVOMEM_GRPC_PORT', default_port)}"
    running = create_server(address, register, (name,))
    start_metrics()
    return running


def vectors_mode() -> str:
    """EVOMEM_VECTORS: auto (the default), on or off."""
    from evomem.settings import VECTORS

    mode = env("EVOMEM_VECTORS", "auto")
    if mode not in VECTORS:
        raise ConfigError(f"EVOMEM_VECTORS must be one of {', '.join(VECTORS)}, got {mode!r}")
    return mode


def storage_vectors(store: Any) -> Any:
    """The storage file's ``Vectors`` per EVOMEM_VECTORS (auto|on|off), as the embedded server
    builds them (``bootstrap.build_vectors``); None when off. Loads no model."""
    from evomem.bootstrap import build_vectors
    from evomem.domain.errors import Unavailable
    from evomem.settings import Settings

    settings = Settings(db=store.path, vectors=vectors_mode())
    try:
        return build_vectors(settings, store)
    except Unavailable as exc:  # EVOMEM_VECTORS=on and no model or sqlite-vec here
        raise ConfigError(f"EVOMEM_VECTORS: {exc.message}") from exc


def serve_storage() -> None:
    from evomem.adapters.grpc.servicers import StorageServicer
    from evomem.adapters.sqlite_store import SQLiteStore
    from evomem.bootstrap import start_background
    from evomem.v1 import storage_pb2_grpc

    vectors_mode()  # a bad value fails before the database is opened
    store = SQLiteStore(env("EVOMEM_DB", "/data/evomem.db"))
    try:
        vectors = storage_vectors(store)
    except BaseException:
        store.close()
        raise
    running = _listen(
        50051,
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(store, vectors), s),
        "evomem.v1.StorageService",
    )

    def probe() -> None:
        # Health is the database's real state: a read that fails turns the service NOT_SERVING.
        while True:
            try:
                store.stats()
                running.set_serving(True)
            except Exception as exc:  # pragma: no cover - exercised by killing the volume
                log.error("storage health check failed: %s", exc)
                running.set_serving(False)
            time.sleep(5)

    store.stats()
    running.set_serving(True)
    threading.Thread(target=probe, daemon=True, name="health-probe").start()
    # The model loads and notes without a vector are embedded in the background; until then a
    # NearestNodes call waits for the model to load (about a second).
    stopping = threading.Event()
    background = start_background(vectors, stop=stopping)
    log.info(
        "storage serving on port %d, db %s, %s",
        running.port,
        store.path,
        f"vectors {vectors.name}" if vectors is not None else "no vectors (BM25 only)",
    )

    def stop() -> None:
        stopping.set()
        running.stop()
        for thread in background:  # exiting while onnxruntime loads the model would abort
            thread.join(GRACE_S)
        if vectors is not None:
            vectors.close()  # type: ignore[attr-defined]
        store.close()

    wait_for_signal(stop)


def serve_cronista() -> None:
    from evomem.adapters.grpc.servicers import CronistaServicer
    from evomem.domain.cronista import LiteCronista
    from evomem.v1 import cronista_pb2_grpc

    backend = env("EVOMEM_CRONISTA_BACKEND", "lite")
    if backend != "lite":
        raise ConfigError(f"EVOMEM_CRONISTA_BACKEND={backend!r}: only 'lite' is available in this build")
    extractor = LiteCronista()
    running = _listen(
        50052,
        lambda s: cronista_pb2_grpc.add_CronistaServiceServicer_to_server(CronistaServicer(extractor), s),
        "evomem.v1.CronistaService",
    )
    extractor.extract("warm-up: we picked the lite cronista because it is fast.")
    running.set_serving(True)
    log.info("cronista (%s) serving on port %d", extractor.name, running.port)
    wait_for_signal(running.stop)


def serve_linker() -> None:
    from evomem.adapters.grpc.servicers import LinkerServicer
    from evomem.bootstrap import build_linker
    from evomem.settings import AUTO_SUPERSEDE, Settings, SettingsError
    from evomem.v1 import linker_pb2_grpc

    mode = env("EVOMEM_LINKER", "heuristic")
    if mode not in AUTO_SUPERSEDE:
        raise ConfigError(f"EVOMEM_LINKER must be one of {', '.join(AUTO_SUPERSEDE)}, got {mode!r}")
    settings = None
    if mode == "llm":  # EVOMEM_LINKER_MODEL, _BASE_URL, _TIMEOUT_S, _STRUCTURED; key: _API_KEY
        try:
            settings = Settings.from_env(auto_supersede="llm")
        except SettingsError as exc:
            raise ConfigError(f"EVOMEM_LINKER=llm: {exc}") from exc
    # With storage's address, the scored linker reads earlier versions of a candidate's chain.
    storage_addr = os.environ.get("EVOMEM_STORAGE_ADDR") or None
    store = None
    if storage_addr:
        from evomem.adapters.grpc.clients import GrpcStore

        store = GrpcStore(storage_addr)
    linker = build_linker(mode, settings, store)
    if linker is None:
        raise ConfigError("EVOMEM_LINKER=off: do not start the linker service; set EVOMEM_AUTO_SUPERSEDE=off")
    running = _listen(
        50053,
        lambda s: linker_pb2_grpc.add_LinkerServiceServicer_to_server(LinkerServicer(linker), s),
        "evomem.v1.LinkerService",
    )
    running.set_serving(True)
    log.info("linker (%s) serving on port %d", linker.name, running.port)
    wait_for_signal(running.stop)


def serve_worker() -> None:
    from evomem.entrypoints.worker import main as worker_main

    worker_main()


def serve_gateway() -> None:
    """gunicorn with uvicorn workers, serving ``evomem.entrypoints.gateway:create_app()``."""
    host = env("EVOMEM_HOST", "0.0.0.0")
    port = env_int("EVOMEM_PORT", 8765)
    workers = env_int("EVOMEM_GATEWAY_WORKERS", 2)
    argv = [
        "gunicorn",
        "--worker-class",
        "uvicorn_worker.UvicornWorker",
        "--workers",
        str(workers),
        "--bind",
        f"{host}:{port}",
        "--graceful-timeout",
        str(int(GRACE_S)),
        "--access-logfile",
        "-" if os.environ.get("EVOMEM_ACCESS_LOG") else "/dev/null",
        "evomem.entrypoints.gateway:create_app()",
    ]
    os.execvp(argv[0], argv)


COMMANDS: dict[str, Callable[[], None]] = {
    "storage": serve_storage,
    "cronista": serve_cronista,
    "linker": serve_linker,
    "worker": serve_worker,
    "gateway": serve_gateway,
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in COMMANDS:
        print(f"usage: evomem-service {{{'|'.join(COMMANDS)}}}", file=sys.stderr)
        return 2
    from evomem import logs

    logs.configure(os.environ.get("EVOMEM_LOG_LEVEL", "INFO"), os.environ.get("EVOMEM_LOG_FORMAT", "json"))
    try:
        COMMANDS[args[0]]()
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
