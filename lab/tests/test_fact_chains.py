"""lab.fact_chains: the generated fact chains and the pooled scenario sets are well-formed
scenarios (what bench.quality reads), reproducible from their seed."""

from __future__ import annotations

import json
from pathlib import Path

from lab import fact_chains


def _check(scenario: dict) -> None:
    notes = scenario["notes"]
    assert [n["i"] for n in notes] == list(range(len(notes)))
    replaced: set[int] = set()
    for n in notes:
        old = n["supersedes"]
        if old is not None:
            assert old < n["i"] and notes[old]["topic"] == n["topic"] and old not in replaced
            replaced.add(old)
    assert all(n["valid_at_question"] == (n["i"] not in replaced) for n in notes)
    for q in scenario["questions"]:
        gold = notes[q["gold_note"]]
        assert gold["topic"] == q["topic"] and gold["valid_at_question"] and gold["option"] == q["gold_option"]
        assert q["gold_option"] not in q["obsolete_options"]


def test_chains_are_well_formed_and_reproducible() -> None:
    a = fact_chains.chains(seed=3, people=40)
    _check(a)
    assert a == fact_chains.chains(seed=3, people=40)
    assert a != fact_chains.chains(seed=4, people=40)
    texts = [n["text"] for n in a["notes"]]
    assert len(set(texts)) < len(texts)  # exact reverts: a value comes back word for word
    assert sum(1 for n in a["notes"] if n["supersedes"] is not None) > len(a["questions"]) > 0


def test_pool_keeps_every_scenario_apart_in_one_store(tmp_path: Path) -> None:
    scenarios = [fact_chains.chains(seed=s, people=5) for s in (1, 2)]
    pooled = fact_chains.pool(scenarios)
    _check(pooled)
    assert len(pooled["notes"]) == sum(len(s["notes"]) for s in scenarios)
    assert len(pooled["questions"]) == sum(len(s["questions"]) for s in scenarios)
    assert not {n["topic"] for n in scenarios[0]["notes"]} & {n["topic"] for n in pooled["notes"]}
    src = tmp_path / "two.jsonl"
    src.write_text("".join(json.dumps(s) + "\n" for s in scenarios))
    out = tmp_path / "pooled.jsonl"
    assert fact_chains.main(["pool", str(src), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == pooled
