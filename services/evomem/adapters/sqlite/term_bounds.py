"""Each term's largest BM25 contribution to any row of ``nodes_fts``, and its row count, kept beside FTS5.

    term_bounds.ensure(conn)                       # at open, in the write transaction: rebuilt if stale
    rows, avgdl = term_bounds.averages(conn)       # FTS5's own N and average row length
    hits = term_bounds.counts(conn, terms)         # term -> the rows that have it (None: count them)
    bounds = term_bounds.bounds(conn, terms, hits, rows)   # term -> the most it adds to any row's score

FTS5's BM25 (fts5_aux.c) scores a row ``sum over terms of idf * f * (k1 + 1) / (f + k1 * (1 - b + b
* D / avgdl))``, where ``f`` is the term's weighted frequency in the row (each column's count times
its weight, ``FTS_WEIGHTS``) and ``D`` the row's length in tokens (every column). Written as
``(k1 + 1) / (1 + k1 * (1 - b) / f + k1 * b * (D / f) / avgdl)``, a term's part grows with ``f`` and
shrinks with ``D / f``; so with ``max_f`` (its largest ``f`` in any row) and ``min_ratio`` (its
smallest ``D / f``) the expression with both is at least what the term adds to any row, whatever
``idf`` and ``avgdl`` the table has when a query runs (both read then). That is the exact bound of
the pruned search (``search.search_pruned``), in place of ``idf * (k1 + 1)``, the most any term
could add with no statistics: on the bench notes a term's largest part is 0.8-0.9 of that, and its
part in a row of average length about 0.75.

``term_bounds`` (term, max_f, min_ratio, docs), one row per FTS5 token (migration 0010), is written
by triggers on ``nodes`` (``TRIGGERS``, created by ``ensure`` at open) in the transaction of the
write: every row inserted, and every update of an indexed column, is tokenized by a one-row
contentless FTS5 table with the same tokenizer (``term_probe``) and its terms' ``f`` and ``D / f``
merged in (``max``, ``min``), each term's ``docs`` counted up; a row deleted or updated is tokenized
too and its terms counted down, a term no row has left deleted (a term is a piece of a note's text:
a purge's words leave with it; ``drop_unused`` checks the index after a purge). Otherwise a delete
leaves the bounds as they were: still true, perhaps looser (the rows left are a subset).
``term_bounds_state.rows`` counts the FTS rows the triggers have seen; a file written with the
triggers set aside (a bulk load) disagrees with FTS5's own count and ``ensure`` rebuilds the table
from the FTS index (``rebuild``, 2.5-4.5 s at 100k notes; said in the log, before and after, from
``LOG_REBUILD_FROM`` notes). A store that runs Tantivy drops the
triggers and the bounds (``ensure(keep=False)``, rows -1): its writes pay nothing for what it never
reads, and the next FTS5 open rebuilds them.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evomem.adapters.sqlite import driver
from evomem.adapters.sqlite.schema import FTS_COLUMNS, FTS_WEIGHTS

log = logging.getLogger("evomem.store")
#: A rebuild over at least this many rows is said in the log, before and after (seconds at 100k notes).
LOG_REBUILD_FROM = 10_000

if TYPE_CHECKING:
    import sqlite3

#: FTS5's BM25 constants (fts5_aux.c).
BM25_K1 = 1.2
BM25_B = 0.75
#: A bound is raised by this factor: float rounding in FTS5's sum and in ``min_ratio`` stays far under it.
SAFETY = 1.0 + 1e-9

#: bm25's column weights as SQL over an fts5vocab ``col`` (``schema.FTS_WEIGHTS``, by column).
WEIGHT_SQL = (
    "CASE col " + " ".join(f"WHEN '{c}' THEN {w}" for c, w in zip(FTS_COLUMNS, FTS_WEIGHTS, strict=True)) + " END"
)
_COLUMNS = ", ".join(FTS_COLUMNS)


def _probe_row(row: str) -> str:
    """SQL that puts a trigger's ``new`` or ``old`` row's indexed columns into the one-row probe."""
    return f"INSERT INTO term_probe(rowid, {_COLUMNS}) VALUES (1, {', '.join(f'{row}.{c}' for c in FTS_COLUMNS)});"


# One row's terms (the one-row probe filled with its indexed columns) merged into the bounds.
_MERGE_ROW = f"""
            {_probe_row("new")}
            INSERT INTO term_bounds(term, max_f, min_ratio, docs)
                SELECT term, f, (SELECT count(*) FROM term_probe_instances) / f, 1 FROM (
                    SELECT term, sum({WEIGHT_SQL}) AS f FROM term_probe_instances GROUP BY term) WHERE true
                ON CONFLICT(term) DO UPDATE SET max_f = max(max_f, excluded.max_f),
                    min_ratio = min(min_ratio, excluded.min_ratio), docs = docs + 1;
            INSERT INTO term_probe(term_probe) VALUES ('delete-all');"""
# One row's terms taken out of the rows counts (their bounds stay: still true); a term no row has left goes.
_UNCOUNT_ROW = f"""
            {_probe_row("old")}
            UPDATE term_bounds SET docs = docs - 1 WHERE term IN (SELECT DISTINCT term FROM term_probe_instances);
            DELETE FROM term_bounds WHERE docs <= 0 AND term IN (SELECT DISTINCT term FROM term_probe_instances);
            INSERT INTO term_probe(term_probe) VALUES ('delete-all');"""
#: The triggers that keep the bounds in each write's transaction (``ensure`` creates them).
TRIGGERS = {
    "term_bounds_insert": "CREATE TRIGGER IF NOT EXISTS term_bounds_insert AFTER INSERT ON nodes BEGIN"
    + _MERGE_ROW
    + "\n            UPDATE term_bounds_state SET rows = rows + 1;\n        END",
    "term_bounds_update": f"CREATE TRIGGER IF NOT EXISTS term_bounds_update AFTER UPDATE OF {_COLUMNS} ON nodes BEGIN"
    + _UNCOUNT_ROW
    + _MERGE_ROW
    + "\n        END",
    "term_bounds_delete": "CREATE TRIGGER IF NOT EXISTS term_bounds_delete AFTER DELETE ON nodes BEGIN"
    + _UNCOUNT_ROW
    + "\n            UPDATE term_bounds_state SET rows = rows - 1;\n        END",
}

#: Every term's (max_f, min_ratio) over the whole FTS index, from its instances.
REBUILD_SQL = f"""
INSERT INTO term_bounds(term, max_f, min_ratio, docs)
WITH per AS (SELECT term, doc, sum({WEIGHT_SQL}) AS f, count(*) AS n FROM nodes_fts_instances GROUP BY term, doc),
len AS (SELECT doc, sum(n) AS d FROM per GROUP BY doc)
SELECT term, max(f), min(d / f), count(*) FROM per JOIN len USING (doc) GROUP BY term
"""

# FTS5's averages record (``<table>_data`` rowid 1): varints, the rows then each column's tokens.
_AVERAGES_SQL = "SELECT block FROM nodes_fts_data WHERE id = 1"


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (sqlite3Fts5GetVarint): big-endian 7-bit groups, a ninth byte of 8 bits."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        v = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                v = (v << 8) | byte
                break
            v = (v << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(v)
    return out


def averages(conn: sqlite3.Connection) -> tuple[int, float]:
    """FTS5's row count and average row length in tokens (what its bm25 reads); (0, 0.0) if empty."""
    row = conn.execute(_AVERAGES_SQL).fetchone()
    return _decode_averages(None if row is None else row[0])


def _decode_averages(block: bytes | None) -> tuple[int, float]:
    """The averages record's row count and average row length (its first varint, then each column's tokens)."""
    if not block:
        return 0, 0.0
    values = _varints(bytes(block))
    rows = values[0]
    return rows, (sum(values[1:]) / rows if rows else 0.0)


_STATE_SQL = "SELECT (SELECT rows FROM term_bounds_state), (SELECT block FROM nodes_fts_data WHERE id = 1)"


def rebuild(conn: sqlite3.Connection) -> None:
    """Every term's bounds from the FTS index, and the rows seen set to FTS5's count (in the caller's
    write transaction)."""
    conn.execute("DELETE FROM term_bounds")
    conn.execute(REBUILD_SQL)
    conn.execute("UPDATE term_bounds_state SET rows = ?", (averages(conn)[0],))


def ensure(conn: sqlite3.Connection, *, keep: bool = True) -> bool:
    """At open, in the caller's write transaction. ``keep`` (the store searches with FTS5): create the
    triggers if missing and rebuild the bounds when they have not seen every FTS row (the migration
    that created the table, a bulk load that set them aside, a time on Tantivy). Not ``keep`` (the
    store runs Tantivy, which never reads them): drop the triggers and the bounds, marked not
    maintained (-1), so a write pays nothing for them; an FTS5 search in another process then bounds
    with ``k1 + 1``, and the next FTS5 open rebuilds them. True if rebuilt."""
    if not _has_table(conn):
        return False  # a file pinned to an older schema (tests): the search bounds with k1 + 1
    if not keep:
        for name in TRIGGERS:
            conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        if conn.execute("SELECT rows FROM term_bounds_state").fetchone()[0] != -1:
            conn.execute("DELETE FROM term_bounds")
            conn.execute("UPDATE term_bounds_state SET rows = -1")
        return False
    for sql in TRIGGERS.values():
        conn.execute(sql)
    rows = averages(conn)[0]
    if conn.execute("SELECT rows FROM term_bounds_state").fetchone()[0] == rows:
        return False
    said = rows >= LOG_REBUILD_FROM
    if said:
        log.info(
            "word search: bringing the terms' bounds up to date over %d notes (once, after an upgrade or a bulk load)",
            rows,
        )
    started = time.perf_counter()
    rebuild(conn)
    if said:
        log.info("word search: terms' bounds rebuilt in %.1f s", time.perf_counter() - started)
    return True


def drop_unused(conn: sqlite3.Connection, texts: Sequence[str]) -> int:
    """After a purge blanked a note (``texts``: its indexed columns before): delete the bounds of its
    terms that no row has any more, since a term is a piece of the note's text and a purge leaves
    none in the file. In the caller's write transaction, after the FTS rows changed. How many."""
    if not maintained(conn):
        return 0
    conn.execute("INSERT INTO term_probe(rowid, raw_text) VALUES (1, ?)", (" ".join(t or "" for t in texts),))
    terms = [r[0] for r in conn.execute("SELECT DISTINCT term FROM term_probe_instances")]
    conn.execute("INSERT INTO term_probe(term_probe) VALUES ('delete-all')")
    gone = [t for t in terms if conn.execute(_USED_SQL, (t,)).fetchone() is None]
    conn.executemany("DELETE FROM term_bounds WHERE term = ?", [(t,) for t in gone])
    return len(gone)


_USED_SQL = "SELECT 1 FROM nodes_fts_instances WHERE term = ? LIMIT 1"


def _has_table(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'term_bounds_state'").fetchone() is not None


def maintained(conn: sqlite3.Connection) -> bool:
    """Whether the bounds are kept (the file has the table, and its triggers are not suspended)."""
    if not _has_table(conn):
        return False
    row = conn.execute("SELECT rows FROM term_bounds_state").fetchone()
    return row is not None and row[0] >= 0


# ------------------------------------------------------------------ query terms to FTS5 tokens

_tokens: dict[str, tuple[str, ...]] = {}
_tokens_lock = threading.Lock()
#: The query terms' tokens are cached (the tokenizer never changes); cleared past this many.
TOKENS_CACHED = 100_000
_QUERY_PROBE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.evomem_query_probe USING fts5(x, content='', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.evomem_query_probe_instances USING "
    "fts5vocab(temp, evomem_query_probe, instance)",
)


def tokens(conn: sqlite3.Connection, terms: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The FTS5 tokens of each query term (``"term"`` is a phrase of them), by the store's tokenizer
    in a temporary one-column table of this connection; cached."""
    missing = [t for t in dict.fromkeys(terms) if t not in _tokens]
    if missing:
        for sql in _QUERY_PROBE:
            conn.execute(sql)
        conn.executemany(
            "INSERT INTO temp.evomem_query_probe(rowid, x) VALUES (?, ?)", list(enumerate(missing, start=1))
        )
        found: dict[int, list[tuple[int, str]]] = {}
        for term, doc, offset in conn.execute("SELECT term, doc, offset FROM temp.evomem_query_probe_instances"):
            found.setdefault(doc, []).append((offset, term))
        conn.execute("INSERT INTO temp.evomem_query_probe(evomem_query_probe) VALUES ('delete-all')")
        with _tokens_lock:
            if len(_tokens) + len(missing) > TOKENS_CACHED:
                _tokens.clear()
            for i, term in enumerate(missing, start=1):
                _tokens[term] = tuple(t for _, t in sorted(found.get(i, [])))
    return {t: _tokens.get(t, ()) for t in terms}


def counts(conn: sqlite3.Connection, terms: Sequence[str]) -> dict[str, int] | None:
    """How many rows have each term (what ``search.term_rows`` counts in the index), from the stored
    ``docs``: None when the bounds are not kept, inside a transaction, or when a term is not one
    token (a phrase's rows are counted by FTS5)."""
    if conn.in_transaction:
        return None
    by_term = tokens(conn, terms)
    if any(len(toks) != 1 for toks in by_term.values()):
        return None
    try:
        seen = conn.execute("SELECT rows FROM term_bounds_state").fetchone()
    except driver.sqlite.OperationalError:  # a file pinned to an older schema (tests)
        return None
    if seen is None or seen[0] < 0:
        return None
    wanted = sorted({toks[0] for toks in by_term.values()})
    docs: dict[str, int] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        sql = f"SELECT term, docs FROM term_bounds WHERE term IN ({', '.join('?' * len(chunk))})"
        docs.update((r[0], int(r[1])) for r in conn.execute(sql, chunk))
    return {t: docs.get(by_term[t][0], 0) for t in terms}


def bounds(conn: sqlite3.Connection, terms: Sequence[str], hits: dict[str, int], rows: int) -> dict[str, float]:
    """The most each query term (every one in at least one row) adds to any row's BM25 score now:
    its idf (``rows``: at least the table's row count; ``hits``: the rows it is in) times the part
    its token's ``max_f`` and ``min_ratio`` allow; a phrase (a term of several tokens) by the
    tightest of its tokens (it occurs at most as often as each). A token without bounds (none
    stored) gets ``k1 + 1``, FTS5's bound for any frequency and length."""
    by_term = tokens(conn, terms)
    wanted = sorted({tok for toks in by_term.values() for tok in toks})
    stats: dict[str, tuple[float, float]] = {}
    try:  # whether the bounds are kept, and FTS5's averages, in one read
        seen, block = conn.execute(_STATE_SQL).fetchone()
    except driver.sqlite.OperationalError:  # a file pinned to an older schema (tests)
        seen, block = -1, None
    avgdl = _decode_averages(block)[1]
    if seen is None or seen < 0:
        wanted = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        sql = f"SELECT term, max_f, min_ratio FROM term_bounds WHERE term IN ({', '.join('?' * len(chunk))})"
        stats.update((r[0], (r[1], r[2])) for r in conn.execute(sql, chunk))
    out: dict[str, float] = {}
    for term in terms:
        n = hits[term]
        idf = math.log((rows - n + 0.5) / (n + 0.5)) if rows > n else 0.0
        part = BM25_K1 + 1.0
        if avgdl > 0:
            for tok in by_term[term]:
                if tok in stats:
                    max_f, min_ratio = stats[tok]
                    denominator = 1.0 + BM25_K1 * (1.0 - BM25_B) / max_f + BM25_K1 * BM25_B * min_ratio / avgdl
                    part = min(part, (BM25_K1 + 1.0) / denominator)
        out[term] = max(idf, 1e-6) * part * SAFETY
    return out
