"""The ``Vectors`` port: an embedder (ONNX, offline) over a vector table in the store's own storage
(sqlite-vec in the SQLite file, or pgvector in the PostgreSQL database: ``VectorTable``).

    vectors = SemanticIndex(OnnxEmbedder(), VectorIndex(store.path, model=...))
    vectors.add([node])                                    # embeds node.raw_text, stores it
    vectors.nearest("where do bookkeeping records live", namespace="default", limit=20)
    vectors.backfill()                                     # embeds nodes that have no vector yet

Vectors are derived data. ``remember`` writes the node first and its vector after its answer
(``add_soon``: a thread of this index stores it, ~1 ms later; ``nearest`` waits for what is still
queued, so a search never misses a note this process wrote), so a crash in between leaves a node
that only BM25 finds until ``backfill`` (run at start-up) embeds it: a live node without a row in
the vector table is the persistent "vector pending" mark (``nodes_without_vectors``). A purge
stores what is queued first, then deletes the vector in the store's own transaction
(``SQLiteStore.forget``), and ``MemoryService.forget`` evicts the text from the embedding cache
(``evict``).

The text a vector is made from is cut to ``MAX_EMBED_CHARS`` first: the model reads at most
256 word pieces, and tokenising a 10 MB note in full would only cost time.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from evomem.app.ports import EmbeddingModel
from evomem.domain.errors import MODEL_LOADING, Unavailable
from evomem.domain.model import MemoryNode

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MAX_EMBED_CHARS = 4_000  # ~4x what 256 word pieces cover in English prose
CACHE_SIZE = 256


class VectorTable(Protocol):
    """Where ``SemanticIndex`` keeps one vector per node: ``adapters.vectors.index.VectorIndex``
    (sqlite-vec, in the SQLite store's file) or ``adapters.postgres.vectors.PgVectorIndex``
    (pgvector HNSW, in the PostgreSQL store's database)."""

    def add_many(self, items: Iterable[tuple[str, str, Any]]) -> int: ...

    def search(self, vector: Any, namespace: str, k: int = 10) -> list[tuple[str, float]]: ...

    def distances(self, vector: Any, namespace: str, node_ids: Sequence[str]) -> dict[str, float]: ...

    def remove(self, node_id: str) -> bool: ...

    def catch_up(self, namespace: str) -> None: ...

    def quick(self, namespace: str) -> bool: ...

    def nodes_without_vectors(self, limit: int = 256) -> list[tuple[str, str, str]]: ...

    def close(self) -> None: ...


class ModelNotReady(Unavailable):
    """The model is loading in the background (or failed to): search by words meanwhile."""


class SemanticIndex:
    """Embeds texts (with a small cache: the linker's query and the new node's vector are the
    same text) and keeps one vector per node in a ``VectorIndex``."""

    def __init__(self, embedder: EmbeddingModel, index: VectorTable, *, min_similarity: float = 0.0) -> None:
        self.embedder = embedder
        self.index = index
        self.min_similarity = min_similarity
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._embedding: dict[str, threading.Event] = {}  # texts being embedded now, set when done
        self._lock = threading.Lock()
        #: True: a call that needs the model loads it and waits. False (a server that loads it
        #: in the background, ``app.background.start_background``): until it has loaded, ``nearest``
        #: raises ``ModelNotReady`` (recall answers by BM25 and says so) and ``add`` leaves the
        #: node to the backfill that runs right after the load.
        self.wait_for_model = True
        self._soon: list[tuple[str, str, Any]] = []  # ``add_soon``'s (id, namespace, vector), for ``_later``
        self._queued = 0  # queued or being stored
        self._soon_cond = threading.Condition()
        self._later: threading.Thread | None = None
        self._closing = False

    @property
    def model_state(self) -> str:
        """The embedder's ``state``: ``not_loaded``, ``loading``, ``loaded`` or ``failed``."""
        return self.embedder.state

    # ``EmbeddingModel``, through the cache: the linkers embed with the index's own model
    state = model_state

    @property
    def load_error(self) -> str | None:
        return self.embedder.load_error

    def _check_ready(self) -> bool:
        """Whether the model can be used now without waiting (always, when ``wait_for_model``)."""
        if self.wait_for_model:
            return True
        state = self.model_state
        if state == "loaded":
            return True
        if state == "failed":
            raise ModelNotReady(f"the embedding model failed to load: {self.embedder.load_error or ''}")
        return False

    @property
    def name(self) -> str:
        return self.embedder.name

    def load_in_background(self) -> None:
        """From now on no call waits for the model (the caller loads it on a thread of its own)."""
        self.wait_for_model = False

    def load_model(self) -> None:
        """Load the embedding model now."""
        self.embedder.load()

    load = load_model

    # ------------------------------------------------------------------ embedding

    def _encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's vector, from the cache or embedded now. A text another thread is embedding
        (``prepare`` ahead of a remember's search) is waited for, not embedded a second time; if
        that embedding failed, this call embeds it (and reports the failure itself)."""
        keys = [t[:MAX_EMBED_CHARS] for t in texts]
        with self._lock:
            uncached = [t for t in dict.fromkeys(keys) if t not in self._cache]
            waits = {self._embedding[t] for t in uncached if t in self._embedding}
            missing = [t for t in uncached if t not in self._embedding]
            mine = threading.Event()
            self._embedding.update((t, mine) for t in missing)
        if missing:
            try:
                rows = self.embedder.encode(missing)
                with self._lock:
                    for t, v in zip(missing, rows, strict=True):
                        self._cache[t] = v
                        self._cache.move_to_end(t)
                    while len(self._cache) > CACHE_SIZE:
                        self._cache.popitem(last=False)
            finally:
                with self._lock:
                    for t in missing:
                        if self._embedding.get(t) is mine:
                            del self._embedding[t]
                mine.set()
        for other in waits:
            other.wait()
        with self._lock:
            out = []
            for t in keys:
                v = self._cache.get(t)
                if v is None:  # evicted by a concurrent caller between the two locks
                    v = self.embedder.encode([t])[0]
                out.append(v)
            return out

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The ``Embedder`` interface, through the cache (the scored linker compares the new
        note with its candidates: the same texts ``add`` and ``nearest`` embed)."""
        return self._encode(texts)

    def prepare(self, text: str) -> None:
        """Embed ``text`` into the cache now, if the model can be used without waiting: ``add``
        and the linker's candidate search then reuse that one vector."""
        if text.strip() and self._check_ready():
            self._encode([text])

    def evict(self, texts: Sequence[str]) -> int:
        """Drop these texts' vectors from the cache (a purge: the cache keys are the texts
        themselves). Returns how many entries went."""
        gone = 0
        with self._lock:
            for t in texts:
                if self._cache.pop(t[:MAX_EMBED_CHARS], None) is not None:
                    gone += 1
        return gone

    # ------------------------------------------------------------------ the port

    def add(self, nodes: Sequence[MemoryNode]) -> None:
        live = [n for n in nodes if not n.purged and n.raw_text]
        if not live or not self._check_ready():
            return  # the backfill after the background load embeds it
        vectors = self._encode([n.raw_text for n in live])
        self.index.add_many((n.id, n.namespace, v) for n, v in zip(live, vectors, strict=True))

    def add_soon(self, nodes: Sequence[MemoryNode]) -> None:
        """``add``, its index write on this index's thread after the caller has answered. The
        embedding is done here (``remember``: the candidate search embedded the note already, so
        it comes from the cache), so an embedding failure is the caller's to report; ``nearest``,
        ``similarities``, ``settle`` and ``close`` wait for the write; a write that fails is logged
        and left to the backfill."""
        live = [n for n in nodes if not n.purged and n.raw_text]
        if not live or not self._check_ready():
            return  # the backfill after the background load embeds it
        items = [(n.id, n.namespace, v) for n, v in zip(live, self._encode([n.raw_text for n in live]), strict=True)]
        with self._soon_cond:
            if self._closing:
                raise Unavailable("the vector index is closed")
            self._soon += items
            self._queued += len(items)
            if self._later is None:
                self._later = threading.Thread(target=self._store_soon, name="evomem-vectors-soon", daemon=True)
                self._later.start()
            self._soon_cond.notify_all()

    def _store_soon(self) -> None:
        while True:
            with self._soon_cond:
                self._soon_cond.wait_for(lambda: bool(self._soon) or self._closing)
                if not self._soon:
                    return  # closing, nothing queued
                batch, self._soon = self._soon, []
            try:
                self.index.add_many(batch)
            except Exception as exc:  # derived data: the backfill at the next start embeds them
                log.warning("could not store the vectors of %d note(s), the backfill will: %s", len(batch), exc)
            finally:
                with self._soon_cond:
                    self._queued -= len(batch)
                    self._soon_cond.notify_all()

    def settle(self, timeout_s: float = 10.0) -> bool:
        """Wait until every ``add_soon`` note is stored (or given up on); False on timeout."""
        with self._soon_cond:
            return self._soon_cond.wait_for(lambda: self._queued == 0, timeout_s)

    def nearest(self, text: str, *, namespace: str, limit: int) -> list[tuple[str, float]]:
        if limit < 1 or not text.strip():
            return []
        if not self._check_ready():
            raise ModelNotReady(MODEL_LOADING)
        (vector,) = self._encode([text])
        self.settle()  # the notes this process wrote are searchable by meaning before it answers
        hits = self.index.search(vector, namespace, k=limit)
        return [(node_id, round(1.0 - dist, 6)) for node_id, dist in hits if 1.0 - dist >= self.min_similarity]

    def quick(self, text: str, *, namespace: str) -> bool:
        """``nearest`` would neither embed (``text`` in the cache), nor wait for queued writes, nor
        scan or leave the process (``VectorTable.quick``: a graph answers ``namespace``)."""
        if not text.strip() or self._queued:
            return False
        with self._lock:
            cached = text[:MAX_EMBED_CHARS] in self._cache
        return cached and self.index.quick(namespace)

    def catch_up(self, namespace: str) -> None:
        """The part of ``nearest`` that needs no text, now: the queued writes stored, the table's
        copy of ``namespace`` brought up to date (``VectorTable.catch_up``). ``search_both`` calls it
        while another thread embeds the text, so that search starts on its scan. Nothing while the
        model loads in the background or failed to: no search by meaning follows (recall answers by
        words, and reading a namespace's bits the first time would only delay it)."""
        if not self.wait_for_model and self.model_state != "loaded":
            return
        self.settle()
        self.index.catch_up(namespace)

    def similarities(self, text: str, *, namespace: str, node_ids: Sequence[str]) -> dict[str, float]:
        """The stored vectors' cosines with ``text`` (the linker's candidates that the search by
        meaning did not return: no second embedding of their texts). {} while the model loads."""
        if not node_ids or not text.strip():
            return {}
        try:
            if not self._check_ready():
                return {}
        except ModelNotReady:
            return {}
        (vector,) = self._encode([text])
        self.settle()
        return {i: round(1.0 - d, 6) for i, d in self.index.distances(vector, namespace, node_ids).items()}

    def remove(self, node_id: str) -> None:
        self.index.remove(node_id)

    # ------------------------------------------------------------------ maintenance

    def missing(self, limit: int = 256) -> list[tuple[str, str, str]]:
        """(id, namespace, raw text) of live nodes in the store's file that have no vector."""
        return self.index.nodes_without_vectors(limit)

    def backfill(self, *, batch: int = 64, progress: Callable[[int], None] | None = None) -> int:
        """Embed every live node that has no vector (after a crash, or a file written without
        vectors). Returns how many were embedded."""
        done = 0
        while True:
            rows = self.missing(batch)
            if not rows:
                return done
            vectors = self._encode([r[2] for r in rows])
            self.index.add_many((r[0], r[1], v) for r, v in zip(rows, vectors, strict=True))
            done += len(rows)
            if progress is not None:
                progress(done)

    def close(self) -> None:
        """Store what ``add_soon`` queued, then close the table."""
        with self._soon_cond:
            self._closing = True
            self._soon_cond.notify_all()
            later = self._later
        if later is not None:
            later.join(timeout=30)
        self.index.close()
