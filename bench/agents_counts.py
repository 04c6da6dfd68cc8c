"""The counters of ``bench.agents`` (one scenario set's, or a pool of sets'), shared by the runner and
its report (``bench.agents_report``), so neither imports the other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ("ignore", "hints", "perfect", "calibrated", "credulous")
CONFIRMERS = ("perfect", "calibrated", "credulous")
BASELINE = "flat-dates"
CONFIRM_AT = 0.9  # the calibrated agent's threshold on the shown probability
BUCKETS = 10  # reliability bands of 0.1

COUNTERS = (
    "questions", "correct", "obsolete", "wrong_scope", "miss", "other",
    "valid_decisions", "hidden", "confirmed", "confirmed_right", "refused", "gold_edges",
    "followed", "followed_spoiled", "followed_fixed", "top_unreplaced", "top_unreplaced_hinted",
)  # fmt: skip
OFFER_COUNTERS = (
    "notes", "no_gold_notes", "no_gold_offered", "no_gold_offers", "nondecision_notes", "nondecision_offered",
    "gold_notes", "gold_offered", "gold_top", "offers", "offers_right", "offers_unscored",
)  # fmt: skip


def blank_set() -> dict[str, Any]:
    return {
        "scenarios": 0,
        "agents": {a: dict.fromkeys(COUNTERS, 0) for a in (*AGENTS, BASELINE)},
        "offers": dict.fromkeys(OFFER_COUNTERS, 0),
        "reliability": [[0, 0] for _ in range(BUCKETS)],  # per band of 0.1: offers, right
        "seconds": 0.0,
    }


def bucket(score: float) -> int:
    return min(max(int(score * BUCKETS), 0), BUCKETS - 1)


def merge(sets: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counters summed over sets (a column group's pool)."""
    out = blank_set()
    for s in sets:
        out["scenarios"] += s["scenarios"]
        out["seconds"] += s["seconds"]
        for a, c in s["agents"].items():
            for key, v in c.items():
                out["agents"][a][key] += v
        for key, v in s["offers"].items():
            out["offers"][key] += v
        for band, (n, r) in zip(out["reliability"], s["reliability"], strict=True):
            band[0] += n
            band[1] += r
    return out
