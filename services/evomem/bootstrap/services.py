"""The multi-service wiring: the gateway's service over gRPC clients and Redis, and one builder per
gRPC service (storage, cronista, linker) and for the extraction worker."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evomem.app.background import start_background
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.notes import NoteLimits, NoteRules
from evomem.app.ports import Extractor
from evomem.app.storage import LocalStorage
from evomem.bootstrap.embedded import _service_config
from evomem.bootstrap.linkers import linker_for, offerer_for
from evomem.bootstrap.stores import open_store, store_name
from evomem.bootstrap.vectors import storage_vectors
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import Unavailable
from evomem.entrypoints.grpc.lifecycle import GrpcService
from evomem.ops.runtime import ConfigError
from evomem.security.configure import build_gate, grpc_listen_peer, grpc_peer
from evomem.settings import Settings, SettingsError

if TYPE_CHECKING:
    from evomem.app.jobs import ExtractionWorker

log = logging.getLogger("evomem.bootstrap")

#: The storage service's database when EVOMEM_DB is not set (the image's volume).
STORAGE_DB = "/data/evomem.db"


def build_gateway(settings: Settings) -> MemoryService:
    """The multi-service wiring of the same ``MemoryService``: storage over gRPC, extraction
    queued on Redis (the worker runs it), automatic linking over gRPC when
    ``auto_supersede`` is not ``off`` (then the linker's address is required).

    Hybrid recall: the vectors live in storage's file and storage embeds them; the gateway asks
    for them. ``vectors``: ``auto`` (hybrid when storage has vectors, BM25 quietly when it has
    none), ``on`` (a storage without vectors is reported each call: logged, recall says so and
    ``remember`` warns), ``off`` (BM25 only).

    A remember is two storage calls (``PrepareRemember``: the named nodes and the linker's
    candidates; ``RememberNote``: the write and its vector), a recall one (``RecallNodes``).

    Linking is synchronous here: the linker answers before ``remember`` writes, so a link
    exists from the moment the note does and no recall can show the replaced decision as
    active. Extraction is asynchronous: the note is stored (and searchable by its raw text)
    with extraction ``pending`` and a job is queued.
    """
    from evomem.adapters.grpc.clients import GrpcLinker, GrpcStorage
    from evomem.adapters.redis_queue import RedisQueue

    storage_addr, redis_url, linker_addr = gateway_peers(settings)
    mode = settings.vectors.mode
    peer = grpc_peer(settings)  # every gRPC call carries the secret, over mutual TLS when set
    storage = GrpcStorage(storage_addr, vectors=mode != "off", **peer)
    return MemoryService(
        storage,
        extractor=None,
        linker=GrpcLinker(linker_addr, **peer) if linker_addr else None,
        # Offering runs in the gateway, on the candidates storage found (with their cosines and
        # earlier versions: the gateway holds no embedding model), so it needs no linker service.
        offerer=offerer_for(settings),
        queue=RedisQueue(redis_url),
        config=_service_config(settings, extract_inline=False, vectors=mode != "off", vectors_required=mode == "on"),
    )


def gateway_app(settings: Settings) -> Any:
    """The gateway's HTTP app (``evomem.entrypoints.mcp.gateway:create_app()`` under gunicorn):
    the logs, the gateway's ``MemoryService`` (``build_gateway``), the gate (tokens; SIGHUP to
    gunicorn re-reads them), the MCP tools, and the HTTP front, stateless."""
    from evomem.bootstrap.http import http_front
    from evomem.entrypoints.mcp.server import build_mcp_server
    from evomem.ops import logs

    logs.configure(settings.logging.level, settings.log_format("json"))
    service = build_gateway(settings)
    info = {
        "wiring": "gateway",
        "storage": settings.addresses.storage,
        "auto_supersede": settings.linker.auto_supersede,
        "vectors": settings.vectors.mode,
    }
    host = settings.mcp.host or "127.0.0.1"
    gate = build_gate(settings, host, settings.mcp.port)  # tokens (issue 14)
    # vectors=auto: hybrid when storage has vectors, which the gateway learns per call.
    hybrid = {"on": True, "off": False}.get(settings.vectors.mode)
    server = build_mcp_server(
        lambda: service, server_info=info, gate=gate, hybrid=hybrid, note_chars=settings.mcp.answer_note_chars
    )
    # /readyz asks storage (a stats call); the model lives in storage, so it is never required here.
    return http_front(settings, server, gate, service=lambda: service, stateless=True)


def gateway_peers(settings: Settings) -> tuple[str, str, str | None]:
    """The gateway's storage address, Redis URL and linker address (None when linking is off),
    or a ``SettingsError`` naming the one that is missing."""
    linking = settings.linker.auto_supersede != "off"
    if linking and not settings.addresses.linker:
        raise SettingsError("EVOMEM_AUTO_SUPERSEDE is on: set EVOMEM_LINKER_ADDR to the linker service")
    storage_addr = settings.require("addresses", "storage")
    redis_url = settings.require("queue", "redis_url")
    return storage_addr, redis_url, settings.addresses.linker if linking else None


def build_storage(settings: Settings) -> GrpcService:
    """The StorageService over the SQLite file (its only writer), with the file's vectors; or over
    PostgreSQL (EVOMEM_DATABASE_URL), with the database's vectors: replicas that hold no state."""
    from evomem.entrypoints.grpc.servicers import StorageServicer
    from evomem.v1 import storage_pb2_grpc

    # The file, or PostgreSQL (EVOMEM_DATABASE_URL): then replicas hold no state, several can run.
    store = open_store(settings, STORAGE_DB)
    try:
        vectors = storage_vectors(settings, store)
    except BaseException:
        store.close()
        raise
    storage = LocalStorage(store, vectors)
    rules = NoteRules(NoteLimits(settings.memory.namespace, settings.memory.max_note_bytes))
    return GrpcService(
        settings,
        "storage",
        "evomem.v1.StorageService",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(storage, rules), s),
        f"db {store_name(store)}, " + (f"vectors {vectors.name}" if vectors is not None else "no vectors (BM25 only)"),
        warm=store.stats,
        probe=store.ping,  # every 5 s: one cheap read (stats would count every row)
        # The model loads and notes without a vector are embedded in the background; until
        # then RecallNodes and PrepareRemember answer by BM25 with a note saying so: no call
        # waits for the model.
        background=lambda stop: start_background(vectors, stop=stop),
        close=[storage.close],
        listen_peer=lambda: grpc_listen_peer(settings),
    )


def _warm_up(extractor: Extractor) -> None:
    extractor.extract("warm-up: we picked the lite cronista because it is fast.")


def build_extractor(settings: Settings, *, on_change: Callable[[str | None], None] | None = None) -> Extractor:
    """The cronista of EVOMEM_CRONISTA_BACKEND: ``lite``; ``onnx`` (the project's model on
    onnxruntime in process, EVOMEM_CRONISTA_MODEL_DIR or the packaged folder); ``triton`` (the
    same model on the Triton server at EVOMEM_TRITON_URL, the lite cronista when Triton cannot
    answer)."""
    backend = settings.cronista.backend
    if backend == "onnx":
        from evomem.adapters.models.onnx_cronista import OnnxCronista

        return OnnxCronista(settings.cronista.model_dir)
    if backend == "triton":
        try:
            from evomem.adapters.models.triton import TritonModel
            from evomem.adapters.models.triton_cronista import TritonCronista
        except ImportError as exc:
            raise ConfigError(f"EVOMEM_CRONISTA_BACKEND=triton: {exc}; pip install 'evomem-mcp[triton]'") from exc
        try:
            url = settings.require("triton", "url")
        except SettingsError as exc:
            raise ConfigError(f"EVOMEM_CRONISTA_BACKEND=triton: {exc}") from exc
        t = settings.triton
        model = TritonModel(url, t.model, t.model_version, timeout_s=t.timeout_ms / 1000, retries=t.retries)
        cronista = TritonCronista(model, settings.cronista.model_dir, retry_after_s=float(t.retry_after_s))
        cronista.on_change = on_change  # health follows the fallback: NOT_SERVING while it answers
        return cronista
    return LiteCronista()


def build_cronista(settings: Settings) -> GrpcService:
    """The CronistaService with the extractor of EVOMEM_CRONISTA_BACKEND. With ``triton`` the
    health of ``evomem.v1.CronistaService`` is NOT_SERVING while it extracts through its lite
    fallback (Triton down), "" stays SERVING; the state is probed every second."""
    from evomem.entrypoints.grpc.servicers import CronistaServicer
    from evomem.v1 import cronista_pb2_grpc

    holder: list[GrpcService] = []

    def tell(reason: str | None) -> None:  # the triton cronista's fallback turned on or off
        if holder and holder[0].running is not None:
            holder[0].running.set_degraded(reason is not None)

    extractor = build_extractor(settings, on_change=tell)
    try:
        extractor.load()  # the tokenizer, pinned: a missing or wrong file stops the start
    except Unavailable as exc:
        raise ConfigError(f"EVOMEM_CRONISTA_BACKEND={settings.cronista.backend}: {exc.message}") from exc
    service = GrpcService(
        settings,
        "cronista",
        "evomem.v1.CronistaService",
        lambda s: cronista_pb2_grpc.add_CronistaServiceServicer_to_server(CronistaServicer(extractor), s),
        f"backend {extractor.name}",
        warm=lambda: _warm_up(extractor),
        degraded=extractor.check,
        probe_interval_s=1.0 if settings.cronista.backend == "triton" else 5.0,
        close=[extractor.close],
        listen_peer=lambda: grpc_listen_peer(settings),
    )
    holder.append(service)
    return service


def build_linker(settings: Settings) -> GrpcService:
    """The LinkerService with the linker of EVOMEM_LINKER. It never calls storage: a candidate's
    earlier versions come with the request (DecideLink's ``earlier``, read by PrepareRemember)."""
    from evomem.entrypoints.grpc.servicers import LinkerServicer
    from evomem.v1 import linker_pb2_grpc

    mode = settings.linker.service
    if mode == "off":
        raise ConfigError("EVOMEM_LINKER=off: do not start the linker service; set EVOMEM_AUTO_SUPERSEDE=off")
    if mode == "llm":
        try:
            settings.require_llm("auto_supersede")
        except SettingsError as exc:
            raise ConfigError(f"EVOMEM_LINKER=llm: {exc}") from exc
    linker = linker_for(mode, settings)
    assert linker is not None
    return GrpcService(
        settings,
        "linker",
        "evomem.v1.LinkerService",
        lambda s: linker_pb2_grpc.add_LinkerServiceServicer_to_server(LinkerServicer(linker), s),
        f"linker {linker.name}",
        listen_peer=lambda: grpc_listen_peer(settings),
    )


def worker_service(
    storage_addr: str, cronista_addr: str, *, timeout_s: float | None = None, **peer: Any
) -> MemoryService:
    """The worker's ``MemoryService``: storage and cronista over gRPC, nothing inline."""
    from evomem.adapters.grpc.clients import GrpcExtractor, GrpcStorage

    t = {} if timeout_s is None else {"timeout_s": timeout_s}
    storage = GrpcStorage(storage_addr, **peer, **t)
    extractor = GrpcExtractor(cronista_addr, **peer, **t)
    return MemoryService(storage, extractor=extractor, config=ServiceConfig(extract_inline=False))


def build_worker(settings: Settings, *, stop: threading.Event | None = None) -> ExtractionWorker:
    """The extraction worker: jobs from the Redis stream, storage and cronista over gRPC."""
    from evomem.adapters.redis_queue import RedisJobSource, connect
    from evomem.app.jobs import ExtractionWorker, WorkerConfig, default_consumer

    redis_url = settings.require("queue", "redis_url")
    storage_addr = settings.require("addresses", "storage")
    cronista_addr = settings.require("addresses", "cronista")
    q = settings.queue
    config = WorkerConfig(
        consumer=q.worker_consumer,
        visibility_ms=q.job_visibility_ms,
        max_attempts=q.job_max_attempts,
        sweep_interval_s=q.sweep_interval_s,
        sweep_batch=q.sweep_batch,
        batch=q.worker_batch,
    )
    source = RedisJobSource(
        connect(redis_url), q.worker_consumer or default_consumer(), visibility_ms=q.job_visibility_ms
    )
    service = worker_service(storage_addr, cronista_addr, **grpc_peer(settings))
    return ExtractionWorker(service, source, config, stop=stop)


BUILDERS: dict[str, Callable[[Settings], GrpcService]] = {
    "storage": build_storage,
    "cronista": build_cronista,
    "linker": build_linker,
}
