"""Recall in one storage round trip: ``RecallNodes`` runs ``evomem.app.recall.recall_nodes`` in
the storage service, the very function the embedded wiring runs in-process.

- The same story, recalled in-process (``LocalStorage`` over ``SQLiteStore`` + ``SemanticIndex``)
  and through a real storage server on loopback (``GrpcStorage``, the vectors in storage),
  answers identically (the MCP result, latency aside), with and without vectors.
- A gateway recall makes exactly one storage RPC (counted by a server interceptor).
- Bad sizes sent straight to the RPC are refused as ``InvalidArgument``.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import grpc
import pytest

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.ports import Storage, Vectors
from evomem.app.storage import LocalStorage
from evomem.bootstrap.vectors import vectors_problem
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import InvalidArgument
from evomem.domain.recall import RecallQuery
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.entrypoints.mcp.answers import recall_answer
from evomem.v1 import storage_pb2_grpc

NOTES = [
    ("We keep the ledger in Postgres.", {}),
    ("Deploys go out on Tuesdays after the standup.", {"tags": ["deploy"]}),
    ("The team picked Grafana for dashboards.", {"tags": ["ops"]}),
    ("In staging the ledger lives in SQLite so tests reset fast.", {"scope": "staging"}),
    ("Deploys to staging happen on every merge.", {"scope": "staging", "tags": ["deploy"]}),
    ("The mobile app uses Kotlin for Android.", {"namespace": "mobile"}),
]
QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("ledger", {}),
    ("ledger database", {"include_history": True, "history_depth": 3}),
    ("where are the accounting entries kept", {"k": 3, "include_history": True}),
    ("deploys", {"tags": ["deploy"]}),
    ("deploys ledger", {"scope": "staging", "include_history": True}),
    ("dashboards", {"k": 1}),
    ("Kotlin Android", {"namespace": "mobile"}),
    ("kotlin", {}),  # another namespace: nothing here
    ("?? !!", {}),  # no searchable words
    ("monitoring grafana", {}),  # its chain's head is forgotten below
]


class CountingInterceptor(grpc.ServerInterceptor):
    """Counts the RPCs the storage server receives, by method name."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        with self._lock:
            self.calls[details.method.rsplit("/", 1)[-1]] += 1
        return continuation(details)


@dataclass
class Wirings:
    embedded: MemoryService
    gateway: MemoryService
    address: str
    counter: CountingInterceptor


def _story(svc: MemoryService) -> None:
    ids = {}
    for text, kw in NOTES:
        ids[text] = svc.remember(text, **kw).node.id
    old = ids[NOTES[0][0]]
    mid = svc.remember("We moved the ledger to MySQL because Postgres ops were heavy.", supersedes=old).node.id
    svc.remember("Bookkeeping records now live in SQLite, after MySQL.", supersedes=mid)
    svc.remember("Grafana dashboards replaced by Datadog monitoring.", supersedes=ids[NOTES[2][0]])
    head = svc.recall("Datadog monitoring", k=1).results[0][0].head.id
    svc.forget(head)


@pytest.fixture(params=["bm25", "hybrid"])
def wirings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Wirings]:
    vectors: Vectors | None = None
    closers: list[Callable[[], object]] = []
    backing = SQLiteStore(tmp_path / "recall.db")
    closers.append(backing.close)
    if request.param == "hybrid":
        if vectors_problem() is not None:
            pytest.skip(f"hybrid recall cannot run here: {vectors_problem()}")
        from evomem.adapters.models.embedding import OnnxEmbedder
        from evomem.adapters.vectors.index import VectorIndex
        from evomem.adapters.vectors.semantic import SemanticIndex
        from evomem.bootstrap.vectors import VECTOR_MIN_SIMILARITY

        embedder = OnnxEmbedder()
        embedder.load()
        vectors = SemanticIndex(
            embedder, VectorIndex(backing.path, model=embedder.name), min_similarity=VECTOR_MIN_SIMILARITY
        )
        closers.insert(0, vectors.close)  # type: ignore[attr-defined]
    counter = CountingInterceptor()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=[counter])
    storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing, vectors)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    closers.insert(0, lambda: server.stop(0))
    address = f"127.0.0.1:{port}"
    config = ServiceConfig(extract_inline=True)
    embedded = MemoryService.local(backing, extractor=LiteCronista(), vectors=vectors, config=config)
    storage = GrpcStorage(address, vectors=vectors is not None)
    gateway = MemoryService(storage, extractor=LiteCronista(), config=replace(config, vectors=vectors is not None))
    closers.insert(0, storage.close)
    try:
        _story(embedded)
        yield Wirings(embedded, gateway, address, counter)
    finally:
        for close in closers:
            close()


def _answer(svc: MemoryService, query: str, kw: dict[str, Any]) -> dict[str, Any]:
    out = recall_answer(svc.recall(query, **kw), detail="full", note_chars=10**6, scoped="scope" in kw).data
    out.pop("latency_ms")
    return out


def test_both_wirings_recall_through_the_storage_port(wirings: Wirings) -> None:
    assert isinstance(wirings.gateway.storage, GrpcStorage) and isinstance(wirings.gateway.storage, Storage)
    assert isinstance(wirings.embedded.storage, LocalStorage) and isinstance(wirings.embedded.storage, Storage)
    assert wirings.gateway.config.vectors is wirings.embedded.config.vectors


def test_recall_in_process_and_over_grpc_answer_the_same(wirings: Wirings) -> None:
    answered = 0
    for query, kw in QUERIES:
        here = _answer(wirings.embedded, query, kw)
        there = _answer(wirings.gateway, query, kw)
        assert there == here, f"recall({query!r}, {kw}) differs between the wirings"
        answered += bool(here["results"])
    assert answered >= 5  # the story is recalled, not a list of empty answers
    hidden = _answer(wirings.embedded, "monitoring grafana", {})
    assert any("hidden because their current version was forgotten" in n for n in hidden["notes"])
    history = _answer(wirings.embedded, "ledger database", {"include_history": True, "history_depth": 3})
    assert history["results"][0]["history"], "the ledger chain's history travels too"


def test_a_gateway_recall_is_one_storage_rpc(wirings: Wirings) -> None:
    for query, kw in QUERIES:
        wirings.counter.calls.clear()
        wirings.gateway.recall(query, **kw)
        expected = Counter() if query == "?? !!" else Counter({"RecallNodes": 1})
        assert wirings.counter.calls == expected, f"recall({query!r}, {kw})"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"k": 0}, "k must be"),
        ({"k": 101}, "k must be"),
        ({"history_depth": 51}, "history_depth"),
        ({"limit": 0}, "limit must be"),
        ({"vector_limit": 60}, "vector_limit must be"),
    ],
)
def test_recall_nodes_refuses_bad_sizes(wirings: Wirings, change: dict[str, int], message: str) -> None:
    base = {"terms": ("ledger",), "text": "ledger", "namespace": "default", "k": 5, "limit": 50}
    query = RecallQuery(**{**base, **change})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=message):
        wirings.gateway.storage.recall_nodes(query)
