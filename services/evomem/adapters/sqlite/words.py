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
  When the index must be built (none yet, unreadable, or ``tantivy_folder.BEHIND_FROM`` writes
  behind: ``tantivy_folder.stale``), ``auto`` answers from FTS5 at once and builds it in a thread
  (``BuildingWords``), then swaps to it; explicit ``tantivy`` builds before the store opens.

The log's triggers are created when a store first opens with ``tantivy``. A process on FTS5
while another one holds the index keeps logging (one small row per write), so the index catches
up whatever wrote meanwhile. A store that settles on FTS5 for an open (``fts5``, ``auto`` below its
threshold or without Tantivy) keeps the log bounded (``settle_log``): dropped when no index folder
is beside the file, else trimmed to its newest ``words_log.LOG_KEEP`` entries at open and every
``TRIM_EVERY`` writes (an index further behind is rebuilt at its next open).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from evomem.adapters.sqlite import search as fulltext
from evomem.adapters.sqlite import term_bounds
from evomem.adapters.sqlite.words_log import drop_log, has_log, index_folder, trim_log
from evomem.domain.model import SearchHit

if TYPE_CHECKING:
    import sqlite3

    from evomem.adapters.sqlite.conn import Connections

log = logging.getLogger(__name__)

WORD_INDEXES = ("auto", "fts5", "tantivy")
#: ``auto`` takes Tantivy from this many notes at open: the store's own default; the composition root
#: passes ``settings.store.tantivy_from`` (``EVOMEM_TANTIVY_FROM``, the same default: a test keeps them equal).
TANTIVY_FROM = 10_000
#: An FTS5 store that keeps a log trims it every this many writes (``Fts5Words``).
TRIM_EVERY = 10_000


class WordIndex(Protocol):
    """What ``SQLiteStore`` asks of its word index. ``search``'s ``prune``: ``Store.search``'s (FTS5's
    pruned search honours it; Tantivy's block-max search is exact whatever it asks)."""

    @property
    def name(self) -> str: ...

    @property
    def fts5_bounds(self) -> bool:
        """Whether the store keeps FTS5's term bounds (``term_bounds.ensure``'s ``keep``): only an
        index that stays on FTS5 reads them."""
        ...

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
    (``search.py``, ``term_bounds.py``). ``db``: the store settled on FTS5 (``settle_log``), and a
    log it still has is trimmed every ``TRIM_EVERY`` writes."""

    name = "fts5"
    fts5_bounds = True

    def __init__(self, db: Connections | None = None) -> None:
        self._db = db
        self._writes = 0

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
        # the schema's triggers wrote the FTS rows in the write's transaction
        self._writes += 1
        if self._db is not None and self._writes % TRIM_EVERY == 0 and has_log(conn):
            with self._db.write() as w:
                trim_log(w)

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
        settle_log(db)
        return Fts5Words(db)
    if kind == "auto":
        return choose(db, tantivy_from)
    if kind != "tantivy":
        raise ValueError(f"word index {kind!r}: one of {', '.join(WORD_INDEXES)}")
    try:
        import tantivy  # noqa: F401
    except ImportError as exc:
        raise ImportError("EVOMEM_WORD_INDEX=tantivy needs the tantivy package: pip install tantivy") from exc
    from evomem.adapters.sqlite.tantivy_folder import IndexBusy
    from evomem.adapters.sqlite.tantivy_index import TantivyWords

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
        settle_log(db)
        return Fts5Words(db)
    try:
        import tantivy  # noqa: F401
    except ImportError:
        log.warning("word index: fts5 (%s, but the tantivy package is not installed: pip install tantivy)", held)
        settle_log(db)
        return Fts5Words(db)
    from evomem.adapters.sqlite.tantivy_folder import IndexBusy, stale
    from evomem.adapters.sqlite.tantivy_index import TantivyWords

    folder = index_folder(db)
    problem = unwritable(folder)
    if problem is None and folder is not None:
        why = stale(db)
        if why is not None:
            log.info("word index: fts5 for now (%s; %s): building %s in the background", held, why, folder)
            return BuildingWords(db, held)
    if problem is None:
        fresh = folder is not None and not os.path.isdir(folder)
        if fresh:
            log.info("word index: tantivy (%s): building %s from the store's notes", held, folder)
        started = time.perf_counter()
        try:
            words: WordIndex = TantivyWords(db)
        except IndexBusy as exc:  # another process's index: it reads this one's writes from the log
            log.warning("word index: fts5 (%s, but %s); nothing is lost: the FTS5 table holds every note", held, exc)
            return Fts5Words()
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
    settle_log(db)
    return Fts5Words(db)


def settle_log(db: Connections) -> None:
    """The store settles on FTS5 for this open: the Tantivy log, where the file has one, kept
    bounded. No index folder beside the file: nothing will read it, so its table and triggers
    are dropped (a Tantivy index made later builds from the notes; the check is in the write
    transaction, and ``TantivyWords`` makes the folder before it creates the log). A folder: an
    index may read it at its next open, so the newest ``LOG_KEEP`` entries stay."""
    if not has_log(db.get()):
        return
    folder = index_folder(db)
    with db.write() as w:
        if folder is None or not os.path.isdir(folder):
            drop_log(w)
            log.info("word index: fts5; the words log dropped (no Tantivy index beside the file to read it)")
        elif trim_log(w):
            log.info("word index: fts5; the words log trimmed to its newest entries (the index rebuilds if behind)")


class BuildingWords:
    """``auto``'s word index while the Tantivy index is built in a thread: FTS5 answers (it holds
    every note); once the index is built and has read the log written meanwhile, ``search`` goes
    to it (one assignment: a search in flight ends on FTS5). FTS5's term bounds (``fts5_bounds``)
    are kept meanwhile only where they are up to date (a store that was on FTS5: the upgrade), and
    dropped at the swap; out of date (a store once on Tantivy) they are not rebuilt (4 s before the
    first answer at 100k notes) and FTS5 bounds with ``k1 + 1``, still exact. ``close`` during the build stops it
    (``BuildStopped``) with nothing committed: the next open builds again, as after a crash. A
    failed build leaves FTS5 for this open, the log settled (``settle_log``) and the term bounds
    rebuilt. ``done``: set when the build ended, swapped or not."""

    def __init__(self, db: Connections, held: str) -> None:
        self._db = db
        self._held = held
        self._words: WordIndex = Fts5Words()  # not trimming: the build reads the log from its snapshot
        self._stop = threading.Event()
        self._swap = threading.Lock()
        self._settled = False  # the build failed: FTS5 for this open, its term bounds kept again
        self._bounds = bounds_current(db.get())  # kept while FTS5 answers, if that costs no rebuild
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._build, name="evomem-words-build", daemon=True)
        self._thread.start()

    @property
    def name(self) -> str:
        return self._words.name

    @property
    def fts5_bounds(self) -> bool:
        return self._settled or (self._bounds and isinstance(self._words, Fts5Words))

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
        words = self._words  # one index for the whole search, whatever a swap does meanwhile
        return words.search(conn, terms, namespace=namespace, limit=limit, active_only=active_only, prune=prune)

    def after_write(self, conn: sqlite3.Connection) -> None:
        self._words.after_write(conn)

    def flush(self) -> None:
        with self._swap:  # a purge during the swap: the new index has read its log entry, or FTS5 answers
            self._words.flush()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._words.close()

    def _build(self) -> None:
        from evomem.adapters.sqlite.tantivy_folder import BuildStopped, IndexBusy
        from evomem.adapters.sqlite.tantivy_index import TantivyWords

        folder = index_folder(self._db)
        started = time.perf_counter()
        try:
            words = TantivyWords(self._db, stop=self._stop)
        except BuildStopped:
            log.info("word index: the build of %s stopped (the store closes); the next open builds it", folder)
            self.done.set()
            return
        except IndexBusy as exc:
            log.warning("word index: fts5 (%s, but %s); nothing is lost", self._held, exc)
            self.done.set()
            return
        except Exception as exc:
            log.warning("word index: fts5 (%s, but Tantivy could not be built: %s); nothing is lost", self._held, exc)
            try:
                settle_log(self._db)
                self._words = Fts5Words(self._db)
                self._settled = True
                with self._db.write() as w:  # FTS5 for good: its term bounds rebuilt and kept
                    term_bounds.ensure(w, keep=True)
            except Exception:
                log.exception("word index: settling the words log failed")
            self.done.set()
            return
        try:
            conn = self._db.get()
            with self._swap:
                if self._stop.is_set():
                    words.close()
                    return
                words.after_write(conn)  # what was written while it was built or opened
                words.flush()
                self._words = words
            with self._db.write() as w:  # as at an open on Tantivy: FTS5's term bounds no longer kept
                term_bounds.ensure(w, keep=False)
            log.info(
                "word index: tantivy (%s) in %s, built in %.1f s while FTS5 answered; searches use it from now on",
                self._held,
                folder,
                time.perf_counter() - started,
            )
        except Exception:
            log.exception("word index: swapping to the built index failed; FTS5 goes on answering")
            if self._words is not words:
                words.close()
        finally:
            self.done.set()


def bounds_current(conn: sqlite3.Connection) -> bool:
    """Whether FTS5's term bounds are kept and have seen every FTS row (no rebuild to keep them)."""
    if not term_bounds.maintained(conn):
        return False
    return int(conn.execute("SELECT rows FROM term_bounds_state").fetchone()[0]) == term_bounds.averages(conn)[0]


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
