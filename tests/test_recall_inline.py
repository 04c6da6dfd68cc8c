"""speed21: ``search_both`` searches by meaning on the calling thread when that search is quick
(``Vectors.quick``: the text's vector cached, a graph in memory to search), on the pool otherwise;
the answers are the same either way. ``SemanticIndex.quick`` says so only when all of it holds."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import numpy as np

from evomem.adapters.vectors.semantic import MAX_EMBED_CHARS, SemanticIndex
from evomem.app.recall import search_both
from evomem.domain.model import SearchHit

HITS = [SearchHit("a", "a", 2.0), SearchHit("b", "b", 1.0)]
NEAR = [("c", 0.9), ("a", 0.8)]


class FakeStore:
    def __init__(self) -> None:
        self.threads: list[str] = []

    def search(self, terms: Sequence[str], **kw: Any) -> list[SearchHit]:
        self.threads.append(threading.current_thread().name)
        return list(HITS)


class FakeVectors:
    def __init__(self, quick: bool | Exception) -> None:
        self._quick = quick
        self.threads: list[str] = []
        self.caught_up = 0

    def quick(self, text: str, *, namespace: str) -> bool:
        if isinstance(self._quick, Exception):
            raise self._quick
        return self._quick

    def nearest(self, text: str, *, namespace: str, limit: int) -> list[tuple[str, float]]:
        self.threads.append(threading.current_thread().name)
        return NEAR[:limit]

    def catch_up(self, namespace: str) -> None:
        self.caught_up += 1


class CountingPool:
    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="pool")
        self.asked = 0

    def __call__(self) -> Executor:
        self.asked += 1
        return self.pool


def run(vectors: FakeVectors) -> tuple[Any, FakeStore, CountingPool]:
    store, pool = FakeStore(), CountingPool()
    try:
        out = search_both(store, vectors, pool, ["x"], "x", "default", 50, 20)  # type: ignore[arg-type]
    finally:
        pool.pool.shutdown()
    return out, store, pool


def test_a_quick_vector_search_runs_here_and_answers_as_on_the_pool() -> None:
    here = threading.current_thread().name
    (inline, store, pool), (pooled, _, pool2) = run(FakeVectors(True)), run(FakeVectors(False))
    assert inline == pooled == (HITS, NEAR, None)
    assert pool.asked == 0 and pool2.asked == 1
    assert store.threads == [here]


def test_the_vector_search_goes_to_the_pool_unless_quick_and_a_failing_check_is_not_quick() -> None:
    here = threading.current_thread().name
    for quick, where in ((True, here), (False, "pool"), (RuntimeError("boom"), "pool")):
        vectors = FakeVectors(quick)
        out, _, _ = run(vectors)
        assert out == (HITS, NEAR, None)
        assert vectors.threads[0].startswith(where), (quick, vectors.threads)


class Embedder:
    name, dim, state = "fake", 4, "loaded"

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.calls += 1
        return [np.ones(4, dtype=np.float32) for _ in texts]


class Table:
    def __init__(self, quick: bool) -> None:
        self.is_quick = quick

    def quick(self, namespace: str) -> bool:
        return self.is_quick and namespace == "default"

    def search(self, vector: Any, namespace: str, k: int = 10) -> list[tuple[str, float]]:
        return [("n1", 0.1)]


def test_semantic_index_is_quick_only_with_the_text_cached_and_a_quick_table() -> None:
    table = Table(quick=True)
    vectors = SemanticIndex(Embedder(), table)  # type: ignore[arg-type]
    long = "y" * (MAX_EMBED_CHARS + 10)
    assert not vectors.quick("some text", namespace="default")  # not embedded yet: the pool overlaps it
    vectors.nearest("some text", namespace="default", limit=5)
    vectors.prepare(long)
    assert vectors.quick("some text", namespace="default")
    assert vectors.quick(long + "z", namespace="default")  # cached under its first MAX_EMBED_CHARS
    assert not vectors.quick("some text", namespace="other")  # no graph there: a scan
    assert not vectors.quick("  ", namespace="default")
    table.is_quick = False
    assert not vectors.quick("some text", namespace="default")
    table.is_quick = True
    vectors._queued = 1  # a write queued by add_soon: nearest would wait for it
    assert not vectors.quick("some text", namespace="default")
