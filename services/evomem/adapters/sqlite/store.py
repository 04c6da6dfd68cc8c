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
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import math
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from evomem.adapters.sqlite.codec import NODE_COLUMNS, NODE_SQL, link_to_columns, node_to_row, row_to_node
from evomem.adapters.sqlite.conn import BUSY_TIMEOUT_MS, Connections
from evomem.adapters.sqlite.driver import sqlite as sqlite3
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.errors import (
    Conflict,
    CycleError,
    Forgotten,
    InvalidArgument,
    NamespaceMismatch,
    NotFound,
    Purged,
    Unavailable,
)
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
    id_floor,
    new_id,
    now_ms,
)
from evomem.domain.recall import Successor

log = logging.getLogger("evomem.store")

PURGE_CHECKPOINT_TIMEOUT_MS = 1000  # how long a purge waits for a reader to finish before answering file_erased: false

# bm25 column weights, in FTS column order.
FTS_COLUMNS = ("raw_text", "change", "trigger", "alternatives_tried", "consequences", "summary", "tags")
FTS_WEIGHTS = (1.0, 2.0, 1.0, 0.75, 0.75, 0.5, 1.5)
_BM25 = "bm25(nodes_fts, " + ", ".join(str(w) for w in FTS_WEIGHTS) + ")"
#: ``search`` ranks this many times ``limit`` matches before it reads their nodes (see there).
RANK_FIRST = 4
#: FTS5's BM25 constants (fts5_aux.c): a term adds at most idf * (K1 + 1) to a row's score.
BM25_K1 = 1.2
#: ``search`` prunes (MaxScore) only an OR query whose terms match at least this many rows in all,
PRUNE_FROM = 2000
#: in a table of at least this many rows (``max(rowid)``). Below it ranking every match costs less:
#: the rarest terms' rows rarely reach ``limit`` or a ``theta`` the other terms' bounds stay under,
#: so the passes fail and add to the full ranking (a long note's 64 terms over 200 long records:
#: 65 ms pruned, 15 ms every match; 2,000 records: 60 and 100 ms).
PRUNE_ROWS = 1000
#: and tries at most this many pruned passes before it ranks every match.
PRUNE_PASSES = 3
#: Below ``PRUNE_ROWS``, a query of at least this many terms (a long note's, the linker's candidate
#: search) first counts each term's rows, and ranks without the terms in half the rows or more
#: (``_search_informative``). A short query ranks at once: counting would cost more than it saves.
COUNT_TERMS_FROM = 16

# Small, named, recorded migrations. Append only; never edit one that has shipped.
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_nodes_chains_fts",
        """
        CREATE TABLE nodes (
            rowid               INTEGER PRIMARY KEY,
            id                  TEXT NOT NULL UNIQUE,
            namespace           TEXT NOT NULL DEFAULT 'default',
            scope               TEXT,
            raw_text            TEXT NOT NULL,
            trigger             TEXT NOT NULL DEFAULT '',
            change              TEXT NOT NULL DEFAULT '',
            alternatives_tried  TEXT NOT NULL DEFAULT '',
            consequences        TEXT NOT NULL DEFAULT '',
            summary             TEXT NOT NULL DEFAULT '',
            tags                TEXT NOT NULL DEFAULT '[]',
            session             TEXT,
            author              TEXT,
            created_at          INTEGER NOT NULL,
            relations           TEXT NOT NULL DEFAULT '{}',
            status              TEXT NOT NULL CHECK (status IN ('active', 'superseded', 'forgotten')),
            supersedes          TEXT REFERENCES nodes(id) DEFERRABLE INITIALLY DEFERRED,
            superseded_by       TEXT REFERENCES nodes(id) DEFERRABLE INITIALLY DEFERRED,
            chain_root          TEXT NOT NULL,
            version             INTEGER NOT NULL CHECK (version >= 1),
            link_method         TEXT,
            link_confidence     REAL,
            link_by             TEXT,
            link_evidence       TEXT,
            link_requested_id   TEXT,
            link_created_at     INTEGER,
            extraction_state    TEXT NOT NULL CHECK (extraction_state IN ('pending', 'done', 'failed')),
            extractor           TEXT NOT NULL DEFAULT '',
            extraction_error    TEXT,
            extraction_attempts INTEGER NOT NULL DEFAULT 0,
            forgotten_at        INTEGER,
            purged_at           INTEGER
        );
        -- A node is replaced by at most one node, and a chain has exactly one head.
        -- (Full, not partial, indexes: SQLite also uses them for the foreign-key checks;
        -- NULLs are distinct in a unique index.)
        CREATE UNIQUE INDEX nodes_supersedes_once ON nodes(supersedes);
        CREATE UNIQUE INDEX nodes_superseded_by_once ON nodes(superseded_by);
        CREATE UNIQUE INDEX nodes_one_head ON nodes(chain_root) WHERE superseded_by IS NULL;
        CREATE UNIQUE INDEX nodes_chain_version ON nodes(chain_root, version);
        CREATE INDEX nodes_namespace_status ON nodes(namespace, status);
        CREATE INDEX nodes_extraction_open ON nodes(extraction_state) WHERE extraction_state != 'done';

        CREATE VIRTUAL TABLE nodes_fts USING fts5(
            raw_text, change, trigger, alternatives_tried, consequences, summary, tags,
            content='nodes', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER nodes_fts_insert AFTER INSERT ON nodes BEGIN
            INSERT INTO nodes_fts(rowid, raw_text, change, trigger, alternatives_tried, consequences, summary, tags)
            VALUES (new.rowid, new.raw_text, new.change, new.trigger, new.alternatives_tried,
                    new.consequences, new.summary, new.tags);
        END;
        CREATE TRIGGER nodes_fts_delete AFTER DELETE ON nodes BEGIN
            INSERT INTO nodes_fts(nodes_fts, rowid, raw_text, change, trigger, alternatives_tried,
                                  consequences, summary, tags)
            VALUES ('delete', old.rowid, old.raw_text, old.change, old.trigger, old.alternatives_tried,
                    old.consequences, old.summary, old.tags);
        END;
        CREATE TRIGGER nodes_fts_update AFTER UPDATE OF raw_text, change, trigger, alternatives_tried,
                consequences, summary, tags ON nodes BEGIN
            INSERT INTO nodes_fts(nodes_fts, rowid, raw_text, change, trigger, alternatives_tried,
                                  consequences, summary, tags)
            VALUES ('delete', old.rowid, old.raw_text, old.change, old.trigger, old.alternatives_tried,
                    old.consequences, old.summary, old.tags);
            INSERT INTO nodes_fts(rowid, raw_text, change, trigger, alternatives_tried, consequences, summary, tags)
            VALUES (new.rowid, new.raw_text, new.change, new.trigger, new.alternatives_tried,
                    new.consequences, new.summary, new.tags);
        END;
        """,
    ),
    (
        "0002_link_audit",
        """
        -- Every change to a chain, for audit and for undoing a wrong link.
        CREATE TABLE link_audit (
            seq         INTEGER PRIMARY KEY,
            at          INTEGER NOT NULL,
            action      TEXT NOT NULL,
            node_id     TEXT NOT NULL,
            target_id   TEXT,
            method      TEXT,
            by          TEXT,
            confidence  REAL,
            detail      TEXT
        );
        CREATE INDEX link_audit_node ON link_audit(node_id);
        """,
    ),
    (
        "0003_scope_provenance_possible_links",
        """
        -- Where a scope came from (explicit or inferred, and the span it was inferred from),
        -- and the candidates a linker abstained on, for the agent to confirm.
        ALTER TABLE nodes ADD COLUMN scope_source TEXT;
        ALTER TABLE nodes ADD COLUMN scope_evidence TEXT;
        ALTER TABLE nodes ADD COLUMN possible_supersedes TEXT NOT NULL DEFAULT '[]';
        UPDATE nodes SET scope_source = 'explicit' WHERE scope IS NOT NULL;
        """,
    ),
    (
        "0004_idempotency_keys_file_erasure",
        """
        -- When a purge's bytes were gone from every file (NULL: not yet, or a purge made
        -- before this column existed: the next checkpoint that finishes records it).
        ALTER TABLE nodes ADD COLUMN file_erased_at INTEGER;
        CREATE INDEX nodes_purge_file_pending ON nodes(purged_at)
            WHERE purged_at IS NOT NULL AND file_erased_at IS NULL;
        -- remember's idempotency keys: a hash of (namespace, key), never the key itself, and a
        -- hash of the note's text to tell a retry from a conflict (NULL once the note is purged).
        CREATE TABLE remember_keys (
            key_hash    TEXT PRIMARY KEY,
            node_id     TEXT NOT NULL,
            text_hash   TEXT,
            created_at  INTEGER NOT NULL
        );
        CREATE INDEX remember_keys_node ON remember_keys(node_id);
        -- The dedupe window reads a namespace's recent notes (ULIDs sort by time).
        CREATE INDEX nodes_namespace_recent ON nodes(namespace, id);
        """,
    ),
    (
        "0005_write_audit",
        """
        -- Every write call made with authentication on (evomem.app.access): who, which tool, which
        -- ids, when, how it ended. Never any note text, so a purge leaves nothing readable here.
        CREATE TABLE write_audit (
            seq           INTEGER PRIMARY KEY,
            at            INTEGER NOT NULL,
            identity      TEXT NOT NULL,
            role          TEXT NOT NULL,
            tool          TEXT NOT NULL,
            namespace     TEXT,
            ids           TEXT NOT NULL DEFAULT '[]',
            outcome       TEXT NOT NULL,
            on_behalf_of  TEXT,
            detail        TEXT
        );
        CREATE INDEX write_audit_namespace_at ON write_audit(namespace, at);
        CREATE INDEX write_audit_at ON write_audit(at);
        """,
    ),
    (
        "0006_offers",
        """
        -- The reverse of possible_supersedes: node_id (a note a linker abstained on) may replace
        -- candidate_id. Recall reads it by candidate (the heads it answers) to show the newer
        -- note beside the old one. Kept by the store with the column: written with the note,
        -- dropped when the note is linked, forgotten or purged (and when the candidate is).
        -- reason: the linker's few words (scores, no note text).
        CREATE TABLE offers (
            candidate_id  TEXT NOT NULL,
            node_id       TEXT NOT NULL,
            namespace     TEXT NOT NULL,
            reason        TEXT,
            PRIMARY KEY (candidate_id, node_id)
        ) WITHOUT ROWID;
        CREATE INDEX offers_node ON offers(node_id);
        -- Notes stored before this table: their possible_supersedes, without reasons (never stored).
        INSERT OR IGNORE INTO offers(candidate_id, node_id, namespace)
            SELECT j.value, n.id, n.namespace FROM nodes n, json_each(n.possible_supersedes) j
            WHERE n.possible_supersedes != '[]' AND n.status != 'forgotten' AND n.purged_at IS NULL
                AND j.value != n.id;
        """,
    ),
    (
        "0007_offer_position",
        """
        -- How likely the offering note replaces the candidate: its linker's confidence (NULL:
        -- not stored, offers made before this column) and where the note listed it among its
        -- possible_supersedes (0: first). Recall shows a head's likeliest successors first, not
        -- the newest: a newer note that replaces nothing may still list an old decision as a
        -- distant guess, ahead of the version that does replace it.
        ALTER TABLE offers ADD COLUMN confidence REAL;
        ALTER TABLE offers ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
        UPDATE offers SET position = coalesce((
            SELECT min(CAST(j.key AS INTEGER)) FROM nodes n, json_each(n.possible_supersedes) j
            WHERE n.id = offers.node_id AND j.value = offers.candidate_id
        ), 0);
        """,
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)


def _assign(columns: dict[str, object]) -> str:
    """``a = ?, b = ?`` for an UPDATE of ``columns`` (names from the node codec, never user text)."""
    return ", ".join(f"{name} = ?" for name in columns)


def fts_query(terms: Sequence[str]) -> str:
    """Quote every term, so FTS5 operators in user text are just words. OR-ed: BM25 ranks."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def term_rows(conn: sqlite3.Connection, terms: Sequence[str]) -> dict[str, int]:
    """How many rows of the FTS table have each term (as FTS5 counts them for its idf), in one
    statement per 100 terms."""
    out: dict[str, int] = {}
    for start in range(0, len(terms), 100):
        chunk = list(terms[start : start + 100])
        sql = "SELECT " + ", ".join("(SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?)" for _ in chunk)
        out.update(zip(chunk, conn.execute(sql, [fts_query([t]) for t in chunk]).fetchone(), strict=True))
    return out


def term_bound(rows: int, hits: int) -> float:
    """The most one query term can add to any row's BM25 score, as FTS5 computes it: its idf
    (``log((rows - hits + 0.5) / (hits + 0.5))``, at least 1e-6) times ``k1 + 1``, since
    ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg))`` stays below ``k1 + 1`` for any
    weighted frequency and length. ``rows`` may be an upper bound of the table's rows (the bound
    only grows with it), ``hits`` must not exceed the rows the term is in."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > hits else 0.0
    return (BM25_K1 + 1.0) * max(idf, 1e-6)


def essential_split(bounds: dict[str, float], theta: float) -> int:
    """MaxScore: how many of the terms, best bound first, a row must contain one of to score
    above ``theta``. The terms after that many can together add at most ``theta`` to a row
    that has none of the first ones. ``len(bounds)`` when no term can be left out."""
    ordered = sorted(bounds.values(), reverse=True)
    for j in range(1, len(ordered)):
        if sum(ordered[j:]) < theta:
            return j
    return len(ordered)


class SQLiteStore:
    """The ``Store`` port on one SQLite file. Thread-safe: one connection per thread."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        purge_retry_s: float = 2.0,
    ) -> None:
        self._db = Connections(str(path), busy_timeout_ms=busy_timeout_ms, row_factory=sqlite3.Row, what="store")
        self.path = self._db.path
        self.busy_timeout_ms = busy_timeout_ms
        self.purge_retry_s = purge_retry_s
        self._finisher: threading.Thread | None = None
        self._finisher_lock = threading.Lock()
        self._stop = threading.Event()
        self._migrate()
        if self._purges_pending():  # a purge the last process could not finish (a reader, a crash)
            self._start_finisher()

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

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._db.write()

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
            )
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            for version, (name, sql) in enumerate(MIGRATIONS, start=1):
                if version in done:
                    continue
                for statement in _split_sql(sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                    (version, name, now_ms()),
                )

    def schema_version(self) -> int:
        row = self._conn().execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def close(self) -> None:
        self._stop.set()
        finisher = self._finisher
        if finisher is not None and finisher is not threading.current_thread():
            finisher.join(timeout=5)
        self._db.close()

    # ------------------------------------------------------------------ reads

    def get(self, node_id: str) -> MemoryNode | None:
        row = self._conn().execute(f"SELECT {NODE_SQL} FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return row_to_node(row) if row else None

    def get_many(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        nodes = self._select_in(f"SELECT {NODE_SQL} FROM nodes WHERE id IN ({{marks}})", node_ids)
        return {n.id: n for n in nodes}

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        sql = (
            f"SELECT {NODE_SQL} FROM nodes INDEXED BY nodes_one_head "
            "WHERE chain_root IN ({marks}) AND superseded_by IS NULL"
        )
        return {n.chain_root: n for n in self._select_in(sql, chain_roots)}

    def _select_in(self, sql: str, values: Iterable[str]) -> Iterator[MemoryNode]:
        """The nodes ``sql`` selects for ``values`` (distinct), 500 at a time: ``{marks}`` is
        where the placeholders go (SQLite limits how many one statement may hold)."""
        wanted = list(dict.fromkeys(values))
        conn = self._conn()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            for row in conn.execute(sql.format(marks=",".join("?" * len(chunk))), chunk):
                yield row_to_node(row)

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

    def search(self, terms: Sequence[str], *, namespace: str, limit: int, active_only: bool = False) -> list[SearchHit]:
        """The ``limit`` best notes of ``namespace`` by BM25 over ``terms`` (OR-ed), best first.

        Exact, and cheap on a large store (MaxScore, Turtle and Flood 1995): an OR query over
        common words matches a good part of the store, and scoring every match was most of a
        recall's cost (100k notes: 34k matches, ~40 of ~55 ms). Each term can add at most
        ``term_bound`` to a score, so a row that has none of the rarest terms scores at most
        the bounds of the others. ``search`` first ranks the rows with the rarest term only
        (scored with every term), which gives a lower bound ``theta`` of the ``limit``-th best
        score; then only the rows with one of the terms that ``theta`` cannot do without
        (``essential_split``). Both passes score a row exactly as the whole query does: the
        FTS expressions ``E AND (R)`` and ``E NOT (R)`` name every term once."""
        if not terms:
            return []
        status = "n.status = 'active'" if active_only else "n.status != 'forgotten'"
        conn = self._conn()
        rows = conn.execute("SELECT coalesce(max(rowid), 0) FROM nodes").fetchone()[0]  # >= the FTS rows
        if rows < PRUNE_ROWS:
            # Every match ranked, without counting each term's rows first: a term no row has adds
            # exactly 0.0 to every score (its frequency is 0), so the scores are those of the
            # query without it, and a query no row matches answers nothing.
            # A table of at most ``RANK_FIRST * limit`` rows: the first ranking held every match.
            unique = list(dict.fromkeys(terms))
            complete = rows <= RANK_FIRST * limit
            if len(unique) >= COUNT_TERMS_FROM:
                found = self._search_informative(conn, unique, rows, namespace, limit, status, complete)
                if found is not None:
                    return found
            return self._ranked(conn, [fts_query(unique)], namespace, limit, status, complete=complete)
        hits = term_rows(conn, list(dict.fromkeys(terms)))
        # Rarest first, in every query this search runs: FTS5 sums the terms' parts in the
        # expression's order, so the same order gives the same float, and ties break alike.
        present = sorted((t for t, n in hits.items() if n), key=lambda t: (hits[t], t))
        if not present:
            return []
        if len(present) > 1 and sum(hits[t] for t in present) >= PRUNE_FROM:
            found = self._search_pruned(conn, present, hits, rows, namespace, limit, status)
            if found is not None:
                return found
        return self._ranked(conn, [fts_query(present)], namespace, limit, status)

    def _search_informative(
        self,
        conn: sqlite3.Connection,
        terms: list[str],
        rows: int,
        namespace: str,
        limit: int,
        status: str,
        complete: bool,
    ) -> list[SearchHit] | None:
        """``search`` without the terms that are in half the rows or more; None when that cannot
        be shown to rank as the whole query does.

        Such a term has idf ``log((N - n + 0.5) / (n + 0.5)) <= 0``, which FTS5 raises to 1e-6, so
        it adds at most ``term_bound`` = 2.2e-6 to any score; yet it is the costly part of ranking
        long notes, since its position lists run through most of the table. (``rows``, at least
        the table's N, makes the test safe: ``n >= rows / 2`` implies ``n >= N / 2``.) Left out,
        every score drops by at most ``slack`` (their bounds summed) and a row with none of the
        other terms drops out. The answer is the whole query's when every gap between two of
        the ``limit + 1`` best rows (the last one included) and the ``limit``-th score exceed
        ``slack``; the scores returned are lower by at most ``slack`` (under 1.5e-4)."""
        hits = term_rows(conn, terms)
        common = [t for t in terms if hits[t] and 2 * hits[t] >= rows]
        kept = [t for t in terms if hits[t] and 2 * hits[t] < rows]
        if not common:
            return None
        if not kept:
            return None  # only common terms: rank them all
        slack = sum(term_bound(rows, hits[t]) for t in common)
        found = self._ranked(conn, [fts_query(kept)], namespace, limit + 1, status, complete=complete)
        scores = [h.score for h in found]
        if len(found) < limit or scores[limit - 1] <= slack:
            return None  # rows with only common terms could rank among the best
        if any(a - b <= slack for a, b in itertools.pairwise(scores)):
            return None  # a near tie the common terms could break either way
        return found[:limit]

    def _search_pruned(
        self,
        conn: sqlite3.Connection,
        present: list[str],
        hits: dict[str, int],
        rows: int,
        namespace: str,
        limit: int,
        status: str,
    ) -> list[SearchHit] | None:
        """``search`` by MaxScore passes; None when they cannot prove their answer exact.
        ``present``: the terms rarest first, so their bounds never grow along it. ``rows``: at
        least the FTS table's rows (``max(rowid)`` of ``nodes``)."""
        bounds = {t: term_bound(rows, hits[t]) for t in present}
        j = 1
        for _ in range(PRUNE_PASSES):
            essential, rest = fts_query(present[:j]), fts_query(present[j:])
            split = [f"({essential}) AND ({rest})", f"({essential}) NOT ({rest})"]
            found = self._ranked(conn, split, namespace, limit, status)
            if len(found) < limit:  # fewer rows than asked with those terms: the others' rows count
                j += 1
            else:
                theta = found[-1].score  # every row left out scores at most the bounds of ``rest``
                if sum(bounds[t] for t in present[j:]) < theta:
                    return found
                j = max(j + 1, essential_split(bounds, theta))
            if j >= len(present):
                return None
        return None

    def _ranked(
        self,
        conn: sqlite3.Connection,
        matches: list[str],
        namespace: str,
        limit: int,
        status: str,
        *,
        complete: bool = False,
    ) -> list[SearchHit]:
        """The ``limit`` best rows matching any of ``matches`` (FTS expressions that no row
        matches twice) in ``namespace`` with ``status``, ranked by the weighted BM25.

        Rank first, then read the nodes of the best matches only: reading every matching row of
        ``nodes`` (for the namespace and status) cost as much as ranking them. Exact: when
        ``limit`` of the ``RANK_FIRST * limit`` best matches pass the filters, no match ranked
        below them can; otherwise (another namespace's notes, forgotten ones, or fewer matches
        than that) every match is filtered. ``complete``: the caller knows the table has at most
        ``RANK_FIRST * limit`` rows, so the first ranking already held every match."""
        one = f"SELECT rowid, {_BM25} AS rank FROM nodes_fts WHERE nodes_fts MATCH ?"
        ranked = " UNION ALL ".join(f"SELECT * FROM ({one} ORDER BY rank, rowid LIMIT ?)" for _ in matches)
        first: list[object] = [v for m in matches for v in (m, RANK_FIRST * limit)]
        rows = conn.execute(
            f"SELECT n.id, n.chain_root, r.rank FROM ({ranked} ORDER BY rank, rowid LIMIT ?) AS r "
            f"JOIN nodes n ON n.rowid = r.rowid WHERE n.namespace = ? AND {status} ORDER BY r.rank, r.rowid LIMIT ?",
            (*first, RANK_FIRST * limit, namespace, limit),
        ).fetchall()
        if len(rows) < limit and not complete:
            every = " UNION ALL ".join(one for _ in matches)
            rows = conn.execute(
                f"SELECT n.id, n.chain_root, r.rank FROM ({every}) AS r JOIN nodes n ON n.rowid = r.rowid "
                f"WHERE n.namespace = ? AND {status} ORDER BY r.rank, n.rowid LIMIT ?",
                (*matches, namespace, limit),
            ).fetchall()
        return [SearchHit(node_id=r[0], chain_root=r[1], score=-float(r[2])) for r in rows]

    def possible_successors(
        self, node_ids: Iterable[str], *, namespace: str, limit: int = 8
    ) -> dict[str, list[Successor]]:
        """The ``offers`` rows of these candidates (primary key: candidate first), their active
        notes of ``namespace``, ``limit`` per candidate, likeliest first: by the linker's
        confidence (none stored: last), then where the note listed the candidate (``position``
        0: first), then newest first. One indexed read per 500 ids, whatever the size of the store."""
        wanted = list(dict.fromkeys(node_ids))
        out: dict[str, list[Successor]] = {}
        if limit < 1:
            return out
        conn = self._conn()
        cols = ", ".join("n." + c for c in NODE_COLUMNS)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            sql = (
                "SELECT * FROM (SELECT o.candidate_id AS offered_for, o.reason AS offer_reason, "
                f"o.confidence AS offer_confidence, o.position AS offer_position, {cols}, "
                "ROW_NUMBER() OVER (PARTITION BY o.candidate_id "
                "ORDER BY coalesce(o.confidence, -1) DESC, o.position, o.node_id DESC) AS nth "
                "FROM offers o JOIN nodes n ON n.id = o.node_id "
                f"WHERE o.candidate_id IN ({','.join('?' * len(chunk))}) AND o.namespace = ? "
                "AND n.status IN ('active', 'superseded')) WHERE nth <= ? ORDER BY offered_for, nth"
            )
            for row in conn.execute(sql, (*chunk, namespace, limit)):
                node = row_to_node(row, 4)
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
        chains = conn.execute(
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
            chains=chains,
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
    ) -> tuple[MemoryNode, InsertOutcome]:
        """``insert``, at most once: in the same transaction (under the write lock), a key used
        before answers its first node (REPLAYED; another text under that key is a ``Conflict``),
        and without a key an identical active note of the same namespace and scope created in
        the last ``dedupe_window_ms`` answers that node (DUPLICATE). Otherwise INSERTED."""
        node_id = new_id()
        created = now_ms()
        ex = note.extraction
        text_hash = hashlib.sha256(note.raw_text.encode("utf-8")).hexdigest()
        key_hash = None
        if idempotency_key is not None:
            key_hash = hashlib.sha256(f"{note.namespace}\x00{idempotency_key}".encode()).hexdigest()
        with self._write() as conn:
            earlier = self._earlier(conn, note, key_hash, text_hash, dedupe_window_ms, created)
            if earlier is not None:
                found, outcome = earlier
                node_id = found
            else:
                outcome = InsertOutcome.INSERTED
                self._insert_row(conn, node_id, created, note, ex, supersedes, link)
                if key_hash is not None:
                    conn.execute(
                        "INSERT INTO remember_keys(key_hash, node_id, text_hash, created_at) VALUES (?, ?, ?, ?)",
                        (key_hash, node_id, text_hash, created),
                    )
        node = self.get(node_id)
        assert node is not None
        return node, outcome

    @staticmethod
    def _earlier(
        conn: sqlite3.Connection,
        note: NewNote,
        key_hash: str | None,
        text_hash: str,
        dedupe_window_ms: int,
        now: int,
    ) -> tuple[str, InsertOutcome] | None:
        """The node an earlier call stored for this one (by key, or by the dedupe window)."""
        if key_hash is not None:
            row = conn.execute(
                "SELECT node_id, text_hash FROM remember_keys WHERE key_hash = ?", (key_hash,)
            ).fetchone()
            if row is None:
                return None
            if row["text_hash"] is None:
                raise Purged(
                    f"idempotency_key: the note stored under this key ({row['node_id']}) was purged; "
                    "use a new key to remember it again"
                )
            if row["text_hash"] != text_hash:
                raise Conflict(
                    f"idempotency_key was already used for another text (node {row['node_id']}); "
                    "a retry must send the same text, a new note needs a new key"
                )
            return row["node_id"], InsertOutcome.REPLAYED
        if dedupe_window_ms <= 0:
            return None
        row = conn.execute(
            "SELECT id FROM nodes INDEXED BY nodes_namespace_recent WHERE namespace = ? AND id >= ? "
            "AND scope IS ? AND status = 'active' AND raw_text = ? ORDER BY id DESC LIMIT 1",
            (note.namespace, id_floor(max(0, now - dedupe_window_ms)), note.scope, note.raw_text),
        ).fetchone()
        return (row["id"], InsertOutcome.DUPLICATE) if row is not None else None

    def _insert_row(
        self,
        conn: sqlite3.Connection,
        node_id: str,
        created: int,
        note: NewNote,
        ex: Extraction | None,
        supersedes: str | None,
        link: LinkProvenance | None,
    ) -> None:
        chain_root, version, prev = node_id, 1, None
        if supersedes is not None:
            head = self._head_for_link(conn, supersedes, note.namespace)
            prev = head["id"]
            chain_root, version = head["chain_root"], head["version"] + 1
            self._retire_head(conn, head["id"], node_id)
        node = MemoryNode(
            id=node_id,
            raw_text=note.raw_text,
            namespace=note.namespace,
            scope=note.scope,
            trigger=ex.trigger if ex else "",
            change=ex.change if ex else "",
            alternatives_tried=ex.alternatives_tried if ex else "",
            consequences=ex.consequences if ex else "",
            summary=ex.summary if ex else "",
            tags=note.tags,
            session=note.session,
            author=note.author,
            created_at=created,
            relations=note.relations,
            supersedes=prev,
            chain_root=chain_root,
            version=version,
            link=replace(link, requested_id=supersedes if supersedes != prev else None, created_at=created)
            if link is not None and prev is not None
            else None,
            extraction_state=ExtractionState.DONE if ex else ExtractionState.PENDING,
            extractor=ex.extractor if ex else "",
            extraction_attempts=1 if ex else 0,
            scope_source=note.scope_source if note.scope else None,
            scope_evidence=note.scope_evidence if note.scope else None,
            possible_supersedes=note.possible_supersedes,
        )
        conn.execute(f"INSERT INTO nodes ({NODE_SQL}) VALUES ({','.join('?' * len(NODE_COLUMNS))})", node_to_row(node))
        if note.possible_supersedes:
            why = dict(zip(note.possible_supersedes, note.possible_supersedes_why, strict=False))
            conf = dict(zip(note.possible_supersedes, note.possible_supersedes_confidence, strict=False))
            conn.executemany(
                "INSERT OR IGNORE INTO offers(candidate_id, node_id, namespace, reason, confidence, position) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (c, node_id, note.namespace, why.get(c) or None, conf.get(c), k)
                    for k, c in enumerate(note.possible_supersedes)
                    if c != node_id
                ],
            )
        if prev is not None and link is not None:
            self._audit(conn, "link", node_id, prev, link, requested=supersedes)

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        with self._write() as conn:
            row = conn.execute(
                "SELECT id, namespace, chain_root, version, supersedes, purged_at, status FROM nodes WHERE id = ?",
                (node_id,),
            ).fetchone()
            if row is None:
                raise NotFound(f"no node with id {node_id}")
            if row["purged_at"] is not None:
                raise Purged(f"node {node_id} was purged; it cannot be linked")
            head = self._head_for_link(conn, supersedes, row["namespace"])
            if head["chain_root"] == row["chain_root"]:
                raise CycleError(
                    f"node {node_id} and node {supersedes} are already in the same chain "
                    f"(root {row['chain_root']}); linking them would create a cycle"
                )
            # Attach the whole chain that node_id belongs to, starting at its root.
            root = conn.execute(
                "SELECT id, version FROM nodes WHERE chain_root = ? AND version = 1", (row["chain_root"],)
            ).fetchone()
            offset = head["version"]
            self._retire_head(conn, head["id"], root["id"])
            # Move versions out of the way first so (chain_root, version) stays unique.
            conn.execute(
                "UPDATE nodes SET chain_root = ?, version = version + ? WHERE chain_root = ?",
                (head["chain_root"], offset, row["chain_root"]),
            )
            made = replace(link, requested_id=supersedes if supersedes != head["id"] else None, created_at=now_ms())
            cols = link_to_columns(made)
            conn.execute(
                f"UPDATE nodes SET supersedes = ?, {_assign(cols)}, possible_supersedes = '[]' WHERE id = ?",
                (head["id"], *cols.values(), root["id"]),
            )
            conn.execute("DELETE FROM offers WHERE node_id = ?", (root["id"],))  # confirmed: no longer a guess
            self._audit(conn, "link", root["id"], head["id"], link, requested=supersedes)
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
            row = conn.execute(
                "SELECT id, chain_root, version, supersedes, link_method, link_by, link_confidence, purged_at "
                "FROM nodes WHERE id = ?",
                (node_id,),
            ).fetchone()
            if row is None:
                raise NotFound(f"no node with id {node_id}")
            if row["supersedes"] is None:
                raise InvalidArgument(f"node {node_id} supersedes nothing; there is no link to undo")
            prev_id = row["supersedes"]
            prev = conn.execute("SELECT status, forgotten_at FROM nodes WHERE id = ?", (prev_id,)).fetchone()
            offset = row["version"] - 1
            # Detach first: the new chain (node_id and its successors) is re-rooted at node_id,
            # then the previous version becomes a head again.
            conn.execute(
                "UPDATE nodes SET chain_root = ?, version = version - ? WHERE chain_root = ? AND version >= ?",
                (node_id, offset, row["chain_root"], row["version"]),
            )
            cols = link_to_columns(None)
            conn.execute(f"UPDATE nodes SET supersedes = NULL, {_assign(cols)} WHERE id = ?", (*cols.values(), node_id))
            conn.execute(
                "UPDATE nodes SET superseded_by = NULL, "
                "status = CASE WHEN forgotten_at IS NULL THEN 'active' ELSE 'forgotten' END WHERE id = ?",
                (prev_id,),
            )
            detail = json.dumps(
                {
                    "undone_method": row["link_method"],
                    "undone_by": row["link_by"],
                    "undone_confidence": row["link_confidence"],
                    "previous_status": prev["status"] if prev else None,
                }
            )
            conn.execute(
                "INSERT INTO link_audit(at, action, node_id, target_id, method, by, confidence, detail) "
                "VALUES (?, 'unlink', ?, ?, ?, ?, NULL, ?)",
                (now_ms(), node_id, prev_id, row["link_method"], by, detail),
            )
        node, restored = self.get(node_id), self.get(prev_id)
        assert node is not None and restored is not None
        return node, restored

    def link_audit(self, node_id: str) -> list[dict[str, object]]:
        """Every recorded change to the links of ``node_id`` (as node or as target), oldest first."""
        rows = (
            self._conn()
            .execute(
                "SELECT seq, at, action, node_id, target_id, method, by, confidence, detail FROM link_audit "
                "WHERE node_id = ? OR target_id = ? ORDER BY seq",
                (node_id, node_id),
            )
            .fetchall()
        )
        return [dict(r) for r in rows]

    def _head_for_link(self, conn: sqlite3.Connection, target_id: str, namespace: str) -> sqlite3.Row:
        """The head a new link must attach to, with every check that protects the chain."""
        target = conn.execute(
            "SELECT id, namespace, chain_root, status, purged_at FROM nodes WHERE id = ?", (target_id,)
        ).fetchone()
        if target is None:
            raise NotFound(f"supersedes: no node with id {target_id}")
        if target["namespace"] != namespace:
            raise NamespaceMismatch(
                f"supersedes: node {target_id} is in namespace {target['namespace']!r}, "
                f"not {namespace!r}; a decision can only replace one in its own namespace"
            )
        if target["purged_at"] is not None:
            raise Purged(f"supersedes: node {target_id} was purged; name a live node of that chain")
        head = conn.execute(
            "SELECT id, chain_root, version, status FROM nodes INDEXED BY nodes_one_head "
            "WHERE chain_root = ? AND superseded_by IS NULL",
            (target["chain_root"],),
        ).fetchone()
        if head is None:  # pragma: no cover - prevented by the schema
            raise Conflict(f"chain {target['chain_root']} has no head")
        if target["status"] == Status.FORGOTTEN and head["id"] == target_id:
            raise Forgotten(
                f"supersedes: node {target_id} was forgotten; remember the new decision without "
                "supersedes, or supersede a live version"
            )
        return head

    @staticmethod
    def _retire_head(conn: sqlite3.Connection, head_id: str, successor_id: str) -> None:
        cur = conn.execute(
            "UPDATE nodes SET superseded_by = ?, "
            "status = CASE WHEN status = 'active' THEN 'superseded' ELSE status END "
            "WHERE id = ? AND superseded_by IS NULL",
            (successor_id, head_id),
        )
        if cur.rowcount != 1:  # pragma: no cover - the write lock makes this unreachable
            raise Conflict(f"node {head_id} stopped being the head of its chain; retry")

    @staticmethod
    def _audit(
        conn: sqlite3.Connection,
        action: str,
        node_id: str,
        target_id: str | None,
        link: LinkProvenance | None,
        requested: str | None = None,
        detail: str | None = None,
    ) -> None:
        if requested and requested != target_id:
            detail = (detail + "; " if detail else "") + f"re-targeted from {requested} to the head {target_id}"
        conn.execute(
            "INSERT INTO link_audit(at, action, node_id, target_id, method, by, confidence, detail) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                now_ms(),
                action,
                node_id,
                target_id,
                link.method if link else None,
                link.by if link else None,
                link.confidence if link else None,
                detail,
            ),
        )

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
                self._audit(conn, "forget", node_id, None, None)
                changed = True
            # A forgotten note is nobody's possible successor, and has none (it never answers again).
            conn.execute("DELETE FROM offers WHERE node_id = ?", (node_id,))
            conn.execute("DELETE FROM offers WHERE candidate_id = ?", (node_id,))
            if purge:
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
                self._audit(conn, "purge", node_id, None, None)
                # Merge the index so no segment still holds the purged tokens; with
                # secure_delete on, the freed pages are zeroed.
                conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('optimize')")
                self._purge_vector(conn, node_id)
                changed = True
        # The old bytes leave the file only when the WAL is copied back and truncated; a
        # reader's snapshot keeps that from finishing. Then a background task retries.
        if purge and self.finish_purges() == 0 and self._purges_pending():
            self._start_finisher()
        node = self.get(node_id)
        assert node is not None
        return node, changed

    # ------------------------------------------------------------------ purges: erasing the file

    def _purges_pending(self) -> bool:
        try:
            row = (
                self._conn()
                .execute("SELECT 1 FROM nodes WHERE purged_at IS NOT NULL AND file_erased_at IS NULL LIMIT 1")
                .fetchone()
            )
        except sqlite3.OperationalError:  # a schema older than migration 0004 (tests pin old versions)
            return False
        return row is not None

    def finish_purges(self, timeout_ms: int | None = None) -> int:
        """Erase finished purges from the file: a TRUNCATE checkpoint copies the blanked pages
        over the old ones and empties the WAL. When it finishes, the purges committed before it
        get ``file_erased_at``. Returns how many were recorded (0: none pending, or blocked)."""
        conn = self._conn()
        pending = [
            r[0] for r in conn.execute("SELECT id FROM nodes WHERE purged_at IS NOT NULL AND file_erased_at IS NULL")
        ]
        if timeout_ms is None:
            timeout_ms = min(PURGE_CHECKPOINT_TIMEOUT_MS, self.busy_timeout_ms)
        if not pending or not self._db.checkpoint(timeout_ms):
            return 0
        at = now_ms()
        with self._write() as conn:
            for start in range(0, len(pending), 500):
                chunk = pending[start : start + 500]
                conn.execute(
                    f"UPDATE nodes SET file_erased_at = ? WHERE id IN ({','.join('?' * len(chunk))})", (at, *chunk)
                )
        self._db.checkpoint(timeout_ms)  # best effort: leave the WAL empty again
        return len(pending)

    def _start_finisher(self) -> None:
        """Retry ``finish_purges`` every ``purge_retry_s`` in a daemon thread until none is left."""
        if self._db.memory:
            return
        with self._finisher_lock:
            if self._finisher is not None and self._finisher.is_alive():
                return
            self._finisher = threading.Thread(target=self._finish_loop, name="evomem-purge-finisher", daemon=True)
            self._finisher.start()

    def _finish_loop(self) -> None:
        while not self._stop.wait(self.purge_retry_s):
            try:
                done = self.finish_purges()
                if done:
                    log.info("purge: %d purged note(s) now erased from the database file and its WAL", done)
                if not self._purges_pending():
                    return
            except Exception as exc:  # the store closed under it, a disk error: try again later
                if self._stop.is_set():
                    return
                log.warning("purge: could not finish erasing the file yet: %s", exc)

    def _purge_vector(self, conn: sqlite3.Connection, node_id: str) -> None:
        """Delete the node's vector (``evomem.adapters.vectors.index`` tables), if the file has any.

        An embedding is derived from the text and partly invertible, so it goes with it, in
        the same transaction. Without sqlite-vec loaded the ``vec0`` table cannot be written:
        the purge fails (and changes nothing) rather than leave the vector behind.
        """
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vec_items'").fetchone()
        if has is None:
            return
        row = conn.execute("SELECT rowid FROM vec_items WHERE node_id = ?", (node_id,)).fetchone()
        if row is None:
            return
        if not self.vec_loaded:
            from evomem.adapters.sqlite.driver import vec_problem

            raise Unavailable(
                f"node {node_id} has a vector in this file, and purging it needs sqlite-vec: {vec_problem()}"
            )
        conn.execute("DELETE FROM vec_scan WHERE rowid = ?", (row[0],))
        conn.execute("DELETE FROM vec_items WHERE rowid = ?", (row[0],))

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
            conn.execute(
                "INSERT INTO write_audit(at, identity, role, tool, namespace, ids, outcome, on_behalf_of, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    entry.at,
                    entry.identity,
                    entry.role,
                    entry.tool,
                    entry.namespace,
                    json.dumps(list(entry.ids)),
                    entry.outcome,
                    entry.on_behalf_of,
                    entry.detail,
                ),
            )

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]:
        where, args = [], []
        for clause, value in (
            ("namespace = ?", query.namespace),
            ("at >= ?", query.since_ms),
            ("at < ?", query.until_ms),
            ("seq < ?", query.before_seq),
        ):
            if value is not None:
                where.append(clause)
                args.append(value)
        sql = "SELECT * FROM write_audit" + (" WHERE " + " AND ".join(where) if where else "")
        rows = self._conn().execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, query.limit)).fetchall()
        return [
            AuditEntry(
                seq=r["seq"],
                at=r["at"],
                identity=r["identity"],
                role=r["role"],
                tool=r["tool"],
                namespace=r["namespace"],
                ids=tuple(json.loads(r["ids"])),
                outcome=r["outcome"],
                on_behalf_of=r["on_behalf_of"],
                detail=r["detail"],
            )
            for r in rows
        ]

    # ------------------------------------------------------------------ diagnostics

    def check_invariants(self) -> list[str]:
        """Every broken chain invariant, as text. Empty means healthy. Used by tests and `stats`."""
        conn = self._conn()
        problems: list[str] = []
        for (root,) in conn.execute(
            "SELECT chain_root FROM nodes GROUP BY chain_root "
            "HAVING SUM(superseded_by IS NULL) != 1 OR MIN(version) != 1 OR MAX(version) != COUNT(*)"
        ):
            problems.append(f"chain {root}: not exactly one head, or versions not 1..n")
        for (node_id,) in conn.execute(
            "SELECT a.id FROM nodes a JOIN nodes b ON b.id = a.supersedes "
            "WHERE b.superseded_by != a.id OR b.chain_root != a.chain_root OR b.version + 1 != a.version"
        ):
            problems.append(f"node {node_id}: supersedes link disagrees with its predecessor")
        for (node_id,) in conn.execute("SELECT id FROM nodes WHERE superseded_by IS NOT NULL AND status = 'active'"):
            problems.append(f"node {node_id}: superseded but marked active")
        return problems


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buf: list[str] = []
    for line in script.strip().splitlines():
        if line.strip().startswith("--") or not line.strip():
            continue
        buf.append(line)
        text = "\n".join(buf).strip()
        if text.endswith(";") and sqlite3.complete_statement(text):
            statements.append(text)
            buf = []
    if buf and "\n".join(buf).strip():
        statements.append("\n".join(buf).strip())
    return statements
