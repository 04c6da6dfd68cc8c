"""Purging a note on PostgreSQL: the text blanked in the write's transaction, the old row versions
vacuumed away after it.

    erase_note(conn, namespace, node_id, now)   # in ``forget``'s transaction
    finisher = PurgeFinisher(db, retry_s=2.0)
    finisher.finish()                           # VACUUM: how many purges are now gone from the tables
    finisher.start()                            # the same in a daemon thread, retried until none is left

What a purge guarantees on PostgreSQL, exactly:

1. When ``forget(purge=True)`` returns, no query can read the text: the row's free-text columns
   are blank (and its ``tsvector`` with them), the vector row is deleted, the audit keeps no
   author or detail, and a retry under the note's idempotency key is ``[purged]``. A transaction
   that started before the purge and is still open keeps seeing its own snapshot until it ends.
2. PostgreSQL never overwrites a row in place: the UPDATE wrote a new, blank version, and the
   old one stays in the table's pages (and its TOAST table and index entries) as a dead version
   until ``VACUUM`` removes it, which it can only do once no open transaction is older than the
   purge. ``PurgeFinisher`` waits for that, runs ``VACUUM`` on the tables the purge touched, and
   then records ``file_erased_at`` (``stats``: ``purges_file_pending``, ``last_file_erased_at``).
   After it, no tool that reads the database through PostgreSQL (``pageinspect`` included) finds
   the old version; the bytes of the freed space may stay in the data files until new rows
   reuse it (``VACUUM FULL`` rewrites the table when that matters: ``evomem-admin vacuum --full``).
3. The WAL, its archive and every backup taken before the purge still hold the text until they
   are recycled or expire: retention is the operator's (docs/SERVICES.md, "PostgreSQL").
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from evomem.adapters.postgres.chains import record_change
from evomem.adapters.postgres.db import Database
from evomem.domain.model import now_ms

log = logging.getLogger("evomem.store")

#: The tables a purge rewrites rows of (VACUUM removes their dead versions).
TOUCHED = ("nodes", "link_audit", "remember_keys", "vectors")


def erase_note(conn: Any, namespace: str, node_id: str, now: int) -> None:
    """Blank ``node_id``'s text everywhere the store keeps it, in the caller's transaction (the
    node is forgotten already or in the same transaction)."""
    conn.execute(
        "UPDATE nodes SET raw_text = '', trigger = '', change = '', alternatives_tried = '', "
        "consequences = '', summary = '', tags = '[]', relations = '{}', session = NULL, "
        "author = NULL, link_by = NULL, link_evidence = NULL, extraction_error = NULL, "
        "scope_evidence = NULL, purged_at = %s, file_erased_at = NULL, "
        "forgotten_at = COALESCE(forgotten_at, %s) WHERE namespace = %s AND id = %s",
        (now, now, namespace, node_id),
    )
    conn.execute(
        "UPDATE link_audit SET by = NULL, detail = NULL WHERE namespace = %s AND node_id = %s", (namespace, node_id)
    )
    conn.execute(
        "UPDATE remember_keys SET text_hash = NULL WHERE namespace = %s AND node_id = %s", (namespace, node_id)
    )
    conn.execute("DELETE FROM vectors WHERE namespace = %s AND node_id = %s", (namespace, node_id))
    record_change(conn, namespace, "purge", node_id, None, None)


class PurgeFinisher:
    """Vacuums purged notes' old row versions away: at once (``finish``) or, while an older
    transaction is open, every ``retry_s`` in a daemon thread (``start``)."""

    def __init__(self, db: Database, *, retry_s: float) -> None:
        self._db = db
        self.retry_s = retry_s
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def pending(self) -> bool:
        """Whether a purge is not yet recorded as vacuumed."""
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT 1 FROM nodes WHERE purged_at IS NOT NULL AND file_erased_at IS NULL LIMIT 1"
            ).fetchone()
        return row is not None

    def finish(self, timeout_s: float = 0.0) -> int:
        """VACUUM the tables a purge touched, once no open transaction of this database began
        before the newest pending purge (waiting up to ``timeout_s`` for that); then record
        ``file_erased_at`` for the purges it covered. How many it recorded (0: none pending, an
        older transaction is open, or this user may not vacuum the tables)."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                "SELECT namespace, id FROM nodes WHERE purged_at IS NOT NULL AND file_erased_at IS NULL"
            ).fetchall()
            # The server's clock, after every purge read here committed: a transaction older than
            # this may still see their old row versions.
            seen = conn.execute("SELECT clock_timestamp()").fetchone()[0]
        if not rows:
            return 0
        deadline = time.monotonic() + timeout_s
        with self._db.connect(autocommit=True) as conn:
            if not self._may_vacuum(conn):
                log.warning(
                    "purge: %s may not VACUUM the store's tables (not their owner): the purged notes' old row "
                    "versions stay until autovacuum removes them",
                    self._db.where,
                )
                return 0
            while self._older_transactions(conn, seen):
                if time.monotonic() >= deadline:
                    return 0
                time.sleep(0.05)
            conn.execute("VACUUM (INDEX_CLEANUP ON) " + ", ".join(TOUCHED))
        at = now_ms()
        with self._db.transaction() as conn:
            conn.execute(
                "UPDATE nodes SET file_erased_at = %s FROM unnest(%s::text[], %s::text[]) AS p(namespace, id) "
                "WHERE nodes.namespace = p.namespace AND nodes.id = p.id",
                (at, [r[0] for r in rows], [r[1] for r in rows]),
            )
        return len(rows)

    @staticmethod
    def _may_vacuum(conn: Any) -> bool:
        row = conn.execute(
            "SELECT bool_and(pg_has_role(c.relowner, 'USAGE')) OR (SELECT rolsuper FROM pg_roles "
            "WHERE rolname = current_user) FROM pg_class c WHERE c.oid = ANY(%s::regclass[])",
            (list(TOUCHED),),
        ).fetchone()
        return bool(row and row[0])

    @staticmethod
    def _older_transactions(conn: Any, since: Any) -> bool:
        """Whether a transaction of this database that began before ``since`` (the server's
        clock) is still open: its snapshot keeps the old row versions alive, VACUUM leaves them."""
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid != pg_backend_pid() "
            "AND backend_xmin IS NOT NULL AND xact_start < %s",
            (since,),
        ).fetchone()
        return bool(row and row[0])

    def start(self) -> None:
        """Retry ``finish`` every ``retry_s`` in a daemon thread until none is left."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._loop, name="evomem-pg-purge", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        first = True
        while first or not self._stop.wait(self.retry_s):
            first = False
            try:
                done = self.finish()
                if done:
                    log.info("purge: %d purged note(s) vacuumed from the database's tables", done)
                if not self.pending():
                    return
            except Exception as exc:  # the database is down, the store closed under it: try again later
                if self._stop.is_set():
                    return
                log.warning("purge: could not vacuum the purged notes yet: %s", exc)

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
