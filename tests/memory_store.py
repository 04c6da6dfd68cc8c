"""An in-memory ``Store``: the port written from ``evomem.app.ports`` alone, for the unit tests.

    store = MemoryStore()
    service = MemoryService.local(store)        # the whole application service over it

It keeps the chain invariants the port promises, each write whole or not at all (one lock):
a chain has one head and versions 1..n; ``supersedes`` naming an older version is re-targeted to
the head (``requested_id`` keeps the id named), a forgotten head is continued, a forgotten head
named itself is ``Forgotten``; links stay inside a namespace and never make a cycle; ``unlink``
restores the predecessor and records the undone link; idempotency keys and the dedupe window
answer the earlier node; a purge erases the text (a retry under its key is ``Purged``);
extraction results are accepted only while pending. Nothing is on a file, so a purge is erased
from everywhere at once (``file_erased_at`` is set with ``purged_at``).

Its search is not BM25: a note's score is how many times the query's words (lowercase, exact,
no stemming) occur in its text, extracted fields and tags; ties go to the newer note.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from evomem.domain import dependencies as deps
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.browse import RecentPage, RecentQuery, with_histories
from evomem.domain.errors import (
    Conflict,
    CycleError,
    Forgotten,
    InvalidArgument,
    NamespaceMismatch,
    NotFound,
    NotHead,
    Purged,
)
from evomem.domain.linkers.vocabulary import words
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    InsertOutcome,
    LinkProvenance,
    MemoryNode,
    NewNote,
    SearchHit,
    Stats,
    Status,
    new_id,
    now_ms,
    write_ms,
)
from evomem.domain.recall import Successor, scope_match
from evomem.domain.remember import link_sketch

SCHEMA_VERSION = 1  # what ``stats`` reports: this store has one shape


def sketch(node: MemoryNode) -> MemoryNode:
    """``node`` as the SQL stores' ``sketches`` read it (``SKETCH_COLUMNS``; its text is "")."""
    return MemoryNode(
        id=node.id, raw_text="", namespace=node.namespace, scope=node.scope, created_at=node.created_at,
        status=node.status, chain_root=node.chain_root, purged_at=node.purged_at,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Offer:
    """A note listing ``candidate`` in its ``possible_supersedes``."""

    candidate: str
    node_id: str
    namespace: str
    reason: str | None
    confidence: float | None
    position: int


class MemoryStore:
    """The ``Store`` port in a dict. Thread-safe: every call holds one lock."""

    def __init__(self) -> None:
        self._nodes: dict[str, MemoryNode] = {}  # in insertion order (``pending_extractions``)
        self._keys: dict[
            tuple[str, str], tuple[str, str | None]
        ] = {}  # (namespace, key): (node id, text or None: purged)
        self._offers: dict[tuple[str, str], _Offer] = {}  # (candidate, node id)
        self._audit: list[AuditEntry] = []
        self._changes: list[dict[str, object]] = []  # every change to a chain: link, unlink, forget, purge
        self._lock = threading.RLock()
        self.closed = False

    # ------------------------------------------------------------------ reads

    def get(self, node_id: str) -> MemoryNode | None:
        with self._lock:
            node = self._nodes.get(node_id)
            return replace(node) if node is not None else None

    def get_many(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        with self._lock:
            return {i: replace(self._nodes[i]) for i in dict.fromkeys(node_ids) if i in self._nodes}

    def sketches(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        with self._lock:
            return {i: sketch(self._nodes[i]) for i in dict.fromkeys(node_ids) if i in self._nodes}

    def link_sketches(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        with self._lock:
            return {i: link_sketch(self._nodes[i]) for i in dict.fromkeys(node_ids) if i in self._nodes}

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        with self._lock:
            roots = set(chain_roots)
            return {n.chain_root: replace(n) for n in self._nodes.values() if n.chain_root in roots and n.is_head}

    def chain(self, node_id: str, depth: int) -> list[MemoryNode]:
        with self._lock:
            node = self._nodes.get(node_id)
            if node is None:
                return []
            older = [n for n in self._members(node.chain_root) if n.version <= node.version]
            older.sort(key=lambda n: -n.version)
            return [replace(n) for n in older[: max(0, depth) + 1]]

    def recent_heads(self, query: RecentQuery) -> RecentPage:
        """Every head in force that passes the filters, newest first, then one page of them (no
        index, no scan bound: the plain reading of the port)."""
        with self._lock:
            heads = sorted(
                (
                    n
                    for n in self._nodes.values()
                    if n.namespace == query.namespace
                    and n.is_head
                    and n.status == Status.ACTIVE
                    and (query.before is None or n.id < query.before)
                    and scope_match(n.scope, query.scope) is not None
                    and set(query.tags) <= set(n.tags)
                ),
                key=lambda n: n.id,
                reverse=True,
            )
            page = [replace(n) for n in heads[: query.limit]]
            out = RecentPage(page, page[-1].id if len(heads) > query.limit else None)
        return with_histories(out, query.history_depth, self.chain)

    def dependents(self, node_id: str, limit: int = 50) -> list[MemoryNode]:
        with self._lock:
            node = self._nodes.get(node_id)
            if node is None:
                return []
            chain = {n.id for n in self._members(node.chain_root)}
            found = [
                n
                for n in self._nodes.values()
                if n.namespace == node.namespace
                and n.status == Status.ACTIVE
                and n.chain_root != node.chain_root
                and chain.intersection(deps.targets(n.relations))
            ]
            return [replace(n) for n in sorted(found, key=lambda n: n.id, reverse=True)[: max(0, limit)]]

    def search(
        self, terms: Sequence[str], *, namespace: str, limit: int, active_only: bool = False, prune: float = 1.0
    ) -> list[SearchHit]:
        """Word counts, not BM25 (see the module's docstring)."""
        wanted = {w for t in terms for w in words(t)}
        with self._lock:
            scored = []
            for rank, n in enumerate(self._nodes.values()):
                if n.namespace != namespace or n.status == Status.FORGOTTEN or n.purged:
                    continue
                if active_only and n.status != Status.ACTIVE:
                    continue
                fields = (n.raw_text, n.change, n.trigger, n.alternatives_tried, n.consequences, n.summary, *n.tags)
                score = sum(1 for w in words(" ".join(fields)) if w in wanted)
                if score:
                    scored.append((-score, -rank, SearchHit(n.id, n.chain_root, float(score))))
            return [hit for *_, hit in sorted(scored, key=lambda s: s[:2])[: max(0, limit)]]

    def possible_successors(
        self, node_ids: Iterable[str], *, namespace: str, limit: int = 8, full: bool = True
    ) -> dict[str, list[Successor]]:
        out: dict[str, list[Successor]] = {}
        if limit < 1:
            return out
        with self._lock:
            for candidate in dict.fromkeys(node_ids):
                offers = [
                    o
                    for o in self._offers.values()
                    if o.candidate == candidate
                    and o.namespace == namespace
                    and self._nodes[o.node_id].status in (Status.ACTIVE, Status.SUPERSEDED)
                ]
                offers.sort(key=lambda o: o.node_id, reverse=True)  # among equals, the newest first
                offers.sort(key=lambda o: (-(-1.0 if o.confidence is None else o.confidence), o.position))  # likeliest
                if offers:
                    out[candidate] = [
                        Successor(
                            replace(self._nodes[o.node_id]), o.reason, position=o.position, confidence=o.confidence
                        )
                        for o in offers[:limit]
                    ]
        return out

    def pending_extractions(self, limit: int = 100) -> list[str]:
        with self._lock:
            pending = [n.id for n in self._nodes.values() if n.extraction_state == ExtractionState.PENDING]
            return [i for i in pending if not self._nodes[i].purged][: max(0, limit)]

    def stats(self, namespace: str | None = None) -> Stats:
        with self._lock:
            nodes = [n for n in self._nodes.values() if not namespace or n.namespace == namespace]
            by_status = {s.value: sum(1 for n in nodes if n.status == s) for s in Status}
            extraction = {s.value: sum(1 for n in nodes if n.extraction_state == s) for s in ExtractionState}
            namespaces = dict(sorted(Counter(n.namespace for n in nodes).items()))
            purged = [n for n in nodes if n.purged]
            erased = [n.file_erased_at for n in purged if n.file_erased_at is not None]
            return Stats(
                by_status=by_status,
                purged=len(purged),
                chains=sum(1 for n in nodes if n.is_head),
                extraction=extraction,
                namespaces=namespaces,
                db_bytes=sum(len(n.raw_text.encode()) + len(n.id) for n in self._nodes.values()),
                schema_version=SCHEMA_VERSION,
                purges_file_pending=len(purged) - len(erased),
                last_file_erased_at=max(erased, default=None),
            )

    def schema_version(self) -> int:
        return SCHEMA_VERSION

    def ping(self) -> None:
        if self.closed:
            raise RuntimeError("the memory store is closed")

    def close(self) -> None:
        self.closed = True

    # ------------------------------------------------------------------ writes

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
        with self._lock:
            earlier = self._earlier(note, idempotency_key, dedupe_window_ms)
            if earlier is not None:
                return replace(self._nodes[earlier[0]]), earlier[1]
            head = self._head_for_link(supersedes, note.namespace) if supersedes is not None else None
            if if_head and head is not None and head.id != supersedes:
                raise NotHead(str(supersedes), head.id, head.version)
            if head is not None:
                self._refuse_cycle(note.relations, {head.chain_root}, note.namespace)
            created = write_ms(now_ms(), max(self._nodes, default=None))
            node_id = new_id(created)
            node = MemoryNode(
                node_id, note.raw_text, note.namespace, note.scope, created_at=created, chain_root=node_id
            )
            node.tags, node.session, node.author = note.tags, note.session, note.author
            node.relations, node.possible_supersedes = dict(note.relations), note.possible_supersedes
            if note.scope:
                node.scope_source, node.scope_evidence = note.scope_source, note.scope_evidence
            if note.extraction is not None:
                self._extracted(node, note.extraction)
                node.extraction_state, node.extraction_attempts = ExtractionState.DONE, 1
            if head is not None:
                node.supersedes, node.chain_root, node.version = head.id, head.chain_root, head.version + 1
                if link is not None:
                    node.link = replace(link, requested_id=self._requested(supersedes, head), created_at=created)
                    self._linked(node_id, head, link, supersedes)
                self._retire(head, node_id)
            self._nodes[node_id] = node
            if head is not None:
                self._flag_dependents(note.namespace, head.id, head.chain_root)
            self._inherit(node)
            why = dict(zip(note.possible_supersedes, note.possible_supersedes_why, strict=False))
            conf = dict(zip(note.possible_supersedes, note.possible_supersedes_confidence, strict=False))
            for k, c in enumerate(note.possible_supersedes):
                if c != node_id:
                    offer = _Offer(c, node_id, note.namespace, why.get(c) or None, conf.get(c), k)
                    self._offers.setdefault((c, node_id), offer)
            if idempotency_key is not None:
                self._keys[(note.namespace, idempotency_key)] = (node_id, note.raw_text)
            return replace(node), InsertOutcome.INSERTED

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        with self._lock:
            node = self._existing(node_id)
            if node.purged:
                raise Purged(f"node {node_id} was purged; it cannot be linked")
            head = self._head_for_link(supersedes, node.namespace)
            if head.chain_root == node.chain_root:
                raise CycleError(
                    f"node {node_id} and node {supersedes} are already in the same chain "
                    f"(root {node.chain_root}); linking them would create a cycle"
                )
            members = self._members(node.chain_root)
            root = next(n for n in members if n.version == 1)
            top = next(n for n in members if n.superseded_by is None)
            if top.status == Status.ACTIVE:
                self._refuse_cycle(top.relations, {head.chain_root, node.chain_root}, node.namespace)
            self._retire(head, root.id)
            for n in members:  # the whole chain, after the head
                n.chain_root, n.version = head.chain_root, n.version + head.version
            root.supersedes, root.possible_supersedes = head.id, ()
            root.link = replace(link, requested_id=self._requested(supersedes, head), created_at=now_ms())
            self._drop_offers(by=root.id)  # confirmed: no longer a guess
            self._linked(root.id, head, link, supersedes)
            self._flag_dependents(node.namespace, head.id, head.chain_root)
            return replace(node)

    def review(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, bool]:
        with self._lock:
            node = self._existing(node_id)
            changed = node.needs_review is not None
            if changed:
                node.needs_review = None
                self._change("review", node_id, None, method="review", by=by)
            return replace(node), changed

    # ------------------------------------------------------------------ dependencies (domain.dependencies)

    def _graph(self, namespace: str) -> tuple[list[deps.Dependent], dict[str, str]]:
        graph = [
            deps.Dependent(n.id, n.chain_root, deps.targets(n.relations), n.needs_review)
            for n in self._nodes.values()
            if n.namespace == namespace and n.status == Status.ACTIVE and deps.targets(n.relations)
        ]
        return graph, {i: n.chain_root for i, n in self._nodes.items()}

    def _refuse_cycle(self, relations: dict[str, tuple[str, ...]], chains: set[str], namespace: str) -> None:
        named = deps.targets(relations)
        if not named:
            return
        graph, roots = self._graph(namespace)
        path = deps.cycle(named, chains, [d for d in graph if d.chain_root not in chains], roots)
        if path is not None:
            raise CycleError(deps.cycle_message(deps.kinds_of(relations), path))

    def _inherit(self, node: MemoryNode) -> None:
        stale: list[tuple[str, str | None, object]] = []
        for t in deps.targets(node.relations):
            target = self._nodes.get(t)
            if target is None:
                continue
            head = None
            if target.superseded_by is not None:
                top = next(n for n in self._members(target.chain_root) if n.superseded_by is None)
                if top.status != Status.ACTIVE:
                    continue
                head = top.id
            stale.append((t, head, target.needs_review))
        node.needs_review = deps.inherited(stale, now_ms())  # type: ignore[arg-type]

    def _flag_dependents(self, namespace: str, replaced: str, chain_root: str) -> None:
        graph, roots = self._graph(namespace)
        head = next(n for n in self._members(chain_root) if n.superseded_by is None)
        at = now_ms()
        for node_id, via in deps.stale(chain_root, graph, roots).items():
            node = self._nodes[node_id]
            node.needs_review = deps.flagged(node.needs_review, replaced, head.id, via, at)

    def unlink(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, MemoryNode]:
        with self._lock:
            node = self._existing(node_id)
            if node.supersedes is None:
                raise InvalidArgument(f"node {node_id} supersedes nothing; there is no link to undo")
            prev, was = self._nodes[node.supersedes], node.link
            method, made_by, confidence = (was.method, was.by, was.confidence) if was else (None, None, None)
            undone = {"undone_method": method, "undone_by": made_by, "undone_confidence": confidence}
            detail = json.dumps({**undone, "previous_status": str(prev.status)})
            offset = node.version - 1
            for n in self._members(node.chain_root):
                if n.version >= node.version:  # node and its successors: a chain of their own
                    n.chain_root, n.version = node_id, n.version - offset
            node.supersedes, node.link = None, None
            prev.superseded_by = None
            prev.status = Status.ACTIVE if prev.forgotten_at is None else Status.FORGOTTEN
            self._change("unlink", node_id, prev.id, method=method, by=by, detail=detail)
            for other in self._nodes.values():  # the restored version is in force again
                if other.namespace == prev.namespace:
                    other.needs_review = deps.restored(other.needs_review, prev.id)
            return replace(node), replace(prev)

    def forget(self, node_id: str, *, purge: bool = False) -> tuple[MemoryNode, bool]:
        with self._lock:
            node = self._existing(node_id)
            if node.purged:
                raise Purged(f"node {node_id} was already purged")
            now, changed = now_ms(), False
            if node.status != Status.FORGOTTEN:
                node.status, node.forgotten_at, changed = Status.FORGOTTEN, now, True
                self._change("forget", node_id)
            self._drop_offers(by=node_id, of=node_id)  # never answers again: nobody's successor, and has none
            if purge:
                self._erase(node, now)
                changed = True
            return replace(node), changed

    def set_extraction(
        self,
        node_id: str,
        extraction: Extraction | None,
        state: ExtractionState,
        error: str | None = None,
    ) -> MemoryNode | None:
        with self._lock:
            node = self._nodes.get(node_id)
            if node is None or node.purged:
                return None
            state_now = node.extraction_state
            if state_now == ExtractionState.DONE or (extraction is not None and state_now != ExtractionState.PENDING):
                raise Conflict(
                    f"node {node_id}: extraction is {node.extraction_state}, not pending; "
                    "results are accepted only for a pending job of that node"
                )
            if extraction is not None:
                self._extracted(node, extraction)
                node.extraction_error = None
            else:
                node.extraction_error = error
            node.extraction_state = state
            node.extraction_attempts += 1
            return replace(node)

    # ------------------------------------------------------------------ audit

    def append_audit(self, entry: AuditEntry) -> None:
        with self._lock:
            self._audit.append(replace(entry, seq=len(self._audit) + 1))

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]:
        with self._lock:
            found = [
                e
                for e in reversed(self._audit)
                if (query.namespace is None or e.namespace == query.namespace)
                and (query.since_ms is None or e.at >= query.since_ms)
                and (query.until_ms is None or e.at < query.until_ms)
                and (query.before_seq is None or e.seq < query.before_seq)
            ]
            return found[: query.limit]

    def link_audit(self, node_id: str) -> list[dict[str, object]]:
        """Every recorded change to the links of ``node_id`` (as node or as target), oldest first."""
        with self._lock:
            return [dict(c) for c in self._changes if node_id in (c["node_id"], c["target_id"])]

    # ------------------------------------------------------------------ diagnostics

    def check_invariants(self) -> list[str]:
        """Every broken chain invariant, as text (empty: healthy), as ``SQLiteStore`` reports them."""
        with self._lock:
            problems = []
            for root in dict.fromkeys(n.chain_root for n in self._nodes.values()):
                members = self._members(root)
                versions = sorted(n.version for n in members)
                if sum(1 for n in members if n.is_head) != 1 or versions != list(range(1, len(members) + 1)):
                    problems.append(f"chain {root}: not exactly one head, or versions not 1..n")
            for n in self._nodes.values():
                prev = self._nodes.get(n.supersedes) if n.supersedes else None
                if prev is not None and (
                    prev.superseded_by != n.id or prev.chain_root != n.chain_root or prev.version + 1 != n.version
                ):
                    problems.append(f"node {n.id}: supersedes link disagrees with its predecessor")
                if n.superseded_by is not None and n.status == Status.ACTIVE:
                    problems.append(f"node {n.id}: superseded but marked active")
            return problems

    # ------------------------------------------------------------------ helpers (the lock is held)

    def _existing(self, node_id: str) -> MemoryNode:
        node = self._nodes.get(node_id)
        if node is None:
            raise NotFound(f"no node with id {node_id}")
        return node

    def _members(self, chain_root: str) -> list[MemoryNode]:
        return [n for n in self._nodes.values() if n.chain_root == chain_root]

    def _earlier(self, note: NewNote, key: str | None, window_ms: int) -> tuple[str, InsertOutcome] | None:
        """The node an earlier call stored for this one: by key, or by the dedupe window."""
        if key is not None:
            if (note.namespace, key) not in self._keys:
                return None
            node_id, text = self._keys[(note.namespace, key)]
            if text is None:
                raise Purged(
                    f"idempotency_key: the note stored under this key ({node_id}) was purged; "
                    "use a new key to remember it again"
                )
            if text != note.raw_text:
                raise Conflict(
                    f"idempotency_key was already used for another text (node {node_id}); "
                    "a retry must send the same text, a new note needs a new key"
                )
            return node_id, InsertOutcome.REPLAYED
        if window_ms <= 0:
            return None
        since = now_ms() - window_ms
        for n in reversed(self._nodes.values()):
            same = (n.namespace, n.scope, n.raw_text) == (note.namespace, note.scope, note.raw_text)
            if same and n.status == Status.ACTIVE and n.created_at >= since:
                return n.id, InsertOutcome.DUPLICATE
        return None

    def _head_for_link(self, target_id: str, namespace: str) -> MemoryNode:
        """The head a new link attaches to, after every check that protects the chain."""
        target = self._nodes.get(target_id)
        if target is None:
            raise NotFound(f"supersedes: no node with id {target_id}")
        if target.namespace != namespace:
            raise NamespaceMismatch(
                f"supersedes: node {target_id} is in namespace {target.namespace!r}, "
                f"not {namespace!r}; a decision can only replace one in its own namespace"
            )
        if target.purged:
            raise Purged(f"supersedes: node {target_id} was purged; name a live node of that chain")
        head = next(n for n in self._members(target.chain_root) if n.is_head)
        if head.id == target_id and target.status == Status.FORGOTTEN:
            raise Forgotten(
                f"supersedes: node {target_id} was forgotten; remember the new decision without "
                "supersedes, or supersede a live version"
            )
        return head

    @staticmethod
    def _extracted(node: MemoryNode, ex: Extraction) -> None:
        node.trigger, node.change, node.alternatives_tried = ex.trigger, ex.change, ex.alternatives_tried
        node.consequences, node.summary, node.extractor = ex.consequences, ex.summary, ex.extractor

    @staticmethod
    def _requested(named: str | None, head: MemoryNode) -> str | None:
        return named if named != head.id else None

    @staticmethod
    def _retire(head: MemoryNode, successor_id: str) -> None:
        head.superseded_by, head.needs_review = successor_id, None
        if head.status == Status.ACTIVE:
            head.status = Status.SUPERSEDED

    def _drop_offers(self, *, by: str, of: str | None = None) -> None:
        """Forget the offers ``by`` a note made, and those made ``of`` a candidate."""
        self._offers = {k: o for k, o in self._offers.items() if o.node_id != by and o.candidate != of}

    def _erase(self, node: MemoryNode, now: int) -> None:
        """A purge: every free-text field blanked; ids, chain, versions and timestamps stay."""
        node.raw_text = node.trigger = node.change = node.alternatives_tried = node.consequences = node.summary = ""
        node.tags, node.relations, node.session, node.author = (), {}, None, None
        node.extraction_error, node.scope_evidence = None, None
        if node.link is not None:
            node.link = replace(node.link, by=None, evidence=())
        node.purged_at, node.file_erased_at = now, now  # nothing is on a file: erased everywhere at once
        node.forgotten_at = node.forgotten_at or now
        for key, (found, _) in self._keys.items():
            if found == node.id:
                self._keys[key] = (node.id, None)
        for change in self._changes:
            if change["node_id"] == node.id:
                change["by"] = change["detail"] = None
        self._change("purge", node.id)

    def _linked(self, node_id: str, head: MemoryNode, link: LinkProvenance, named: str | None) -> None:
        moved = f"re-targeted from {named} to the head {head.id}" if named and named != head.id else None
        self._change("link", node_id, head.id, method=link.method, by=link.by, confidence=link.confidence, detail=moved)

    def _change(self, action: str, node_id: str, target_id: str | None = None, **fields: object) -> None:
        """One entry of the chain audit (``link_audit``); ``fields``: the link's method, by,
        confidence, and a detail (an unlink: the link it undid)."""
        entry = {"seq": len(self._changes) + 1, "at": now_ms(), "action": action, "node_id": node_id}
        self._changes.append(
            entry | {"target_id": target_id} | dict.fromkeys(("method", "by", "confidence", "detail")) | fields
        )
