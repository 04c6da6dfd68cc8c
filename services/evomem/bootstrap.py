"""The composition root: the one place that turns settings into a wiring.

Nothing connects to anything at import time. ``build_embedded`` wires everything into one
process (SQLite in-process, lite cronista inline, optional heuristic linker). The
multi-service wiring reuses the same ``MemoryService`` and MCP tools with other adapters.
"""

from __future__ import annotations

import importlib.util
import logging
import threading

from evomem.adapters.sqlite_store import SQLiteStore
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import Unavailable
from evomem.domain.linking import HeuristicLinker, ScoredLinker
from evomem.ports import Linker, Store, Vectors
from evomem.service import MemoryService, ServiceConfig
from evomem.settings import VECTORS, Settings

log = logging.getLogger("evomem.bootstrap")

#: Nearest notes below this cosine similarity are noise for all-MiniLM-L6-v2 (unrelated short
#: sentences score about 0-0.2 against each other); they never enter a recall or a linker.
VECTOR_MIN_SIMILARITY = 0.2


def vectors_problem() -> str | None:
    """Why hybrid recall cannot run here (None when it can). Cheap: finds files, loads nothing big."""
    from evomem.adapters.embedding import INSTALL_HINT, resolve_model_files
    from evomem.adapters.sqlite_driver import vec_problem

    problem = vec_problem()
    if problem is not None:
        return problem
    missing = [m for m in ("numpy", "onnxruntime", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{', '.join(missing)} not installed; " + INSTALL_HINT
    files, looked = resolve_model_files()
    if files is None:
        return "no embedding model found (looked at " + "; ".join(looked) + "); " + INSTALL_HINT
    return None


def build_vectors(settings: Settings, store: SQLiteStore) -> Vectors | None:
    """The ``Vectors`` port in the store's own file, per ``settings.vectors``. Loads no model."""
    if settings.vectors == "off":
        return None
    problem = vectors_problem()
    if problem is not None:
        if settings.vectors == "on":
            raise Unavailable(f"vectors on: {problem}")
        log.info("hybrid recall off (BM25 only): %s", problem)
        return None
    from evomem.adapters.embedding import OnnxEmbedder
    from evomem.adapters.semantic import SemanticIndex
    from evomem.adapters.vector_index import VectorIndex

    # One thread per call: a note or a query is one short sequence, where a second thread buys
    # little and concurrent calls would oversubscribe the cores (measured on 2 busy cores:
    # 7.5 ms per query with one thread, 16 ms with onnxruntime's default).
    embedder = OnnxEmbedder(threads=1)
    return SemanticIndex(embedder, VectorIndex(store.path, model=embedder.name), min_similarity=VECTOR_MIN_SIMILARITY)


class _Stopped(Exception):
    pass


def start_background(
    target: MemoryService | Vectors | None, *, stop: threading.Event | None = None
) -> list[threading.Thread]:
    """Work that must not hold up a server's start: load the embedding model, then embed the
    notes that have no vector yet (written with vectors off, or before a crash).

    ``target``: the embedded ``MemoryService`` (its vectors), or the ``Vectors`` itself (the
    storage service, which has no ``MemoryService``). Vectors that cannot backfill (None, or a
    gRPC client) start nothing. ``stop``: set it, then join the threads, before the process
    exits: the backfill stops after its current batch (the next start continues it). A
    process that exits while onnxruntime is still loading the model aborts (SIGABRT)."""
    vectors = target.vectors if isinstance(target, MemoryService) else target
    backfill = getattr(vectors, "backfill", None)
    load = getattr(getattr(vectors, "embedder", None), "load", None)
    if vectors is None or backfill is None:
        return []

    def progress(n: int) -> None:
        if stop is not None and stop.is_set():
            raise _Stopped
        if n % 1024 == 0:
            log.info("embedded %d earlier notes", n)

    def run() -> None:
        try:
            if load is not None:
                load()
            if stop is not None and stop.is_set():
                return
            done = backfill(progress=progress)
            if done:
                log.info("embedded %d notes that had no vector", done)
        except _Stopped:
            log.info("embedding earlier notes stopped (shutting down); the next start goes on")
        except Exception as exc:  # recall keeps working on BM25; the next start retries
            log.warning("embedding model or backfill failed (BM25 still works): %s", exc)

    thread = threading.Thread(target=run, name="evomem-vectors", daemon=True)
    thread.start()
    return [thread]


def build_linker(
    mode: str, settings: Settings | None = None, store: Store | None = None, embedder: object | None = None
) -> Linker | None:
    """The linker for ``--auto-supersede``. ``store``: lets the scored linker read the earlier
    versions of a candidate's chain (what a terse "Ledger runs on SQLite" is about)."""
    if mode == "llm":
        from evomem.adapters.llm_linker import build_llm_linker

        if settings is None or not settings.linker_model or not settings.linker_base_url:
            raise ValueError("the llm linker needs a model and a base URL")
        return build_llm_linker(
            settings.linker_model,
            settings.linker_base_url,
            structured=settings.linker_structured,
            timeout_s=float(settings.linker_timeout_s),
            cheap=ScoredLinker(lookup=store.get_many if store is not None else None, embedder=embedder),
        )
    if mode == "off":
        return None
    if mode == "heuristic":
        return HeuristicLinker()
    if mode == "scored":
        return ScoredLinker(lookup=store.get_many if store is not None else None, embedder=embedder)
    raise ValueError(f"unknown linker {mode!r}")  # pragma: no cover - Settings validates


def build_embedded(settings: Settings) -> MemoryService:
    store = SQLiteStore(settings.db)
    try:
        vectors = build_vectors(settings, store)
    except BaseException:
        store.close()
        raise
    return MemoryService(
        store,
        extractor=LiteCronista(),
        linker=build_linker(settings.auto_supersede, settings, store=store, embedder=vectors),
        vectors=vectors,
        config=ServiceConfig(
            default_namespace=settings.namespace,
            max_note_bytes=settings.max_note_bytes,
            default_author=settings.author,
            extract_inline=True,
        ),
    )


def build_gateway(
    *,
    storage_addr: str,
    redis_url: str,
    linker_addr: str | None = None,
    namespace: str = "default",
    max_note_bytes: int | None = None,
    author: str | None = None,
    vectors: str = "auto",
) -> MemoryService:
    """The multi-service wiring of the same ``MemoryService``: storage over gRPC, extraction
    queued on Redis (the worker runs it), automatic linking over gRPC when a linker is given.

    Hybrid recall: the vectors live in storage's file and storage embeds them, so the gateway
    only holds a ``GrpcVectors``. ``vectors``: ``auto`` (hybrid when storage has vectors, BM25
    quietly when it answers that it has none), ``on`` (a storage without vectors is an error
    each call: logged, and ``remember`` warns), ``off`` (BM25 only, no vector calls).

    Linking is synchronous here: the linker answers before ``remember`` writes, so a link
    exists from the moment the note does and no recall can show the replaced decision as
    active. Extraction is asynchronous: the note is stored (and searchable by its raw text)
    with extraction ``pending`` and a job is queued.
    """
    from evomem.adapters.grpc.clients import GrpcLinker, GrpcStore, GrpcVectors
    from evomem.adapters.redis_queue import RedisQueue
    from evomem.domain.text import DEFAULT_MAX_NOTE_BYTES

    if vectors not in VECTORS:
        raise ValueError(f"vectors must be one of {', '.join(VECTORS)}, got {vectors!r}")
    return MemoryService(
        GrpcStore(storage_addr),
        extractor=None,
        linker=GrpcLinker(linker_addr) if linker_addr else None,
        vectors=GrpcVectors(storage_addr, required=vectors == "on") if vectors != "off" else None,
        queue=RedisQueue(redis_url),
        config=ServiceConfig(
            default_namespace=namespace,
            max_note_bytes=max_note_bytes or DEFAULT_MAX_NOTE_BYTES,
            default_author=author,
            extract_inline=False,
            vectors_required=vectors == "on",  # recall then logs each time storage skips the vector half
        ),
    )
