"""bench.agents: five simulated agents reading the default server's offers and hints (issue 30)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ lives at the project root, next to tests/ (not an installed package)
    sys.path.insert(0, str(ROOT))

from bench import agents as ag  # noqa: E402
from bench import agents_counts as counts_of  # noqa: E402
from bench import agents_report as tables  # noqa: E402
from bench import paraphrase as para  # noqa: E402
from bench import scenarios as scen  # noqa: E402
from bench.memories import EvoMemMemory  # noqa: E402

BACK = {"A": 0, "B": 1, "C": 2}


def test_offers_read_from_ids_and_the_decisions_scores() -> None:
    answer = {
        "possible_supersedes": ["B", "A", "Z"],
        "link_decision": {"candidates": [{"id": "A", "score": 0.91, "why": "same topic"}, {"id": "B", "score": 0.2}]},
    }
    offers = ag.parse_offers(answer, BACK)
    assert [(o.target, o.score) for o in offers] == [(1, 0.2), (0, 0.91), (None, None)]
    assert offers[1].why == "same topic"
    assert ag.top_offer(offers) == offers[1]  # the highest shown probability, not the first listed


def test_offers_read_from_objects_and_a_parallel_list() -> None:
    objects = {"possible_supersedes": [{"id": "C", "probability": 0.4, "reason": "another scope"}, {"id": "A"}]}
    assert [(o.target, o.score, o.why) for o in ag.parse_offers(objects, BACK)] == [
        (2, 0.4, "another scope"),
        (0, None, ""),
    ]
    parallel = {"possible_supersedes": ["A", "B"], "possible_supersedes_confidence": [0.3, 0.95]}
    assert [o.score for o in ag.parse_offers(parallel, BACK)] == [0.3, 0.95]
    assert ag.parse_offers({}, BACK) == []


def test_policies() -> None:
    offers = [ag.Offer(0, 0.95), ag.Offer(1, 0.5)]
    note = {"supersedes": 1}
    assert ag.POLICIES["perfect"](note, offers) == 1
    assert ag.POLICIES["perfect"]({"supersedes": None}, offers) is None
    assert ag.POLICIES["perfect"]({"supersedes": 2}, offers) is None
    assert ag.POLICIES["calibrated"](note, offers) == 0
    assert ag.POLICIES["calibrated"](note, [ag.Offer(0, 0.89)]) is None
    assert ag.POLICIES["calibrated"](note, [ag.Offer(0, None)]) is None
    assert ag.POLICIES["credulous"](note, [ag.Offer(0, 0.01)]) == 0
    assert ag.POLICIES["credulous"](note, []) is None
    assert ag.gold_of({"supersedes": None, "gold_targets": [3, 4]}) == {3, 4}


SCENARIO = {
    "notes": [
        {"i": 0, "topic": "ledger/db", "scope": None, "option": "Postgres"},
        {"i": 1, "topic": "ledger/db", "scope": None, "option": "SQLite"},
        {"i": 2, "topic": "ledger/db", "scope": "staging", "option": "MySQL"},
        {"i": 3, "topic": "ledger/db", "scope": None, "option": None},
        {"i": 4, "topic": "queue", "scope": None, "option": "Kafka"},
    ]
}
QUESTION = {
    "topic": "ledger/db",
    "scope": None,
    "gold_option": "SQLite",
    "obsolete_options": ["Postgres"],
    "wrong_scope_options": ["MySQL"],
}


@pytest.mark.parametrize(
    ("hint", "outcome"), [(1, "correct"), (2, "wrong_scope"), (3, "miss"), (4, "other"), (None, "miss")]
)
def test_the_hint_reader_answers_with_the_note_its_hint_names(hint: int | None, outcome: str) -> None:
    hits = [ag.Hit(4, "active"), ag.Hit(0, "active", [hint])]
    assert ag.answer(SCENARIO, QUESTION, hits, follow=False)["outcome"] == "obsolete"
    got = ag.answer(SCENARIO, QUESTION, hits, follow=True)
    assert got == {"outcome": outcome, "followed": True, "own": "obsolete", "top": 0}


def test_the_answer_skips_superseded_hits_other_topics_and_other_scopes() -> None:
    hits = [ag.Hit(4, "active"), ag.Hit(2, "active"), ag.Hit(0, "superseded"), ag.Hit(1, "active")]
    assert ag.answer(SCENARIO, QUESTION, hits, follow=True)["outcome"] == "correct"
    assert ag.answer(SCENARIO, QUESTION, [ag.Hit(3, "active")], follow=False)["outcome"] == "miss"


def tiny_sets() -> dict[str, list[dict]]:
    """A tiny generated development set: 3 ODR, 3 VDR and 2 paraphrase scenarios."""
    return {"odr": scen.generate(3, 5), "vdr": scen.generate(3, 6, vdr=True), "para": para.generate(2, 7)}


@pytest.fixture(scope="module")
def counts() -> dict[str, dict]:
    return asyncio.run(ag.run_sets(tiny_sets(), progress=False))


def test_every_agent_answers_every_question(counts: dict[str, dict]) -> None:
    for name, items in tiny_sets().items():
        asked = sum(len(s["questions"]) for s in items)
        for agent, c in counts[name]["agents"].items():
            assert c["questions"] == asked, (name, agent)
            assert sum(c[o] for o in ("correct", "obsolete", "wrong_scope", "miss", "other")) == asked


def test_agents_that_confirm_nothing_hide_nothing_and_the_perfect_one_links_only_gold(counts: dict[str, dict]) -> None:
    pooled = counts_of.merge(list(counts.values()))["agents"]
    for agent in ("ignore", "hints"):
        assert pooled[agent]["confirmed"] == 0 and pooled[agent]["hidden"] == 0
    perfect = pooled["perfect"]
    assert perfect["confirmed"] > 0  # the generated ODR chains are offered
    assert perfect["confirmed_right"] == perfect["confirmed"]
    assert perfect["hidden"] == 0
    assert pooled["credulous"]["confirmed"] >= pooled["calibrated"]["confirmed"]


def test_reliability_counts_every_scored_offer(counts: dict[str, dict]) -> None:
    for acc in counts.values():
        o = acc["offers"]
        assert sum(n for n, _ in acc["reliability"]) == o["offers"] - o["offers_unscored"]
        assert sum(r for _, r in acc["reliability"]) <= o["offers_right"]
        assert o["no_gold_notes"] + o["gold_notes"] == o["notes"]


def test_a_replay_that_confirms_nothing_is_the_shared_one() -> None:
    """The reuse rule rests on this: the same calls on a fresh store give the same answers."""
    scenario = scen.generate(2, 5)[1]

    async def twice() -> tuple[ag.Replay, ag.Replay]:
        async with EvoMemMemory(linker=None) as memory:
            shared = await ag.replay(memory, scenario, None)
            again = await ag.replay(memory, scenario, lambda note, offers: None, tag="-again")
            return shared, again

    shared, again = asyncio.run(twice())
    assert shared.offers == again.offers
    assert any(shared.offers.values())
    assert [[(h.note, h.status, h.hints) for h in v] for v in shared.hits.values()] == [
        [(h.note, h.status, h.hints) for h in v] for v in again.hits.values()
    ]


def test_the_credulous_agent_confirms_on_every_note_with_an_offer() -> None:
    scenario = scen.generate(2, 6, vdr=True)[0]

    async def run() -> ag.Replay:
        async with EvoMemMemory(linker=None) as memory:
            return await ag.replay(memory, scenario, ag.POLICIES["credulous"])

    got = asyncio.run(run())
    offered = sum(1 for offers in got.offers.values() if any(o.target is not None for o in offers))
    assert offered > 0
    assert len(got.confirmed) + got.refused == offered


def test_main_writes_the_report_and_the_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ag.main(["--out", str(tmp_path), "--sets", "odr", "--dev-sample", "2", "--no-peps", "--no-progress"]) == 0
    report = json.loads((tmp_path / "agents.json").read_text())
    assert report["sets"]["odr"]["group"] == "dev"
    assert report["sets"]["odr"]["summary"]["scenarios"] == 2
    assert report["sampled"] == {"odr": [2, 120]}
    assert set(report["pooled"]) == {"dev"}
    md = (tmp_path / "agents.md").read_text()
    assert "odr 2 of 120" in md and "Reliability" in md and "Issue 30's targets" in md
    for label in tables.AGENT_LABELS.values():
        assert label in md
    assert "confirms the top offer" in capsys.readouterr().out


def test_a_set_without_questions_is_reported_but_not_pooled() -> None:
    asked, peps = ag.blank_set(), ag.blank_set()
    asked["scenarios"] = peps["scenarios"] = 1
    asked["agents"]["ignore"]["questions"] = 4
    asked["agents"]["credulous"]["hidden"], asked["agents"]["credulous"]["valid_decisions"] = 1, 5
    peps["agents"]["credulous"]["hidden"], peps["agents"]["credulous"]["valid_decisions"] = 600, 700
    report = tables.build_report(
        {"blind-x": asked, "peps": peps}, {"blind-x": "blind", "peps": "blind"}, k=5, seed=1, seconds=1
    )
    assert report["pooled"]["blind"]["agents"]["credulous"]["hidden"] == 1
    assert report["sets"]["peps"]["summary"]["agents"]["credulous"]["hidden"] == 600
    md = tables.markdown({**report, "sampled": {}, "skipped": []})
    assert "**peps** (blind" in md and "600/700 hidden" in md


def test_the_kept_vectors_are_the_models_and_each_text_is_embedded_once() -> None:
    class Model:
        name = "m"
        state = "loaded"

        def __init__(self) -> None:
            self.asked: list[str] = []

        def encode(self, texts: list[str]) -> list[list[float]]:
            self.asked += texts
            return [[float(len(t))] for t in texts]

    model = Model()
    cached = ag.CachedEmbedder(model)
    assert cached.encode(["ab", "c"]) == [[2.0], [1.0]]
    assert cached.encode(["c", "abcd", "c"]) == [[1.0], [4.0], [1.0]]
    assert model.asked == ["ab", "c", "abcd"]
    assert cached.name == "m" and cached.state == "loaded"
    cached.clear()
    cached.encode(["c"])
    assert model.asked[-1] == "c"
