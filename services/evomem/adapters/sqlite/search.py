"""Full-text search over the store's FTS5 index: BM25 ranking, exact, pruned by each term's bound.

    search(conn, ["ledger", "queue"], namespace="default", limit=20)   # [SearchHit], best first

Functions on a connection of the store's file (``nodes`` and ``nodes_fts``, schema.py). The
query is the OR of the terms, each quoted (``fts_query``), ranked by FTS5's ``bm25`` with the
column weights ``FTS_WEIGHTS``. On a large table ``search`` prunes (``search_pruned``: each
term's stored largest contribution, ``term_bounds.py``, lets it leave out the parts of the matches
that cannot reach the ``limit``-th score; ``search_passes`` for a long query); on a small one a
long query leaves out the words half the rows have (``search_informative``).
Both answer what ranking every match (``ranked`` over the whole query) answers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evomem.adapters.sqlite import term_bounds
from evomem.adapters.sqlite.schema import FTS_COLUMNS, FTS_WEIGHTS
from evomem.domain.model import SearchHit

if TYPE_CHECKING:
    import sqlite3

__all__ = ["FTS_COLUMNS", "FTS_WEIGHTS", "search"]  # the columns and weights are schema's, named here too
#: The weighted BM25 of a row of ``nodes_fts``, as SQL: lower is better (``SearchHit.score`` is its negation).
BM25_SQL = "bm25(nodes_fts, " + ", ".join(str(w) for w in FTS_WEIGHTS) + ")"
#: ``search`` ranks this many times ``limit`` matches before it reads their nodes (see there).
RANK_FIRST = 4
#: FTS5's BM25 constants (fts5_aux.c): a term adds at most idf * (K1 + 1) to a row's score.
BM25_K1 = 1.2
#: ``search`` prunes (MaxScore) only an OR query whose terms match at least this many rows in all,
PRUNE_FROM = 2000
#: in a table of at least this many rows (``max(rowid)``). Below it ranking every match costs less:
#: the rarest terms' rows rarely reach ``limit`` or a ``theta`` the other terms' bounds stay under,
#: so the passes fail and add to the full ranking (a long note's 64 terms over 200 long records:
#: 65 ms pruned, 15 ms every match; 2,000 records: 60 and 100 ms).
PRUNE_ROWS = 1000
#: Below ``PRUNE_ROWS``, a query of at least this many terms (a long note's, the linker's candidate
#: search) first counts each term's rows, and ranks without the terms in half the rows or more
#: (``search_informative``). A short query ranks at once: counting would cost more than it saves.
COUNT_TERMS_FROM = 16


def fts_query(terms: Sequence[str]) -> str:
    """Quote every term, so FTS5 operators in user text are just words. OR-ed: BM25 ranks."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def term_rows(conn: sqlite3.Connection, terms: Sequence[str]) -> dict[str, int]:
    """How many rows of the FTS table have each term (as FTS5 counts them for its idf), in one
    statement per 100 terms."""
    out: dict[str, int] = {}
    for start in range(0, len(terms), 100):
        chunk = list(terms[start : start + 100])
        sql = "SELECT " + ", ".join("(SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?)" for _ in chunk)
        out.update(zip(chunk, conn.execute(sql, [fts_query([t]) for t in chunk]).fetchone(), strict=True))
    return out


def term_bound(rows: int, hits: int) -> float:
    """The most one query term can add to any row's BM25 score, as FTS5 computes it: its idf
    (``log((rows - hits + 0.5) / (hits + 0.5))``, at least 1e-6) times ``k1 + 1``, since
    ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg))`` stays below ``k1 + 1`` for any
    weighted frequency and length. ``rows`` may be an upper bound of the table's rows (the bound
    only grows with it), ``hits`` must not exceed the rows the term is in."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > hits else 0.0
    return (BM25_K1 + 1.0) * max(idf, 1e-6)


def search(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    *,
    namespace: str,
    limit: int,
    active_only: bool = False,
    prune: float = 1.0,
) -> list[SearchHit]:
    """The ``limit`` best notes of ``namespace`` by BM25 over ``terms`` (OR-ed), best first.

    Exact, and cheap on a large store: an OR query over common words matches a good part of
    the store, and scoring every match was most of a recall's cost (100k notes: 34k matches,
    ~40 of ~55 ms). Each term can add at most its stored bound to a score
    (``term_bounds.bounds``), so a row scores at most the bounds of the terms it has:
    ``search_pruned`` ranks the matches in parts split by the terms they have and leaves out
    the parts that cannot reach the ``limit``-th score (a long query: MaxScore passes,
    ``search_passes``). Every ranked expression scores a row exactly as the whole query does.

    ``prune`` (at least 1; 1, the default, is exact): a part is left out once its bounds cannot
    reach ``prune`` times the ``limit``-th score (``search_pruned``), not the score itself. Nothing
    asks for more than 1 since the bounds are tight (``evomem.app.candidates.CANDIDATE_PRUNE``)."""
    if not terms:
        return []
    status = "n.status = 'active'" if active_only else "n.status != 'forgotten'"
    rows = conn.execute("SELECT coalesce(max(rowid), 0) FROM nodes").fetchone()[0]  # >= the FTS rows
    if rows < PRUNE_ROWS:
        # Every match ranked, without counting each term's rows first: a term no row has adds
        # exactly 0.0 to every score (its frequency is 0), so the scores are those of the
        # query without it, and a query no row matches answers nothing.
        # A table of at most ``RANK_FIRST * limit`` rows: the first ranking held every match.
        unique = list(dict.fromkeys(terms))
        complete = rows <= RANK_FIRST * limit
        if len(unique) >= COUNT_TERMS_FROM:
            found = search_informative(conn, unique, rows, namespace, limit, status, complete)
            if found is not None:
                return found
        return ranked(conn, [fts_query(unique)], namespace, limit, status, complete=complete)
    unique = list(dict.fromkeys(terms))
    hits = term_bounds.counts(conn, unique) or term_rows(conn, unique)  # stored (exact), or counted
    # Rarest first, in every query this search runs: FTS5 sums the terms' parts in the
    # expression's order, so the same order gives the same float, and ties break alike.
    present = sorted((t for t, n in hits.items() if n), key=lambda t: (hits[t], t))
    if not present:
        return []
    if len(present) > 1 and sum(hits[t] for t in present) >= PRUNE_FROM:
        found = search_pruned(conn, present, hits, rows, namespace, limit, status, prune)
        if found is not None:
            return found
    return ranked(conn, [fts_query(present)], namespace, limit, status)


def search_informative(
    conn: sqlite3.Connection,
    terms: list[str],
    rows: int,
    namespace: str,
    limit: int,
    status: str,
    complete: bool,
) -> list[SearchHit] | None:
    """``search`` without the terms that are in half the rows or more; None when that cannot
    be shown to rank as the whole query does.

    Such a term has idf ``log((N - n + 0.5) / (n + 0.5)) <= 0``, which FTS5 raises to 1e-6, so
    it adds at most ``term_bound`` = 2.2e-6 to any score; yet it is the costly part of ranking
    long notes, since its position lists run through most of the table. (``rows``, at least
    the table's N, makes the test safe: ``n >= rows / 2`` implies ``n >= N / 2``.) Left out,
    every score drops by at most ``slack`` (their bounds summed) and a row with none of the
    other terms drops out. The answer is the whole query's when every gap between two of
    the ``limit + 1`` best rows (the last one included) and the ``limit``-th score exceed
    ``slack``; the scores returned are lower by at most ``slack`` (under 1.5e-4)."""
    hits = term_rows(conn, terms)
    common = [t for t in terms if hits[t] and 2 * hits[t] >= rows]
    kept = [t for t in terms if hits[t] and 2 * hits[t] < rows]
    if not common:
        return None
    if not kept:
        return None  # only common terms: rank them all
    slack = sum(term_bound(rows, hits[t]) for t in common)
    found = ranked(conn, [fts_query(kept)], namespace, limit + 1, status, complete=complete)
    scores = [h.score for h in found]
    if len(found) < limit or scores[limit - 1] <= slack:
        return None  # rows with only common terms could rank among the best
    if any(a - b <= slack for a, b in itertools.pairwise(scores)):
        return None  # a near tie the common terms could break either way
    return found[:limit]


#: ``search_pruned`` ranks a part whole, without splitting it further, once one of its required terms is
#: in at most this many rows (the part has no more: a split would cost more queries than it saves rows),
SMALL_PART = 500
#: or once it has visited this many parts (a long note's 64 terms could otherwise split 2^64 ways).
MAX_PARTS = 64
#: A query of more terms than this is searched by MaxScore passes instead (``search_passes``): every
#: ranked part reads all its terms' rows for their idf, and a long query's parts add up (dev-long's
#: 64-term queries at 100k notes, CPU ms mean / max: parts 22.6 / 115, passes above 12 terms 18.7 / 53).
PARTS_UP_TO = 12


def search_pruned(
    conn: sqlite3.Connection,
    present: list[str],
    hits: dict[str, int],
    rows: int,
    namespace: str,
    limit: int,
    status: str,
    prune: float = 1.0,
) -> list[SearchHit] | None:
    """``search`` over the matches split by which of the terms they have; None never (the type
    is ``search``'s shortcuts'). ``present``: the terms rarest first. ``rows``: at least the FTS
    table's rows (``max(rowid)`` of ``nodes``).

    Each term adds at most its bound to a score (``term_bounds.bounds``: its stored largest
    contribution to any row, for the idf and average length now), so the rows that have all of
    the terms ``req``, none of ``exc`` and any of ``free`` score at most the bounds of ``req`` and
    ``free`` summed. Depth first from every match (``req``, ``exc`` empty), a part splits on its
    first free term: the rows with it first (the best rows have many terms), then the rows without
    it. A part whose bound stays under the ``limit``-th score found so far is left out. A part is
    ranked whole when splitting cannot pay: its required terms alone reach that score (or none is
    known yet), it has at most ``SMALL_PART`` rows (counted, without ranking), or ``MAX_PARTS``
    parts were visited; then its rows with one of its free terms are ranked at once, and those
    with none at the end, if their bound (the required terms') still reaches the score. The parts
    partition the matches, so the kept best of the ranked ones are the answer (what ranking every
    match answers: the same floats, each expression naming every term of a row in ``present``'s
    order, a term a row lacks adding exactly 0.0; ties by rowid). On a bench note's candidate
    search at 100k notes: ~540 rows ranked (p50) of ~23,000 matches, where MaxScore passes over
    idf * (k1 + 1) bounds ranked 8,100. A query of more than ``PARTS_UP_TO`` terms goes through
    MaxScore passes instead (``search_passes``). ``prune`` above 1 raises the bar a left-out
    part's bound must stay under to ``prune`` times the ``limit``-th score: no longer exact
    (``search``)."""
    if conn.in_transaction:  # FTS5's averages in the file may lag this transaction's own writes
        bounds = {t: term_bound(rows, hits[t]) for t in present}
    else:
        bounds = term_bounds.bounds(conn, present, hits, rows)
    if len(present) > PARTS_UP_TO:
        return search_passes(conn, present, bounds, namespace, limit, status, prune)
    best: list[tuple[float, int, str, str]] = []  # (rank, rowid, id, chain_root): FTS5's rank, lower is better
    later: list[tuple[float, str]] = []  # (bound, expression): the parts' rows with none of their free terms
    parts = 0

    def bar() -> float:
        return -best[-1][0] * prune if len(best) >= limit else 0.0

    def take(matches: list[str]) -> None:
        nonlocal best
        best = sorted(best + _ranked_rows(conn, matches, namespace, limit, status))[:limit]

    def visit(req: list[str], exc: list[str], free: list[str]) -> None:
        nonlocal parts
        parts += 1
        if sum(bounds[t] for t in req) + sum(bounds[t] for t in free) < bar():
            return
        if not req:
            if not free:
                return
            if parts >= MAX_PARTS:  # every row with one of the free terms, none of exc
                take([f"({fts_query(free)}) NOT ({fts_query(exc)})" if exc else fts_query(free)])
                return
            visit([free[0]], exc, free[1:])
            visit([], [*exc, free[0]], free[1:])
            return
        core = " AND ".join(fts_query([t]) for t in req)
        if exc:
            core = f"({core}) NOT ({fts_query(exc)})"
        small = min(hits[t] for t in req) <= SMALL_PART
        if free and not small and parts < MAX_PARTS and sum(bounds[t] for t in req) < bar():
            size = conn.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (core,)).fetchone()[0]
            if size == 0:
                return
            if size > SMALL_PART:
                visit([*req, free[0]], exc, free[1:])
                visit(req, [*exc, free[0]], free[1:])
                return
        if not free:
            take([core])
            return
        take([f"({core}) AND ({fts_query(free)})"])
        later.append((sum(bounds[t] for t in req), f"({core}) NOT ({fts_query(free)})"))

    visit([], [], present)
    for bound, rest in sorted(later, reverse=True):
        if bound >= bar():
            take([rest])
    return [SearchHit(node_id=r[2], chain_root=r[3], score=-float(r[0])) for r in best]


def search_passes(
    conn: sqlite3.Connection,
    present: list[str],
    bounds: dict[str, float],
    namespace: str,
    limit: int,
    status: str,
    prune: float = 1.0,
) -> list[SearchHit]:
    """``search_pruned`` for a long query, by MaxScore passes (Turtle and Flood 1995): each expression
    names every term, so its ranking reads every term's rows for their idf, and a long query's
    many parts would read them many times. A pass adds the terms ``present[i:j]`` to the essential
    ones and ranks the rows that have one of them and none of ``present[:i]`` (``(N) NOT (O)``,
    split on the rest), whose best are kept; once the bounds of the terms after the essential ones
    stay under the ``limit``-th score (times ``prune``), no row left can reach it. The passes
    partition the matches: exact, as the parts are."""
    best: list[tuple[float, int, str, str]] = []
    i, j = 0, 1
    while True:
        old, new = fts_query(present[:i]), fts_query(present[i:j])
        fresh = f"({new}) NOT ({old})" if i else new
        if j >= len(present):  # every term essential: this last pass ranks the remaining matches
            best = sorted(best + _ranked_rows(conn, [fresh], namespace, limit, status))[:limit]
            return [SearchHit(node_id=r[2], chain_root=r[3], score=-float(r[0])) for r in best]
        rest = fts_query(present[j:])
        split = [f"({fresh}) AND ({rest})", f"({fresh}) NOT ({rest})"]
        best = sorted(best + _ranked_rows(conn, split, namespace, limit, status))[:limit]
        i = j
        if len(best) < limit:  # fewer rows than asked with those terms: the others' rows count
            j += 1
            continue
        theta = -best[-1][0] * prune  # every row left out scores at most the bounds of ``rest``
        if sum(bounds[t] for t in present[j:]) < theta:
            return [SearchHit(node_id=r[2], chain_root=r[3], score=-float(r[0])) for r in best]
        ordered = sorted(bounds.values(), reverse=True)  # the essential terms: those theta cannot do without
        j = max(j + 1, next((k for k in range(1, len(ordered)) if sum(ordered[k:]) < theta), len(ordered)))


def ranked(
    conn: sqlite3.Connection,
    matches: list[str],
    namespace: str,
    limit: int,
    status: str,
    *,
    complete: bool = False,
) -> list[SearchHit]:
    """The ``limit`` best rows matching any of ``matches`` (FTS expressions that no row
    matches twice) in ``namespace`` with ``status``, ranked by the weighted BM25.

    Rank first, then read the nodes of the best matches only: reading every matching row of
    ``nodes`` (for the namespace and status) cost as much as ranking them. Exact: when
    ``limit`` of the ``RANK_FIRST * limit`` best matches pass the filters, no match ranked
    below them can; otherwise (another namespace's notes, superseded or forgotten ones, or
    fewer matches than that) ``WIDEN`` times as many, then every match. ``complete``: the
    caller knows the table has at most ``RANK_FIRST * limit`` rows, so the first ranking
    already held every match."""
    rows = _ranked_rows(conn, matches, namespace, limit, status, complete=complete)
    return [SearchHit(node_id=r[2], chain_root=r[3], score=-float(r[0])) for r in rows]


#: ``ranked`` first ranks ``RANK_FIRST * limit`` matches, then this many times as many, then all.
WIDEN = 8


def _ranked_rows(
    conn: sqlite3.Connection,
    matches: list[str],
    namespace: str,
    limit: int,
    status: str,
    *,
    complete: bool = False,
) -> list[tuple[float, int, str, str]]:
    """``ranked``'s rows: (FTS5 rank, rowid, node id, chain root), best (lowest rank) first."""
    one = f"SELECT rowid, {BM25_SQL} AS rank FROM nodes_fts WHERE nodes_fts MATCH ?"
    best = " UNION ALL ".join(f"SELECT * FROM ({one} ORDER BY rank, rowid LIMIT ?)" for _ in matches)
    sql = (
        f"SELECT r.rank, r.rowid, n.id, n.chain_root FROM ({best} ORDER BY rank, rowid LIMIT ?) AS r "
        f"JOIN nodes n ON n.rowid = r.rowid WHERE n.namespace = ? AND {status} ORDER BY r.rank, r.rowid LIMIT ?"
    )
    first = RANK_FIRST * limit
    matched: int | None = None
    for ranked_first in (first, first * WIDEN):
        args: list[object] = [v for m in matches for v in (m, ranked_first)]
        rows = conn.execute(sql, (*args, ranked_first, namespace, limit)).fetchall()
        if len(rows) >= limit or complete:
            return [tuple(r) for r in rows]
        if matched is None:  # counted, not ranked: when every match was ranked, no wider ranking adds one
            count = "SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?"
            matched = sum(conn.execute(count, (m,)).fetchone()[0] for m in matches)
        if matched <= ranked_first:
            return [tuple(r) for r in rows]
    every = " UNION ALL ".join(one for _ in matches)
    rows = conn.execute(
        f"SELECT r.rank, r.rowid, n.id, n.chain_root FROM ({every}) AS r JOIN nodes n ON n.rowid = r.rowid "
        f"WHERE n.namespace = ? AND {status} ORDER BY r.rank, n.rowid LIMIT ?",
        (*matches, namespace, limit),
    ).fetchall()
    return [tuple(r) for r in rows]
