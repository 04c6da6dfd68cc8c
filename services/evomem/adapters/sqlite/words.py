"""The store's word index: which engine answers ``SQLiteStore.search`` (``EVOMEM_WORD_INDEX``).

    words = open_words("auto", conns, tantivy_from=10_000)   # or "fts5", "tantivy"
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

- ``auto`` (the settings' default): ``tantivy`` when the store holds at least ``tantivy_from`` notes
  when it opens (FTS5's own row count, read from its averages record: no scan) and the package is
  importable, ``fts5`` otherwise; decided once per open, with one log line saying what and why. Where
  Tantivy cannot be opened (its folder cannot be written, another process holds its writer) ``auto``
  stays on ``fts5`` with a warning: the FTS5 table holds every note whatever the index.

The log's triggers are created when a store first opens with ``tantivy`` and stay in the file:
a process that opens the file with ``fts5`` keeps logging (one small row per write), so the
index catches up at its next open whatever wrote meanwhile.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from evomem.adapters.sqlite import search as fulltext
from evomem.adapters.sqlite import term_bounds
from evomem.domain.model import SearchHit
from evomem.settings import TANTIVY_FROM

if TYPE_CHECKING:
    import sqlite3

    from evomem.adapters.sqlite.conn import Connections

log = logging.getLogger(__name__)

WORD_INDEXES = ("auto", "fts5", "tantivy")


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


def open_words(kind: str, db: Connections, *, tantivy_from: int = TANTIVY_FROM) -> WordIndex:
    """The word index ``kind`` (``WORD_INDEXES``) of the store on ``db``; ``auto``: ``choose``.
    ``tantivy`` without the package is an ``ImportError`` naming it; a Tantivy index another
    process holds (its writer's lock) leaves this process on FTS5, with a warning: the other
    process's index reads this one's writes from the log."""
    if kind == "fts5":
        return Fts5Words()
    if kind == "auto":
        return choose(db, tantivy_from)
    if kind != "tantivy":
        raise ValueError(f"word index {kind!r}: one of {', '.join(WORD_INDEXES)}")
    try:
        import tantivy  # noqa: F401
    except ImportError as exc:
        raise ImportError("EVOMEM_WORD_INDEX=tantivy needs the tantivy package: pip install tantivy") from exc
    from evomem.adapters.sqlite.tantivy_index import IndexBusy, TantivyWords

    try:
        return TantivyWords(db)
    except IndexBusy as exc:
        log.warning("word index: %s; this process searches the FTS5 table instead", exc)
        return Fts5Words()


def choose(db: Connections, tantivy_from: int) -> WordIndex:
    """``auto``: Tantivy beside the file when the store holds ``tantivy_from`` notes or more and it
    can be opened, else the FTS5 table; one log line says which and why (info for Tantivy, debug
    below the threshold, a warning when Tantivy was due but could not be had)."""
    notes = term_bounds.averages(db.get())[0]  # FTS5's row count: every note not purged
    held = f"the store holds {notes:,} notes; auto takes Tantivy from {tantivy_from:,}"
    if notes < tantivy_from:  # a debug line: a small store's start says nothing new
        log.debug("word index: fts5 (%s)", held)
        return Fts5Words()
    try:
        import tantivy  # noqa: F401
    except ImportError:
        log.warning("word index: fts5 (%s, but the tantivy package is not installed: pip install tantivy)", held)
        return Fts5Words()
    from evomem.adapters.sqlite.tantivy_index import IndexBusy, TantivyWords, index_folder

    folder = index_folder(db)
    problem = unwritable(folder)
    if problem is None:
        fresh = folder is not None and not os.path.isdir(folder)
        if fresh:
            log.info("word index: tantivy (%s): building %s from the store's notes", held, folder)
        started = time.perf_counter()
        try:
            words: WordIndex = TantivyWords(db)
        except IndexBusy as exc:
            problem = str(exc)
        except (OSError, ValueError, RuntimeError) as exc:  # a folder that cannot be written, a broken index
            problem = f"Tantivy could not open it ({exc})"
        else:
            took = time.perf_counter() - started
            log.info(
                "word index: tantivy (%s) in %s, %s in %.1f s",
                held,
                folder or "memory",
                "built" if fresh else "opened",
                took,
            )
            return words
    log.warning("word index: fts5 (%s, but %s); nothing is lost: the FTS5 table holds every note", held, problem)
    return Fts5Words()


def unwritable(folder: str | None) -> str | None:
    """Why the index folder (``None``: in memory) cannot be written, or None when it can: the
    folder itself when it exists, else the directory it would be made in."""
    if folder is None:
        return None
    where = folder if os.path.exists(folder) else os.path.dirname(os.path.abspath(folder))
    if os.path.exists(folder) and not os.path.isdir(folder):
        return f"{folder} is not a folder"
    if not os.access(where, os.W_OK | os.X_OK):
        return f"{where} cannot be written"
    return None
