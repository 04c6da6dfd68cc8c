"""The application service: remember, recall, get_node, forget, supersede, stats.

Written only against the ports, so the same code runs in the embedded process (SQLite
in-process) and in the gateway (gRPC clients). Entry points translate; this decides.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import wait
from dataclasses import dataclass, field, replace

from evomem.app.ports import ExtractionJob, Extractor, JobQueue, Linker, NodeRecall, Store, Vectors
from evomem.app.recall import HISTORY_DEPTH_MAX as HISTORY_DEPTH_MAX  # re-exported: the tools' limits
from evomem.app.recall import K_MAX as K_MAX
from evomem.app.recall import (
    LazyPool,
    check_history_depth,
    check_k,
    recall_nodes,
    search_both,
)
from evomem.domain import text as textrules
from evomem.domain.errors import (
    MODEL_LOADING,
    Conflict,
    InvalidArgument,
    InvalidId,
    NamespaceMismatch,
    NotFound,
    Purged,
)
from evomem.domain.linkers import calling as linker_calls
from evomem.domain.linkers.decision_text import search_text
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    InsertOutcome,
    LinkDecision,
    LinkKind,
    LinkMethod,
    LinkProvenance,
    MemoryNode,
    NewNote,
    SearchHit,
    Stats,
    Status,
    is_valid_id,
)
from evomem.domain.recall import RecallQuery, Resolved, fuse
from evomem.domain.scope import infer_note_scope
from evomem.domain.scope import may_list as scope_may_list

log = logging.getLogger("evomem.app.memory")

MAX_RELATION_TYPES = 16
MAX_OFFERED = 3  # likely predecessors remember lists with auto_supersede off
MAX_RELATION_IDS = 64
MAX_POSSIBLE_SUPERSEDES = 64
MAX_EVIDENCE = 16
MAX_REASON_CHARS = 200  # a linker's reason for listing a candidate (a few words, scores)
MAX_DEDUPE_WINDOW_MS = 86_400_000  # a day
_RELATION = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_LINK_METHOD = re.compile(r"^[a-z][a-z0-9_.:-]{0,31}$")
SCOPE_SOURCES = ("explicit", "inferred")
FILE_NOT_ERASED = (
    "another connection holds an older snapshot of the database (a second process, an online backup, a long "
    "read) or is writing, so the WAL could not be copied back and truncated yet: the old bytes may still be in "
    "the file or its -wal. A background task retries until it succeeds and records the time in the tombstone "
    "(get_node's file_erased_at) and in stats"
)


@dataclass(slots=True)
class RememberOutcome:
    node: MemoryNode
    link: LinkProvenance | None
    linked_to: str | None
    latency_ms: float
    warnings: list[str] = field(default_factory=list)
    decision: LinkDecision | None = None  # what the automatic linker decided, when it ran
    outcome: InsertOutcome = InsertOutcome.INSERTED  # replayed (same idempotency key) or duplicate: nothing stored
    duplicate_of: str | None = None  # without a key: the identical active note this call returned


@dataclass(slots=True)
class RecallOutcome:
    query: str
    terms: list[str]
    results: list[tuple[Resolved, list[MemoryNode]]]  # (resolved hit, history newest→oldest)
    latency_ms: float
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ForgetOutcome:
    node: MemoryNode
    changed: bool
    purged: bool
    chain_head: MemoryNode | None
    # A purge: where the text is gone from (table, fts, vectors, caches, file). ``file`` is False
    # while a reader's snapshot keeps the WAL from being truncated; ``file_reason`` says why.
    erased: dict[str, bool] = field(default_factory=dict)
    file_reason: str | None = None

    @property
    def file_erased(self) -> bool | None:
        return self.erased.get("file") if self.purged else None


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    default_namespace: str = "default"
    max_note_bytes: int = textrules.DEFAULT_MAX_NOTE_BYTES
    default_author: str | None = None
    extract_inline: bool = True  # embedded: extract before the write; services: queue it
    link_candidates: int = 20
    infer_scope: bool = True  # infer a scope from the text when none is given
    recall_fanout: int = 10  # full-text hits fetched per result asked for
    vector_fanout: int = 4  # nearest vectors fetched per result asked for (at least 20), hybrid recall
    link_vector_candidates: int = 10  # embedding neighbours added to the linker's BM25 candidates
    vectors_required: bool = False  # recall logs each time the vector half is skipped (gateway: vectors on)
    dedupe_window_ms: int = 120_000  # without a key, an identical active note this recent is returned, not copied


#: The linker's vector neighbours are active decisions only, but the index holds every version:
#: the search asks it for this many times ``link_vector_candidates`` and keeps the first active ones.
ACTIVE_NEIGHBOURS_OVERSAMPLE = 4


def _reasons(decision: LinkDecision, listed: Sequence[str]) -> tuple[str, ...]:
    """The linker's short reason for each of ``listed`` ("" where it gave none), cut to a few words."""
    why = dict(zip((c for c, _ in decision.candidates), decision.why, strict=False))
    return tuple((why.get(c) or "")[:MAX_REASON_CHARS] for c in listed)


def _confidences(decision: LinkDecision, listed: Sequence[str]) -> tuple[float, ...]:
    """The linker's confidence in each of ``listed`` (its link's for a target it did not list)."""
    conf = {c: p for c, p in decision.candidates}
    if decision.proposal is not None:
        conf.setdefault(decision.proposal.target_id, decision.proposal.confidence)
    return tuple(min(max(float(conf.get(c, 0.0)), 0.0), 1.0) for c in listed)


def _offered(note: NewNote, decision: LinkDecision, listed: Sequence[str]) -> NewNote:
    """``note`` listing ``listed`` as its possible_supersedes, with the linker's reasons and confidences."""
    return replace(
        note,
        possible_supersedes=tuple(listed),
        possible_supersedes_why=_reasons(decision, listed),
        possible_supersedes_confidence=_confidences(decision, listed),
    )


class MemoryService:
    def __init__(
        self,
        store: Store,
        *,
        extractor: Extractor | None = None,
        linker: Linker | None = None,
        offerer: Linker | None = None,
        queue: JobQueue | None = None,
        vectors: Vectors | None = None,
        config: ServiceConfig | None = None,
        recall: NodeRecall | None = None,
    ) -> None:
        self.store = store
        # Recall's storage side: the store's own (GrpcStore: one RecallNodes round trip) or,
        # for any other store, evomem.app.recall.recall_nodes in-process over store and vectors.
        self.node_recall = recall if recall is not None else store if isinstance(store, NodeRecall) else None
        self.extractor = extractor
        self.linker = linker
        # Without a linker: a linker whose decision is only offered (``possible_supersedes``), never
        # linked (EVOMEM_OFFER_CANDIDATES with auto_supersede off). No LLM.
        self.offerer = offerer if linker is None else None
        self.queue = queue
        self.vectors = vectors  # None: BM25 only (lite mode, or no embedding model installed)
        self.config = config or ServiceConfig()
        self._pool = LazyPool()  # the vector half of a search runs there, started by the first hybrid search
        # Linker time per remember that called it (benchmarks): candidate search + decision, and
        # the decision alone (the note's embedding, part of the search, is reused by ``vectors.add``).
        self.linker_ms: deque[float] = deque(maxlen=10_000)
        self.linker_decide_ms: deque[float] = deque(maxlen=10_000)
        self.note_embed_ms: deque[float] = deque(maxlen=10_000)  # the note's own vector, before the linker

    # ------------------------------------------------------------------ helpers

    def _namespace(self, namespace: str | None) -> str:
        return textrules.clean_label(namespace, "namespace") or self.config.default_namespace

    @staticmethod
    def _check_id(node_id: object, what: str = "node_id") -> str:
        if not isinstance(node_id, str) or not node_id.strip():
            raise InvalidId(f"{what} must be a node id such as 01J9ZK3V8W5Q6R7S8T9V0W1X2Y")
        node_id = node_id.strip().upper()
        if not is_valid_id(node_id):
            raise InvalidId(
                f"{what} {node_id[:40]!r} is not a valid node id (26 characters, Crockford base32, "
                "as returned by remember)"
            )
        return node_id

    def _existing(self, node_id: str, what: str = "node_id") -> MemoryNode:
        node = self.store.get(node_id)
        if node is None:
            raise NotFound(f"{what}: no node with id {node_id}")
        return node

    def _relations(self, relations: object, namespace: str) -> dict[str, tuple[str, ...]]:
        if relations is None:
            return {}
        if not isinstance(relations, Mapping):
            raise InvalidArgument('relations must be an object such as {"caused_by": ["<node id>"]}')
        if len(relations) > MAX_RELATION_TYPES:
            raise InvalidArgument(f"at most {MAX_RELATION_TYPES} relation types per note")
        out: dict[str, tuple[str, ...]] = {}
        wanted: list[str] = []
        for kind, ids in relations.items():
            if not isinstance(kind, str) or not _RELATION.match(kind):
                raise InvalidArgument(
                    f"relation type {kind!r} is not valid: use lowercase snake_case such as caused_by"
                )
            if isinstance(ids, str):
                ids = [ids]
            if not isinstance(ids, Sequence) or len(ids) > MAX_RELATION_IDS:
                raise InvalidArgument(f"relations.{kind} must be a list of at most {MAX_RELATION_IDS} ids")
            clean = tuple(dict.fromkeys(self._check_id(i, f"relations.{kind}") for i in ids))
            out[kind] = clean
            wanted.extend(clean)
        found = self.store.get_many(wanted)
        for kind, ids in out.items():
            for i in ids:
                node = found.get(i)
                if node is None:
                    raise NotFound(f"relations.{kind}: no node with id {i}")
                if node.namespace != namespace:
                    raise NamespaceMismatch(f"relations.{kind}: node {i} is in namespace {node.namespace!r}")
                if node.purged:
                    raise Purged(f"relations.{kind}: node {i} was purged")
        return out

    # ------------------------------------------------------------------ remember

    def remember(
        self,
        raw_text: object,
        *,
        tags: object = None,
        session: object = None,
        relations: object = None,
        supersedes: object = None,
        scope: object = None,
        namespace: object = None,
        author: object = None,
        idempotency_key: object = None,
    ) -> RememberOutcome:
        """Store a note at most once. With ``idempotency_key``, a retry (same key, same text)
        answers the first call's node and stores nothing; the key with another text is a
        ``Conflict``. Without one, an identical active note of the same namespace and scope
        stored within ``config.dedupe_window_ms`` is answered (``duplicate_of``) instead of a copy.
        The store decides both inside the write's transaction, so concurrent retries agree."""
        started = time.perf_counter()
        text, warnings = textrules.clean_note(raw_text, self.config.max_note_bytes)
        key = textrules.clean_key(idempotency_key)
        ns = self._namespace(namespace)  # type: ignore[arg-type]
        note_scope = textrules.clean_label(scope, "scope")
        scope_source = "explicit" if note_scope else None
        scope_evidence = None
        if note_scope is None and self.config.infer_scope:
            inferred = infer_note_scope(text)
            if inferred is not None:
                note_scope, scope_source, scope_evidence = inferred.scope, "inferred", inferred.evidence
        target = None if supersedes in (None, "") else self._check_id(supersedes, "supersedes")
        rels = self._relations(relations, ns)
        extraction = None
        if self.extractor is not None and self.config.extract_inline:
            extraction = self.extractor.extract(text)
        note = NewNote(
            raw_text=text,
            namespace=ns,
            scope=note_scope,
            tags=textrules.clean_tags(tags),
            session=textrules.clean_short(session, "session"),
            author=textrules.clean_short(author, "author") or self.config.default_author,
            relations=rels,
            extraction=extraction,
            scope_source=scope_source,
            scope_evidence=scope_evidence,
        )
        link: LinkProvenance | None = None
        decision: LinkDecision | None = None
        if target is not None:
            link = LinkProvenance(method=LinkMethod.AGENT.value, confidence=1.0, by=note.author)
        elif self.linker is None and self.offerer is not None:
            decision = self._decide_link(text, ns, note_scope, self.offerer, scope_source == "inferred")
            offered = tuple(c for c, _ in decision.candidates)
            if decision.kind is LinkKind.LINK and decision.proposal is not None and not offered:
                offered = (decision.proposal.target_id,)
            if decision.kind in (LinkKind.LINK, LinkKind.ABSTAIN) and offered:
                note = _offered(note, decision, offered[:MAX_OFFERED])
        elif self.linker is not None:
            decision = self._decide_link(text, ns, note_scope, self.linker, scope_source == "inferred")
            if decision.kind is LinkKind.LINK and decision.proposal is not None:
                proposal = decision.proposal
                target = proposal.target_id
                link = LinkProvenance(
                    method=proposal.method,
                    confidence=proposal.confidence,
                    by=proposal.by,
                    evidence=proposal.evidence,
                )
            elif decision.kind is LinkKind.ABSTAIN and decision.candidates:
                listed = tuple(c for c, _ in decision.candidates)
                note = _offered(note, decision, listed)
                warnings.append(
                    "possible_supersedes: this note may replace "
                    + ", ".join(c for c, _ in decision.candidates)
                    + "; confirm with supersede(node_id, supersedes) if it does"
                )
        node, outcome = self.store.insert_once(
            note,
            supersedes=target,
            link=link,
            idempotency_key=key,
            dedupe_window_ms=0 if key is not None else self.config.dedupe_window_ms,
        )
        if outcome is not InsertOutcome.INSERTED:
            return self._earlier_answer(node, outcome, started, warnings)
        if self.vectors is not None:
            try:
                self.vectors.add([node])
            except Exception as exc:  # derived data: the node is stored, backfill embeds it later
                log.warning("could not embed %s: %s", node.id, exc)
                warnings.append("not yet searchable by meaning (the embedding failed); its words are indexed")
        if extraction is None and self.queue is not None:
            try:
                self.queue.enqueue(ExtractionJob(node.id))
            except Exception as exc:  # the note is stored; a sweeper enqueues it later
                log.warning("could not enqueue extraction for %s: %s", node.id, exc)
                warnings.append("extraction is pending: the queue is unavailable, it will be retried")
        if node.supersedes and target and node.supersedes != target:
            prev = self.store.get(node.supersedes)
            if prev is not None and prev.status == "forgotten":
                warnings.append(
                    f"{target} was already superseded and the chain's head {node.supersedes} was forgotten; "
                    "this note continues the chain as the version in force"
                )
            else:
                warnings.append(f"{target} was already superseded; linked to the current head {node.supersedes}")
        return RememberOutcome(
            node=node,
            link=node.link,
            linked_to=node.supersedes,
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
            warnings=warnings,
            decision=decision,
        )

    def _earlier_answer(
        self, node: MemoryNode, outcome: InsertOutcome, started: float, warnings: list[str]
    ) -> RememberOutcome:
        """A retry or a duplicate: the node stored before, and nothing new (no vector, no job)."""
        if outcome is InsertOutcome.REPLAYED:
            warnings.append(
                f"idempotency_key already used with this text: this is the note stored then ({node.id}); "
                "nothing new was stored"
            )
        else:
            warnings.append(
                f"duplicate_of: an identical active note ({node.id}) was stored in this namespace and scope "
                f"less than {self.config.dedupe_window_ms // 1000} s ago; it is returned instead of a second copy"
            )
        return RememberOutcome(
            node=node,
            link=node.link,
            linked_to=node.supersedes,
            latency_ms=self._ms(started),
            warnings=warnings,
            outcome=outcome,
            duplicate_of=node.id if outcome is InsertOutcome.DUPLICATE else None,
        )

    # ------------------------------------------------------------------ the storage door (gRPC)

    def check_note(self, note: NewNote) -> tuple[NewNote, list[str]]:
        """A ``NewNote`` from another process (storage's InsertNode), put through the rules
        ``remember`` applies to its arguments: the same text rules, labels, tags, short fields,
        relations (ids that exist, in the namespace) and ids, and an extraction only if every
        field is taken from the text. What ``remember`` would refuse is refused here with the
        same error code; what it would clean (control characters) is cleaned the same way."""
        text, warnings = textrules.clean_note(note.raw_text, self.config.max_note_bytes)
        ns = self._namespace(note.namespace)  # empty: the default namespace, as remember
        scope = textrules.clean_label(note.scope, "scope")
        source = note.scope_source if scope is not None else None
        if source is not None and source not in SCOPE_SOURCES:
            raise InvalidArgument(f"scope_source must be explicit or inferred, got {source[:40]!r}")
        evidence = None
        if scope is not None and note.scope_evidence:
            evidence = textrules.check_span(text, note.scope_evidence, "scope_evidence")
        ids = [self._check_id(i, "possible_supersedes") for i in note.possible_supersedes]
        possible = tuple(dict.fromkeys(ids))
        if len(possible) > MAX_POSSIBLE_SUPERSEDES:
            raise InvalidArgument(f"at most {MAX_POSSIBLE_SUPERSEDES} possible_supersedes")
        if len(note.possible_supersedes_why) > len(note.possible_supersedes):
            raise InvalidArgument("possible_supersedes_why: at most one reason per possible_supersedes entry")
        why: dict[str, str] = {}
        for i, reason in zip(ids, note.possible_supersedes_why, strict=False):
            clean_reason = textrules.clean_short(reason, "possible_supersedes_why", limit=MAX_REASON_CHARS) or ""
            why.setdefault(i, clean_reason)
        reasons = tuple(why.get(i, "") for i in possible) if why else ()
        if len(note.possible_supersedes_confidence) > len(note.possible_supersedes):
            raise InvalidArgument("possible_supersedes_confidence: at most one per possible_supersedes entry")
        conf: dict[str, float] = {}
        for i, c in zip(ids, note.possible_supersedes_confidence, strict=False):
            if not (isinstance(c, (int, float)) and 0.0 <= c <= 1.0):
                raise InvalidArgument(f"possible_supersedes_confidence must be from 0 to 1, got {c!r}")
            conf.setdefault(i, float(c))
        confidences = tuple(conf.get(i, 0.0) for i in possible) if conf else ()
        extraction = None
        if note.extraction is not None:
            extraction = textrules.check_extraction(text, note.extraction)
        clean = NewNote(
            raw_text=text,
            namespace=ns,
            scope=scope,
            tags=textrules.clean_tags(list(note.tags)),
            session=textrules.clean_short(note.session, "session"),
            author=textrules.clean_short(note.author, "author"),
            relations=self._relations(dict(note.relations) if note.relations else None, ns),
            extraction=extraction,
            scope_source=source,
            scope_evidence=evidence,
            possible_supersedes=possible,
            possible_supersedes_why=reasons,
            possible_supersedes_confidence=confidences,
        )
        return clean, warnings

    def check_link(self, link: LinkProvenance | None) -> LinkProvenance | None:
        """A link's provenance from another process: a method label, a confidence in [0, 1],
        short free text. The store sets ``requested_id`` and ``created_at`` itself."""
        if link is None:
            return None
        if not isinstance(link.method, str) or not _LINK_METHOD.match(link.method):
            raise InvalidArgument("link.method must be a short lowercase label such as agent or heuristic")
        if not isinstance(link.confidence, int | float) or not math.isfinite(link.confidence):
            raise InvalidArgument("link.confidence must be a number from 0 to 1")
        if not 0.0 <= float(link.confidence) <= 1.0:
            raise InvalidArgument(f"link.confidence must be from 0 to 1, got {link.confidence}")
        if len(link.evidence) > MAX_EVIDENCE:
            raise InvalidArgument(f"at most {MAX_EVIDENCE} link.evidence entries")
        evidence = tuple(textrules.clean_short(e, "link.evidence", limit=500) or "" for e in link.evidence)
        return LinkProvenance(
            method=link.method,
            confidence=float(link.confidence),
            by=textrules.clean_short(link.by, "link.by"),
            evidence=tuple(e for e in evidence if e),
        )

    def store_note(
        self,
        note: NewNote,
        *,
        supersedes: object = None,
        link: LinkProvenance | None = None,
        idempotency_key: object = None,
        dedupe_window_ms: object = 0,
    ) -> tuple[MemoryNode, InsertOutcome]:
        """Storage's InsertNode: the note checked by ``check_note``, then ``insert_once``."""
        clean, _ = self.check_note(note)
        target = None if supersedes in (None, "") else self._check_id(supersedes, "supersedes")
        key = textrules.clean_key(idempotency_key)
        if isinstance(dedupe_window_ms, bool) or not isinstance(dedupe_window_ms, int):
            raise InvalidArgument("dedupe_window_ms must be an integer")
        if not 0 <= dedupe_window_ms <= MAX_DEDUPE_WINDOW_MS:
            raise InvalidArgument(f"dedupe_window_ms must be from 0 to {MAX_DEDUPE_WINDOW_MS}")
        return self.store.insert_once(
            clean,
            supersedes=target,
            link=self.check_link(link),
            idempotency_key=key,
            dedupe_window_ms=dedupe_window_ms,
        )

    def record_extraction(
        self, node_id: object, extraction: Extraction | None, state: ExtractionState, error: object = None
    ) -> MemoryNode | None:
        """A job's result, from the worker (storage's SetExtraction): ``done`` with an extraction
        whose every field is a span of the node's text, or ``failed`` with an error. Accepted only
        while the node's extraction is pending (the store checks that in the write's transaction;
        ``Conflict`` otherwise). None: the node is gone or purged."""
        nid = self._check_id(node_id)
        if state is ExtractionState.PENDING:
            raise InvalidArgument("state must be done or failed: a job's result")
        if state is ExtractionState.DONE and extraction is None:
            raise InvalidArgument("state done needs the extraction")
        if state is ExtractionState.FAILED and extraction is not None:
            raise InvalidArgument("state failed carries an error, not an extraction")
        message = None if error is None else (textrules.clean_short(error, "error", limit=2000) or "")
        node = self.store.get(nid)
        if node is None or node.purged:
            return None
        if extraction is not None:
            extraction = textrules.check_extraction(node.raw_text, extraction)
        return self.store.set_extraction(nid, extraction, state, message)

    def link_candidates(
        self, text: str, namespace: str, scope: str | None, scope_inferred: bool = False
    ) -> list[MemoryNode]:
        """Active decisions in the namespace with a compatible scope: BM25 matches, and with
        vectors the nearest notes by meaning (a paraphrase shares few words), fused by rank.
        A scope inferred from a text, the note's (``scope_inferred``) or a candidate's, is a guess
        and rules nothing out (``scope.may_list``): the linker may list such a candidate for the
        agent to confirm, never link it."""
        return self._link_candidates(text, namespace, scope, scope_inferred)[0]

    def _link_candidates(
        self, text: str, namespace: str, scope: str | None, scope_inferred: bool = False
    ) -> tuple[list[MemoryNode], dict[str, float]]:
        """``link_candidates`` and the cosine of the note with each candidate the vector half found.
        BM25 looks for a long document's title and decision part (``decision_text.search_text``)."""
        terms = textrules.query_terms(search_text(text))
        limit, vector_limit = self.config.link_candidates, self.config.link_vector_candidates
        hits, near, problem = search_both(
            self.store,
            self.vectors,
            self._pool,
            terms,
            text,
            namespace,
            limit,
            vector_limit * ACTIVE_NEIGHBOURS_OVERSAMPLE,
            active_only=True,
        )
        if problem is not None:
            self._vector_search_failed(problem)
        nodes = self.store.get_many([*(h.node_id for h in hits), *(i for i, _ in near[:vector_limit])])
        if near:
            vhits = [
                SearchHit(i, nodes[i].chain_root, sim, via=("vector",))
                for i, sim in self._active_nearest(near, nodes, vector_limit)
            ]
            hits = fuse(hits, vhits)[: self.config.link_candidates]
        out = [nodes[h.node_id] for h in hits if h.node_id in nodes]
        kept = [
            n
            for n in out
            if scope_may_list(scope, n.scope, a_inferred=scope_inferred, b_inferred=n.scope_source == "inferred")
        ]
        return kept, dict(near)

    def _active_nearest(
        self, near: Sequence[tuple[str, float]], nodes: dict[str, MemoryNode], want: int
    ) -> list[tuple[str, float]]:
        """The first ``want`` of ``near`` (nearest first) that are active, reading into ``nodes``
        the ones it has not read yet, ``want`` at a time: the vector index holds every version,
        so a long history's superseded versions would otherwise crowd the decisions in force out
        of the linker's neighbours. A store without superseded neighbours reads nothing more."""
        out: list[tuple[str, float]] = []
        for start in range(0, len(near), want):
            batch = near[start : start + want]
            unread = [i for i, _ in batch if i not in nodes]
            if unread:
                nodes.update(self.store.get_many(unread))
            out += [(i, sim) for i, sim in batch if i in nodes and nodes[i].status == Status.ACTIVE]
            if len(out) >= want:
                break
        return out[:want]

    @staticmethod
    def _vector_search_failed(problem: str) -> None:
        log.warning("vector search failed, BM25 only: %s", problem)

    def _decide_link(
        self, text: str, namespace: str, scope: str | None, linker: Linker, scope_inferred: bool = False
    ) -> LinkDecision:
        # What the linker needs of the note alone (the pair linker: a long document's decision
        # part embedded) starts first, on a pool thread: it runs while the note itself is
        # embedded and the candidates are searched (onnxruntime and SQLite leave the GIL).
        ahead = getattr(linker, "prepare", None)
        pending = self._pool().submit(ahead, text) if ahead is not None else None
        prepare = getattr(self.vectors, "prepare", None)
        if prepare is not None:  # the note's vector, which ``add`` stores: storage's cost, computed once
            embedding = time.perf_counter()
            try:
                prepare(text)
            except Exception as exc:  # the candidate search reports a vector failure itself
                log.debug("embedding the note ahead failed: %s", exc)
            self.note_embed_ms.append((time.perf_counter() - embedding) * 1000)
        started = time.perf_counter()
        candidates, sims = self._link_candidates(text, namespace, scope, scope_inferred)
        if not candidates:
            return LinkDecision(kind=LinkKind.NONE, reason="no active decision with a compatible scope matches")
        if pending is not None:
            wait([pending])  # ``prepare`` never raises; decide would redo what it left undone
        deciding = time.perf_counter()
        try:  # with the search's cosines (no second embedding) and whether the scope is a guess
            result = linker_calls.decide(
                linker, text, scope, candidates, similarities=sims, scope_inferred=scope_inferred
            )
        except Exception as exc:  # a linker failure never loses the note: store it unlinked
            log.warning("linker %s failed: %s", getattr(linker, "name", "?"), exc)
            result = LinkDecision(kind=LinkKind.NONE, reason=f"linker failed: {exc}")
        done = time.perf_counter()
        self.linker_ms.append((done - started) * 1000)
        self.linker_decide_ms.append((done - deciding) * 1000)
        return result

    # ------------------------------------------------------------------ recall

    def recall(
        self,
        query: object,
        *,
        k: int = 5,
        include_history: bool = False,
        history_depth: int = 5,
        scope: object = None,
        tags: object = None,
        namespace: object = None,
    ) -> RecallOutcome:
        started = time.perf_counter()
        check_k(k)
        check_history_depth(history_depth)
        terms = textrules.query_terms(query)
        # Echo the query as searched, never raw (fix: a lone surrogate in the query made the
        # result unserialisable, so recall crashed instead of answering).
        echo = textrules.clean_free_text(query)  # type: ignore[arg-type]  # a str: query_terms checked
        ns = self._namespace(namespace)  # type: ignore[arg-type]
        want_scope = textrules.clean_label(scope, "scope")
        want_tags = textrules.clean_tags(tags)
        notes: list[str] = []
        if not terms:
            notes.append("the query has no searchable words; nothing to match")
            return RecallOutcome(echo, terms, [], self._ms(started), notes)
        filtered = want_scope is not None or bool(want_tags)
        limit = max(50, k * self.config.recall_fanout) * (4 if filtered else 1)
        ask = RecallQuery(
            terms=tuple(terms),
            text=echo,
            namespace=ns,
            k=k,
            limit=limit,
            vector_limit=min(limit, max(20, k * self.config.vector_fanout)) if self.vectors is not None else 0,
            vectors_required=self.config.vectors_required,
            scope=want_scope,
            tags=want_tags,
            include_history=bool(include_history),
            history_depth=history_depth,
        )
        if self.node_recall is not None:
            answer = self.node_recall.recall_nodes(ask)
        else:
            answer = recall_nodes(self.store, self.vectors, ask, self._pool)
        if answer.vector_problem is not None:
            if MODEL_LOADING in answer.vector_problem:
                notes.append(f"{MODEL_LOADING}: this answer is by words (BM25) only; ask again in a few seconds")
            else:
                self._vector_search_failed(answer.vector_problem)
                notes.append("no search by meaning for this call (BM25 only): " + answer.vector_problem)
        if answer.hidden_forgotten and len(answer.results) < k:
            notes.append(
                f"{answer.hidden_forgotten} matching chain(s) hidden because their current version was forgotten"
            )
        return RecallOutcome(echo, terms, answer.results, self._ms(started), notes)

    @staticmethod
    def _ms(started: float) -> float:
        return round((time.perf_counter() - started) * 1000, 3)

    # ------------------------------------------------------------------ get / forget / link

    def get_node(
        self, node_id: object, *, include_history: bool = False, history_depth: int = 5
    ) -> tuple[MemoryNode, MemoryNode | None, list[MemoryNode]]:
        """The node, the head of its chain (None when it is the head), and its history."""
        nid = self._check_id(node_id)
        check_history_depth(history_depth)
        node = self._existing(nid)
        if node.purged:
            raise Purged(
                f"node {nid} was purged: its text is gone for good. Its chain still records that "
                "a version existed here."
            )
        head = None
        if node.superseded_by is not None:
            head = self.store.heads([node.chain_root]).get(node.chain_root)
        history = self.store.chain(nid, history_depth)[1:] if include_history else []
        return node, head, history

    def forget(self, node_id: object, *, purge: bool = False) -> ForgetOutcome:
        """Forget (soft) or purge. A purge reports where the text is gone from: the table and
        its FTS index and vector (one transaction in the store), this process's embedding cache,
        and the file: False while a reader's snapshot keeps the WAL (then the store retries in
        the background and records ``file_erased_at``)."""
        nid = self._check_id(node_id)
        before = self._existing(nid)
        node, changed = self.store.forget(nid, purge=bool(purge))
        head = self.store.heads([node.chain_root]).get(node.chain_root)
        out = ForgetOutcome(node=node, changed=changed, purged=node.purged, chain_head=head)
        if purge and node.purged:
            evict = getattr(self.vectors, "evict", None)  # the embedding cache keys texts it embedded
            if evict is not None and before.raw_text:
                evict([before.raw_text])
            erased_file = node.file_erased_at is not None
            out.erased = {"table": True, "fts": True, "vectors": True, "caches": True, "file": erased_file}
            out.file_reason = None if erased_file else FILE_NOT_ERASED
        return out

    def supersede(self, node_id: object, supersedes: object, *, author: object = None) -> MemoryNode:
        """Link an existing note as the replacement of another decision (after the fact)."""
        nid = self._check_id(node_id)
        target = self._check_id(supersedes, "supersedes")
        if nid == target:
            from evomem.domain.errors import CycleError

            raise CycleError(f"node {nid} cannot supersede itself")
        node = self._existing(nid)
        if node.supersedes is not None:
            raise InvalidArgument(
                f"node {nid} already supersedes {node.supersedes}; a version replaces exactly one earlier version"
            )
        link = LinkProvenance(
            method=LinkMethod.AGENT.value,
            confidence=1.0,
            by=textrules.clean_short(author, "author") or self.config.default_author,
        )
        return self.store.link(nid, target, link)

    def unlink(self, node_id: object, *, author: object = None) -> tuple[MemoryNode, MemoryNode]:
        """Undo a wrong supersedes link in one step: the replaced version is in force again.

        Returns (the node, now the first version of its own chain; the restored head).
        The link's provenance is kept in the audit log.
        """
        nid = self._check_id(node_id)
        node = self._existing(nid)
        if node.purged:
            raise Purged(f"node {nid} was purged")
        if node.supersedes is None:
            raise InvalidArgument(f"node {nid} supersedes nothing; there is no link to undo")
        by = textrules.clean_short(author, "author") or self.config.default_author
        return self.store.unlink(nid, by=by)  # type: ignore[attr-defined]

    def stats(self, namespace: object = None) -> Stats:
        ns = textrules.clean_label(namespace, "namespace")
        return self.store.stats(ns)

    # ------------------------------------------------------------------ extraction (worker side)

    def run_extraction(self, node_id: str) -> MemoryNode | None:
        """Extract one pending node. Idempotent: a node already done is left alone."""
        if self.extractor is None:
            raise InvalidArgument("no extractor configured")
        node = self.store.get(node_id)
        if node is None or node.purged:
            return None
        if node.extraction_state != ExtractionState.PENDING:  # done, or given up on (failed)
            return node
        extraction = self.extractor.extract(node.raw_text)
        try:
            return self.store.set_extraction(node_id, extraction, ExtractionState.DONE)
        except Conflict:  # another delivery of the same job finished first
            return self.store.get(node_id)
