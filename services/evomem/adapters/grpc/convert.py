"""Domain objects <-> protobuf messages. Pure translation, both directions."""

from __future__ import annotations

from evomem.domain.model import (
    Extraction,
    ExtractionState,
    LinkDecision,
    LinkKind,
    LinkProposal,
    LinkProvenance,
    MemoryNode,
    NewNote,
    SearchHit,
    Stats,
    Status,
)
from evomem.v1 import common_pb2, linker_pb2, storage_pb2


def _opt(msg: object, name: str) -> object | None:
    return getattr(msg, name) if msg.HasField(name) else None  # type: ignore[attr-defined]


def link_to_pb(link: LinkProvenance) -> common_pb2.LinkProvenance:
    return common_pb2.LinkProvenance(
        method=link.method,
        confidence=link.confidence,
        by=link.by,
        evidence=list(link.evidence),
        requested_id=link.requested_id,
        created_at=link.created_at,
    )


def link_from_pb(msg: common_pb2.LinkProvenance) -> LinkProvenance:
    return LinkProvenance(
        method=msg.method,
        confidence=msg.confidence,
        by=_opt(msg, "by"),  # type: ignore[arg-type]
        evidence=tuple(msg.evidence),
        requested_id=_opt(msg, "requested_id"),  # type: ignore[arg-type]
        created_at=msg.created_at,
    )


def extraction_to_pb(ex: Extraction) -> common_pb2.Extraction:
    return common_pb2.Extraction(
        trigger=ex.trigger,
        change=ex.change,
        alternatives_tried=ex.alternatives_tried,
        consequences=ex.consequences,
        summary=ex.summary,
        extractor=ex.extractor,
    )


def extraction_from_pb(msg: common_pb2.Extraction) -> Extraction:
    return Extraction(
        trigger=msg.trigger,
        change=msg.change,
        alternatives_tried=msg.alternatives_tried,
        consequences=msg.consequences,
        summary=msg.summary,
        extractor=msg.extractor,
    )


def _relations_to_pb(relations: dict[str, tuple[str, ...]]) -> dict[str, common_pb2.IdList]:
    return {k: common_pb2.IdList(ids=list(v)) for k, v in relations.items()}


def node_to_pb(node: MemoryNode) -> common_pb2.MemoryNode:
    return common_pb2.MemoryNode(
        id=node.id,
        raw_text=node.raw_text,
        namespace=node.namespace,
        scope=node.scope,
        trigger=node.trigger,
        change=node.change,
        alternatives_tried=node.alternatives_tried,
        consequences=node.consequences,
        summary=node.summary,
        tags=list(node.tags),
        session=node.session,
        author=node.author,
        created_at=node.created_at,
        relations=_relations_to_pb(node.relations),
        status=str(node.status),
        supersedes=node.supersedes,
        superseded_by=node.superseded_by,
        chain_root=node.chain_root,
        version=node.version,
        link=link_to_pb(node.link) if node.link else None,
        extraction_state=str(node.extraction_state),
        extractor=node.extractor,
        extraction_error=node.extraction_error,
        extraction_attempts=node.extraction_attempts,
        forgotten_at=node.forgotten_at,
        purged_at=node.purged_at,
        scope_source=node.scope_source,
        scope_evidence=node.scope_evidence,
        possible_supersedes=list(node.possible_supersedes),
    )


def node_from_pb(msg: common_pb2.MemoryNode) -> MemoryNode:
    return MemoryNode(
        id=msg.id,
        raw_text=msg.raw_text,
        namespace=msg.namespace,
        scope=_opt(msg, "scope"),  # type: ignore[arg-type]
        trigger=msg.trigger,
        change=msg.change,
        alternatives_tried=msg.alternatives_tried,
        consequences=msg.consequences,
        summary=msg.summary,
        tags=tuple(msg.tags),
        session=_opt(msg, "session"),  # type: ignore[arg-type]
        author=_opt(msg, "author"),  # type: ignore[arg-type]
        created_at=msg.created_at,
        relations={k: tuple(v.ids) for k, v in msg.relations.items()},
        status=Status(msg.status),
        supersedes=_opt(msg, "supersedes"),  # type: ignore[arg-type]
        superseded_by=_opt(msg, "superseded_by"),  # type: ignore[arg-type]
        chain_root=msg.chain_root,
        version=msg.version,
        link=link_from_pb(msg.link) if msg.HasField("link") else None,
        extraction_state=ExtractionState(msg.extraction_state),
        extractor=msg.extractor,
        extraction_error=_opt(msg, "extraction_error"),  # type: ignore[arg-type]
        extraction_attempts=msg.extraction_attempts,
        forgotten_at=_opt(msg, "forgotten_at"),  # type: ignore[arg-type]
        purged_at=_opt(msg, "purged_at"),  # type: ignore[arg-type]
        scope_source=_opt(msg, "scope_source"),  # type: ignore[arg-type]
        scope_evidence=_opt(msg, "scope_evidence"),  # type: ignore[arg-type]
        possible_supersedes=tuple(msg.possible_supersedes),
    )


def note_to_pb(note: NewNote) -> common_pb2.NewNote:
    return common_pb2.NewNote(
        raw_text=note.raw_text,
        namespace=note.namespace,
        scope=note.scope,
        tags=list(note.tags),
        session=note.session,
        author=note.author,
        relations=_relations_to_pb(note.relations),
        extraction=extraction_to_pb(note.extraction) if note.extraction else None,
        scope_source=note.scope_source,
        scope_evidence=note.scope_evidence,
        possible_supersedes=list(note.possible_supersedes),
    )


def note_from_pb(msg: common_pb2.NewNote) -> NewNote:
    return NewNote(
        raw_text=msg.raw_text,
        namespace=msg.namespace,
        scope=_opt(msg, "scope"),  # type: ignore[arg-type]
        tags=tuple(msg.tags),
        session=_opt(msg, "session"),  # type: ignore[arg-type]
        author=_opt(msg, "author"),  # type: ignore[arg-type]
        relations={k: tuple(v.ids) for k, v in msg.relations.items()},
        extraction=extraction_from_pb(msg.extraction) if msg.HasField("extraction") else None,
        scope_source=_opt(msg, "scope_source"),  # type: ignore[arg-type]
        scope_evidence=_opt(msg, "scope_evidence"),  # type: ignore[arg-type]
        possible_supersedes=tuple(msg.possible_supersedes),
    )


def hit_to_pb(hit: SearchHit) -> common_pb2.SearchHit:
    return common_pb2.SearchHit(node_id=hit.node_id, chain_root=hit.chain_root, score=hit.score)


def hit_from_pb(msg: common_pb2.SearchHit) -> SearchHit:
    return SearchHit(node_id=msg.node_id, chain_root=msg.chain_root, score=msg.score)


def stats_to_pb(stats: Stats) -> storage_pb2.GetStatsResponse:
    return storage_pb2.GetStatsResponse(
        by_status=stats.by_status,
        purged=stats.purged,
        chains=stats.chains,
        extraction=stats.extraction,
        namespaces=stats.namespaces,
        db_bytes=stats.db_bytes,
        schema_version=stats.schema_version,
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
