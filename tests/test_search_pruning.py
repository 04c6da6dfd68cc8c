"""Full-text search prunes by MaxScore on a large store and still answers exactly.

``SQLiteStore.search`` ranks the rows with the rarest terms first and leaves out rows that,
by the terms' BM25 bounds, cannot reach the ``limit``-th score. These tests compare it with
ranking every match (``search.ranked`` over the plain OR query) on a real SQLite file whose words
are as skewed as real notes' (a few common words, many rare ones), with the pruning turned on
for a store this small (``PRUNE_FROM`` and ``PRUNE_ROWS`` 0).
"""

from __future__ import annotations

import random

import pytest

from evomem.adapters.sqlite import search as sqlite_search
from evomem.adapters.sqlite.search import fts_query, term_bound
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.model import NewNote

COMMON = ["service", "database", "team", "uses", "queue", "cache"]
RARE = [f"w{i:03d}" for i in range(300)]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SQLiteStore:
    rng = random.Random(11)
    s = SQLiteStore(tmp_path_factory.mktemp("prune") / "prune.db")
    for i in range(900):
        words = rng.sample(COMMON, rng.randint(1, 4)) + [
            rng.choice(RARE[: 30 + i % 270]) for _ in range(rng.randint(1, 6))
        ]
        rng.shuffle(words)
        ns = "other" if i % 7 == 0 else "default"
        node = s.insert(NewNote(raw_text=f"Note {i}: " + " ".join(words) + ".", namespace=ns))
        if i % 11 == 0:
            s.forget(node.id)
    return s


def full(
    store: SQLiteStore, terms: list[str], namespace: str, limit: int, active_only: bool
) -> list[tuple[str, float]]:
    """Every match ranked: the plain OR query, its terms rarest first as ``search`` orders them."""
    status = "n.status = 'active'" if active_only else "n.status != 'forgotten'"
    conn = store._conn()
    count = "SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?"
    hits = {t: conn.execute(count, (fts_query([t]),)).fetchone()[0] for t in dict.fromkeys(terms)}
    present = sorted((t for t, n in hits.items() if n), key=lambda t: (hits[t], t))
    found = sqlite_search.ranked(conn, [fts_query(present)], namespace, limit, status) if present else []
    return [(h.node_id, h.score) for h in found]


def _answered(monkeypatch: pytest.MonkeyPatch, function: str) -> list[bool]:
    """Spy on one of ``search``'s shortcuts: per call, whether it answered (else the search fell back)."""
    answered: list[bool] = []
    real = getattr(sqlite_search, function)

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = real(*args, **kwargs)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(sqlite_search, function, counted)
    return answered


def test_pruned_search_answers_what_ranking_every_match_answers(store: SQLiteStore, monkeypatch) -> None:
    monkeypatch.setattr(sqlite_search, "PRUNE_FROM", 0)
    monkeypatch.setattr(sqlite_search, "PRUNE_ROWS", 0)
    passes = _answered(monkeypatch, "search_pruned")
    rng = random.Random(5)
    checked = 0
    for _ in range(150):
        terms = rng.sample(COMMON, rng.randint(1, 3)) + rng.sample(RARE[:120], rng.randint(1, 3))
        for namespace, limit, active_only in (("default", 10, False), ("default", 3, True), ("other", 5, False)):
            got = [
                (h.node_id, h.score)
                for h in store.search(terms, namespace=namespace, limit=limit, active_only=active_only)
            ]
            want = full(store, terms, namespace, limit, active_only)
            assert got == want, terms  # the same notes, the same scores to the bit, the same order
            checked += 1
    assert checked == 450
    assert sum(passes) > 100, "the pruned passes should answer most of these queries, not fall back"


def test_a_forgotten_or_other_namespace_note_never_comes_back_through_the_pruned_passes(store, monkeypatch) -> None:
    monkeypatch.setattr(sqlite_search, "PRUNE_FROM", 0)
    monkeypatch.setattr(sqlite_search, "PRUNE_ROWS", 0)
    ids = {h.node_id for h in store.search(["service", "w001", "w002", "database"], namespace="default", limit=500)}
    for node_id in ids:
        node = store.get(node_id)
        assert node is not None and node.namespace == "default" and node.status != "forgotten"


@pytest.mark.parametrize("prune", [1.25, 1.5, 3.0])
def test_an_aggressive_threshold_misses_only_rows_under_prune_times_its_last_score(store, monkeypatch, prune) -> None:
    """``prune`` > 1 (the linker's candidate search): every score returned is the exact one, best
    first, and a row of the exact answer it left out scores under ``prune`` times its last score
    (the left-out rows' bounds stayed under that). With ``prune`` 1 it is the exact answer."""
    monkeypatch.setattr(sqlite_search, "PRUNE_FROM", 0)
    monkeypatch.setattr(sqlite_search, "PRUNE_ROWS", 0)
    rng = random.Random(7)
    missed = 0
    for _ in range(150):
        terms = rng.sample(COMMON, rng.randint(2, 4)) + rng.sample(RARE[:120], rng.randint(0, 2))
        want = full(store, terms, "default", 10, True)
        got = [
            (h.node_id, h.score)
            for h in store.search(terms, namespace="default", limit=10, active_only=True, prune=prune)
        ]
        exact = dict(full(store, terms, "default", 10_000, True))
        assert len(got) == len(want)
        assert all(exact[i] == score for i, score in got), terms  # the same floats
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        left_out = [s for i, s in want if i not in dict(got)]
        assert all(s < prune * got[-1][1] for s in left_out), terms
        missed += len(left_out)
        exact_answer = [
            (h.node_id, h.score) for h in store.search(terms, namespace="default", limit=10, active_only=True)
        ]
        assert exact_answer == want
    assert prune < 3.0 or missed > 0, "a threshold this aggressive should miss rows: the test would show nothing"


def test_a_term_bound_is_what_fts5_can_add_at_most(store: SQLiteStore) -> None:
    """No row's weighted BM25 for one term reaches its bound, computed from the table's rows."""
    conn = store._conn()
    rows = conn.execute("SELECT max(rowid) FROM nodes").fetchone()[0]
    for term in [*COMMON, *RARE[:40]]:
        match = (fts_query([term]),)
        hits = conn.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", match).fetchone()[0]
        scores = conn.execute(
            f"SELECT {sqlite_search.BM25_SQL} FROM nodes_fts WHERE nodes_fts MATCH ?", match
        ).fetchall()
        best = -min(r[0] for r in scores)
        assert 0 < best < term_bound(rows, hits), term
    assert term_bound(1000, 10) > term_bound(1000, 100) > term_bound(1000, 400)
    assert term_bound(1000, 900) == pytest.approx(2.2e-6)  # FTS5 floors the idf of a word most rows have
    assert term_bound(2000, 10) > term_bound(1000, 10)  # an upper bound of the rows is safe


# ----------------------------------------------------------------------------- long queries, small store

OFTEN = ["decision", "record", "team", "service", "status"]  # each in about 80 % of the rows


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> SQLiteStore:
    """300 records (below ``PRUNE_ROWS``, so every match is ranked) of varied length, most of them
    with the same few words, as a store of long decision records is."""
    rng = random.Random(23)
    s = SQLiteStore(tmp_path_factory.mktemp("records") / "records.db")
    for i in range(300):
        words = [w for w in OFTEN if rng.random() < 0.8] + [rng.choice(RARE[:200]) for _ in range(rng.randint(2, 30))]
        rng.shuffle(words)
        s.insert(NewNote(raw_text=f"Record {i}: " + " ".join(words) + ".", namespace="default"))
    return s


def _informative_answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Turn the long-query path on for short queries; record whether it answered or fell back."""
    monkeypatch.setattr(sqlite_search, "COUNT_TERMS_FROM", 4)
    return _answered(monkeypatch, "search_informative")


def test_a_long_query_ranks_without_the_words_half_the_rows_have_and_answers_the_same(records, monkeypatch) -> None:
    """Words in half the rows or more add at most 2.2e-6 each to a score (FTS5 floors their idf),
    yet cost the most to rank: left out, the same notes come back in the same order, each score
    lower by at most their bounds."""
    answered = _informative_answers(monkeypatch)
    rng = random.Random(3)
    for _ in range(120):
        terms = rng.sample(OFTEN, rng.randint(1, 5)) + rng.sample(RARE[:200], rng.randint(3, 20))
        rng.shuffle(terms)
        limit = rng.choice((5, 20))
        got = records.search(terms, namespace="default", limit=limit)
        want = full(records, terms, "default", limit, False)
        assert [h.node_id for h in got] == [i for i, _ in want], terms
        for h, (_, score) in zip(got, want, strict=True):
            assert score - 1.5e-4 < h.score <= score + 1e-9
    assert len(answered) == 120 and sum(answered) > 100, "the long-query path should answer most of these"


def test_a_tie_the_common_words_could_break_ranks_the_whole_query(records, monkeypatch) -> None:
    """Two rows alike in every other word tie without the common ones: the whole query ranks."""
    answered = _informative_answers(monkeypatch)
    twin = "Twin zq001 zq002 zq003 w150 w151."
    b = records.insert(NewNote(raw_text=twin + " service status", namespace="twins"))  # first: wins a bare tie
    a = records.insert(NewNote(raw_text=twin + " decision record", namespace="twins"))
    terms = ["zq001", "zq002", "zq003", "w150", "decision", "record"]
    got = [(h.node_id, h.score) for h in records.search(terms, namespace="twins", limit=2)]
    assert answered == [False]
    assert got == full(records, terms, "twins", 2, False) and got[0][0] == a.id and got[1][0] == b.id


def test_only_words_most_rows_have_rank_as_they_are(records, monkeypatch) -> None:
    answered = _informative_answers(monkeypatch)
    got = [(h.node_id, h.score) for h in records.search(OFTEN, namespace="default", limit=10)]
    want = full(records, OFTEN, "default", 10, False)  # its terms rarest first: the same sums, other rounding
    assert answered == [False] and [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)
