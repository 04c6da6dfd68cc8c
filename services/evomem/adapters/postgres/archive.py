"""The PostgreSQL store read and written whole (the ``Archive`` port), on a transaction that sees
every namespace.

    export_records(conn)            # nodes (by seq), offers, keys, chain changes, write audit, vector refs
    import_records(conn, records)   # in the caller's transaction, rows as they are, a batch per kind
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from evomem.adapters.postgres.chains import INSERT_NODE_SQL
from evomem.adapters.sqlite.codec import NODE_SQL, node_to_row, row_to_node
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
    """Each run of records of one kind sent as one ``executemany`` (psycopg's pipeline: one round
    trip per batch, not per row), in the order given, so a chain's versions go in version order."""
    with conn.cursor() as cur:
        for kind, run in itertools.groupby(records, key=type):
            if kind not in _INSERTS:  # a vector reference: the store embeds the text again
                continue
            sql, row = _INSERTS[kind]
            cur.executemany(sql, [row(r) for r in run])


def _audit_row(r: AuditEntry) -> tuple[Any, ...]:
    return (r.namespace, r.at, r.identity, r.role, r.tool, json.dumps(list(r.ids)), r.outcome, r.on_behalf_of, r.detail)


_INSERTS: dict[type, tuple[str, Callable[[Any], tuple[Any, ...]]]] = {
    MemoryNode: (INSERT_NODE_SQL, node_to_row),
    Offer: (
        "INSERT INTO offers (namespace, candidate_id, node_id, reason, confidence, position) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        lambda r: (r.namespace, r.candidate_id, r.node_id, r.reason, r.confidence, r.position),
    ),
    KeyRecord: (
        "INSERT INTO remember_keys (namespace, key_hash, node_id, text_hash, created_at) "
        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        lambda r: (r.namespace, r.key_hash, r.node_id, r.text_hash, r.created_at),
    ),
    ChainChange: (
        "INSERT INTO link_audit (namespace, at, action, node_id, target_id, method, by, confidence, detail) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        lambda r: (r.namespace, r.at, r.action, r.node_id, r.target_id, r.method, r.by, r.confidence, r.detail),
    ),
    AuditEntry: (
        "INSERT INTO write_audit (namespace, at, identity, role, tool, ids, outcome, on_behalf_of, detail) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        _audit_row,
    ),
}
