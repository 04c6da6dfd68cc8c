"""lab/source_shift.py: the trainer's leave-one-source-out block as a table."""

from __future__ import annotations

from lab import source_shift


def _row(p: float, n: int, error: float) -> dict:
    return {
        "top_at_0.9": [p, n],
        "error": error,
        "reliability": [{"band": "0.9-1.0", "offers": n, "mean_p": 0.95, "right": p}],
    }


def test_the_table_has_a_row_per_source_the_pool_and_the_worst() -> None:
    shift = {
        m: {
            "pooled": _row(0.9, 40, 0.05),
            "worst_source_at_0.9": 0.8,
            "per_source": {"dev-a": _row(0.8, 20, 0.1), "dev-b": _row(1.0, 20, 0.0)},
        }
        for m in ("scenario_folds", "source_out_refit")
    }
    md = source_shift.markdown(shift, 0.37)
    assert "| dev-a | 0.800 (20) / 0.100 | 0.800 (20) / 0.100 |" in md
    assert "| **pooled** | 0.900 (40) / 0.050 |" in md
    assert "| worst source at >= 0.9 | 0.800 | 0.800 |" in md
    assert "| 0.9-1.0 | 40: 0.95 / 0.90 |" in md
