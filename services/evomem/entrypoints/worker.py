"""``evomem-service worker``: runs the extraction jobs the gateway queues on Redis.

    python -m evomem.entrypoints.worker        (the same as ``evomem-service worker``)

Environment: EVOMEM_REDIS_URL, EVOMEM_STORAGE_ADDR, EVOMEM_CRONISTA_ADDR (required);
EVOMEM_JOB_VISIBILITY_MS (30000), EVOMEM_JOB_MAX_ATTEMPTS (5), EVOMEM_SWEEP_INTERVAL_S (10),
EVOMEM_SWEEP_BATCH (1000), EVOMEM_WORKER_BATCH (10), EVOMEM_WORKER_CONSUMER (hostname-pid),
EVOMEM_METRICS_PORT (off).

How a job moves (all of it in ``ExtractionWorker``; ``main`` only wires and waits):

* The worker is one consumer (``hostname-pid``) of the group ``workers`` on the stream
  ``evomem:extract``. It reads new entries with XREADGROUP (blocking ~1 s), calls
  ``MemoryService.run_extraction(node_id)`` and then XACKs (and XDELs) the entry. Delivery
  is at least once; extraction is idempotent (a node already ``done`` is left alone), so a
  job delivered twice has its effect once.
* An entry delivered but not acknowledged for longer than the visibility timeout belongs
  to a consumer that died or failed it; any worker takes it over with XAUTOCLAIM, which
  counts the delivery. While a worker runs a job, a heartbeat renews its claim every third
  of the timeout (XCLAIM ... JUSTID: no delivery counted), so a slow job is not taken over.
* A job whose delivery count reaches EVOMEM_JOB_MAX_ATTEMPTS and fails again, or is found
  with more deliveries than that, is dead-lettered: the node is marked extraction
  ``failed`` with the error (visible on the node and in ``stats``), an entry goes to
  ``evomem:extract:dead`` (node_id, error, attempts, message_id, consumer, failed_at) and
  the original is acknowledged.
* A failure that says a dependency is down (``Unavailable``: storage or cronista not
  answering) is not the job's fault when a probe (a tiny storage read and extraction) fails
  too: the worker keeps the job, backs off and tries again, renewing its claim, so no
  attempt is used up by an outage. When the probe succeeds the job itself is at fault (say,
  a note the cronista cannot finish in time) and the attempt counts.
* The sweeper lists ``store.pending_extractions()`` every EVOMEM_SWEEP_INTERVAL_S, at
  start-up and right after Redis comes back (or is found empty), and enqueues the nodes
  that have no job queued (``RedisQueue.enqueue_missing``). Notes stored while Redis was
  down are extracted this way.
* Redis down: the worker logs, backs off (0.5 s doubling to 5 s) and keeps retrying; it
  never exits for that. SIGTERM/SIGINT: it finishes the job in hand, hands the rest of its
  batch back (claimable by other workers at once, no delivery counted) and stops.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from evomem.adapters.redis_queue import DEAD_STREAM, GROUP, STREAM, RedisQueue, connect, now_ms
from evomem.domain.errors import Conflict, Unavailable
from evomem.domain.model import ExtractionState
from evomem.service import MemoryService, ServiceConfig

log = logging.getLogger("evomem.worker")

REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)
TRANSIENT = (Unavailable, Conflict)
MAX_ERROR_CHARS = 1000
DEAD_MAXLEN = 100_000
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 5.0
STALE_CONSUMER_IDLE_MS = 3_600_000


def default_consumer() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    stream: str = STREAM
    dead_stream: str = DEAD_STREAM
    group: str = GROUP
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
_PROMETHEUS: dict[str, Any] | None = None


def prometheus_counters() -> dict[str, Any]:
    """``evomem_worker_jobs_<name>_total``, registered once per process (tests build many workers)."""
    global _PROMETHEUS
    if _PROMETHEUS is None:
        try:
            from prometheus_client import Counter
        except ImportError:  # pragma: no cover - the services extra installs it
            _PROMETHEUS = {}
        else:
            _PROMETHEUS = {name: Counter(f"evomem_worker_jobs_{name}", text) for name, text in COUNTERS.items()}
    return _PROMETHEUS


class ExtractionWorker:
    """The worker's loop. ``run_once`` is one pass (tests drive it); ``run`` loops until stopped."""

    def __init__(
        self,
        service: MemoryService,
        client: redis.Redis,
        config: WorkerConfig | None = None,
        *,
        stop: threading.Event | None = None,
    ) -> None:
        self.service = service
        self.redis = client
        self.config = config or WorkerConfig()
        self.consumer = self.config.consumer or default_consumer()
        self.queue = RedisQueue(client, stream=self.config.stream, marker_ttl_s=self.config.marker_ttl_s)
        self.stop = stop or threading.Event()
        self.counts = dict.fromkeys(COUNTERS, 0)
        self._metrics = prometheus_counters()
        self._group_ready = False
        self._redis_down_since: float | None = None
        self._backoff = BACKOFF_START_S
        self._next_sweep = 0.0  # sweep at start-up
        self._next_reclaim = 0.0
        self._reclaim_cursor = "0-0"
        self._current: str | None = None  # the entry being handled (renewed by the heartbeat)
        self._block_ms = max(50, min(self.config.block_ms, int(self.config.reclaim_interval_s * 1000)))

    # ------------------------------------------------------------------ loop

    def run(self, stop: threading.Event | None = None) -> None:
        if stop is not None:
            self.stop = stop
        log.info("worker %s consuming %s as group %s", self.consumer, self.config.stream, self.config.group)
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
                self._renew(current)

    def run_once(self) -> int:
        """One pass: sweep and reclaim when due, then read and run new jobs. Returns jobs handled.

        Never raises for Redis or a dependency being down: it logs, waits (interruptibly)
        and returns, and the next pass tries again.
        """
        try:
            return self._pass()
        except REDIS_DOWN as exc:
            self._redis_failed(exc)
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                self._redis_failed(exc)  # OOM, READONLY, ...: Redis cannot serve us now
                return 0
            # The stream or group is gone: Redis restarted empty or was flushed. Jobs queued
            # there are lost; the sweeper puts the pending nodes back.
            log.warning("consumer group %s is missing (Redis lost its data?); recreating it", self.config.group)
            self._group_ready = False
            self._next_sweep = 0.0
        except redis.RedisError as exc:
            self._redis_failed(exc)
        return 0

    def _pass(self) -> int:
        if self._redis_down_since is not None:
            self.redis.ping()
            down_s = time.monotonic() - self._redis_down_since
            log.warning("redis is back after %.1f s; sweeping pending extractions", down_s)
            self._redis_down_since = None
            self._backoff = BACKOFF_START_S
            self._group_ready = False
            self._next_sweep = 0.0
        if not self._group_ready:
            self.ensure_group()
        handled = 0
        now = time.monotonic()
        if now >= self._next_sweep:
            self.sweep()
            self._next_sweep = time.monotonic() + self.config.sweep_interval_s
        if now >= self._next_reclaim and not self.stop.is_set():
            handled += self.reclaim()
        if not self.stop.is_set():
            handled += self.read_new()
        return handled

    def _redis_failed(self, exc: BaseException) -> None:
        if self._redis_down_since is None:
            self._redis_down_since = time.monotonic()
            log.error("redis is unavailable (%s); retrying with backoff", exc)
        else:
            log.debug("redis still unavailable: %s", exc)
        self.stop.wait(self._backoff)
        self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)

    # ------------------------------------------------------------------ redis plumbing

    def ensure_group(self) -> None:
        try:
            # From the start of the stream: jobs queued before any worker existed are read too.
            self.redis.xgroup_create(self.config.stream, self.config.group, id="0", mkstream=True)
            log.info("created consumer group %s on %s", self.config.group, self.config.stream)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] += n
        counter = self._metrics.get(name)
        if counter is not None:
            counter.inc(n)

    def _ack(self, message_id: str) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.xack(self.config.stream, self.config.group, message_id)
        pipe.xdel(self.config.stream, message_id)
        pipe.execute()

    def _release(self, message_ids: list[str]) -> None:
        """Make delivered entries claimable by other workers now (idle = the visibility timeout),
        without counting a delivery: the graceful-stop counterpart of a crash."""
        if not message_ids:
            return
        try:
            self.redis.xclaim(
                self.config.stream,
                self.config.group,
                self.consumer,
                0,
                message_ids,
                idle=self.config.visibility_ms,
                justid=True,
            )
        except redis.RedisError as exc:
            log.debug("could not release %s: %s", message_ids, exc)

    def _renew(self, message_id: str) -> None:
        """Reset the entry's idle time without counting a delivery (XCLAIM ... JUSTID)."""
        try:
            self.redis.xclaim(self.config.stream, self.config.group, self.consumer, 0, [message_id], justid=True)
        except redis.RedisError as exc:
            log.debug("could not renew %s: %s", message_id, exc)

    # ------------------------------------------------------------------ reading

    def read_new(self) -> int:
        response = self.redis.xreadgroup(
            self.config.group,
            self.consumer,
            {self.config.stream: ">"},
            count=self.config.batch,
            block=self._block_ms,
        )
        return self._run_jobs([(message_id, fields, 1) for message_id, fields in _entries(response)])

    def reclaim(self) -> int:
        """Take over entries idle longer than the visibility timeout (from any consumer)."""
        next_cursor, claimed, *_ = self.redis.xautoclaim(
            self.config.stream,
            self.config.group,
            self.consumer,
            min_idle_time=self.config.visibility_ms,
            start_id=self._reclaim_cursor,
            count=self.config.batch,
        )
        claimed = [(mid, fields) for mid, fields in claimed if fields is not None]
        if next_cursor in ("0-0", b"0-0"):
            self._reclaim_cursor = "0-0"
            self._next_reclaim = time.monotonic() + self.config.reclaim_interval_s
        else:
            self._reclaim_cursor = next_cursor  # more to scan: continue on the next pass
        if not claimed:
            return 0
        deliveries = self._deliveries([mid for mid, _ in claimed])
        # An entry no longer pending was acknowledged by another worker meanwhile: not ours.
        jobs = [(mid, fields, deliveries[mid]) for mid, fields in claimed if mid in deliveries]
        self._count("reclaimed", len(jobs))
        log.info("reclaimed %d job(s) idle for more than %d ms", len(jobs), self.config.visibility_ms)
        return self._run_jobs(jobs)

    def _run_jobs(self, jobs: list[tuple[str, dict[str, str], int]]) -> int:
        for done, (message_id, fields, deliveries) in enumerate(jobs):
            if self.stop.is_set():
                # Stopping: the job in hand is finished; hand the rest back for other workers.
                self._release([mid for mid, _, _ in jobs[done:]])
                return done
            self.handle(message_id, fields, deliveries=deliveries)
        return len(jobs)

    def _deliveries(self, message_ids: list[str]) -> dict[str, int]:
        pipe = self.redis.pipeline(transaction=False)
        for mid in message_ids:
            pipe.xpending_range(self.config.stream, self.config.group, min=mid, max=mid, count=1)
        out: dict[str, int] = {}
        for rows in pipe.execute():
            for row in rows:
                out[str(row["message_id"])] = int(row["times_delivered"])
        return out

    # ------------------------------------------------------------------ one job

    def handle(self, message_id: str, fields: dict[str, str], *, deliveries: int) -> None:
        """Run one job and settle it: ack, leave for a retry, or dead-letter."""
        self._current = message_id
        try:
            self._handle(message_id, fields, deliveries)
        finally:
            self._current = None

    def _handle(self, message_id: str, fields: dict[str, str], deliveries: int) -> None:
        node_id = (fields or {}).get("node_id", "")
        if not node_id:
            self.dead_letter(message_id, "", "malformed job: no node_id", deliveries)
            return
        if deliveries > self.config.max_attempts:
            self.dead_letter(
                message_id,
                node_id,
                f"delivered {deliveries} times without being acknowledged (the worker handling it stopped each time)",
                deliveries,
            )
            return
        backoff = BACKOFF_START_S
        while True:
            try:
                self.service.run_extraction(node_id)
            except TRANSIENT as exc:
                self._count("failed")
                if self._dependencies_ok():
                    # Storage and cronista answer other calls: this job is what fails (for
                    # example a note the cronista cannot finish in time). Count the attempt.
                    self._settle_failure(message_id, node_id, f"{type(exc).__name__}: {exc}", deliveries)
                    return
                if self.stop.is_set():
                    log.warning("job %s (node %s) left for another worker: %s", message_id, node_id, exc)
                    self._release([message_id])
                    return
                log.warning(
                    "job %s (node %s): a dependency is unavailable, retrying in %.1f s: %s",
                    message_id,
                    node_id,
                    backoff,
                    exc,
                    extra={"node_id": node_id, "job": message_id},
                )
                self._renew(message_id)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                self._renew(message_id)
                continue
            except Exception as exc:
                self._count("failed")
                self._settle_failure(message_id, node_id, f"{type(exc).__name__}: {exc}", deliveries)
                return
            self._ack(message_id)
            self._count("done")
            return

    def _settle_failure(self, message_id: str, node_id: str, error: str, deliveries: int) -> None:
        """A failed attempt: dead-letter on the last one, else leave it for a retry after the timeout."""
        if deliveries >= self.config.max_attempts:
            self.dead_letter(message_id, node_id, error, deliveries)
            return
        log.warning(
            "job %s (node %s) failed on attempt %d of %d, retried after %d ms: %s",
            message_id,
            node_id,
            deliveries,
            self.config.max_attempts,
            self.config.visibility_ms,
            error,
            extra={"node_id": node_id, "job": message_id},
        )

    def _dependencies_ok(self) -> bool:
        """Do storage and the cronista answer a small request? (Tells an outage from a bad job.)"""
        try:
            self.service.store.pending_extractions(1)
            if self.service.extractor is not None:
                self.service.extractor.extract("Probe: we chose this because it is a health check.")
        except Exception as exc:
            log.debug("dependency probe failed: %s", exc)
            return False
        return True

    def dead_letter(self, message_id: str, node_id: str, error: str, attempts: int) -> None:
        """Mark the node failed, record the job in the dead-letter stream, acknowledge it.

        The node is marked first: if that fails (storage down) the job stays pending and is
        dead-lettered on a later delivery, so a job is never dropped without a trace.
        """
        error = error[:MAX_ERROR_CHARS]
        if node_id:
            try:
                node = self.service.store.get(node_id)
                if node is not None and node.extraction_state == ExtractionState.DONE:
                    # A duplicate of a job that did succeed: nothing to report.
                    self._ack(message_id)
                    self._count("done")
                    return
                if node is not None and not node.purged:
                    self.service.store.set_extraction(
                        node_id,
                        None,
                        ExtractionState.FAILED,
                        error=f"gave up after {attempts} attempt(s): {error}"[:MAX_ERROR_CHARS],
                    )
            except Exception as exc:
                log.warning("job %s (node %s): could not mark it failed, kept for later: %s", message_id, node_id, exc)
                return
        pipe = self.redis.pipeline(transaction=True)
        pipe.xadd(
            self.config.dead_stream,
            {
                "node_id": node_id,
                "error": error,
                "attempts": attempts,
                "message_id": message_id,
                "consumer": self.consumer,
                "failed_at": now_ms(),
            },
            maxlen=DEAD_MAXLEN,
            approximate=True,
        )
        pipe.xack(self.config.stream, self.config.group, message_id)
        pipe.xdel(self.config.stream, message_id)
        pipe.execute()
        self._count("dead")
        log.error(
            "job %s (node %s) dead-lettered after %d attempt(s): %s",
            message_id,
            node_id,
            attempts,
            error,
            extra={"node_id": node_id, "job": message_id},
        )

    # ------------------------------------------------------------------ sweeper

    def sweep(self) -> int:
        """Enqueue pending nodes that have no job queued. Storage down: log, try next time."""
        try:
            pending = self.service.store.pending_extractions(self.config.sweep_batch)
        except Exception as exc:
            log.warning("sweep skipped: could not list pending extractions: %s", exc)
            return 0
        added = self.queue.enqueue_missing(pending, marker_ttl_s=self.config.marker_ttl_s)
        if added:
            self._count("swept", len(added))
            log.info("sweeper enqueued %d pending node(s) of %d", len(added), len(pending))
        self._forget_stale_consumers()
        return len(added)

    def _forget_stale_consumers(self) -> None:
        """Drop consumers (dead workers) that hold nothing and were idle for an hour."""
        try:
            for info in self.redis.xinfo_consumers(self.config.stream, self.config.group):
                name = info.get("name")
                if name != self.consumer and info.get("pending") == 0 and info.get("idle", 0) > STALE_CONSUMER_IDLE_MS:
                    self.redis.xgroup_delconsumer(self.config.stream, self.config.group, name)
        except ResponseError as exc:  # pragma: no cover - informational only
            log.debug("consumer cleanup skipped: %s", exc)


def _entries(response: Any) -> list[tuple[str, dict[str, str]]]:
    """XREADGROUP's reply (RESP2, as ``connect`` sets up) as (id, fields) pairs."""
    if not response:
        return []
    out: list[tuple[str, dict[str, str]]] = []
    for _stream, entries in response:
        for message_id, fields in entries:
            if fields is not None:
                out.append((message_id, fields))
    return out


# ----------------------------------------------------------------------------- entry point


def build_service(storage_addr: str, cronista_addr: str) -> MemoryService:
    """The worker's ``MemoryService``: storage and cronista over gRPC, nothing inline."""
    from evomem.adapters.grpc.clients import GrpcExtractor, GrpcStore

    return MemoryService(
        GrpcStore(storage_addr),
        extractor=GrpcExtractor(cronista_addr),
        config=ServiceConfig(extract_inline=False),
    )


def config_from_env() -> WorkerConfig:
    from evomem.entrypoints.services import ConfigError, env_int

    config = WorkerConfig(
        consumer=os.environ.get("EVOMEM_WORKER_CONSUMER", ""),
        visibility_ms=env_int("EVOMEM_JOB_VISIBILITY_MS", 30_000),
        max_attempts=env_int("EVOMEM_JOB_MAX_ATTEMPTS", 5),
        sweep_interval_s=env_int("EVOMEM_SWEEP_INTERVAL_S", 10),
        sweep_batch=env_int("EVOMEM_SWEEP_BATCH", 1000),
        batch=env_int("EVOMEM_WORKER_BATCH", 10),
    )
    for name, value in (
        ("EVOMEM_JOB_VISIBILITY_MS", config.visibility_ms),
        ("EVOMEM_JOB_MAX_ATTEMPTS", config.max_attempts),
        ("EVOMEM_SWEEP_INTERVAL_S", config.sweep_interval_s),
        ("EVOMEM_SWEEP_BATCH", config.sweep_batch),
        ("EVOMEM_WORKER_BATCH", config.batch),
    ):
        if value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value}")
    return config


def install_stop_signals(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM/SIGINT set ``stop`` (the job in hand finishes). Returns a function restoring the old handlers."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def handler(signum: int, _frame: Any) -> None:
        log.info("signal %s: finishing the current job, then stopping", signal.Signals(signum).name)
        stop.set()

    for sig in previous:
        signal.signal(sig, handler)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def main() -> None:
    """Wire the worker from the environment and run it until SIGTERM/SIGINT."""
    from evomem.entrypoints.services import env, start_metrics

    redis_url = env("EVOMEM_REDIS_URL")
    storage_addr = env("EVOMEM_STORAGE_ADDR")
    cronista_addr = env("EVOMEM_CRONISTA_ADDR")
    config = config_from_env()
    stop = threading.Event()
    restore = install_stop_signals(stop)
    start_metrics()
    worker = ExtractionWorker(build_service(storage_addr, cronista_addr), connect(redis_url), config, stop=stop)
    try:
        worker.run()
    finally:
        restore()


if __name__ == "__main__":  # pragma: no cover - exercised by the tests as a subprocess
    from evomem.entrypoints.services import main as services_main

    raise SystemExit(services_main(["worker"]))
