"""Full-text search on PostgreSQL: a generated ``tsvector`` per node, a GIN index, ``ts_rank``.

    search(conn, ["ledger", "queue"], namespace="default", limit=20)   # [SearchHit], best first

The query is the OR of the terms, each parsed by ``plainto_tsquery('english', term)`` (so any
text is just words: quotes, ``AND`` or ``NEAR(`` are never operators; stop words drop out),
combined with ``tsquery_or`` in SQL (``evomem_tsquery_or``, an aggregate of migration 0001).
Rows are ranked by ``ts_rank`` with the four weight classes of the ``search`` column
(``WEIGHTS``: change; tags; raw text and trigger; alternatives, consequences and summary) and
length normalisation 1 (divided by 1 + the log of the document's length). This is not FTS5's
BM25: PostgreSQL has no corpus statistics (idf) in its ranking, so a common word counts as much
as a rare one; ``bench`` measures the difference on the same corpora (docs/BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evomem.domain.model import SearchHit

#: ts_rank's weights, {D, C, B, A}: FTS5's column weights (0.75/0.5; 1.0; 1.5; 2.0) halved (ts_rank
#: refuses weights above 1).
WEIGHTS = "{0.3, 0.5, 0.75, 1.0}"
NORMALIZATION = 1

_QUERY = "(SELECT evomem_tsquery_or(plainto_tsquery('english', t)) FROM unnest(%s::text[]) AS t)"


def search(
    conn: Any, terms: Sequence[str], *, namespace: str, limit: int, active_only: bool = False
) -> list[SearchHit]:
    """The ``limit`` best notes of ``namespace`` for ``terms`` (OR-ed), best first; ties: older first."""
    words = [t for t in dict.fromkeys(terms) if any(ch.isalnum() for ch in t)]
    if not words or limit < 1:
        return []
    status = "n.status = 'active'" if active_only else "n.status != 'forgotten'"
    rows = conn.execute(
        f"WITH q AS (SELECT {_QUERY} AS q) "
        f"SELECT n.id, n.chain_root, ts_rank('{WEIGHTS}', n.search, q.q, {NORMALIZATION}) AS score "
        f"FROM q, nodes AS n WHERE numnode(q.q) > 0 AND n.namespace = %s AND n.search @@ q.q AND {status} "
        "ORDER BY score DESC, n.seq LIMIT %s",
        (words, namespace, limit),
    ).fetchall()
    return [SearchHit(node_id=r[0], chain_root=r[1], score=float(r[2])) for r in rows]
