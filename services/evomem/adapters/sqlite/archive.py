"""The SQLite store read and written whole (the ``Archive`` port), on a connection of its file.

export_records(conn)            # nodes (by rowid), offers, keys, chain changes, write audit, vector refs
import_records(conn, records)   # in the caller's write transaction, rows as they are
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from evomem.adapters.sqlite.codec import NODE_COLUMNS, NODE_SQL, node_to_row, row_to_node
from evomem.domain.archive import ChainChange, KeyRecord, Offer, Record, VectorRef
from evomem.domain.audit import AuditEntry
from evomem.domain.model import MemoryNode


def _has(conn: Any, table: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None
    )


def export_records(conn: Any) -> Iterator[Record]:
    for row in conn.execute(f"SELECT {NODE_SQL} FROM nodes ORDER BY rowid"):
        yield row_to_node(row)
    for r in conn.execute(
        "SELECT namespace, candidate_id, node_id, reason, confidence, position FROM offers "
        "ORDER BY candidate_id, node_id"
    ):
        yield Offer(*r)
    for r in conn.execute(
        "SELECT n.namespace, k.key_hash, k.node_id, k.text_hash, k.created_at FROM remember_keys k "
        "JOIN nodes n ON n.id = k.node_id ORDER BY k.created_at, k.key_hash"
    ):
        yield KeyRecord(*r)
    for r in conn.execute(
        "SELECT n.namespace, a.at, a.action, a.node_id, a.target_id, a.method, a.by, a.confidence, a.detail "
        "FROM link_audit a JOIN nodes n ON n.id = a.node_id ORDER BY a.seq"
    ):
        yield ChainChange(*r)
    for r in conn.execute(
        "SELECT at, identity, role, tool, namespace, ids, outcome, on_behalf_of, detail FROM write_audit ORDER BY seq"
    ):
        yield AuditEntry(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6], r[7], r[8])
    if _has(conn, "vec_items") and _has(conn, "vec_meta"):
        model = conn.execute("SELECT value FROM vec_meta WHERE key = 'model'").fetchone()
        for namespace, node_id in conn.execute("SELECT namespace, node_id FROM vec_items ORDER BY node_id"):
            yield VectorRef(namespace, node_id, model[0] if model else "")


def import_records(conn: Any, records: Sequence[Record]) -> None:
    marks = ",".join("?" * len(NODE_COLUMNS))
    for r in records:
        if isinstance(r, MemoryNode):
            conn.execute(f"INSERT INTO nodes ({NODE_SQL}) VALUES ({marks})", node_to_row(r))
        elif isinstance(r, Offer):
            conn.execute(
                "INSERT OR IGNORE INTO offers (candidate_id, node_id, namespace, reason, confidence, position) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (r.candidate_id, r.node_id, r.namespace, r.reason, r.confidence, r.position),
            )
        elif isinstance(r, KeyRecord):
            conn.execute(
                "INSERT OR IGNORE INTO remember_keys (key_hash, node_id, text_hash, created_at) VALUES (?, ?, ?, ?)",
                (r.key_hash, r.node_id, r.text_hash, r.created_at),
            )
        elif isinstance(r, ChainChange):
            conn.execute(
                "INSERT INTO link_audit (at, action, node_id, target_id, method, by, confidence, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (r.at, r.action, r.node_id, r.target_id, r.method, r.by, r.confidence, r.detail),
            )
        elif isinstance(r, AuditEntry):
            conn.execute(
                "INSERT INTO write_audit (at, identity, role, tool, namespace, ids, outcome, on_behalf_of, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (r.at, r.identity, r.role, r.tool, r.namespace, json.dumps(list(r.ids)), r.outcome, r.on_behalf_of,
                 r.detail),
            )  # fmt: skip
