"""Dependencies and ``needs_review`` on a connection, inside the write's transaction.

    refuse_cycle(conn, namespace, note, chain_root)       # a note joining chain_root: CycleError
    refuse_merge_cycle(conn, namespace, chains, head_id)  # a link merging two chains: CycleError
    flag_dependents(conn, namespace, replaced, chain)     # the chain's head was replaced: flag
    clear(conn, node_id)                                  # a review: the flag is gone
    naming(conn, namespace, ids)                          # the dependents that may name ids

The graph is the namespace's active notes that name dependencies (a partial index holds exactly
those, ``nodes_dependent``); the rules are ``evomem.domain.dependencies``'.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from evomem.adapters.sqlite.audit import record_change
from evomem.adapters.sqlite.conn import in_chunks
from evomem.domain import dependencies as deps
from evomem.domain.errors import CycleError
from evomem.domain.model import LinkProvenance, NewNote, ReviewFlag, now_ms

if TYPE_CHECKING:
    import sqlite3

_FLAG_COLUMNS = "needs_review_replaced, needs_review_replaced_by, needs_review_via, needs_review_flagged_at"
_GRAPH = (
    f"SELECT id, chain_root, relations, {_FLAG_COLUMNS} FROM nodes INDEXED BY nodes_dependent "
    "WHERE namespace = ? AND status = 'active' "
    "AND (instr(relations, '\"depends_on\"') > 0 OR instr(relations, '\"implements\"') > 0)"
)


def _flag(row: sqlite3.Row) -> ReviewFlag | None:
    if row["needs_review_replaced"] is None:
        return None
    return ReviewFlag(
        tuple(json.loads(row["needs_review_replaced"])),
        tuple(json.loads(row["needs_review_replaced_by"] or "[]")),
        tuple(json.loads(row["needs_review_via"] or "[]")),
        int(row["needs_review_flagged_at"] or 0),
    )


def graph(conn: sqlite3.Connection, namespace: str) -> list[deps.Dependent]:
    return _decoded(conn.execute(_GRAPH, (namespace,)))


def naming(conn: sqlite3.Connection, namespace: str, ids: Sequence[str]) -> list[deps.Dependent]:
    """The part of ``graph`` whose relations mention one of ``ids`` (a text match on the stored
    JSON, so only those rows are decoded): the candidates to depend on them."""
    out: dict[str, deps.Dependent] = {}
    for start in range(0, len(ids), 200):
        quoted = [json.dumps(i) for i in ids[start : start + 200]]
        sql = _GRAPH + " AND (" + " OR ".join(["instr(relations, ?) > 0"] * len(quoted)) + ")"
        out.update((d.node_id, d) for d in _decoded(conn.execute(sql, (namespace, *quoted))))
    return list(out.values())


def _decoded(rows: Iterable[sqlite3.Row]) -> list[deps.Dependent]:
    out = []
    for row in rows:
        named = deps.targets({k: tuple(v) for k, v in json.loads(row["relations"]).items()})
        if named:
            out.append(deps.Dependent(row["id"], row["chain_root"], named, _flag(row)))
    return out


def roots(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for chunk, marks in in_chunks(list(dict.fromkeys(ids))):
        out.update(conn.execute(f"SELECT id, chain_root FROM nodes WHERE id IN ({marks})", chunk).fetchall())
    return out


def versions(conn: sqlite3.Connection, chains: Iterable[str]) -> list[str]:
    """The ids of every version of ``chains``."""
    out: list[str] = []
    for chunk, marks in in_chunks(list(chains)):
        out.extend(r[0] for r in conn.execute(f"SELECT id FROM nodes WHERE chain_root IN ({marks})", chunk))
    return out


def _read(conn: sqlite3.Connection, namespace: str, extra: Iterable[str] = ()) -> tuple[list, dict[str, str]]:
    nodes = graph(conn, namespace)
    return nodes, roots(conn, [*extra, *(t for n in nodes for t in n.targets)])


def refuse_cycle(conn: sqlite3.Connection, namespace: str, note: NewNote, chain_root: str) -> None:
    """A note joining ``chain_root`` (it supersedes its head) may not depend on that chain, nor on
    one that depends on it."""
    named = deps.targets(note.relations)
    if not named:
        return
    nodes, chain_of = _read(conn, namespace, named)
    path = deps.cycle(named, {chain_root}, nodes, chain_of)
    if path is not None:
        raise CycleError(deps.cycle_message(deps.kinds_of(note.relations), path))


def refuse_merge_cycle(conn: sqlite3.Connection, namespace: str, chains: set[str], head_id: str) -> None:
    """Linking merges ``chains`` into one whose version in force is ``head_id``: its dependencies
    may not lead back into them."""
    row = conn.execute("SELECT relations, status FROM nodes WHERE id = ?", (head_id,)).fetchone()
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


def flag_dependents(conn: sqlite3.Connection, namespace: str, replaced: str, chain_root: str) -> list[str]:
    """``replaced`` (the version that was in force in ``chain_root``) was replaced: every active node
    that depends on the chain, directly or not, is flagged with it and the chain's head now. The
    ids flagged."""
    nodes = deps.reaching(chain_root, lambda chains: naming(conn, namespace, versions(conn, chains)))
    hit = deps.stale(chain_root, nodes, roots(conn, (t for n in nodes for t in n.targets)))
    if not hit:
        return []
    head = conn.execute(
        "SELECT id FROM nodes INDEXED BY nodes_one_head WHERE chain_root = ? AND superseded_by IS NULL", (chain_root,)
    ).fetchone()["id"]
    at = now_ms()
    by_id = {n.node_id: n for n in nodes}
    for node_id, via in hit.items():
        _write_flag(conn, node_id, deps.flagged(by_id[node_id].flag, replaced, head, via, at))
    return list(hit)


def _write_flag(conn: sqlite3.Connection, node_id: str, flag: ReviewFlag) -> None:
    conn.execute(
        "UPDATE nodes SET needs_review_replaced = ?, needs_review_replaced_by = ?, needs_review_via = ?, "
        "needs_review_flagged_at = ? WHERE id = ?",
        (
            json.dumps(list(flag.replaced)),
            json.dumps(list(flag.replaced_by)),
            json.dumps(list(flag.via)),
            flag.flagged_at,
            node_id,
        ),
    )


def inherit(conn: sqlite3.Connection, node_id: str, note: NewNote) -> None:
    """A new note built on a version already replaced, or on a flagged decision, starts flagged."""
    named = deps.targets(note.relations)
    if not named:
        return
    marks = ",".join("?" * len(named))
    rows = {
        r["id"]: r
        for r in conn.execute(
            f"SELECT id, chain_root, superseded_by, {_FLAG_COLUMNS} FROM nodes WHERE id IN ({marks})", named
        )
    }
    stale: list[tuple[str, str | None, ReviewFlag | None]] = []
    for t in named:
        row = rows.get(t)
        if row is None:
            continue
        head = None
        if row["superseded_by"] is not None:
            top = conn.execute(
                "SELECT id, status FROM nodes INDEXED BY nodes_one_head WHERE chain_root = ? AND superseded_by IS NULL",
                (row["chain_root"],),
            ).fetchone()
            head = top["id"] if top is not None and top["status"] == "active" else None
            if head is None:
                continue  # the chain was retracted: nothing in force to review against
        stale.append((t, head, _flag(row)))
    flag = deps.inherited(stale, now_ms())
    if flag is not None:
        _write_flag(conn, node_id, flag)


def unflag_restored(conn: sqlite3.Connection, namespace: str, version: str) -> None:
    """An unlink put ``version`` back in force: the flags that named it as replaced lose that entry."""
    rows = conn.execute(
        f"SELECT id, {_FLAG_COLUMNS} FROM nodes INDEXED BY nodes_needs_review "
        "WHERE namespace = ? AND needs_review_replaced IS NOT NULL AND instr(needs_review_replaced, ?) > 0",
        (namespace, version),
    ).fetchall()
    for row in rows:
        flag = deps.restored(_flag(row), version)
        if flag is None:
            conn.execute(
                "UPDATE nodes SET needs_review_replaced = NULL, needs_review_replaced_by = NULL, "
                "needs_review_via = NULL, needs_review_flagged_at = NULL WHERE id = ?",
                (row["id"],),
            )
        else:
            _write_flag(conn, row["id"], flag)


def clear(conn: sqlite3.Connection, node_id: str, by: str | None = None) -> bool:
    """The flag of ``node_id`` cleared (a review); whether it had one. Recorded in the link audit."""
    cur = conn.execute(
        "UPDATE nodes SET needs_review_replaced = NULL, needs_review_replaced_by = NULL, needs_review_via = NULL, "
        "needs_review_flagged_at = NULL WHERE id = ? AND needs_review_replaced IS NOT NULL",
        (node_id,),
    )
    if cur.rowcount:
        record_change(conn, "review", node_id, None, LinkProvenance(method="review", by=by))
    return cur.rowcount == 1
