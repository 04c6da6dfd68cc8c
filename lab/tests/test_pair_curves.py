"""lab.pair_curves: the pair model's out-of-fold links, precision against recall by family and
regime, read from a ``train_linker --dump`` file (here a small one written by the test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab import pair_curves as pc


def row(
    p: float,
    ok: bool,
    *,
    family: str = "written",
    long: bool = False,
    gold: int | None = 1,
    best: int = 1,
    earlier: bool = False,
    **kw,
):
    return {
        "source": kw.get("source", "dev-x"),
        "family": family,
        "scenario": kw.get("scenario", 0),
        "linked": True,
        "long": long,
        "note_i": 5,
        "best_i": best,
        "gold_i": gold,
        "earlier": earlier,
        "note": kw.get("note", "note"),
        "kind": "decision",
        "gold": None if gold is None else "g",
        "top": [[p, "cand"]],
        "ok": ok,
    }


def test_curve_links_ties_together_and_counts_recall_over_notes_with_a_predecessor():
    rows = [row(0.9, True), row(0.9, False, best=0), row(0.8, True), row(0.7, False, gold=None, best=3)]
    c = pc.curve(rows)
    assert c["gold"] == 3 and c["notes"] == 4
    assert [(pt["threshold"], pt["links"], pt["wrong"]) for pt in c["points"]] == [
        (0.9, 2, 1),
        (0.8, 3, 1),
        (0.7, 4, 2),
    ]
    assert c["points"][1]["recall"] == pytest.approx(2 / 3) and c["points"][1]["precision"] == pytest.approx(2 / 3)


def test_shown_needs_enough_right_links_not_only_a_perfect_rate():
    # 0 wrong in n links shows 0.98 at 95 % only from n = 149 on (1 - 0.05 ** (1 / n) <= 0.02)
    few = pc.curve([row(1 - k / 1000, True) for k in range(148)])["points"]
    assert pc.at_precision(few, 0.98) is not None and pc.shown(few) is None
    enough = pc.curve([row(1 - k / 1000, True) for k in range(149)] + [row(0.5, False)])["points"]
    s = pc.shown(enough)
    assert s is not None and s["links"] == 149 and s["wrong"] == 0


def test_earlier_versions_follow_the_gold_chain_back():
    from lab.train_linker import earlier_versions

    notes = [
        {"i": 0, "supersedes": None},
        {"i": 1, "supersedes": 0},
        {"i": 2, "supersedes": None},
        {"i": 3, "supersedes": 1},
    ]
    assert earlier_versions(notes, 3) == {1, 0}
    assert earlier_versions(notes, 1) == {0}
    assert earlier_versions(notes, 2) == set()
    assert earlier_versions(notes, None) == set()


def test_summarise_splits_family_and_regime_and_counts_links_to_an_earlier_version():
    rows = [
        row(0.95, True),
        row(0.94, False, best=0, earlier=True),  # to the gold's own predecessor
        row(0.93, False, best=4),  # to another decision
        row(0.99, True, family="generated"),
        row(0.97, True, long=True),
    ]
    s = pc.summarise(rows)
    short = s["written/short"]
    assert short["notes"] == 3 and short["gold"] == 3
    last = pc.curve(rows[:3])["points"][-1]
    assert (last["links"], last["wrong"], last["earlier"]) == (3, 2, 1)
    assert short["at"]["0.90"]["links"] == 1  # the first wrong link already drops it below 0.90
    assert s["written/long"]["notes"] == 1 and s["generated/short"]["notes"] == 1 and s["generated/long"]["notes"] == 0


def test_cross_rows_take_only_written_short_notes_of_odd_scenarios():
    rows = [
        row(0.9, True, scenario=1),
        row(0.9, True, scenario=2),  # even: the encoder may have trained on it
        row(0.9, True, scenario=3, long=True),
        row(0.9, True, scenario=5, family="generated"),
        row(0.5, True, scenario=7),  # below the grid
    ]
    assert [r["scenario"] for r in pc.cross_rows(rows)] == [1]
    grid = pc.cross_grid([row(0.9, True), row(0.9, False)], [1.5, -0.5])
    cell = next(g for g in grid if g["p_at"] == 0.9 and g["z_at"] == 0.0)
    assert (cell["links"], cell["wrong"]) == (1, 0)
    cell = next(g for g in grid if g["p_at"] == 0.9 and g["z_at"] == -1.0)
    assert (cell["links"], cell["wrong"]) == (2, 1)


def test_main_writes_the_table_the_numbers_and_the_picture(tmp_path: Path):
    dump = tmp_path / "oof.jsonl"
    rows = [row(1 - k / 500, k % 10 != 9) for k in range(60)] + [row(0.9, True, family="generated", long=True)]
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "curves"
    assert pc.main([str(dump), "--out", str(out)]) == 0
    body = json.loads(out.with_suffix(".json").read_text())
    assert body["families"]["written/short"]["gold"] == 60 and body["cross"] is None
    assert "| written/short | 60 | 60 |" in out.with_suffix(".md").read_text()
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_old_dump_is_refused_with_a_clear_error(tmp_path: Path):
    dump = tmp_path / "old.jsonl"
    dump.write_text(json.dumps({"source": "dev-a", "top": [[0.5, "x"]], "ok": True}) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="rerun --dump"):
        pc.main([str(dump), "--out", str(tmp_path / "c")])


def test_the_learning_curve_trains_on_nested_shares_of_the_written_scenarios_and_scores_every_note():
    """lab.linker_learning: each share trains on fewer written scenarios, never fewer generated
    ones, and every share is judged on the same out-of-fold notes (here a logistic regression, the
    trees need scikit-learn, over two small generated sets, one filed as hand-written)."""
    from bench import scenarios as scen
    from evomem.domain.linkers.pair import PairLinker
    from evomem.domain.linkers.pair_model import PairModel
    from lab import linker_learning as ll
    from lab import train_linker as tl

    sources = [
        ("dev-x", scen.generate(10, 5), {"file": "lab/devdata/dev-x.jsonl"}),
        ("gen", scen.generate(10, 6), {"generator": scen.GENERATOR, "seed": 6}),
    ]
    groups = tl.build_groups(sources, PairLinker(None, model=PairModel(kind="lr", link_at=1.0, abstain_at=1.0)))
    trained: list[tuple[float, int]] = []

    def lr(x, y, w, seed):
        trained.append((round(float(w.sum()), 6), len(y)))
        beta, mean, scale, b0 = tl.fit(x, y, w)
        return lambda z: tl._prob(beta, mean, scale, b0, z.copy())

    curve = ll.learning(sources, groups, seed=3, fractions=(0.3, 1.0), fitter=lr)
    assert [e["share"] for e in curve] == [0.3, 1.0]
    assert curve[0]["written_scenarios_trained"] < curve[1]["written_scenarios_trained"] == 8
    sizes = [n for _, n in trained]
    assert sum(sizes[:5]) < sum(sizes[5:])  # the smaller share trains on fewer rows, fold by fold
    # each training fold weighs the two families alike whatever the share (1000 per family)
    assert all(abs(total - 2000) < 1e-6 for total, _ in trained)
    for e in curve:
        assert e["written"]["gold"] == curve[0]["written"]["gold"] > 0  # the same notes judged
        assert 0 <= e["written"]["recall_at_0.95"] <= e["written"]["recall_at_0.90"] <= 1
