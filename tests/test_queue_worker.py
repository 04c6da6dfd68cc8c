"""The extraction queue and its worker, with real parts: a real redis-server, real gRPC
storage (SQLite file) and cronista servers on loopback, worker subprocesses killed for real.

What must hold: a note remembered through the gateway is extracted by a worker; a worker
killed mid-way loses no job and no job takes effect twice; notes remembered while Redis is
down are still stored and are extracted once Redis is back; a job that always fails ends
in the dead-letter stream with its node marked ``failed``; ``remember`` does not wait on a
Redis that is not there.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import redis
from redis_server import RedisServer, free_port

from evomem.adapters.redis_queue import DEAD_STREAM, GROUP, STREAM, RedisJobSource, RedisQueue, connect
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.jobs import ExtractionWorker, WorkerConfig, default_consumer
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.ports import ExtractionJob, Extractor
from evomem.bootstrap.services import build_gateway, worker_service
from evomem.domain.cronista import LiteCronista
from evomem.domain.model import Extraction, ExtractionState, MemoryNode
from evomem.settings import Settings

WAIT_S = 30.0
FIELDS = ("trigger", "change", "alternatives_tried", "consequences", "summary")


def note(i: int, extra: str = "") -> str:
    return (
        f"Service {i} moved its cache from memcached to Redis because evictions hit {i} percent. "
        f"We tried larger memcached nodes first, but that did not help. {extra}"
        f"As a result p99 latency of service {i} dropped."
    )


def wait_until(
    condition: Callable[[], bool], timeout: float = WAIT_S, step: Callable[[], object] | None = None
) -> bool:
    """Poll ``condition`` until true or ``timeout``; between polls run ``step`` (or sleep briefly)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        if step is not None:
            step()
        else:
            time.sleep(0.05)
    return condition()


def assert_extracted(node: MemoryNode | None) -> None:
    """Done, with exactly the fields the lite cronista gives for its text, written once."""
    assert node is not None
    assert node.extraction_state == ExtractionState.DONE, (node.id, node.extraction_state, node.extraction_error)
    expected = LiteCronista().extract(node.raw_text)
    for name in FIELDS:
        assert getattr(node, name) == getattr(expected, name), (node.id, name)
    assert node.extractor == expected.extractor
    assert node.extraction_attempts == 1, (node.id, node.extraction_attempts)


# ----------------------------------------------------------------------------- real services


@dataclass
class Stack:
    store: SQLiteStore  # the storage server's own store: assertions read the file it writes
    storage_addr: str
    cronista_addr: str
    redis: RedisServer
    extractor: Extractor
    servers: list[Any]

    def gateway(self) -> MemoryService:
        return build_gateway(Settings(storage_addr=self.storage_addr, redis_url=self.redis.url))

    def worker_service(self, timeout_s: float | None = None) -> MemoryService:
        return worker_service(self.storage_addr, self.cronista_addr, timeout_s=timeout_s)

    def start_cronista(self) -> None:
        from evomem.entrypoints.grpc.servicers import CronistaServicer
        from evomem.v1 import cronista_pb2_grpc

        running = start_grpc(
            self.cronista_addr,
            lambda s: cronista_pb2_grpc.add_CronistaServiceServicer_to_server(CronistaServicer(self.extractor), s),
            "evomem.v1.CronistaService",
        )
        self.cronista_addr = f"127.0.0.1:{running.port}"
        self.servers.append(running)

    def stop_cronista(self) -> None:
        running = self.servers.pop()
        running.stop(grace=0)

    def worker_env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
        env.update(
            EVOMEM_REDIS_URL=self.redis.url,
            EVOMEM_STORAGE_ADDR=self.storage_addr,
            EVOMEM_CRONISTA_ADDR=self.cronista_addr,
            EVOMEM_LOG_FORMAT="text",
            EVOMEM_LOG_LEVEL="INFO",
        )
        env.update(extra)
        return env

    def nodes(self, ids: list[str]) -> dict[str, MemoryNode]:
        return self.store.get_many(ids)

    def all_done(self, ids: list[str]) -> bool:
        nodes = self.nodes(ids)
        return len(nodes) == len(ids) and all(n.extraction_state == ExtractionState.DONE for n in nodes.values())

    def close(self) -> None:
        for running in reversed(self.servers):
            running.stop(grace=0)
        self.store.close()


def start_grpc(address: str, register: Callable[[Any], None], name: str) -> Any:
    from evomem.entrypoints.grpc.server import create_server

    running = create_server(address, register, (name,), metrics=False)
    running.set_serving(True)
    return running


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.kill()


@pytest.fixture
def stack_factory(tmp_path: Path, redis_server: RedisServer) -> Iterator[Callable[[Extractor], Stack]]:
    """Storage (a SQLite file) and cronista (the given extractor) gRPC servers on loopback port 0."""
    from evomem.app.storage import LocalStorage
    from evomem.entrypoints.grpc.servicers import StorageServicer
    from evomem.v1 import storage_pb2_grpc

    stacks: list[Stack] = []

    def make(extractor: Extractor) -> Stack:
        store = SQLiteStore(tmp_path / "evomem.db")
        storage = start_grpc(
            "127.0.0.1:0",
            lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(store)), s),
            "evomem.v1.StorageService",
        )
        stack = Stack(store, f"127.0.0.1:{storage.port}", "127.0.0.1:0", redis_server, extractor, [storage])
        stack.start_cronista()
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()


@pytest.fixture
def stack(stack_factory: Callable[[Extractor], Stack]) -> Stack:
    return stack_factory(LiteCronista())


def redis_worker(
    service: MemoryService, client: redis.Redis, config: WorkerConfig, *, stop: threading.Event | None = None
) -> ExtractionWorker:
    """The worker policy over the real Redis job source (as ``bootstrap.build_worker`` wires it)."""
    source = RedisJobSource(client, config.consumer or default_consumer(), visibility_ms=config.visibility_ms)
    return ExtractionWorker(service, source, config, stop=stop)


@contextmanager
def worker_thread(worker: ExtractionWorker) -> Iterator[ExtractionWorker]:
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), name="extraction-worker", daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        stop.set()
        thread.join(timeout=15)
        assert not thread.is_alive(), "the worker did not stop after its stop event was set"


def start_worker_process(stack: Stack, log_path: Path, **env: str) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "evomem.entrypoints.cli.worker"],
            env=stack.worker_env(**env),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def pending_count(client: redis.Redis) -> int:
    return int(client.xpending(STREAM, GROUP)["pending"])


# ----------------------------------------------------------------------------- extractors


class GatedExtractor:
    """The lite cronista, except that a note containing ``GATE`` blocks until released."""

    GATE = "Gatekeeper zqx."

    def __init__(self) -> None:
        self.inner = LiteCronista()
        self.name = self.inner.name
        self.reached = threading.Event()
        self.release = threading.Event()

    def extract(self, text: str) -> Extraction:
        if self.GATE in text:
            self.reached.set()
            self.release.wait(WAIT_S * 2)
        return self.inner.extract(text)


class PoisonExtractor:
    """The lite cronista, except that it always fails on a note that says ``poison``."""

    def __init__(self) -> None:
        self.inner = LiteCronista()
        self.name = self.inner.name

    def extract(self, text: str) -> Extraction:
        if "poison" in text:
            raise RuntimeError("cannot extract this note: poison")
        return self.inner.extract(text)


# ----------------------------------------------------------------------------- tests


def test_remember_enqueues_and_worker_extracts(stack: Stack) -> None:
    gateway = stack.gateway()
    outcomes = [gateway.remember(note(i)) for i in range(20)]
    ids = [o.node.id for o in outcomes]
    for out in outcomes:
        assert out.warnings == []
        assert out.node.extraction_state == ExtractionState.PENDING
    client = connect(stack.redis.url)
    assert client.xlen(STREAM) == 20
    assert gateway.stats().extraction["pending"] == 20

    worker = redis_worker(stack.worker_service(), client, WorkerConfig(consumer="test-worker"))
    assert wait_until(lambda: stack.all_done(ids), step=worker.run_once), "the worker did not drain the queue"
    assert wait_until(lambda: pending_count(client) == 0, step=worker.run_once)

    for node in stack.nodes(ids).values():
        assert_extracted(node)
    stats = gateway.stats().extraction
    assert stats["done"] == 20 and stats["pending"] == 0 and stats["failed"] == 0
    assert client.xlen(STREAM) == 0  # finished entries are deleted
    assert worker.counts["done"] == 20 and worker.counts["dead"] == 0


def test_sweeper_skips_nodes_already_queued(stack: Stack) -> None:
    queue = RedisQueue(stack.redis.url)
    queue.enqueue(ExtractionJob("01J9ZK3V8W5Q6R7S8T9V0W1X2Y"))
    added = queue.enqueue_missing(["01J9ZK3V8W5Q6R7S8T9V0W1X2Y", "01J9ZK3V8W5Q6R7S8T9V0W1X2Z"])
    assert added == ["01J9ZK3V8W5Q6R7S8T9V0W1X2Z"]
    assert queue.enqueue_missing(["01J9ZK3V8W5Q6R7S8T9V0W1X2Z"]) == []
    entries = queue.redis.xrange(STREAM)
    assert [fields["node_id"] for _, fields in entries] == ["01J9ZK3V8W5Q6R7S8T9V0W1X2Y", "01J9ZK3V8W5Q6R7S8T9V0W1X2Z"]
    assert all(set(fields) == {"node_id", "enqueued_at"} for _, fields in entries)


def test_killed_worker_jobs_complete_exactly_once_in_effect(
    stack_factory: Callable[[Extractor], Stack], tmp_path: Path
) -> None:
    gated = GatedExtractor()
    stack = stack_factory(gated)
    gateway = stack.gateway()
    total, gate_at = 200, 100
    ids = [gateway.remember(note(i, GatedExtractor.GATE + " " if i == gate_at else "")).node.id for i in range(total)]
    client = connect(stack.redis.url)
    assert client.xlen(STREAM) == total

    env = {"EVOMEM_JOB_VISIBILITY_MS": "1000", "EVOMEM_WORKER_BATCH": "10"}
    first = start_worker_process(stack, tmp_path / "worker-a.log", EVOMEM_WORKER_CONSUMER="worker-a", **env)
    try:
        # The first worker is in the middle of a job (blocked in the cronista) when it dies.
        assert gated.reached.wait(WAIT_S), (tmp_path / "worker-a.log").read_text()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
    done_before = sum(n.extraction_state == ExtractionState.DONE for n in stack.nodes(ids).values())
    assert 0 < done_before < total
    held = client.xpending(STREAM, GROUP)
    assert held["pending"] >= 1  # delivered to the dead worker, never acknowledged
    assert {c["name"] for c in held["consumers"]} == {"worker-a"}
    gated.release.set()  # the dead worker's cronista call returns to nobody

    metrics_port = free_port()
    second = start_worker_process(
        stack,
        tmp_path / "worker-b.log",
        EVOMEM_WORKER_CONSUMER="worker-b",
        EVOMEM_METRICS_PORT=str(metrics_port),
        **env,
    )
    try:
        assert wait_until(lambda: stack.all_done(ids)), (tmp_path / "worker-b.log").read_text()
        assert wait_until(lambda: pending_count(client) == 0)
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
        second.send_signal(signal.SIGTERM)  # graceful: it stops and exits 0
        assert second.wait(timeout=20) == 0, (tmp_path / "worker-b.log").read_text()
    finally:
        if second.poll() is None:
            second.kill()

    nodes = stack.nodes(ids)
    assert len(nodes) == total
    for node in nodes.values():
        assert_extracted(node)  # each written exactly once, with the lite cronista's fields
    assert client.xlen(DEAD_STREAM) == 0
    assert client.xlen(STREAM) == 0
    counters = {
        line.split()[0]: float(line.split()[1]) for line in metrics.splitlines() if line.startswith("evomem_worker_")
    }
    assert counters["evomem_worker_jobs_reclaimed_total"] >= 1
    assert counters["evomem_worker_jobs_dead_total"] == 0


def test_redis_down_during_remembers_loses_nothing(stack: Stack) -> None:
    gateway = stack.gateway()
    client = connect(stack.redis.url)
    # A sweep only at start-up and when Redis comes back: recovery must not wait for the timer.
    worker = redis_worker(stack.worker_service(), client, WorkerConfig(consumer="w-outage", sweep_interval_s=3600))
    with worker_thread(worker):
        before = [gateway.remember(note(i)).node.id for i in range(5)]
        assert wait_until(lambda: stack.all_done(before))

        stack.redis.stop()
        during = []
        for i in range(5, 15):
            out = gateway.remember(note(i))
            assert any("queue is unavailable" in w for w in out.warnings), out.warnings
            assert out.node.extraction_state == ExtractionState.PENDING
            during.append(out.node.id)
        assert all(n.extraction_state == ExtractionState.PENDING for n in stack.nodes(during).values())

        stack.redis.start()  # same port, empty: the stream and the group are gone too
        assert wait_until(lambda: stack.all_done(during)), "the notes stored during the outage were not extracted"
        after = []
        for i in range(15, 18):
            out = gateway.remember(note(i))
            assert out.warnings == []
            after.append(out.node.id)
        assert wait_until(lambda: stack.all_done(after))
        assert wait_until(lambda: pending_count(client) == 0)

    for node in stack.nodes(before + during + after).values():
        assert_extracted(node)
    assert worker.counts["swept"] >= len(during)
    assert gateway.stats().extraction["done"] == 18


def test_poison_job_lands_in_dead_letter(
    stack_factory: Callable[[Extractor], Stack], caplog: pytest.LogCaptureFixture
) -> None:
    stack = stack_factory(PoisonExtractor())
    gateway = stack.gateway()
    poison = gateway.remember(note(1, "This note is poison for the cronista. ")).node.id
    good = gateway.remember(note(2)).node.id
    client = connect(stack.redis.url)
    config = WorkerConfig(consumer="w-poison", visibility_ms=300, max_attempts=3)
    worker = redis_worker(stack.worker_service(), client, config)

    assert wait_until(lambda: client.xlen(DEAD_STREAM) == 1, step=worker.run_once), worker.counts
    [(_, dead)] = client.xrange(DEAD_STREAM)
    assert dead["node_id"] == poison
    assert dead["attempts"] == "3"
    # The cronista's crash is logged there under a reference; the job and the node carry the
    # reference, never the exception's text (issue 34).
    ref = re.search(r"\(ref ([0-9a-f]{8})\)", dead["error"])
    assert dead["error"].startswith("EvoMemError: [internal]") and ref, dead["error"]
    assert any(ref.group(1) in r.getMessage() and "poison" in r.getMessage() for r in caplog.records)
    assert dead["consumer"] == "w-poison" and dead["message_id"]
    assert pending_count(client) == 0 and client.xlen(STREAM) == 0

    node = stack.store.get(poison)
    assert node is not None
    assert node.extraction_state == ExtractionState.FAILED
    assert node.extraction_error and ref.group(1) in node.extraction_error
    assert stack.all_done([good])
    stats = gateway.stats().extraction
    assert stats["failed"] == 1 and stats["done"] == 1 and stats["pending"] == 0
    assert worker.counts["failed"] == 3 and worker.counts["reclaimed"] == 2 and worker.counts["dead"] == 1

    # A failed node is not pending: the sweeper does not queue it again.
    assert worker.sweep() == 0


def test_job_abandoned_too_often_is_dead_lettered(stack: Stack) -> None:
    """A job whose every holder died (delivered more than max attempts) is not tried again."""
    gateway = stack.gateway()
    node_id = gateway.remember(note(3)).node.id
    client = connect(stack.redis.url)
    client.xgroup_create(STREAM, GROUP, id="0")
    client.xreadgroup(GROUP, "ghost", {STREAM: ">"}, count=1)  # delivery 1
    for _ in range(3):  # deliveries 2..4, each to a consumer that then "dies"
        client.xautoclaim(STREAM, GROUP, "ghost", min_idle_time=0)

    config = WorkerConfig(consumer="w-ghost", max_attempts=3, visibility_ms=1)
    worker = redis_worker(stack.worker_service(), client, config)
    assert wait_until(lambda: client.xlen(DEAD_STREAM) == 1, step=worker.run_once)
    [(_, dead)] = client.xrange(DEAD_STREAM)
    assert dead["node_id"] == node_id and int(dead["attempts"]) > 3
    node = stack.store.get(node_id)
    assert node is not None and node.extraction_state == ExtractionState.FAILED
    assert "delivered" in (node.extraction_error or "")


def test_enqueue_fails_fast_when_redis_is_absent(tmp_path: Path) -> None:
    port = free_port()  # nothing listens here
    queue = RedisQueue(f"redis://127.0.0.1:{port}/0")
    with pytest.raises(redis.ConnectionError):
        queue.enqueue(ExtractionJob("01J9ZK3V8W5Q6R7S8T9V0W1X2Y"))

    # Through the service: the note is stored, pending, and the caller gets a warning.
    store = SQLiteStore(tmp_path / "evomem.db")
    try:
        service = MemoryService.local(store, queue=queue, config=ServiceConfig(extract_inline=False))
        out = service.remember(note(1))
        assert any("queue is unavailable" in w for w in out.warnings)
        assert store.get(out.node.id).extraction_state == ExtractionState.PENDING  # type: ignore[union-attr]
        assert store.pending_extractions() == [out.node.id]
    finally:
        store.close()


@pytest.mark.timeout(30)
def test_enqueue_gives_up_on_a_redis_that_never_answers() -> None:
    """A port that accepts connections but never replies: the socket timeout ends the call."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        queue = RedisQueue(f"redis://127.0.0.1:{silent.getsockname()[1]}/0")
        with pytest.raises((redis.TimeoutError, redis.ConnectionError)):
            queue.enqueue(ExtractionJob("01J9ZK3V8W5Q6R7S8T9V0W1X2Y"))


def test_cronista_outage_uses_up_no_attempts(stack: Stack) -> None:
    """While the cronista is down the job stays with a worker (renewed, not re-delivered),
    even with a second worker watching for abandoned jobs; it is done once the cronista is back."""
    gateway = stack.gateway()
    client = connect(stack.redis.url)
    stack.stop_cronista()
    node_id = gateway.remember(note(4)).node.id
    # Renewed every visibility / 3: 1.5 s leaves a second of slack before a renewal is late (at
    # 300 ms, a renewal 200 ms late on a loaded 2-core CI machine let the second worker reclaim it).
    config = WorkerConfig(visibility_ms=1500, max_attempts=2)
    first = redis_worker(stack.worker_service(timeout_s=0.5), client, replace(config, consumer="w-one"))
    second = redis_worker(stack.worker_service(timeout_s=0.5), client, replace(config, consumer="w-two"))
    started = time.monotonic()
    with worker_thread(first), worker_thread(second):
        # Several failures, and two visibility timeouts at least, pass while the cronista is down.
        assert wait_until(lambda: first.counts["failed"] + second.counts["failed"] >= 3)
        time.sleep(max(0.0, started + 2 * config.visibility_ms / 1000 - time.monotonic()))
        [entry] = client.xpending_range(STREAM, GROUP, "-", "+", 10)
        assert entry["times_delivered"] == 1
        assert client.xlen(DEAD_STREAM) == 0
        assert stack.store.get(node_id).extraction_state == ExtractionState.PENDING  # type: ignore[union-attr]

        stack.start_cronista()  # on the same port
        assert wait_until(lambda: stack.all_done([node_id]))
        assert wait_until(lambda: pending_count(client) == 0)
    assert_extracted(stack.store.get(node_id))
    assert first.counts["dead"] + second.counts["dead"] == 0
    assert first.counts["reclaimed"] + second.counts["reclaimed"] == 0


def test_stopping_worker_hands_back_its_batch(stack_factory: Callable[[Extractor], Stack]) -> None:
    """Stop while a batch is in hand: the current job finishes, the rest are claimable at once."""
    stopping = threading.Event()

    class StopAfterOne(PoisonExtractor):
        def extract(self, text: str) -> Extraction:
            stopping.set()  # the stop arrives while the first job of the batch runs
            return super().extract(text)

    stack = stack_factory(StopAfterOne())
    gateway = stack.gateway()
    ids = [gateway.remember(note(i)).node.id for i in range(5)]
    client = connect(stack.redis.url)
    config = WorkerConfig(visibility_ms=60_000, batch=5, sweep_interval_s=3600)
    worker = redis_worker(stack.worker_service(), client, replace(config, consumer="w-stopping"), stop=stopping)
    assert worker.run_once() == 1
    assert sum(n.extraction_state == ExtractionState.DONE for n in stack.nodes(ids).values()) == 1
    released = client.xpending_range(STREAM, GROUP, "-", "+", 10)
    assert len(released) == 4
    assert all(e["times_delivered"] == 1 and e["time_since_delivered"] >= 60_000 for e in released)

    # Another worker takes them over on its first pass, long before the visibility timeout.
    other = redis_worker(stack.worker_service(), client, replace(config, consumer="w-other"))
    other.run_once()
    assert other.counts["reclaimed"] == 4
    assert wait_until(lambda: stack.all_done(ids), step=other.run_once)
    for node in stack.nodes(ids).values():
        assert_extracted(node)
