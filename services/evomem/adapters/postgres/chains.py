"""Chains on PostgreSQL: the writes that change them, under an advisory lock on each chain.

    earlier(conn, note, key_hash, text_hash, window_ms, now)   # an earlier call's node, if any
    insert_row(conn, node_id, created, note, ex, supersedes, link)
    attach(conn, node_id, supersedes, link)                    # link node_id's chain after a head
    detach(conn, node_id, by=...)                              # undo a link: the previous version
    broken_invariants(conn)                                    # what the schema should make impossible

The same writes as ``adapters/sqlite/chains.py``, for many writers on several machines: SQLite
serialises every writer on the file; here each write locks the chains it changes with
``pg_advisory_xact_lock`` (released when the transaction ends) and reads the head only then,
so two storage replicas superseding one head serialise and the second re-targets to the head
the first created. A chain's root can change under a writer that has not locked it yet (a
``link`` moves a whole chain), so ``lock_chain`` locks, reads the root again, and follows it.
The schema is the backstop (``schema.py``): one head per chain (a partial unique index),
versions unique per chain, a node superseded once; a write that would break one fails whole.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from evomem.adapters.postgres import reviews
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
    MemoryNode,
    NewNote,
    Status,
    id_floor,
    now_ms,
)
from evomem.domain.remember import new_node


def one(conn: Any, sql: str, args: tuple[Any, ...] = ()) -> dict[str, Any] | None:
    """The first row of ``sql`` as a dict (None: no row)."""
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(sql, args).fetchone()


def lock(conn: Any, *keys: str) -> None:
    """Transaction-scoped advisory locks on ``keys``, in a fixed order (no deadlock between two
    writers that lock the same chains)."""
    for key in sorted(set(keys)):
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))


def lock_chain(conn: Any, node_id: str) -> dict[str, Any] | None:
    """Lock the chain of ``node_id`` and return the node (id, namespace, chain_root, version,
    status, purged_at, supersedes, link columns) as it is under the lock; None: no such node."""
    locked: set[str] = set()
    while True:
        row = one(
            conn,
            "SELECT id, namespace, chain_root, version, status, purged_at, supersedes, link_method, link_by, "
            "link_confidence FROM nodes WHERE id = %s",
            (node_id,),
        )
        if row is None:
            return None
        key = f"chain:{row['namespace']}:{row['chain_root']}"
        if key in locked:
            return row
        lock(conn, key)
        locked.add(key)


def earlier(
    conn: Any,
    note: NewNote,
    key_hash: str | None,
    text_hash: str,
    dedupe_window_ms: int,
    now: int,
) -> tuple[str, InsertOutcome] | None:
    """The node an earlier call stored for this one (by key, or by the dedupe window), under a
    lock on the key (or the text) so that two concurrent retries agree."""
    if key_hash is not None:
        lock(conn, f"key:{note.namespace}:{key_hash}")
        row = one(
            conn,
            "SELECT node_id, text_hash FROM remember_keys WHERE namespace = %s AND key_hash = %s",
            (note.namespace, key_hash),
        )
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
    lock(conn, f"text:{note.namespace}:{text_hash}")
    row = one(
        conn,
        "SELECT id FROM nodes WHERE namespace = %s AND id >= %s AND scope IS NOT DISTINCT FROM %s "
        "AND status = 'active' AND raw_text = %s ORDER BY id DESC LIMIT 1",
        (note.namespace, id_floor(max(0, now - dedupe_window_ms)), note.scope, note.raw_text),
    )
    return (row["id"], InsertOutcome.DUPLICATE) if row is not None else None


def insert_row(
    conn: Any,
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
    ``supersedes`` (re-targeted to that chain's head, under the chain's lock); its offers; the
    link's audit row."""
    chain_root, version, prev = node_id, 1, None
    if supersedes is not None:
        head = head_for_link(conn, supersedes, note.namespace)
        if if_head and head["id"] != supersedes:  # under the write lock: no writer can slip in between
            raise NotHead(supersedes, head["id"], head["version"])
        prev = head["id"]
        chain_root, version = head["chain_root"], head["version"] + 1
        reviews.refuse_cycle(conn, note.namespace, note, chain_root)
        retire_head(conn, note.namespace, head["id"], node_id)
    node = new_node(
        node_id, created, note, ex, link, supersedes=supersedes, prev=prev, chain_root=chain_root, version=version
    )
    insert_node(conn, node)
    if note.possible_supersedes:
        why = dict(zip(note.possible_supersedes, note.possible_supersedes_why, strict=False))
        conf = dict(zip(note.possible_supersedes, note.possible_supersedes_confidence, strict=False))
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO offers (namespace, candidate_id, node_id, reason, confidence, position) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [
                    (note.namespace, c, node_id, why.get(c) or None, conf.get(c), k)
                    for k, c in enumerate(note.possible_supersedes)
                    if c != node_id
                ],
            )
    if prev is not None and link is not None:
        record_change(conn, note.namespace, "link", node_id, prev, link, requested=supersedes)
    if prev is not None:
        reviews.flag_dependents(conn, note.namespace, prev, chain_root)
    reviews.inherit(conn, note.namespace, node_id, note)


INSERT_NODE_SQL = f"INSERT INTO nodes ({NODE_SQL}) VALUES ({', '.join(['%s'] * len(NODE_COLUMNS))})"


def insert_node(conn: Any, node: MemoryNode) -> None:
    """One ``nodes`` row for ``node``, every column as given (an import keeps ids, chains, times)."""
    conn.execute(INSERT_NODE_SQL, node_to_row(node))


def attach(conn: Any, node_id: str, supersedes: str, link: LinkProvenance) -> None:
    """Link the whole chain of ``node_id``, from its root, after the head of the chain of
    ``supersedes``: versions renumbered after the head's, the root's offers dropped."""
    row = lock_chain(conn, node_id)
    if row is None:
        raise NotFound(f"no node with id {node_id}")
    if row["purged_at"] is not None:
        raise Purged(f"node {node_id} was purged; it cannot be linked")
    head = head_for_link(conn, supersedes, row["namespace"])
    ns = row["namespace"]
    if head["chain_root"] == row["chain_root"]:
        raise CycleError(
            f"node {node_id} and node {supersedes} are already in the same chain "
            f"(root {row['chain_root']}); linking them would create a cycle"
        )
    root = one(
        conn,
        "SELECT id, version FROM nodes WHERE namespace = %s AND chain_root = %s AND version = 1",
        (ns, row["chain_root"]),
    )
    assert root is not None
    offset = head["version"]
    retire_head(conn, ns, head["id"], root["id"])
    conn.execute(
        "UPDATE nodes SET chain_root = %s, version = version + %s WHERE namespace = %s AND chain_root = %s",
        (head["chain_root"], offset, ns, row["chain_root"]),
    )
    made = replace(link, requested_id=supersedes if supersedes != head["id"] else None, created_at=now_ms())
    cols = link_to_columns(made)
    conn.execute(
        f"UPDATE nodes SET supersedes = %s, {assign(cols)}, possible_supersedes = '[]' "
        "WHERE namespace = %s AND id = %s",
        (head["id"], *cols.values(), ns, root["id"]),
    )
    conn.execute("DELETE FROM offers WHERE namespace = %s AND node_id = %s", (ns, root["id"]))
    record_change(conn, ns, "link", root["id"], head["id"], link, requested=supersedes)
    new_head = one(
        conn,
        "SELECT id FROM nodes WHERE namespace = %s AND chain_root = %s AND superseded_by IS NULL",
        (ns, head["chain_root"]),
    )
    assert new_head is not None
    reviews.refuse_merge_cycle(conn, ns, {head["chain_root"]}, new_head["id"])
    reviews.flag_dependents(conn, ns, head["id"], head["chain_root"])


def detach(conn: Any, node_id: str, *, by: str | None) -> str:
    """Undo the link from ``node_id`` to the version it superseded; returns that version's id:
    it is the head of its chain again, ``node_id`` and its successors a chain of their own."""
    row = lock_chain(conn, node_id)
    if row is None:
        raise NotFound(f"no node with id {node_id}")
    if row["supersedes"] is None:
        raise InvalidArgument(f"node {node_id} supersedes nothing; there is no link to undo")
    ns, prev_id = row["namespace"], row["supersedes"]
    prev = one(conn, "SELECT status FROM nodes WHERE namespace = %s AND id = %s", (ns, prev_id))
    offset = row["version"] - 1
    conn.execute(
        "UPDATE nodes SET chain_root = %s, version = version - %s "
        "WHERE namespace = %s AND chain_root = %s AND version >= %s",
        (node_id, offset, ns, row["chain_root"], row["version"]),
    )
    cols = link_to_columns(None)
    conn.execute(
        f"UPDATE nodes SET supersedes = NULL, {assign(cols)} WHERE namespace = %s AND id = %s",
        (*cols.values(), ns, node_id),
    )
    conn.execute(
        "UPDATE nodes SET superseded_by = NULL, "
        "status = CASE WHEN forgotten_at IS NULL THEN 'active' ELSE 'forgotten' END "
        "WHERE namespace = %s AND id = %s",
        (ns, prev_id),
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
        "INSERT INTO link_audit (namespace, at, action, node_id, target_id, method, by, confidence, detail) "
        "VALUES (%s, %s, 'unlink', %s, %s, %s, %s, NULL, %s)",
        (ns, now_ms(), node_id, prev_id, row["link_method"], by, detail),
    )
    reviews.unflag_restored(conn, ns, prev_id)
    return prev_id


def head_for_link(conn: Any, target_id: str, namespace: str) -> dict[str, Any]:
    """The head a new link must attach to, read under the lock of the target's chain, with every
    check that protects the chain."""
    target = lock_chain(conn, target_id)
    if target is None:
        raise NotFound(f"supersedes: no node with id {target_id}")
    if target["namespace"] != namespace:
        raise NamespaceMismatch(
            f"supersedes: node {target_id} is in namespace {target['namespace']!r}, "
            f"not {namespace!r}; a decision can only replace one in its own namespace"
        )
    if target["purged_at"] is not None:
        raise Purged(f"supersedes: node {target_id} was purged; name a live node of that chain")
    head = one(
        conn,
        "SELECT id, chain_root, version, status FROM nodes "
        "WHERE namespace = %s AND chain_root = %s AND superseded_by IS NULL",
        (namespace, target["chain_root"]),
    )
    if head is None:  # pragma: no cover - prevented by the schema and the lock
        raise Conflict(f"chain {target['chain_root']} has no head")
    if target["status"] == Status.FORGOTTEN and head["id"] == target_id:
        raise Forgotten(
            f"supersedes: node {target_id} was forgotten; remember the new decision without "
            "supersedes, or supersede a live version"
        )
    return head


def retire_head(conn: Any, namespace: str, head_id: str, successor_id: str) -> None:
    """``head_id`` is superseded by ``successor_id`` (a ``Conflict`` if it stopped being a head)."""
    cur = conn.execute(
        "UPDATE nodes SET superseded_by = %s, "  # a replaced version needs no review any more
        "status = CASE WHEN status = 'active' THEN 'superseded' ELSE status END, "
        "needs_review_replaced = NULL, needs_review_replaced_by = NULL, needs_review_via = NULL, "
        "needs_review_flagged_at = NULL WHERE namespace = %s AND id = %s AND superseded_by IS NULL",
        (successor_id, namespace, head_id),
    )
    if cur.rowcount != 1:  # pragma: no cover - the chain's lock makes this unreachable
        raise Conflict(f"node {head_id} stopped being the head of its chain; retry")


def assign(columns: dict[str, object]) -> str:
    """``a = %s, b = %s`` for an UPDATE of ``columns`` (names from the node codec, never user text)."""
    return ", ".join(f"{name} = %s" for name in columns)


def record_change(
    conn: Any,
    namespace: str,
    action: str,
    node_id: str,
    target_id: str | None,
    link: LinkProvenance | None,
    requested: str | None = None,
    detail: str | None = None,
) -> None:
    """One ``link_audit`` row, as ``adapters/sqlite/audit.record_change`` writes it."""
    if requested and requested != target_id:
        detail = (detail + "; " if detail else "") + f"re-targeted from {requested} to the head {target_id}"
    conn.execute(
        "INSERT INTO link_audit (namespace, at, action, node_id, target_id, method, by, confidence, detail) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            namespace,
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


def broken_invariants(conn: Any) -> list[str]:
    """Every broken chain invariant, as text. Empty means healthy."""
    problems: list[str] = []
    for (root,) in conn.execute(
        "SELECT chain_root FROM nodes GROUP BY namespace, chain_root "
        "HAVING count(*) FILTER (WHERE superseded_by IS NULL) != 1 OR min(version) != 1 OR max(version) != count(*)"
    ):
        problems.append(f"chain {root}: not exactly one head, or versions not 1..n")
    for (node_id,) in conn.execute(
        "SELECT a.id FROM nodes a JOIN nodes b ON b.namespace = a.namespace AND b.id = a.supersedes "
        "WHERE b.superseded_by IS DISTINCT FROM a.id OR b.chain_root != a.chain_root OR b.version + 1 != a.version"
    ):
        problems.append(f"node {node_id}: supersedes link disagrees with its predecessor")
    for (node_id,) in conn.execute("SELECT id FROM nodes WHERE superseded_by IS NOT NULL AND status = 'active'"):
        problems.append(f"node {node_id}: superseded but marked active")
    return problems
