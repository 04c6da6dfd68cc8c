"""``matched_fields`` (which fields of a matching version hold which query terms) answers as
splitting every field into words did, whatever the text: the shortcuts only skip work."""

from __future__ import annotations

import random
from collections.abc import Sequence

from evomem.domain.model import MemoryNode
from evomem.domain.recall import MATCH_FIELDS, matched_fields
from evomem.domain.text import words


def matched_fields_before(node: MemoryNode, terms: Sequence[str]) -> tuple[list[str], list[str]]:
    fields: list[str] = []
    found: list[str] = []
    for name in MATCH_FIELDS:
        value = " ".join(node.tags) if name == "tags" else getattr(node, name)
        if not value:
            continue
        vocab = set(words(value))
        stems = {w[:5] for w in vocab if len(w) >= 5}
        hit = [t for t in terms if t in vocab or (len(t) >= 5 and t[:5] in stems)]
        if hit:
            fields.append(name)
            found.extend(t for t in hit if t not in found)
    return fields, found


VOCAB = ["ledger", "ledgers", "Ledgering", "queue", "queues", "cache", "caché", "Postgres", "postgresql", "ci",
         "_ci_", "db", "İstanbul", "istanbul", "straße", "STRASSE", "kafka-queue", "rust", "trusty", "42"]  # fmt: skip


def test_matched_fields_answers_as_splitting_every_field() -> None:
    rng = random.Random(16)
    terms_pool = [w for v in VOCAB for w in words(v)] + ["ledge", "postg", "queu", "strass", "cach"]

    def text() -> str:
        return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 6)))

    for _ in range(2000):
        node = MemoryNode(
            id="n", raw_text=text(), change=text(), trigger=text(), summary=text(),
            consequences=text(), tags=tuple(w for w in words(text()) if w)[:2],
        )  # fmt: skip
        terms = list(dict.fromkeys(rng.choice(terms_pool) for _ in range(rng.randint(1, 4))))
        assert matched_fields(node, terms) == matched_fields_before(node, terms)
