"""Ports: what the application needs from the outside world, as ``typing.Protocol``s.

Every capability the application uses is a method here; nothing probes an object for an optional
one. What implements them:

- ``Store``: one storage engine, complete (``adapters.sqlite.store.SQLiteStore``; the unit tests'
  in-memory fake). A second engine is written from this class alone.
- ``Storage``: what the application service asks of storage, one call per business operation:
  ``app.storage.LocalStorage`` (in process, over a ``Store`` and its ``Vectors``) and
  ``adapters.grpc.clients.GrpcStorage`` (the storage service, one RPC each).
- ``Extractor``: ``domain.cronista.LiteCronista``; ``adapters.models.onnx_cronista.OnnxCronista``;
  ``adapters.models.triton_cronista.TritonCronista``; ``adapters.grpc.clients.GrpcExtractor``.
- ``Linker``: ``domain.linkers`` (heuristic, scored, pair, cascade); ``adapters.llm_linker.LLMLinker``
  (OpenAI-compatible HTTP); ``adapters.grpc.clients.GrpcLinker`` (the linker service).
- ``Vectors``: ``adapters.vectors.semantic.SemanticIndex`` (ONNX embedder over sqlite-vec).
- ``Embedder`` / ``EmbeddingModel``: ``adapters.models.embedding.OnnxEmbedder``,
  ``adapters.models.static.StaticEmbedder``, ``adapters.models.triton``'s ``TritonEmbedder`` and
  ``FallbackEmbedder``; ``SemanticIndex`` is one too, through its cache.
- ``JobQueue`` / ``JobSource``: ``adapters.redis_queue`` (Redis Streams).
- ``AuditLog``: every ``Store`` and ``Storage``.
- ``Archive``: ``SQLiteStore`` and ``PostgresStore``: a store read and written whole, ids kept
  (``evomem-admin export``, ``import``, ``migrate``: ``app/transfer.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from evomem.domain.archive import Record
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.browse import RecentPage, RecentQuery

# The linkers' ports are defined with the linkers (the domain depends on nothing outside it), listed here.
from evomem.domain.linkers.contracts import Embedder as Embedder
from evomem.domain.linkers.contracts import Linker as Linker
from evomem.domain.linkers.contracts import PairScorer as PairScorer
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    InsertOutcome,
    LinkProvenance,
    MemoryNode,
    NewNote,
    SearchHit,
    Stats,
)
from evomem.domain.recall import RecallAnswer, RecallQuery, Successor
from evomem.domain.remember import ContextQuery, NoteWrite, RememberContext, StoredNote


@runtime_checkable
class AuditLog(Protocol):
    """The write audit log (``evomem.app.access`` appends, the admin's ``audit`` tool pages)."""

    def append_audit(self, entry: AuditEntry) -> None: ...

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]:
        """Entries matching ``query``, newest first (highest ``seq`` first)."""
        ...


@runtime_checkable
class Records(AuditLog, Protocol):
    """Nodes and chains read and changed one at a time: what ``Store`` and ``Storage`` share."""

    def get(self, node_id: str) -> MemoryNode | None: ...

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        """The head (newest version) of each chain, keyed by chain root."""
        ...

    def chain(self, node_id: str, depth: int) -> list[MemoryNode]:
        """``node_id`` and up to ``depth`` earlier versions, newest first."""
        ...

    def recent_heads(self, query: RecentQuery) -> RecentPage:
        """The heads in force of ``query.namespace`` newest first (the chains changed last), older
        than ``query.before``, filtered by scope and tags like recall: one page of ``query.limit``
        and the cursor of the next (``evomem.domain.browse.take_recent``). An index read in id
        order that stops after one page. With ``query.history_depth``, each head's earlier versions
        in ``histories`` (``browse.with_histories``): the timeline's page in one call."""
        ...

    def dependents(self, node_id: str, limit: int = 50) -> list[MemoryNode]:
        """The active nodes that depend on or implement (``relations``) ``node_id`` or any other
        version of its chain, newest first, at most ``limit``; the chain's own versions excluded,
        [] for an unknown id. (The reverse of ``relations``; ``needs_review`` follows the same edges.)"""
        ...

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        """Attach the chain that starts at ``node_id`` after the head of ``supersedes``'s chain
        (the same namespace; no cycle). Errors: ``NotFound``, ``NamespaceMismatch``, ``CycleError``,
        ``Purged``. (That ``node_id`` supersedes nothing yet is the service's rule.)"""
        ...

    def unlink(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, MemoryNode]:
        """Undo ``node_id``'s supersedes link: its predecessor is the head again, and the link's
        provenance goes to the audit. Returns (the node, first of its own chain; the restored head)."""
        ...

    def review(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, bool]:
        """Clear ``node_id``'s ``needs_review`` flag (the node was confirmed still valid; recorded in
        the link audit); whether it had one. ``NotFound`` when there is no such node. (A node gets
        the flag in the write that replaces a decision it depends on, ``domain.dependencies``.)"""
        ...

    def forget(self, node_id: str, *, purge: bool = False) -> tuple[MemoryNode, bool]:
        """Soft-forget (kept as history, out of recall) or purge (the text, its index entries and
        its vector erased; the chain keeps a tombstone). The node after the change and whether
        anything changed."""
        ...

    def set_extraction(
        self,
        node_id: str,
        extraction: Extraction | None,
        state: ExtractionState,
        error: str | None = None,
    ) -> MemoryNode | None:
        """A job's result, accepted only while the node's extraction is pending (``Conflict``
        otherwise). ``None`` when the node is gone or purged."""
        ...

    def pending_extractions(self, limit: int = 100) -> list[str]:
        """Ids of live nodes whose extraction is pending, oldest first (0: none)."""
        ...

    def stats(self, namespace: str | None = None) -> Stats: ...


@runtime_checkable
class Store(Records, Protocol):
    """One storage engine: durable nodes and chains, full-text search, the audit log.

    The engine enforces the chain invariants itself, in the write's transaction: a node is
    superseded by at most one node, a chain has exactly one head, versions count up without gaps,
    a link stays inside one namespace and never makes a cycle. ``supersedes`` naming a version
    that is no longer the head is re-targeted to the head (``LinkProvenance.requested_id`` keeps
    what was named); a forgotten head is superseded all the same (the new note continues the chain).
    In the same transaction, a write that replaces a chain's head flags every active node that
    depends on that chain (``depends_on``, ``implements``; directly or through others) with
    ``needs_review``, and a write whose dependencies would lead back into its own chain is a
    ``CycleError`` (``evomem.domain.dependencies``). A replaced version's flag is cleared.
    """

    def insert_once(
        self,
        note: NewNote,
        *,
        supersedes: str | None = None,
        link: LinkProvenance | None = None,
        idempotency_key: str | None = None,
        dedupe_window_ms: int = 0,
        if_head: bool = False,
    ) -> tuple[MemoryNode, InsertOutcome]:
        """Write a new node at most once, decided in the write's transaction: a key used before in
        the namespace answers its node (REPLAYED; another text under it is a ``Conflict``; a purged
        one ``Purged``); without a key, an identical active note of the same namespace and scope
        created within ``dedupe_window_ms`` answers that node (DUPLICATE). With ``supersedes``, the
        node is linked after the head of that chain; with ``if_head``, only if ``supersedes`` is that
        head (``NotHead`` otherwise, nothing written). (That its relations name nodes of its namespace
        is checked before: ``app.notes.NoteRules``.)"""
        ...

    def get_many(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        """The nodes that exist among ``node_ids``, by id (purged ones included)."""
        ...

    def sketches(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        """As ``get_many``, each node a sketch (``SKETCH_COLUMNS``: id, namespace, scope, creation
        time, status, chain, purge time; no text, the other fields at their defaults): what fusing a
        recall's nearest notes by meaning reads of them (``app.recall.hybrid``)."""
        ...

    def link_sketches(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        """As ``get_many``, each node only as far as a linker reads it (``domain.remember.LINK_FIELDS``:
        id, text, namespace, scope and its source, creation time, status, predecessor, chain; the other
        fields at their defaults): the linker's candidates and their earlier versions
        (``evomem.app.candidates``), read on every remember."""
        ...

    def search(
        self, terms: Sequence[str], *, namespace: str, limit: int, active_only: bool = False, prune: float = 1.0
    ) -> list[SearchHit]:
        """Full-text (BM25) matches over raw text and fields, best first; forgotten and purged
        nodes excluded; ``active_only``: heads in force only. ``prune`` (at least 1): a word index
        that prunes by score bounds may leave out a row whose bounds reach the ``limit``-th score but
        not ``prune`` times it (an aggressive threshold: faster, no longer exact); 1 is exact. The
        linker's candidate search asks for it (``evomem.app.candidates``), recall never does; an
        index without such bounds ignores it."""
        ...

    def possible_successors(
        self, node_ids: Iterable[str], *, namespace: str, limit: int = 8, full: bool = True
    ) -> dict[str, list[Successor]]:
        """For each of ``node_ids``: the active or superseded notes of ``namespace`` that list it
        in their ``possible_supersedes`` (unconfirmed successors), newest first, at most ``limit``
        each, with the linker's reason and confidence when stored. A reverse lookup, cheap at any
        store size; ids with none are left out. Forgetting, purging or linking a note drops it.
        ``full=False``: each node only as far as deciding a hint needs (id, namespace, scope,
        created_at, status, chain_root, purged_at; no text), for the caller to read in full the
        ones it shows."""
        ...

    def ping(self) -> None:
        """One cheap read; raises when the engine cannot answer (a health probe)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Archive(Protocol):
    """A store read and written whole, every id, chain, link and audit row kept as it is: what
    ``app/transfer.py`` moves between stores. Not part of ``Store``: an engine can serve without it."""

    def export_records(self) -> Iterator[Record]:
        """Every record: the nodes (oldest first), then offers, keys, chain changes, the write
        audit (oldest first) and the vectors' model ids."""
        ...

    def import_records(self, records: Sequence[Record]) -> None:
        """Write ``records`` as they are, in one transaction (nothing is written if one fails).
        The caller checked them (``app/transfer.py``): ids free, chains whole. Vectors are not
        written: the store's backfill embeds the nodes again."""
        ...

    def get_many(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]: ...

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]: ...

    def stats(self, namespace: str | None = None) -> Stats: ...


@runtime_checkable
class Storage(Records, Protocol):
    """What the application service asks of storage: one call per business operation, so that a
    gateway pays one round trip for each (``recall_nodes``, ``remember_context``,
    ``remember_note``), plus the single-node reads and writes of ``Records``."""

    def recall_nodes(self, query: RecallQuery) -> RecallAnswer:
        """Recall's storage side: search (BM25, fused with the vectors when asked), the heads in
        force, resolution, possible successors and history (``evomem.app.recall.recall_nodes``)."""
        ...

    def remember_context(self, query: ContextQuery) -> RememberContext:
        """What remember reads before it decides: the named nodes, and the linker's candidates
        with their cosines and earlier versions (``evomem.app.candidates``)."""
        ...

    def remember_note(self, write: NoteWrite) -> StoredNote:
        """The note stored at most once, and its vector added."""
        ...

    def model_state(self) -> str:
        """The embedding model's state: ``off`` (no vectors), ``not_loaded``, ``loading``,
        ``loaded``, ``failed``, or ``remote`` (the storage service's business)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Extractor(Protocol):
    """The cronista: raw text in, narrative fields out."""

    name: str

    def extract(self, text: str) -> Extraction: ...

    def load(self) -> None:
        """Load what ``extract`` needs now (a model, a tokenizer), or raise ``Unavailable`` saying
        what is missing. Nothing to load: nothing to do."""
        ...

    def check(self) -> str | None:
        """Degraded or not, as a health probe reads it: None (serving as built), "" (serving
        again), or why it answers through a fallback."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class EmbeddingModel(Embedder, Protocol):
    """An ``Embedder`` with a model to load (what ``SemanticIndex`` embeds notes with): loaded on
    first use or ahead (``load``), its state readable without waiting."""

    def load(self) -> None:
        """Load the model now (idempotent); raises ``Unavailable`` saying what is missing."""
        ...

    @property
    def state(self) -> str:
        """``not_loaded``, ``loading``, ``loaded`` or ``failed``."""
        ...

    @property
    def load_error(self) -> str | None:
        """Why the last load failed (None: it did not fail)."""
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
    words, and a missing vector can be rebuilt from the raw text at any time (``backfill``).
    """

    name: str  # the embedding model: vectors of different names are never compared

    def add(self, nodes: Sequence[MemoryNode]) -> None:
        """Embed and store the vectors of ``nodes`` (replacing any they had)."""
        ...

    def add_soon(self, nodes: Sequence[MemoryNode]) -> None:
        """``add`` after the caller has answered (on a thread of the vectors'): ``nearest`` waits
        for it, a crash before it leaves the nodes to ``backfill``."""
        ...

    def settle(self, timeout_s: float = 10.0) -> bool:
        """Wait until what ``add_soon`` queued is stored; False on timeout."""
        ...

    def nearest(self, text: str, *, namespace: str, limit: int) -> list[tuple[str, float]]:
        """Up to ``limit`` (node id, cosine similarity) in ``namespace``, most similar first
        (after what ``add_soon`` queued is stored)."""
        ...

    def quick(self, text: str, *, namespace: str) -> bool:
        """Whether ``nearest(text)`` in ``namespace`` would be quick now: no embedding (``text``'s
        vector cached), nothing queued to store first, and an index in memory to search rather than
        a scan or a round trip. ``search_both`` then searches inline: a pool thread's hand-off would
        cost more than it saves."""
        ...

    def catch_up(self, namespace: str) -> None:
        """What ``nearest`` in ``namespace`` does first whatever its text, done now: store what
        ``add_soon`` queued, bring an in-memory copy of the table up to date. A search calls it
        while the text is embedded on another thread; ``nearest`` still checks (the same answer)."""
        ...

    def remove(self, node_id: str) -> None: ...

    def similarities(self, text: str, *, namespace: str, node_ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity of ``text`` with each of ``node_ids`` that has a vector in
        ``namespace``, from the stored vectors (no embedding but ``text``'s, usually cached),
        whatever its value. {} when the model cannot be used now."""
        ...

    def prepare(self, text: str) -> None:
        """Embed ``text`` ahead, into a cache that ``add`` and ``nearest`` reuse, when the model
        can be used now (the note is embedded once, before the linker's candidate search)."""
        ...

    def evict(self, texts: Sequence[str]) -> int:
        """Drop these texts from the embedding cache (a purge); how many entries went."""
        ...

    @property
    def model_state(self) -> str:
        """``not_loaded``, ``loading``, ``loaded`` or ``failed``."""
        ...

    def load_in_background(self) -> None:
        """From now on no call waits for the model: until it has loaded, ``nearest`` raises
        ``Unavailable`` (recall answers by words and says so) and ``add`` leaves the node to the
        backfill. The caller then runs ``load_model`` and ``backfill`` on a thread of its own."""
        ...

    def load_model(self) -> None:
        """Load the embedding model now (raises ``Unavailable`` when it cannot)."""
        ...

    def backfill(self, *, batch: int = 64, progress: Callable[[int], None] | None = None) -> int:
        """Embed every live node that has no vector; how many were embedded."""
        ...

    def close(self) -> None: ...


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
