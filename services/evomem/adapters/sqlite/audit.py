"""The store's two audit logs, as functions on a connection of its file.

- ``link_audit``: every change to a chain (link, unlink, forget, purge), for audit and for
  undoing a wrong link. ``record_change`` writes one row in the caller's transaction;
  ``link_audit`` reads a node's rows.
- ``write_audit``: every write call made with authentication on (the ``AuditLog`` port, through
  ``SQLiteStore.append_audit`` and ``audit_page``): who, which tool, which ids, when, how it
  ended. Never any note text, so a purge leaves nothing readable there.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.model import LinkProvenance, now_ms

if TYPE_CHECKING:
    import sqlite3


def record_change(
    conn: sqlite3.Connection,
    action: str,
    node_id: str,
    target_id: str | None,
    link: LinkProvenance | None,
    requested: str | None = None,
    detail: str | None = None,
) -> None:
    """One ``link_audit`` row: ``action`` on ``node_id`` (towards ``target_id``), with the link's
    provenance; a link re-targeted from the ``requested`` node to its chain's head says so."""
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


def link_audit(conn: sqlite3.Connection, node_id: str) -> list[dict[str, object]]:
    """Every recorded change to the links of ``node_id`` (as node or as target), oldest first."""
    rows = conn.execute(
        "SELECT seq, at, action, node_id, target_id, method, by, confidence, detail FROM link_audit "
        "WHERE node_id = ? OR target_id = ? ORDER BY seq",
        (node_id, node_id),
    ).fetchall()
    return [dict(r) for r in rows]


def append_audit(conn: sqlite3.Connection, entry: AuditEntry) -> None:
    """One ``write_audit`` row (in the caller's write transaction)."""
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


def audit_page(conn: sqlite3.Connection, query: AuditQuery) -> list[AuditEntry]:
    """The ``write_audit`` rows ``query`` selects, newest first, at most ``query.limit``."""
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
    rows = conn.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, query.limit)).fetchall()
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
