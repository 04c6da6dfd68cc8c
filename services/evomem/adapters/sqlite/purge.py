"""Purging a note: erasing its text in the store's transaction, then from the file itself.

    erase_note(conn, node_id, now, vec_loaded=...)   # in ``forget``'s write transaction
    finisher = PurgeFinisher(db, busy_timeout_ms=..., retry_s=2.0)
    finisher.finish()                                # checkpoint: how many purges now left the file
    finisher.start()                                 # retry in a daemon thread until none is left

A purge blanks every free-text column of the node (the FTS trigger removes its tokens), merges
the FTS index so no segment still holds them, deletes the stored bounds of the terms no other
note has (``term_bounds.drop_unused``) and the node's vector, in one transaction; with
``secure_delete`` on, the freed pages are zeroed. The old bytes leave the file only when the WAL
is copied back and truncated, and a reader's snapshot keeps that from finishing:
``PurgeFinisher`` records ``file_erased_at`` once a TRUNCATE checkpoint has finished, and
retries in the background while one cannot.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from evomem.adapters.sqlite import driver, term_bounds
from evomem.adapters.sqlite.audit import record_change
from evomem.adapters.sqlite.conn import Connections, in_chunks
from evomem.adapters.sqlite.schema import FTS_COLUMNS
from evomem.domain.errors import Unavailable
from evomem.domain.model import now_ms

if TYPE_CHECKING:
    import sqlite3

log = logging.getLogger("evomem.store")

INDEXED = ", ".join(FTS_COLUMNS)  # the FTS5 columns

PURGE_CHECKPOINT_TIMEOUT_MS = 1000  # how long a purge waits for a reader to finish before answering file_erased: false


def erase_note(conn: sqlite3.Connection, node_id: str, now: int, *, vec_loaded: bool) -> None:
    """Blank ``node_id``'s text everywhere the store keeps it, in the caller's write transaction
    (the node is forgotten already or in the same transaction)."""
    texts = conn.execute(f"SELECT {INDEXED} FROM nodes WHERE id = ?", (node_id,)).fetchone()
    # Blank every free-text column: the FTS trigger removes the old tokens from the
    # index. Ids, chain links, versions, labels of the link method and timestamps stay
    # (the tombstone keeps the chain consistent).
    conn.execute(
        "UPDATE nodes SET raw_text = '', trigger = '', change = '', alternatives_tried = '', "
        "consequences = '', summary = '', tags = '[]', relations = '{}', session = NULL, "
        "author = NULL, link_by = NULL, link_evidence = NULL, extraction_error = NULL, "
        "scope_evidence = NULL, purged_at = ?, file_erased_at = NULL, "
        "forgotten_at = COALESCE(forgotten_at, ?) WHERE id = ?",
        (now, now, node_id),
    )
    # The audit keeps what happened to the chain, not who wrote it (free text).
    conn.execute("UPDATE link_audit SET by = NULL, detail = NULL WHERE node_id = ?", (node_id,))
    # A retry under the note's idempotency key is answered [purged], never a new copy.
    conn.execute("UPDATE remember_keys SET text_hash = NULL WHERE node_id = ?", (node_id,))
    record_change(conn, "purge", node_id, None, None)
    # Merge the index so no segment still holds the purged tokens; with
    # secure_delete on, the freed pages are zeroed.
    conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('optimize')")
    if texts is not None:  # the stored bounds of the terms only this note had (a term is its text)
        term_bounds.drop_unused(conn, tuple(texts))
    purge_vector(conn, node_id, vec_loaded=vec_loaded)


def purge_vector(conn: sqlite3.Connection, node_id: str, *, vec_loaded: bool) -> None:
    """Delete the node's vector (``evomem.adapters.vectors.index`` tables), if the file has any.

    An embedding is derived from the text and partly invertible, so it goes with it, in
    the same transaction. Without sqlite-vec loaded (``vec_loaded``) the ``vec0`` table cannot
    be written: the purge fails (and changes nothing) rather than leave the vector behind.
    """
    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vec_items'").fetchone()
    if has is None:
        return
    row = conn.execute("SELECT rowid FROM vec_items WHERE node_id = ?", (node_id,)).fetchone()
    if row is None:
        return
    if not vec_loaded:
        raise Unavailable(
            f"node {node_id} has a vector in this file, and purging it needs sqlite-vec: {driver.vec_problem()}"
        )
    conn.execute("DELETE FROM vec_scan WHERE rowid = ?", (row[0],))
    conn.execute("DELETE FROM vec_items WHERE rowid = ?", (row[0],))


class PurgeFinisher:
    """Erases committed purges from one store's file: at once (``finish``) or, while readers
    keep the checkpoint from finishing, every ``retry_s`` in a daemon thread (``start``)."""

    def __init__(self, db: Connections, *, busy_timeout_ms: int, retry_s: float) -> None:
        self._db = db
        self.busy_timeout_ms = busy_timeout_ms
        self.retry_s = retry_s
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def pending(self) -> bool:
        """Whether a purge is not yet recorded as gone from the file."""
        try:
            row = (
                self._db.get()
                .execute("SELECT 1 FROM nodes WHERE purged_at IS NOT NULL AND file_erased_at IS NULL LIMIT 1")
                .fetchone()
            )
        except driver.sqlite.OperationalError:  # a schema older than migration 0004 (tests pin old versions)
            return False
        return row is not None

    def finish(self, timeout_ms: int | None = None) -> int:
        """Erase finished purges from the file: a TRUNCATE checkpoint copies the blanked pages
        over the old ones and empties the WAL. When it finishes, the purges committed before it
        get ``file_erased_at``. Returns how many were recorded (0: none pending, or blocked)."""
        conn = self._db.get()
        pending = [
            r[0] for r in conn.execute("SELECT id FROM nodes WHERE purged_at IS NOT NULL AND file_erased_at IS NULL")
        ]
        if timeout_ms is None:
            timeout_ms = min(PURGE_CHECKPOINT_TIMEOUT_MS, self.busy_timeout_ms)
        if not pending or not self._db.checkpoint(timeout_ms):
            return 0
        at = now_ms()
        with self._db.write() as conn:
            for chunk, marks in in_chunks(pending):
                conn.execute(f"UPDATE nodes SET file_erased_at = ? WHERE id IN ({marks})", (at, *chunk))
        self._db.checkpoint(timeout_ms)  # best effort: leave the WAL empty again
        return len(pending)

    def start(self) -> None:
        """Retry ``finish`` every ``retry_s`` in a daemon thread until none is left."""
        if self._db.memory:
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._loop, name="evomem-purge-finisher", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.retry_s):
            try:
                done = self.finish()
                if done:
                    log.info("purge: %d purged note(s) now erased from the database file and its WAL", done)
                if not self.pending():
                    return
            except Exception as exc:  # the store closed under it, a disk error: try again later
                if self._stop.is_set():
                    return
                log.warning("purge: could not finish erasing the file yet: %s", exc)

    def stop(self) -> None:
        """Stop retrying (the store is closing); waits a little for a retry under way."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
