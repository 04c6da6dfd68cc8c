"""lab.cross_pairs: the cross-encoder's calibration split is a property of each scenario."""

from __future__ import annotations

from lab import cross_pairs


def test_the_calibration_split_holds_back_a_share_by_scenario_id_whatever_else_is_there() -> None:
    ids = [f"dev-x-{i:04d}" for i in range(4000)]
    held = [i for i in ids if cross_pairs.in_calib("dev-x", i, seed=7)]
    assert 0.17 < len(held) / len(ids) < 0.23
    # the same scenario gets the same answer however many sources or scenarios come before it
    assert held == [i for i in reversed(ids) if cross_pairs.in_calib("dev-x", i, seed=7)][::-1]
    # another seed, or the same id in another source, is another draw
    assert held != [i for i in ids if cross_pairs.in_calib("dev-x", i, seed=8)]
    assert held != [i for i in ids if cross_pairs.in_calib("dev-y", i, seed=7)]


def _export_cross():
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for p in (root / "lab", root / "services", root):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    import export_cross

    return export_cross


def _calib(source: str, entry: int, gbt: list[float], logit: list[float], gold: int | None) -> list[dict]:
    return [
        {"entry": f"{source}:{entry}", "group": f"{source}:{entry}", "source": source, "rank": k, "gbt": p,
         "logit": z, "label": int(k == gold), "gold": gold is not None}
        for k, (p, z) in enumerate(zip(gbt, logit, strict=True))
    ]  # fmt: skip


def test_the_cross_encoder_links_only_where_the_pair_models_rule_holds_for_the_written_files() -> None:
    """lab/export_cross.py sets ``link_score`` by the pair model's rule (``lab.calibration``):
    the links must show precision 0.98 pooled *and* on the hand-written files as a family. Here
    six written files of 25 right links each (too few for any one file to be held on its own) and
    one wrong link at the top: pooled, 350 right and 1 wrong show it, the written family's 150
    and 1 do not, so the encoder never links (``inf``; the rule before 2026-12-06 linked all).
    Without that wrong link the family's 150 right links show it, and everything links."""
    ec = _export_cross()
    assert ec.family("dev-a") == "written" and ec.family("gen-odr-1001") == "generated"
    written = ("dev-a", "dev-b", "dev-c", "dev-d", "dev-e", "dev-h")
    generated = [r for i in range(200) for r in _calib("gen-odr-1001", i, [0.6, 0.3], [6.0, -4.0], 0)]
    right = [r for src in written for i in range(25) for r in _calib(src, i, [0.6, 0.3], [5.0, -4.0], 0)]
    wrong = _calib("dev-a", 99, [0.6, 0.3], [8.0, -4.0], 1)  # the encoder's best is not the predecessor
    strict = ec.calibrate(generated + right + wrong, gbt_link_at=1.0)
    assert strict["link_score"] == float("inf") and strict["calibration"]["all"]["links"] == 0
    lenient = ec.calibrate(generated + right, gbt_link_at=1.0)
    assert lenient["link_score"] < float("inf")
    assert lenient["calibration"]["all"]["links"] == 350 and lenient["calibration"]["all"]["precision"] == 1.0
