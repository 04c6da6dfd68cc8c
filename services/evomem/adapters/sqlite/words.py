"""The store's word index: which engine answers ``SQLiteStore.search`` (``EVOMEM_WORD_INDEX``).

    words = open_words("tantivy", conns)     # or "fts5" (the default)
    words.search(conn, ["ledger"], namespace="default", limit=20, active_only=False)
    words.after_write(conn)                  # after every write transaction of the store
    words.flush()                            # what was written is in the index's files (a purge)
    words.close()

- ``fts5``: the FTS5 table of the store's file (``search.py``), kept in step by the schema's
  triggers inside each write transaction; nothing to do after a write.
- ``tantivy``: a Tantivy index in a folder beside the file (``<db>.words/``), SQLite staying the
  source of truth (``tantivy_index.py``). The store's triggers write the rowid of every node whose
  words may have changed to ``words_log`` (``words_log.LOG_SQL``); the index reads that log after each
  write and at open, and records in its own commits how far it has read (its watermark).

The log's triggers are created when a store first opens with ``tantivy`` and stay in the file:
a process that opens the file with ``fts5`` keeps logging (one small row per write), so the
index catches up at its next open whatever wrote meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from evomem.adapters.sqlite import search as fulltext
from evomem.domain.model import SearchHit

if TYPE_CHECKING:
    import sqlite3

    from evomem.adapters.sqlite.conn import Connections

log = logging.getLogger(__name__)

WORD_INDEXES = ("fts5", "tantivy")


class WordIndex(Protocol):
    """What ``SQLiteStore`` asks of its word index. ``search``'s ``prune``: ``Store.search``'s (FTS5's
    pruned search honours it; Tantivy's block-max search is exact whatever it asks)."""

    name: str

    def search(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        *,
        namespace: str,
        limit: int,
        active_only: bool,
        prune: float = 1.0,
    ) -> list[SearchHit]: ...

    def after_write(self, conn: sqlite3.Connection) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class Fts5Words:
    """The FTS5 table in the store's file: BM25, exact, pruned by the terms' stored bounds
    (``search.py``, ``term_bounds.py``)."""

    name = "fts5"

    def search(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        *,
        namespace: str,
        limit: int,
        active_only: bool,
        prune: float = 1.0,
    ) -> list[SearchHit]:
        return fulltext.search(conn, terms, namespace=namespace, limit=limit, active_only=active_only, prune=prune)

    def after_write(self, conn: sqlite3.Connection) -> None:
        return None  # the schema's triggers wrote the FTS rows in the write's transaction

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


def open_words(kind: str, db: Connections) -> WordIndex:
    """The word index ``kind`` (``WORD_INDEXES``) of the store on ``db``. ``tantivy`` without the
    package is an ``ImportError`` naming the extra; a Tantivy index another process holds (its
    writer's lock) leaves this process on FTS5, with a warning: the other process's index reads
    this one's writes from the log."""
    if kind == "fts5":
        return Fts5Words()
    if kind != "tantivy":
        raise ValueError(f"word index {kind!r}: one of {', '.join(WORD_INDEXES)}")
    try:
        import tantivy  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "EVOMEM_WORD_INDEX=tantivy needs the tantivy package: pip install 'evomem-mcp[tantivy]'"
        ) from exc
    from evomem.adapters.sqlite.tantivy_index import IndexBusy, TantivyWords

    try:
        return TantivyWords(db)
    except IndexBusy as exc:
        log.warning("word index: %s; this process searches the FTS5 table instead", exc)
        return Fts5Words()
