"""Domain objects <-> protobuf messages. Pure translation, both directions."""

from __future__ import annotations

from typing import Any, TypeVar

from evomem.adapters.fields import (
    ENUM,
    NUMBERS,
    RECORD,
    RELATIONS,
    STRING_LIST,
    STRINGS,
    FieldKind,
    field_kinds,
)
from evomem.adapters.grpc import audit_convert
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    InsertOutcome,
    LinkDecision,
    LinkKind,
    LinkProposal,
    LinkProvenance,
    MemoryNode,
    NewNote,
    ReviewFlag,
    SearchHit,
    Stats,
    Status,
)
from evomem.domain.recall import Match, RecallAnswer, RecallQuery, Resolved, Successor
from evomem.domain.remember import ContextQuery, NoteWrite, RememberContext, StoredNote
from evomem.v1 import common_pb2, linker_pb2, storage_pb2

T = TypeVar("T")
R = TypeVar("R")


# ---------------------------------------------------------------- dataclass <-> message, by field
#
# A record's fields map to the proto fields of the same name, shaped by the field's declared
# type (``node_codec.field_kinds``): ``X | None`` is an ``optional`` proto field (read with
# HasField), an enum its string value, ``tuple[str, ...]`` a repeated string (``tuple[float,
# ...]`` a repeated double), relations a
# ``map<string, IdList>``, a nested dataclass its message. tests/test_node_mapping.py checks
# that every field has its proto counterpart.


def _to_pb_value(kind: FieldKind, value: Any) -> Any:
    if value is None:
        return None
    if kind.shape == ENUM:
        return str(value.value)
    if kind.shape in (STRINGS, NUMBERS, STRING_LIST):
        return list(value)
    if kind.shape == RELATIONS:
        return {k: common_pb2.IdList(ids=list(v)) for k, v in value.items()}
    if kind.shape == RECORD:
        return record_to_pb(value, _MESSAGES[kind.type])
    return value


def _from_pb_value(kind: FieldKind, msg: Any) -> Any:
    if kind.optional and not msg.HasField(kind.name):
        return None
    value = getattr(msg, kind.name)
    if kind.shape == ENUM:
        return kind.type(value)
    if kind.shape in (STRINGS, NUMBERS):
        return tuple(value)
    if kind.shape == STRING_LIST:
        return list(value)
    if kind.shape == RELATIONS:
        return {k: tuple(v.ids) for k, v in value.items()}
    if kind.shape == RECORD:
        return record_from_pb(value, kind.type)
    return value


def record_to_pb(record: Any, message: type[T]) -> T:
    """A dataclass instance as the protobuf ``message`` whose fields carry the same names."""
    return message(**{k.name: _to_pb_value(k, getattr(record, k.name)) for k in field_kinds(type(record))})


def record_from_pb(msg: Any, cls: type[R]) -> R:
    """The dataclass ``cls`` from a protobuf message whose fields carry the same names."""
    return cls(**{k.name: _from_pb_value(k, msg) for k in field_kinds(cls)})


_MESSAGES: dict[type, Any] = {
    MemoryNode: common_pb2.MemoryNode,
    NewNote: common_pb2.NewNote,
    LinkProvenance: common_pb2.LinkProvenance,
    Extraction: common_pb2.Extraction,
    ReviewFlag: common_pb2.ReviewFlag,
}


def link_to_pb(link: LinkProvenance) -> common_pb2.LinkProvenance:
    return record_to_pb(link, common_pb2.LinkProvenance)


def link_from_pb(msg: common_pb2.LinkProvenance) -> LinkProvenance:
    return record_from_pb(msg, LinkProvenance)


def extraction_to_pb(ex: Extraction) -> common_pb2.Extraction:
    return record_to_pb(ex, common_pb2.Extraction)


def extraction_from_pb(msg: common_pb2.Extraction) -> Extraction:
    return record_from_pb(msg, Extraction)


def node_to_pb(node: MemoryNode) -> common_pb2.MemoryNode:
    return record_to_pb(node, common_pb2.MemoryNode)


def node_from_pb(msg: common_pb2.MemoryNode) -> MemoryNode:
    return record_from_pb(msg, MemoryNode)


def note_to_pb(note: NewNote) -> common_pb2.NewNote:
    return record_to_pb(note, common_pb2.NewNote)


def note_from_pb(msg: common_pb2.NewNote) -> NewNote:
    return record_from_pb(msg, NewNote)


def hit_to_pb(hit: SearchHit) -> common_pb2.SearchHit:
    return common_pb2.SearchHit(node_id=hit.node_id, chain_root=hit.chain_root, score=hit.score)


def hit_from_pb(msg: common_pb2.SearchHit) -> SearchHit:
    return SearchHit(node_id=msg.node_id, chain_root=msg.chain_root, score=msg.score)


def recall_query_to_pb(q: RecallQuery) -> storage_pb2.RecallNodesRequest:
    return record_to_pb(q, storage_pb2.RecallNodesRequest)


def recall_query_from_pb(msg: storage_pb2.RecallNodesRequest) -> RecallQuery:
    return record_from_pb(msg, RecallQuery)


def recall_answer_to_pb(answer: RecallAnswer) -> storage_pb2.RecallNodesResponse:
    chains = []
    for entry, history in answer.results:
        assert entry.matches and entry.matches[0] is entry.best  # resolve() lists the best first
        chains.append(
            storage_pb2.RecalledChain(
                head=node_to_pb(entry.head),
                score=entry.score,
                matches=[record_to_pb(m, storage_pb2.RecallMatch) for m in entry.matches],
                scope_match=entry.scope_match,
                history=[node_to_pb(n) for n in history],
                maybe_replaced_by=[successor_to_pb(y) for y in entry.maybe_replaced_by],
            )
        )
    return storage_pb2.RecallNodesResponse(
        results=chains, hidden_forgotten=answer.hidden_forgotten, vector_problem=answer.vector_problem
    )


def recall_answer_from_pb(msg: storage_pb2.RecallNodesResponse) -> RecallAnswer:
    results: list[tuple[Resolved, list[MemoryNode]]] = []
    for chain in msg.results:
        matches = [record_from_pb(m, Match) for m in chain.matches]
        if not matches:
            raise ValueError("a recalled chain without matches")
        entry = Resolved(
            head=node_from_pb(chain.head),
            score=chain.score,
            best=matches[0],
            matches=matches,
            scope_match=chain.scope_match if chain.HasField("scope_match") else None,
            maybe_replaced_by=[successor_from_pb(y) for y in chain.maybe_replaced_by],
        )
        results.append((entry, [node_from_pb(n) for n in chain.history]))
    return RecallAnswer(
        results=results,
        hidden_forgotten=msg.hidden_forgotten,
        vector_problem=msg.vector_problem if msg.HasField("vector_problem") else None,
    )


def successor_to_pb(successor: Successor) -> storage_pb2.PossibleSuccessor:
    return record_to_pb(successor, storage_pb2.PossibleSuccessor)


def successor_from_pb(msg: storage_pb2.PossibleSuccessor) -> Successor:
    return record_from_pb(msg, Successor)


# ---------------------------------------------------------------- remember's two calls


def context_query_to_pb(q: ContextQuery) -> storage_pb2.PrepareRememberRequest:
    return record_to_pb(q, storage_pb2.PrepareRememberRequest)


def context_query_from_pb(msg: storage_pb2.PrepareRememberRequest) -> ContextQuery:
    return record_from_pb(msg, ContextQuery)


def context_to_pb(context: RememberContext) -> storage_pb2.PrepareRememberResponse:
    return storage_pb2.PrepareRememberResponse(
        nodes=[node_to_pb(n) for n in context.nodes.values()],
        candidates=[node_to_pb(n) for n in context.candidates],
        # float on the wire: rounded as the vectors round them, so both wirings give the same numbers
        similarities=[storage_pb2.NearestHit(node_id=i, similarity=s) for i, s in context.similarities.items()],
        earlier=[node_to_pb(n) for n in context.earlier.values()],
        vector_problem=context.vector_problem,
    )


def context_from_pb(msg: storage_pb2.PrepareRememberResponse) -> RememberContext:
    return RememberContext(
        nodes={n.id: n for n in map(node_from_pb, msg.nodes)},
        candidates=[node_from_pb(n) for n in msg.candidates],
        similarities={h.node_id: round(h.similarity, 6) for h in msg.similarities},
        earlier={n.id: n for n in map(node_from_pb, msg.earlier)},
        vector_problem=msg.vector_problem if msg.HasField("vector_problem") else None,
    )


def write_to_pb(write: NoteWrite) -> storage_pb2.RememberNoteRequest:
    return storage_pb2.RememberNoteRequest(
        note=note_to_pb(write.note),
        supersedes=write.supersedes,
        link=link_to_pb(write.link) if write.link else None,
        idempotency_key=write.idempotency_key,
        dedupe_window_ms=write.dedupe_window_ms,
        vectors=write.vectors,
        vectors_required=write.vectors_required,
        audit=audit_convert.entry_to_pb(write.audit) if write.audit is not None else None,
        if_head=write.if_head,
    )


def write_from_pb(msg: storage_pb2.RememberNoteRequest) -> NoteWrite:
    return NoteWrite(
        note=note_from_pb(msg.note),
        supersedes=msg.supersedes if msg.HasField("supersedes") else None,
        link=link_from_pb(msg.link) if msg.HasField("link") else None,
        idempotency_key=msg.idempotency_key if msg.HasField("idempotency_key") else None,
        dedupe_window_ms=msg.dedupe_window_ms,
        vectors=msg.vectors,
        vectors_required=msg.vectors_required,
        audit=audit_convert.entry_from_pb(msg.audit) if msg.HasField("audit") else None,
        if_head=msg.if_head,
    )


def stored_to_pb(stored: StoredNote) -> storage_pb2.RememberNoteResponse:
    return storage_pb2.RememberNoteResponse(
        node=node_to_pb(stored.node),
        outcome=str(stored.outcome),
        vector_problem=stored.vector_problem,
        head_was_forgotten=stored.head_was_forgotten,
    )


def stored_from_pb(msg: storage_pb2.RememberNoteResponse) -> StoredNote:
    return StoredNote(
        node=node_from_pb(msg.node),
        outcome=InsertOutcome(msg.outcome or InsertOutcome.INSERTED),
        vector_problem=msg.vector_problem if msg.HasField("vector_problem") else None,
        head_was_forgotten=msg.head_was_forgotten,
    )


def stats_to_pb(stats: Stats) -> storage_pb2.GetStatsResponse:
    return storage_pb2.GetStatsResponse(
        by_status=stats.by_status,
        purged=stats.purged,
        chains=stats.chains,
        extraction=stats.extraction,
        namespaces=stats.namespaces,
        db_bytes=stats.db_bytes,
        schema_version=stats.schema_version,
        purges_file_pending=stats.purges_file_pending,
        last_file_erased_at=stats.last_file_erased_at,
    )


def stats_from_pb(msg: storage_pb2.GetStatsResponse) -> Stats:
    return Stats(
        by_status={s.value: msg.by_status.get(s.value, 0) for s in Status},
        purged=msg.purged,
        chains=msg.chains,
        extraction={s.value: msg.extraction.get(s.value, 0) for s in ExtractionState},
        namespaces=dict(sorted(msg.namespaces.items())),
        db_bytes=msg.db_bytes,
        schema_version=msg.schema_version,
        purges_file_pending=msg.purges_file_pending,
        last_file_erased_at=msg.last_file_erased_at if msg.HasField("last_file_erased_at") else None,
    )


def proposal_to_pb(p: LinkProposal) -> linker_pb2.LinkProposal:
    return linker_pb2.LinkProposal(
        target_id=p.target_id, confidence=p.confidence, method=p.method, evidence=list(p.evidence), by=p.by
    )


def proposal_from_pb(msg: linker_pb2.LinkProposal) -> LinkProposal:
    return LinkProposal(
        target_id=msg.target_id,
        confidence=msg.confidence,
        method=msg.method,
        evidence=tuple(msg.evidence),
        by=msg.by,
    )


_KIND_TO_PB = {
    LinkKind.LINK: linker_pb2.LINK_DECISION_KIND_LINK,
    LinkKind.ABSTAIN: linker_pb2.LINK_DECISION_KIND_ABSTAIN,
    LinkKind.NONE: linker_pb2.LINK_DECISION_KIND_NONE,
}
_KIND_FROM_PB = {v: k for k, v in _KIND_TO_PB.items()}


def decision_to_pb(d: LinkDecision, linker: str) -> linker_pb2.DecideLinkResponse:
    return linker_pb2.DecideLinkResponse(
        kind=_KIND_TO_PB[d.kind],
        proposal=proposal_to_pb(d.proposal) if d.proposal is not None else None,
        candidates=[linker_pb2.LinkCandidate(node_id=i, score=s) for i, s in d.candidates],
        reason=d.reason,
        linker=linker,
    )


def decision_from_pb(msg: linker_pb2.DecideLinkResponse) -> LinkDecision:
    kind = _KIND_FROM_PB.get(msg.kind)
    if kind is None:
        raise ValueError(f"unknown link decision kind {msg.kind}")
    return LinkDecision(
        kind=kind,
        proposal=proposal_from_pb(msg.proposal) if msg.HasField("proposal") else None,
        candidates=tuple((c.node_id, c.score) for c in msg.candidates),
        reason=msg.reason,
    )
