"""The embedded wiring: one process, SQLite in-process, the lite cronista inline, vectors in the same file."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.storage import LocalStorage
from evomem.bootstrap.linkers import hint_floor, linker_for, offerer_for
from evomem.bootstrap.stores import open_store
from evomem.bootstrap.vectors import build_vectors
from evomem.domain.cronista import LiteCronista
from evomem.settings import EMBEDDED_DB, Settings

if TYPE_CHECKING:
    from evomem.security.gate import Gate


def _service_config(
    settings: Settings, *, extract_inline: bool, vectors: bool, vectors_required: bool = False
) -> ServiceConfig:
    return ServiceConfig(
        default_namespace=settings.memory.namespace,
        max_note_bytes=settings.memory.max_note_bytes,
        default_author=settings.memory.author,
        extract_inline=extract_inline,
        vectors=vectors,
        vectors_required=vectors_required,  # recall then logs each time storage skips the vector half
        dedupe_window_ms=settings.memory.dedupe_window_s * 1000,
        hint_min_p=hint_floor(settings),
    )


def build_embedded(settings: Settings) -> MemoryService:
    if settings.linker.auto_supersede == "llm":
        settings.require_llm("auto_supersede")  # before the database is opened
    store = open_store(settings, EMBEDDED_DB)  # the SQLite file, or PostgreSQL (--database-url)
    try:
        vectors = build_vectors(settings, store)
    except BaseException:
        store.close()
        raise
    return MemoryService(
        LocalStorage(store, vectors),
        extractor=LiteCronista(),
        linker=linker_for(settings.linker.auto_supersede, settings, store=store, embedder=vectors),
        offerer=offerer_for(settings, store, vectors, lazy=True),
        vectors=vectors,
        config=_service_config(settings, extract_inline=True, vectors=vectors is not None),
    )


def server_info(settings: Settings, service: MemoryService) -> dict[str, str]:
    """What the embedded server reports about itself (``stats``' ``server``) and logs at start."""
    vectors = service.vectors.name if service.vectors is not None else "off"
    auto = settings.linker.auto_supersede
    # The file's name only: a client has no business knowing the server's directory layout
    # (PostgreSQL: "postgresql", never the URL).
    db = "postgresql" if settings.database_url() else os.path.basename(settings.db_path()) or settings.db_path()
    return {"db": db, "auto_supersede": auto, "vectors": vectors, "wiring": "embedded"}


def embedded_mcp_server(settings: Settings, service: MemoryService, *, gate: Gate | None = None) -> Any:
    """The MCP server of ``evomem-mcp`` (either transport) over the embedded ``service``:
    its descriptions say hybrid when the vectors are wired, answers show ``answer_note_chars``."""
    from evomem.entrypoints.mcp.server import build_mcp_server

    return build_mcp_server(
        lambda: service,
        server_info=server_info(settings, service),
        gate=gate,
        hybrid=service.vectors is not None,
        note_chars=settings.mcp.answer_note_chars,
    )
