"""Hybrid recall in the multi-service wiring: the ``Vectors`` port over the storage service.

The vectors live in storage's SQLite file and storage embeds texts itself (it owns the file
and the model): ``GrpcVectors.add`` sends node ids (AddVectors), ``nearest`` the query text
(NearestNodes). One contract suite runs against ``SemanticIndex`` in-process and against
``GrpcVectors`` talking to a real storage server on 127.0.0.1, with the same assertions.

A storage service without vectors answers both RPCs FAILED_PRECONDITION "[unavailable] ...":
the client's error is ``Unavailable`` and the gateway's ``MemoryService`` recalls by BM25.

Real parts throughout: SQLite files, gRPC servers on loopback, the offline ONNX model (loaded
once per module).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from procutil import free_port, stop_process

from evomem.adapters.grpc.clients import GrpcStore, GrpcVectors
from evomem.adapters.models.embedding import OnnxEmbedder
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.adapters.vectors.index import VectorIndex
from evomem.adapters.vectors.semantic import SemanticIndex
from evomem.app.background import start_background
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.ports import Store, Vectors
from evomem.bootstrap import vectors as bootstrap
from evomem.bootstrap.services import build_gateway
from evomem.bootstrap.vectors import VECTOR_MIN_SIMILARITY, vectors_problem
from evomem.domain import text as textrules
from evomem.domain.errors import MODEL_LOADING, InvalidArgument, Unavailable
from evomem.domain.model import MemoryNode, NewNote
from evomem.entrypoints.grpc.server import RunningServer, create_server
from evomem.entrypoints.grpc.servicers import MAX_NEAREST, StorageServicer
from evomem.entrypoints.mcp import gateway
from evomem.settings import Settings, SettingsError
from evomem.v1 import storage_pb2, storage_pb2_grpc

pytestmark = pytest.mark.skipif(
    vectors_problem() is not None, reason=f"hybrid recall cannot run here: {vectors_problem()}"
)

STORAGE = "evomem.v1.StorageService"
EVOMEM_SERVICE = str(Path(sys.executable).with_name("evomem-service"))
NEW = "Bookkeeping records now live in SQLite."
DISTRACTORS = [
    "The team picked Grafana for dashboards.",
    "Deploys go out on Tuesdays after the standup.",
    "The mobile app uses Kotlin for Android.",
]
PARAPHRASE_QUERY = "where are accounting entries persisted"  # no word in common with NEW


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    e = OnnxEmbedder()
    e.load()
    return e


def semantic(store: SQLiteStore, embedder: OnnxEmbedder) -> SemanticIndex:
    """As ``bootstrap.build_vectors`` makes it, with the module's loaded model."""
    return SemanticIndex(embedder, VectorIndex(store.path, model=embedder.name), min_similarity=VECTOR_MIN_SIMILARITY)


def serve_storage(store: SQLiteStore, vectors: Vectors | None) -> RunningServer:
    running = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(store, vectors), s),
        (STORAGE,),
        metrics=False,
    )
    running.set_serving(True)
    return running


@dataclass
class VectorWiring:
    kind: str
    vectors: Vectors  # what the test talks to: the port
    store: Store  # the same wiring's Store port (writes and purges go through it)
    backing: SQLiteStore  # the file behind both
    index: SemanticIndex  # the file's vectors, read directly


@pytest.fixture(params=["semantic", "grpc"])
def wiring(request: pytest.FixtureRequest, tmp_path: Path, embedder: OnnxEmbedder) -> Iterator[VectorWiring]:
    backing = SQLiteStore(tmp_path / "vectors.db")
    index = semantic(backing, embedder)
    closers: list[Callable[[], object]] = [backing.close, index.close]
    try:
        if request.param == "semantic":
            yield VectorWiring("semantic", index, backing, backing, index)
            return
        running = serve_storage(backing, index)
        closers.insert(0, lambda: running.stop(0))
        address = f"127.0.0.1:{running.port}"
        client, store = GrpcVectors(address, required=True), GrpcStore(address)
        closers[:0] = [client.close, store.close]
        yield VectorWiring("grpc", client, store, backing, index)
    finally:
        for close in closers:
            close()


def remember(w: VectorWiring, text: str, namespace: str = "default") -> MemoryNode:
    """What ``MemoryService.remember`` does with vectors: insert, then add."""
    node = w.store.insert(NewNote(raw_text=text, namespace=namespace))
    w.vectors.add([node])
    return node


# ============================================================================ the contract


def test_both_wirings_implement_the_port_and_name_the_model(wiring: VectorWiring, embedder: OnnxEmbedder) -> None:
    assert isinstance(wiring.vectors, Vectors)
    assert wiring.vectors.name == embedder.name  # over gRPC: the model storage embeds with


def test_a_paraphrase_finds_a_note_that_shares_no_word(wiring: VectorWiring) -> None:
    for t in DISTRACTORS:
        remember(wiring, t)
    new = remember(wiring, NEW)
    # The premise: full-text search cannot find it.
    terms = textrules.query_terms(PARAPHRASE_QUERY)
    assert new.id not in [h.node_id for h in wiring.store.search(terms, namespace="default", limit=10)]
    near = wiring.vectors.nearest(PARAPHRASE_QUERY, namespace="default", limit=3)
    assert near[0][0] == new.id
    assert VECTOR_MIN_SIMILARITY <= near[0][1] <= 1.0
    assert [s for _, s in near] == sorted((s for _, s in near), reverse=True)
    assert wiring.vectors.nearest(PARAPHRASE_QUERY, namespace="other", limit=3) == []


def test_namespaces_are_apart(wiring: VectorWiring) -> None:
    mine = remember(wiring, NEW, namespace="team-a")
    remember(wiring, NEW, namespace="team-b")
    assert [i for i, _ in wiring.vectors.nearest(PARAPHRASE_QUERY, namespace="team-a", limit=5)] == [mine.id]


def test_add_is_idempotent(wiring: VectorWiring) -> None:
    new = remember(wiring, NEW)
    before = wiring.vectors.nearest(PARAPHRASE_QUERY, namespace="default", limit=5)
    wiring.vectors.add([new])
    wiring.vectors.add([new, new])
    assert wiring.index.index.count() == 1
    assert wiring.vectors.nearest(PARAPHRASE_QUERY, namespace="default", limit=5) == before
    wiring.vectors.add([])  # nothing to do, no error


def test_purge_removes_a_note_from_nearest(wiring: VectorWiring) -> None:
    keep = remember(wiring, "Accounting data is persisted in the ledger database.")
    gone = remember(wiring, NEW)
    assert gone.id in [i for i, _ in wiring.vectors.nearest(PARAPHRASE_QUERY, namespace="default", limit=5)]
    wiring.store.forget(gone.id, purge=True)  # the vector goes in the purge's own transaction
    assert [i for i, _ in wiring.vectors.nearest(PARAPHRASE_QUERY, namespace="default", limit=5)] == [keep.id]
    assert gone.id not in wiring.index.index
    purged = wiring.backing.get(gone.id)
    assert purged is not None and purged.purged
    wiring.vectors.add([purged])  # a purged node is never embedded again
    assert gone.id not in wiring.index.index
    wiring.vectors.remove(gone.id)  # nothing left to remove: no error in either wiring


def test_a_soft_forgotten_version_is_still_a_neighbour(wiring: VectorWiring) -> None:
    # The port returns every version it has; the service drops forgotten ones (as BM25 does).
    node = remember(wiring, NEW)
    wiring.store.forget(node.id)
    assert [i for i, _ in wiring.vectors.nearest(PARAPHRASE_QUERY, namespace="default", limit=5)] == [node.id]


def test_nothing_asked_nothing_embedded(wiring: VectorWiring) -> None:
    remember(wiring, NEW)
    assert wiring.vectors.nearest(PARAPHRASE_QUERY, namespace="default", limit=0) == []
    assert wiring.vectors.nearest("   ", namespace="default", limit=5) == []


# ============================================================================ the wire


@pytest.fixture
def served(tmp_path: Path, embedder: OnnxEmbedder) -> Iterator[tuple[str, SQLiteStore, SemanticIndex]]:
    backing = SQLiteStore(tmp_path / "served.db")
    index = semantic(backing, embedder)
    running = serve_storage(backing, index)
    yield f"127.0.0.1:{running.port}", backing, index
    running.stop(0)
    index.close()
    backing.close()


def test_grpc_answers_exactly_what_the_index_holds(served: tuple[str, SQLiteStore, SemanticIndex]) -> None:
    address, backing, index = served
    nodes = [backing.insert(NewNote(raw_text=t)) for t in [*DISTRACTORS, NEW]]
    client = GrpcVectors(address)
    try:
        client.add(nodes)
        assert index.index.count() == len(nodes)
        for query in (PARAPHRASE_QUERY, "which tool draws the charts", NEW):
            assert client.nearest(query, namespace="default", limit=4) == index.nearest(
                query, namespace="default", limit=4
            )
    finally:
        client.close()


def test_add_vectors_skips_unknown_and_counts_what_it_embedded(served: tuple[str, SQLiteStore, SemanticIndex]) -> None:
    address, backing, _ = served
    node = backing.insert(NewNote(raw_text=NEW))
    with grpc.insecure_channel(address) as ch:
        stub = storage_pb2_grpc.StorageServiceStub(ch)
        resp = stub.AddVectors(storage_pb2.AddVectorsRequest(node_ids=[node.id, "01BX5ZZKBKACTAV9WEVGEMMVRZ"]))
        assert resp.added == 1
        assert resp.model
        too_many = storage_pb2.AddVectorsRequest(node_ids=[node.id] * 1025)
        with pytest.raises(grpc.RpcError) as info:
            stub.AddVectors(too_many)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_nearest_limit_is_bounded(served: tuple[str, SQLiteStore, SemanticIndex]) -> None:
    client = GrpcVectors(served[0])
    try:
        with pytest.raises(InvalidArgument):
            client.nearest(NEW, namespace="default", limit=MAX_NEAREST + 1)
        assert client.nearest(NEW, namespace="default", limit=MAX_NEAREST) == []  # empty file
    finally:
        client.close()


# ============================================================================ storage without vectors


@pytest.fixture
def served_off(tmp_path: Path) -> Iterator[tuple[str, SQLiteStore]]:
    backing = SQLiteStore(tmp_path / "bm25.db")
    running = serve_storage(backing, None)
    yield f"127.0.0.1:{running.port}", backing
    running.stop(0)
    backing.close()


def test_storage_without_vectors_answers_failed_precondition(served_off: tuple[str, SQLiteStore]) -> None:
    address, backing = served_off
    node = backing.insert(NewNote(raw_text=NEW))
    with grpc.insecure_channel(address) as ch:
        stub = storage_pb2_grpc.StorageServiceStub(ch)
        for call in (
            lambda: stub.AddVectors(storage_pb2.AddVectorsRequest(node_ids=[node.id])),
            lambda: stub.NearestNodes(storage_pb2.NearestNodesRequest(text=NEW, namespace="default", limit=5)),
        ):
            with pytest.raises(grpc.RpcError) as info:
                call()
            assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert info.value.details().startswith("[unavailable] vectors are off on this storage service")


def test_required_client_raises_unavailable(served_off: tuple[str, SQLiteStore]) -> None:
    address, backing = served_off
    node = backing.insert(NewNote(raw_text=NEW))
    client = GrpcVectors(address, required=True)
    try:
        with pytest.raises(Unavailable, match="vectors are off"):
            client.nearest(NEW, namespace="default", limit=5)
        with pytest.raises(Unavailable, match="vectors are off"):
            client.add([node])
        assert client.name == f"grpc:{address}"  # no model to name
    finally:
        client.close()


def test_auto_client_goes_quiet_and_rechecks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    asked: list[str] = []

    class Counting(StorageServicer):
        def NearestNodes(self, request, context):  # type: ignore[no-untyped-def]
            asked.append(request.text)
            return super().NearestNodes(request, context)

    backing = SQLiteStore(tmp_path / "bm25.db")
    running = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(Counting(backing), s),
        (STORAGE,),
        metrics=False,
    )
    running.set_serving(True)
    node = backing.insert(NewNote(raw_text=NEW))
    client = GrpcVectors(f"127.0.0.1:{running.port}", recheck_s=3600)
    try:
        with caplog.at_level(logging.INFO, logger="evomem.grpc"):
            assert client.nearest(NEW, namespace="default", limit=5) == []  # no error: auto accepts it
            assert client.off
            assert client.nearest(NEW, namespace="default", limit=5) == []
            client.add([node])
        assert asked == [NEW]  # once storage said it has no vectors, nothing more was asked
        lines = [r.getMessage() for r in caplog.records if "hybrid recall off" in r.getMessage()]
        assert len(lines) == 1, lines
        client._off_until = time.monotonic() - 1  # the window is over: the next call asks again
        assert client.nearest(NEW, namespace="default", limit=5) == []
        assert asked == [NEW, NEW]
        assert client.off
    finally:
        client.close()
        running.stop(0)
        backing.close()


def test_a_storage_from_before_vectors_reads_as_unavailable(tmp_path: Path) -> None:
    class OldStorage(storage_pb2_grpc.StorageServiceServicer):
        pass  # every RPC UNIMPLEMENTED, as a storage service built before AddVectors

    running = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(OldStorage(), s),
        (STORAGE,),
        metrics=False,
    )
    running.set_serving(True)
    client = GrpcVectors(f"127.0.0.1:{running.port}", required=True)
    try:
        with pytest.raises(Unavailable, match="no vector RPCs"):
            client.nearest(NEW, namespace="default", limit=5)
    finally:
        client.close()
        running.stop(0)


# ============================================================================ the gateway's MemoryService


def gateway_service(address: str, **vectors_kw: object) -> MemoryService:
    """The gateway's shape (``build_gateway``) without the Redis queue: extraction stays pending."""
    return MemoryService(
        GrpcStore(address),
        extractor=None,
        vectors=GrpcVectors(address, **vectors_kw),  # type: ignore[arg-type]
        config=ServiceConfig(extract_inline=False, vectors_required=bool(vectors_kw.get("required"))),
    )


def close(service: MemoryService) -> None:
    service.vectors.close()  # type: ignore[union-attr]
    service.store.close()


def heads(out: object) -> list[str]:
    return [e.head.raw_text for e, _ in out.results]  # type: ignore[attr-defined]


def test_gateway_recall_is_hybrid(served: tuple[str, SQLiteStore, SemanticIndex]) -> None:
    address, _, index = served
    svc = gateway_service(address, required=True)
    try:
        for t in DISTRACTORS:
            svc.remember(t)
        old = svc.remember("We keep the ledger in Postgres.").node
        out = svc.remember(NEW, supersedes=old.id)
        assert out.warnings == []
        assert index.index.count() == len(DISTRACTORS) + 2  # remember embedded through storage
        got = svc.recall(PARAPHRASE_QUERY, k=3)
        assert heads(got)[0] == NEW
        assert "vector" in got.results[0][0].best.via
        assert "bm25" not in got.results[0][0].best.via
        assert heads(svc.recall("Grafana", k=1)) == [DISTRACTORS[0]]  # words still count
        svc.forget(out.node.id, purge=True)
        assert NEW not in heads(svc.recall(PARAPHRASE_QUERY, k=3))
    finally:
        close(svc)


@pytest.mark.parametrize("required", [False, True], ids=["auto", "on"])
def test_gateway_recalls_by_bm25_when_storage_has_no_vectors(
    served_off: tuple[str, SQLiteStore], required: bool, caplog: pytest.LogCaptureFixture
) -> None:
    svc = gateway_service(served_off[0], required=required)
    try:
        with caplog.at_level(logging.INFO):
            for t in DISTRACTORS:
                svc.remember(t)
            out = svc.remember(NEW)
            got = svc.recall("bookkeeping records", k=3)
            para = svc.recall(PARAPHRASE_QUERY, k=3)
        assert heads(got)[0] == NEW
        assert NEW not in heads(para)  # no vectors: a paraphrase is not found, and nothing fails
        messages = [r.getMessage() for r in caplog.records]
        if required:  # on: every vector call fails loudly, and remember says the note has no vector
            assert any("vector search failed, BM25 only" in m for m in messages)
            assert any("not yet searchable by meaning" in w for w in out.warnings)
        else:  # auto: one line, no warnings on the notes
            assert sum("hybrid recall off (BM25 only)" in m for m in messages) == 1
            assert out.warnings == []
            assert not any("vector search failed" in m for m in messages)
    finally:
        close(svc)


@pytest.mark.parametrize(("mode", "required"), [("auto", False), ("on", True), ("off", None)])
def test_build_gateway_wires_vectors_through_storage(mode: str, required: bool | None) -> None:
    svc = build_gateway(Settings(storage_addr="127.0.0.1:1", redis_url="redis://127.0.0.1:1/0", vectors=mode))
    try:
        if required is None:
            assert svc.vectors is None
        else:
            assert isinstance(svc.vectors, GrpcVectors)
            assert svc.vectors.required is required
            assert svc.vectors.address == "127.0.0.1:1"
    finally:
        if svc.vectors is not None:
            svc.vectors.close()  # type: ignore[attr-defined]
        svc.store.close()  # type: ignore[attr-defined]
    with pytest.raises(SettingsError, match="vectors must be one of"):
        build_gateway(Settings(storage_addr="127.0.0.1:1", redis_url="redis://127.0.0.1:1/0", vectors="maybe"))


def test_gateway_app_refuses_a_bad_vectors_value(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    for name in list(os.environ):
        if name.startswith("EVOMEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVOMEM_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("EVOMEM_STORAGE_ADDR", "127.0.0.1:1")
    monkeypatch.setenv("EVOMEM_REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("EVOMEM_VECTORS", "maybe")
    try:
        with pytest.raises(SettingsError, match="EVOMEM_VECTORS must be one of auto, on, off"):
            gateway.create_app()
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


# ============================================================================ the storage entry point


def test_storage_vectors_follow_evomem_vectors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "entry.db")

    def storage_vectors() -> Vectors | None:
        return bootstrap.storage_vectors(Settings.from_env(), store)

    try:
        monkeypatch.setenv("EVOMEM_VECTORS", "off")
        assert storage_vectors() is None
        monkeypatch.setenv("EVOMEM_VECTORS", "maybe")
        with pytest.raises(SettingsError, match="EVOMEM_VECTORS"):
            storage_vectors()
        for mode in ("auto", "on"):
            monkeypatch.setenv("EVOMEM_VECTORS", mode)
            vectors = storage_vectors()
            assert isinstance(vectors, SemanticIndex)
            vectors.close()
        monkeypatch.setattr("evomem.bootstrap.vectors.vectors_problem", lambda *_: "no model here")
        with pytest.raises(SettingsError, match="EVOMEM_VECTORS: vectors on: no model here"):
            storage_vectors()
        monkeypatch.setenv("EVOMEM_VECTORS", "auto")
        assert storage_vectors() is None
    finally:
        store.close()


def test_start_background_takes_the_vectors_themselves(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    store = SQLiteStore(tmp_path / "backfill.db")
    index = semantic(store, embedder)
    try:
        node = store.insert(NewNote(raw_text=NEW))  # written with vectors off
        for thread in start_background(index):
            thread.join(60)
        assert node.id in index.index
        stopped = threading.Event()
        stopped.set()
        later = store.insert(NewNote(raw_text="Deploys go out on Tuesdays."))
        for thread in start_background(index, stop=stopped):  # stopping: the model loads, nothing more
            thread.join(60)
        assert later.id not in index.index
        assert start_background(None) == []
        client = GrpcVectors("127.0.0.1:1")
        try:
            assert start_background(client) == []  # a client has nothing to load or backfill
        finally:
            client.close()
    finally:
        index.close()
        store.close()


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    env.update(extra)
    return env


def test_storage_process_backfills_and_serves_vectors(tmp_path: Path) -> None:
    """The real ``evomem-service storage``: a note written before it started (no vector) is
    embedded in the background, and the gateway's client finds it by meaning."""
    db = tmp_path / "proc.db"
    seed = SQLiteStore(db)
    old = seed.insert(NewNote(raw_text=NEW))
    seed.close()
    port = free_port()
    proc = subprocess.Popen(
        [EVOMEM_SERVICE, "storage"],
        env=_clean_env(
            EVOMEM_DB=str(db), EVOMEM_GRPC_HOST="127.0.0.1", EVOMEM_GRPC_PORT=str(port), EVOMEM_VECTORS="auto"
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    client = GrpcVectors(f"127.0.0.1:{port}", required=True, timeout_s=60)
    try:
        deadline = time.monotonic() + 60
        near: list[tuple[str, float]] = []
        while time.monotonic() < deadline:
            try:
                near = client.nearest(PARAPHRASE_QUERY, namespace="default", limit=3)
            except Unavailable as exc:  # the model loads in the background; no call waits for it
                assert MODEL_LOADING in str(exc), exc
                near = []
            if near:
                break
            time.sleep(0.2)
        assert [i for i, _ in near] == [old.id]
        assert client.name.startswith("all-MiniLM-L6-v2")
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired as exc:  # say what the process logged, and whether it exited
            logged = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
            pytest.fail(f"storage had not stopped 60 s after SIGTERM (exit: {proc.poll()}); it logged:\n{logged}")
        assert proc.returncode == 0, err
        assert "vectors all-MiniLM-L6-v2" in err
        assert "storage stopped: drained in" in err
    finally:
        client.close()
        if proc.poll() is None:
            stop_process(proc)


def test_storage_process_stopped_while_the_model_loads_exits_cleanly(tmp_path: Path) -> None:
    """SIGTERM as soon as storage is SERVING, when the model is most likely still loading: the
    process waits for the load instead of exiting under onnxruntime (which aborts, SIGABRT)."""
    port = free_port()
    proc = subprocess.Popen(
        [EVOMEM_SERVICE, "storage"],
        env=_clean_env(EVOMEM_DB=str(tmp_path / "stop.db"), EVOMEM_GRPC_HOST="127.0.0.1", EVOMEM_GRPC_PORT=str(port)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            from grpc_health.v1 import health_pb2, health_pb2_grpc

            stub = health_pb2_grpc.HealthStub(ch)
            req = health_pb2.HealthCheckRequest(service=STORAGE)
            while stub.Check(req, timeout=30, wait_for_ready=True).status != health_pb2.HealthCheckResponse.SERVING:
                time.sleep(0.01)
        time.sleep(0.05)  # the signal handler is installed right after SERVING
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            stop_process(proc)


# ============================================================================ candidates offered by the gateway

OFFER_OLD = "The payments team deploys the billing API every Tuesday after the change review."
OFFER_NEW = "The billing API now deploys on Thursdays; Tuesday releases collided with the month-end close."


def test_the_gateway_offers_candidates_with_auto_supersede_off(served: tuple[str, SQLiteStore, SemanticIndex]) -> None:
    """``build_gateway`` with auto-supersede off: the gateway runs the pair linker in-process on the
    candidates it fetched over gRPC, with storage's vector-search cosines (it holds no model), and
    lists the likely predecessor in possible_supersedes; nothing is linked, no linker service is asked."""
    from evomem.domain.linkers.pair import PairLinker

    address, backing, _ = served
    settings = Settings(storage_addr=address, redis_url="redis://127.0.0.1:1/0", auto_supersede="off")
    svc = build_gateway(settings)
    try:
        assert svc.linker is None and isinstance(svc.offerer, PairLinker) and svc.offerer.embedder is None
        for t in DISTRACTORS:
            svc.remember(t)
        old = svc.remember(OFFER_OLD).node
        out = svc.remember(OFFER_NEW)
        assert out.node.supersedes is None
        assert old.id in out.node.possible_supersedes
        assert backing.get(out.node.id).possible_supersedes == out.node.possible_supersedes  # stored by storage
        assert backing.get(old.id).status == "active"
    finally:
        close(svc)
    quiet = build_gateway(Settings(storage_addr=address, redis_url="redis://127.0.0.1:1/0", offer_candidates=False))
    try:
        assert quiet.offerer is None
    finally:
        close(quiet)
