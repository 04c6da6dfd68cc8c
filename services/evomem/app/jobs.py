"""The extraction worker's policy: how a queued job is run and settled. No queue protocol here.

The queue is a ``JobSource`` (``evomem.app.ports``; on Redis Streams: ``adapters.redis_queue``).
``ExtractionWorker`` reads jobs from it, runs ``MemoryService.run_extraction(node_id)`` and
settles each job:

* Delivery is at least once; extraction is idempotent (a node already ``done`` is left
  alone), so a job delivered twice has its effect once. A job finished is acknowledged.
* A job delivered but not acknowledged for longer than the visibility timeout belongs to a
  consumer that died or failed it; any worker reclaims it (which counts a delivery). While
  a worker runs a job, a heartbeat renews its claim every third of the timeout (no delivery
  counted), so a slow job is not taken over.
* A job whose delivery count reaches ``max_attempts`` and fails again, or is found with more
  deliveries than that, is dead-lettered: the node is marked extraction ``failed`` with the
  error (visible on the node and in ``stats``), then the job is recorded as dead and
  acknowledged. When the node cannot be marked (storage down) the job stays pending and is
  dead-lettered on a later delivery: a job is never dropped without a trace.
* A failure that says a dependency is down (``Unavailable``, ``Conflict``) is not the job's
  fault when a probe (a tiny storage read and extraction) fails too: the worker keeps the
  job, backs off and tries again, renewing its claim, so an outage uses up no attempt. When
  the probe succeeds the job itself is at fault and the attempt counts.
* The sweeper lists ``storage.pending_extractions()`` every ``sweep_interval_s``, at start-up
  and right after the queue comes back (or is found empty), and enqueues the nodes that have
  no job queued. Notes stored while the queue was down are extracted this way.
* Queue down: the worker logs, backs off (0.5 s doubling to 5 s) and keeps retrying; it
  never exits for that. Stopping: it finishes the job in hand, hands the rest of its batch
  back (claimable by other workers at once, no delivery counted) and returns.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass

from evomem.app.memory import MemoryService
from evomem.app.ports import ClaimedJob, JobSource, QueueLost, QueueUnavailable
from evomem.domain.errors import Conflict, Unavailable
from evomem.domain.model import ExtractionState
from evomem.ops.runtime import metric

log = logging.getLogger("evomem.worker")

TRANSIENT = (Unavailable, Conflict)
MAX_ERROR_CHARS = 1000
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 5.0


def default_consumer() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    consumer: str = ""  # "" means hostname-pid
    visibility_ms: int = 30_000
    max_attempts: int = 5
    sweep_interval_s: float = 10.0
    sweep_batch: int = 1000
    batch: int = 10
    block_ms: int = 1000

    @property
    def reclaim_interval_s(self) -> float:
        # Look for abandoned jobs twice per visibility timeout (at most every 5 s).
        return min(self.visibility_ms / 2000, 5.0)

    @property
    def marker_ttl_s(self) -> int:
        # A swept job's "already queued" marker outlives all its retries.
        return max(60, self.visibility_ms * (self.max_attempts + 1) // 1000)


COUNTERS = {
    "done": "jobs extracted and acknowledged",
    "failed": "job attempts that raised",
    "dead": "jobs moved to the dead-letter stream",
    "reclaimed": "jobs taken over from a consumer that did not acknowledge them in time",
    "swept": "pending nodes enqueued again by the sweeper",
}


class ExtractionWorker:
    """The worker's loop. ``run_once`` is one pass (tests drive it); ``run`` loops until stopped."""

    def __init__(
        self,
        service: MemoryService,
        source: JobSource,
        config: WorkerConfig | None = None,
        *,
        stop: threading.Event | None = None,
    ) -> None:
        self.service = service
        self.source = source
        self.config = config or WorkerConfig()
        self.consumer = source.consumer
        self.stop = stop or threading.Event()
        self.counts = dict.fromkeys(COUNTERS, 0)
        self._metrics = {name: metric("counter", f"evomem_worker_jobs_{name}", text) for name, text in COUNTERS.items()}
        self._group_ready = False
        self._down_since: float | None = None
        self._backoff = BACKOFF_START_S
        self._next_sweep = 0.0  # sweep at start-up
        self._next_reclaim = 0.0
        self._current: str | None = None  # the job being handled (renewed by the heartbeat)
        self._block_ms = max(50, min(self.config.block_ms, int(self.config.reclaim_interval_s * 1000)))

    # ------------------------------------------------------------------ loop

    def run(self, stop: threading.Event | None = None) -> None:
        if stop is not None:
            self.stop = stop
        log.info("worker %s consuming extraction jobs", self.consumer)
        finished = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(finished,), name="job-heartbeat", daemon=True)
        beat.start()
        try:
            while not self.stop.is_set():
                self.run_once()
        finally:
            finished.set()
            beat.join(timeout=5)
        log.info("worker %s stopped", self.consumer)

    def _heartbeat(self, finished: threading.Event) -> None:
        """While a job runs, renew its claim every third of the visibility timeout, so a slow
        job (a large model, a dependency outage) is not taken over by another worker."""
        while not finished.wait(self.config.visibility_ms / 3000):
            current = self._current
            if current is not None:
                self.source.renew(current)

    def run_once(self) -> int:
        """One pass: sweep and reclaim when due, then read and run new jobs. Returns jobs handled.

        Never raises for the queue or a dependency being down: it logs, waits (interruptibly)
        and returns, and the next pass tries again.
        """
        try:
            return self._pass()
        except QueueLost:
            # The queue's state is gone (Redis restarted empty or was flushed). Jobs queued
            # there are lost; the sweeper puts the pending nodes back.
            log.warning("the job queue's consumer group is missing (its data was lost?); recreating it")
            self._group_ready = False
            self._next_sweep = 0.0
        except QueueUnavailable as exc:
            self._queue_failed(exc)
        return 0

    def _pass(self) -> int:
        if self._down_since is not None:
            self.source.ping()
            log.warning(
                "the job queue is back after %.1f s; sweeping pending extractions", time.monotonic() - self._down_since
            )
            self._down_since = None
            self._backoff = BACKOFF_START_S
            self._group_ready = False
            self._next_sweep = 0.0
        if not self._group_ready:
            self.source.prepare()
            self._group_ready = True
        handled = 0
        now = time.monotonic()
        if now >= self._next_sweep:
            self.sweep()
            self._next_sweep = time.monotonic() + self.config.sweep_interval_s
        if now >= self._next_reclaim and not self.stop.is_set():
            handled += self.reclaim()
        if not self.stop.is_set():
            handled += self._run_jobs(self.source.read(self.config.batch, self._block_ms))
        return handled

    def _queue_failed(self, exc: BaseException) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
            log.error("the job queue is unavailable (%s); retrying with backoff", exc)
        else:
            log.debug("the job queue is still unavailable: %s", exc)
        self.stop.wait(self._backoff)
        self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] += n
        counter = self._metrics.get(name)
        if counter is not None:
            counter.inc(n)

    # ------------------------------------------------------------------ reading

    def reclaim(self) -> int:
        """Take over jobs idle longer than the visibility timeout (from any consumer)."""
        jobs, finished = self.source.reclaim(self.config.visibility_ms, self.config.batch)
        if finished:
            self._next_reclaim = time.monotonic() + self.config.reclaim_interval_s
        if not jobs:
            return 0
        self._count("reclaimed", len(jobs))
        log.info("reclaimed %d job(s) idle for more than %d ms", len(jobs), self.config.visibility_ms)
        return self._run_jobs(jobs)

    def _run_jobs(self, jobs: list[ClaimedJob]) -> int:
        for done, job in enumerate(jobs):
            if self.stop.is_set():
                # Stopping: the job in hand is finished; hand the rest back for other workers.
                self.source.release([j.id for j in jobs[done:]])
                return done
            self.handle(job)
        return len(jobs)

    # ------------------------------------------------------------------ one job

    def handle(self, job: ClaimedJob) -> None:
        """Run one job and settle it: ack, leave for a retry, or dead-letter."""
        self._current = job.id
        try:
            self._handle(job)
        finally:
            self._current = None

    def _handle(self, job: ClaimedJob) -> None:
        node_id = job.node_id
        if not node_id:
            self.dead_letter(job, "malformed job: no node_id")
            return
        if job.deliveries > self.config.max_attempts:
            self.dead_letter(
                job,
                f"delivered {job.deliveries} times without being acknowledged "
                "(the worker handling it stopped each time)",
            )
            return
        backoff = BACKOFF_START_S
        outage = False  # a dependency was seen down while this job ran
        while True:
            try:
                self.service.run_extraction(node_id)
            except TRANSIENT as exc:
                self._count("failed")
                if self._dependencies_ok():
                    if outage:
                        # The dependency came back between this try and the probe: the
                        # outage, not the job, may have failed it. Once more, at once.
                        outage = False
                        log.info("job %s (node %s): the dependency is back; retrying now", job.id, node_id)
                        continue
                    # Storage and cronista answer other calls: this job is what fails (for
                    # example a note the cronista cannot finish in time). Count the attempt.
                    self._settle_failure(job, f"{type(exc).__name__}: {exc}")
                    return
                outage = True
                if self.stop.is_set():
                    log.warning("job %s (node %s) left for another worker: %s", job.id, node_id, exc)
                    self.source.release([job.id])
                    return
                log.warning(
                    "job %s (node %s): a dependency is unavailable, retrying in %.1f s: %s",
                    job.id,
                    node_id,
                    backoff,
                    exc,
                    extra={"node_id": node_id, "job": job.id},
                )
                self.source.renew(job.id)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                self.source.renew(job.id)
                continue
            except Exception as exc:
                self._count("failed")
                self._settle_failure(job, f"{type(exc).__name__}: {exc}")
                return
            self.source.ack(job.id)
            self._count("done")
            return

    def _settle_failure(self, job: ClaimedJob, error: str) -> None:
        """A failed attempt: dead-letter on the last one, else leave it for a retry after the timeout."""
        if job.deliveries >= self.config.max_attempts:
            self.dead_letter(job, error)
            return
        log.warning(
            "job %s (node %s) failed on attempt %d of %d, retried after %d ms: %s",
            job.id,
            job.node_id,
            job.deliveries,
            self.config.max_attempts,
            self.config.visibility_ms,
            error,
            extra={"node_id": job.node_id, "job": job.id},
        )

    def _dependencies_ok(self) -> bool:
        """Do storage and the cronista answer a small request? (Tells an outage from a bad job.)"""
        try:
            self.service.storage.pending_extractions(1)
            if self.service.extractor is not None:
                self.service.extractor.extract("Probe: we chose this because it is a health check.")
        except Exception as exc:
            log.debug("dependency probe failed: %s", exc)
            return False
        return True

    def dead_letter(self, job: ClaimedJob, error: str) -> None:
        """Mark the node failed, record the job as dead, acknowledge it.

        The node is marked first: if that fails (storage down) the job stays pending and is
        dead-lettered on a later delivery, so a job is never dropped without a trace.
        """
        error = error[:MAX_ERROR_CHARS]
        node_id = job.node_id
        if node_id:
            try:
                node = self.service.storage.get(node_id)
                if node is not None and node.extraction_state == ExtractionState.DONE:
                    # A duplicate of a job that did succeed: nothing to report.
                    self.source.ack(job.id)
                    self._count("done")
                    return
                if node is not None and not node.purged:
                    self.service.storage.set_extraction(
                        node_id,
                        None,
                        ExtractionState.FAILED,
                        error=f"gave up after {job.deliveries} attempt(s): {error}"[:MAX_ERROR_CHARS],
                    )
            except Exception as exc:
                log.warning("job %s (node %s): could not mark it failed, kept for later: %s", job.id, node_id, exc)
                return
        self.source.dead_letter(job, error)
        self._count("dead")
        log.error(
            "job %s (node %s) dead-lettered after %d attempt(s): %s",
            job.id,
            node_id,
            job.deliveries,
            error,
            extra={"node_id": node_id, "job": job.id},
        )

    # ------------------------------------------------------------------ sweeper

    def sweep(self) -> int:
        """Enqueue pending nodes that have no job queued. Storage down: log, try next time."""
        try:
            pending = self.service.storage.pending_extractions(self.config.sweep_batch)
        except Exception as exc:
            log.warning("sweep skipped: could not list pending extractions: %s", exc)
            return 0
        added = self.source.enqueue_missing(pending, marker_ttl_s=self.config.marker_ttl_s)
        if added:
            self._count("swept", len(added))
            log.info("sweeper enqueued %d pending node(s) of %d", len(added), len(pending))
        self.source.forget_stale_consumers()
        return len(added)
