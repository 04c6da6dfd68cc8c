"""Ports: what the core needs from the outside world, as ``typing.Protocol``s.

The application service (``evomem.app.memory``) and the domain only ever see these names. What
implements them:

- ``Store``: ``adapters.sqlite_store.SQLiteStore``; ``adapters.grpc.clients.GrpcStore`` (the
  storage service).
- ``Extractor``: ``domain.cronista.LiteCronista``; ``adapters.onnx_cronista.OnnxCronista``;
  ``adapters.triton_cronista.TritonCronista``; ``adapters.grpc.clients.GrpcExtractor``.
- ``Linker``: ``domain.linkers.heuristic.HeuristicLinker``, ``domain.linkers.scored.ScoredLinker``,
  ``domain.linkers.cascade.CascadeLinker``; ``adapters.llm_linker.LLMLinker`` (OpenAI-compatible
  HTTP); ``adapters.grpc.clients.GrpcLinker`` (the linker service).
- ``JobQueue``: ``adapters.redis_queue.RedisQueue`` (Redis Streams).
- ``Vectors``: ``adapters.semantic.SemanticIndex`` (ONNX embedder over sqlite-vec);
  ``adapters.grpc.clients.GrpcVectors``.
- ``AuditLog``: ``adapters.sqlite_store.SQLiteStore``; ``adapters.grpc.clients.GrpcStore``.
- ``Embedder``: ``adapters.embedding.OnnxEmbedder``, ``adapters.triton_client.TritonEmbedder`` (and the
  unit tests' ``HashingEmbedder``);
  ``adapters.semantic.SemanticIndex`` is one too, through its cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    InsertOutcome,
    LinkDecision,
    LinkProposal,
    LinkProvenance,
    MemoryNode,
    NewNote,
    SearchHit,
    Stats,
)
from evomem.domain.recall import RecallAnswer, RecallQuery, Successor


@runtime_checkable
class Store(Protocol):
    """Durable nodes and chains. Every write is atomic; chain changes check the head."""

    def insert(self, note: NewNote, *, supersedes: str | None = None, link: LinkProvenance | None = None) -> MemoryNode:
        """Write a new node. With ``supersedes``, link it after the current head of that chain
        (re-targeting when the named node was already superseded), in one transaction."""
        ...

    def insert_once(
        self,
        note: NewNote,
        *,
        supersedes: str | None = None,
        link: LinkProvenance | None = None,
        idempotency_key: str | None = None,
        dedupe_window_ms: int = 0,
    ) -> tuple[MemoryNode, InsertOutcome]:
        """``insert`` at most once, decided in the write's transaction: a key used before in the
        namespace answers its node (REPLAYED; another text under it is a ``Conflict``; a purged
        one ``Purged``); without a key, an identical active note of the same namespace and scope
        created within ``dedupe_window_ms`` answers that node (DUPLICATE)."""
        ...

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        """Attach the chain that starts at ``node_id`` after the head of ``supersedes``'s chain."""
        ...

    def unlink(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, MemoryNode]:
        """Undo ``node_id``'s supersedes link: its predecessor is the head again. Audited."""
        ...

    def get(self, node_id: str) -> MemoryNode | None: ...

    def get_many(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]: ...

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        """The head (newest version) of each chain, keyed by chain root."""
        ...

    def chain(self, node_id: str, depth: int) -> list[MemoryNode]:
        """``node_id`` and up to ``depth`` earlier versions, newest first."""
        ...

    def search(self, terms: Sequence[str], *, namespace: str, limit: int, active_only: bool = False) -> list[SearchHit]:
        """Full-text (BM25) matches over raw text and fields, best first; forgotten nodes excluded."""
        ...

    def possible_successors(
        self, node_ids: Iterable[str], *, namespace: str, limit: int = 8
    ) -> dict[str, list[Successor]]:
        """For each of ``node_ids``: the active or superseded notes of ``namespace`` that list it
        in their ``possible_supersedes`` (unconfirmed successors; recall shows a superseded one's
        chain head instead), newest first, at most ``limit`` each,
        with the linker's reason when stored. A reverse lookup, cheap at any store size; ids
        with none are left out. Forgetting, purging or linking a note drops it from here."""
        ...

    def forget(self, node_id: str, *, purge: bool = False) -> tuple[MemoryNode, bool]:
        """Soft-forget or purge. Returns the node after the change and whether anything changed."""
        ...

    def set_extraction(
        self,
        node_id: str,
        extraction: Extraction | None,
        state: ExtractionState,
        error: str | None = None,
    ) -> MemoryNode | None:
        """Write extraction results (idempotent). ``None`` when the node is gone."""
        ...

    def pending_extractions(self, limit: int = 100) -> list[str]: ...

    def stats(self, namespace: str | None = None) -> Stats: ...

    def close(self) -> None: ...


@runtime_checkable
class NodeRecall(Protocol):
    """Recall's storage side in one call: search (BM25, and the store's own vectors when the
    query asks), the heads in force, resolution and history. ``evomem.app.recall.recall_nodes``
    is the one implementation; ``GrpcStore`` runs it in the storage service (``RecallNodes``),
    so a gateway recall is one round trip. A ``Store`` that is also a ``NodeRecall`` is used
    as such by ``MemoryService.recall``; any other store gets the function in-process."""

    def recall_nodes(self, query: RecallQuery) -> RecallAnswer: ...


@runtime_checkable
class Extractor(Protocol):
    """The cronista: raw text in, narrative fields out."""

    name: str

    def extract(self, text: str) -> Extraction: ...


@runtime_checkable
class Linker(Protocol):
    """Decides whether a new note replaces one of the candidate decisions.

    Every linker checks status and scope itself: only active, scope-compatible candidates
    can be linked, whatever the caller passes. A linker with ``reads_inferred_scopes`` also takes
    ``decide(..., scope_inferred=)`` and may *list* (never link) a candidate whose scope differs
    only by a scope inferred from a text (``scope.may_list``)."""

    name: str
    abstains: bool  # whether ``decide`` can answer abstain (the heuristic never does)

    def decide(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkDecision:
        """The full answer: link (with a proposal), abstain (with the candidates the note may
        replace, best first) or none."""
        ...

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        """The link only: ``decide``'s proposal when it links, else None (the ProposeLink RPC)."""
        ...


@runtime_checkable
class PairScorer(Protocol):
    """A model that reads a (note, candidate) pair as one text and gives the logit that the note
    replaces the candidate (the pair linker's cross-encoder; ``evomem.adapters.models.onnx_pair``).
    Its calibration, set by its trainer on held-back development data: a candidate's score is
    ``logit(pair model p) + weight * logit``, and a score from ``link_score`` links (``inf``: never)."""

    name: str
    weight: float
    link_score: float

    def logits(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """One logit per (note, candidate) pair, in order."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Texts in, one L2-normalised vector per text out, in order (the scored linker's
    similarity feature; ``SemanticIndex`` embeds notes with one). ``name`` identifies the
    vector space: vectors of different names are never compared."""

    name: str

    def encode(self, texts: Sequence[str]) -> Any:
        """A sequence of vectors (rows of floats; a float32 numpy array in the ONNX adapter)."""
        ...


@dataclass(frozen=True, slots=True)
class ExtractionJob:
    node_id: str
    attempt: int = 1


@runtime_checkable
class JobQueue(Protocol):
    """Where extraction work waits when it is not done inline."""

    def enqueue(self, job: ExtractionJob) -> None: ...


@runtime_checkable
class Vectors(Protocol):
    """Semantic neighbours: embeds notes and finds the notes nearest a text (hybrid recall).

    Vectors are derived data, like the FTS index: a node without one is still found by its
    words, and a missing vector can be rebuilt from the raw text at any time.
    """

    name: str  # the embedding model: vectors of different names are never compared

    def add(self, nodes: Sequence[MemoryNode]) -> None:
        """Embed and store the vectors of ``nodes`` (replacing any they had)."""
        ...

    def nearest(self, text: str, *, namespace: str, limit: int) -> list[tuple[str, float]]:
        """Up to ``limit`` (node id, cosine similarity) in ``namespace``, most similar first."""
        ...

    def remove(self, node_id: str) -> None: ...

    # Optional: ``evict(texts) -> int`` drops texts from an embedding cache keyed by the texts
    # themselves (``SemanticIndex``); ``MemoryService.forget`` calls it on a purge when present.
    # Optional: ``prepare(text) -> None`` embeds a note ahead, into that cache, when the model can
    # be used now; ``remember`` calls it before the linker's candidate search, so the note's one
    # embedding (which ``add`` stores) is timed as storage's cost, not the linker's.


# ----------------------------------------------------------------------------- the job source (worker side)


class QueueUnavailable(Exception):
    """The job source cannot be reached (connection refused, timed out, out of memory...)."""


class QueueLost(QueueUnavailable):
    """The job source lost its state (the stream or consumer group is gone): queued jobs are lost."""


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """One delivery of a job to this consumer. ``node_id`` is empty for a malformed entry."""

    id: str
    node_id: str
    deliveries: int


@runtime_checkable
class JobSource(Protocol):
    """The consuming side of the extraction queue: at-least-once delivery to one named consumer.

    A claimed job stays this consumer's until it is acknowledged, released or dead-lettered;
    one left alone longer than the visibility timeout can be reclaimed by any consumer. Every
    method raises ``QueueUnavailable`` (``QueueLost`` when the queue's state is gone) except
    ``release`` and ``renew``, which are best effort.
    """

    consumer: str

    def prepare(self) -> None:
        """Create the consumer group if it is missing (idempotent)."""
        ...

    def ping(self) -> None: ...

    def read(self, count: int, block_ms: int) -> list[ClaimedJob]:
        """Up to ``count`` new jobs, waiting up to ``block_ms`` for the first."""
        ...

    def reclaim(self, min_idle_ms: int, count: int) -> tuple[list[ClaimedJob], bool]:
        """Take over jobs idle longer than ``min_idle_ms`` (any consumer's); their delivery is
        counted. Returns the jobs and whether the scan reached the end of the pending list."""
        ...

    def ack(self, job_id: str) -> None:
        """The job is finished: remove it."""
        ...

    def release(self, job_ids: Sequence[str]) -> None:
        """Hand jobs back (claimable by others at once, no delivery counted)."""
        ...

    def renew(self, job_id: str) -> None:
        """Reset the job's idle time (a heartbeat), no delivery counted."""
        ...

    def dead_letter(self, job: ClaimedJob, error: str) -> None:
        """Record the job as given up (with ``error``) and acknowledge it, in one step."""
        ...

    def enqueue_missing(self, node_ids: Iterable[str], *, marker_ttl_s: int) -> list[str]:
        """Enqueue each node that has no job queued; the ids enqueued."""
        ...

    def forget_stale_consumers(self) -> None:
        """Drop consumers that hold nothing and have been idle a long time (dead workers)."""
        ...


@runtime_checkable
class AuditLog(Protocol):
    """The write audit log (``evomem.app.access`` appends, the admin's ``audit`` tool pages)."""

    def append_audit(self, entry: AuditEntry) -> None: ...

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]:
        """Entries matching ``query``, newest first (highest ``seq`` first)."""
        ...
