"""What remember asks of storage, in two calls: what it needs to decide, then the write.

Plain data, like ``recall.RecallQuery``: the service (``evomem.app.memory``) validates the agent's
arguments and builds these; storage (in process, or the storage service over gRPC) answers them.

1. ``ContextQuery`` -> ``RememberContext``: the nodes the note names (its relations, the decision
   it says it replaces) and, when a linker will read them, the active decisions it may replace
   (``candidates``, with their cosine to the note and their earlier versions, so the linker never
   calls storage back). Candidates and earlier versions are *link sketches* (``LINK_FIELDS``, read
   by ``Store.link_sketches``): what a linker reads of them, not the whole node.
2. ``NoteWrite`` -> ``StoredNote``: the note written at most once (idempotency key, dedupe window),
   its vector added and, with authentication on, its audit entry recorded, in the same call. With
   ``if_head``, a ``supersedes`` that is no longer its chain's head is refused (``NotHead``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from evomem.domain.audit import AuditEntry
from evomem.domain.model import Extraction, ExtractionState, InsertOutcome, LinkProvenance, MemoryNode, NewNote

#: What a linker reads of a candidate and of its earlier versions (every linker: the pair model, the
#: heuristic and scored ones, the LLM linker's prompt; ``app.candidates`` reads status, scope and chain):
#: a link sketch holds these fields and leaves the others at their defaults (no tags, relations, link,
#: extraction or review to decode).
LINK_FIELDS = (
    "id",
    "raw_text",
    "namespace",
    "scope",
    "scope_source",
    "created_at",
    "status",
    "supersedes",
    "chain_root",
)


def link_sketch(node: MemoryNode) -> MemoryNode:
    """``node`` as a link sketch: its ``LINK_FIELDS``, the rest at their defaults."""
    return MemoryNode(
        id=node.id,
        raw_text=node.raw_text,
        namespace=node.namespace,
        scope=node.scope,
        scope_source=node.scope_source,
        created_at=node.created_at,
        status=node.status,
        supersedes=node.supersedes,
        chain_root=node.chain_root,
    )


#: Earlier versions read back from each candidate, for a linker that reads a chain's history
#: ("back to Postgres" names the candidate's predecessor, not the candidate).
EARLIER_DEPTH = 4


@dataclass(frozen=True, slots=True)
class ContextQuery:
    """What remember needs read before it decides. ``candidates``: search the linker's candidates
    (BM25 over ``search_terms``, and the ``text``'s nearest notes by meaning when ``vector_limit``)."""

    text: str
    namespace: str
    node_ids: tuple[str, ...] = ()  # the relations' and the supersedes target's ids, to read
    candidates: bool = False
    search_terms: tuple[str, ...] = ()  # the terms of the note's decision part
    scope: str | None = None
    scope_inferred: bool = False  # the note's scope is a guess: candidates it rules out are kept
    limit: int = 20  # full-text candidates
    vector_limit: int = 0  # nearest active notes by meaning added to them; 0: BM25 only
    vectors_required: bool = False  # a storage without vectors reports it (``vector_problem``)
    earlier_depth: int = EARLIER_DEPTH


@dataclass(slots=True)
class RememberContext:
    nodes: dict[str, MemoryNode] = field(default_factory=dict)  # the asked ids that exist
    candidates: list[MemoryNode] = field(default_factory=list)  # best first; link sketches
    similarities: dict[str, float] = field(default_factory=dict)  # cosine of the note, by node id
    earlier: dict[str, MemoryNode] = field(default_factory=dict)  # the candidates' earlier versions (sketches)
    vector_problem: str | None = None  # why the vector half of the search was skipped


@dataclass(frozen=True, slots=True)
class NoteWrite:
    """A note to store at most once: with ``idempotency_key``, a key used before answers the node
    it stored; without one, an identical active note of the same namespace and scope stored within
    ``dedupe_window_ms`` is answered instead of a copy. ``vectors``: embed it too. ``audit``: who
    writes it (authentication on); storage records the entry, completed with what was written
    (``audited``), in the same call."""

    note: NewNote
    supersedes: str | None = None
    link: LinkProvenance | None = None
    idempotency_key: str | None = None
    dedupe_window_ms: int = 0
    vectors: bool = True
    vectors_required: bool = False
    audit: AuditEntry | None = None
    # Optimistic concurrency: ``supersedes`` must still be its chain's head, or nothing is stored
    # (``NotHead``, decided in the write's transaction); False: re-targeted to the head.
    if_head: bool = False


def audited(entry: AuditEntry, node: MemoryNode) -> AuditEntry:
    """``entry`` of a remember that wrote (or found) ``node``: its namespace, the node and what it
    links to, and the link's method."""
    return replace(
        entry,
        namespace=node.namespace,
        ids=tuple(i for i in (node.id, node.supersedes or "") if i),
        outcome="ok",
        detail=f"link {node.link.method}" if node.link else None,
    )


@dataclass(slots=True)
class StoredNote:
    node: MemoryNode
    outcome: InsertOutcome = InsertOutcome.INSERTED
    vector_problem: str | None = None  # the note is stored, but not (yet) searchable by meaning
    # the chain head the note was linked after was forgotten (a re-targeted supersedes)
    head_was_forgotten: bool = False


def new_node(
    node_id: str,
    created: int,
    note: NewNote,
    ex: Extraction | None,
    link: LinkProvenance | None,
    *,
    supersedes: str | None,
    prev: str | None,
    chain_root: str,
    version: int,
) -> MemoryNode:
    """The node a store writes for ``note``: its extraction when there is one (else pending), its
    place in its chain (``prev``, the head it follows, ``None`` for a chain of its own), and the link
    that put it there, with the id the caller asked for when storage re-targeted it to the head."""
    return MemoryNode(
        id=node_id,
        raw_text=note.raw_text,
        namespace=note.namespace,
        scope=note.scope,
        trigger=ex.trigger if ex else "",
        change=ex.change if ex else "",
        alternatives_tried=ex.alternatives_tried if ex else "",
        consequences=ex.consequences if ex else "",
        summary=ex.summary if ex else "",
        tags=note.tags,
        session=note.session,
        author=note.author,
        created_at=created,
        relations=note.relations,
        supersedes=prev,
        chain_root=chain_root,
        version=version,
        link=replace(link, requested_id=supersedes if supersedes != prev else None, created_at=created)
        if link is not None and prev is not None
        else None,
        extraction_state=ExtractionState.DONE if ex else ExtractionState.PENDING,
        extractor=ex.extractor if ex else "",
        extraction_attempts=1 if ex else 0,
        scope_source=note.scope_source if note.scope else None,
        scope_evidence=note.scope_evidence if note.scope else None,
        possible_supersedes=note.possible_supersedes,
    )
