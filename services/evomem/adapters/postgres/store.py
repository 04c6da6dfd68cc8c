"""The PostgreSQL store: the ``Store`` port for teams, shared by any number of storage replicas.

    store = PostgresStore("postgresql://evomem:…@db:5432/evomem")   # migrates, then pools connections
    store.insert_once(note)                                          # as SQLiteStore

What differs from ``SQLiteStore`` (docs/ARCHITECTURE.md, "PostgreSQL"):

- Many writers on many machines: each write locks the chains it changes (an advisory lock held
  to the end of its transaction, ``chains.py``); the schema keeps the invariants whatever the
  code does (one head per chain: a partial unique index). A deadlock or a serialisation failure
  between two writers is retried whole, a few times.
- Every transaction sets its namespace (``SET LOCAL``), and row-level security shows it only
  that namespace's rows; a call by id (``get``, ``link``, ``forget``...) sets ``*``.
- Full text: ``tsvector`` + GIN, ranked by ``ts_rank`` (``search.py``); vectors: pgvector HNSW
  (``vectors.py``).
- A purge overwrites the text in the row (a new, blank row version) and deletes the vector in
  one transaction; the old row versions stay in the table's pages until ``VACUUM`` removes
  them, which ``purge.py`` runs in the background and records as ``file_erased_at``.
- A database that cannot be reached is ``Unavailable`` (``db.py``); the pool reconnects alone.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from evomem.adapters.postgres import archive, chains, reviews, schema
from evomem.adapters.postgres import purge as purging
from evomem.adapters.postgres import search as fulltext
from evomem.adapters.postgres.db import ALL, POOL_TIMEOUT_S, Database
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
from evomem.domain.errors import Conflict, NotFound, Purged, Unavailable
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

log = logging.getLogger("evomem.store")

T = TypeVar("T")
#: The store's bytes: its tables' main forks, their TOAST tables' and their indexes' (not the free
#: space and visibility maps, which a VACUUM adds: two stats calls around one agree).
_SIZE_SQL = (
    "WITH t AS (SELECT unnest(%s::regclass[]) AS oid) SELECT coalesce(sum(pg_relation_size(c.oid)), 0) "
    "FROM pg_class c WHERE c.oid IN (SELECT oid FROM t) "
    "OR c.oid IN (SELECT reltoastrelid FROM pg_class WHERE oid IN (SELECT oid FROM t)) "
    "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM t))"
)
RETRIES = 5  # a write that met a deadlock or a serialisation failure is run again, whole, this often


class PostgresStore:
    """The ``Store`` port on one PostgreSQL database. Thread-safe: a pool of connections."""

    def __init__(
        self,
        url: str,
        *,
        role: str | None = schema.APP_ROLE,
        migrate: bool = True,
        pool_size: int = 8,
        purge_retry_s: float = 2.0,
        wait_s: float = POOL_TIMEOUT_S,
    ) -> None:
        self.db = Database(url, role=role, max_size=pool_size, timeout_s=wait_s)
        self.path = self.db.where  # what logs and messages name (the URL without its password)
        try:
            self._schema = self._prepare(migrate, role)
            self.db.open()
        except BaseException:
            self.db.close()
            raise
        self._purges = purging.PurgeFinisher(self.db, retry_s=purge_retry_s)
        if self._purges.pending():
            self._purges.start()

    def _prepare(self, migrate: bool, role: str | None) -> int:
        """Apply the migrations the database has not had (as the URL's user: the tables' owner),
        or check there are none; the schema version."""
        with self.db.connect() as conn:
            if migrate:
                applied = schema.migrate(conn, role or schema.APP_ROLE)
                if applied:
                    log.info("database %s: applied migrations %s", self.db.where, ", ".join(applied))
            missing = schema.pending(conn)
            if missing:
                raise Unavailable(
                    f"the database at {self.db.where} lacks migrations {', '.join(missing)}: "
                    "run `evomem-admin migrate --database-url …` as the tables' owner"
                )
            return schema.schema_version(conn)

    # ------------------------------------------------------------------ plumbing

    def _read(self, fn: Callable[[Any], T], namespace: str = ALL) -> T:
        with self.db.transaction(namespace) as conn:
            return fn(conn)

    def _write(self, fn: Callable[[Any], T], namespace: str = ALL) -> T:
        """``fn`` in one transaction, run again whole after a deadlock or a serialisation failure."""
        import psycopg

        for attempt in range(RETRIES):
            try:
                with self.db.transaction(namespace) as conn:
                    return fn(conn)
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure) as exc:
                if attempt == RETRIES - 1:
                    raise Conflict(f"concurrent writes kept colliding ({exc.sqlstate}); retry") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def schema_version(self) -> int:
        return self._read(schema.schema_version)

    def close(self) -> None:
        self._purges.stop()
        self.db.close()

    # ------------------------------------------------------------------ reads

    def get(self, node_id: str) -> MemoryNode | None:
        row = self._read(lambda c: c.execute(f"SELECT {NODE_SQL} FROM nodes WHERE id = %s", (node_id,)).fetchone())
        return row_to_node(row) if row else None

    def get_many(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        wanted = list(dict.fromkeys(node_ids))
        if not wanted:
            return {}
        rows = self._read(lambda c: c.execute(f"SELECT {NODE_SQL} FROM nodes WHERE id = ANY(%s)", (wanted,)).fetchall())
        return {n.id: n for n in map(row_to_node, rows)}

    def sketches(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        wanted = list(dict.fromkeys(node_ids))
        if not wanted:
            return {}
        sql = f"SELECT {SKETCH_SQL} FROM nodes WHERE id = ANY(%s)"
        rows = self._read(lambda c: c.execute(sql, (wanted,)).fetchall())
        return {n.id: n for n in map(row_to_sketch, rows)}

    def link_sketches(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        wanted = list(dict.fromkeys(node_ids))
        if not wanted:
            return {}
        rows = self._read(lambda c: c.execute(f"SELECT {LINK_SQL} FROM nodes WHERE id = ANY(%s)", (wanted,)).fetchall())
        return {n.id: n for n in map(row_to_link_sketch, rows)}

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        wanted = list(dict.fromkeys(chain_roots))
        if not wanted:
            return {}
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {NODE_SQL} FROM nodes WHERE chain_root = ANY(%s) AND superseded_by IS NULL", (wanted,)
            ).fetchall()
        )
        return {n.chain_root: n for n in map(row_to_node, rows)}

    def chain(self, node_id: str, depth: int) -> list[MemoryNode]:
        def read(c: Any) -> list[Any]:
            row = c.execute("SELECT namespace, chain_root, version FROM nodes WHERE id = %s", (node_id,)).fetchone()
            if row is None:
                return []
            return c.execute(
                f"SELECT {NODE_SQL} FROM nodes WHERE namespace = %s AND chain_root = %s AND version <= %s "
                "ORDER BY version DESC LIMIT %s",
                (row[0], row[1], row[2], max(0, depth) + 1),
            ).fetchall()

        return [row_to_node(r) for r in self._read(read)]

    def recent_heads(self, query: RecentQuery) -> RecentPage:
        """As ``SQLiteStore.recent_heads``: from the partial index ``nodes_heads_recent``."""

        def read(c: Any) -> RecentPage:
            page = take_recent(_heads_newest_first(c, query.namespace, query.before, query.limit + 1), query)
            sql = f"SELECT {NODE_SQL} FROM nodes WHERE namespace = %s AND id = ANY(%s)"
            rows = c.execute(sql, (query.namespace, [h.id for h in page.heads])).fetchall() if page.heads else []
            full = {n.id: n for n in map(row_to_node, rows)}
            page.heads = [full[h.id] for h in page.heads if h.id in full]
            return page

        return with_histories(self._read(read, query.namespace), query.history_depth, self.chain)

    def dependents(self, node_id: str, limit: int = 50) -> list[MemoryNode]:
        def read(c: Any) -> list[MemoryNode]:
            row = c.execute("SELECT namespace, chain_root FROM nodes WHERE id = %s", (node_id,)).fetchone()
            if row is None:
                return []
            chain = c.execute("SELECT id FROM nodes WHERE namespace = %s AND chain_root = %s", (row[0], row[1]))
            ids = [r[0] for r in chain.fetchall()]
            found = dependents_of(ids, reviews.naming(c, row[0], ids))[: max(0, limit)]
            if not found:
                return []
            sql = f"SELECT {NODE_SQL} FROM nodes WHERE namespace = %s AND id = ANY(%s)"
            nodes = {n.id: n for n in map(row_to_node, c.execute(sql, (row[0], found)).fetchall())}
            return [nodes[i] for i in found if i in nodes]

        return self._read(read)

    def search(
        self, terms: Iterable[str], *, namespace: str, limit: int, active_only: bool = False, prune: float = 1.0
    ) -> list[SearchHit]:
        """The ``limit`` best notes of ``namespace`` for ``terms`` (``search.py``); exact whatever ``prune`` asks."""
        words = list(terms)
        return self._read(
            lambda c: fulltext.search(c, words, namespace=namespace, limit=limit, active_only=active_only),
            namespace,
        )

    def possible_successors(
        self, node_ids: Iterable[str], *, namespace: str, limit: int = 8, full: bool = True
    ) -> dict[str, list[Successor]]:
        """As ``SQLiteStore.possible_successors``: likeliest first (confidence, position, newest);
        ``full=False``: sketches."""
        wanted = list(dict.fromkeys(node_ids))
        out: dict[str, list[Successor]] = {}
        if limit < 1 or not wanted:
            return out
        cols = ", ".join("n." + c for c in (NODE_COLUMNS if full else SKETCH_COLUMNS))
        decode = row_to_node if full else row_to_sketch
        sql = (
            "SELECT * FROM (SELECT o.candidate_id, o.reason, o.confidence, o.position, "
            f"{cols}, ROW_NUMBER() OVER (PARTITION BY o.candidate_id "
            "ORDER BY coalesce(o.confidence, -1) DESC, o.position, o.node_id DESC) AS nth "
            "FROM offers o JOIN nodes n ON n.namespace = o.namespace AND n.id = o.node_id "
            "WHERE o.namespace = %s AND o.candidate_id = ANY(%s) AND n.status IN ('active', 'superseded')) AS ranked "
            "WHERE nth <= %s ORDER BY candidate_id, nth"
        )
        rows = self._read(lambda c: c.execute(sql, (namespace, wanted, limit)).fetchall(), namespace)
        for row in rows:
            out.setdefault(row[0], []).append(Successor(decode(row, 4), row[1], position=row[3], confidence=row[2]))
        return out

    def ping(self) -> None:
        """One cheap read (a health probe): raises ``Unavailable`` when the database cannot answer."""
        self._read(lambda c: c.execute("SELECT 1 FROM schema_migrations LIMIT 1").fetchone())

    def pending_extractions(self, limit: int = 100) -> list[str]:
        rows = self._read(
            lambda c: c.execute(
                "SELECT id FROM nodes WHERE extraction_state = 'pending' AND purged_at IS NULL ORDER BY seq LIMIT %s",
                (max(0, limit),),
            ).fetchall()
        )
        return [r[0] for r in rows]

    def stats(self, namespace: str | None = None) -> Stats:
        def read(c: Any) -> Stats:
            where, args = ("WHERE namespace = %s", (namespace,)) if namespace else ("", ())
            by_status = {s.value: 0 for s in Status}
            for status, count in c.execute(f"SELECT status, count(*) FROM nodes {where} GROUP BY status", args):
                by_status[status] = count
            extraction = {s.value: 0 for s in ExtractionState}
            for state, count in c.execute(
                f"SELECT extraction_state, count(*) FROM nodes {where} GROUP BY extraction_state", args
            ):
                extraction[state] = count
            purged, heads, pending, last = c.execute(
                "SELECT count(*) FILTER (WHERE purged_at IS NOT NULL), count(*) FILTER (WHERE superseded_by IS NULL), "
                "count(*) FILTER (WHERE purged_at IS NOT NULL AND file_erased_at IS NULL), max(file_erased_at) "
                f"FROM nodes {where}",
                args,
            ).fetchone()
            namespaces = dict(
                c.execute(f"SELECT namespace, count(*) FROM nodes {where} GROUP BY namespace ORDER BY 1", args)
            )
            size = c.execute(_SIZE_SQL, (list(schema.TABLES),)).fetchone()[0]
            return Stats(
                by_status=by_status,
                purged=purged,
                chains=heads,
                extraction=extraction,
                namespaces=namespaces,
                db_bytes=int(size),
                schema_version=schema.schema_version(c),
                purges_file_pending=pending,
                last_file_erased_at=last,
            )

        return self._read(read, namespace or ALL)

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
        """As ``SQLiteStore.insert_once``: at most once, decided in the write's transaction under a
        lock on the key (or, for the dedupe window, on the text)."""
        text_hash = hashlib.sha256(note.raw_text.encode("utf-8")).hexdigest()
        key_hash = None
        if idempotency_key is not None:
            key_hash = hashlib.sha256(f"{note.namespace}\x00{idempotency_key}".encode()).hexdigest()

        def write(conn: Any) -> tuple[str, InsertOutcome]:
            # two transactions at once may read the same newest id: their notes can share a millisecond
            created = write_ms(now_ms(), conn.execute("SELECT max(id) FROM nodes").fetchone()[0])
            found = chains.earlier(conn, note, key_hash, text_hash, dedupe_window_ms, created)
            if found is not None:
                return found
            node_id = new_id(created)
            chains.insert_row(conn, node_id, created, note, note.extraction, supersedes, link, if_head=if_head)
            if key_hash is not None:
                conn.execute(
                    "INSERT INTO remember_keys (namespace, key_hash, node_id, text_hash, created_at) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    (note.namespace, key_hash, node_id, text_hash, created),
                )
            return node_id, InsertOutcome.INSERTED

        # The note's namespace, unless it names a node to supersede: that one must be read to say
        # why it cannot be (another namespace is a NamespaceMismatch, not a NotFound).
        node_id, outcome = self._write(write, note.namespace if supersedes is None else ALL)
        node = self.get(node_id)
        assert node is not None
        return node, outcome

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        self._write(lambda c: chains.attach(c, node_id, supersedes, link))
        node = self.get(node_id)
        assert node is not None
        return node

    def unlink(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, MemoryNode]:
        prev_id = self._write(lambda c: chains.detach(c, node_id, by=by))
        node, restored = self.get(node_id), self.get(prev_id)
        assert node is not None and restored is not None
        return node, restored

    def review(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, bool]:
        """As ``SQLiteStore.review``: the flag cleared in one transaction, under the row's lock."""

        def write(conn: Any) -> bool:
            row = chains.one(conn, "SELECT namespace FROM nodes WHERE id = %s FOR UPDATE", (node_id,))
            if row is None:
                raise NotFound(f"no node with id {node_id}")
            return reviews.clear(conn, row["namespace"], node_id, by)

        changed = self._write(write)
        node = self.get(node_id)
        assert node is not None
        return node, changed

    def link_audit(self, node_id: str) -> list[dict[str, object]]:
        """Every recorded change to the links of ``node_id`` (as node or as target), oldest first."""
        from psycopg.rows import dict_row

        def read(c: Any) -> list[dict[str, object]]:
            with c.cursor(row_factory=dict_row) as cur:
                return cur.execute(
                    "SELECT seq, at, action, node_id, target_id, method, by, confidence, detail FROM link_audit "
                    "WHERE node_id = %s OR target_id = %s ORDER BY seq",
                    (node_id, node_id),
                ).fetchall()

        return self._read(read)

    def forget(self, node_id: str, *, purge: bool = False) -> tuple[MemoryNode, bool]:
        def write(conn: Any) -> bool:
            row = chains.lock_chain(conn, node_id)
            if row is None:
                raise NotFound(f"no node with id {node_id}")
            if row["purged_at"] is not None:
                raise Purged(f"node {node_id} was already purged")
            ns, now, changed = row["namespace"], now_ms(), False
            if row["status"] != Status.FORGOTTEN:
                conn.execute(
                    "UPDATE nodes SET status = 'forgotten', forgotten_at = %s WHERE namespace = %s AND id = %s",
                    (now, ns, node_id),
                )
                chains.record_change(conn, ns, "forget", node_id, None, None)
                changed = True
            # A forgotten note is nobody's possible successor, and has none (it never answers again).
            conn.execute(
                "DELETE FROM offers WHERE namespace = %s AND (node_id = %s OR candidate_id = %s)",
                (ns, node_id, node_id),
            )
            if purge:
                purging.erase_note(conn, ns, node_id, now)
                changed = True
            return changed

        changed = self._write(write)
        # VACUUM now (a purge is rare, and its answer then says the old row versions are gone);
        # while an older transaction is open, in the background until it has ended.
        if purge and self._finish_now() == 0:
            self._purges.start()
        node = self.get(node_id)
        assert node is not None
        return node, changed

    def _finish_now(self) -> int:
        try:
            return self._purges.finish()
        except Exception as exc:  # the purge is committed; the background task tries again
            log.warning("purge: VACUUM after the purge failed: %s", exc)
            return 0

    def finish_purges(self, timeout_s: float = 30.0) -> int:
        """Vacuum the purged notes' old row versions away now (``purging.PurgeFinisher.finish``);
        how many purges it recorded as erased (0: none pending, or an older transaction is open)."""
        return self._purges.finish(timeout_s)

    def set_extraction(
        self,
        node_id: str,
        extraction: Extraction | None,
        state: ExtractionState,
        error: str | None = None,
    ) -> MemoryNode | None:
        """As ``SQLiteStore.set_extraction``: results only for a pending job (``Conflict``)."""

        def write(conn: Any) -> bool:
            row = chains.one(
                conn, "SELECT namespace, purged_at, extraction_state FROM nodes WHERE id = %s FOR UPDATE", (node_id,)
            )
            if row is None or row["purged_at"] is not None:
                return False
            allowed = ("pending",) if extraction is not None else ("pending", "failed")
            if row["extraction_state"] not in allowed:
                raise Conflict(
                    f"node {node_id}: extraction is {row['extraction_state']}, not pending; "
                    "results are accepted only for a pending job of that node"
                )
            if extraction is not None:
                conn.execute(
                    "UPDATE nodes SET trigger = %s, change = %s, alternatives_tried = %s, consequences = %s, "
                    "summary = %s, extractor = %s, extraction_state = %s, extraction_error = NULL, "
                    "extraction_attempts = extraction_attempts + 1 WHERE namespace = %s AND id = %s",
                    (
                        extraction.trigger,
                        extraction.change,
                        extraction.alternatives_tried,
                        extraction.consequences,
                        extraction.summary,
                        extraction.extractor,
                        state.value,
                        row["namespace"],
                        node_id,
                    ),
                )
            else:
                conn.execute(
                    "UPDATE nodes SET extraction_state = %s, extraction_error = %s, "
                    "extraction_attempts = extraction_attempts + 1 WHERE namespace = %s AND id = %s",
                    (state.value, error, row["namespace"], node_id),
                )
            return True

        return self.get(node_id) if self._write(write) else None

    # ------------------------------------------------------------------ write audit (AuditLog port)

    def append_audit(self, entry: AuditEntry) -> None:
        import json

        self._write(
            lambda c: c.execute(
                "INSERT INTO write_audit (namespace, at, identity, role, tool, ids, outcome, on_behalf_of, detail) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    entry.namespace,
                    entry.at,
                    entry.identity,
                    entry.role,
                    entry.tool,
                    json.dumps(list(entry.ids)),
                    entry.outcome,
                    entry.on_behalf_of,
                    entry.detail,
                ),
            ),
            entry.namespace or ALL,
        )

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]:
        import json

        where, args = [], []
        for clause, value in (
            ("namespace = %s", query.namespace),
            ("at >= %s", query.since_ms),
            ("at < %s", query.until_ms),
            ("seq < %s", query.before_seq),
        ):
            if value is not None:
                where.append(clause)
                args.append(value)
        sql = (
            "SELECT seq, at, identity, role, tool, namespace, ids, outcome, on_behalf_of, detail FROM write_audit"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY seq DESC LIMIT %s"
        )
        rows = self._read(lambda c: c.execute(sql, (*args, query.limit)).fetchall(), query.namespace or ALL)
        return [
            AuditEntry(
                seq=r[0],
                at=r[1],
                identity=r[2],
                role=r[3],
                tool=r[4],
                namespace=r[5],
                ids=tuple(json.loads(r[6])),
                outcome=r[7],
                on_behalf_of=r[8],
                detail=r[9],
            )
            for r in rows
        ]

    # ------------------------------------------------------------------ the whole store (Archive port)

    def export_records(self) -> Iterator[Record]:
        """Every record, read in one transaction (``adapters/postgres/archive.py``)."""
        with self.db.transaction(ALL, snapshot=True) as conn:
            yield from archive.export_records(conn)

    def import_records(self, records: Sequence[Record]) -> None:
        """``records`` written as they are, in one transaction."""
        self._write(lambda c: archive.import_records(c, records))

    # ------------------------------------------------------------------ diagnostics

    def check_invariants(self) -> list[str]:
        """Every broken chain invariant, as text. Empty means healthy."""
        return self._read(chains.broken_invariants)


def _heads_newest_first(c: Any, namespace: str, before: str | None, batch: int) -> Iterator[MemoryNode]:
    """The heads in force of ``namespace`` below ``before`` by id, newest first, as sketches (id,
    scope, tags), ``batch`` rows per statement, as long as the caller reads (inside its transaction)."""
    cursor = before
    while True:
        below, args = ("", (namespace, batch)) if cursor is None else ("AND id < %s ", (namespace, cursor, batch))
        sql = (
            "SELECT id, scope, tags FROM nodes WHERE namespace = %s AND superseded_by IS NULL AND status = 'active' "
            f"{below}ORDER BY id DESC LIMIT %s"
        )
        rows = c.execute(sql, args).fetchall()
        yield from (head_sketch(namespace, *r) for r in rows)
        if len(rows) < batch:
            return
        cursor, batch = rows[-1][0], min(batch * 2, 500)
