"""gRPC clients that implement the core's ports: the gateway and the worker use these
where the embedded process uses SQLite and the lite cronista directly.

Calls wait for the channel to be ready (``wait_for_ready``) up to their deadline, so a
service restart delays requests instead of failing them. A call sent just as a server closes
is on the old connection and fails ``UNAVAILABLE``: the calls that only read or compute
(``RETRIED``) are then sent again, with backoff, within the same deadline (the channel's
service config, gRPC's own retries); a write is never sent twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import grpc

from evomem.adapters.grpc import audit_convert, convert
from evomem.adapters.grpc.errors import from_rpc_error
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.browse import RecentPage, RecentQuery
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    LinkDecision,
    LinkProposal,
    LinkProvenance,
    MemoryNode,
    Stats,
)
from evomem.domain.recall import RecallAnswer, RecallQuery
from evomem.domain.remember import ContextQuery, NoteWrite, RememberContext, StoredNote
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
        "PrepareRemember",
        "RecallNodes",
        "GetNode",
        "GetHeads",
        "GetChain",
        "ListRecentHeads",
        "ListDependents",
        "ListPendingExtractions",
        "GetStats",
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
            raise from_rpc_error(exc, self.service, self.address) from exc

    def close(self) -> None:
        self._channel.close()


class GrpcStorage(_Client):
    """The ``Storage`` port over the storage service: one RPC per call. ``vectors``: this wiring
    asks for search by meaning (EVOMEM_VECTORS is not ``off``); the vectors live in storage."""

    service = "storage"

    def __init__(
        self, address: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, vectors: bool = False, **peer: Any
    ) -> None:
        super().__init__(address, timeout_s=timeout_s, **peer)  # peer: secret, tls
        self._stub = storage_pb2_grpc.StorageServiceStub(self._channel)
        self.vectors = vectors

    # -- business operations

    def recall_nodes(self, query: RecallQuery) -> RecallAnswer:
        """Recall's whole storage side in one RecallNodes call."""
        return convert.recall_answer_from_pb(self._call(self._stub.RecallNodes, convert.recall_query_to_pb(query)))

    def remember_context(self, query: ContextQuery) -> RememberContext:
        """What remember needs read, in one PrepareRemember call."""
        return convert.context_from_pb(self._call(self._stub.PrepareRemember, convert.context_query_to_pb(query)))

    def remember_note(self, write: NoteWrite) -> StoredNote:
        """RememberNote: storage decides the key and the window under its write lock, so a retry
        through any gateway process finds the first call's node."""
        return convert.stored_from_pb(self._call(self._stub.RememberNote, convert.write_to_pb(write)))

    def model_state(self) -> str:
        return "remote" if self.vectors else "off"

    # -- records

    def get(self, node_id: str) -> MemoryNode | None:
        resp = self._call(self._stub.GetNode, storage_pb2.GetNodeRequest(node_id=node_id))
        return convert.node_from_pb(resp.node) if resp.HasField("node") else None

    def heads(self, chain_roots: Iterable[str]) -> dict[str, MemoryNode]:
        roots = list(dict.fromkeys(chain_roots))
        if not roots:
            return {}
        resp = self._call(self._stub.GetHeads, storage_pb2.GetHeadsRequest(chain_roots=roots))
        return {n.chain_root: convert.node_from_pb(n) for n in resp.heads}

    def chain(self, node_id: str, depth: int) -> list[MemoryNode]:
        # The port reads a negative depth as none (the head alone); the wire refuses it.
        request = storage_pb2.GetChainRequest(node_id=node_id, depth=max(0, depth))
        resp = self._call(self._stub.GetChain, request)
        return [convert.node_from_pb(n) for n in resp.nodes]

    def recent_heads(self, query: RecentQuery) -> RecentPage:
        request = storage_pb2.ListRecentHeadsRequest(
            namespace=query.namespace,
            scope=query.scope,
            tags=query.tags,
            limit=query.limit,
            before=query.before,
            history_depth=query.history_depth,
        )
        resp = self._call(self._stub.ListRecentHeads, request)
        return RecentPage(
            [convert.node_from_pb(n) for n in resp.heads],
            resp.more if resp.HasField("more") else None,
            {h.head_id: [convert.node_from_pb(n) for n in h.versions] for h in resp.histories},
        )

    def dependents(self, node_id: str, limit: int = 50) -> list[MemoryNode]:
        request = storage_pb2.ListDependentsRequest(node_id=node_id, limit=max(0, limit))
        return [convert.node_from_pb(n) for n in self._call(self._stub.ListDependents, request).nodes]

    def link(self, node_id: str, supersedes: str, link: LinkProvenance) -> MemoryNode:
        req = storage_pb2.LinkNodesRequest(node_id=node_id, supersedes=supersedes, link=convert.link_to_pb(link))
        return convert.node_from_pb(self._call(self._stub.LinkNodes, req).node)

    def unlink(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, MemoryNode]:
        resp = self._call(self._stub.UnlinkNode, storage_pb2.UnlinkNodeRequest(node_id=node_id, by=by))
        return convert.node_from_pb(resp.node), convert.node_from_pb(resp.restored)

    def review(self, node_id: str, *, by: str | None = None) -> tuple[MemoryNode, bool]:
        resp = self._call(self._stub.ReviewNode, storage_pb2.ReviewNodeRequest(node_id=node_id, by=by))
        return convert.node_from_pb(resp.node), resp.changed

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

    # -- the write audit log

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

    def load(self) -> None:
        """Nothing to load here: the cronista service holds the model."""

    def check(self) -> str | None:
        """The cronista service reports its own health."""
        return None


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

    def prepare(self, text: str) -> None:
        """Nothing ahead: the linker service does its work in ``DecideLink``."""

    def wants_candidates(self, text: str) -> bool:
        """Always: the remote linker is asked nothing before ``DecideLink`` (a round trip to ask
        would cost what a skipped search saves on a small store)."""
        return True

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        scope_inferred: bool = False,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> LinkDecision:
        """The linker's full decision (link, abstain with candidates, none), as in-process.
        ``DecideLink`` carries ``scope_inferred`` and the candidates' ``earlier`` versions (so the
        linker service never calls storage back); ``similarities`` are not sent: the linker service
        reads the notes with its own embedder, as it always has."""
        request = self._request(text, scope, candidates, scope_inferred, earlier)
        return convert.decision_from_pb(self._call(self._stub.DecideLink, request))

    @staticmethod
    def _request(
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        scope_inferred: bool = False,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> linker_pb2.ProposeLinkRequest:
        return linker_pb2.ProposeLinkRequest(
            text=text,
            scope=scope,
            candidates=[convert.node_to_pb(c) for c in candidates],
            scope_inferred=scope_inferred,
            earlier=[convert.node_to_pb(n) for n in (earlier or {}).values()],
        )
