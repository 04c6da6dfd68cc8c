"""bench.cross_pairs: the cross-encoder's calibration split is a property of each scenario."""

from __future__ import annotations

from bench import cross_pairs


def test_the_calibration_split_holds_back_a_share_by_scenario_id_whatever_else_is_there() -> None:
    ids = [f"dev-x-{i:04d}" for i in range(4000)]
    held = [i for i in ids if cross_pairs.in_calib("dev-x", i, seed=7)]
    assert 0.17 < len(held) / len(ids) < 0.23
    # the same scenario gets the same answer however many sources or scenarios come before it
    assert held == [i for i in reversed(ids) if cross_pairs.in_calib("dev-x", i, seed=7)][::-1]
    # another seed, or the same id in another source, is another draw
    assert held != [i for i in ids if cross_pairs.in_calib("dev-x", i, seed=8)]
    assert held != [i for i in ids if cross_pairs.in_calib("dev-y", i, seed=7)]
