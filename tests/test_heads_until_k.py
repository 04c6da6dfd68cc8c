"""Recall reads only the heads it needs (``recalling.heads_until_k``), on a real SQLite file.

The chains a recall keeps, and the hits it keeps for them, must be those that reading every
hit's head gives; the forgotten chains it reports must be all of them whenever fewer than
``k`` chains pass (the only case where recall says so).
"""

from __future__ import annotations

import random

import pytest

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.recall import heads_until_k, kept_nodes
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


class CountingNodes(Counting):
    def __init__(self, store: SQLiteStore) -> None:
        super().__init__(store)
        self.asked: list[str] = []

    def get_many(self, ids):  # type: ignore[no-untyped-def]
        ids = list(ids)
        self.asked += ids
        return self.store.get_many(ids)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_without_filters_the_first_batch_is_k_heads(store: SQLiteStore, k: int) -> None:
    """Only a forgotten head fails a recall without scope or tags: when the first ``k`` chains are
    in force, ``k`` heads are read, not twice as many."""
    checked = 0
    for query in ("ledger queue", "billing cache deploys", "search option", "revised moved", "option 4"):
        hits = store.search(query_terms(query), namespace="default", limit=200)
        every = store.heads(h.chain_root for h in hits)
        roots = list(dict.fromkeys(h.chain_root for h in hits))
        if len(roots) <= k or any(every[r].status == "forgotten" for r in roots[:k]):
            continue
        counting = Counting(store)
        _, got = heads_until_k(counting, hits, k=k, scope=None, tags=())  # type: ignore[arg-type]
        assert got == select_hits(hits, every, k=k)
        assert counting.read == k
        checked += 1
    assert checked


def test_the_kept_hits_nodes_are_read_without_the_heads_read() -> None:
    """A kept hit on its chain's head is the head already read; only older versions are read, and
    the nodes are those reading every kept hit gives."""
    s = SQLiteStore.in_memory()
    for i in range(20):
        v1 = s.insert(NewNote(raw_text=f"Decision {i}: the ledger uses option {i}."))
        if i % 2 == 0:
            s.insert(NewNote(raw_text=f"Decision {i}, revised: the ledger moved."), supersedes=v1.id)
    hits = s.search(query_terms("ledger revised decision"), namespace="default", limit=200)
    counting = CountingNodes(s)
    heads, kept = heads_until_k(counting, hits, k=5, scope=None, tags=())  # type: ignore[arg-type]
    nodes = kept_nodes(counting, kept, heads)  # type: ignore[arg-type]
    assert nodes == s.get_many(h.node_id for h in kept)
    on_heads = {h.node_id for h in kept if heads[h.chain_root].id == h.node_id}
    assert on_heads and not on_heads & set(counting.asked)
    assert set(counting.asked) == {h.node_id for h in kept} - on_heads
