"""gRPC servicers: thin translators over core adapters. No decisions are made here.

Writes go through the core service layer (``MemoryService``), so a gRPC caller meets the rules
an MCP caller does: InsertNode is ``store_note`` (the note checked as ``remember`` checks its
arguments), SetExtraction is ``record_extraction`` (a pending job of that node, fields taken
from its text), ForgetNode is ``forget`` (the purge evicts storage's embedding cache too).
Reads go to the store directly."""

from __future__ import annotations

import grpc

from evomem.adapters.grpc import audit_convert, convert
from evomem.adapters.grpc.errors import servicer_method
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.ports import Extractor, Linker, Store, Vectors
from evomem.app.recall import LazyPool, check_query, recall_nodes
from evomem.domain.audit import AUDIT_PAGE_MAX
from evomem.domain.errors import InvalidArgument, Unavailable
from evomem.domain.linkers import calling
from evomem.domain.model import ExtractionState
from evomem.v1 import (
    cronista_pb2,
    cronista_pb2_grpc,
    linker_pb2,
    linker_pb2_grpc,
    storage_pb2,
    storage_pb2_grpc,
)

Ctx = grpc.ServicerContext

MAX_VECTOR_IDS = 1024  # node ids per AddVectors call
MAX_NEAREST = 500  # hits per NearestNodes call (sqlite-vec's knn takes k <= 4096; the binary scan asks 8x)
MAX_SUCCESSOR_IDS = 1000  # node ids per ListPossibleSuccessors call
MAX_SUCCESSORS = 20  # successors per node id


class VectorsOff(Unavailable):
    """This storage service runs without vectors. Answered as FAILED_PRECONDITION (retrying
    cannot help until it restarts with vectors), read by clients as ``Unavailable``."""

    grpc_status = "FAILED_PRECONDITION"


VECTORS_OFF = (
    "vectors are off on this storage service (EVOMEM_VECTORS=off, or no embedding model installed); recall is BM25 only"
)


class StorageServicer(storage_pb2_grpc.StorageServiceServicer):
    """``vectors``: the storage file's ``Vectors`` (hybrid recall), or None (BM25 only).
    ``config``: the rules writes are checked with (``max_note_bytes``: EVOMEM_MAX_NOTE_BYTES)."""

    def __init__(self, store: Store, vectors: Vectors | None = None, config: ServiceConfig | None = None) -> None:
        self.store = store
        self.vectors = vectors
        self.service = MemoryService(store, vectors=vectors, config=config or ServiceConfig())
        self._pool = LazyPool()  # the vector half of RecallNodes, beside its full-text half

    def _vectors(self) -> Vectors:
        if self.vectors is None:
            raise VectorsOff(VECTORS_OFF)
        return self.vectors

    @servicer_method
    def InsertNode(self, request: storage_pb2.InsertNodeRequest, context: Ctx) -> storage_pb2.InsertNodeResponse:
        node, outcome = self.service.store_note(
            convert.note_from_pb(request.note),
            supersedes=request.supersedes if request.HasField("supersedes") else None,
            link=convert.link_from_pb(request.link) if request.HasField("link") else None,
            idempotency_key=request.idempotency_key if request.HasField("idempotency_key") else None,
            dedupe_window_ms=request.dedupe_window_ms,
        )
        return storage_pb2.InsertNodeResponse(node=convert.node_to_pb(node), outcome=str(outcome))

    @servicer_method
    def LinkNodes(self, request: storage_pb2.LinkNodesRequest, context: Ctx) -> storage_pb2.LinkNodesResponse:
        node = self.store.link(request.node_id, request.supersedes, convert.link_from_pb(request.link))
        return storage_pb2.LinkNodesResponse(node=convert.node_to_pb(node))

    @servicer_method
    def UnlinkNode(self, request: storage_pb2.UnlinkNodeRequest, context: Ctx) -> storage_pb2.UnlinkNodeResponse:
        node, restored = self.store.unlink(request.node_id, by=request.by if request.HasField("by") else None)
        return storage_pb2.UnlinkNodeResponse(node=convert.node_to_pb(node), restored=convert.node_to_pb(restored))

    @servicer_method
    def GetNode(self, request: storage_pb2.GetNodeRequest, context: Ctx) -> storage_pb2.GetNodeResponse:
        node = self.store.get(request.node_id)
        return storage_pb2.GetNodeResponse(node=convert.node_to_pb(node) if node else None)

    @servicer_method
    def GetNodes(self, request: storage_pb2.GetNodesRequest, context: Ctx) -> storage_pb2.GetNodesResponse:
        nodes = self.store.get_many(request.node_ids)
        return storage_pb2.GetNodesResponse(nodes=[convert.node_to_pb(n) for n in nodes.values()])

    @servicer_method
    def GetHeads(self, request: storage_pb2.GetHeadsRequest, context: Ctx) -> storage_pb2.GetHeadsResponse:
        heads = self.store.heads(request.chain_roots)
        return storage_pb2.GetHeadsResponse(heads=[convert.node_to_pb(n) for n in heads.values()])

    @servicer_method
    def GetChain(self, request: storage_pb2.GetChainRequest, context: Ctx) -> storage_pb2.GetChainResponse:
        nodes = self.store.chain(request.node_id, request.depth)
        return storage_pb2.GetChainResponse(nodes=[convert.node_to_pb(n) for n in nodes])

    @servicer_method
    def SearchNodes(self, request: storage_pb2.SearchNodesRequest, context: Ctx) -> storage_pb2.SearchNodesResponse:
        hits = self.store.search(
            list(request.terms), namespace=request.namespace, limit=request.limit, active_only=request.active_only
        )
        return storage_pb2.SearchNodesResponse(hits=[convert.hit_to_pb(h) for h in hits])

    @servicer_method
    def ForgetNode(self, request: storage_pb2.ForgetNodeRequest, context: Ctx) -> storage_pb2.ForgetNodeResponse:
        out = self.service.forget(request.node_id, purge=request.purge)
        return storage_pb2.ForgetNodeResponse(node=convert.node_to_pb(out.node), changed=out.changed)

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
        node = self.service.record_extraction(
            request.node_id,
            convert.extraction_from_pb(request.extraction) if request.HasField("extraction") else None,
            state,
            request.error if request.HasField("error") else None,
        )
        return storage_pb2.SetExtractionResponse(node=convert.node_to_pb(node) if node else None)

    @servicer_method
    def ListPendingExtractions(
        self, request: storage_pb2.ListPendingExtractionsRequest, context: Ctx
    ) -> storage_pb2.ListPendingExtractionsResponse:
        return storage_pb2.ListPendingExtractionsResponse(node_ids=self.store.pending_extractions(request.limit or 100))

    @servicer_method
    def GetStats(self, request: storage_pb2.GetStatsRequest, context: Ctx) -> storage_pb2.GetStatsResponse:
        ns = request.namespace if request.HasField("namespace") else None
        return convert.stats_to_pb(self.store.stats(ns))

    @servicer_method
    def AddVectors(self, request: storage_pb2.AddVectorsRequest, context: Ctx) -> storage_pb2.AddVectorsResponse:
        vectors = self._vectors()
        if len(request.node_ids) > MAX_VECTOR_IDS:
            raise InvalidArgument(f"at most {MAX_VECTOR_IDS} node ids per AddVectors call")
        nodes = self.store.get_many(request.node_ids)
        live = [n for n in nodes.values() if not n.purged and n.raw_text]
        vectors.add(live)
        return storage_pb2.AddVectorsResponse(added=len(live), model=vectors.name)

    @servicer_method
    def NearestNodes(self, request: storage_pb2.NearestNodesRequest, context: Ctx) -> storage_pb2.NearestNodesResponse:
        vectors = self._vectors()
        if not 0 <= request.limit <= MAX_NEAREST:
            raise InvalidArgument(f"limit must be from 0 to {MAX_NEAREST}, got {request.limit}")
        hits = vectors.nearest(request.text, namespace=request.namespace, limit=request.limit) if request.limit else []
        return storage_pb2.NearestNodesResponse(
            hits=[storage_pb2.NearestHit(node_id=i, similarity=s) for i, s in hits], model=vectors.name
        )

    @servicer_method
    def RecallNodes(self, request: storage_pb2.RecallNodesRequest, context: Ctx) -> storage_pb2.RecallNodesResponse:
        query = check_query(convert.recall_query_from_pb(request))
        if query.vector_limit > MAX_NEAREST:
            raise InvalidArgument(f"vector_limit must be from 0 to {MAX_NEAREST}, got {query.vector_limit}")
        answer = recall_nodes(self.store, self.vectors, query, self._pool, vectors_off=VECTORS_OFF)
        return convert.recall_answer_to_pb(answer)

    @servicer_method
    def ListPossibleSuccessors(
        self, request: storage_pb2.ListPossibleSuccessorsRequest, context: Ctx
    ) -> storage_pb2.ListPossibleSuccessorsResponse:
        if len(request.node_ids) > MAX_SUCCESSOR_IDS:
            raise InvalidArgument(f"at most {MAX_SUCCESSOR_IDS} node ids per ListPossibleSuccessors call")
        if not 1 <= request.limit <= MAX_SUCCESSORS:
            raise InvalidArgument(f"limit must be from 1 to {MAX_SUCCESSORS}, got {request.limit}")
        found = self.store.possible_successors(request.node_ids, namespace=request.namespace, limit=request.limit)
        return convert.successors_to_pb(found)

    # -- the write audit log (evomem.app.access, through the gateway)

    @servicer_method
    def AppendAudit(self, request: storage_pb2.AppendAuditRequest, context: Ctx) -> storage_pb2.AppendAuditResponse:
        self.store.append_audit(audit_convert.entry_from_pb(request.entry))  # type: ignore[attr-defined]
        return storage_pb2.AppendAuditResponse()

    @servicer_method
    def ListAudit(self, request: storage_pb2.ListAuditRequest, context: Ctx) -> storage_pb2.ListAuditResponse:
        query = audit_convert.query_from_pb(request)
        if not 1 <= query.limit <= AUDIT_PAGE_MAX:
            raise InvalidArgument(f"limit must be from 1 to {AUDIT_PAGE_MAX}, got {query.limit}")
        entries = self.store.audit_page(query)  # type: ignore[attr-defined]
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
        decision = calling.decide(self.linker, request.text, scope, candidates, scope_inferred=request.scope_inferred)
        return convert.decision_to_pb(decision, self.linker.name)
