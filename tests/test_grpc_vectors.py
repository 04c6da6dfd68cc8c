"""Hybrid recall in the multi-service wiring: the vectors live in storage.

Storage owns the SQLite file and the embedding model: it embeds a note in the call that stores
it (RememberNote), searches by meaning in the calls that read (PrepareRemember's candidates,
RecallNodes), and the gateway holds no model. One suite runs the same assertions on the embedded
service (``MemoryService.local`` over ``SQLiteStore`` and ``SemanticIndex``) and on the gateway's
(``MemoryService(GrpcStorage)`` talking to a real storage server on 127.0.0.1 over the same kind
of file); the ``Vectors`` port itself (``SemanticIndex``) is checked in process.

A storage service without vectors recalls by BM25: a gateway with EVOMEM_VECTORS=on is told why
(``vector_problem``: logged, said in recall's notes, and remember warns); with ``auto`` it is quiet.

Real parts throughout: SQLite files, gRPC servers on loopback, the offline ONNX model (loaded
once per module).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import grpc
import pytest
from procutil import free_port, stop_process

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.adapters.models.embedding import OnnxEmbedder
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.adapters.vectors.index import VectorIndex
from evomem.adapters.vectors.semantic import SemanticIndex
from evomem.app.background import start_background
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.ports import Vectors
from evomem.app.storage import VECTORS_OFF, LocalStorage
from evomem.bootstrap import vectors as bootstrap
from evomem.bootstrap.services import build_gateway
from evomem.bootstrap.vectors import VECTOR_MIN_SIMILARITY, vectors_problem
from evomem.domain import text as textrules
from evomem.domain.errors import MODEL_LOADING, InvalidArgument
from evomem.domain.model import NewNote
from evomem.domain.recall import RecallAnswer, RecallQuery
from evomem.domain.remember import ContextQuery
from evomem.entrypoints.grpc.server import RunningServer, create_server
from evomem.entrypoints.grpc.servicers import MAX_NEAREST, StorageServicer
from evomem.entrypoints.mcp import gateway
from evomem.settings import Settings, SettingsError
from evomem.v1 import storage_pb2_grpc

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
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(
            StorageServicer(LocalStorage(store, vectors)), s
        ),
        (STORAGE,),
        metrics=False,
    )
    running.set_serving(True)
    return running


def gateway_service(address: str, *, required: bool = True) -> MemoryService:
    """The gateway's shape (``build_gateway`` with EVOMEM_VECTORS on, or ``auto``) without the
    Redis queue: extraction stays pending."""
    return MemoryService(
        GrpcStorage(address, vectors=True),
        extractor=None,
        config=ServiceConfig(extract_inline=False, vectors=True, vectors_required=required),
    )


@dataclass
class VectorWiring:
    kind: str
    service: MemoryService  # what the test talks to: remember, recall, forget
    backing: SQLiteStore  # the file behind it
    index: SemanticIndex  # the file's vectors, read directly


@pytest.fixture(params=["embedded", "gateway"])
def wiring(request: pytest.FixtureRequest, tmp_path: Path, embedder: OnnxEmbedder) -> Iterator[VectorWiring]:
    backing = SQLiteStore(tmp_path / "vectors.db")
    index = semantic(backing, embedder)
    closers: list[Callable[[], object]] = [backing.close, index.close]
    try:
        if request.param == "embedded":
            yield VectorWiring("embedded", MemoryService.local(backing, vectors=index), backing, index)
            return
        running = serve_storage(backing, index)
        closers.insert(0, lambda: running.stop(0))
        service = gateway_service(f"127.0.0.1:{running.port}")
        closers.insert(0, service.close)
        yield VectorWiring("gateway", service, backing, index)
    finally:
        for close in closers:
            close()


def heads(out: object) -> list[str]:
    return [e.head.raw_text for e, _ in out.results]  # type: ignore[attr-defined]


def recall(text: str, *, limit: int = 50, vector_limit: int = 20, **kw: object) -> RecallQuery:
    """Storage's side of a hybrid recall of ``text``, as the service sizes it for k=3."""
    terms = tuple(textrules.query_terms(text))
    query = RecallQuery(terms=terms, text=text, namespace="default", k=3, limit=limit, vector_limit=vector_limit)
    return replace(query, **kw)


def nearest(service: MemoryService, text: str, namespace: str = "default", limit: int = 3) -> dict[str, float]:
    """The active notes nearest ``text`` with their cosines, as remember reads them for a linker."""
    query = ContextQuery(text=text, namespace=namespace, candidates=True, limit=0, vector_limit=limit)
    return service.storage.remember_context(query).similarities


# ============================================================================ the contract


def test_storage_says_who_holds_the_vectors(wiring: VectorWiring, embedder: OnnxEmbedder) -> None:
    assert wiring.index.name == embedder.name
    assert wiring.service.storage.model_state() == ("loaded" if wiring.kind == "embedded" else "remote")


def test_a_paraphrase_finds_a_note_that_shares_no_word(wiring: VectorWiring) -> None:
    svc = wiring.service
    for t in DISTRACTORS:
        svc.remember(t)
    new = svc.remember(NEW).node
    # The premise: full-text search cannot find it.
    terms = textrules.query_terms(PARAPHRASE_QUERY)
    assert new.id not in [h.node_id for h in wiring.backing.search(terms, namespace="default", limit=10)]
    got = svc.recall(PARAPHRASE_QUERY, k=3)
    assert heads(got)[0] == NEW and got.results[0][0].best.via == ["vector"]
    near = nearest(svc, PARAPHRASE_QUERY)
    assert max(near, key=near.__getitem__) == new.id
    assert all(VECTOR_MIN_SIMILARITY <= s <= 1.0 for s in near.values())
    assert svc.recall(PARAPHRASE_QUERY, k=3, namespace="other").results == []
    assert nearest(svc, PARAPHRASE_QUERY, namespace="other") == {}


def test_namespaces_are_apart(wiring: VectorWiring) -> None:
    mine = wiring.service.remember(NEW, namespace="team-a").node
    wiring.service.remember(NEW, namespace="team-b")
    assert [e.head.id for e, _ in wiring.service.recall(PARAPHRASE_QUERY, k=5, namespace="team-a").results] == [mine.id]
    assert list(nearest(wiring.service, PARAPHRASE_QUERY, namespace="team-a", limit=5)) == [mine.id]


def test_a_note_is_embedded_once(wiring: VectorWiring) -> None:
    """remember embeds the note it stores; a retry under its key, or a duplicate, embeds nothing."""
    svc = wiring.service
    first = svc.remember(NEW, idempotency_key="k").node
    assert wiring.index.settle()  # the index write comes after remember's answer
    assert first.id in wiring.index.index and wiring.index.index.count() == 1
    assert svc.remember(NEW, idempotency_key="k").outcome == "replayed"
    assert svc.remember(NEW).duplicate_of == first.id
    assert wiring.index.settle() and wiring.index.index.count() == 1


def test_purge_removes_a_note_from_the_search_by_meaning(wiring: VectorWiring) -> None:
    svc = wiring.service
    keep = svc.remember("Accounting data is persisted in the ledger database.").node
    gone = svc.remember(NEW).node
    assert gone.id in nearest(svc, PARAPHRASE_QUERY, limit=5)
    svc.forget(gone.id, purge=True)  # the vector goes in the purge's own transaction
    assert list(nearest(svc, PARAPHRASE_QUERY, limit=5)) == [keep.id]
    assert NEW not in heads(svc.recall(PARAPHRASE_QUERY, k=3))
    assert gone.id not in wiring.index.index
    purged = wiring.backing.get(gone.id)
    assert purged is not None and purged.purged
    wiring.index.add([purged])  # a purged node is never embedded again
    assert gone.id not in wiring.index.index
    wiring.index.remove(gone.id)  # nothing left to remove: no error


def test_recall_leaves_a_soft_forgotten_note_out_but_the_index_keeps_it(wiring: VectorWiring) -> None:
    # The Vectors port returns every version it has; recall drops forgotten ones (as BM25 does).
    node = wiring.service.remember(NEW).node
    wiring.service.forget(node.id)
    assert [i for i, _ in wiring.index.nearest(PARAPHRASE_QUERY, namespace="default", limit=5)] == [node.id]
    assert NEW not in heads(wiring.service.recall(PARAPHRASE_QUERY, k=3))


def test_the_index_adds_once_and_answers_nothing_asked(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    backing = SQLiteStore(tmp_path / "index.db")
    index = semantic(backing, embedder)
    try:
        new = backing.insert(NewNote(raw_text=NEW))
        index.add([new])
        before = index.nearest(PARAPHRASE_QUERY, namespace="default", limit=5)
        index.add([new])
        index.add([new, new])
        assert index.index.count() == 1
        assert index.nearest(PARAPHRASE_QUERY, namespace="default", limit=5) == before
        index.add([])  # nothing to do, no error
        assert index.nearest(PARAPHRASE_QUERY, namespace="default", limit=0) == []
        assert index.nearest("   ", namespace="default", limit=5) == []
    finally:
        index.close()
        backing.close()


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


def test_grpc_answers_exactly_what_storage_finds_in_process(served: tuple[str, SQLiteStore, SemanticIndex]) -> None:
    address, backing, index = served
    client = GrpcStorage(address, vectors=True)
    local = LocalStorage(backing, index)
    try:
        for t in [*DISTRACTORS, NEW]:
            backing.insert(NewNote(raw_text=t))
        assert index.backfill() == len(DISTRACTORS) + 1
        for text in (PARAPHRASE_QUERY, "which tool draws the charts", NEW):
            assert client.recall_nodes(recall(text)) == local.recall_nodes(recall(text))
            query = ContextQuery(text=text, namespace="default", candidates=True, limit=0, vector_limit=4)
            wire, here = client.remember_context(query), local.remember_context(query)
            assert wire.similarities == pytest.approx(here.similarities)  # float32 on the wire
            assert [c.id for c in wire.candidates] == [c.id for c in here.candidates]
    finally:
        client.close()


def test_the_search_by_meaning_is_bounded(served: tuple[str, SQLiteStore, SemanticIndex]) -> None:
    client = GrpcStorage(served[0], vectors=True)
    try:
        with pytest.raises(InvalidArgument, match="vector_limit"):
            client.recall_nodes(recall(NEW, vector_limit=MAX_NEAREST + 1, limit=MAX_NEAREST + 1))
        too_many = ContextQuery(text=NEW, namespace="default", candidates=True, vector_limit=MAX_NEAREST + 1)
        with pytest.raises(InvalidArgument, match="vector_limit"):
            client.remember_context(too_many)
        assert client.recall_nodes(recall(NEW, vector_limit=MAX_NEAREST, limit=MAX_NEAREST)) == RecallAnswer()
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


def test_storage_without_vectors_says_so_to_a_caller_that_requires_them(served_off: tuple[str, SQLiteStore]) -> None:
    address, backing = served_off
    backing.insert(NewNote(raw_text=NEW))
    client = GrpcStorage(address, vectors=True)
    try:
        assert client.recall_nodes(recall(NEW, vectors_required=True)).vector_problem == VECTORS_OFF
        assert client.recall_nodes(recall(NEW)).vector_problem is None  # auto: quiet
        query = ContextQuery(text=NEW, namespace="default", candidates=True, vector_limit=5, vectors_required=True)
        assert client.remember_context(query).vector_problem == VECTORS_OFF
        assert VECTORS_OFF.startswith("vectors are off on this storage service")
    finally:
        client.close()


# ============================================================================ the gateway's MemoryService


def test_gateway_recall_is_hybrid(served: tuple[str, SQLiteStore, SemanticIndex]) -> None:
    address, _, index = served
    svc = gateway_service(address)
    try:
        for t in DISTRACTORS:
            svc.remember(t)
        old = svc.remember("We keep the ledger in Postgres.").node
        out = svc.remember(NEW, supersedes=old.id)
        assert out.warnings == []
        assert index.settle()  # the index write comes after remember's answer
        assert index.index.count() == len(DISTRACTORS) + 2  # remember embedded through storage
        got = svc.recall(PARAPHRASE_QUERY, k=3)
        assert heads(got)[0] == NEW
        assert "vector" in got.results[0][0].best.via
        assert "bm25" not in got.results[0][0].best.via
        assert heads(svc.recall("Grafana", k=1)) == [DISTRACTORS[0]]  # words still count
        svc.forget(out.node.id, purge=True)
        assert NEW not in heads(svc.recall(PARAPHRASE_QUERY, k=3))
    finally:
        svc.close()


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
        if required:  # on: every call says why, and remember says the note has no vector
            assert any("vector search failed, BM25 only" in m and VECTORS_OFF in m for m in messages)
            assert any("not yet searchable by meaning" in w for w in out.warnings)
            assert len(got.notes) == 1
            assert re.fullmatch(
                re.escape("no search by meaning for this call (BM25 only): " + VECTORS_OFF) + r" \(ref [0-9a-f]{8}\)",
                got.notes[0],
            )
        else:  # auto: quiet, no warnings on the notes
            assert out.warnings == [] and got.notes == []
            assert not any("vector search failed" in m for m in messages)
    finally:
        svc.close()


@pytest.mark.parametrize(("mode", "required"), [("auto", False), ("on", True), ("off", None)])
def test_build_gateway_wires_vectors_through_storage(mode: str, required: bool | None) -> None:
    svc = build_gateway(Settings(storage_addr="127.0.0.1:1", redis_url="redis://127.0.0.1:1/0", vectors=mode))
    try:
        assert svc.vectors is None  # the gateway holds no model: storage embeds
        assert isinstance(svc.storage, GrpcStorage) and svc.storage.address == "127.0.0.1:1"
        assert svc.config.vectors is (required is not None)
        assert svc.config.vectors_required is bool(required)
        assert svc.storage.model_state() == ("off" if required is None else "remote")
    finally:
        svc.close()
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
    client = GrpcStorage(f"127.0.0.1:{port}", vectors=True, timeout_s=60)
    try:
        deadline = time.monotonic() + 60
        found: list[str] = []
        while time.monotonic() < deadline:
            answer = client.recall_nodes(recall(PARAPHRASE_QUERY, vectors_required=True))
            if answer.vector_problem is not None:  # the model loads in the background; no call waits for it
                assert MODEL_LOADING in answer.vector_problem, answer.vector_problem
            found = [e.head.id for e, _ in answer.results]
            if found:
                break
            time.sleep(0.2)
        assert found == [old.id]
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
        svc.close()
    quiet = build_gateway(Settings(storage_addr=address, redis_url="redis://127.0.0.1:1/0", offer_candidates=False))
    try:
        assert quiet.offerer is None
    finally:
        quiet.close()
