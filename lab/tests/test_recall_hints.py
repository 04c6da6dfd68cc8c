"""lab/recall_hints.py: the gold chains it judges hints against, the cut-off it picks, and the hint
reader it simulates, on a hand-made scenario whose answers are known."""

from __future__ import annotations

import random

from lab import recall_hints as rh

SCENARIO = {
    "index": 0,
    "notes": [
        {"i": 0, "text": "ledger on PostgreSQL", "topic": "ledger", "scope": None, "option": "PostgreSQL"},
        {"i": 1, "text": "ledger to SQLite", "topic": "ledger", "scope": None, "option": "SQLite", "supersedes": 0},
        {"i": 2, "text": "ledger to DuckDB", "topic": "ledger", "scope": None, "option": "DuckDB", "supersedes": 1},
        {"i": 3, "text": "queue on Redis", "topic": "queue", "scope": None, "option": "Redis"},
    ],
    "questions": [
        {
            "id": "q0",
            "text": "ledger?",
            "topic": "ledger",
            "scope": None,
            "gold_option": "DuckDB",
            "obsolete_options": ["PostgreSQL", "SQLite"],
        },
    ],
}


def test_later_versions_follow_the_gold_chain_through_every_step() -> None:
    after = rh.later_versions(SCENARIO["notes"])
    assert after == {0: {1, 2}, 1: {2}, 2: set(), 3: set()}


def test_a_hint_among_the_results_is_followed_from_its_own_cut_off() -> None:
    scenarios = {("s", 0): SCENARIO}
    q = rh.Question("s", 0, "q0", hits=[(0, "active", [(2, 0.6, True)]), (2, "active", [])])
    alone_only = rh.hint_reader([q], scenarios, at_out=0.5, at_in=0.9)["s"]
    assert alone_only.get("obsolete") == 1  # the hint is not shown: the agent answers PostgreSQL
    among = rh.hint_reader([q], scenarios, at_out=0.9, at_in=0.5)["s"]
    assert among.get("correct") == 1 and rh.odr(among) == 0.0


def test_the_cut_off_is_the_lowest_that_is_right_nine_times_in_ten() -> None:
    rng = random.Random(3)
    seen = []
    for _ in range(2000):
        p = round(rng.uniform(0.4, 1.0), 2)
        seen.append(rh.Seen("a", p, True, rng.random() < p))  # right as often as p claims
        seen.append(rh.Seen("a", p, False, rng.random() < p * 0.5))  # alone: far less
    got = rh.choose_shown(seen)
    assert got is not None and 0.8 <= got <= 0.9
    assert rh.precision(seen, got, True)[0] >= rh.HINT_PRECISION
    assert rh.choose_shown([s for s in seen if not s.in_results]) is None  # none among the results
