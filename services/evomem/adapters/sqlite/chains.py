"""Chains: the writes that change them, and the check of their invariants, on a connection.

    earlier(conn, note, key_hash, text_hash, window_ms, now)   # an earlier call's node, if any
    insert_row(conn, node_id, created, note, ex, supersedes, link)
    attach(conn, node_id, supersedes, link)                    # link node_id's chain after a head
    detach(conn, node_id, by=...)                              # undo a link: the previous version
    broken_invariants(conn)                                    # what the schema should make impossible

Chains are enforced by the schema, not only by this code (schema.py): a node is superseded by
at most one node and a chain has exactly one head. Every write here runs inside
``BEGIN IMMEDIATE`` (``SQLiteStore``'s ``_write``): the write lock is taken before the head is
read, so two writers superseding the same head serialise and the second re-targets to the new
head (``head_for_link``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from evomem.adapters.sqlite import reviews
from evomem.adapters.sqlite.audit import record_change
from evomem.adapters.sqlite.codec import NODE_COLUMNS, NODE_SQL, link_to_columns, node_to_row
from evomem.domain.errors import (
    Conflict,
    CycleError,
    Forgotten,
    InvalidArgument,
    NamespaceMismatch,
    NotFound,
    NotHead,
    Purged,
)
from evomem.domain.model import (
    Extraction,
    InsertOutcome,
    LinkProvenance,
    NewNote,
    Status,
    id_floor,
    now_ms,
)
from evomem.domain.remember import new_node

if TYPE_CHECKING:
    import sqlite3


def assign(columns: dict[str, object]) -> str:
    """``a = ?, b = ?`` for an UPDATE of ``columns`` (names from the node codec, never user text)."""
    return ", ".join(f"{name} = ?" for name in columns)


def earlier(
    conn: sqlite3.Connection,
    note: NewNote,
    key_hash: str | None,
    text_hash: str,
    dedupe_window_ms: int,
    now: int,
) -> tuple[str, InsertOutcome] | None:
    """The node an earlier call stored for this one (by key, or by the dedupe window)."""
    if key_hash is not None:
        row = conn.execute("SELECT node_id, text_hash FROM remember_keys WHERE key_hash = ?", (key_hash,)).fetchone()
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


def insert_row(
    conn: sqlite3.Connection,
    node_id: str,
    created: int,
    note: NewNote,
    ex: Extraction | None,
    supersedes: str | None,
    link: LinkProvenance | None,
    *,
    if_head: bool = False,
) -> None:
    """Store ``note`` as node ``node_id``: a chain of its own, or the new head of the chain of
    ``supersedes`` (re-targeted to that chain's head); its offers; the link's audit row."""
    chain_root, version, prev = node_id, 1, None
    if supersedes is not None:
        head = head_for_link(conn, supersedes, note.namespace)
        if if_head and head["id"] != supersedes:  # under the write lock: no writer can slip in between
            raise NotHead(supersedes, head["id"], head["version"])
        prev = head["id"]
        chain_root, version = head["chain_root"], head["version"] + 1
        reviews.refuse_cycle(conn, note.namespace, note, chain_root)
        retire_head(conn, head["id"], node_id)
    node = new_node(
        node_id, created, note, ex, link, supersedes=supersedes, prev=prev, chain_root=chain_root, version=version
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
        record_change(conn, "link", node_id, prev, link, requested=supersedes)
    if prev is not None:
        reviews.flag_dependents(conn, note.namespace, prev, chain_root)
    reviews.inherit(conn, node_id, note)


def attach(conn: sqlite3.Connection, node_id: str, supersedes: str, link: LinkProvenance) -> None:
    """Link the whole chain of ``node_id``, from its root, after the head of the chain of
    ``supersedes``: versions renumbered after the head's, the root's offers dropped."""
    row = conn.execute(
        "SELECT id, namespace, chain_root, version, supersedes, purged_at, status FROM nodes WHERE id = ?",
        (node_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no node with id {node_id}")
    if row["purged_at"] is not None:
        raise Purged(f"node {node_id} was purged; it cannot be linked")
    head = head_for_link(conn, supersedes, row["namespace"])
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
    retire_head(conn, head["id"], root["id"])
    # Move versions out of the way first so (chain_root, version) stays unique.
    conn.execute(
        "UPDATE nodes SET chain_root = ?, version = version + ? WHERE chain_root = ?",
        (head["chain_root"], offset, row["chain_root"]),
    )
    made = replace(link, requested_id=supersedes if supersedes != head["id"] else None, created_at=now_ms())
    cols = link_to_columns(made)
    conn.execute(
        f"UPDATE nodes SET supersedes = ?, {assign(cols)}, possible_supersedes = '[]' WHERE id = ?",
        (head["id"], *cols.values(), root["id"]),
    )
    conn.execute("DELETE FROM offers WHERE node_id = ?", (root["id"],))  # confirmed: no longer a guess
    record_change(conn, "link", root["id"], head["id"], link, requested=supersedes)
    new_head = conn.execute(
        "SELECT id FROM nodes INDEXED BY nodes_one_head WHERE chain_root = ? AND superseded_by IS NULL",
        (head["chain_root"],),
    ).fetchone()["id"]
    reviews.refuse_merge_cycle(conn, row["namespace"], {head["chain_root"]}, new_head)
    reviews.flag_dependents(conn, row["namespace"], head["id"], head["chain_root"])


def detach(conn: sqlite3.Connection, node_id: str, *, by: str | None) -> str:
    """Undo the link from ``node_id`` to the version it superseded; returns that version's id.

    The previous version becomes the head of its chain again (active unless it was
    forgotten); ``node_id`` and any versions after it become a chain of their own.
    The link's provenance is kept in the audit log.
    """
    row = conn.execute(
        "SELECT id, namespace, chain_root, version, supersedes, link_method, link_by, link_confidence, purged_at "
        "FROM nodes WHERE id = ?",
        (node_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no node with id {node_id}")
    if row["supersedes"] is None:
        raise InvalidArgument(f"node {node_id} supersedes nothing; there is no link to undo")
    prev_id: str = row["supersedes"]
    prev = conn.execute("SELECT status, forgotten_at FROM nodes WHERE id = ?", (prev_id,)).fetchone()
    offset = row["version"] - 1
    # Detach first: the new chain (node_id and its successors) is re-rooted at node_id,
    # then the previous version becomes a head again.
    conn.execute(
        "UPDATE nodes SET chain_root = ?, version = version - ? WHERE chain_root = ? AND version >= ?",
        (node_id, offset, row["chain_root"], row["version"]),
    )
    cols = link_to_columns(None)
    conn.execute(f"UPDATE nodes SET supersedes = NULL, {assign(cols)} WHERE id = ?", (*cols.values(), node_id))
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
    reviews.unflag_restored(conn, row["namespace"], prev_id)
    return prev_id


def head_for_link(conn: sqlite3.Connection, target_id: str, namespace: str) -> sqlite3.Row:
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


def retire_head(conn: sqlite3.Connection, head_id: str, successor_id: str) -> None:
    """``head_id`` is superseded by ``successor_id`` (a ``Conflict`` if it stopped being a head)."""
    cur = conn.execute(  # a replaced version needs no review any more: its flag goes
        "UPDATE nodes SET superseded_by = ?, "
        "status = CASE WHEN status = 'active' THEN 'superseded' ELSE status END, "
        "needs_review_replaced = NULL, needs_review_replaced_by = NULL, needs_review_via = NULL, "
        "needs_review_flagged_at = NULL WHERE id = ? AND superseded_by IS NULL",
        (successor_id, head_id),
    )
    if cur.rowcount != 1:  # pragma: no cover - the write lock makes this unreachable
        raise Conflict(f"node {head_id} stopped being the head of its chain; retry")


def broken_invariants(conn: sqlite3.Connection) -> list[str]:
    """Every broken chain invariant, as text. Empty means healthy."""
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
