"""The embedder study's measures (lab/embedder_study.py) on hand-made numbers."""

from __future__ import annotations

import numpy as np

from lab import embedder_study as es


def test_auc_counts_ties_half_and_orders() -> None:
    assert es.auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert es.auc([0.1], [0.9]) == 0.0
    assert es.auc([0.5], [0.5]) == 0.5
    assert es.auc([], [0.1]) is None


def test_cutoff_lets_at_most_the_rate_of_negatives_through() -> None:
    neg = [i / 100 for i in range(100)]  # 0.00 .. 0.99
    cut = es.cutoff(neg, 0.08)
    assert sum(x >= cut for x in neg) <= 8
    assert sum(x >= cut - 0.011 for x in neg) > 8  # and no higher than it needs to be


def test_rows_rank_the_gold_among_earlier_decision_like_notes_only() -> None:
    notes = [
        {"i": 0, "text": "a", "kind": "decision"},
        {"i": 1, "text": "noise", "kind": "noise"},  # never a candidate
        {"i": 2, "text": "b", "kind": "distractor"},
        {"i": 3, "text": "a2", "kind": "decision", "supersedes": 0},
    ]
    unit = {"a": [1.0, 0.0], "noise": [0.0, 1.0], "b": [0.6, 0.8], "a2": [0.8, 0.6]}
    vec = {k: np.asarray(v) for k, v in unit.items()}
    rows = es.rows_of([{"notes": notes}], vec)
    last = rows[-1]
    assert last["gold"] and last["rank"] == 2  # b (0.96) is above a (0.8)
    assert abs(last["gold_cos"] - 0.8) < 1e-9 and last["others"] == [0.96]
    assert [r["kind"] for r in rows] == ["noise", "distractor", "decision"]  # note 0 has no earlier candidate
    s = es.summarise(rows, pooled_cut=0.5)
    assert s["gold"] == 1 and s["top1"] == 0.0 and s["top3"] == 1.0
