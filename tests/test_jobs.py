"""The worker's job-settling policy (``evomem.app.jobs``) without Redis: a fake ``JobSource``.

The store (a real SQLite file) and the cronista (the real lite one, or a failing wrapper)
are real; only the queue is an in-memory fake that records what the policy asked of it.
The same policy over a real Redis is tested in ``test_queue_worker.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.jobs import ExtractionWorker, WorkerConfig
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.ports import ClaimedJob, JobSource, QueueLost, QueueUnavailable
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import Unavailable
from evomem.domain.model import Extraction, ExtractionState, NewNote

TEXT = "We moved the ledger from MySQL to Postgres because replication lag hit 30 seconds."


@dataclass
class FakeJobSource:
    """In memory: ``ready`` jobs are read once, ``idle`` ones are reclaimed; every call is recorded."""

    consumer: str = "fake-1"
    ready: list[ClaimedJob] = field(default_factory=list)
    idle: list[ClaimedJob] = field(default_factory=list)
    acked: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    renewed: list[str] = field(default_factory=list)
    dead: list[tuple[ClaimedJob, str]] = field(default_factory=list)
    enqueued: list[tuple[list[str], int]] = field(default_factory=list)
    prepared: int = 0
    pings: int = 0
    down: BaseException | None = None  # raised by every call while set

    def _check(self) -> None:
        if self.down is not None:
            raise self.down

    def prepare(self) -> None:
        self._check()
        self.prepared += 1

    def ping(self) -> None:
        self.pings += 1
        self._check()

    def read(self, count: int, block_ms: int) -> list[ClaimedJob]:
        self._check()
        jobs, self.ready = self.ready[:count], self.ready[count:]
        return jobs

    def reclaim(self, min_idle_ms: int, count: int) -> tuple[list[ClaimedJob], bool]:
        self._check()
        jobs, self.idle = self.idle[:count], self.idle[count:]
        return jobs, not self.idle

    def ack(self, job_id: str) -> None:
        self._check()
        self.acked.append(job_id)

    def release(self, job_ids: Sequence[str]) -> None:
        self.released.extend(job_ids)

    def renew(self, job_id: str) -> None:
        self.renewed.append(job_id)

    def dead_letter(self, job: ClaimedJob, error: str) -> None:
        self._check()
        self.dead.append((job, error))

    def enqueue_missing(self, node_ids: Iterable[str], *, marker_ttl_s: int) -> list[str]:
        self._check()
        ids = list(node_ids)
        self.enqueued.append((ids, marker_ttl_s))
        return ids

    def forget_stale_consumers(self) -> None:
        self._check()


class FailingCronista:
    """The lite cronista, except that it raises ``error`` on a note containing ``poison``,
    and raises ``Unavailable`` on everything (the probe included) while ``outage`` is set."""

    def __init__(self, error: Exception | None = None) -> None:
        self.inner = LiteCronista()
        self.name = self.inner.name
        self.error = error or RuntimeError("cannot extract this note: poison")
        self.outage = threading.Event()
        self.calls = 0

    def extract(self, text: str) -> Extraction:
        self.calls += 1
        if self.outage.is_set():
            raise Unavailable("the cronista service is unavailable (UNAVAILABLE): connection refused")
        if "poison" in text:
            raise self.error
        return self.inner.extract(text)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "jobs.db")
    yield s
    s.close()


def make(
    store: SQLiteStore, extractor: object | None = None, **config: object
) -> tuple[ExtractionWorker, FakeJobSource]:
    service = MemoryService.local(
        store, extractor=extractor or LiteCronista(), config=ServiceConfig(extract_inline=False)
    )
    source = FakeJobSource()
    assert isinstance(source, JobSource)
    worker = ExtractionWorker(service, source, WorkerConfig(**{"sweep_interval_s": 3600, **config}))  # type: ignore[arg-type]
    return worker, source


def pending(store: SQLiteStore, text: str = TEXT) -> str:
    return store.insert(NewNote(raw_text=text)).id


def test_a_job_is_extracted_then_acknowledged(store: SQLiteStore) -> None:
    worker, source = make(store)
    node_id = pending(store)
    source.ready = [ClaimedJob("1-0", node_id, 1)]
    assert worker.run_once() == 1
    assert source.acked == ["1-0"] and source.dead == []
    node = store.get(node_id)
    assert node is not None and node.extraction_state == ExtractionState.DONE
    assert node.extraction_attempts == 1
    assert worker.counts["done"] == 1


def test_a_job_delivered_twice_has_its_effect_once(store: SQLiteStore) -> None:
    worker, source = make(store)
    node_id = pending(store)
    source.ready = [ClaimedJob("1-0", node_id, 1), ClaimedJob("2-0", node_id, 1)]
    assert worker.run_once() == 2
    assert source.acked == ["1-0", "2-0"]
    node = store.get(node_id)
    assert node is not None and node.extraction_attempts == 1


def test_a_malformed_job_is_dead_lettered(store: SQLiteStore) -> None:
    worker, source = make(store)
    source.ready = [ClaimedJob("1-0", "", 1)]
    worker.run_once()
    assert [(j.id, e) for j, e in source.dead] == [("1-0", "malformed job: no node_id")]
    assert worker.counts["dead"] == 1


def test_a_failing_job_is_retried_then_dead_lettered_with_its_node_failed(store: SQLiteStore) -> None:
    worker, source = make(store, FailingCronista(), max_attempts=3)
    node_id = pending(store, "poison: " + TEXT)
    for attempt in (1, 2):
        source.ready = [ClaimedJob("1-0", node_id, attempt)]
        worker.run_once()
        assert source.dead == [] and source.acked == []  # left pending: retried after the timeout
        node = store.get(node_id)
        assert node is not None and node.extraction_state != ExtractionState.FAILED
    source.idle = [ClaimedJob("1-0", node_id, 3)]  # reclaimed on its last attempt
    assert worker.reclaim() == 1
    [(job, error)] = source.dead
    assert (job.id, job.deliveries) == ("1-0", 3)
    assert error == "RuntimeError: cannot extract this note: poison"
    node = store.get(node_id)
    assert node is not None and node.extraction_state == ExtractionState.FAILED
    assert node.extraction_error == "gave up after 3 attempt(s): RuntimeError: cannot extract this note: poison"
    assert worker.counts == {"done": 0, "failed": 3, "dead": 1, "reclaimed": 1, "swept": 1}  # swept at start-up


def test_a_job_delivered_too_often_is_dead_lettered_without_running(store: SQLiteStore) -> None:
    cronista = FailingCronista()
    worker, source = make(store, cronista, max_attempts=2)
    node_id = pending(store)
    source.idle = [ClaimedJob("1-0", node_id, 3)]
    worker.run_once()
    [(_, error)] = source.dead
    assert error.startswith("delivered 3 times without being acknowledged")
    assert cronista.calls == 0


def test_a_duplicate_of_a_finished_job_is_acknowledged_not_dead_lettered(store: SQLiteStore) -> None:
    worker, source = make(store, max_attempts=1)
    node_id = pending(store)
    source.ready = [ClaimedJob("1-0", node_id, 1)]
    worker.run_once()
    source.idle = [ClaimedJob("2-0", node_id, 5)]  # found with too many deliveries, but the node is done
    assert worker.reclaim() == 1
    assert source.dead == [] and source.acked == ["1-0", "2-0"]


def test_a_node_that_cannot_be_marked_failed_keeps_its_job(store: SQLiteStore, tmp_path: Path) -> None:
    worker, source = make(store, FailingCronista(), max_attempts=1)
    node_id = pending(store, "poison: " + TEXT)
    store.close()  # storage gone: the node cannot be marked, so the job is not dropped
    source.ready = [ClaimedJob("1-0", node_id, 1)]
    worker.run_once()
    assert source.dead == [] and source.acked == []


def test_a_timeout_with_dependencies_up_counts_as_an_attempt(store: SQLiteStore) -> None:
    timeout = Unavailable("the cronista service is unavailable (DEADLINE_EXCEEDED): slow note")
    worker, source = make(store, FailingCronista(timeout), max_attempts=1)
    node_id = pending(store, "poison: " + TEXT)
    source.ready = [ClaimedJob("1-0", node_id, 1)]
    worker.run_once()  # the probe answers: the job is at fault, its only attempt is used
    [(_, error)] = source.dead
    assert "DEADLINE_EXCEEDED" in error


def test_an_outage_uses_no_attempt_and_keeps_the_claim(store: SQLiteStore) -> None:
    cronista = FailingCronista()
    worker, source = make(store, cronista, max_attempts=1)
    node_id = pending(store)
    cronista.outage.set()
    threading.Timer(1.2, cronista.outage.clear).start()  # back after about two back-offs
    source.ready = [ClaimedJob("1-0", node_id, 1)]
    worker.run_once()
    assert source.acked == ["1-0"] and source.dead == []  # retried until it worked, attempt not spent
    assert source.renewed.count("1-0") >= 2  # the claim was renewed while waiting
    node = store.get(node_id)
    assert node is not None and node.extraction_state == ExtractionState.DONE


def test_an_outage_ending_between_a_try_and_the_probe_uses_no_attempt(store: SQLiteStore) -> None:
    """The cronista comes back just after failing the job's try: the probe that follows
    answers, yet the outage failed the try. Retried at once, it is not counted against the job."""

    class BackAfterThirdCall(FailingCronista):
        def extract(self, text: str) -> Extraction:
            try:
                return super().extract(text)
            finally:
                if self.calls == 3:  # the job's try, the probe, the job's second try
                    self.outage.clear()

    cronista = BackAfterThirdCall()
    worker, source = make(store, cronista, max_attempts=1)
    node_id = pending(store)
    cronista.outage.set()
    source.ready = [ClaimedJob("1-0", node_id, 1)]
    worker.run_once()
    assert source.dead == [] and source.acked == ["1-0"]
    assert cronista.calls == 5  # the second try's probe answered; the third try worked
    node = store.get(node_id)
    assert node is not None and node.extraction_state == ExtractionState.DONE


def test_stopping_during_an_outage_hands_the_job_back(store: SQLiteStore) -> None:
    cronista = FailingCronista()
    worker, source = make(store, cronista)
    node_id = pending(store)
    cronista.outage.set()
    threading.Timer(0.3, worker.stop.set).start()
    source.ready = [ClaimedJob("1-0", node_id, 1)]
    worker.run_once()
    assert source.released == ["1-0"] and source.acked == [] and source.dead == []


def test_stopping_mid_batch_hands_the_rest_back(store: SQLiteStore) -> None:
    class StopAfterFirst(LiteCronista):
        def extract(self, text: str) -> Extraction:
            worker.stop.set()
            return super().extract(text)

    worker, source = make(store, StopAfterFirst())
    ids = [pending(store, f"{TEXT} ({i})") for i in range(3)]
    source.ready = [ClaimedJob(f"{i}-0", node_id, 1) for i, node_id in enumerate(ids)]
    assert worker.run_once() == 1
    assert source.acked == ["0-0"] and source.released == ["1-0", "2-0"]


def test_the_sweeper_enqueues_pending_nodes_once_per_interval(store: SQLiteStore) -> None:
    worker, source = make(store, visibility_ms=10_000, max_attempts=2)
    ids = [pending(store, f"{TEXT} ({i})") for i in range(3)]
    worker.run_once()  # at start-up
    worker.run_once()  # not due again
    assert source.enqueued == [(ids, 60)]  # marker ttl: max(60, 10 s x 3 attempts)
    assert worker.counts["swept"] == 3


def test_a_sweep_with_storage_down_is_skipped(store: SQLiteStore) -> None:
    worker, source = make(store)
    store.close()
    assert worker.sweep() == 0
    assert source.enqueued == []


def test_queue_down_backs_off_then_sweeps_when_it_is_back(store: SQLiteStore) -> None:
    worker, source = make(store)
    pending(store)
    source.down = QueueUnavailable("ConnectionError: connection refused")
    threading.Timer(0.1, worker.stop.set).start()  # cut the back-off wait short
    assert worker.run_once() == 0
    assert source.prepared == 0
    worker.stop.clear()
    source.down = None
    worker.run_once()
    assert source.pings == 1  # it checked the queue was back
    assert source.prepared == 1
    assert len(source.enqueued) == 1  # and swept at once


def test_a_lost_queue_is_prepared_again_and_swept(store: SQLiteStore) -> None:
    worker, source = make(store)
    worker.run_once()
    assert (source.prepared, len(source.enqueued)) == (1, 1)
    source.down = QueueLost("NOGROUP No such key 'evomem:extract'")
    assert worker.run_once() == 0
    source.down = None
    worker.run_once()
    assert (source.prepared, len(source.enqueued)) == (2, 2)
