"""Dependencies and ``needs_review`` on a PostgreSQL connection, inside the write's transaction:
as ``adapters/sqlite/reviews.py`` (the rules are ``evomem.domain.dependencies``'), each query
naming its namespace; a flag is read again under a row lock before it grows (``FOR UPDATE``), so
two writers flagging one node at once both leave their entry."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from evomem.domain import dependencies as deps
from evomem.domain.errors import CycleError
from evomem.domain.model import NewNote, ReviewFlag, now_ms

_FLAG = "needs_review_replaced, needs_review_replaced_by, needs_review_via, needs_review_flagged_at"
_GRAPH = (
    f"SELECT id, chain_root, relations, {_FLAG} FROM nodes WHERE namespace = %s AND status = 'active' "
    "AND (strpos(relations, '\"depends_on\"') > 0 OR strpos(relations, '\"implements\"') > 0)"
)


def _flag(row: dict[str, Any]) -> ReviewFlag | None:
    if row["needs_review_replaced"] is None:
        return None
    return ReviewFlag(
        tuple(json.loads(row["needs_review_replaced"])),
        tuple(json.loads(row["needs_review_replaced_by"] or "[]")),
        tuple(json.loads(row["needs_review_via"] or "[]")),
        int(row["needs_review_flagged_at"] or 0),
    )


def _rows(conn: Any, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(sql, args).fetchall()


def one(conn: Any, sql: str, args: tuple[Any, ...]) -> dict[str, Any] | None:
    rows = _rows(conn, sql, args)
    return rows[0] if rows else None


def graph(conn: Any, namespace: str) -> list[deps.Dependent]:
    return _decoded(_rows(conn, _GRAPH, (namespace,)))


def naming(conn: Any, namespace: str, ids: Sequence[str]) -> list[deps.Dependent]:
    """The part of ``graph`` whose relations mention one of ``ids`` (a text match on the stored
    JSON, so only those rows are decoded): the candidates to depend on them."""
    if not ids:
        return []
    patterns = ["%" + json.dumps(i) + "%" for i in ids]
    return _decoded(_rows(conn, _GRAPH + " AND relations LIKE ANY(%s)", (namespace, patterns)))


def _decoded(rows: Iterable[dict[str, Any]]) -> list[deps.Dependent]:
    out = []
    for row in rows:
        named = deps.targets({k: tuple(v) for k, v in json.loads(row["relations"]).items()})
        if named:
            out.append(deps.Dependent(row["id"], row["chain_root"], named, _flag(row)))
    return out


def roots(conn: Any, namespace: str, ids: Iterable[str]) -> dict[str, str]:
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    rows = conn.execute(
        "SELECT id, chain_root FROM nodes WHERE namespace = %s AND id = ANY(%s)", (namespace, wanted)
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def versions(conn: Any, namespace: str, chains: Iterable[str]) -> list[str]:
    """The ids of every version of ``chains``."""
    wanted = list(chains)
    if not wanted:
        return []
    rows = conn.execute("SELECT id FROM nodes WHERE namespace = %s AND chain_root = ANY(%s)", (namespace, wanted))
    return [r[0] for r in rows.fetchall()]


def _read(conn: Any, namespace: str, extra: Iterable[str] = ()) -> tuple[list[deps.Dependent], dict[str, str]]:
    nodes = graph(conn, namespace)
    return nodes, roots(conn, namespace, [*extra, *(t for n in nodes for t in n.targets)])


def refuse_cycle(conn: Any, namespace: str, note: NewNote, chain_root: str) -> None:
    named = deps.targets(note.relations)
    if not named:
        return
    nodes, chain_of = _read(conn, namespace, named)
    path = deps.cycle(named, {chain_root}, nodes, chain_of)
    if path is not None:
        raise CycleError(deps.cycle_message(deps.kinds_of(note.relations), path))


def refuse_merge_cycle(conn: Any, namespace: str, chains: set[str], head_id: str) -> None:
    row = one(conn, "SELECT relations, status FROM nodes WHERE namespace = %s AND id = %s", (namespace, head_id))
    if row is None or row["status"] != "active":
        return
    relations = {k: tuple(v) for k, v in json.loads(row["relations"]).items()}
    named = deps.targets(relations)
    if not named:
        return
    nodes, chain_of = _read(conn, namespace, named)
    path = deps.cycle(named, chains, [n for n in nodes if n.chain_root not in chains], chain_of)
    if path is not None:
        raise CycleError(deps.cycle_message(deps.kinds_of(relations), path))


def flag_dependents(conn: Any, namespace: str, replaced: str, chain_root: str) -> list[str]:
    nodes = deps.reaching(chain_root, lambda chains: naming(conn, namespace, versions(conn, namespace, chains)))
    hit = deps.stale(chain_root, nodes, roots(conn, namespace, (t for n in nodes for t in n.targets)))
    if not hit:
        return []
    head = one(
        conn,
        "SELECT id FROM nodes WHERE namespace = %s AND chain_root = %s AND superseded_by IS NULL",
        (namespace, chain_root),
    )
    assert head is not None
    at = now_ms()
    for node_id in sorted(hit):  # a fixed order: two writers lock the same rows without a deadlock
        row = one(conn, f"SELECT {_FLAG} FROM nodes WHERE namespace = %s AND id = %s FOR UPDATE", (namespace, node_id))
        if row is None:  # pragma: no cover - read in this transaction
            continue
        flag = deps.flagged(_flag(row), replaced, head["id"], hit[node_id], at)
        conn.execute(
            "UPDATE nodes SET needs_review_replaced = %s, needs_review_replaced_by = %s, needs_review_via = %s, "
            "needs_review_flagged_at = %s WHERE namespace = %s AND id = %s",
            (
                json.dumps(list(flag.replaced)),
                json.dumps(list(flag.replaced_by)),
                json.dumps(list(flag.via)),
                flag.flagged_at,
                namespace,
                node_id,
            ),
        )
    return list(hit)


def inherit(conn: Any, namespace: str, node_id: str, note: NewNote) -> None:
    """As ``adapters/sqlite/reviews.inherit``: a new note built on a replaced version, or on a
    flagged decision, starts flagged."""
    named = deps.targets(note.relations)
    if not named:
        return
    rows = {
        r["id"]: r
        for r in _rows(
            conn,
            f"SELECT id, chain_root, superseded_by, {_FLAG} FROM nodes WHERE namespace = %s AND id = ANY(%s)",
            (namespace, list(named)),
        )
    }
    stale: list[tuple[str, str | None, ReviewFlag | None]] = []
    for t in named:
        row = rows.get(t)
        if row is None:
            continue
        head = None
        if row["superseded_by"] is not None:
            top = one(
                conn,
                "SELECT id, status FROM nodes WHERE namespace = %s AND chain_root = %s AND superseded_by IS NULL",
                (namespace, row["chain_root"]),
            )
            head = top["id"] if top is not None and top["status"] == "active" else None
            if head is None:
                continue
        stale.append((t, head, _flag(row)))
    flag = deps.inherited(stale, now_ms())
    if flag is not None:
        conn.execute(
            "UPDATE nodes SET needs_review_replaced = %s, needs_review_replaced_by = %s, needs_review_via = %s, "
            "needs_review_flagged_at = %s WHERE namespace = %s AND id = %s",
            (
                json.dumps(list(flag.replaced)),
                json.dumps(list(flag.replaced_by)),
                json.dumps(list(flag.via)),
                flag.flagged_at,
                namespace,
                node_id,
            ),
        )


def unflag_restored(conn: Any, namespace: str, version: str) -> None:
    """As ``adapters/sqlite/reviews.unflag_restored``: an unlink put ``version`` back in force."""
    rows = _rows(
        conn,
        f"SELECT id, {_FLAG} FROM nodes WHERE namespace = %s AND needs_review_replaced IS NOT NULL "
        "AND strpos(needs_review_replaced, %s) > 0 FOR UPDATE",
        (namespace, version),
    )
    for row in rows:
        flag = deps.restored(_flag(row), version)
        values = (
            (None, None, None, None)
            if flag is None
            else (
                json.dumps(list(flag.replaced)),
                json.dumps(list(flag.replaced_by)),
                json.dumps(list(flag.via)),
                flag.flagged_at,
            )
        )
        conn.execute(
            "UPDATE nodes SET needs_review_replaced = %s, needs_review_replaced_by = %s, needs_review_via = %s, "
            "needs_review_flagged_at = %s WHERE namespace = %s AND id = %s",
            (*values, namespace, row["id"]),
        )


def clear(conn: Any, namespace: str, node_id: str, by: str | None = None) -> bool:
    cur = conn.execute(
        "UPDATE nodes SET needs_review_replaced = NULL, needs_review_replaced_by = NULL, needs_review_via = NULL, "
        "needs_review_flagged_at = NULL WHERE namespace = %s AND id = %s AND needs_review_replaced IS NOT NULL",
        (namespace, node_id),
    )
    if cur.rowcount:  # one link_audit row, as chains.record_change writes them
        conn.execute(
            "INSERT INTO link_audit (namespace, at, action, node_id, target_id, method, by, confidence, detail) "
            "VALUES (%s, %s, 'review', %s, NULL, 'review', %s, NULL, NULL)",
            (namespace, now_ms(), node_id, by),
        )
    return cur.rowcount == 1
