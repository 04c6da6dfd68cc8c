"""The application service: remember, recall, get_node, forget, supersede, unlink, stats (and the
timeline's reads: recent, dependents).

Written only against the ports, so the same code runs in the embedded process (``LocalStorage``
over SQLite in-process) and in the gateway (``GrpcStorage``: one storage round trip for each
storage side of an operation). Entry points translate; this decides.

``remember`` reads what it needs in one call (``Storage.remember_context``: the nodes the note names
and, when the linker judges the note (``wants_candidates``), the candidates with their cosines and
earlier versions), lets the linker decide, and writes in a second (``Storage.remember_note``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import wait
from dataclasses import dataclass, field, replace

from evomem.app import incidents, premise
from evomem.app.notes import NoteLimits, NoteRules, offered_note
from evomem.app.ports import ExtractionJob, Extractor, JobQueue, Linker, Storage, Store, Vectors
from evomem.app.recall import HISTORY_DEPTH_MAX as HISTORY_DEPTH_MAX  # re-exported: the tools' limits
from evomem.app.recall import K_MAX as K_MAX
from evomem.app.recall import LazyPool, check_history_depth, check_k
from evomem.domain import text as textrules
from evomem.domain.audit import AuditEntry
from evomem.domain.browse import DEPENDENTS_MAX, RecentPage, RecentQuery, check_recent
from evomem.domain.errors import MODEL_LOADING, Conflict, CycleError, InvalidArgument, NotFound, Purged
from evomem.domain.linkers.decision_text import search_text
from evomem.domain.model import (
    ExtractionState,
    InsertOutcome,
    LinkDecision,
    LinkKind,
    LinkMethod,
    LinkProvenance,
    MemoryNode,
    NewNote,
    Stats,
)
from evomem.domain.recall import HintCutoffs, RecallQuery, Resolved
from evomem.domain.remember import ContextQuery, NoteWrite, RememberContext
from evomem.domain.scope import infer_note_scope

log = logging.getLogger("evomem.service")

MAX_OFFERED = 3  # likely predecessors remember lists with auto_supersede off
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
    vectors: bool = False  # search and embed by meaning too (hybrid); storage says when it cannot
    vectors_required: bool = False  # recall logs each time the vector half is skipped (gateway: vectors on)
    dedupe_window_ms: int = 120_000  # without a key, an identical active note this recent is returned, not copied
    # recall shows a possible successor whose offer's probability reaches these (``HintCutoffs``);
    # asked when there is one to show, so the model's ``hint_at`` is not read at start (``hint_floor``)
    hint_min_p: Callable[[], HintCutoffs] = field(default=HintCutoffs)


class MemoryService:
    """``storage``: the storage side of every operation. ``linker``: links on its own (the note is
    stored with the link) or abstains listing candidates; ``offerer``: a linker whose decision is only
    offered (``possible_supersedes``, up to ``MAX_OFFERED``), used when there is no ``linker``.
    ``vectors``: the vectors this process holds (the embedded server's, loaded in the background by
    the entrypoint), or None; storage uses them, the service only starts a note's embedding early."""

    def __init__(
        self,
        storage: Storage,
        *,
        extractor: Extractor | None = None,
        linker: Linker | None = None,
        offerer: Linker | None = None,
        queue: JobQueue | None = None,
        vectors: Vectors | None = None,
        config: ServiceConfig | None = None,
    ) -> None:
        self.storage = storage
        self.extractor = extractor
        self.linker = linker
        self.offerer = offerer if linker is None else None
        self.queue = queue
        self.vectors = vectors
        self.config = config or ServiceConfig()
        self.rules = NoteRules(NoteLimits(self.config.default_namespace, self.config.max_note_bytes))
        self._pool = LazyPool()  # a linker's ``prepare`` runs there while storage searches

    @classmethod
    def local(
        cls,
        store: Store,
        *,
        vectors: Vectors | None = None,
        config: ServiceConfig | None = None,
        extractor: Extractor | None = None,
        linker: Linker | None = None,
        offerer: Linker | None = None,
        queue: JobQueue | None = None,
    ) -> MemoryService:
        """The service over ``store`` in this process (``LocalStorage``), searching by meaning too
        when ``vectors`` are given: what the embedded wiring builds, for a program that embeds it."""
        from evomem.app.storage import LocalStorage

        config = replace(config or ServiceConfig(), vectors=vectors is not None)
        return cls(
            LocalStorage(store, vectors),
            extractor=extractor,
            linker=linker,
            offerer=offerer,
            queue=queue,
            vectors=vectors,
            config=config,
        )

    # ------------------------------------------------------------------ helpers

    def _namespace(self, namespace: object) -> str:
        return self.rules.namespace(namespace)

    def _existing(self, node_id: str, what: str = "node_id") -> MemoryNode:
        node = self.storage.get(node_id)
        if node is None:
            raise NotFound(f"{what}: no node with id {node_id}")
        return node

    @staticmethod
    def _ms(started: float) -> float:
        return round((time.perf_counter() - started) * 1000, 3)

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
        if_head: object = False,
        audit: AuditEntry | None = None,
    ) -> RememberOutcome:
        """Store a note at most once. With ``idempotency_key``, a retry (same key, same text)
        answers the first call's node and stores nothing; the key with another text is a
        ``Conflict``. Without one, an identical active note of the same namespace and scope
        stored within ``config.dedupe_window_ms`` is answered (``duplicate_of``) instead of a copy.
        Storage decides both inside the write's transaction, so concurrent retries agree.
        ``if_head``: with ``supersedes``, store only if that id is still its chain's head (``NotHead``,
        ``[conflict]``, naming the head, otherwise); False re-targets to the head as before.
        ``audit``: an authenticated caller's entry (``access.GuardedService``), stored with the write."""
        started = time.perf_counter()
        text, warnings = textrules.clean_note(raw_text, self.config.max_note_bytes)
        if self.vectors is not None and self.config.vectors:  # embedded now: the search, ``add_soon`` wait for it
            self._pool().submit(self.vectors.prepare, text)
        key = textrules.clean_key(idempotency_key)
        ns = self._namespace(namespace)
        note_scope = textrules.clean_label(scope, "scope")
        scope_source = "explicit" if note_scope else None
        scope_evidence = None
        if note_scope is None and self.config.infer_scope:
            inferred = infer_note_scope(text)
            if inferred is not None:
                note_scope, scope_source, scope_evidence = inferred.scope, "inferred", inferred.evidence
        target = None if supersedes in (None, "") else self.rules.node_id(supersedes, "supersedes")
        only_head = self.rules.if_head(if_head, target)
        rels = self.rules.relations(relations)
        decider = None if target is not None else self.linker or self.offerer
        judged = decider is not None and decider.wants_candidates(text)  # else no candidate is searched
        judge = decider if judged else None
        context = self._context(text, ns, note_scope, scope_source == "inferred", rels, target, judge)
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
        elif decider is not None:
            decision = self._decide(decider, text, note_scope, scope_source == "inferred", context if judged else None)
            if self.linker is None:  # an offer: listed, never linked
                offered = tuple(c for c, _ in decision.candidates)
                if decision.kind is LinkKind.LINK and decision.proposal is not None and not offered:
                    offered = (decision.proposal.target_id,)
                if decision.kind in (LinkKind.LINK, LinkKind.ABSTAIN) and offered:
                    note = offered_note(note, decision, offered[:MAX_OFFERED])
            elif decision.kind is LinkKind.LINK and decision.proposal is not None:
                proposal = decision.proposal
                target = proposal.target_id
                link = LinkProvenance(proposal.method, proposal.confidence, proposal.by, proposal.evidence)
            elif decision.kind is LinkKind.ABSTAIN and decision.candidates:
                listed = tuple(c for c, _ in decision.candidates)
                note = offered_note(note, decision, listed)
                warnings.append(
                    "possible_supersedes: this note may replace "
                    + ", ".join(listed)
                    + "; confirm with supersede(node_id, supersedes) if it does"
                )
        stored = self.storage.remember_note(
            NoteWrite(
                note,
                supersedes=target,
                link=link,
                idempotency_key=key,
                dedupe_window_ms=0 if key is not None else self.config.dedupe_window_ms,
                vectors=self.config.vectors,
                vectors_required=self.config.vectors_required,
                audit=audit,
                if_head=only_head,
            )
        )
        node = stored.node
        if stored.outcome is not InsertOutcome.INSERTED:
            return self._earlier_answer(node, stored.outcome, started, warnings)
        if stored.vector_problem is not None:  # derived data: the node is stored, the backfill embeds it later
            log.warning("could not embed %s: %s", node.id, stored.vector_problem)
            warnings.append("not yet searchable by meaning (the embedding failed); its words are indexed")
        if extraction is None and self.queue is not None:
            try:
                self.queue.enqueue(ExtractionJob(node.id))
            except Exception as exc:  # the note is stored; a sweeper enqueues it later
                log.warning("could not enqueue extraction for %s: %s", node.id, exc)
                warnings.append("extraction is pending: the queue is unavailable, it will be retried")
        if node.supersedes and target and node.supersedes != target:
            if stored.head_was_forgotten:
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
            latency_ms=self._ms(started),
            warnings=warnings,
            decision=decision,
        )

    def _context(
        self,
        text: str,
        namespace: str,
        scope: str | None,
        scope_inferred: bool,
        relations: dict[str, tuple[str, ...]],
        target: str | None,
        judge: Linker | None,
    ) -> RememberContext | None:
        """Storage's first call: the nodes the note names (checked) and, for a linker that judges the
        note (``wants_candidates``), its candidates. None when there is nothing to read."""
        named = [*self.rules.relation_ids(relations), *([target] if target is not None else [])]
        if judge is None and not named:
            return None
        ahead = self._pool().submit(judge.prepare, text) if judge is not None else None
        try:
            context = self.storage.remember_context(
                self._context_query(text, namespace, scope, scope_inferred, named, candidates=judge is not None)
            )
        finally:
            if ahead is not None:
                wait([ahead])  # ``prepare`` never raises
        self.rules.check_relations(relations, namespace, context.nodes)
        if target is not None and target not in context.nodes:
            raise NotFound(f"supersedes: no node with id {target}")
        return context

    def _context_query(
        self,
        text: str,
        namespace: str,
        scope: str | None,
        scope_inferred: bool,
        named: Sequence[str] = (),
        *,
        candidates: bool,
    ) -> ContextQuery:
        return ContextQuery(
            text=text,
            namespace=namespace,
            node_ids=tuple(dict.fromkeys(named)),
            candidates=candidates,
            search_terms=tuple(textrules.query_terms(search_text(text))) if candidates else (),
            scope=scope,
            scope_inferred=scope_inferred,
            limit=self.config.link_candidates,
            vector_limit=self.config.link_vector_candidates if self.config.vectors else 0,
            vectors_required=self.config.vectors_required,
        )

    def link_candidates(
        self, text: str, namespace: str, scope: str | None, scope_inferred: bool = False
    ) -> list[MemoryNode]:
        """The active decisions a linker would be shown for this note, best first: BM25 on the note's
        decision part fused with its nearest notes by meaning, in a compatible scope (a scope inferred
        from a text rules nothing out, ``scope.may_list``)."""
        query = self._context_query(text, namespace, scope, scope_inferred, candidates=True)
        return self.storage.remember_context(query).candidates

    def _decide(
        self, linker: Linker, text: str, scope: str | None, scope_inferred: bool, context: RememberContext | None
    ) -> LinkDecision:
        """``context`` None: the linker does not judge the note; asked with no candidate, it says why."""
        if context is not None and context.vector_problem is not None:
            self._vector_search_failed(context.vector_problem)
        if context is not None and not context.candidates:
            return LinkDecision(kind=LinkKind.NONE, reason="no active decision with a compatible scope matches")
        try:  # with the search's cosines (no second embedding), the scope's origin and the chains read
            if context is None:
                return linker.decide(text, scope, (), None, scope_inferred, None)
            return linker.decide(text, scope, context.candidates, context.similarities, scope_inferred, context.earlier)
        except Exception as exc:  # a linker failure never loses the note: store it unlinked
            log.warning("linker %s failed: %s", linker.name, exc)
            return LinkDecision(kind=LinkKind.NONE, reason=f"linker failed: {exc}")

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

    @staticmethod
    def _vector_search_failed(problem: str) -> str:
        """Log why the search by meaning failed; the reference the log has it under."""
        return incidents.record("vector search failed, BM25 only", problem, logger=log, level=logging.WARNING)

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
        # Echo the query as searched, never raw (a lone surrogate made the answer unserialisable).
        echo = textrules.clean_free_text(query)  # type: ignore[arg-type]  # a str: query_terms checked
        ns = self._namespace(namespace)
        want_scope = textrules.clean_label(scope, "scope")
        want_tags = textrules.clean_tags(tags)
        notes: list[str] = []
        if not terms:
            notes.append("the query has no searchable words; nothing to match")
            return RecallOutcome(echo, terms, [], self._ms(started), notes)
        filtered = want_scope is not None or bool(want_tags)
        limit = max(50, k * self.config.recall_fanout) * (4 if filtered else 1)
        answer = self.storage.recall_nodes(
            RecallQuery(
                terms=tuple(terms),
                text=echo,
                namespace=ns,
                k=k,
                limit=limit,
                vector_limit=min(limit, max(20, k * self.config.vector_fanout)) if self.config.vectors else 0,
                vectors_required=self.config.vectors_required,
                scope=want_scope,
                tags=want_tags,
                include_history=bool(include_history),
                history_depth=history_depth,
            )
        )
        if answer.vector_problem is not None:
            if MODEL_LOADING in answer.vector_problem:
                notes.append(f"{MODEL_LOADING}: this answer is by words (BM25) only; ask again in a few seconds")
            else:
                ref = self._vector_search_failed(answer.vector_problem)
                why = "the vector search failed" if incidents.leaks(answer.vector_problem) else answer.vector_problem
                notes.append(f"no search by meaning for this call (BM25 only): {why} (ref {ref})")
        if answer.hidden_forgotten and len(answer.results) < k:
            notes.append(
                f"{answer.hidden_forgotten} matching chain(s) hidden because their current version was forgotten"
            )
        if any(entry.maybe_replaced_by for entry, _ in answer.results):  # the cut-offs read only then
            cut = self.config.hint_min_p()
            for entry, _ in answer.results if not cut.shows_all else ():
                entry.maybe_replaced_by = [s for s in entry.maybe_replaced_by if cut.shown(s)]
        return RecallOutcome(echo, terms, answer.results, self._ms(started), notes)

    # ------------------------------------------------------------------ get / forget / link

    def get_node(
        self, node_id: object, *, include_history: bool = False, history_depth: int = 5
    ) -> tuple[MemoryNode, MemoryNode | None, list[MemoryNode]]:
        """The node, the head of its chain (None when it is the head), and its history."""
        nid = self.rules.node_id(node_id)
        check_history_depth(history_depth)
        node = self._existing(nid)
        if node.purged:
            raise Purged(
                f"node {nid} was purged: its text is gone for good. Its chain still records that "
                "a version existed here."
            )
        head = None
        if node.superseded_by is not None:
            head = self.storage.heads([node.chain_root]).get(node.chain_root)
        history = self.storage.chain(nid, history_depth)[1:] if include_history else []
        return node, head, history

    def forget(self, node_id: object, *, purge: bool = False) -> ForgetOutcome:
        """Forget (soft) or purge. A purge reports where the text is gone from: the table and
        its FTS index and vector (one transaction in the store), storage's embedding cache,
        and the file: False while a reader's snapshot keeps the WAL (then the store retries in
        the background and records ``file_erased_at``)."""
        nid = self.rules.node_id(node_id)
        self._existing(nid)
        node, changed = self.storage.forget(nid, purge=bool(purge))
        head = self.storage.heads([node.chain_root]).get(node.chain_root)
        out = ForgetOutcome(node=node, changed=changed, purged=node.purged, chain_head=head)
        if purge and node.purged:
            erased_file = node.file_erased_at is not None
            out.erased = {"table": True, "fts": True, "vectors": True, "caches": True, "file": erased_file}
            out.file_reason = None if erased_file else FILE_NOT_ERASED
        return out

    def supersede(self, node_id: object, supersedes: object, *, author: object = None) -> MemoryNode:
        """Link an existing note as the replacement of another decision (after the fact)."""
        nid = self.rules.node_id(node_id)
        target = self.rules.node_id(supersedes, "supersedes")
        if nid == target:
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
        return self.storage.link(nid, target, link)

    def unlink(self, node_id: object, *, author: object = None) -> tuple[MemoryNode, MemoryNode]:
        """Undo a wrong supersedes link in one step: the replaced version is in force again.

        Returns (the node, now the first version of its own chain; the restored head).
        The link's provenance is kept in the audit log.
        """
        nid = self.rules.node_id(node_id)
        node = self._existing(nid)
        if node.purged:
            raise Purged(f"node {nid} was purged")
        if node.supersedes is None:
            raise InvalidArgument(f"node {nid} supersedes nothing; there is no link to undo")
        by = textrules.clean_short(author, "author") or self.config.default_author
        return self.storage.unlink(nid, by=by)

    def review(
        self, node_id: object, *, still_valid: object = True, superseded_by: object = None, author: object = None
    ) -> premise.ReviewOutcome:
        """Clear a ``needs_review`` flag: still valid, or replaced by ``superseded_by`` (``app.premise``)."""
        return premise.review_for(self, node_id, still_valid=still_valid, superseded_by=superseded_by, author=author)

    def check(
        self, statement: object = None, *, node_id: object = None, scope: object = None, namespace: object = None
    ) -> premise.CheckOutcome:
        """Is a decision (``node_id``) or a ``statement`` still in force? (``app.premise.check``)"""
        return premise.check(self, statement, node_id=node_id, scope=scope, namespace=namespace)

    def recent(
        self,
        namespace: object = None,
        *,
        scope: object = None,
        tags: object = None,
        limit: int = 20,
        before: object = None,
        history_depth: int = 0,
    ) -> RecentPage:
        """The chains changed last: one page of heads in force, newest first, filtered like recall;
        with ``history_depth``, each head's earlier versions too (in the same storage call)."""
        cursor = None if before in (None, "") else self.rules.node_id(before, "before")
        scope_, tags_ = textrules.clean_label(scope, "scope"), textrules.clean_tags(tags)
        return self.storage.recent_heads(
            check_recent(RecentQuery(self._namespace(namespace), scope_, tags_, limit, cursor, history_depth))
        )

    def dependents(self, node_id: object) -> list[MemoryNode]:
        """The decisions in force that depend on or implement ``node_id``'s chain, newest first."""
        return self.storage.dependents(self._existing(self.rules.node_id(node_id)).id, DEPENDENTS_MAX)

    def stats(self, namespace: object = None) -> Stats:
        return self.storage.stats(textrules.clean_label(namespace, "namespace"))

    def close(self) -> None:
        """Close storage (in process: the database and its vectors; over gRPC: the channel)."""
        self.storage.close()

    # ------------------------------------------------------------------ extraction (worker side)

    def run_extraction(self, node_id: str) -> MemoryNode | None:
        """Extract one pending node. Idempotent: a node already done is left alone."""
        if self.extractor is None:
            raise InvalidArgument("no extractor configured")
        node = self.storage.get(node_id)
        if node is None or node.purged:
            return None
        if node.extraction_state != ExtractionState.PENDING:  # done, or given up on (failed)
            return node
        extraction = self.extractor.extract(node.raw_text)
        try:
            return self.storage.set_extraction(node_id, extraction, ExtractionState.DONE)
        except Conflict:  # another delivery of the same job finished first
            return self.storage.get(node_id)
