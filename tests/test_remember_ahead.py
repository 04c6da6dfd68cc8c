"""A remember's work started ahead (speed22): the note's embedding begins as remember begins, and the
BM25 candidates' rows are read while the vector half embeds the note, without changing what is found.

- ``SemanticIndex``: a text another thread is embedding is waited for, not embedded a second time; an
  embedding that failed there is done again by the caller that waited (which then reports its own failure).
- ``search_both``'s ``meanwhile`` runs with the BM25 hits before the vector half is waited for.
- ``earlier_versions`` with versions read before answers as it does without them, reading only the rest.
- The embedded wiring: the note is embedded once, and its embedding starts before the candidate search.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.adapters.vectors.semantic import SemanticIndex
from evomem.app.candidates import earlier_versions
from evomem.app.memory import MemoryService
from evomem.app.recall import search_both
from evomem.bootstrap.embedded import build_embedded
from evomem.bootstrap.vectors import vectors_problem
from evomem.domain.model import SearchHit
from evomem.settings import Settings


class GatedEmbedder:
    """Embeds after ``gate`` is set (or at once without one); fails the first ``fail`` calls."""

    name = "gated"
    state = "loaded"
    load_error = None

    def __init__(self, gate: threading.Event | None = None, fail: int = 0) -> None:
        self.gate = gate
        self.fail = fail
        self.calls: list[list[str]] = []
        self.entered = threading.Event()

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.calls.append(list(texts))
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(10)
        if len(self.calls) <= self.fail:
            raise RuntimeError("the model failed")
        return [np.full(4, float(len(t)), np.float32) for t in texts]

    def load(self) -> None:
        return None


def test_a_text_being_embedded_is_waited_for_not_embedded_again() -> None:
    gate = threading.Event()
    model = GatedEmbedder(gate)
    vectors = SemanticIndex(model, index=None)  # type: ignore[arg-type]  # no table: only the embedding
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(vectors.prepare, "the note")
        assert model.entered.wait(10)
        second = pool.submit(vectors.encode, ["the note", "another text"])
        gate.set()
        first.result(10)
        (note, other) = second.result(10)
    assert model.calls == [["the note"], ["another text"]]  # "the note" once: the second call waited for it
    assert note.tolist() == [8.0] * 4 and other.tolist() == [12.0] * 4


def test_an_embedding_that_failed_is_done_again_by_the_caller_that_waited() -> None:
    gate = threading.Event()
    model = GatedEmbedder(gate, fail=1)
    vectors = SemanticIndex(model, index=None)  # type: ignore[arg-type]
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(vectors.encode, ["the note"])
        assert model.entered.wait(10)
        second = pool.submit(vectors.encode, ["the note"])
        gate.set()
        with pytest.raises(RuntimeError):
            first.result(10)
        (note,) = second.result(10)
    assert model.calls == [["the note"], ["the note"]]
    assert note.tolist() == [8.0] * 4


class SlowVectors:
    """The vector half: answers once ``release`` is set (or after 5 s, saying so)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.waited_out = False

    def nearest(self, text: str, *, namespace: str, limit: int) -> list[tuple[str, float]]:
        self.waited_out = not self.release.wait(5)
        return [("v1", 0.9)]

    def catch_up(self, namespace: str) -> None:
        return None


class OneHitStore:
    def search(self, terms: Sequence[str], **_: Any) -> list[SearchHit]:
        return [SearchHit("w1", "w1", 1.0)]


@pytest.mark.parametrize("with_vectors", [True, False])
def test_meanwhile_gets_the_bm25_hits_before_the_vector_half_is_waited_for(with_vectors: bool) -> None:
    vectors = SlowVectors()
    seen: list[list[str]] = []

    def meanwhile(hits: list[SearchHit]) -> None:
        seen.append([h.node_id for h in hits])
        vectors.release.set()  # the vector half ends only once this ran

    with ThreadPoolExecutor(1) as pool:
        hits, near, problem = search_both(
            OneHitStore(),  # type: ignore[arg-type]
            vectors if with_vectors else None,  # type: ignore[arg-type]
            lambda: pool,
            ["ledger"],
            "the ledger",
            "default",
            20,
            10,
            meanwhile=meanwhile,
        )
    assert seen == [["w1"]] and [h.node_id for h in hits] == ["w1"] and problem is None
    assert near == ([("v1", 0.9)] if with_vectors else [])
    assert not vectors.waited_out


def test_earlier_versions_read_before_are_not_read_again_and_the_answer_is_the_same(
    service: MemoryService, store: SQLiteStore
) -> None:
    ids = [service.remember("We use Postgres for the ledger.").node.id]
    for text in ("We moved the ledger to MySQL.", "We moved the ledger to Oracle.", "The ledger is on Db2 now."):
        ids.append(service.remember(text, supersedes=ids[-1]).node.id)
    head = store.link_sketches([ids[-1]])[ids[-1]]
    expected = earlier_versions(store, [head], 3)
    assert sorted(expected) == sorted(ids[:3])
    read = store.link_sketches(ids[1:3])  # the two newest earlier versions, read before
    asked: list[set[str]] = []
    real = store.link_sketches

    def counted(node_ids):  # type: ignore[no-untyped-def]
        node_ids = set(node_ids)
        asked.append(node_ids)
        return real(node_ids)

    store.link_sketches = counted  # type: ignore[method-assign]
    assert earlier_versions(store, [head], 3, read) == expected
    assert asked == [{ids[0]}]  # only the version not read before
    assert earlier_versions(store, [head], 2, read) == {i: expected[i] for i in ids[1:3]}


@pytest.mark.skipif(vectors_problem() is not None, reason=f"no embedding model here: {vectors_problem()}")
def test_the_note_is_embedded_once_and_its_embedding_starts_before_the_candidate_search(tmp_path: Path) -> None:
    service = build_embedded(Settings(db=str(tmp_path / "m.db"), vectors="on"))
    try:
        service.remember("The team picked Grafana for dashboards.")  # loads the model and the linker
        vectors = service.vectors
        assert isinstance(vectors, SemanticIndex)
        model, events = vectors.embedder, []
        searching = threading.Event()
        real_encode, real_search = model.encode, service.storage.store.search  # type: ignore[attr-defined]
        note = "We moved the dashboards from Grafana to Datadog."

        def encode(texts, *a, **k):  # type: ignore[no-untyped-def]
            events.append(("encode", list(texts)))
            if note in texts:
                searching.wait(10)  # held until the candidate search has begun: the search half waits for it
            return real_encode(texts, *a, **k)

        def search(*a, **k):  # type: ignore[no-untyped-def]
            events.append(("search", None))
            searching.set()
            return real_search(*a, **k)

        pool = service._pool()

        class Recorded:  # the service's pool, each submission recorded
            def submit(self, fn, *a, **k):  # type: ignore[no-untyped-def]
                events.append(("submit", getattr(fn, "__qualname__", "?")))
                return pool.submit(fn, *a, **k)

        model.encode = encode  # type: ignore[method-assign]
        service.storage.store.search = search  # type: ignore[attr-defined]
        service._pool = lambda: Recorded()  # type: ignore[assignment,method-assign,return-value]
        out = service.remember(note)
        assert events[0] == ("submit", "SemanticIndex.prepare")  # the embedding was started first
        assert events.index(("search", None)) > 0
        assert [e for e in events if e[0] == "encode"] == [("encode", [note])]  # and done once
        assert out.decision is not None and vectors.settle()
        assert out.node.id in vectors.index  # type: ignore[attr-defined]
    finally:
        service.close()
