"""The ``Storage`` port in process: each business operation's storage side, over a ``Store`` and
its ``Vectors``, in one call.

    storage = LocalStorage(store, vectors)         # vectors: None for BM25 only
    storage.recall_nodes(query)                    # evomem.app.recall.recall_nodes
    storage.remember_context(query)                # the named nodes, the linker's candidates
    storage.remember_note(write)                   # insert at most once; the vector after the answer

The embedded server's ``MemoryService`` calls it directly; the storage service's servicer calls it
for each RPC, so a gateway pays one round trip per operation. It trusts what it is given: the
service checked the agent's arguments, the servicer checks what arrives over the wire
(``evomem.app.notes``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from evomem.app.candidates import find_candidates
from evomem.app.ports import Store, Vectors
from evomem.app.recall import LazyPool, recall_nodes
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.browse import RecentPage, RecentQuery
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    InsertOutcome,
    LinkProvenance,
    MemoryNode,
    Stats,
    Status,
)
from evomem.domain.recall import RecallAnswer, RecallQuery
from evomem.domain.remember import ContextQuery, NoteWrite, RememberContext, StoredNote, audited

log = logging.getLogger("evomem.storage")

VECTORS_OFF = (
    "vectors are off on this storage service (EVOMEM_VECTORS=off, or no embedding model installed); recall is BM25 only"
)


class LocalStorage:
    """``Storage`` over ``store`` and ``vectors`` (None: words only) in this process."""

    def __init__(self, store: Store, vectors: Vectors | None = None, *, vectors_off: str = VECTORS_OFF) -> None:
        self.store = store
        self.vectors = vectors
        self.vectors_off = vectors_off  # reported when a caller requires vectors this storage lacks
        self._pool = LazyPool()  # the vector half of a search runs there, beside its full-text half

    # ------------------------------------------------------------------ business operations

    def recall_nodes(self, query: RecallQuery) -> RecallAnswer:
        return recall_nodes(self.store, self.vectors, query, self._pool, vectors_off=self.vectors_off)

    def remember_context(self, query: ContextQuery) -> RememberContext:
        context = RememberContext(nodes=self.store.get_many(query.node_ids) if query.node_ids else {})
        if not query.candidates:
            return context
        # The note's one vector is embedded on a pool thread beside BM25, into the cache that ``add``
        # reuses: by the vector half of the search, or already under way there (in-core, the service's
        # ``Vectors.prepare`` started it; the search waits for it). Embedding it here first, before
        # the search, cost a remember the embedding's ~9 ms on top of BM25's.
        found = find_candidates(self.store, self.vectors, self._pool, query)
        context.candidates, context.similarities, context.earlier = found.candidates, found.similarities, found.earlier
        context.vector_problem = found.vector_problem or self._missing(query.vector_limit, query.vectors_required)
        return context

    def remember_note(self, write: NoteWrite) -> StoredNote:
        node, outcome = self.store.insert_once(
            write.note,
            supersedes=write.supersedes,
            link=write.link,
            idempotency_key=write.idempotency_key,
            dedupe_window_ms=write.dedupe_window_ms,
            if_head=write.if_head,
        )
        stored = StoredNote(node, outcome)
        if write.audit is not None:
            self._audit(audited(write.audit, node))
        if outcome is not InsertOutcome.INSERTED:
            return stored
        if write.vectors:
            stored.vector_problem = self._missing(1, write.vectors_required)
            if self.vectors is not None:
                try:  # after the answer: its words are searchable now, its meaning ~1 ms later
                    self.vectors.add_soon([node])
                except Exception as exc:  # derived data: the node is stored, the backfill embeds it later
                    stored.vector_problem = str(exc) or type(exc).__name__
        if node.supersedes and write.supersedes and node.supersedes != write.supersedes:
            previous = self.store.get(node.supersedes)
            stored.head_was_forgotten = previous is not None and previous.status == Status.FORGOTTEN
        return stored

    def _audit(self, entry: AuditEntry) -> None:
        try:
            self.store.append_audit(entry)
        except Exception as exc:  # the note is written already; say so loudly
            log.error("could not record the audit entry %s: %s", entry, exc)

    def _missing(self, wanted: int, required: bool) -> str | None:
        """Why the vectors a caller requires are not here (None when they are, or not required)."""
        return self.vectors_off if self.vectors is None and wanted > 0 and required else None

    def model_state(self) -> str:
        return "off" if self.vectors is None else self.vectors.model_state

    # ------------------------------------------------------------------ records

    def get(self, node_id: str) -> MemoryNode | None:
        return self.store.get(node_id)

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        return self.store.heads(chain_roots)

    def chain(self, node_id: str, depth: int) -> list[MemoryNode]:
        return self.store.chain(node_id, depth)

    def recent_heads(self, query: RecentQuery) -> RecentPage:
        return self.store.recent_heads(query)

    def dependents(self, node_id: str, limit: int = 50) -> list[MemoryNode]:
        return self.store.dependents(node_id, limit)

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        return self.store.link(node_id, supersedes, link)

    def unlink(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, MemoryNode]:
        return self.store.unlink(node_id, by=by)

    def review(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, bool]:
        return self.store.review(node_id, by=by)

    def forget(self, node_id: str, *, purge: bool = False) -> tuple[MemoryNode, bool]:
        """A purge also drops the text from the embedding cache (its keys are the texts)."""
        before = self.store.get(node_id) if purge and self.vectors is not None else None
        if before is not None:
            self.vectors.settle()  # type: ignore[union-attr]  # a queued vector is stored before the purge erases it
        node, changed = self.store.forget(node_id, purge=purge)
        if before is not None and node.purged and before.raw_text:
            self.vectors.evict([before.raw_text])  # type: ignore[union-attr]  # set: ``before`` was read
        return node, changed

    def set_extraction(
        self, node_id: str, extraction: Extraction | None, state: ExtractionState, error: str | None = None
    ) -> MemoryNode | None:
        return self.store.set_extraction(node_id, extraction, state, error)

    def pending_extractions(self, limit: int = 100) -> list[str]:
        return self.store.pending_extractions(limit)

    def stats(self, namespace: str | None = None) -> Stats:
        return self.store.stats(namespace)

    def append_audit(self, entry: AuditEntry) -> None:
        self.store.append_audit(entry)

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]:
        return self.store.audit_page(query)

    def close(self) -> None:
        """Close the vectors and the store (the composition root hands both over)."""
        if self.vectors is not None:
            self.vectors.close()
        self.store.close()
