"""Ports: what the core needs from the outside world, as ``typing.Protocol``s.

Adapters in ``evomem.adapters`` implement them (SQLite, in-memory, and in the
multi-service wiring gRPC clients, Redis, Triton, OpenAI-compatible HTTP). The
application service (``evomem.service``) only ever sees these names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from evomem.domain.linking import LinkProposal
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    LinkProvenance,
    MemoryNode,
    NewNote,
    SearchHit,
    Stats,
)
from evomem.domain.recall import RecallAnswer, RecallQuery


@runtime_checkable
class Store(Protocol):
    """Durable nodes and chains. Every write is atomic; chain changes check the head."""

    def insert(self, note: NewNote, *, supersedes: str | None = None, link: LinkProvenance | None = None) -> MemoryNode:
        """Write a new node. With ``supersedes``, link it after the current head of that chain
        (re-targeting when the named node was already superseded), in one transaction."""
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
    query asks), the heads in force, resolution and history. ``evomem.recalling.recall_nodes``
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
    """Decides whether a new note replaces one of the candidate decisions."""

    name: str

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None: ...


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
