"""The linker's candidate search reads the BM25 candidates while the vector half still runs
(speed17): the embedding takes longer than BM25, so reading their link sketches then costs a
remember no time. The candidates and cosines are those of reading everything afterwards."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from memory_store import MemoryStore

from evomem.app.candidates import find_candidates
from evomem.domain.model import MemoryNode, NewNote
from evomem.domain.remember import ContextQuery

WAIT_S = 2.0


class Watched(MemoryStore):
    """A store that says when the BM25 candidates' sketches were read."""

    def __init__(self) -> None:
        super().__init__()
        self.bm25_read = threading.Event()
        self.bm25_ids: set[str] = set()

    def link_sketches(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        ids = list(node_ids)
        if self.bm25_ids and self.bm25_ids <= set(ids):
            self.bm25_read.set()
        return super().link_sketches(ids)


class SlowVectors:
    """The vector half: answers its neighbour once the BM25 candidates were read (or after
    ``WAIT_S``), and says which happened."""

    def __init__(self, store: Watched, neighbour: str) -> None:
        self.store, self.neighbour = store, neighbour
        self.overlapped: bool | None = None

    def nearest(self, text: str, *, namespace: str, limit: int) -> list[tuple[str, float]]:
        self.overlapped = self.store.bm25_read.wait(WAIT_S)
        return [(self.neighbour, 0.9)]

    def similarities(self, text: str, *, namespace: str, node_ids: Sequence[str]) -> dict[str, float]:
        return dict.fromkeys(node_ids, 0.5)


def test_bm25_candidates_are_read_while_the_vector_half_runs() -> None:
    store = Watched()
    by_words, _ = store.insert_once(NewNote(raw_text="We keep the ledger in Postgres."))
    by_meaning, _ = store.insert_once(NewNote(raw_text="Bookkeeping records live in one database."))
    store.bm25_ids = {by_words.id}
    vectors = SlowVectors(store, by_meaning.id)
    query = ContextQuery(
        text="The ledger moves to SQLite.",
        namespace="default",
        candidates=True,
        search_terms=("ledger",),
        vector_limit=1,
    )
    with ThreadPoolExecutor(1) as pool:
        found = find_candidates(store, vectors, lambda: pool, query)  # type: ignore[arg-type]
    assert vectors.overlapped is True
    assert {n.id for n in found.candidates} == {by_words.id, by_meaning.id}
    assert found.similarities == {by_meaning.id: 0.9, by_words.id: 0.5}
