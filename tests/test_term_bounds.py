"""Each FTS5 term's stored largest BM25 contribution (``term_bounds``) is a true upper bound, kept
in step by the store's triggers through inserts, updates, forgets, purges and deletes, rebuilt
when a bulk load set the triggers aside; and the search that prunes with it (the term parts of
``search.search_pruned``) answers what ranking every match answers while ranking fewer rows.

A term's contribution to a row is what ``bm25`` gives the row for the one-term query (the other
terms of a query add their own parts to the same sum).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from evomem.adapters.sqlite import schema, term_bounds
from evomem.adapters.sqlite import search as sqlite_search
from evomem.adapters.sqlite.search import BM25_SQL, fts_query, term_bound
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.model import Extraction, ExtractionState, NewNote

WORDS = ["ledger", "queue", "kafka", "postgres", "cache", "redis", "billing", "search", "engine", "rust"]
FILLER = [f"f{i:02d}" for i in range(40)]


def _note(rng: random.Random, i: int) -> NewNote:
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 6))] + rng.sample(FILLER, rng.randint(0, 25))
    rng.shuffle(words)
    return NewNote(raw_text=f"Note {i}: " + " ".join(words) + ".", tags=rng.sample(WORDS, rng.randint(0, 2)))


def _fill(store: SQLiteStore, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [store.insert(_note(rng, i)).id for i in range(n)]


def _check_bounds(store: SQLiteStore) -> int:
    """Every word's largest one-term score over the rows is at most its bound, and the bound at most
    FTS5's idf * (k1 + 1); its stored row count is FTS5's (when kept). Returns how many words the
    stored bound made tighter than idf * (k1 + 1)."""
    conn = store._conn()
    rows = conn.execute("SELECT coalesce(max(rowid), 0) FROM nodes").fetchone()[0]
    tighter = 0
    for word in [*WORDS, *FILLER, "note"]:
        match = fts_query([word])
        hits = conn.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (match,)).fetchone()[0]
        if not hits:
            continue
        best = -conn.execute(
            f"SELECT {BM25_SQL} AS r FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY r LIMIT 1", (match,)
        ).fetchone()[0]
        bound = term_bounds.bounds(conn, [word], {word: hits}, rows)[word]
        assert 0 < best <= bound <= term_bound(rows, hits) * term_bounds.SAFETY, word
        assert term_bounds.counts(conn, [word]) in ({word: hits}, None), word  # the stored count is FTS5's
        tighter += bound < term_bound(rows, hits)
    return tighter


def test_the_stored_bound_holds_through_every_kind_of_write(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "bounds.db")
    try:
        ids = _fill(store, 300, seed=1)
        assert _check_bounds(store) > 20, "the stored bounds should be tighter than idf * (k1 + 1)"
        rng = random.Random(2)
        for node_id in rng.sample(ids, 40):  # the extractor fills the other indexed columns: an update
            extraction = Extraction(trigger="ledger ledger ledger", change="kafka " * rng.randint(1, 9), summary="rust")
            store.set_extraction(node_id, extraction, ExtractionState.DONE)
        _check_bounds(store)
        for node_id in rng.sample(ids, 30):
            store.forget(node_id)
        for node_id in rng.sample(ids, 10):
            store.forget(node_id, purge=True)  # blanks the text (an update of every indexed column)
        with store._write() as conn:  # a plain delete (an import's replace, a tool)
            conn.execute("DELETE FROM nodes WHERE rowid IN (SELECT rowid FROM nodes ORDER BY rowid DESC LIMIT 20)")
        _check_bounds(store)
        conn = store._conn()
        every = [*WORDS, *FILLER, "note", "absentword"]
        assert term_bounds.counts(conn, every) == sqlite_search.term_rows(conn, every)
        fts_rows = term_bounds.averages(conn)[0]
        assert conn.execute("SELECT rows FROM term_bounds_state").fetchone()[0] == fts_rows == 280
    finally:
        store.close()


def test_a_short_row_dense_with_a_word_raises_its_bound(tmp_path: Path) -> None:
    """The bound follows the row that gives the most: a word repeated in a short note, in the heavy
    columns, gets a bound at least what that note scores for it."""
    store = SQLiteStore(tmp_path / "dense.db")
    try:
        _fill(store, 100, seed=3)
        before = _check_bounds(store)
        store.insert(NewNote(raw_text="kafka kafka kafka", tags=["kafka"]))
        _check_bounds(store)
        assert before > 0
    finally:
        store.close()


def test_a_bulk_load_without_the_triggers_is_caught_at_open(tmp_path: Path) -> None:
    db = tmp_path / "bulk.db"
    store = SQLiteStore(db)
    _fill(store, 50, seed=4)
    with store._write() as conn:  # what bench.datagen does: the trigger set aside, rows loaded, put back
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'term_bounds_insert'").fetchone()[0]
        conn.execute("DROP TRIGGER term_bounds_insert")
    rng = random.Random(5)
    for i in range(200):
        store.insert(NewNote(raw_text="bulk " + " ".join(rng.choice(WORDS) for _ in range(3)) + f" {i} " * 5))
    with store._write() as conn:
        conn.execute(sql)
    store.close()
    reopened = SQLiteStore(db)
    try:
        conn = reopened._conn()
        assert conn.execute("SELECT rows FROM term_bounds_state").fetchone()[0] == 250
        assert conn.execute("SELECT count(*) FROM term_bounds WHERE term = 'bulk'").fetchone()[0] == 1
        _check_bounds(reopened)
    finally:
        reopened.close()


def test_the_migration_fills_the_bounds_of_an_older_file(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "old.db"
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:9])
    old = SQLiteStore(db)
    _fill(old, 120, seed=6)
    old.close()
    monkeypatch.undo()
    store = SQLiteStore(db)
    try:
        assert store.schema_version() == len(schema.MIGRATIONS)
        conn = store._conn()
        filled = conn.execute("SELECT term, max_f, min_ratio FROM term_bounds ORDER BY term").fetchall()
        with store._write() as w:
            term_bounds.rebuild(w)
        assert conn.execute("SELECT term, max_f, min_ratio FROM term_bounds ORDER BY term").fetchall() == filled
        # a row at a time through the triggers gives what the rebuild from the index gives
        fresh = SQLiteStore(tmp_path / "fresh.db")
        _fill(fresh, 120, seed=6)
        by_trigger = fresh._conn().execute("SELECT term, max_f, min_ratio FROM term_bounds ORDER BY term").fetchall()
        fresh.close()
        assert [tuple(r) for r in by_trigger] == [tuple(r) for r in filled]
        _check_bounds(store)
    finally:
        store.close()


def test_a_term_of_several_tokens_is_bounded_by_its_tightest_token(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "phrase.db")
    try:
        _fill(store, 80, seed=7)
        store.insert(NewNote(raw_text="the e-mail queue, e-mail e-mail", tags=["e-mail"]))
        conn = store._conn()
        assert term_bounds.tokens(conn, ["e-mail", "Queues", "!!"]) == {
            "e-mail": ("e", "mail"),
            "Queues": ("queue",),
            "!!": (),
        }
        rows = conn.execute("SELECT max(rowid) FROM nodes").fetchone()[0]
        match = fts_query(["e-mail"])
        hits = conn.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (match,)).fetchone()[0]
        best = -conn.execute(
            f"SELECT {BM25_SQL} AS r FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY r LIMIT 1", (match,)
        ).fetchone()[0]
        assert 0 < best <= term_bounds.bounds(conn, ["e-mail"], {"e-mail": hits}, rows)["e-mail"]
    finally:
        store.close()


def _every_match(store: SQLiteStore, terms: list[str], limit: int, active_only: bool) -> list[tuple[str, float]]:
    status = "n.status = 'active'" if active_only else "n.status != 'forgotten'"
    conn = store._conn()
    hits = sqlite_search.term_rows(conn, list(dict.fromkeys(terms)))
    present = sorted((t for t, n in hits.items() if n), key=lambda t: (hits[t], t))
    found = sqlite_search.ranked(conn, [fts_query(present)], "default", limit, status) if present else []
    return [(h.node_id, h.score) for h in found]


@pytest.mark.parametrize("parts_up_to", [12, 1], ids=["parts", "passes"])
def test_the_parts_answer_what_ranking_every_match_answers_and_rank_fewer_rows(
    tmp_path, monkeypatch, parts_up_to
) -> None:
    """On a store where the bounds prune (many notes, a few words in most, each row scored by how
    many of the query's words it has), the search gives the same notes, scores to the bit and order
    as ranking every match, and ranks a fraction of the matches; so do the MaxScore passes a query
    of more than ``PARTS_UP_TO`` terms goes through."""
    store = SQLiteStore(tmp_path / "parts.db")
    try:
        ids = _fill(store, 1500, seed=8)
        for node_id in ids[::13]:
            store.forget(node_id)
        monkeypatch.setattr(sqlite_search, "PRUNE_FROM", 0)
        monkeypatch.setattr(sqlite_search, "PRUNE_ROWS", 0)
        monkeypatch.setattr(sqlite_search, "SMALL_PART", 20)
        monkeypatch.setattr(sqlite_search, "PARTS_UP_TO", parts_up_to)
        ranked_rows: list[int] = []
        real = sqlite_search._ranked_rows
        conn = store._conn()

        counting = [False]

        def counted(c, matches, *args, **kwargs):  # type: ignore[no-untyped-def]
            for m in matches if counting[0] else []:
                ranked_rows.append(
                    conn.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (m,)).fetchone()[0]
                )
            return real(c, matches, *args, **kwargs)

        monkeypatch.setattr(sqlite_search, "_ranked_rows", counted)
        rng = random.Random(9)
        matched = 0
        for _ in range(60):
            terms = rng.sample(WORDS, rng.randint(2, 6)) + rng.sample(FILLER, rng.randint(0, 2))
            for limit, active_only in ((20, True), (5, False)):
                want = _every_match(store, terms, limit, active_only)
                counting[0] = True
                got = [
                    (h.node_id, h.score)
                    for h in store.search(terms, namespace="default", limit=limit, active_only=active_only)
                ]
                counting[0] = False
                assert got == want, terms
            hits = sqlite_search.term_rows(conn, terms)
            matched += (
                2
                * conn.execute(
                    "SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?",
                    (fts_query([t for t in terms if hits[t]]),),
                ).fetchone()[0]
            )
        assert sum(ranked_rows) < (0.5 if parts_up_to > 1 else 0.9) * matched, (sum(ranked_rows), matched)
    finally:
        store.close()


def test_inside_a_transaction_the_search_bounds_with_idf_alone(tmp_path: Path) -> None:
    """FTS5's averages record in the file lags a transaction's own writes: a search run inside one
    falls back to idf * (k1 + 1) and still answers exactly."""
    store = SQLiteStore(tmp_path / "txn.db")
    try:
        _fill(store, 300, seed=10)
        conn = store._conn()
        calls: list[int] = []
        real = term_bounds.bounds
        try:
            term_bounds.bounds = lambda *a, **k: calls.append(1) or real(*a, **k)  # type: ignore[assignment]
            conn.execute("BEGIN")
            got = sqlite_search.search_pruned(
                conn, ["ledger", "queue"], {"ledger": 100, "queue": 100}, 300, "default", 5, "n.status != 'forgotten'"
            )
            conn.execute("COMMIT")
        finally:
            term_bounds.bounds = real  # type: ignore[assignment]
        assert calls == [] and len(got) == 5
    finally:
        store.close()


@pytest.mark.parametrize("n", [0, 1])
def test_averages_reads_fts5s_own_counts(tmp_path: Path, n: int) -> None:
    store = SQLiteStore(tmp_path / "avg.db")
    try:
        if n:
            store.insert(NewNote(raw_text="one two three", tags=["four"]))
        conn = store._conn()
        tokens = conn.execute("SELECT count(*) FROM nodes_fts_instances").fetchone()[0]
        assert term_bounds.averages(conn) == ((1, float(tokens)) if n else (0, 0.0))
        assert tokens >= 4 * n
    finally:
        store.close()


def test_a_purge_deletes_the_bounds_of_the_words_only_its_note_had(tmp_path: Path) -> None:
    """A stored term is a piece of a note's text: purging the only note with a word leaves no
    bound of it (the file keeps nothing of a purged note), and the words other notes have keep theirs."""
    store = SQLiteStore(tmp_path / "purge.db")
    try:
        _fill(store, 60, seed=11)
        secret = store.insert(NewNote(raw_text="ledger zqxsecretword moved", tags=["zqxtag"]))
        conn = store._conn()
        stored = lambda term: conn.execute("SELECT count(*) FROM term_bounds WHERE term = ?", (term,)).fetchone()[0]  # noqa: E731
        assert stored("zqxsecretword") == stored("zqxtag") == stored("ledger") == 1
        store.forget(secret.id)  # forgotten, not purged: the text stays, and so do its bounds
        assert stored("zqxsecretword") == 1
        store.forget(secret.id, purge=True)
        assert stored("zqxsecretword") == stored("zqxtag") == 0
        assert stored("ledger") == 1  # other notes have it
        _check_bounds(store)
    finally:
        store.close()


def test_a_store_on_tantivy_keeps_no_bounds_and_the_next_fts5_open_rebuilds_them(tmp_path: Path) -> None:
    """Tantivy never reads the bounds: a store that runs it drops their triggers (its writes pay
    nothing for them) and marks them not maintained; an FTS5 search meanwhile (another process's)
    bounds with idf * (k1 + 1); the next FTS5 open puts the triggers back and rebuilds."""
    pytest.importorskip("tantivy")
    db = tmp_path / "switch.db"
    first = SQLiteStore(db)
    _fill(first, 200, seed=12)
    first.close()
    on_tantivy = SQLiteStore(db, word_index="tantivy")
    try:
        assert on_tantivy.word_index == "tantivy"
        conn = on_tantivy._conn()
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert not names & set(term_bounds.TRIGGERS)
        assert not term_bounds.maintained(conn)
        assert conn.execute("SELECT count(*) FROM term_bounds").fetchone()[0] == 0
        _fill(on_tantivy, 100, seed=13)  # written while the bounds are not kept
        hits = sqlite_search.term_rows(conn, ["ledger"])["ledger"]
        assert term_bounds.bounds(conn, ["ledger"], {"ledger": hits}, 300) == {
            "ledger": term_bound(300, hits) * term_bounds.SAFETY  # an FTS5 search now: idf * (k1 + 1)
        }
        beside = SQLiteStore(db)  # FTS5 in the same file (another process would be the same)
        try:
            assert beside.word_index == "fts5" and term_bounds.maintained(beside._conn())
        finally:
            beside.close()
        # the last open decides: the FTS5 store rebuilt them and put the triggers back, and they
        # fire for the Tantivy store's writes too until its next open
        _fill(on_tantivy, 50, seed=14)
        assert term_bounds.maintained(conn)
        _check_bounds(on_tantivy)
    finally:
        on_tantivy.close()
    back = SQLiteStore(db)
    try:
        conn = back._conn()
        assert term_bounds.maintained(conn)
        assert conn.execute("SELECT rows FROM term_bounds_state").fetchone()[0] == 350
        _check_bounds(back)
    finally:
        back.close()


def test_a_ranking_that_held_every_match_is_not_widened(tmp_path: Path) -> None:
    """Fewer rows than ``limit`` pass: when every match was ranked already (a small part of the
    search), ``_ranked_rows`` counts the matches instead of ranking them twice more."""
    store = SQLiteStore(tmp_path / "widen.db")
    try:
        _fill(store, 50, seed=15)
        conn = store._conn()
        ranked: list[str] = []
        conn.set_trace_callback(lambda sql: ranked.append(sql) if sql.startswith("SELECT r.rank") else None)
        try:
            rows = sqlite_search._ranked_rows(conn, [fts_query(["ledger"])], "default", 500, "n.status != 'forgotten'")
        finally:
            conn.set_trace_callback(None)
        assert 0 < len(rows) < 500 and len(ranked) == 1
    finally:
        store.close()


def test_a_rebuild_on_open_is_said_in_the_log_before_and_after(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large store's first open after an upgrade or a bulk load rebuilds the bounds (seconds at
    100k notes): the log says so before it starts and how long it took; an open that has nothing to
    rebuild says nothing."""
    db = tmp_path / "said.db"
    store = SQLiteStore(db)
    _fill(store, 30, seed=21)
    conn = store._conn()
    with conn:
        conn.execute("UPDATE term_bounds_state SET rows = 0")  # as a bulk load without the triggers leaves it
    store.close()
    monkeypatch.setattr(term_bounds, "LOG_REBUILD_FROM", 10)
    with caplog.at_level("INFO", logger="evomem.store"):
        SQLiteStore(db).close()
    said = [r.getMessage() for r in caplog.records if r.name == "evomem.store"]
    assert any("over 30 notes" in m for m in said) and any("rebuilt in" in m for m in said)
    caplog.clear()
    with caplog.at_level("INFO", logger="evomem.store"):
        SQLiteStore(db).close()
    assert not [r for r in caplog.records if "bounds" in r.getMessage()]
