"""Reading ``vec_log``, the vectors' change log, as the in-memory copies that follow it do: the bits
(index.py) and the HNSW graphs (graph.py). The log, its triggers and its compaction are index.py's
(``_create_log``, ``_compact_log``)."""

from __future__ import annotations

from typing import Any

#: ``(log_floor, MAX(seq))``: up to which position entries are gone (compaction), and the newest one.
LOG_STATE = (
    "SELECT (SELECT CAST(value AS INTEGER) FROM vec_meta WHERE key = 'log_floor'), (SELECT MAX(seq) FROM vec_log)"
)


def changed_items(conn: Any, namespace: str, seen: int) -> list[int]:
    """The ``vec_items`` rowids of ``namespace`` logged after position ``seen``, each once."""
    rows = conn.execute("SELECT DISTINCT item FROM vec_log WHERE namespace = ? AND seq > ?", (namespace, seen))
    return [r[0] for r in rows]
