"""A gateway's storage round trips: how many storage RPCs one call costs.

The gateway's ``MemoryService`` (``build_gateway``: storage over gRPC, extraction queued on a real
Redis, the default offer of candidates by the pair linker) talks to a real storage server on
loopback (``StorageServicer(LocalStorage(SQLiteStore))``) whose RPCs a server interceptor counts.
A remember is at most two storage round trips (``PrepareRemember``: the named nodes and the
candidates; ``RememberNote``: the write), whatever the note carries; a recall is one
(``RecallNodes``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from redis_server import RedisServer
from test_recall_nodes import CountingInterceptor

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.access import GuardedService, Principal
from evomem.app.memory import MemoryService
from evomem.app.storage import LocalStorage
from evomem.bootstrap.services import build_gateway
from evomem.domain.audit import AuditQuery
from evomem.domain.linkers.pair import PairLinker
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.settings import Settings
from evomem.v1 import storage_pb2_grpc

OLD = "The payments team deploys the billing API every Tuesday after the change review."
NEW = "The billing API now deploys on Thursdays; Tuesday releases collided with the month-end close."
OTHERS = (
    "Frontend bundles are built with webpack and served from the CDN.",
    "Notifications are sent through a Redis-backed job queue.",
)


@dataclass
class Gateway:
    service: MemoryService
    counter: CountingInterceptor
    backing: SQLiteStore

    def calls(self) -> Counter[str]:
        return Counter(self.counter.calls)

    def old(self) -> str:
        """The id of the decision OLD, read directly (no RPC counted)."""
        return next(h.node_id for h in self.backing.search(["tuesday"], namespace="default", limit=1))


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    redis = RedisServer(tmp_path / "redis").start()
    backing = SQLiteStore(tmp_path / "storage.db")
    counter = CountingInterceptor()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=[counter])
    storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    service = build_gateway(Settings(storage_addr=f"127.0.0.1:{port}", redis_url=redis.url))
    try:
        assert service.linker is None and isinstance(service.offerer, PairLinker)  # the default: offers
        for text in (OLD, *OTHERS):
            service.remember(text)
        counter.calls.clear()
        yield Gateway(service, counter, backing)
    finally:
        service.close()
        server.stop(0)
        backing.close()
        redis.kill()


def test_a_plain_remember_with_the_offer_of_candidates_is_two_round_trips(gateway: Gateway) -> None:
    out = gateway.service.remember(NEW)
    assert out.node.possible_supersedes  # the offer ran, on the candidates PrepareRemember read
    assert gateway.calls() == Counter({"PrepareRemember": 1, "RememberNote": 1})


def test_a_remember_with_relations_is_two_round_trips(gateway: Gateway) -> None:
    old = gateway.old()
    out = gateway.service.remember(
        "The billing API deploy checklist has a rollback step.", relations={"see_also": [old]}
    )
    assert out.node.relations == {"see_also": (old,)}
    assert gateway.calls() == Counter({"PrepareRemember": 1, "RememberNote": 1})


def test_a_remember_that_supersedes_is_two_round_trips(gateway: Gateway) -> None:
    old = gateway.old()
    out = gateway.service.remember(NEW, supersedes=old)
    assert out.linked_to == old
    assert gateway.calls() == Counter({"PrepareRemember": 1, "RememberNote": 1})


def test_a_remember_with_auth_on_is_two_round_trips_its_audit_entry_included(gateway: Gateway) -> None:
    """Through the gate (``GuardedService``, the audit log kept by storage, as ``Gate.scoped``
    wires it) for a writer of one namespace: the audit entry travels with the write (RememberNote)
    and storage records it, completed with the node and what it links to."""
    writer = Principal(name="alice", role="writer", namespaces=("default",))
    guarded = GuardedService(gateway.service, writer, gateway.service.storage)
    out = guarded.remember(NEW, supersedes=gateway.old())
    assert out.node.author == "alice"
    assert gateway.calls() == Counter({"PrepareRemember": 1, "RememberNote": 1})
    entry = gateway.backing.audit_page(AuditQuery())[0]
    assert (entry.identity, entry.tool, entry.outcome) == ("alice", "remember", "ok")
    assert entry.ids == (out.node.id, gateway.old()) and entry.detail == "link agent"


def test_a_refused_remember_is_audited_too(gateway: Gateway) -> None:
    """A write that fails is recorded by the gate itself, with the error it ended with."""
    writer = Principal(name="alice", role="writer", namespaces=("default",))
    guarded = GuardedService(gateway.service, writer, gateway.service.storage)
    with pytest.raises(Exception, match="no node with id"):
        guarded.remember(NEW, supersedes="01J9ZK3V8W5Q6R7S8T9V0W1X2Y")
    entry = gateway.backing.audit_page(AuditQuery())[0]
    assert (entry.identity, entry.tool, entry.outcome) == ("alice", "remember", "not_found")


def test_a_recall_is_one_round_trip(gateway: Gateway) -> None:
    out = gateway.service.recall("billing API deploys", k=3, include_history=True)
    assert out.results
    assert gateway.calls() == Counter({"RecallNodes": 1})
