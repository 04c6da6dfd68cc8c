"""lab/decides_study.py: each source is held out of its own model, evaluation sets are scored by the
model of all training sources, and the shares at the cut-off mean what they say (toy sources and a toy
scorer: no embedder, no development data)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab import decides_study as ds


def _source(name: str, n: int, word: str) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """``n`` scenarios: a decision, its replacement (both with ``word``), a context note, a question."""
    scenarios = []
    for k in range(n):
        notes = [
            {"i": 0, "kind": "decision", "text": f"{word} {name} {k} one"},
            {"i": 1, "kind": "decision", "text": f"{word} {name} {k} two", "supersedes": 0},
            {"i": 2, "kind": "context", "text": f"note {name} {k}"},
        ]
        scenarios.append({"notes": notes, "questions": [{"text": f"what {name} {k}?"}]})
    return name, scenarios, {}


def test_each_source_is_held_out_of_its_own_model_and_the_shares_are_right() -> None:
    seen: list[set[str]] = []

    def fitter(texts: Sequence[str], labels: Sequence[int]) -> Any:
        seen.append({t.split()[1] for t in texts if not t.startswith(("note", "what"))})
        return lambda ts: [1.0 if t.startswith("we") else -1.0 for t in ts]

    sources = [_source("dev-a", 6, "we"), _source("dev-b", 6, "we")]
    evals = [_source("e", 3, "they")]  # its decisions read as non-decisions by the toy scorer
    res = ds.study({"toy": fitter}, sources, evals)
    assert set(res) == {"dev-a", "dev-b", "e", "_source_out_cut"}
    assert {"dev-b"} in seen and {"dev-a"} in seen and {"dev-a", "dev-b"} in seen  # left out; all for e
    a, e = res["dev-a"]["toy"], res["e"]["toy"]
    assert res["dev-a"]["notes"] == 6 * 4 and res["dev-a"]["decisions"] == 12 and res["dev-a"]["true_pairs"] == 6
    assert a["auc"] == 1.0 and a["decisions_lost"] == 0.0 and a["nondecisions_passed"] == 0.0
    assert a["true_pairs_lost"] == 0.0
    assert e["decisions_lost"] == 1.0 and e["true_pairs_lost"] == 1.0 and e["nondecisions_passed"] == 0.0
    # the cut-off from the hand-written sources each held out of its model: every true pair there scores 1
    cut = res["_source_out_cut"]["toy"]
    assert cut["at_logit"] == 1.0 and cut["e"]["true_pairs_lost"] == 1.0
