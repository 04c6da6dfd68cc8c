"""Recall reads only the heads it needs (``recalling.heads_until_k``), on a real SQLite file.

The chains a recall keeps, and the hits it keeps for them, must be those that reading every
hit's head gives; the forgotten chains it reports must be all of them whenever fewer than
``k`` chains pass (the only case where recall says so).
"""

from __future__ import annotations

import random

import pytest

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.recall import heads_until_k
from evomem.domain.model import NewNote
from evomem.domain.recall import select_hits
from evomem.domain.text import query_terms


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SQLiteStore:
    rng = random.Random(4)
    s = SQLiteStore(tmp_path_factory.mktemp("heads") / "heads.db")
    for i in range(120):
        scope = rng.choice([None, None, "staging", "production"])
        tags = tuple(rng.sample(["infra", "payments", "team"], rng.randint(0, 2)))
        words = " ".join(rng.sample(["ledger", "queue", "cache", "search", "billing", "deploys"], 3))
        node = s.insert(NewNote(raw_text=f"Decision {i}: the {words} use option {i % 9}.", scope=scope, tags=tags))
        if i % 3 == 0:  # a second version, so a chain has hits on two versions
            node = s.insert(NewNote(raw_text=f"Decision {i}, revised: the {words} moved on.", scope=scope, tags=tags),
                            supersedes=node.id)  # fmt: skip
        if i % 5 == 0:
            s.forget(node.id)
    return s


class Counting:
    def __init__(self, store: SQLiteStore) -> None:
        self.store, self.read = store, 0

    def heads(self, roots):  # type: ignore[no-untyped-def]
        roots = list(roots)
        self.read += len(roots)
        return self.store.heads(roots)


@pytest.mark.parametrize("k", [1, 3, 5, 40, 500])
@pytest.mark.parametrize(
    ("scope", "tags"), [(None, ()), ("staging", ()), (None, ("payments",)), ("production", ("team",))]
)
def test_the_kept_hits_are_those_of_reading_every_head(store: SQLiteStore, k: int, scope, tags) -> None:
    for query in ("ledger queue", "billing cache deploys", "search option", "revised moved"):
        hits = store.search(query_terms(query), namespace="default", limit=200)
        every = store.heads(h.chain_root for h in hits)
        want = select_hits(hits, every, k=k, scope=scope, tags=tags)
        counting = Counting(store)
        heads, got = heads_until_k(counting, hits, k=k, scope=scope, tags=tags)  # type: ignore[arg-type]
        assert got == want
        roots = {h.chain_root for h in hits}
        forgotten = {r for r in roots if r in every and every[r].status == "forgotten"}
        if len({h.chain_root for h in want}) < k:  # recall reports the forgotten chains: all of them
            assert {r for r in roots if r in heads and heads[r].status == "forgotten"} == forgotten
            assert counting.read == len(roots)
        if k <= 3 and scope is None and not tags and len(roots) > 4 * k:
            assert counting.read < len(roots)  # and it did not read every head to find them
