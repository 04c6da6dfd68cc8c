"""The paraphrase set: frozen, word-disjoint names, and hybrid recall against BM25 alone."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ lives at the project root, next to tests/ (not an installed package)
    sys.path.insert(0, str(ROOT))

from bench import paraphrase as para  # noqa: E402
from bench import scenarios as scen  # noqa: E402
from bench.memories import EvoMemMemory, build_memories, has_vectors_setting  # noqa: E402
from bench.quality import main as quality_main  # noqa: E402
from bench.quality import markdown, run_suite  # noqa: E402

PARA_FILE = ROOT / "bench" / "data" / "para.jsonl"


@pytest.fixture(scope="module")
def scenarios() -> list[dict]:
    return scen.load(PARA_FILE)


class _Porter:
    """Word stems as recall sees them: SQLite FTS5's porter tokenizer (the one EvoMem indexes with)."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
        self.db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")

    def stems(self, text: str) -> set[str]:
        self.db.execute("DELETE FROM t")
        self.db.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (text,))
        return {r[0] for r in self.db.execute("SELECT term FROM v")}


STOP = {"of", "on", "the", "in", "a", "to", "for", "as", "its", "is", "we", "it", "and"}


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert para.main(["--out", str(a), "--n", "9", "--seed", "3"]) == 0
    assert para.main(["--out", str(b), "--n", "9", "--seed", "3"]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert scen.dumps(para.generate(9, 3)) != scen.dumps(para.generate(9, 4))


def test_frozen_file_is_what_the_generator_writes() -> None:
    assert PARA_FILE.read_text(encoding="utf-8") == scen.dumps(para.generate(72, 13))


def test_names_share_no_stem() -> None:
    porter = _Porter()
    comp_stems: set[str] = set()
    for comp, names in para.COMPONENT_NAMES.items():
        stems = [porter.stems(n) for n in names]
        for i in range(3):
            for j in range(i + 1, 3):
                assert not stems[i] & stems[j], (comp, names[i], names[j])
        comp_stems |= set().union(*stems)
    for aspect, spec in para.ASPECT_NAMES.items():
        stems = [porter.stems(n) for n in spec["names"]]
        for i in range(3):
            for j in range(i + 1, 3):
                assert not stems[i] & stems[j], (aspect, spec["names"][i], spec["names"][j])
        names = set().union(*stems)
        assert not names & comp_stems, aspect
        for option in spec["options"]:
            assert not porter.stems(option) & names, (aspect, option)


def test_scenarios_ask_with_old_new_and_unused_names(scenarios: list[dict]) -> None:
    assert len(scenarios) == 72
    assert Counter(s["n_versions"] for s in scenarios) == {2: 48, 3: 24}
    porter = _Porter()
    for s in scenarios:
        notes = s["notes"]
        chain = [n for n in notes if n["topic"] == s["topic"] and n["kind"] == "decision"]
        assert len(chain) == s["n_versions"]
        assert [n["supersedes"] for n in chain[1:]] == [n["i"] for n in chain[:-1]]
        assert len({n["text"] for n in notes}) == len(notes)
        comp, aspect = s["names"]["component"], s["names"]["aspect"]
        assert comp[0].lower() in chain[0]["text"].lower() and aspect[0].lower() in chain[0]["text"].lower()
        assert comp[1].lower() in chain[-1]["text"].lower() and aspect[1].lower() in chain[-1]["text"].lower()
        third = porter.stems(f"{comp[2]} {aspect[2]}") - STOP
        for n in chain:
            assert not porter.stems(n["text"]) & third, n["text"]  # no version uses the third names
        wordings = {q["wording"]: q for q in s["questions"]}
        assert set(wordings) == set(para.WORDINGS)
        for q in s["questions"]:
            assert q["gold_note"] == chain[-1]["i"] and q["gold_option"] == chain[-1]["option"]
            assert not any(o.lower() in q["text"].lower() for o in para.ASPECT_NAMES[s["aspect"]]["options"])
        assert comp[2].lower() in wordings["neither"]["text"].lower()
        if s["n_versions"] == 2:
            # the two versions share no word of the component's or the aspect's names
            names = porter.stems(" ".join(comp[:2] + aspect[:2])) - STOP
            assert not porter.stems(chain[0]["text"]) & porter.stems(chain[1]["text"]) & names


def test_replacing_notes_often_have_no_cue_and_rarely_name_the_old_option(scenarios: list[dict]) -> None:
    replacing = [n for s in scenarios for n in s["notes"] if n["supersedes"] is not None]
    wordings = Counter(n["wording"] for n in replacing)
    assert wordings["no_cue"] >= 25 and wordings["cue"] >= 25 and 10 <= wordings["names_old"] <= 35
    assert sum(n["shared_words"] == 0 for n in replacing) >= 30
    # plain BM25 with the old words ranks an obsolete version first in most scenarios
    old = [q for s in scenarios for q in s["questions"] if q["wording"] == "old_words"]
    assert sum(q["bm25_first_topic_note_obsolete"] for q in old) > 50


@pytest.mark.skipif(not has_vectors_setting(), reason="this evomem has no vectors setting")
def test_hybrid_against_bm25_report(scenarios: list[dict]) -> None:
    names = {"flat-dates", "oracle", "evomem-agent", "evomem-agent+bm25"}
    memories = [m for m in build_memories(linkers=(), sets=("para",)) if m.name in names]
    report = run_suite({"para": scenarios[:3]}, memories)
    block = report["sets"]["para"]
    assert set(block["memories"]) == names
    bw = block["memories"]["evomem-agent+bm25"]["by_wording"]
    assert set(bw) == {"all", *para.WORDINGS}
    assert bw["all"]["questions"] == 9 and bw["old_words"]["hit_rate"] == bw["new_words"]["hit_rate"] == 1.0
    assert block["memories"]["evomem-agent+bm25"]["main"]["odr"] == 0.0
    cmp = block["hybrid_vs_bm25"]["evomem-agent"]
    assert cmp["baseline"] == "evomem-agent+bm25" and set(cmp["hits"]) == {"all", *para.WORDINGS}
    assert 0.0 <= cmp["hits"]["all"]["p"] <= 1.0
    md = markdown(report)
    assert "hybrid recall (BM25 + vectors, RRF) against BM25 alone" in md and "neither: hit / ODR" in md
    rows = [r for r in report["rows"] if r["type"] == "answer" and r["memory"] == "evomem-agent"]
    assert all("via" in r and "hit" in r for r in rows)


def test_bm25_twin_is_labelled_and_runs_on_the_paraphrase_set_only() -> None:
    if not has_vectors_setting():
        pytest.skip("this evomem has no vectors setting")
    twin = EvoMemMemory(vectors="off", sets=("para",))
    assert twin.name == "evomem-agent+bm25" and twin.settings().vectors.mode == "off"  # type: ignore[attr-defined]
    names = [m.name for m in build_memories(linkers=("scored",), sets=("odr", "para"))]
    assert {"evomem-agent+bm25", "evomem-auto:scored+bm25"} <= set(names)


def test_cli_runs_the_paraphrase_set(tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--sets", "para", "--limit", "2", "--no-progress"]
    rc = quality_main([*args, "--memories", "flat,flat-dates,oracle"])
    assert rc == 0
    report = json.loads((tmp_path / "quality.json").read_text())
    assert report["sets"]["para"]["scenarios"] == 2
    assert report["sources"]["para"]["limit"] == 2 and report["sources"]["para"]["n"] == 72
    assert quality_main(["--out", str(tmp_path), "--sets", "nope", "--no-progress"]) == 2
