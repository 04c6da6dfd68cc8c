"""gRPC clients that implement the core's ports: the gateway and the worker use these
where the embedded process uses SQLite and the lite cronista directly.

Calls wait for the channel to be ready (``wait_for_ready``) up to their deadline, so a
service restart delays requests instead of failing them. A call sent just as a server closes
is on the old connection and fails ``UNAVAILABLE``: the calls that only read or compute
(``RETRIED``) are then sent again, with backoff, within the same deadline (the channel's
service config, gRPC's own retries); a write is never sent twice.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

import grpc

from evomem.adapters.grpc import audit_convert, convert
from evomem.adapters.grpc.errors import from_rpc_error
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.errors import EvoMemError, Unavailable
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    InsertOutcome,
    LinkDecision,
    LinkProposal,
    LinkProvenance,
    MemoryNode,
    NewNote,
    SearchHit,
    Stats,
)
from evomem.domain.recall import RecallAnswer, RecallQuery, Successor
from evomem.security.peer import TlsFiles, channel_credentials, with_secret
from evomem.v1 import (
    cronista_pb2,
    cronista_pb2_grpc,
    linker_pb2,
    linker_pb2_grpc,
    storage_pb2,
    storage_pb2_grpc,
)

log = logging.getLogger("evomem.grpc")

DEFAULT_TIMEOUT_S = 10.0
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

#: The calls that change nothing (reads, and the cronista's and linker's pure answers): retried
#: when they fail UNAVAILABLE. Writes are not: one that reached storage before its connection
#: broke would be applied twice.
RETRIED: dict[str, tuple[str, ...]] = {
    "evomem.v1.StorageService": (
        "GetNode",
        "GetNodes",
        "GetHeads",
        "GetChain",
        "SearchNodes",
        "ListPendingExtractions",
        "GetStats",
        "NearestNodes",
        "RecallNodes",
        "ListPossibleSuccessors",
        "ListAudit",
    ),
    "evomem.v1.CronistaService": ("ExtractFields",),
    "evomem.v1.LinkerService": ("ProposeLink", "DecideLink"),
}
#: Up to 3 more tries, 0.1 s then 0.2 s then 0.4 s apart at most (gRPC randomises each wait
#: below its bound), inside the call's own deadline.
RETRY_POLICY = {
    "maxAttempts": 4,
    "initialBackoff": "0.1s",
    "maxBackoff": "1s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}
SERVICE_CONFIG = json.dumps(
    {
        "methodConfig": [
            {
                "name": [{"service": s, "method": m} for s, methods in RETRIED.items() for m in methods],
                "retryPolicy": RETRY_POLICY,
            }
        ]
    }
)


def channel(address: str, secret: str | None = None, tls: TlsFiles | None = None) -> grpc.Channel:
    """A channel to ``address``; with ``secret`` every call carries it, with ``tls`` it is
    mutual TLS (``peer_auth``)."""
    return with_secret(_channel(address, tls), secret)


def _channel(address: str, tls: TlsFiles | None = None) -> grpc.Channel:
    options = [
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.enable_retries", 1),
        ("grpc.service_config", SERVICE_CONFIG),
    ]
    if tls is not None:
        return grpc.secure_channel(address, channel_credentials(tls), options=options)
    return grpc.insecure_channel(address, options=options)


class _Client:
    service = "grpc"

    def __init__(
        self,
        address: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        secret: str | None = None,
        tls: TlsFiles | None = None,
    ) -> None:
        self.address = address
        self.timeout_s = timeout_s
        self._channel = channel(address, secret, tls)

    def _call(self, method: Any, request: Any) -> Any:
        try:
            return method(request, timeout=self.timeout_s, wait_for_ready=True)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc, f"{self.service} ({self.address})") from exc

    def close(self) -> None:
        self._channel.close()


class GrpcStore(_Client):
    """The ``Store`` port over the storage service, and its ``NodeRecall`` (``recall_nodes``)."""

    service = "storage"

    def __init__(self, address: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, **peer: Any) -> None:
        super().__init__(address, timeout_s=timeout_s, **peer)  # peer: secret, tls
        self._stub = storage_pb2_grpc.StorageServiceStub(self._channel)

    def insert(self, note: NewNote, *, supersedes: str | None = None, link: LinkProvenance | None = None) -> MemoryNode:
        return self.insert_once(note, supersedes=supersedes, link=link)[0]

    def insert_once(
        self,
        note: NewNote,
        *,
        supersedes: str | None = None,
        link: LinkProvenance | None = None,
        idempotency_key: str | None = None,
        dedupe_window_ms: int = 0,
    ) -> tuple[MemoryNode, InsertOutcome]:
        """InsertNode with the key and the window: storage decides, under its write lock, so a
        retry through any gateway process finds the first call's node."""
        req = storage_pb2.InsertNodeRequest(
            note=convert.note_to_pb(note),
            supersedes=supersedes,
            link=convert.link_to_pb(link) if link else None,
            idempotency_key=idempotency_key,
            dedupe_window_ms=dedupe_window_ms,
        )
        resp = self._call(self._stub.InsertNode, req)
        return convert.node_from_pb(resp.node), InsertOutcome(resp.outcome or InsertOutcome.INSERTED)

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        req = storage_pb2.LinkNodesRequest(node_id=node_id, supersedes=supersedes, link=convert.link_to_pb(link))
        return convert.node_from_pb(self._call(self._stub.LinkNodes, req).node)

    def unlink(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, MemoryNode]:
        resp = self._call(self._stub.UnlinkNode, storage_pb2.UnlinkNodeRequest(node_id=node_id, by=by))
        return convert.node_from_pb(resp.node), convert.node_from_pb(resp.restored)

    def get(self, node_id: str) -> MemoryNode | None:
        resp = self._call(self._stub.GetNode, storage_pb2.GetNodeRequest(node_id=node_id))
        return convert.node_from_pb(resp.node) if resp.HasField("node") else None

    def get_many(self, node_ids: Iterable[str]) -> dict[str, MemoryNode]:
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return {}
        resp = self._call(self._stub.GetNodes, storage_pb2.GetNodesRequest(node_ids=ids))
        return {n.id: convert.node_from_pb(n) for n in resp.nodes}

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        roots = list(dict.fromkeys(chain_roots))
        if not roots:
            return {}
        resp = self._call(self._stub.GetHeads, storage_pb2.GetHeadsRequest(chain_roots=roots))
        return {n.chain_root: convert.node_from_pb(n) for n in resp.heads}

    def chain(self, node_id: str, depth: int) -> list[MemoryNode]:
        resp = self._call(self._stub.GetChain, storage_pb2.GetChainRequest(node_id=node_id, depth=depth))
        return [convert.node_from_pb(n) for n in resp.nodes]

    def search(self, terms: Sequence[str], *, namespace: str, limit: int, active_only: bool = False) -> list[SearchHit]:
        if not terms:
            return []
        req = storage_pb2.SearchNodesRequest(
            terms=list(terms), namespace=namespace, limit=limit, active_only=active_only
        )
        return [convert.hit_from_pb(h) for h in self._call(self._stub.SearchNodes, req).hits]

    def recall_nodes(self, query: RecallQuery) -> RecallAnswer:
        """The ``NodeRecall`` port: recall's whole storage side in one RecallNodes call."""
        return convert.recall_answer_from_pb(self._call(self._stub.RecallNodes, convert.recall_query_to_pb(query)))

    def possible_successors(
        self, node_ids: Iterable[str], *, namespace: str, limit: int = 8
    ) -> dict[str, list[Successor]]:
        ids = list(dict.fromkeys(node_ids))
        if not ids or limit < 1:
            return {}
        req = storage_pb2.ListPossibleSuccessorsRequest(node_ids=ids, namespace=namespace, limit=limit)
        return convert.successors_from_pb(self._call(self._stub.ListPossibleSuccessors, req))

    def forget(self, node_id: str, *, purge: bool = False) -> tuple[MemoryNode, bool]:
        resp = self._call(self._stub.ForgetNode, storage_pb2.ForgetNodeRequest(node_id=node_id, purge=purge))
        return convert.node_from_pb(resp.node), resp.changed

    def set_extraction(
        self,
        node_id: str,
        extraction: Extraction | None,
        state: ExtractionState,
        error: str | None = None,
    ) -> MemoryNode | None:
        req = storage_pb2.SetExtractionRequest(
            node_id=node_id,
            extraction=convert.extraction_to_pb(extraction) if extraction else None,
            state=str(state),
            error=error,
        )
        resp = self._call(self._stub.SetExtraction, req)
        return convert.node_from_pb(resp.node) if resp.HasField("node") else None

    def pending_extractions(self, limit: int = 100) -> list[str]:
        if limit == 0:
            # On the wire 0 means "unset" (the servicer's default, 100); the port means none.
            return []
        resp = self._call(self._stub.ListPendingExtractions, storage_pb2.ListPendingExtractionsRequest(limit=limit))
        return list(resp.node_ids)

    def stats(self, namespace: str | None = None) -> Stats:
        return convert.stats_from_pb(self._call(self._stub.GetStats, storage_pb2.GetStatsRequest(namespace=namespace)))

    # -- the write audit log (AuditLog port)

    def append_audit(self, entry: AuditEntry) -> None:
        self._call(self._stub.AppendAudit, storage_pb2.AppendAuditRequest(entry=audit_convert.entry_to_pb(entry)))

    def audit_page(self, query: AuditQuery) -> list[AuditEntry]:
        resp = self._call(self._stub.ListAudit, audit_convert.query_to_pb(query))
        return [audit_convert.entry_from_pb(e) for e in resp.entries]


class GrpcExtractor(_Client):
    """The ``Extractor`` port over the cronista service."""

    service = "cronista"

    def __init__(self, address: str, *, timeout_s: float = 30.0, **peer: Any) -> None:
        super().__init__(address, timeout_s=timeout_s, **peer)  # peer: secret, tls
        self._stub = cronista_pb2_grpc.CronistaServiceStub(self._channel)
        self.name = f"grpc:{address}"

    def extract(self, text: str) -> Extraction:
        resp = self._call(self._stub.ExtractFields, cronista_pb2.ExtractFieldsRequest(text=text))
        return convert.extraction_from_pb(resp.extraction)


class GrpcLinker(_Client):
    """The ``Linker`` port over the linker service."""

    service = "linker"
    abstains = True  # the remote linker may (DecideLink carries abstentions)

    def __init__(self, address: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, **peer: Any) -> None:
        super().__init__(address, timeout_s=timeout_s, **peer)  # peer: secret, tls
        self._stub = linker_pb2_grpc.LinkerServiceStub(self._channel)
        self.name = f"grpc:{address}"

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        resp = self._call(self._stub.ProposeLink, self._request(text, scope, candidates))
        return convert.proposal_from_pb(resp.proposal) if resp.HasField("proposal") else None

    #: ``decide`` sends ``scope_inferred``; the service's linker uses it when it reads inferred scopes.
    reads_inferred_scopes = True

    def decide(
        self, text: str, scope: str | None, candidates: Sequence[MemoryNode], scope_inferred: bool = False
    ) -> LinkDecision:
        """The linker's full decision (link, abstain with candidates, none), as in-process."""
        resp = self._call(self._stub.DecideLink, self._request(text, scope, candidates, scope_inferred))
        return convert.decision_from_pb(resp)

    @staticmethod
    def _request(
        text: str, scope: str | None, candidates: Sequence[MemoryNode], scope_inferred: bool = False
    ) -> linker_pb2.ProposeLinkRequest:
        return linker_pb2.ProposeLinkRequest(
            text=text,
            scope=scope,
            candidates=[convert.node_to_pb(c) for c in candidates],
            scope_inferred=scope_inferred,
        )


class GrpcVectors(_Client):
    """The ``Vectors`` port over the storage service, which keeps the vectors in its own file
    and embeds texts itself: ``add`` sends node ids, ``nearest`` sends the query text.

    ``required=False`` (the gateway's ``EVOMEM_VECTORS=auto``): when storage answers that it
    runs without vectors (FAILED_PRECONDITION), that is logged once and, for ``recheck_s``,
    ``add`` does nothing and ``nearest`` finds nothing, without a call: recall is BM25 only,
    as the embedded server's ``auto`` without a model. ``required=True`` (``on``): every call
    raises ``Unavailable``, so the service logs it and ``remember`` warns.

    ``remove`` does nothing: a purge deletes the vector inside storage's own transaction
    (``SQLiteStore.forget``), which is the only removal the service needs.
    """

    service = "storage"

    def __init__(
        self,
        address: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        required: bool = False,
        recheck_s: float = 60.0,
        **peer: Any,
    ) -> None:
        super().__init__(address, timeout_s=timeout_s, **peer)  # peer: secret, tls
        self._stub = storage_pb2_grpc.StorageServiceStub(self._channel)
        self.required = required
        self.recheck_s = recheck_s
        self._model: str | None = None
        self._off_until = 0.0  # monotonic time until which storage is taken to have no vectors
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The storage service's embedding model (asked once), or ``grpc:<address>`` while unknown."""
        if self._model is None:
            with contextlib.suppress(EvoMemError):  # storage down or without vectors: not known yet
                self._ask(self._stub.NearestNodes, storage_pb2.NearestNodesRequest(limit=0))
        return self._model or f"grpc:{self.address}"

    @property
    def off(self) -> bool:
        """True while storage is taken to run without vectors (``required=False`` only)."""
        return time.monotonic() < self._off_until

    def _ask(self, method: Any, request: Any) -> Any:
        try:
            resp = method(request, timeout=self.timeout_s, wait_for_ready=True)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            if code == grpc.StatusCode.UNIMPLEMENTED:  # a storage service from before vectors
                raise Unavailable(f"the storage service ({self.address}) has no vector RPCs") from exc
            err = from_rpc_error(exc, f"{self.service} ({self.address})")
            if code == grpc.StatusCode.FAILED_PRECONDITION and isinstance(err, Unavailable) and not self.required:
                with self._lock:
                    first = self._off_until == 0.0
                    self._off_until = time.monotonic() + self.recheck_s
                if first:
                    log.info("hybrid recall off (BM25 only): %s", err.message)
            raise err from exc
        self._model = resp.model or self._model
        if self._off_until:
            with self._lock:
                if self._off_until:
                    log.info("hybrid recall on: storage (%s) now has vectors (%s)", self.address, self._model)
                    self._off_until = 0.0
        return resp

    def add(self, nodes: Sequence[MemoryNode]) -> None:
        ids = [n.id for n in nodes if not n.purged and n.raw_text]
        if not ids or self.off:
            return
        try:
            self._ask(self._stub.AddVectors, storage_pb2.AddVectorsRequest(node_ids=ids))
        except Unavailable:
            if self.required or not self.off:
                raise

    def nearest(self, text: str, *, namespace: str, limit: int) -> list[tuple[str, float]]:
        if limit < 1 or not text.strip() or self.off:
            return []
        req = storage_pb2.NearestNodesRequest(text=text, namespace=namespace, limit=limit)
        try:
            resp = self._ask(self._stub.NearestNodes, req)
        except Unavailable:
            if self.required or not self.off:
                raise
            return []
        # float on the wire: round as SemanticIndex does, so both wirings answer the same numbers.
        return [(h.node_id, round(h.similarity, 6)) for h in resp.hits]

    def remove(self, node_id: str) -> None:
        """Nothing to do here: storage deletes a purged node's vector in the purge's transaction."""
