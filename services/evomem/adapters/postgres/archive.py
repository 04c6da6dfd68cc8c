"""The PostgreSQL store read and written whole (the ``Archive`` port), on a transaction that sees
every namespace.

    export_records(conn)            # nodes (by seq), offers, keys, chain changes, write audit, vector refs
    import_records(conn, records)   # in the caller's transaction, rows as they are
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from evomem.adapters.postgres.chains import insert_node
from evomem.adapters.sqlite.codec import NODE_SQL, row_to_node
from evomem.domain.archive import ChainChange, KeyRecord, Offer, Record, VectorRef
from evomem.domain.audit import AuditEntry
from evomem.domain.model import MemoryNode


def export_records(conn: Any) -> Iterator[Record]:
    with conn.cursor(name="evomem_export") as cur:  # server-side: a large store is not read into memory
        cur.itersize = 2000
        cur.execute(f"SELECT {NODE_SQL} FROM nodes ORDER BY seq")
        for row in cur:
            yield row_to_node(row)
    for r in conn.execute(
        "SELECT namespace, candidate_id, node_id, reason, confidence, position FROM offers "
        "ORDER BY candidate_id, node_id"
    ):
        yield Offer(*r)
    for r in conn.execute(
        "SELECT namespace, key_hash, node_id, text_hash, created_at FROM remember_keys ORDER BY created_at, key_hash"
    ):
        yield KeyRecord(*r)
    for r in conn.execute(
        "SELECT namespace, at, action, node_id, target_id, method, by, confidence, detail FROM link_audit ORDER BY seq"
    ):
        yield ChainChange(*r)
    for r in conn.execute(
        "SELECT at, identity, role, tool, namespace, ids, outcome, on_behalf_of, detail FROM write_audit ORDER BY seq"
    ):
        yield AuditEntry(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6], r[7], r[8])
    for r in conn.execute("SELECT namespace, node_id, model FROM vectors ORDER BY node_id"):
        yield VectorRef(*r)


def import_records(conn: Any, records: Sequence[Record]) -> None:
    for r in records:
        if isinstance(r, MemoryNode):
            insert_node(conn, r)
        elif isinstance(r, Offer):
            conn.execute(
                "INSERT INTO offers (namespace, candidate_id, node_id, reason, confidence, position) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (r.namespace, r.candidate_id, r.node_id, r.reason, r.confidence, r.position),
            )
        elif isinstance(r, KeyRecord):
            conn.execute(
                "INSERT INTO remember_keys (namespace, key_hash, node_id, text_hash, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (r.namespace, r.key_hash, r.node_id, r.text_hash, r.created_at),
            )
        elif isinstance(r, ChainChange):
            conn.execute(
                "INSERT INTO link_audit (namespace, at, action, node_id, target_id, method, by, confidence, detail) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (r.namespace, r.at, r.action, r.node_id, r.target_id, r.method, r.by, r.confidence, r.detail),
            )
        elif isinstance(r, AuditEntry):
            conn.execute(
                "INSERT INTO write_audit (namespace, at, identity, role, tool, ids, outcome, on_behalf_of, detail) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (r.namespace, r.at, r.identity, r.role, r.tool, json.dumps(list(r.ids)), r.outcome, r.on_behalf_of,
                 r.detail),
            )  # fmt: skip
