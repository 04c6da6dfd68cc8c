"""bench.embedders' own arithmetic: the vector ranking metrics and the noise pairs, on a fake embedder."""

from __future__ import annotations

import numpy as np

from bench.embedders import markdown, noise_cosines, vector_ranking
from evomem.adapters.models.embedding import HashingEmbedder

SCENARIO = {
    "notes": [
        {"text": "the ledger database is postgres", "supersedes": None},
        {"text": "lunch on fridays at noon", "supersedes": None},
        {"text": "the ledger database is now sqlite", "supersedes": 0},
    ],
    "questions": [
        {"kind": "main", "text": "which database does the ledger use", "gold_note": 2, "wording": "new_words"},
        {"kind": "distractor", "text": "lunch", "gold_note": 1},
    ],
}


def test_the_ranking_counts_main_questions_and_gold_edges_only() -> None:
    kept: list[np.ndarray] = []
    out = vector_ranking(HashingEmbedder().encode, [SCENARIO], kept)
    assert out["all"] == {"q_hit5": 1.0, "n": 1} and out["new_words"] == {"q_hit5": 1.0, "n": 1}
    assert out["edges"] == {"edge_r3": 1.0, "n": 1}
    assert len(kept) == 1 and kept[0].shape == (3, HashingEmbedder().dim)


def test_a_predecessor_outside_the_top_three_is_a_miss() -> None:
    notes = [{"text": f"note {w}", "supersedes": None} for w in ("alpha", "beta", "gamma", "delta")]
    notes.append({"text": "note beta gamma delta", "supersedes": 0})
    out = vector_ranking(HashingEmbedder().encode, [{"notes": notes, "questions": []}])
    assert out["edges"] == {"edge_r3": 0.0, "n": 1}


def test_noise_pairs_are_seeded_and_cross_scenarios() -> None:
    a, b = np.eye(4, dtype=np.float32)[:2], np.eye(4, dtype=np.float32)[2:]
    first = noise_cosines([a, b], 50, seed=3)
    assert np.array_equal(first, noise_cosines([a, b], 50, seed=3))
    assert not first.any()  # every pair joins the two scenarios, whose vectors are orthogonal


def test_the_report_renders_one_embedder_without_the_product_benches() -> None:
    ranking = {"all": {"q_hit5": 1.0, "n": 1}, "edges": {"edge_r3": 1.0, "n": 1}}
    report = {
        "date": "2026-12-06",
        "python": "3.11",
        "sets": {"para": {"group": "dev", "scenarios": 1}},
        "embedders": {
            "static": {
                "name": "s",
                "dim": 256,
                "load_s": 0.1,
                "embed_ms": {"p50_ms": 0.1, "p95_ms": 0.2},
                "ranking": {"para": ranking},
                "noise": {"p50": 0.3, "p95": 0.5, "p99": 0.6},
            }
        },
    }
    text = markdown(report)
    assert "| static (`s`) | 256 | 1.000 (n=1) |" in text and "bench.quality" not in text
