"""The structured JSON the tools return (MCP structured content).

Pydantic models, so every tool publishes an output schema. Converters from the
service's outcomes live here too, so the MCP server and the gateway return the
same shapes.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from evomem.domain.model import LinkProvenance, MemoryNode, Stats, iso
from evomem.domain.recall import Match, Resolved
from evomem.service import ForgetOutcome, RecallOutcome, RememberOutcome


class LinkView(BaseModel):
    """How this version came to replace the previous one."""

    method: str = Field(description="agent (named in supersedes) or the linker that made it, e.g. heuristic")
    confidence: float
    by: str | None = Field(None, description="the author, or the linker name and version")
    evidence: list[str] = Field(default_factory=list)
    requested_id: str | None = Field(None, description="the id named by the caller, when re-targeted to the head")
    created_at: str | None = None


class ExtractionView(BaseModel):
    state: str = Field(description="pending, done or failed")
    extractor: str = ""
    error: str | None = None
    attempts: int = 0


class NodeView(BaseModel):
    id: str
    namespace: str
    scope: str | None
    status: str = Field(description="active (in force), superseded (replaced), or forgotten")
    version: int = Field(description="1 for the first version of a decision, +1 per replacement")
    chain_root: str = Field(description="id of the first version of this decision")
    supersedes: str | None = Field(description="the previous version, if any")
    superseded_by: str | None = Field(description="the version that replaced this one, if any")
    created_at: str | None
    raw_text: str
    change: str = Field(description="what was decided")
    trigger: str = Field(description="why: what prompted the decision")
    alternatives_tried: str
    consequences: str
    summary: str = Field(description="source sentences that carry the fields above; never generated")
    tags: list[str]
    session: str | None
    author: str | None
    relations: dict[str, list[str]]
    link: LinkView | None = Field(None, description="provenance of the link to `supersedes`")
    extraction: ExtractionView
    forgotten_at: str | None = None
    purged: bool = False
    scope_source: str | None = Field(None, description="explicit (given), inferred (read from the text) or null")
    scope_evidence: str | None = Field(None, description="the words a scope was inferred from")
    possible_supersedes: list[str] = Field(
        default_factory=list,
        description="decisions the linker thought this note may replace but was not sure; confirm with supersede",
    )
    # issue 12 (purge): when a purge's bytes were gone from every file; null while a reader delays it
    file_erased_at: str | None = Field(
        None, description="purged notes: when the text was gone from the database file and its WAL (null: not yet)"
    )


class HistoryStep(BaseModel):
    """One earlier version, and how it was replaced."""

    node: NodeView
    replaced_by: str | None = Field(description="id of the version that replaced this one")
    replaced_at: str | None = Field(description="when it was replaced")
    why_replaced: str | None = Field(description="the trigger of the replacing version (why it changed)")
    what_changed: str | None = Field(description="the change recorded by the replacing version")
    replaced_by_method: str | None = Field(description="who made that link: agent, heuristic, ...")


class MatchView(BaseModel):
    node_id: str = Field(description="the version whose text matched")
    version: int
    is_current: bool = Field(description="False when an older version matched and was resolved to the head")
    score: float = Field(
        description="relevance, higher is better: BM25 alone, or the reciprocal-rank fusion of BM25 and vector "
        "similarity in hybrid recall"
    )
    fields: list[str] = Field(description="fields that contain query words")
    terms: list[str] = Field(description="query words found")
    via: list[str] = Field(
        default_factory=lambda: ["bm25"],
        description="which searches found this version: bm25 (its words), vector (its meaning), or both",
    )


class RecallHit(BaseModel):
    rank: int
    node: NodeView = Field(description="the version in force (head of the chain)")
    matched: MatchView = Field(description="the best-matching version and why it matched")
    also_matched: list[MatchView] = Field(default_factory=list)
    scope_match: str | None = Field(
        None,
        description="when recall asked for a scope: exact (decided for that scope) or default (an unscoped or "
        "production decision, in force there until that scope decides otherwise)",
    )
    history: list[HistoryStep] = Field(default_factory=list, description="earlier versions, newest first")


class RecallResult(BaseModel):
    query: str
    terms: list[str] = Field(description="the words searched (query syntax is treated as plain text)")
    count: int
    results: list[RecallHit]
    latency_ms: float
    notes: list[str] = Field(default_factory=list)


class RememberResult(BaseModel):
    id: str
    status: str
    namespace: str
    scope: str | None
    version: int
    chain_root: str
    created_at: str | None
    supersedes: str | None = Field(description="the version this note replaced (after re-targeting to the head)")
    link: LinkView | None = Field(description="the link made, if any, with its provenance")
    extraction: ExtractionView
    node: NodeView
    latency_ms: float = Field(description="server-side wall time of this remember")
    warnings: list[str] = Field(default_factory=list)
    link_decision: LinkDecisionView | None = Field(
        None, description="the automatic linker's decision, when it ran (auto-supersede on, no supersedes given)"
    )
    # issue 12 (idempotent remember)
    duplicate_of: str | None = Field(
        None,
        description="set when nothing was stored: an identical active note of the same namespace and scope was "
        "stored moments ago, and this is its id",
    )


class GetNodeResult(BaseModel):
    node: NodeView
    in_force: bool = Field(description="True when this node is the active head of its chain")
    current_head: NodeView | None = Field(
        None, description="the version in force when this node was superseded (None if it is the head)"
    )
    history: list[HistoryStep] = Field(default_factory=list)


class ForgetResult(BaseModel):
    id: str
    status: str
    changed: bool = Field(description="False when the node was already forgotten and purge was not asked")
    purged: bool
    chain_head: str | None = Field(description="the head of the chain after the change")
    chain_in_force: bool = Field(description="whether the chain still answers recall (its head is not forgotten)")
    message: str
    # issue 12 (purge that finishes)
    erased: dict[str, bool] = Field(
        default_factory=dict,
        description="purge: where the text is gone from: table, fts, vectors, caches, file",
    )
    file_erased: bool | None = Field(
        None, description="purge: False while another reader keeps the old bytes in the file; retried in the background"
    )
    file_erase_reason: str | None = Field(None, description="why file_erased is False")


class LinkDecisionView(BaseModel):
    """What the automatic linker decided for this note."""

    kind: str = Field(description="link, abstain (not sure: see candidates) or none")
    candidates: list[dict[str, object]] = Field(
        default_factory=list, description="for abstain: [{id, score, text}] the note may replace"
    )
    reason: str = ""


class UnlinkResult(BaseModel):
    id: str = Field(description="the node whose link was undone; now version 1 of its own chain")
    restored_head: str = Field(description="the version it had replaced, back in force")
    restored_status: str
    node: NodeView
    restored: NodeView
    message: str


class SupersedeResult(BaseModel):
    id: str
    supersedes: str
    version: int
    chain_root: str
    link: LinkView | None
    node: NodeView


class StatsResult(BaseModel):
    namespace: str | None
    nodes: int
    by_status: dict[str, int]
    purged: int
    chains: int = Field(description="distinct decisions (chains)")
    extraction: dict[str, int]
    namespaces: dict[str, int]
    db_bytes: int
    schema_version: int
    server: dict[str, str] = Field(default_factory=dict)
    # issue 12 (purge that finishes)
    purges_file_pending: int = Field(0, description="purged notes whose bytes may still be in the file or its WAL")
    last_file_erased_at: str | None = Field(None, description="when the latest purge was erased from every file")


# ---------------------------------------------------------------------- converters


def link_view(link: LinkProvenance | None) -> LinkView | None:
    if link is None:
        return None
    return LinkView(
        method=link.method,
        confidence=link.confidence,
        by=link.by,
        evidence=list(link.evidence),
        requested_id=link.requested_id,
        created_at=iso(link.created_at) if link.created_at else None,
    )


def node_view(node: MemoryNode) -> NodeView:
    return NodeView(
        id=node.id,
        namespace=node.namespace,
        scope=node.scope,
        status=str(node.status),
        version=node.version,
        chain_root=node.chain_root,
        supersedes=node.supersedes,
        superseded_by=node.superseded_by,
        created_at=iso(node.created_at),
        raw_text=node.raw_text,
        change=node.change,
        trigger=node.trigger,
        alternatives_tried=node.alternatives_tried,
        consequences=node.consequences,
        summary=node.summary,
        tags=list(node.tags),
        session=node.session,
        author=node.author,
        relations={k: list(v) for k, v in node.relations.items()},
        link=link_view(node.link),
        extraction=ExtractionView(
            state=str(node.extraction_state),
            extractor=node.extractor,
            error=node.extraction_error,
            attempts=node.extraction_attempts,
        ),
        forgotten_at=iso(node.forgotten_at),
        purged=node.purged,
        scope_source=node.scope_source,
        scope_evidence=node.scope_evidence,
        possible_supersedes=list(node.possible_supersedes),
        file_erased_at=iso(node.file_erased_at),
    )


def history_steps(newer: MemoryNode, history: list[MemoryNode]) -> list[HistoryStep]:
    """``history`` is newest first and starts just below ``newer``."""
    steps: list[HistoryStep] = []
    successor = newer
    for node in history:
        steps.append(
            HistoryStep(
                node=node_view(node),
                replaced_by=successor.id,
                replaced_at=iso(successor.created_at if successor.link is None else successor.link.created_at),
                why_replaced=successor.trigger or None,
                what_changed=successor.change or successor.summary or None,
                replaced_by_method=successor.link.method if successor.link else None,
            )
        )
        successor = node
    return steps


def match_view(m: Match) -> MatchView:
    return MatchView(
        node_id=m.node_id,
        version=m.version,
        is_current=m.is_head,
        score=m.score,
        fields=m.fields,
        terms=m.terms,
        via=m.via,
    )


def recall_result(out: RecallOutcome) -> RecallResult:
    hits: list[RecallHit] = []
    for rank, (entry, history) in enumerate(out.results, start=1):
        entry: Resolved
        hits.append(
            RecallHit(
                rank=rank,
                node=node_view(entry.head),
                matched=match_view(entry.best),
                also_matched=[match_view(m) for m in entry.matches[1:]],
                scope_match=entry.scope_match,
                history=history_steps(entry.head, history),
            )
        )
    return RecallResult(
        query=out.query, terms=out.terms, count=len(hits), results=hits, latency_ms=out.latency_ms, notes=out.notes
    )


def remember_result(out: RememberOutcome) -> RememberResult:
    node = out.node
    view = node_view(node)
    return RememberResult(
        id=node.id,
        status=str(node.status),
        namespace=node.namespace,
        scope=node.scope,
        version=node.version,
        chain_root=node.chain_root,
        created_at=view.created_at,
        supersedes=node.supersedes,
        link=link_view(out.link),
        extraction=view.extraction,
        node=view,
        latency_ms=out.latency_ms,
        warnings=out.warnings,
        link_decision=LinkDecisionView(
            kind=out.decision.kind,
            candidates=[{"id": c, "score": round(sc, 4)} for c, sc in out.decision.candidates],
            reason=out.decision.reason,
        )
        if out.decision is not None
        else None,
        duplicate_of=out.duplicate_of,
    )


def get_node_result(node: MemoryNode, head: MemoryNode | None, history: list[MemoryNode]) -> GetNodeResult:
    return GetNodeResult(
        node=node_view(node),
        in_force=node.superseded_by is None and node.status == "active",
        current_head=node_view(head) if head is not None else None,
        history=history_steps(node, history),
    )


def forget_result(out: ForgetOutcome) -> ForgetResult:
    head = out.chain_head
    in_force = head is not None and head.status == "active"
    if out.purged and out.file_erased is False:
        message = "purged from the table, the search index, the vectors and the caches; not yet from the file: " + (
            out.file_reason or "a reader holds an older snapshot"
        )
    elif out.purged:
        message = "purged: the text was erased from the table, the search index, the vectors, the caches and the file"
    elif out.changed:
        message = "forgotten: dropped from recall; the node and its history are kept"
    else:
        message = "already forgotten; nothing changed (pass purge=true to remove the text)"
    if head is not None and head.id == out.node.id:
        message += "; this was the version in force, so its decision no longer answers recall"
    return ForgetResult(
        id=out.node.id,
        status=str(out.node.status),
        changed=out.changed,
        purged=out.purged,
        chain_head=head.id if head else None,
        chain_in_force=in_force,
        message=message,
        erased=out.erased,
        file_erased=out.file_erased,
        file_erase_reason=out.file_reason if out.file_erased is False else None,
    )


def stats_result(stats: Stats, namespace: str | None, server: dict[str, str]) -> StatsResult:
    return StatsResult(
        namespace=namespace,
        nodes=sum(stats.by_status.values()),
        by_status=stats.by_status,
        purged=stats.purged,
        chains=stats.chains,
        extraction=stats.extraction,
        namespaces=stats.namespaces,
        db_bytes=stats.db_bytes,
        schema_version=stats.schema_version,
        server=server,
        purges_file_pending=stats.purges_file_pending,
        last_file_erased_at=iso(stats.last_file_erased_at),
    )
