"""Vectors in SQLite with sqlite-vec: a namespace-partitioned KNN index with exact rescoring.

    index = VectorIndex("~/.evomem/evomem.vec.db", model=embedder.name)
    index.add(node_id, "default", vector)              # upsert; the vector is L2-normalised
    index.search(query, "default", k=10)               # [(node_id, cosine distance), ...] best first
    index.search(query, "default", k=10, candidate_ids=bm25_ids)   # exact, over those ids only
    index.remove(node_id)

Why this shape: ``vec0`` KNN is a brute-force scan, so the scan must be cheap at 1M vectors.
The scan table holds binary vectors (``bit[384]``: 48 bytes, Hamming distance) in one
partition per namespace, so a query reads only its namespace. The best ``k * oversample`` of
the scan are rescored exactly (cosine, in numpy) from ``vec_items``, which keeps one int8
vector per node (384 bytes, scaled per vector: cosine off by ~3e-4 on average, 2e-3 at most,
against 1e-2 for sqlite-vec's x*127) or, with ``rescore="float32"``, the float vector (the
encodings: quantize.py).
When the caller already has candidates (BM25 hits, for hybrid recall) the scan is skipped:
their vectors are read by primary key and scored exactly.

The binary scan itself runs in process: each namespace's bits are read once, the first time
it is searched, into a numpy copy (``Bits``, bits.py: column-major uint64 words, XOR + popcount
+ a histogram cut-off), which yields the same shortlist as ``vec0`` (the ``want`` nearest by
Hamming distance; among equal distances at the cut-off the smaller rowids, where ``vec0``
picks its own). ``vec0`` stays the copy on disk. The copy follows the file through
``vec_log``, a change log (seq, vec_items rowid, namespace: no vector bytes) that triggers
on ``vec_items`` write in every writer's transaction, this process's or another's, the
store's purge included: a search first reads the entries past the ones it has seen (one
indexed statement when nothing changed) and re-reads those rowids' bits, so it sees every
change committed before it began, and a removed vector is gone from the next search (its
bits zeroed in memory too). Writers keep the last ``LOG_KEEP`` entries; a copy further
behind than that reloads its namespace. Memory: 57 bytes a vector (48 of bits, 8 of rowid,
1 flag) plus up to 1/8 spare: ~6.4 MB for 100k, ~64 MB for 1M. ``cache=False`` scans
``vec0`` instead.

Measured on 2 busy cores, ms per query, 384 dims, k=20 (oversample 8): on the 100k-note bench
store ``search`` takes ~2 ms (~1 ms of it the scan, the rest rescoring) against ~27 ms through
``vec0``; reading the 100k bits the first time ~15-20 ms (straight from ``vec0``'s chunk
tables; ~0.8 s through ``vec0`` itself, the fallback); 1M synthetic vectors scan in ~10 ms
(~130 ms through ``vec0``, oversample 8; ~87 ms at 4). The int8 or float32 scans (``vec0``)
take ~100 ms at 100k, ~1 s at 1M; 200 candidates 2-7 ms. The file holds ~515 bytes per vector
(binary + int8 + ids), against ~850 (int8 scan) and ~2000 (float32 scan). On 7,219 real
note embeddings and 1,200 questions, binary + int8 rescoring at oversample 8 agreed with
exact float search on top-1 for 99.8 % of queries (recall@10 0.994; 0.977 at oversample 4).

``vector_search="hnsw"`` (or ``"auto"`` from ``hnsw_from`` vectors in a namespace: ``EVOMEM_VECTOR_SEARCH``)
takes the shortlist from an HNSW graph of the namespace's int8 vectors instead (graph.py: a copy
that follows ``vec_log`` as the bits do, built on a thread while the scan answers, saved in
``<db>.hnsw``); the rescoring is the same.

``scan="int8"`` or ``scan="float32"`` scan those vectors instead of a binary shortlist (slower, bigger; for
comparison and small indexes).

Tables (all named ``vec_*``, so they can live in the store's file): ``vec_meta`` (dim, scan,
rescore, model: a mismatch on open is an error, never silently mixed vectors; ``log`` and
``log_floor`` for the change log), ``vec_items`` (node id, namespace, rescoring vector),
``vec_scan`` (the ``vec0`` table and its shadow tables), ``vec_log`` (the change log, added
on open to files made before it: the schema stays "1", so older code still opens them, and
its writes are logged by the triggers). Deleting a vector clears its bytes in ``vec0`` (sqlite-vec >= 0.1.7) and, with
``secure_delete`` on, in ``vec_items``.

Connections come from ``evomem.adapters.sqlite.conn``, the same helper as the store's (WAL
with a busy retry, ``secure_delete``, per-thread connections).
The driver: ``evomem.adapters.sqlite.driver`` picks one SQLite library per process
(``sqlean`` when installed, which can load extensions where Python's own ``sqlite3`` cannot),
and the store uses the same one, so the ``vec_*`` tables live in the store's own file, next to
the FTS index: one file to back up, and a purge clears a node's text, its FTS tokens and its
vector in one transaction (``SQLiteStore.forget``).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from evomem.adapters.sqlite import driver
from evomem.adapters.sqlite.conn import BUSY_TIMEOUT_MS, Connections
from evomem.adapters.vectors.bits import Bits
from evomem.adapters.vectors.graph import HNSW_FROM, MODES, Graphs
from evomem.adapters.vectors.log import LOG_STATE, changed_items
from evomem.adapters.vectors.quantize import decode_items, item_blob, scan_blob
from evomem.domain.errors import InvalidArgument, Unavailable

if TYPE_CHECKING:
    import numpy as np

SCHEMA = "1"
LOG = "1"  # vec_meta 'log': the change log (vec_log and its triggers) is installed; older code ignores the key
LOG_KEEP = 10_000  # log entries kept by compaction: a cache further behind reloads its namespace
SCANS = ("binary", "int8", "float32")
RESCORES = ("int8", "float32")
DRIVER_HINT = driver.VECTORS_HINT


class VectorIndexUnavailable(Unavailable):
    """No SQLite driver that can load sqlite-vec, or sqlite-vec itself, is installed."""


class VectorIndexMismatch(Unavailable):
    """The file was built with another dimension, layout or embedding model."""


def sqlite_driver() -> ModuleType:
    """The SQLite module this process uses for every EvoMem file, if it can load sqlite-vec."""
    problem = driver.vec_problem()
    if problem is not None:
        raise VectorIndexUnavailable(problem)
    return driver.sqlite


class VectorIndex:
    """Node vectors by namespace over sqlite-vec. Thread-safe: one connection per thread."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        dim: int = 384,
        scan: str = "binary",
        rescore: str = "int8",
        oversample: int = 8,
        model: str | None = None,
        chunk_size: int | None = None,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        cache: bool = True,
        vector_search: str = "scan",
        hnsw_from: int = HNSW_FROM,
        graph_folder: str | None = None,
    ) -> None:
        if scan not in SCANS:
            raise ValueError(f"scan must be one of {', '.join(SCANS)}, got {scan!r}")
        if rescore not in RESCORES:
            raise ValueError(f"rescore must be one of {', '.join(RESCORES)}, got {rescore!r}")
        if dim < 8 or dim % 8:
            raise ValueError("dim must be a positive multiple of 8")
        if oversample < 1:
            raise ValueError("oversample must be at least 1")
        if chunk_size is not None and (chunk_size < 8 or chunk_size % 8):
            raise ValueError("chunk_size must be a positive multiple of 8")
        if vector_search not in MODES:
            raise ValueError(f"vector_search must be one of {', '.join(MODES)}, got {vector_search!r}")
        if vector_search == "hnsw" and (scan != "binary" or rescore != "int8" or not cache):
            raise ValueError("vector_search='hnsw' needs the binary scan with int8 rescoring, cached")
        self.dim, self.scan, self.rescore, self.oversample = dim, scan, rescore, oversample
        self.chunk_size = chunk_size
        self.busy_timeout_ms = busy_timeout_ms
        sqlite_driver()  # VectorIndexUnavailable, before any file is touched, when sqlite-vec cannot load
        self._db = Connections(str(path), busy_timeout_ms=busy_timeout_ms, what="vector index")
        self.path = self._db.path
        self.model = self._migrate(model)
        # Binary scans read an in-process copy of each namespace's bits (``Bits``), kept in
        # step with the file through ``vec_log``; ``cache=False`` scans ``vec0`` instead.
        self.cache = cache and scan == "binary"
        self._bits: dict[str, Bits] = {}
        self._bits_lock = threading.Lock()
        # An HNSW graph per namespace (graph.py) where ``vector_search`` wants one, saved in
        # ``graph_folder`` (default ``<db>.hnsw`` beside a file); the bits answer until it is built.
        self._graphs: Graphs | None = None
        if vector_search != "scan" and self.cache and rescore == "int8":
            folder = graph_folder if graph_folder is not None else (None if self._db.memory else self._file() + ".hnsw")
            self._graphs = Graphs(
                self._conn, dim=dim, model=self.model, mode=vector_search, size_from=hnsw_from, folder=folder
            )

    # ------------------------------------------------------------------ plumbing

    def _conn(self) -> Any:
        return self._db.get()

    def _write(self) -> contextlib.AbstractContextManager[Any]:
        return self._db.write()

    def _file(self) -> str:
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(self._db.path).path) if self._db.uri else self._db.path

    def close(self) -> None:
        if self._graphs is not None:
            self._graphs.close()
        with self._bits_lock:
            self._bits.clear()
        self._db.close()

    def __enter__(self) -> VectorIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _scan_ddl(self) -> str:
        column = {"binary": f"bit[{self.dim}]", "int8": f"int8[{self.dim}]", "float32": f"float[{self.dim}]"}[self.scan]
        metric = "" if self.scan == "binary" else " distance_metric=cosine"
        chunk = f", chunk_size={self.chunk_size}" if self.chunk_size else ""
        return (
            f"CREATE VIRTUAL TABLE vec_scan USING vec0(namespace TEXT PARTITION KEY, embedding {column}{metric}{chunk})"
        )

    def _migrate(self, model: str | None) -> str | None:
        want = {"schema": SCHEMA, "dim": str(self.dim), "scan": self.scan, "rescore": self.rescore}
        with self._write() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS vec_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            have = dict(conn.execute("SELECT key, value FROM vec_meta").fetchall())
            if not have:
                conn.execute(
                    "CREATE TABLE vec_items ("
                    " rowid INTEGER PRIMARY KEY, node_id TEXT NOT NULL UNIQUE,"
                    " namespace TEXT NOT NULL, vector BLOB NOT NULL)"
                )
                conn.execute("CREATE INDEX vec_items_namespace ON vec_items(namespace)")
                conn.execute(self._scan_ddl())
                rows = list(want.items()) + ([("model", model)] if model else [])
                conn.executemany("INSERT INTO vec_meta(key, value) VALUES (?, ?)", rows)
                self._create_log(conn)
                return model
            wrong = {k: (have.get(k), v) for k, v in want.items() if have.get(k) != v}
            if wrong:
                raise VectorIndexMismatch(
                    f"{self.path} holds a vector index built with "
                    + ", ".join(f"{k}={h!r}" for k, (h, _) in wrong.items())
                    + "; open it with those settings, or delete the vec_* tables and re-embed"
                )
            stored = have.get("model")
            if model and stored and stored != model:
                raise VectorIndexMismatch(
                    f"{self.path} holds vectors from the embedding model {stored!r}, not {model!r}; "
                    "vectors from different models cannot be compared: re-embed into a new index"
                )
            if model and not stored:
                conn.execute("INSERT INTO vec_meta(key, value) VALUES ('model', ?)", (model,))
                stored = model
            if have.get("log") != LOG:  # a file from before the change log: add it (nothing else changes)
                self._create_log(conn)
            return stored

    @staticmethod
    def _create_log(conn: Any) -> None:
        """The change log the caches follow: one row (``seq``, vec_items rowid, namespace) per
        changed vector, written by triggers on ``vec_items``, so every writer logs in its own
        transaction (this class, ``SQLiteStore``'s purge, code from before the log). An update
        logs the old namespace and, when it moves, the new one. No vector bytes, ever."""
        conn.execute(
            "CREATE TABLE IF NOT EXISTS vec_log ("
            " seq INTEGER PRIMARY KEY AUTOINCREMENT, item INTEGER NOT NULL, namespace TEXT NOT NULL)"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS vec_log_namespace ON vec_log(namespace, seq)")
        log = "INSERT INTO vec_log(item, namespace) VALUES"
        conn.execute(
            "CREATE TRIGGER IF NOT EXISTS vec_log_insert AFTER INSERT ON vec_items"
            f" BEGIN {log} (NEW.rowid, NEW.namespace); END"
        )
        conn.execute(
            "CREATE TRIGGER IF NOT EXISTS vec_log_update AFTER UPDATE ON vec_items BEGIN"
            f" {log} (OLD.rowid, OLD.namespace);"
            " INSERT INTO vec_log(item, namespace) SELECT NEW.rowid, NEW.namespace"
            " WHERE NEW.namespace IS NOT OLD.namespace OR NEW.rowid IS NOT OLD.rowid; END"
        )
        conn.execute(
            "CREATE TRIGGER IF NOT EXISTS vec_log_delete AFTER DELETE ON vec_items"
            f" BEGIN {log} (OLD.rowid, OLD.namespace); END"
        )
        conn.execute("INSERT OR REPLACE INTO vec_meta(key, value) VALUES ('log', ?)", (LOG,))
        conn.execute("INSERT OR IGNORE INTO vec_meta(key, value) VALUES ('log_floor', '0')")

    def _compact_log(self, conn: Any) -> None:
        """Keep the last ``LOG_KEEP`` log entries once there are twice as many (in the writer's
        transaction). ``log_floor`` says up to which ``seq`` entries are gone: a cache that has
        not seen them reloads its namespace instead."""
        floor, top = conn.execute(LOG_STATE).fetchone()
        if top is not None and top - floor > 2 * LOG_KEEP:
            cut = top - LOG_KEEP
            conn.execute("DELETE FROM vec_log WHERE seq <= ?", (cut,))
            conn.execute("UPDATE vec_meta SET value = ? WHERE key = 'log_floor'", (str(cut),))

    # ------------------------------------------------------------------ vectors

    def _unit(self, vector: Any) -> np.ndarray:
        import numpy as np

        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        if v.shape[0] != self.dim:
            raise InvalidArgument(f"vector has {v.shape[0]} dimensions, the index has {self.dim}")
        if not np.all(np.isfinite(v)):
            raise InvalidArgument("vector has NaN or infinite values")
        norm = float(np.linalg.norm(v))
        if norm < 1e-12:
            raise InvalidArgument("vector is all zeros; it has no direction to compare")
        return v / norm

    def _scan_param(self) -> str:
        return {"binary": "vec_bit(?)", "int8": "vec_int8(?)", "float32": "?"}[self.scan]

    def _scan_sql(self) -> str:
        return f"INSERT INTO vec_scan(rowid, namespace, embedding) VALUES (?, ?, {self._scan_param()})"

    def add(self, node_id: str, namespace: str, vector: Any) -> None:
        """Store (or replace) the vector of ``node_id`` in ``namespace``."""
        self.add_many([(node_id, namespace, vector)])

    def add_many(self, items: Iterable[tuple[str, str, Any]]) -> int:
        """Store many vectors in one transaction. Returns how many were written."""
        prepared = []
        for node_id, namespace, vector in items:
            if not node_id or not isinstance(node_id, str):
                raise InvalidArgument("node_id must be a non-empty string")
            if not namespace or not isinstance(namespace, str):
                raise InvalidArgument("namespace must be a non-empty string")
            unit = self._unit(vector)
            prepared.append((node_id, namespace, item_blob(unit, self.rescore), scan_blob(unit, self.scan)))
        if not prepared:
            return 0
        insert_scan = self._scan_sql()
        with self._write() as conn:
            for node_id, namespace, item, scan in prepared:
                row = conn.execute("SELECT rowid FROM vec_items WHERE node_id = ?", (node_id,)).fetchone()
                if row is not None:
                    rowid = row[0]
                    # vec0 cannot move a row to another partition: delete and re-insert.
                    conn.execute("DELETE FROM vec_scan WHERE rowid = ?", (rowid,))
                    conn.execute(
                        "UPDATE vec_items SET namespace = ?, vector = ? WHERE rowid = ?", (namespace, item, rowid)
                    )
                else:
                    cur = conn.execute(
                        "INSERT INTO vec_items(node_id, namespace, vector) VALUES (?, ?, ?)", (node_id, namespace, item)
                    )
                    rowid = cur.lastrowid
                conn.execute(insert_scan, (rowid, namespace, scan))
            self._compact_log(conn)
        return len(prepared)

    def remove(self, node_id: str) -> bool:
        """Delete the vector of ``node_id`` (its bytes too). False if there was none."""
        with self._write() as conn:
            row = conn.execute("SELECT rowid FROM vec_items WHERE node_id = ?", (node_id,)).fetchone()
            if row is None:
                return False
            conn.execute("DELETE FROM vec_scan WHERE rowid = ?", (row[0],))
            conn.execute("DELETE FROM vec_items WHERE rowid = ?", (row[0],))
            self._compact_log(conn)
        return True

    def __contains__(self, node_id: object) -> bool:
        return self._conn().execute("SELECT 1 FROM vec_items WHERE node_id = ?", (node_id,)).fetchone() is not None

    def count(self, namespace: str | None = None) -> int:
        conn = self._conn()
        if namespace is None:
            return conn.execute("SELECT COUNT(*) FROM vec_items").fetchone()[0]
        return conn.execute("SELECT COUNT(*) FROM vec_items WHERE namespace = ?", (namespace,)).fetchone()[0]

    def checkpoint(self) -> bool:
        """Copy the WAL into the file and truncate it (after a purge). False if readers blocked it."""
        return self._db.checkpoint()

    def nodes_without_vectors(self, limit: int = 256) -> list[tuple[str, str, str]]:
        """(id, namespace, raw text) of live nodes of the store's file (its ``nodes`` table) that
        have no vector, by id, at most ``limit``: what a backfill embeds. [] in a file without
        a store."""
        conn = self._conn()
        has_nodes = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'nodes'").fetchone()
        if has_nodes is None:
            return []
        return conn.execute(
            "SELECT n.id, n.namespace, n.raw_text FROM nodes AS n LEFT JOIN vec_items AS v ON v.node_id = n.id "
            "WHERE v.node_id IS NULL AND n.purged_at IS NULL AND n.raw_text != '' ORDER BY n.id LIMIT ?",
            (limit,),
        ).fetchall()

    # ------------------------------------------------------------------ search

    def search(
        self,
        vector: Any,
        namespace: str,
        k: int = 10,
        candidate_ids: Iterable[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest nodes of ``namespace`` by cosine distance (0 = same direction, 2 = opposite).

        With ``candidate_ids`` only those nodes are scored (exactly, no scan); ids that have no
        vector or belong to another namespace are ignored.
        """
        if k < 1:
            raise InvalidArgument("k must be at least 1")
        unit = self._unit(vector)
        conn = self._conn()
        if candidate_ids is not None:
            ids = list(dict.fromkeys(candidate_ids))
            if not ids:
                return []
            # CROSS JOIN fixes the order: look each id up by its unique index. Left to itself the
            # planner may walk the whole namespace instead (0.5 s at 1M vectors, not 1 ms).
            rows = conn.execute(
                "SELECT i.node_id, i.vector FROM json_each(?) AS j CROSS JOIN vec_items AS i "
                "ON i.node_id = j.value WHERE i.namespace = ?",
                (json.dumps(ids), namespace),
            ).fetchall()
            return self._rank(unit, rows, k)
        # Hamming distance only shortlists; the exact scans need k, then the same rescoring.
        want = k * self.oversample if self.scan == "binary" else k
        hits = self._shortlist(conn, unit, namespace, want, k)
        if not hits:
            return []
        # The namespace again: a rowid freed and reused since the scan must not bring in another's node.
        rows = conn.execute(
            "SELECT i.node_id, i.vector FROM json_each(?) AS j CROSS JOIN vec_items AS i ON i.rowid = j.value "
            "WHERE i.namespace = ?",
            (json.dumps(hits), namespace),
        ).fetchall()
        return self._rank(unit, rows, k)

    def distances(self, vector: Any, namespace: str, node_ids: Sequence[str]) -> dict[str, float]:
        """The cosine distance of ``vector`` to each of ``node_ids`` that has a vector in
        ``namespace``, scored as ``search`` rescores (exact over the stored int8 rows)."""
        ids = list(dict.fromkeys(node_ids))
        return dict(self.search(vector, namespace, k=len(ids), candidate_ids=ids)) if ids else {}

    def catch_up(self, namespace: str) -> None:
        """``namespace``'s bits brought up to date with the file now, as a search's first step
        does (nothing without the cache): a search that follows finds nothing left to read."""
        if self._graphs is not None and self._graphs.catch_up(self._conn(), namespace):
            return
        if self.cache:
            self._cached(self._conn(), namespace)

    def quick(self, namespace: str) -> bool:
        """A graph answers ``namespace``'s searches (well under a millisecond at 100k vectors), not a scan."""
        return self._graphs is not None and self._graphs.ready(namespace)

    def wait_for_graph(self, namespace: str, timeout: float | None = None) -> bool:
        """Wait for ``namespace``'s graph if one is being built (benches: time what a server answers
        with once built); True when a graph answers it."""
        return self._graphs is not None and self._graphs.wait(namespace, timeout)

    def _shortlist(self, conn: Any, unit: np.ndarray, namespace: str, want: int, k: int | None = None) -> list[int]:
        """The rowids of the ``want`` nearest vectors of ``namespace`` by the scan's distance
        (Hamming for binary scans; among equal distances the smaller rowids, from the cache), or
        of about ``2 * k`` by cosine from the namespace's graph where it has one (graph.py)."""
        if self._graphs is not None:
            near = self._graphs.nearest(conn, namespace, unit, want if k is None else k)
            if near is not None:
                if namespace in self._bits:  # the graph answers from now on: the bits leave memory
                    with self._bits_lock:
                        self._bits.pop(namespace, None)
                return near
        if self.cache:
            bits = self._cached(conn, namespace)
            if self._graphs is not None:
                self._graphs.consider(namespace, bits.size)
            return bits.nearest(scan_blob(unit, self.scan), want)
        hits = conn.execute(
            f"SELECT rowid FROM vec_scan WHERE embedding MATCH {self._scan_param()} AND k = ? AND namespace = ?",
            (scan_blob(unit, self.scan), want, namespace),
        ).fetchall()
        return [h[0] for h in hits]

    # ------------------------------------------------------------------ the bits cache

    def _cached(self, conn: Any, namespace: str) -> Bits:
        """This namespace's bits, brought up to date with every change committed before the call.

        Each step is its own statement (no read transaction held) and replaying a change is
        idempotent (drop the rowid's slots, then add its current bits if it is still in the
        namespace), so a change that commits between the statements is at worst applied twice.
        The lock covers the catch-up only; the scan reads an immutable snapshot.
        """
        with self._bits_lock:
            bits = self._bits.get(namespace)
            floor, top = conn.execute(LOG_STATE).fetchone()
            top = max(top or 0, floor)
            if bits is not None and bits.seen >= floor and top > bits.seen:
                items = changed_items(conn, namespace, bits.seen)
                # Compaction after the first statement may have cut entries not yet seen.
                if conn.execute(LOG_STATE).fetchone()[0] > bits.seen or len(items) > max(4096, bits.size // 2):
                    bits = None
                else:
                    rows = conn.execute(
                        "SELECT i.rowid, s.embedding FROM json_each(?) AS j CROSS JOIN vec_items AS i"
                        " ON i.rowid = j.value CROSS JOIN vec_scan AS s ON s.rowid = i.rowid WHERE i.namespace = ?",
                        (json.dumps(items), namespace),
                    ).fetchall()
                    bits.apply(items, [r[0] for r in rows], [r[1] for r in rows])
            elif bits is not None and bits.seen < floor:
                bits = None
            if bits is None:
                rowids, blobs = self._load_bits(conn, namespace)
                bits = Bits(self.dim, rowids, blobs)
            bits.seen = top
            self._bits[namespace] = bits
            return bits.snapshot()

    def _load_bits(self, conn: Any, namespace: str) -> tuple[np.ndarray, bytes]:
        """Every (rowid, bits) of ``namespace``, sorted by rowid, read once when a namespace is
        first searched. Straight from ``vec0``'s chunk tables when they have the layout of
        sqlite-vec 0.1 (100k vectors: ~10-25 ms); through ``vec0`` otherwise (~0.8 s)."""
        import numpy as np

        width = self.dim // 8
        rows = self._chunk_rows(conn, namespace)
        ids: list[np.ndarray] = []
        vecs: list[np.ndarray] = []
        if rows is not None:
            for size, validity, rowids, vectors, _ in rows:
                ok = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[:size].astype(bool)
                ids.append(np.frombuffer(rowids, np.int64)[:size][ok])
                vecs.append(np.frombuffer(vectors, np.uint8).reshape(size, width)[ok])
            # vec_items counted in the same statement (snapshot): another count means another layout.
            count = rows[0][4] if rows else self.count(namespace)
            if sum(len(i) for i in ids) != count:
                rows = None
        if rows is None:
            pairs = conn.execute("SELECT rowid, embedding FROM vec_scan WHERE namespace = ?", (namespace,)).fetchall()
            ids = [np.array([p[0] for p in pairs], dtype=np.int64)]
            vecs = [np.frombuffer(b"".join(p[1] for p in pairs), np.uint8).reshape(len(pairs), width)]
        rowid = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        flat = np.concatenate(vecs) if vecs else np.zeros((0, width), np.uint8)
        order = np.argsort(rowid, kind="stable")
        return rowid[order], flat[order].tobytes()

    def _chunk_rows(self, conn: Any, namespace: str) -> list[tuple[int, bytes, bytes, bytes, int]] | None:
        """The namespace's ``vec0`` chunks (size, validity bitmap, rowids, vectors, and the
        namespace's vec_items count) read in one statement, or None when the shadow tables are
        not laid out as expected."""
        cols = {r[1] for r in conn.execute("PRAGMA table_info(vec_scan_chunks)")}
        vcols = {r[1] for r in conn.execute("PRAGMA table_info(vec_scan_vector_chunks00)")}
        if not {"chunk_id", "size", "partition00", "validity", "rowids"} <= cols or not {"rowid", "vectors"} <= vcols:
            return None
        rows = conn.execute(
            "SELECT c.size, c.validity, c.rowids, v.vectors,"
            " (SELECT COUNT(*) FROM vec_items WHERE namespace = ?) FROM vec_scan_chunks AS c"
            " JOIN vec_scan_vector_chunks00 AS v ON v.rowid = c.chunk_id WHERE c.partition00 = ?",
            (namespace, namespace),
        ).fetchall()
        width = self.dim // 8
        for size, validity, rowids, vectors, _ in rows:
            if len(validity) * 8 < size or len(rowids) != 8 * size or len(vectors) != width * size:
                return None
        return rows

    def _rank(self, unit: np.ndarray, rows: Sequence[tuple[str, bytes]], k: int) -> list[tuple[str, float]]:
        if not rows:
            return []
        import numpy as np

        mat = decode_items([r[1] for r in rows], self.rescore, self.dim)
        dist = 1.0 - mat @ unit
        ids = [r[0] for r in rows]
        # By distance, then id: the order ``sorted`` by (float(dist), id) gives, without a Python key per row.
        order = np.lexsort((np.array(ids), dist))[:k].tolist()
        return [(ids[i], max(0.0, float(dist[i]))) for i in order]

    def stats(self) -> dict[str, Any]:
        conn = self._conn()
        page_count = conn.execute("PRAGMA page_count").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        return {
            "vectors": self.count(),
            "namespaces": dict(
                conn.execute("SELECT namespace, COUNT(*) FROM vec_items GROUP BY namespace ORDER BY 1").fetchall()
            ),
            "dim": self.dim,
            "scan": self.scan,
            "rescore": self.rescore,
            "model": self.model,
            "db_bytes": page_count * page_size,
            "cached": self._cache_stats(),
            "graphs": self._graphs.stats() if self._graphs is not None else {},
        }

    def _cache_stats(self) -> dict[str, int]:
        """Vectors held in memory per namespace (as of each one's last search)."""
        with self._bits_lock:
            return {ns: bits.size for ns, bits in sorted(self._bits.items())}
