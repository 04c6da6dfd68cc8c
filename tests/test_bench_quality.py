"""The quality benchmark: frozen scenarios, memories, judges and statistics.

Fast: the memories run on the first scenarios of each set only.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ lives at the project root, next to tests/ (not an installed package)
    sys.path.insert(0, str(ROOT))

from bench import scenarios as scen  # noqa: E402
from bench.bm25 import BM25  # noqa: E402
from bench.external import DEFAULT_DATA, first_hit_current, mab_scenario, run_peps, strip_headers  # noqa: E402
from bench.external import main as external_main  # noqa: E402
from bench.judge import DeterministicJudge, Item, JudgeError, LLMJudge, classify, parse_option, render_prompt  # noqa: E402
from bench.memories import EvoMemMemory, FlatMemory, OracleMemory, ScenarioRun, build_memories  # noqa: E402
from bench.quality import link_metrics, linker_cost, markdown, run_suite  # noqa: E402
from bench.quality import main as quality_main  # noqa: E402
from bench.stats import binom_two_sided, mcnemar_exact, wilson  # noqa: E402

ODR_FILE = ROOT / "bench" / "data" / "odr.jsonl"
VDR_FILE = ROOT / "bench" / "data" / "vdr.jsonl"
SUBSET = 10


@pytest.fixture(scope="module")
def odr() -> list[dict]:
    return scen.load(ODR_FILE)


@pytest.fixture(scope="module")
def vdr() -> list[dict]:
    return scen.load(VDR_FILE)


@pytest.fixture(scope="module")
def suite(odr: list[dict], vdr: list[dict]) -> dict:
    """One run of every memory on the first scenarios of each set."""
    memories = build_memories(linkers=("heuristic",), sets=("odr", "vdr"))
    return run_suite({"odr": odr[:SUBSET], "vdr": vdr[:SUBSET]}, memories)


# ----------------------------------------------------------------------------- generator


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert scen.main(["--out", str(a), "--n", "15", "--seed", "3"]) == 0
    assert scen.main(["--out", str(b), "--n", "15", "--seed", "3"]) == 0
    assert a.read_bytes() == b.read_bytes()


def test_different_seed_gives_different_scenarios() -> None:
    assert scen.dumps(scen.generate(15, 3)) != scen.dumps(scen.generate(15, 4))
    assert scen.dumps(scen.generate(15, 3, vdr=True)) != scen.dumps(scen.generate(15, 4, vdr=True))


def test_frozen_files_are_what_the_generator_writes() -> None:
    assert ODR_FILE.read_text(encoding="utf-8") == scen.dumps(scen.generate(120, 7))
    assert VDR_FILE.read_text(encoding="utf-8") == scen.dumps(scen.generate(80, 11, vdr=True))


def test_counts_and_versions(odr: list[dict], vdr: list[dict]) -> None:
    assert len(odr) == 120
    assert len(vdr) == 80
    assert set(Counter(s["n_versions"] for s in odr)) == {2, 3, 4, 5, 6}
    for s in odr:
        chain = [n for n in s["notes"] if n["kind"] == "decision"]
        assert 2 <= len(chain) == s["n_versions"] <= 6
    assert sum(s["bait"] for s in vdr) == 40
    for s in vdr:
        scoped = [n for n in s["notes"] if n["kind"] == "scope_decision"]
        assert len(scoped) == 1 and scoped[0]["scope"] and scoped[0]["valid_at_question"]
        assert scoped[0]["supersedes"] is None


def test_wording_mixes_change_words_implicit_reverts_and_reasons(odr: list[dict]) -> None:
    notes = [n for s in odr for n in s["notes"] if n["kind"] == "decision"]
    wordings = Counter(n["wording"] for n in notes)
    assert {"initial", "change_words", "implicit", "revert", "revert_implicit"} <= set(wordings)
    assert all(not n["change_words"] for n in notes if n["wording"] in ("implicit", "revert_implicit", "initial"))
    assert all(n["change_words"] for n in notes if n["wording"] in ("change_words", "revert"))
    assert sum(n["has_reason"] for n in notes) > len(notes) // 4
    # questions often match an old version better than the current one (plain BM25)
    assert sum(q["bm25_first_topic_note_obsolete"] for s in odr for q in s["questions"]) > 60


@pytest.mark.parametrize("which", ["odr", "vdr"])
def test_gold_metadata_is_consistent(which: str, odr: list[dict], vdr: list[dict]) -> None:
    for s in odr if which == "odr" else vdr:
        notes = s["notes"]
        assert len({n["text"] for n in notes}) == len(notes), "texts are unique within a scenario"
        replaced = {n["supersedes"] for n in notes if n["supersedes"] is not None}
        for n in notes:
            if n["supersedes"] is not None:
                old = notes[n["supersedes"]]
                assert old["i"] < n["i"] and old["topic"] == n["topic"] and old["scope"] == n["scope"]
                assert old["version"] + 1 == n["version"]
            assert n["valid_at_question"] == (n["i"] not in replaced)
        assert [n["date"] for n in notes] == sorted(n["date"] for n in notes)
        for q in s["questions"]:
            gold = notes[q["gold_note"]]
            assert gold["option"] == q["gold_option"] and gold["valid_at_question"]
            assert (gold["topic"], gold["scope"]) == (q["topic"], q["scope"])
            assert q["gold_option"] not in q["obsolete_options"]
            assert q["date"] > notes[-1]["date"]


# ----------------------------------------------------------------------------- judge


SCENARIO = {
    "notes": [
        {
            "i": 0,
            "text": "We picked Postgres for the ledger.",
            "topic": "ledger/database",
            "scope": None,
            "option": "Postgres",
            "date": "2024-01-01",
        },
        {
            "i": 1,
            "text": "Ledger lives in SQLite; Postgres was overkill.",
            "topic": "ledger/database",
            "scope": None,
            "option": "SQLite",
            "date": "2024-02-01",
        },
        {
            "i": 2,
            "text": "The billing database is MySQL.",
            "topic": "billing/database",
            "scope": None,
            "option": "MySQL",
            "date": "2024-03-01",
        },
        {
            "i": 3,
            "text": "Ledger Postgres backups took 40 minutes.",
            "topic": "ledger/database",
            "scope": None,
            "option": None,
            "date": "2024-01-15",
        },
        {
            "i": 4,
            "text": "In staging the ledger uses DuckDB.",
            "topic": "ledger/database",
            "scope": "staging",
            "option": "DuckDB",
            "date": "2024-01-20",
        },
    ]
}
QUESTION = {
    "topic": "ledger/database",
    "scope": None,
    "gold_option": "SQLite",
    "obsolete_options": ["Postgres"],
    "wrong_scope_options": ["DuckDB"],
    "text": "Is the ledger still on Postgres?",
}
TEXT = {n["i"]: n["text"] for n in SCENARIO["notes"]}


def judge(items: list[Item]) -> tuple[str, int | None]:
    v = DeterministicJudge().judge(SCENARIO, QUESTION, items)
    return v.outcome, v.note


def test_judge_flat_acts_on_the_first_note_of_the_topic() -> None:
    assert judge([Item(TEXT[2]), Item(TEXT[0]), Item(TEXT[1])]) == ("obsolete", 0)
    assert judge([Item(TEXT[1]), Item(TEXT[0])]) == ("correct", 1)


def test_judge_skips_items_marked_superseded() -> None:
    items = [Item(TEXT[0], status="superseded"), Item(TEXT[1], status="active")]
    assert judge(items) == ("correct", 1)
    assert judge([Item(TEXT[0], status="forgotten")]) == ("miss", None)


def test_judge_picks_the_newest_dated_note_of_the_topic() -> None:
    items = [Item(TEXT[0], date="2024-01-01"), Item(TEXT[1], date="2024-02-01"), Item(TEXT[2], date="2024-03-01")]
    assert judge(items) == ("correct", 1)
    assert judge([Item(TEXT[0], date="2024-01-01")]) == ("obsolete", 0)


def test_judge_ignores_other_topics_scopes_and_notes_that_decide_nothing() -> None:
    assert judge([Item(TEXT[2]), Item(TEXT[3]), Item(TEXT[4]), Item(TEXT[1])]) == ("correct", 1)
    assert judge([Item("something the scenario never said"), Item(TEXT[0])]) == ("obsolete", 0)


def test_judge_knows_a_note_written_with_surrounding_whitespace() -> None:
    """A scenario note that ends with a newline (a long record, say) is the same note when a
    memory returns it: the judge strips what it reads, so its index strips too."""
    padded = {**SCENARIO, "notes": [{**n, "text": n["text"] + "\n"} if n["i"] == 1 else n for n in SCENARIO["notes"]]}
    items = [Item(TEXT[0], date="2024-01-01"), Item(TEXT[1] + "\n", date="2024-02-01")]
    assert DeterministicJudge().judge(padded, QUESTION, items).outcome == "correct"


def test_judge_maps_a_cut_note_by_the_note_the_memory_says_it_is() -> None:
    """A memory may show a long note cut (EvoMem's answers cut at note_chars); ``source``, the
    scenario note the memory returned by id, is what the judge maps by."""
    cut = TEXT[1][:12] + "..."
    items = [Item(TEXT[0], date="2024-01-01"), Item(cut, date="2024-02-01")]
    assert judge(items) == ("obsolete", 0)  # the cut text alone is no note of the scenario
    items[1] = Item(cut, date="2024-02-01", source=TEXT[1])
    assert judge(items) == ("correct", 1)


def test_judge_nothing_of_the_topic_is_a_miss() -> None:
    assert judge([Item(TEXT[2]), Item(TEXT[3]), Item(TEXT[4])]) == ("miss", None)
    assert judge([]) == ("miss", None)


def test_classify_outcomes() -> None:
    assert classify("SQLite", QUESTION) == "correct"
    assert classify("Postgres", QUESTION) == "obsolete"
    assert classify("DuckDB", QUESTION) == "wrong_scope"
    assert classify("Oracle", QUESTION) == "other"
    assert classify(None, QUESTION) == "miss"


def test_llm_reply_parsing() -> None:
    opts = ["Postgres", "SQLite", "DuckDB"]
    assert parse_option('{"option": "SQLite"}', opts) == "SQLite"
    assert parse_option('Sure: {"option": "sqlite"}', opts) == "SQLite"
    assert parse_option('{"option": "NONE"}', opts) is None
    assert parse_option("I would use Postgres.", opts) == "Postgres"
    assert parse_option("no idea", opts) is None
    prompt = render_prompt(QUESTION, [Item(TEXT[0], status="superseded", date="2024-01-01")])
    assert "status: superseded" in prompt and "date: 2024-01-01" in prompt and "Options:" in prompt


def test_llm_judge_against_a_local_endpoint() -> None:
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            seen[-1]["auth"] = self.headers.get("Authorization")
            body = json.dumps({"choices": [{"message": {"content": '{"option": "SQLite"}'}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        j = LLMJudge("m", f"http://127.0.0.1:{server.server_port}/v1", api_key="k", timeout=5)
        v = j.judge(SCENARIO, QUESTION, [Item(TEXT[1], status="active")])
        assert (v.outcome, v.option) == ("correct", "SQLite")
        assert seen[0]["temperature"] == 0 and seen[0]["model"] == "m" and seen[0]["auth"] == "Bearer k"
    finally:
        server.shutdown()
    port = server.server_port
    with pytest.raises(JudgeError, match="cannot reach judge endpoint"):
        LLMJudge("m", f"http://127.0.0.1:{port}/v1", timeout=1, retries=0).complete("hi")
    with pytest.raises(JudgeError, match="--judge-model"):
        LLMJudge("", "http://x/v1")


# ----------------------------------------------------------------------------- memories


async def _run(memory, scenario):  # type: ignore[no-untyped-def]
    async with memory:
        return await memory.run(scenario)


def test_memories_return_what_their_interface_gives(odr: list[dict]) -> None:
    import asyncio

    s = odr[0]
    flat = asyncio.run(_run(FlatMemory(dates=False), s)).items["q0"]
    dated = asyncio.run(_run(FlatMemory(dates=True), s)).items["q0"]
    oracle = asyncio.run(_run(OracleMemory(), s)).items["q0"]
    evo = asyncio.run(_run(EvoMemMemory(), s))
    assert flat and all(i.status is None and i.date is None for i in flat)
    assert [i.text for i in dated] == [i.text for i in flat] and all(i.date for i in dated)
    assert all(i.status == "active" for i in oracle)
    assert evo.items["q0"] and all(i.status == "active" for i in evo.items["q0"])
    gold = {(n["i"], n["supersedes"]) for n in s["notes"] if n["supersedes"] is not None}
    assert set(evo.edges or []) == gold


def test_oracle_scores_zero_and_flat_does_not(suite: dict) -> None:
    for set_name in ("odr", "vdr"):
        mems = suite["sets"][set_name]["memories"]
        assert mems["oracle"]["main"]["odr"] == 0.0
        assert mems["flat"]["main"]["odr"] > 0.0
    assert suite["sets"]["vdr"]["memories"]["oracle"]["scope"]["odr"] == 0.0


def test_evomem_with_agent_links_scores_zero(suite: dict) -> None:
    for set_name in ("odr", "vdr"):
        entry = suite["sets"][set_name]["memories"]["evomem-agent"]
        assert entry["main"]["odr"] == 0.0
        assert entry["links"]["precision"] == entry["links"]["recall"] == 1.0
        assert entry["hidden"]["still_valid_decisions"]["hidden"] == 0


def test_report_has_mcnemar_links_hidden_and_rows(suite: dict) -> None:
    vdr = suite["sets"]["vdr"]["memories"]
    mc = vdr["evomem-agent"]["main"]["mcnemar_vs_flat_dates"]
    assert 0.0 <= mc["p"] <= 1.0 and mc["only_this"] == 0
    assert "mcnemar_vs_flat_dates" not in vdr["flat-dates"]["main"]
    auto = vdr["evomem-auto:heuristic"]
    assert auto["hidden"]["scope_decisions"]["total"] == SUBSET
    assert auto["links"]["gold"] == vdr["evomem-agent"]["links"]["gold"]
    lo, hi = vdr["flat"]["main"]["odr_ci95"]
    assert lo <= vdr["flat"]["main"]["odr"] <= hi
    answers = [r for r in suite["rows"] if r["type"] == "answer"]
    assert len(answers) == len(suite["memories"]) * (SUBSET + 2 * SUBSET)


# ----------------------------------------------------------------------------- abstentions


def _notes(supersedes: list[int | None]) -> list[dict]:
    return [
        {"i": i, "supersedes": sup, "wording": "implicit" if sup is not None else "initial", "kind": "decision"}
        for i, sup in enumerate(supersedes)
    ]


def test_link_metrics_count_abstentions_apart_from_links() -> None:
    # gold edges: 1->0, 2->1, 4->3; note 3 and 5 replace nothing
    scenario = {"notes": _notes([None, 0, 1, None, 3, None])}
    run = ScenarioRun(
        items={},
        edges=[(1, 0), (5, 3)],  # one correct link, one wrong
        abstentions={2: [1, 0], 4: [0], 3: [0]},  # gold edge listed, gold edge not listed, no gold edge
    )
    lk = link_metrics([scenario], [run])
    assert lk is not None
    assert (lk["predicted"], lk["true_positive"], lk["false_positive"]) == (2, 1, 1)
    assert lk["precision"] == 0.5  # abstentions are not links
    assert lk["recall"] == round(1 / 3, 4)
    assert lk["abstentions"] == {"total": 3, "on_gold": 2, "on_gold_target_listed": 1, "no_gold": 1}
    assert lk["recall_if_confirmed"] == round(2 / 3, 4) and lk["found_if_confirmed"] == 2
    assert lk["confirmed"] == 0


def test_link_metrics_with_confirmed_abstentions() -> None:
    scenario = {"notes": _notes([None, 0, 1])}
    run = ScenarioRun(items={}, edges=[(1, 0), (2, 1)], abstentions={2: [1]}, confirmed=[(2, 1)])
    lk = link_metrics([scenario], [run])
    assert lk is not None
    assert lk["recall"] == 1.0 and lk["confirmed"] == 1 and lk["recall_if_confirmed"] == 1.0
    assert lk["abstentions"]["on_gold_target_listed"] == 1


class _ScriptedEvoMem(EvoMemMemory):
    """EvoMem whose remember answers are scripted: the linker abstains on note 1 (listing note 0)."""

    def __init__(self, **kw: object) -> None:
        super().__init__(linker="scored", **kw)  # type: ignore[arg-type]
        self.calls: list[tuple[str, dict]] = []

    async def call(self, tool: str, args: dict) -> dict:
        self.calls.append((tool, args))
        if tool == "remember":
            n = sum(1 for t, _ in self.calls if t == "remember") - 1
            node_id = f"N{n}"
            if n == 1:
                return {
                    "id": node_id,
                    "possible_supersedes": ["N0"],
                    "link_decision": {"kind": "abstain", "candidates": [{"id": "N0", "score": 0.5}]},
                }
            return {"id": node_id, "link_decision": {"kind": "none"}}
        if tool == "supersede":
            return {"id": args["node_id"], "supersedes": args["supersedes"]}
        if tool == "recall":
            return {"results": []}
        return {"id": args.get("node_id"), "status": "active", "version": 1}


def _tiny_scenario() -> dict:
    notes = [
        {"i": 0, "text": "We picked Postgres for the ledger.", "scope": None, "supersedes": None},
        {"i": 1, "text": "Ledger lives in SQLite.", "scope": None, "supersedes": 0},
        {"i": 2, "text": "Sprint planning moved to Tuesdays.", "scope": None, "supersedes": None},
    ]
    for n in notes:
        n["valid_at_question"] = n["i"] != 0
    return {"set": "t", "index": 0, "notes": notes, "questions": []}


def test_memory_records_abstentions_and_the_agent_confirms_the_true_one() -> None:
    import asyncio

    plain = _ScriptedEvoMem()
    run = asyncio.run(plain._run(_tiny_scenario(), "t0", 5))
    assert run.abstentions == {1: [0]} and run.edges == [] and run.confirmed == []
    assert not any(t == "supersede" for t, _ in plain.calls)
    confirm = _ScriptedEvoMem(confirm_abstentions=True)
    assert confirm.name == "evomem-auto:scored+confirm"
    run = asyncio.run(confirm._run(_tiny_scenario(), "t0", 5))
    assert run.edges == [(1, 0)] and run.confirmed == [(1, 0)]
    assert run.link_methods == {1: "agent-confirmed"}
    assert [a for t, a in confirm.calls if t == "supersede"] == [{"node_id": "N1", "supersedes": "N0"}]


def test_confirm_variants_only_for_linkers_that_can_abstain() -> None:
    names = [m.name for m in build_memories(linkers=("heuristic", "scored"), sets=("odr",))]
    assert "evomem-auto:scored+confirm" in names
    assert "evomem-auto:heuristic+confirm" not in names
    assert not any(n.endswith("+bm25") for n in names)  # BM25 twins run on the paraphrase set only


def test_scored_confirm_run_links_only_true_predecessors(odr: list[dict]) -> None:
    memories = [m for m in build_memories(linkers=("scored",), sets=("odr",)) if m.name.startswith("evomem-auto")]
    report = run_suite({"odr": odr[:6]}, memories)
    block = report["sets"]["odr"]
    confirmed = block["memories"]["evomem-auto:scored+confirm"]["links"]
    assert "evomem-auto:scored" in block["confirm"]
    assert block["confirm"]["evomem-auto:scored"]["supersede_calls"] == confirmed["confirmed"]
    md = markdown({**report, "k": 5})
    assert "after the agent confirms abstentions" in md and "recall if confirmed" in md
    gold = {s["id"]: {(n["i"], n["supersedes"]) for n in s["notes"] if n["supersedes"] is not None} for s in odr}
    for row in report["rows"]:
        if row["type"] == "links" and row["confirmed"]:
            for new, old in row["confirmed"]:
                assert old in row["abstentions"][str(new)]  # the agent confirms only a listed candidate
                assert (new, old) in gold[row["scenario"]]  # and only the true predecessor


def test_cli_writes_report_table_rows_and_plots(tmp_path: Path) -> None:
    rc = quality_main(["--out", str(tmp_path), "--limit", "3", "--memories", "flat,flat-dates,oracle", "--no-progress"])
    assert rc == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert {"quality.json", "quality.md", "quality_rows.jsonl", "quality_odr.png"} <= names
    report = json.loads((tmp_path / "quality.json").read_text())
    assert report["sets"]["odr"]["scenarios"] == 3
    assert (tmp_path / "quality_odr.png").read_bytes()[:4] == b"\x89PNG"


def test_linker_cost_counts_calls_and_percentiles() -> None:
    runs = [
        ScenarioRun(items={}, remembers=4, linker_ms=[1.0, 3.0, 2.0], linker_decide_ms=[0.1, 0.3, 0.2], llm_gate=1),
        ScenarioRun(items={}, remembers=2, linker_ms=[10.0], linker_decide_ms=[5.0], llm_gate=2),
    ]
    cost = linker_cost(runs)
    assert cost is not None
    assert cost["remembers"] == 6 and cost["linker_calls"] == 4 and cost["call_share"] == round(4 / 6, 4)
    assert cost["p50_ms"] == 2.5 and cost["p95_ms"] == 10.0 and cost["max_ms"] == 10.0
    assert cost["decide_p50_ms"] == 0.25 and cost["decide_p95_ms"] == 5.0
    assert cost["llm_gate"] == 3 and cost["llm_gate_share"] == 0.5
    assert linker_cost([ScenarioRun(items={}, remembers=3)]) is None  # no linker: no cost
    empty = linker_cost([ScenarioRun(items={}, remembers=1, linker_ms=[])])
    assert empty is not None and empty["linker_calls"] == 0 and empty["p50_ms"] is None


def test_cli_reports_linker_time_per_remember(tmp_path: Path) -> None:
    mems = "evomem-agent,evomem-auto:heuristic,evomem-auto:scored"
    args = ["--out", str(tmp_path), "--limit", "2", "--sets", "odr,vdr", "--memories", mems]
    assert quality_main([*args, "--no-confirm", "--no-progress"]) == 0
    report = json.loads((tmp_path / "quality.json").read_text())
    cost = report["linker_cost"]
    assert "evomem-agent" not in cost  # the agent links: no linker
    for linker in ("heuristic", "scored"):
        per = cost[f"evomem-auto:{linker}"]
        assert set(per) == {"odr", "vdr", "all"}
        for c in per.values():
            assert 0 < c["linker_calls"] <= c["remembers"] and 0 < c["call_share"] <= 1
            assert 0 <= c["p50_ms"] <= c["p95_ms"] <= c["max_ms"]
            assert 0 <= c["decide_p50_ms"] <= c["p50_ms"] and c["decide_p95_ms"] <= c["max_ms"]
            assert 0 <= c["llm_gate"] <= c["linker_calls"]
        assert per["all"]["linker_calls"] == per["odr"]["linker_calls"] + per["vdr"]["linker_calls"]
        entry = report["sets"]["odr"]["memories"][f"evomem-auto:{linker}"]
        assert entry["linker_cost"] == per["odr"]
    md = (tmp_path / "quality.md").read_text()
    table = md[md.index("## Cost: linker time per remember") :]
    assert "| evomem-auto:heuristic | all |" in table and "| evomem-auto:scored | odr |" in table
    rows = [json.loads(line) for line in (tmp_path / "quality_rows.jsonl").read_text().splitlines()]
    links = [r for r in rows if r["type"] == "links" and r["memory"] == "evomem-auto:heuristic"]
    assert sum(len(r["linker_ms"]) for r in links) == cost["evomem-auto:heuristic"]["all"]["linker_calls"]


def test_unknown_memory_or_linker_is_a_clear_error(tmp_path: Path) -> None:
    assert quality_main(["--out", str(tmp_path), "--memories", "nope", "--no-progress"]) == 2
    assert quality_main(["--out", str(tmp_path), "--linkers", "nope", "--no-progress"]) == 2


# ----------------------------------------------------------------------------- statistics and BM25


def test_wilson_and_exact_mcnemar() -> None:
    lo, hi = wilson(0, 120)
    assert lo == 0.0 and hi == pytest.approx(0.0311, abs=1e-4)
    lo, hi = wilson(50, 120)
    assert lo == pytest.approx(0.3326, abs=1e-3) and hi == pytest.approx(0.5061, abs=1e-3)
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 0) == 1.0
    assert binom_two_sided(1, 10) == pytest.approx(22 / 1024)


def test_bm25_prefers_the_matching_document() -> None:
    bm = BM25(["we picked postgres for the ledger", "ledger lives in sqlite", "billing uses kafka"])
    top = bm.top("is the ledger still on postgres", 5)
    assert [i for i, _ in top] == [0, 1]


# ----------------------------------------------------------------------------- external sets


def test_pep_headers_are_stripped() -> None:
    raw = "PEP: 5\nTitle: T\nStatus: Superseded\nSuperseded-By: 387\nReplaces: 1,\n  2\nCreated: 1-Jan-2000\n\nBody\n"
    out = strip_headers(raw)
    assert "Status" not in out and "Superseded-By" not in out and "Replaces" not in out and "  2" not in out
    assert "Title: T" in out and "Created: 1-Jan-2000" in out and "Body" in out


def _pep(number: int, created: str, title: str, body: str, extra: str = "") -> str:
    return f"PEP: {number}\nTitle: {title}\n{extra}Created: {created}\n\n{body}\n"


def test_pep_chains_report_links_abstentions_and_linker_time(tmp_path: Path) -> None:
    texts = tmp_path / "peps" / "texts"
    texts.mkdir(parents=True)
    peps = [
        _pep(1, "01-Jan-2000", "Ledger storage", "We use Postgres for the ledger database."),
        _pep(2, "01-Feb-2000", "Release cadence", "Releases are cut every six weeks."),
        _pep(
            3,
            "01-Mar-2000",
            "Ledger storage, again",
            "We moved the ledger database from Postgres to SQLite.",
            "Status: Final\nReplaces: 1\n",
        ),
    ]
    for i, text in enumerate(peps, 1):
        (texts / f"pep-{i:04d}.rst").write_text(text, encoding="utf-8")
    (tmp_path / "peps" / "pep_chains.jsonl").write_text(json.dumps({"edges": [{"new": 3, "old": 1}]}) + "\n")
    report, rows = run_peps(tmp_path, ["heuristic", "scored"])
    assert report["peps"] == 3 and report["gold_edges"] == 1 and list(report["linkers"]) == ["heuristic", "scored"]
    for e in report["linkers"].values():
        ab = e["abstentions"]
        assert ab["total"] == ab["on_gold"] + ab["no_gold"] and ab["on_gold_target_listed"] <= ab["on_gold"]
        assert e["recall"] is not None and e["recall"] <= e["recall_if_confirmed"] <= 1
        cost = e["linker_cost"]
        assert cost["remembers"] == 3 and 0 < cost["linker_calls"] <= 2  # the first PEP has no candidate
        assert cost["p50_ms"] <= cost["p95_ms"]
    assert {r["type"] for r in rows} >= {"pep_link"}


def test_pep_abstentions_are_counted_apart_from_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.external as ext

    texts = tmp_path / "peps" / "texts"
    texts.mkdir(parents=True)
    for n in range(1, 6):
        (texts / f"pep-{n:04d}.rst").write_text(_pep(n, f"0{n}-Jan-2000", f"T{n}", "Body."), encoding="utf-8")
    chains = [{"edges": [{"new": 3, "old": 1}, {"new": 3, "old": 2}]}, {"edges": [{"new": 5, "old": 4}]}]
    (tmp_path / "peps" / "pep_chains.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chains))

    async def fake_feed(linker: str, peps: list) -> ScenarioRun:  # type: ignore[type-arg]
        wrong = [(2, 1)] if linker == "y" else []  # y also links PEP 2 to PEP 1, not a gold edge
        return ScenarioRun(
            items={},
            edges=[(3, 1), *wrong],  # one gold edge of PEP 3 linked
            link_evidence={3: ["explicit reference: gold"], 2: ["explicit reference: PEP 2 replaces PEP 1"]},
            statuses={p["pep"]: "active" for p in peps},
            abstentions={3: [2, 1], 5: [2], 4: [1]},  # 3: listed, 5: gold not listed, 4: replaces nothing
            remembers=5,
            linker_ms=[1.0, 2.0, 4.0],
            linker_decide_ms=[0.5, 0.25, 1.0],
        )

    monkeypatch.setattr(ext, "_feed_peps", fake_feed)
    report, rows = run_peps(tmp_path, ["x", "y"])
    e = report["linkers"]["x"]
    assert e["wrong_links"] == []
    assert report["linkers"]["y"]["wrong_links"] == [
        {"new": 2, "old": 1, "evidence": ["explicit reference: PEP 2 replaces PEP 1"]}
    ]
    assert e["abstentions"] == {"total": 3, "on_gold": 2, "on_gold_target_listed": 1, "no_gold": 1}
    assert e["precision"] == 1.0 and e["recall"] == round(1 / 3, 4)
    assert e["recall_if_confirmed"] == round(2 / 3, 4)  # (3, 2) listed on an abstention; (3, 1) already linked
    assert e["linker_cost"]["linker_calls"] == 3 and e["linker_cost"]["p50_ms"] == 2.0
    assert e["linker_cost"]["decide_p50_ms"] == 0.5
    assert sum(r["type"] == "pep_abstain" and r["linker"] == "x" for r in rows) == 3
    md = ext.markdown({"k": 5, "peps": report})
    assert "- PEP 2 → PEP 1: explicit reference: PEP 2 replaces PEP 1" in md and "Links by x" not in md
    assert "| x | 1 | 1 | 1.000 | 0.333 (0.333) | 2 (1) | 1 | 0.667 | 0 / 2 | 3 | 0.50 / 1.00 | 2.00 / 4.00 |" in md


def test_external_without_data_skips_with_missing_ok(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    args = ["--data", str(missing), "--skip-mab", "--out", str(tmp_path), "--name", "peps", "--no-progress"]
    assert external_main(args) == 2  # without --missing-ok a missing folder is an error
    assert external_main([*args, "--missing-ok"]) == 0
    report = json.loads((tmp_path / "peps.json").read_text())
    assert "peps" not in report and "not found" in report["skipped"]["peps"]
    assert "peps: skipped" in (tmp_path / "peps.md").read_text()


@pytest.mark.skipif(not (DEFAULT_DATA / "memoryagentbench").is_dir(), reason="external data not present")
def test_memoryagentbench_small_set_loads() -> None:
    s = mab_scenario(DEFAULT_DATA, "6k")
    assert len(s["notes"]) == 455
    assert sum(q["kind"] == "updated" for q in s["questions"]) == 72
    q = next(q for q in s["questions"] if q["kind"] == "updated")
    assert first_hit_current([Item(q["obsolete_options"][0])], q) == "obsolete"
    assert first_hit_current([Item(q["obsolete_options"][0], status="superseded"), Item(q["gold_option"])], q) == (
        "current"
    )


def test_the_report_shows_the_newer_speed_run(tmp_path: Path) -> None:
    """make bench (10k, 100k) after an older bench-full (1M): BENCHMARKS.md shows the newer run."""
    import os

    from bench.report import main as report_main

    results = tmp_path / "results"
    (results / "full").mkdir(parents=True)
    (results / "full" / "speed.md").write_text("| 1,000,000 | old run |\n")
    (results / "speed.md").write_text("| 100,000 | new run |\n")
    os.utime(results / "full" / "speed.md", (1_000_000_000, 1_000_000_000))
    out = tmp_path / "BENCHMARKS.md"
    assert report_main(["--results", str(results), "--out", str(out)]) == 0
    text = out.read_text()
    assert "new run" in text and "old run" not in text
    os.utime(results / "speed.md", (999_000_000, 999_000_000))  # now the bench-full run is newer
    assert report_main(["--results", str(results), "--out", str(out)]) == 0
    assert "old run" in out.read_text()


def test_the_report_opens_with_a_headline_per_linker(tmp_path: Path) -> None:
    """BENCHMARKS.md starts with one row per automatic linker, read from quality.json and peps.json."""
    from bench.report import main as report_main

    results = tmp_path / "results"
    assert quality_main(["--out", str(results), "--limit", "2", "--sets", "odr,vdr", "--no-progress"]) == 0
    peps = {"peps": {"linkers": {"scored": {"precision": 0.875, "recall": 0.149}}}}
    (results / "peps.json").write_text(json.dumps(peps))
    out = tmp_path / "BENCHMARKS.md"
    assert report_main(["--results", str(results), "--out", str(out)]) == 0
    text = out.read_text()
    head = text[text.index("## Headline") : text.index("## Quality")]
    report = json.loads((results / "quality.json").read_text())
    odr = report["sets"]["odr"]["memories"]["evomem-auto:scored"]["main"]["odr"]
    row = next(line for line in head.splitlines() if line.startswith("| scored |"))
    assert row.startswith(f"| scored | {odr:.3f} |") and "| 0.875 | 0.149 |" in row
    assert any(line.startswith("| heuristic |") for line in head.splitlines())


def test_the_linking_table_pools_dev_and_blind_sets_apart(tmp_path: Path) -> None:
    """bench.linker_table: one table, pooled development and blind rows from the counts (not an
    average of rates), then one row per set and linker; blind sets named by the report only."""
    from bench import linker_table

    def mem(tp: int, predicted: int, gold: int, obsolete: int, questions: int, gate: int | None = None) -> dict:
        cost = {"remembers": 10, "p50_ms": 5.0, "p95_ms": 9.0, "decide_p50_ms": 1.0, "decide_p95_ms": 2.0}
        if gate is not None:
            cost["llm_gate"] = gate
        return {
            "main": {"questions": questions, "outcomes": {"obsolete": obsolete}},
            "links": {
                "predicted": predicted,
                "true_positive": tp,
                "gold": gold,
                "found_if_confirmed": tp,
                "abstentions": {"on_gold": 1, "no_gold": 2},
            },
            "hidden": {"still_valid_decisions": {"hidden": 0, "total": 4}},
            "linker_cost": cost,
        }

    def block(a: dict, b: dict) -> dict:
        return {
            "scenarios": 3,
            "memories": {"flat-dates": mem(0, 0, 0, 1, 2), "evomem-auto:scored": a, "evomem-auto:pair": b},
        }

    report = {
        "sets": {
            "d1": block(mem(1, 1, 4, 1, 2), mem(2, 4, 4, 0, 2, gate=3)),
            "d2": block(mem(3, 3, 4, 0, 2), mem(2, 2, 4, 2, 2, gate=1)),
            "b1": block(mem(0, 1, 4, 2, 2), mem(1, 1, 4, 1, 2, gate=5)),
        },
        "blind_sets": ["b1"],
    }
    q = tmp_path / "q.json"
    q.write_text(json.dumps(report))
    out = tmp_path / "linking.md"
    assert linker_table.main(["--quality", str(q), "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    dev_pair = next(x for x in lines if x.startswith("| **all dev**") and "| pair |" in x)
    assert "| 0.500 (0.500) | 0.667 | 0.500 |" in dev_pair  # ODR 2/4, precision 4/6, recall 4/8
    assert "| 4 (0.20) |" in dev_pair  # the LLM would be asked on 4 of 20 remembers
    blind_scored = next(x for x in lines if x.startswith("| **all blind**") and "| scored |" in x)
    assert "| blind | scored | 1.000 (0.500) | 0.000 |" in blind_scored
    assert sum(1 for x in lines if x.startswith("| b1 (3) | blind |")) == 2


def _linking_table(tmp_path: Path, **reports: dict) -> list[str]:
    """bench.linker_table run on these reports (``mab``, ``peps``) and no scenario set: its lines."""
    from bench import linker_table

    q = tmp_path / "q.json"
    q.write_text(json.dumps({"sets": {}}))
    args = ["--quality", str(q), "--out", str(tmp_path / "linking.md")]
    for name, report in reports.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(report))
        args += [f"--{name}", str(tmp_path / f"{name}.json")]
    assert linker_table.main(args) == 0
    return (tmp_path / "linking.md").read_text().splitlines()


def test_the_linking_table_adds_memoryagentbench_as_blind_sets(tmp_path: Path) -> None:
    """bench.linker_table --mab: each fact-consolidation size is a blind set (external data); its ODR
    is the first active hit's on the overwritten facts' questions, beside flat-dates', and, being
    another ODR than the scenario sets', it stays out of the pooled rows."""

    def mem(obsolete: int, questions: int, links: dict | None = None) -> dict:
        # the judge's outcomes say 0 obsolete: the table reads the first active hit
        first = {"current": questions - obsolete, "obsolete": obsolete}
        entry: dict = {"updated": {"questions": questions, "outcomes": {"obsolete": 0}, "first_hit": first}}
        if links is not None:
            entry["links"] = links
        return entry

    mab = {
        "memoryagentbench": {
            "factconsolidation_sh_6k": {
                "facts": 455,
                "memories": {
                    "flat-dates": mem(2, 8),
                    "evomem-auto:scored": mem(
                        4,
                        8,
                        {
                            "predicted": 5,
                            "true_positive": 4,
                            "gold": 10,
                            "abstentions": {"on_gold": 3, "no_gold": 1},
                            "found_if_confirmed": 6,
                        },
                    ),
                    "evomem-auto:pair": mem(1, 8, {"predicted": 2, "true_positive": 2, "gold": 10}),
                    "evomem-auto:pair+confirm": mem(0, 8, {"predicted": 9, "true_positive": 9, "gold": 10}),
                },
            }
        }
    }
    lines = _linking_table(tmp_path, mab=mab)
    pair = next(x for x in lines if x.startswith("| mab-sh_6k (455 facts) | blind | pair |"))
    assert "| 0.125 (0.250) | 1.000 | 0.200 |" in pair  # ODR 1/8 (flat-dates 2/8), precision 2/2, recall 2/10
    assert "| 0 / 0 | — | — |" in pair  # no offers, no still-valid count in MAB
    scored = next(x for x in lines if x.startswith("| mab-sh_6k (455 facts) | blind | scored |"))
    assert "| 0.500 (0.250) | 0.800 | 0.400 | 3 / 1 | 0.600 | — |" in scored
    confirmed = next(x for x in lines if x.startswith("| mab-sh_6k (455 facts) | blind | pair + confirm |"))
    assert "| 0.000 (0.250) | 1.000 | 0.900 |" in confirmed  # the agent confirmed 7 offers: 9 links of 10
    assert not any(x.startswith("| **all blind**") for x in lines)  # another ODR: not pooled


def test_memoryagentbench_counts_offers_as_the_scenario_sets_do() -> None:
    """bench.external.mab_links: links against the overwrites, abstentions on a fact that overwrites
    one (and whether it was listed) or none, and recall if confirmed = linked + listed."""
    from bench.external import mab_links
    from bench.memories import ScenarioRun

    notes = [{"i": i, "supersedes": s} for i, s in enumerate([None, None, 0, 1, None, 2])]
    run = ScenarioRun(items={}, edges=[(2, 0), (4, 1)], abstentions={3: [1, 0], 5: [0], 1: [0]})
    links = mab_links(notes, run)
    assert links["predicted"] == 2 and links["true_positive"] == 1 and links["gold"] == 3
    assert links["abstentions"] == {"on_gold": 2, "on_gold_target_listed": 1, "no_gold": 1}
    assert links["found_if_confirmed"] == 2
    # The agent confirmed the listed overwrite of note 3: a link now, counted once, not twice.
    confirmed = ScenarioRun(
        items={}, edges=[(2, 0), (4, 1), (3, 1)], abstentions={3: [1, 0], 5: [0], 1: [0]}, confirmed=[(3, 1)]
    )
    links = mab_links(notes, confirmed)
    assert links["true_positive"] == 2 and links["confirmed"] == 1
    assert links["found_if_confirmed"] == 2


def test_the_linking_table_shows_the_pep_linkers_time_decision_and_embedding(tmp_path: Path) -> None:
    """bench.linker_table --peps: the PEP rows carry the linker's time per remember, the decision
    alone and the note's embedding, as the scenario rows do (the speed target is read there)."""

    cost = {"remembers": 5, "p50_ms": 6.5, "p95_ms": 11.3, "decide_p50_ms": 1.4, "decide_p95_ms": 2.3}
    cost |= {"embed_p50_ms": 59.0, "embed_p95_ms": 65.0}
    pair = {"links_made": 2, "true_positive": 1, "recall_if_confirmed": 0.5, "linker_cost": cost}
    peps = {"peps": {"peps": 5, "gold_edges": 4, "still_valid_peps": 3, "linkers": {"pair": pair}}}
    row = next(x for x in _linking_table(tmp_path, peps=peps) if x.startswith("| peps (5) | blind | pair |"))
    assert row.endswith("| 6.5 / 11.3 | 1.4 / 2.3 | 59.0 / 65.0 |")


def test_a_main_question_without_a_single_decision_in_force_is_left_out_of_the_wording_metrics() -> None:
    """A scenario set whose questions ask about a set of dependencies has no ``gold_note``: the
    wording metrics count the questions that have one and do not fail on the others (the linking
    bench crashed at its report on such a set)."""
    from bench.quality import wording_metrics

    scenario = {
        "questions": [
            {"id": "q1", "kind": "main", "wording": "direct", "gold_note": 1},
            {"id": "q2", "kind": "main", "wording": "direct"},
        ]
    }
    run = ScenarioRun(items={"q1": [], "q2": []}, returned={"q1": [1], "q2": [0]})
    got = wording_metrics([scenario], [run], [["correct", "correct"]])
    assert got["all"]["questions"] == 1 and got["all"]["hits"] == 1
