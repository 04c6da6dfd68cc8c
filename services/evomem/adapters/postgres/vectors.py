"""Vectors in PostgreSQL with pgvector: one ``halfvec(384)`` per node, an HNSW index (cosine).

    index = PgVectorIndex(store.db, model=embedder.name)
    index.add_many([(node_id, "default", vector)])     # upsert, L2-normalised, in one transaction
    index.search(query, "default", k=10)                # [(node_id, cosine distance), ...] best first
    index.remove(node_id)
    index.nodes_without_vectors(256)                    # what a backfill embeds

What ``SemanticIndex`` (``adapters/vectors/semantic.py``) needs of a vector table, on the store's
own database: the vectors live beside the nodes, a purge deletes one in the purge's transaction
(``purge.erase_note``), and a storage replica keeps nothing of them in memory.

The search is pgvector's HNSW with iterative scans (``hnsw.iterative_scan = relaxed_order``, set
per transaction): an approximate index filtered by namespace (and by model) would otherwise
return fewer than ``k`` rows when the namespace holds a small part of the table; the iterative
scan goes on through the graph until ``k`` rows pass the filter (or ``hnsw.max_scan_tuples``).
Relaxed order lets it return them slightly out of order, so the ``k`` rows are sorted again by
their exact distance (a materialised CTE), as pgvector's documentation does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from evomem.adapters.postgres.db import ALL, Database
from evomem.adapters.postgres.schema import VECTOR_DIM
from evomem.domain.errors import InvalidArgument

#: HNSW's candidate list per query: at least this, or 2 k (pgvector's default is 40).
EF_SEARCH = 64


class PgVectorIndex:
    """Node vectors by namespace in the store's database. Thread-safe: the store's pool."""

    def __init__(self, db: Database, *, model: str, dim: int = VECTOR_DIM) -> None:
        if dim != VECTOR_DIM:
            raise InvalidArgument(f"the PostgreSQL store holds {VECTOR_DIM}-dimension vectors; this model has {dim}")
        self.db, self.model, self.dim = db, model, dim

    def _unit(self, vector: Any) -> Any:
        import numpy as np

        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        if v.shape[0] != self.dim:
            raise InvalidArgument(f"vector has {v.shape[0]} dimensions, the index has {self.dim}")
        norm = float(np.linalg.norm(v))
        if not np.all(np.isfinite(v)) or norm < 1e-12:
            raise InvalidArgument("vector has no direction (zeros, NaN or infinite values)")
        return v / norm

    def _value(self, vector: Any) -> Any:
        from pgvector import HalfVector

        return HalfVector(self._unit(vector))

    def add(self, node_id: str, namespace: str, vector: Any) -> None:
        self.add_many([(node_id, namespace, vector)])

    def add_many(self, items: Iterable[tuple[str, str, Any]]) -> int:
        """Store (or replace) many vectors in one transaction; how many were written. A node that
        is gone or purged meanwhile gets none."""
        rows = [(ns, node_id, self.model, self._value(v)) for node_id, ns, v in items]
        if not rows:
            return 0
        with self.db.transaction(ALL) as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO vectors (namespace, node_id, model, embedding) "
                "SELECT %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM nodes n "
                "WHERE n.namespace = %s AND n.id = %s AND n.purged_at IS NULL) "
                "ON CONFLICT (namespace, node_id) DO UPDATE SET model = excluded.model, embedding = excluded.embedding",
                [(ns, nid, m, e, ns, nid) for ns, nid, m, e in rows],
            )
        return len(rows)

    def remove(self, node_id: str) -> bool:
        with self.db.transaction(ALL) as conn:
            return conn.execute("DELETE FROM vectors WHERE node_id = %s", (node_id,)).rowcount > 0

    def count(self, namespace: str | None = None) -> int:
        with self.db.transaction(namespace or ALL) as conn:
            return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def nodes_without_vectors(self, limit: int = 256) -> list[tuple[str, str, str]]:
        """(id, namespace, raw text) of live nodes without a vector of this model, by id."""
        with self.db.transaction(ALL) as conn:
            return conn.execute(
                "SELECT n.id, n.namespace, n.raw_text FROM nodes n WHERE n.purged_at IS NULL AND n.raw_text != '' "
                "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.namespace = n.namespace AND v.node_id = n.id "
                "AND v.model = %s) ORDER BY n.id LIMIT %s",
                (self.model, limit),
            ).fetchall()

    def search(self, vector: Any, namespace: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` nearest nodes of ``namespace`` by cosine distance (0 = same direction)."""
        if k < 1:
            raise InvalidArgument("k must be at least 1")
        value = self._value(vector)
        with self.db.transaction(namespace) as conn:
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(EF_SEARCH, 2 * k)),))
            rows = conn.execute(
                "WITH nearest AS MATERIALIZED (SELECT node_id, embedding <=> %s AS d FROM vectors "
                "WHERE namespace = %s AND model = %s ORDER BY embedding <=> %s LIMIT %s) "
                "SELECT node_id, d FROM nearest ORDER BY d, node_id",
                (value, namespace, self.model, value, k),
            ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def catch_up(self, namespace: str) -> None:
        """Nothing: the index lives in the database, this process keeps no copy of it."""

    def quick(self, namespace: str) -> bool:
        """Never: a search is a round trip to the database, which a pool thread overlaps with BM25."""
        return False

    def distances(self, vector: Any, namespace: str, node_ids: Sequence[str]) -> dict[str, float]:
        """The cosine distance of ``vector`` to each of ``node_ids`` that has a vector in
        ``namespace`` (by id, no index scan)."""
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return {}
        value = self._value(vector)
        with self.db.transaction(namespace) as conn:
            rows = conn.execute(
                "SELECT node_id, embedding <=> %s FROM vectors WHERE namespace = %s AND model = %s "
                "AND node_id = ANY(%s)",
                (value, namespace, self.model, ids),
            ).fetchall()
        return {r[0]: max(0.0, float(r[1])) for r in rows}

    def close(self) -> None:
        """Nothing of its own: the store's pool closes with the store."""
