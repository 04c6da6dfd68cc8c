"""gRPC servicers: thin translators from each RPC to the port behind it. No decisions are made here.

StorageService translates onto ``LocalStorage`` (``evomem.app.storage``): one RPC, one call. What
arrives over the wire is checked once, with the rules ``remember`` applies to an agent's arguments
(``evomem.app.notes.NoteRules``): RememberNote's note, link and key, SetExtraction's result (a pending
job of that node, fields taken from its text), and the sizes of every search.
"""

from __future__ import annotations

import grpc

from evomem.adapters.grpc import audit_convert, convert
from evomem.adapters.grpc.errors import servicer_method
from evomem.app.notes import NoteRules
from evomem.app.ports import Extractor, Linker
from evomem.app.recall import check_history_depth, check_query
from evomem.app.storage import LocalStorage
from evomem.domain import text as textrules
from evomem.domain.audit import AUDIT_PAGE_MAX
from evomem.domain.browse import DEPENDENTS_MAX, RecentQuery, check_recent
from evomem.domain.errors import InvalidArgument, NotFound
from evomem.domain.model import ExtractionState
from evomem.domain.remember import ContextQuery
from evomem.v1 import (
    cronista_pb2,
    cronista_pb2_grpc,
    linker_pb2,
    linker_pb2_grpc,
    storage_pb2,
    storage_pb2_grpc,
)

Ctx = grpc.ServicerContext

MAX_NEAREST = 500  # nearest notes per search (sqlite-vec's knn takes k <= 4096; the binary scan asks 8x)
MAX_CANDIDATES = 500  # full-text candidates per PrepareRemember
MAX_NAMED_IDS = 1000  # node ids PrepareRemember reads
MAX_EARLIER_DEPTH = 50


def check_context_query(query: ContextQuery) -> ContextQuery:
    """Refuse a PrepareRemember no service would send, before any work."""
    if len(query.node_ids) > MAX_NAMED_IDS:
        raise InvalidArgument(f"at most {MAX_NAMED_IDS} node ids per PrepareRemember call")
    if not 0 <= query.limit <= MAX_CANDIDATES:
        raise InvalidArgument(f"limit must be from 0 to {MAX_CANDIDATES}, got {query.limit}")
    if not 0 <= query.vector_limit <= MAX_NEAREST:
        raise InvalidArgument(f"vector_limit must be from 0 to {MAX_NEAREST}, got {query.vector_limit}")
    if not 0 <= query.earlier_depth <= MAX_EARLIER_DEPTH:
        raise InvalidArgument(f"earlier_depth must be from 0 to {MAX_EARLIER_DEPTH}, got {query.earlier_depth}")
    return query


class StorageServicer(storage_pb2_grpc.StorageServiceServicer):
    """``storage``: the storage file's ``LocalStorage`` (its vectors, or None: BM25 only).
    ``rules``: what a note from the wire is checked with (``max_note_bytes``: EVOMEM_MAX_NOTE_BYTES)."""

    def __init__(self, storage: LocalStorage, rules: NoteRules | None = None) -> None:
        self.storage = storage
        self.rules = rules or NoteRules()

    @servicer_method
    def PrepareRemember(
        self, request: storage_pb2.PrepareRememberRequest, context: Ctx
    ) -> storage_pb2.PrepareRememberResponse:
        query = check_context_query(convert.context_query_from_pb(request))
        return convert.context_to_pb(self.storage.remember_context(query))

    @servicer_method
    def RememberNote(self, request: storage_pb2.RememberNoteRequest, context: Ctx) -> storage_pb2.RememberNoteResponse:
        write = self.rules.check_write(convert.write_from_pb(request), self.storage.store.get_many)
        return convert.stored_to_pb(self.storage.remember_note(write))

    @servicer_method
    def RecallNodes(self, request: storage_pb2.RecallNodesRequest, context: Ctx) -> storage_pb2.RecallNodesResponse:
        query = check_query(convert.recall_query_from_pb(request))
        if query.vector_limit > MAX_NEAREST:
            raise InvalidArgument(f"vector_limit must be from 0 to {MAX_NEAREST}, got {query.vector_limit}")
        return convert.recall_answer_to_pb(self.storage.recall_nodes(query))

    @servicer_method
    def LinkNodes(self, request: storage_pb2.LinkNodesRequest, context: Ctx) -> storage_pb2.LinkNodesResponse:
        node = self.storage.link(request.node_id, request.supersedes, convert.link_from_pb(request.link))
        return storage_pb2.LinkNodesResponse(node=convert.node_to_pb(node))

    @servicer_method
    def UnlinkNode(self, request: storage_pb2.UnlinkNodeRequest, context: Ctx) -> storage_pb2.UnlinkNodeResponse:
        node, restored = self.storage.unlink(request.node_id, by=request.by if request.HasField("by") else None)
        return storage_pb2.UnlinkNodeResponse(node=convert.node_to_pb(node), restored=convert.node_to_pb(restored))

    @servicer_method
    def ReviewNode(self, request: storage_pb2.ReviewNodeRequest, context: Ctx) -> storage_pb2.ReviewNodeResponse:
        by = textrules.clean_short(request.by, "by") if request.HasField("by") else None
        node, changed = self.storage.review(self.rules.node_id(request.node_id), by=by)
        return storage_pb2.ReviewNodeResponse(node=convert.node_to_pb(node), changed=changed)

    @servicer_method
    def GetNode(self, request: storage_pb2.GetNodeRequest, context: Ctx) -> storage_pb2.GetNodeResponse:
        node = self.storage.get(request.node_id)
        return storage_pb2.GetNodeResponse(node=convert.node_to_pb(node) if node else None)

    @servicer_method
    def GetHeads(self, request: storage_pb2.GetHeadsRequest, context: Ctx) -> storage_pb2.GetHeadsResponse:
        heads = self.storage.heads(request.chain_roots)
        return storage_pb2.GetHeadsResponse(heads=[convert.node_to_pb(n) for n in heads.values()])

    @servicer_method
    def GetChain(self, request: storage_pb2.GetChainRequest, context: Ctx) -> storage_pb2.GetChainResponse:
        depth = check_history_depth(request.depth)  # 0 to HISTORY_DEPTH_MAX earlier versions
        nodes = self.storage.chain(self.rules.node_id(request.node_id), depth)
        return storage_pb2.GetChainResponse(nodes=[convert.node_to_pb(n) for n in nodes])

    @servicer_method
    def ListRecentHeads(
        self, request: storage_pb2.ListRecentHeadsRequest, context: Ctx
    ) -> storage_pb2.ListRecentHeadsResponse:
        query = check_recent(
            RecentQuery(
                namespace=self.rules.namespace(request.namespace),
                scope=textrules.clean_label(request.scope, "scope") if request.HasField("scope") else None,
                tags=textrules.clean_tags(list(request.tags)),
                limit=request.limit,
                before=request.before if request.HasField("before") else None,
                history_depth=request.history_depth,
            )
        )
        page = self.storage.recent_heads(query)
        return storage_pb2.ListRecentHeadsResponse(
            heads=[convert.node_to_pb(n) for n in page.heads],
            more=page.more,
            histories=[
                storage_pb2.HeadHistory(head_id=k, versions=[convert.node_to_pb(n) for n in v])
                for k, v in page.histories.items()
            ],
        )

    @servicer_method
    def ListDependents(
        self, request: storage_pb2.ListDependentsRequest, context: Ctx
    ) -> storage_pb2.ListDependentsResponse:
        if not 0 <= request.limit <= DEPENDENTS_MAX:
            raise InvalidArgument(f"limit must be from 0 to {DEPENDENTS_MAX}, got {request.limit}")
        nodes = self.storage.dependents(self.rules.node_id(request.node_id), request.limit)
        return storage_pb2.ListDependentsResponse(nodes=[convert.node_to_pb(n) for n in nodes])

    @servicer_method
    def ForgetNode(self, request: storage_pb2.ForgetNodeRequest, context: Ctx) -> storage_pb2.ForgetNodeResponse:
        nid = self.rules.node_id(request.node_id)
        if self.storage.get(nid) is None:
            raise NotFound(f"node_id: no node with id {nid}")
        node, changed = self.storage.forget(nid, purge=request.purge)
        return storage_pb2.ForgetNodeResponse(node=convert.node_to_pb(node), changed=changed)

    @servicer_method
    def SetExtraction(
        self, request: storage_pb2.SetExtractionRequest, context: Ctx
    ) -> storage_pb2.SetExtractionResponse:
        try:
            state = ExtractionState(request.state)
        except ValueError:
            # A bad request field is the caller's error, not a crash (it was INTERNAL).
            states = ", ".join(s.value for s in ExtractionState)
            raise InvalidArgument(f"state must be one of {states}, got {request.state!r}") from None
        nid = self.rules.node_id(request.node_id)
        extraction, error = self.rules.check_result(
            convert.extraction_from_pb(request.extraction) if request.HasField("extraction") else None,
            state,
            request.error if request.HasField("error") else None,
        )
        node = self.storage.get(nid)
        result = None
        if node is not None and not node.purged:
            result = self.storage.set_extraction(nid, self.rules.check_fields(node, extraction), state, error)
        return storage_pb2.SetExtractionResponse(node=convert.node_to_pb(result) if result else None)

    @servicer_method
    def ListPendingExtractions(
        self, request: storage_pb2.ListPendingExtractionsRequest, context: Ctx
    ) -> storage_pb2.ListPendingExtractionsResponse:
        return storage_pb2.ListPendingExtractionsResponse(
            node_ids=self.storage.pending_extractions(request.limit or 100)
        )

    @servicer_method
    def GetStats(self, request: storage_pb2.GetStatsRequest, context: Ctx) -> storage_pb2.GetStatsResponse:
        ns = request.namespace if request.HasField("namespace") else None
        return convert.stats_to_pb(self.storage.stats(ns))

    # -- the write audit log (evomem.app.access, through the gateway)

    @servicer_method
    def AppendAudit(self, request: storage_pb2.AppendAuditRequest, context: Ctx) -> storage_pb2.AppendAuditResponse:
        self.storage.append_audit(audit_convert.entry_from_pb(request.entry))
        return storage_pb2.AppendAuditResponse()

    @servicer_method
    def ListAudit(self, request: storage_pb2.ListAuditRequest, context: Ctx) -> storage_pb2.ListAuditResponse:
        query = audit_convert.query_from_pb(request)
        if not 1 <= query.limit <= AUDIT_PAGE_MAX:
            raise InvalidArgument(f"limit must be from 1 to {AUDIT_PAGE_MAX}, got {query.limit}")
        entries = self.storage.audit_page(query)
        return storage_pb2.ListAuditResponse(entries=[audit_convert.entry_to_pb(e) for e in entries])


class CronistaServicer(cronista_pb2_grpc.CronistaServiceServicer):
    def __init__(self, extractor: Extractor) -> None:
        self.extractor = extractor

    @servicer_method
    def ExtractFields(
        self, request: cronista_pb2.ExtractFieldsRequest, context: Ctx
    ) -> cronista_pb2.ExtractFieldsResponse:
        return cronista_pb2.ExtractFieldsResponse(
            extraction=convert.extraction_to_pb(self.extractor.extract(request.text))
        )


class LinkerServicer(linker_pb2_grpc.LinkerServiceServicer):
    def __init__(self, linker: Linker) -> None:
        self.linker = linker

    @servicer_method
    def ProposeLink(self, request: linker_pb2.ProposeLinkRequest, context: Ctx) -> linker_pb2.ProposeLinkResponse:
        candidates = [convert.node_from_pb(c) for c in request.candidates]
        scope = request.scope if request.HasField("scope") else None
        proposal = self.linker.propose(request.text, scope, candidates)
        return linker_pb2.ProposeLinkResponse(
            proposal=convert.proposal_to_pb(proposal) if proposal else None, linker=self.linker.name
        )

    @servicer_method
    def DecideLink(self, request: linker_pb2.ProposeLinkRequest, context: Ctx) -> linker_pb2.DecideLinkResponse:
        candidates = [convert.node_from_pb(c) for c in request.candidates]
        scope = request.scope if request.HasField("scope") else None
        # The gateway reads the candidates' earlier versions with them; an older one sends none.
        earlier = {n.id: n for n in map(convert.node_from_pb, request.earlier)} if request.earlier else None
        decision = self.linker.decide(
            request.text, scope, candidates, scope_inferred=request.scope_inferred, earlier=earlier
        )
        return convert.decision_to_pb(decision, self.linker.name)
