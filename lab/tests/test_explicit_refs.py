"""``lab.explicit_refs``: the two reference rules measured on labelled records."""

from __future__ import annotations

from typing import Any

import pytest

from lab import explicit_refs


def _note(i: int, text: str, supersedes: int | None = None) -> dict[str, Any]:
    return {"i": i, "text": text, "kind": "decision", "supersedes": supersedes}


def test_it_counts_declarations_and_mentions_against_the_gold_links() -> None:
    scenario = {
        "id": "s1",
        "notes": [
            _note(0, "ADR-1: Queue\n\nWe use RabbitMQ."),
            _note(1, "ADR-2: Queue again\n\nSupersedes ADR-1. We use Kafka.", supersedes=0),
            _note(2, "ADR-3: Streams\n\nA proposal: Pulsar would replace ADR-2 for streams."),
        ],
    }
    rows = explicit_refs.fires([scenario])
    # ADR-1 is superseded by ADR-2, so it is no candidate of ADR-3; pairs: (1,0), (2,1)
    assert [(r["note"], r["record"]) for r in rows] == [(1, 0), (2, 1)]
    refers = explicit_refs.summary(rows, "refers")
    declares = explicit_refs.summary(rows, "declares")
    assert declares == {"pairs": 2, "fires": 1, "right": 1, "precision": 1.0, "supersessions": 1, "recall": 1.0}
    assert refers["fires"] == 1 and refers["right"] == 1  # "would replace ... proposal": hedged, not counted


def test_it_refuses_blind_data() -> None:
    with pytest.raises(SystemExit, match="refusing blind data"):
        explicit_refs.main(["bench/blind/anything.jsonl"])
