"""The composition root: the one place that turns settings into a wiring.

Nothing connects to anything at import time. ``build_embedded`` wires everything into one
process (SQLite in-process, lite cronista inline, optional heuristic linker). The
multi-service wiring reuses the same ``MemoryService`` and MCP tools with other adapters.
"""

from __future__ import annotations

from evomem.adapters.sqlite_store import SQLiteStore
from evomem.domain.cronista import LiteCronista
from evomem.domain.linking import HeuristicLinker
from evomem.ports import Linker
from evomem.service import MemoryService, ServiceConfig
from evomem.settings import Settings


def build_linker(mode: str) -> Linker | None:
    if mode == "off":
        return None
    if mode == "heuristic":
        return HeuristicLinker()
    raise ValueError(f"unknown linker {mode!r}")  # pragma: no cover - Settings validates


def build_embedded(settings: Settings) -> MemoryService:
    store = SQLiteStore(settings.db)
    return MemoryService(
        store,
        extractor=LiteCronista(),
        linker=build_linker(settings.auto_supersede),
        config=ServiceConfig(
            default_namespace=settings.namespace,
            max_note_bytes=settings.max_note_bytes,
            default_author=settings.author,
            extract_inline=True,
        ),
    )
