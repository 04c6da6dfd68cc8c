"""The composition root: the one place that turns settings into a wiring.

Nothing connects to anything at import time. ``build_embedded`` wires everything into one
process (SQLite in-process, lite cronista inline, optional heuristic linker). The
multi-service wiring reuses the same ``MemoryService`` and MCP tools with other adapters.
"""

from __future__ import annotations

from evomem.adapters.sqlite_store import SQLiteStore
from evomem.domain.cronista import LiteCronista
from evomem.domain.linking import HeuristicLinker, ScoredLinker
from evomem.ports import Linker, Store
from evomem.service import MemoryService, ServiceConfig
from evomem.settings import Settings


def build_linker(mode: str, settings: Settings | None = None, store: Store | None = None) -> Linker | None:
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
        )
    if mode == "off":
        return None
    if mode == "heuristic":
        return HeuristicLinker()
    if mode == "scored":
        return ScoredLinker(lookup=store.get_many if store is not None else None)
    raise ValueError(f"unknown linker {mode!r}")  # pragma: no cover - Settings validates


def build_embedded(settings: Settings) -> MemoryService:
    store = SQLiteStore(settings.db)
    return MemoryService(
        store,
        extractor=LiteCronista(),
        linker=build_linker(settings.auto_supersede, settings, store=store),
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
) -> MemoryService:
    """The multi-service wiring of the same ``MemoryService``: storage over gRPC, extraction
    queued on Redis (the worker runs it), automatic linking over gRPC when a linker is given.

    Linking is synchronous here: the linker answers before ``remember`` writes, so a link
    exists from the moment the note does and no recall can show the replaced decision as
    active. Extraction is asynchronous: the note is stored (and searchable by its raw text)
    with extraction ``pending`` and a job is queued.
    """
    from evomem.adapters.grpc.clients import GrpcLinker, GrpcStore
    from evomem.adapters.redis_queue import RedisQueue
    from evomem.domain.text import DEFAULT_MAX_NOTE_BYTES

    return MemoryService(
        GrpcStore(storage_addr),
        extractor=None,
        linker=GrpcLinker(linker_addr) if linker_addr else None,
        queue=RedisQueue(redis_url),
        config=ServiceConfig(
            default_namespace=namespace,
            max_note_bytes=max_note_bytes or DEFAULT_MAX_NOTE_BYTES,
            default_author=author,
            extract_inline=False,
        ),
    )
