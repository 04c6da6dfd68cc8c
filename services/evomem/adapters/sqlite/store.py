"""The SQLite store: nodes, chains and an FTS5 index in one file (WAL mode).

Design points (docs/ARCHITECTURE.md has the long form):

- One row per node, one FTS5 row per node (external content, kept in sync by triggers).
- Chains are enforced by the schema, not only by code: a node is superseded by at most one
  node (unique index on ``supersedes``) and a chain has exactly one head (unique partial index
  on ``chain_root`` where ``superseded_by IS NULL``). Versions only grow, so no cycles.
- Every write runs in ``BEGIN IMMEDIATE``: the write lock is taken before the head is read,
  so two writers superseding the same head serialise and the second re-targets to the new head.
- Many processes can open the same file; ``busy_timeout`` makes them wait, not fail.
- ``secure_delete`` is on, so purged text is zeroed in the file, not merely unlinked.

``SQLiteStore`` holds the connections and the transactions; the work is done by the modules
beside it, on a connection: ``schema`` (the migrations), ``words`` (the word index ``search``
asks: FTS5, ``search``'s BM25 pruned by the terms' stored bounds, ``term_bounds``, or Tantivy
beside the file, ``tantivy_index``), ``chains`` (the writes that change chains), ``purge``
(erasing a purged note, from the file too) and ``audit`` (the link audit and the write audit log).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from evomem.adapters.sqlite import archive, audit, chains, driver, reviews, schema, term_bounds
from evomem.adapters.sqlite.codec import (
    LINK_SQL,
    NODE_COLUMNS,
    NODE_SQL,
    SKETCH_COLUMNS,
    SKETCH_SQL,
    row_to_link_sketch,
    row_to_node,
    row_to_sketch,
)
from evomem.adapters.sqlite.conn import BUSY_TIMEOUT_MS, Connections, in_chunks
from evomem.adapters.sqlite.purge import PurgeFinisher, erase_note
from evomem.adapters.sqlite.words import TANTIVY_FROM, BuildingWords, Fts5Words, WordIndex, open_words
from evomem.domain.archive import Record
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.browse import (
    RecentPage,
    RecentQuery,
    dependents_of,
    head_sketch,
    take_recent,
    with_histories,
)
from evomem.domain.errors import Conflict, NotFound, Purged
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    InsertOutcome,
    LinkProvenance,
    MemoryNode,
    NewNote,
    SearchHit,
    Stats,
    Status,
    new_id,
    now_ms,
    write_ms,
)
from evomem.domain.recall import Successor

if TYPE_CHECKING:
    import sqlite3


class SQLiteStore:
    """The ``Store`` port on one SQLite file. Thread-safe: one connection per thread."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        purge_retry_s: float = 2.0,
        word_index: str = "fts5",
        tantivy_from: int = TANTIVY_FROM,
    ) -> None:
        self._words: WordIndex = Fts5Words()
        self._db = Connections(str(path), busy_timeout_ms=busy_timeout_ms, row_factory=driver.sqlite.Row, what="store")
        self.path = self._db.path
        self.busy_timeout_ms = busy_timeout_ms
        self.purge_retry_s = purge_retry_s
        self._purges = PurgeFinisher(self._db, busy_timeout_ms=busy_timeout_ms, retry_s=purge_retry_s)
        with self._write() as conn:
            schema.migrate(conn)
        try:
            # words.py: fts5, tantivy beside the file, or auto (tantivy from ``tantivy_from`` notes)
            self._words = open_words(word_index, self._db, tantivy_from=tantivy_from)
            with self._write() as conn:  # the FTS5 search's term bounds: kept (rebuilt if stale) or suspended
                term_bounds.ensure(conn, keep=self._words.fts5_bounds)
        except BaseException:
            self._words.close()
            self._db.close()
            raise
        if self._purges.pending():  # a purge the last process could not finish (a reader, a crash)
            self._purges.start()

    # ------------------------------------------------------------------ plumbing

    @classmethod
    def in_memory(cls) -> SQLiteStore:
        return cls(":memory:")

    @property
    def vec_loaded(self) -> bool:
        """Whether sqlite-vec is loaded in this store's connections (a purge needs it for vectors)."""
        return self._db.vec_loaded

    @vec_loaded.setter
    def vec_loaded(self, value: bool) -> None:  # tests: as a process without sqlite-vec sees the file
        self._db.vec_loaded = value

    def _conn(self) -> sqlite3.Connection:
        return self._db.get()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; once it commits, the word index reads what it changed."""
        with self._db.write() as conn:
            yield conn
        self._words.after_write(conn)

    @property
    def word_index(self) -> str:
        """Which word index answers ``search``: ``fts5`` or ``tantivy`` (``words.py``)."""
        return self._words.name

    def wait_for_word_index(self, timeout: float | None = None) -> bool:
        """Wait until ``auto``'s background build of the Tantivy index (``words.BuildingWords``) has
        ended, swapped or not (benchmarks time the index a running server answers with). False if
        ``timeout`` passed first; True at once when nothing is being built."""
        words = self._words
        return words.done.wait(timeout) if isinstance(words, BuildingWords) else True

    def schema_version(self) -> int:
        return schema.schema_version(self._conn())

    def close(self) -> None:
        self._purges.stop()
        try:
            self._words.close()
        finally:
            self._db.close()

    # ------------------------------------------------------------------ reads

    def get(self, node_id: str) -> MemoryNode | None:
        row = self._conn().execute(f"SELECT {NODE_SQL} FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return row_to_node(row) if row else None

    def get_many(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        nodes = self._select_in(f"SELECT {NODE_SQL} FROM nodes WHERE id IN ({{marks}})", node_ids)
        return {n.id: n for n in nodes}

    def sketches(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        nodes = self._select_in(f"SELECT {SKETCH_SQL} FROM nodes WHERE id IN ({{marks}})", node_ids, row_to_sketch)
        return {n.id: n for n in nodes}

    def link_sketches(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        nodes = self._select_in(f"SELECT {LINK_SQL} FROM nodes WHERE id IN ({{marks}})", node_ids, row_to_link_sketch)
        return {n.id: n for n in nodes}

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        sql = (
            f"SELECT {NODE_SQL} FROM nodes INDEXED BY nodes_one_head "
            "WHERE chain_root IN ({marks}) AND superseded_by IS NULL"
        )
        return {n.chain_root: n for n in self._select_in(sql, chain_roots)}

    def _select_in(
        self, sql: str, values: Iterable[str], decode: Callable[[Any], MemoryNode] = row_to_node
    ) -> Iterator[MemoryNode]:
        """The nodes ``sql`` selects for ``values`` (distinct), 500 at a time: ``{marks}`` is
        where the placeholders go (SQLite limits how many one statement may hold)."""
        conn = self._conn()
        for chunk, marks in in_chunks(list(dict.fromkeys(values))):
            for row in conn.execute(sql.format(marks=marks), chunk):
                yield decode(row)

    def chain(self, node_id: str, depth: int) -> list[MemoryNode]:
        conn = self._conn()
        row = conn.execute("SELECT chain_root, version FROM nodes WHERE id = ?", (node_id,)).fetchone()
        if row is None:
            return []
        rows = conn.execute(
            f"SELECT {NODE_SQL} FROM nodes WHERE chain_root = ? AND version <= ? ORDER BY version DESC LIMIT ?",
            (row["chain_root"], row["version"], max(0, depth) + 1),
        ).fetchall()
        return [row_to_node(r) for r in rows]

    def recent_heads(self, query: RecentQuery) -> RecentPage:
        """Heads read by id from ``nodes_heads_recent`` as far as the filters need (id, scope and
        tags only), then the page's nodes in full."""
        page = take_recent(self._heads_newest_first(query.namespace, query.before, query.limit + 1), query)
        full = self.get_many(h.id for h in page.heads)
        page.heads = [full[h.id] for h in page.heads if h.id in full]
        return with_histories(page, query.history_depth, self.chain)

    def _heads_newest_first(self, namespace: str, before: str | None, batch: int) -> Iterator[MemoryNode]:
        """The heads in force of ``namespace`` below ``before`` by id, newest first, as sketches
        (id, scope, tags), ``batch`` rows per statement, as long as the caller reads."""
        conn = self._conn()
        cursor = before or "~"  # above every ULID
        sql = (
            "SELECT id, scope, tags FROM nodes INDEXED BY nodes_heads_recent WHERE namespace = ? "
            "AND superseded_by IS NULL AND status = 'active' AND id < ? ORDER BY id DESC LIMIT ?"
        )
        while True:
            rows = conn.execute(sql, (namespace, cursor, batch)).fetchall()
            yield from (head_sketch(namespace, *r) for r in rows)
            if len(rows) < batch:
                return
            cursor, batch = rows[-1][0], min(batch * 2, 500)

    def dependents(self, node_id: str, limit: int = 50) -> list[MemoryNode]:
        conn = self._conn()
        row = conn.execute("SELECT namespace, chain_root FROM nodes WHERE id = ?", (node_id,)).fetchone()
        if row is None:
            return []
        chain = [r[0] for r in conn.execute("SELECT id FROM nodes WHERE chain_root = ?", (row["chain_root"],))]
        found = dependents_of(chain, reviews.naming(conn, row["namespace"], chain))[: max(0, limit)]
        nodes = self.get_many(found)
        return [nodes[i] for i in found if i in nodes]

    def search(
        self, terms: Sequence[str], *, namespace: str, limit: int, active_only: bool = False, prune: float = 1.0
    ) -> list[SearchHit]:
        """The ``limit`` best notes of ``namespace`` by BM25 over ``terms`` (OR-ed), best first, from
        the word index: FTS5 (pruned by the terms' stored bounds, exact unless ``prune`` > 1:
        ``evomem.adapters.sqlite.search``) or Tantivy (``tantivy_index.py``, exact)."""
        return self._words.search(
            self._conn(), terms, namespace=namespace, limit=limit, active_only=active_only, prune=prune
        )

    def possible_successors(
        self, node_ids: Iterable[str], *, namespace: str, limit: int = 8, full: bool = True
    ) -> dict[str, list[Successor]]:
        """The ``offers`` rows of these candidates (primary key: candidate first), their active
        notes of ``namespace``, ``limit`` per candidate, likeliest first: by the linker's
        confidence (none stored: last), then where the note listed the candidate (``position``
        0: first), then newest first. One indexed read per 500 ids, whatever the size of the store.
        ``full=False``: sketches (``row_to_sketch``), what deciding the hints reads."""
        wanted = list(dict.fromkeys(node_ids))
        out: dict[str, list[Successor]] = {}
        if limit < 1:
            return out
        conn = self._conn()
        cols = ", ".join("n." + c for c in (NODE_COLUMNS if full else SKETCH_COLUMNS))
        decode = row_to_node if full else row_to_sketch
        for chunk, marks in in_chunks(wanted):
            sql = (
                "SELECT * FROM (SELECT o.candidate_id AS offered_for, o.reason AS offer_reason, "
                f"o.confidence AS offer_confidence, o.position AS offer_position, {cols}, "
                "ROW_NUMBER() OVER (PARTITION BY o.candidate_id "
                "ORDER BY coalesce(o.confidence, -1) DESC, o.position, o.node_id DESC) AS nth "
                "FROM offers o JOIN nodes n ON n.id = o.node_id "
                f"WHERE o.candidate_id IN ({marks}) AND o.namespace = ? "
                "AND n.status IN ('active', 'superseded')) WHERE nth <= ? ORDER BY offered_for, nth"
            )
            for row in conn.execute(sql, (*chunk, namespace, limit)):
                node = decode(row, 4)
                out.setdefault(row["offered_for"], []).append(
                    Successor(
                        node,
                        row["offer_reason"],
                        position=row["offer_position"],
                        confidence=row["offer_confidence"],
                    )
                )
        return out

    def ping(self) -> None:
        """A read that touches the file and its WAL index, and nothing more: what a health probe
        needs. (``stats`` counts every row: at 100k notes a probe every 5 s took a fifth of a
        core from the calls it should leave alone.)"""
        conn = self._conn()
        conn.execute("PRAGMA schema_version").fetchone()
        conn.execute("SELECT max(rowid) FROM nodes").fetchone()

    def pending_extractions(self, limit: int = 100) -> list[str]:
        rows = (
            self._conn()
            .execute(
                "SELECT id FROM nodes WHERE extraction_state = 'pending' AND purged_at IS NULL ORDER BY rowid LIMIT ?",
                (limit,),
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    def stats(self, namespace: str | None = None) -> Stats:
        conn = self._conn()
        where, args = ("WHERE namespace = ?", (namespace,)) if namespace else ("", ())
        by_status = {s.value: 0 for s in Status}
        for status, count in conn.execute(f"SELECT status, COUNT(*) FROM nodes {where} GROUP BY status", args):
            by_status[status] = count
        extraction = {s.value: 0 for s in ExtractionState}
        for state, count in conn.execute(
            f"SELECT extraction_state, COUNT(*) FROM nodes {where} GROUP BY extraction_state", args
        ):
            extraction[state] = count
        purged = conn.execute(
            f"SELECT COUNT(*) FROM nodes {where} {'AND' if where else 'WHERE'} purged_at IS NOT NULL", args
        ).fetchone()[0]
        heads = conn.execute(
            f"SELECT COUNT(*) FROM nodes {where} {'AND' if where else 'WHERE'} superseded_by IS NULL", args
        ).fetchone()[0]
        namespaces = dict(
            conn.execute(f"SELECT namespace, COUNT(*) FROM nodes {where} GROUP BY namespace ORDER BY 1", args)
        )
        page_count = conn.execute("PRAGMA page_count").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pending, last_erased = conn.execute(
            f"SELECT SUM(file_erased_at IS NULL), MAX(file_erased_at) FROM nodes {where} "
            f"{'AND' if where else 'WHERE'} purged_at IS NOT NULL",
            args,
        ).fetchone()
        return Stats(
            by_status=by_status,
            purged=purged,
            chains=heads,
            extraction=extraction,
            namespaces=namespaces,
            db_bytes=page_count * page_size,
            schema_version=self.schema_version(),
            purges_file_pending=int(pending or 0),
            last_file_erased_at=last_erased,
        )

    # ------------------------------------------------------------------ writes

    def insert(self, note: NewNote, *, supersedes: str | None = None, link: LinkProvenance | None = None) -> MemoryNode:
        return self.insert_once(note, supersedes=supersedes, link=link)[0]

    def insert_once(
        self,
        note: NewNote,
        *,
        supersedes: str | None = None,
        link: LinkProvenance | None = None,
        idempotency_key: str | None = None,
        dedupe_window_ms: int = 0,
        if_head: bool = False,
    ) -> tuple[MemoryNode, InsertOutcome]:
        """``insert``, at most once: in the same transaction (under the write lock), a key used
        before answers its first node (REPLAYED; another text under that key is a ``Conflict``),
        and without a key an identical active note of the same namespace and scope created in
        the last ``dedupe_window_ms`` answers that node (DUPLICATE). Otherwise INSERTED."""
        ex = note.extraction
        text_hash = hashlib.sha256(note.raw_text.encode("utf-8")).hexdigest()
        key_hash = None
        if idempotency_key is not None:
            key_hash = hashlib.sha256(f"{note.namespace}\x00{idempotency_key}".encode()).hexdigest()
        with self._write() as conn:
            created = write_ms(now_ms(), conn.execute("SELECT max(id) FROM nodes").fetchone()[0])
            node_id = new_id(created)
            earlier = chains.earlier(conn, note, key_hash, text_hash, dedupe_window_ms, created)
            if earlier is not None:
                found, outcome = earlier
                node_id = found
            else:
                outcome = InsertOutcome.INSERTED
                chains.insert_row(conn, node_id, created, note, ex, supersedes, link, if_head=if_head)
                if key_hash is not None:
                    conn.execute(
                        "INSERT INTO remember_keys(key_hash, node_id, text_hash, created_at) VALUES (?, ?, ?, ?)",
                        (key_hash, node_id, text_hash, created),
                    )
        node = self.get(node_id)
        assert node is not None
        return node, outcome

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        with self._write() as conn:
            chains.attach(conn, node_id, supersedes, link)
        node = self.get(node_id)
        assert node is not None
        return node

    def unlink(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, MemoryNode]:
        """Undo the link from ``node_id`` to the version it superseded, in one transaction.

        The previous version becomes the head of its chain again (active unless it was
        forgotten); ``node_id`` and any versions after it become a chain of their own.
        The link's provenance is kept in the audit log. Returns (node, restored head).
        """
        with self._write() as conn:
            prev_id = chains.detach(conn, node_id, by=by)
        node, restored = self.get(node_id), self.get(prev_id)
        assert node is not None and restored is not None
        return node, restored

    def review(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, bool]:
        """Clear ``node_id``'s ``needs_review`` (confirmed still valid); whether it had one."""
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM nodes WHERE id = ?", (node_id,)).fetchone() is None:
                raise NotFound(f"no node with id {node_id}")
            changed = reviews.clear(conn, node_id, by)
        node = self.get(node_id)
        assert node is not None
        return node, changed

    def link_audit(self, node_id: str) -> list[dict[str, object]]:
        """Every recorded change to the links of ``node_id`` (as node or as target), oldest first."""
        return audit.link_audit(self._conn(), node_id)

    def forget(self, node_id: str, *, purge: bool = False) -> tuple[MemoryNode, bool]:
        now = now_ms()
        with self._write() as conn:
            row = conn.execute("SELECT status, purged_at FROM nodes WHERE id = ?", (node_id,)).fetchone()
            if row is None:
                raise NotFound(f"no node with id {node_id}")
            if row["purged_at"] is not None:
                raise Purged(f"node {node_id} was already purged")
            changed = False
            if row["status"] != Status.FORGOTTEN:
                conn.execute("UPDATE nodes SET status = 'forgotten', forgotten_at = ? WHERE id = ?", (now, node_id))
                audit.record_change(conn, "forget", node_id, None, None)
                changed = True
            # A forgotten note is nobody's possible successor, and has none (it never answers again).
            conn.execute("DELETE FROM offers WHERE node_id = ?", (node_id,))
            conn.execute("DELETE FROM offers WHERE candidate_id = ?", (node_id,))
            if purge:
                erase_note(conn, node_id, now, vec_loaded=self.vec_loaded)  # text, tokens, vector
                changed = True
        if purge:
            self._words.flush()  # the word index's commit without the note, before the answer
        # The old bytes leave the file only when the WAL is copied back and truncated; a
        # reader's snapshot keeps that from finishing. Then a background task retries.
        if purge and self.finish_purges() == 0 and self._purges.pending():
            self._purges.start()
        node = self.get(node_id)
        assert node is not None
        return node, changed

    # ------------------------------------------------------------------ purges: erasing the file

    def finish_purges(self, timeout_ms: int | None = None) -> int:
        """Erase finished purges from the file: a TRUNCATE checkpoint copies the blanked pages
        over the old ones and empties the WAL. When it finishes, the purges committed before it
        get ``file_erased_at``. Returns how many were recorded (0: none pending, or blocked)."""
        return self._purges.finish(timeout_ms)

    def checkpoint(self) -> bool:
        """Copy the WAL into the database file and truncate it. False if readers blocked it."""
        return self._db.checkpoint()

    def set_extraction(
        self,
        node_id: str,
        extraction: Extraction | None,
        state: ExtractionState,
        error: str | None = None,
    ) -> MemoryNode | None:
        """Record a job's result. Results (``extraction``) are accepted only while the node's
        extraction is pending, and marking it failed only while pending or failed: a late or
        forged answer never overwrites a finished node (``Conflict``). None: the node is gone."""
        with self._write() as conn:
            row = conn.execute("SELECT purged_at, extraction_state FROM nodes WHERE id = ?", (node_id,)).fetchone()
            if row is None or row["purged_at"] is not None:
                return None
            allowed = ("pending",) if extraction is not None else ("pending", "failed")
            if row["extraction_state"] not in allowed:
                raise Conflict(
                    f"node {node_id}: extraction is {row['extraction_state']}, not pending; "
                    "results are accepted only for a pending job of that node"
                )
            if extraction is not None:
                conn.execute(
                    "UPDATE nodes SET trigger = ?, change = ?, alternatives_tried = ?, consequences = ?, "
                    "summary = ?, extractor = ?, extraction_state = ?, extraction_error = NULL, "
                    "extraction_attempts = extraction_attempts + 1 WHERE id = ?",
                    (
                        extraction.trigger,
                        extraction.change,
                        extraction.alternatives_tried,
                        extraction.consequences,
                        extraction.summary,
                        extraction.extractor,
                        state.value,
                        node_id,
                    ),
                )
            else:
                conn.execute(
                    "UPDATE nodes SET extraction_state = ?, extraction_error = ?, "
                    "extraction_attempts = extraction_attempts + 1 WHERE id = ?",
                    (state.value, error, node_id),
                )
        return self.get(node_id)

    # ------------------------------------------------------------------ write audit (AuditLog port)

    def append_audit(self, entry: AuditEntry) -> None:
        with self._write() as conn:
            audit.append_audit(conn, entry)

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]:
        return audit.audit_page(self._conn(), query)

    # ------------------------------------------------------------------ the whole store (Archive port)

    def export_records(self) -> Iterator[Record]:
        """Every record of the file, read in one snapshot (``adapters/sqlite/archive.py``)."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield from archive.export_records(conn)
        finally:
            conn.execute("COMMIT")

    def import_records(self, records: Sequence[Record]) -> None:
        """``records`` written as they are, in one write transaction."""
        with self._write() as conn:
            archive.import_records(conn, records)

    # ------------------------------------------------------------------ diagnostics

    def check_invariants(self) -> list[str]:
        """Every broken chain invariant, as text. Empty means healthy. Used by tests and `stats`."""
        return chains.broken_invariants(self._conn())
