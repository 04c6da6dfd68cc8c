"""The extraction queue on a Redis stream: ``RedisQueue`` (the ``JobQueue`` port, the gateway's
side) and ``RedisJobSource`` (the ``JobSource`` port, the worker's side). All Redis Streams
knowledge (XADD, XREADGROUP, XAUTOCLAIM, XCLAIM, XACK, the dead-letter stream) lives here;
what to do with a job that fails is ``evomem.app.jobs``'s business.

One stream, ``evomem:extract``; each entry is one job with the fields ``node_id`` and
``enqueued_at`` (ms since the epoch). Workers read it as the consumer group ``workers``;
jobs they give up on go to ``evomem:extract:dead`` (node_id, error, attempts, message_id,
consumer, failed_at). Claims are renewed with XCLAIM ... JUSTID and released by setting
their idle time to the visibility timeout, so neither counts a delivery.

Timeouts are short on purpose: ``remember`` must never hang on Redis. When Redis is down,
``enqueue`` raises within about a second, ``MemoryService`` turns that into a warning and
the note stays extraction ``pending``; the worker's sweeper enqueues it later.

Every enqueue also sets a short-lived marker key ``evomem:extract:queued:<node_id>``. The
sweeper enqueues a pending node only when its marker is absent (``enqueue_missing``), so a
sweep does not pile duplicates on top of jobs that are already waiting. The marker lives
in the same Redis as the stream, so a Redis that lost its data lost both, and the sweeper
re-enqueues everything at once. A duplicate that slips through anyway is harmless:
extraction is idempotent.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.retry import Retry

from evomem.app.ports import ClaimedJob, ExtractionJob, QueueLost, QueueUnavailable

log = logging.getLogger("evomem.queue")
F = TypeVar("F", bound=Callable[..., Any])

STREAM = "evomem:extract"
DEAD_STREAM = "evomem:extract:dead"
GROUP = "workers"
MARKER_PREFIX = "evomem:extract:queued:"

CONNECT_TIMEOUT_S = 0.5
SOCKET_TIMEOUT_S = 2.0
# How long a marker says "a job for this node is already queued". It should outlive a job's
# retries (visibility timeout x max attempts, 30 s x 5 by default); when it expires early the
# cost is one duplicate job.
MARKER_TTL_S = 300
# A backstop against unbounded growth; the worker deletes entries it has finished.
STREAM_MAXLEN = 1_000_000
DEAD_MAXLEN = 100_000
STALE_CONSUMER_IDLE_MS = 3_600_000

# SET the marker if absent and, only then, XADD the job: one atomic step per node.
_ENQUEUE_MISSING = """
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[3]) then
  return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], '*', 'node_id', ARGV[1], 'enqueued_at', ARGV[2])
end
return false
"""


def connect(url: str, *, socket_timeout: float = SOCKET_TIMEOUT_S) -> redis.Redis:
    """A Redis client with short timeouts that retries once on a dropped connection.

    The single retry covers a pooled connection that went stale when Redis restarted; it is
    not applied to timeouts, so a Redis that hangs costs at most ``socket_timeout``.
    """
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=socket_timeout,
        decode_responses=True,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    )


def now_ms() -> int:
    return int(time.time() * 1000)


class RedisQueue:
    """``JobQueue``: XADD to ``stream``. Raises (``redis.RedisError``) when Redis is unreachable."""

    def __init__(
        self,
        redis_url_or_client: str | redis.Redis,
        *,
        stream: str = STREAM,
        marker_ttl_s: int = MARKER_TTL_S,
        maxlen: int = STREAM_MAXLEN,
    ) -> None:
        if isinstance(redis_url_or_client, str):
            self.redis = connect(redis_url_or_client)
            self._owns_client = True
        else:
            self.redis = redis_url_or_client
            self._owns_client = False
        self.stream = stream
        self.marker_ttl_s = marker_ttl_s
        self.maxlen = maxlen
        self._script: Any = None

    def marker(self, node_id: str) -> str:
        return f"{MARKER_PREFIX}{node_id}"

    def enqueue(self, job: ExtractionJob) -> None:
        stamp = now_ms()
        pipe = self.redis.pipeline(transaction=True)
        pipe.xadd(
            self.stream,
            {"node_id": job.node_id, "enqueued_at": stamp},
            maxlen=self.maxlen,
            approximate=True,
        )
        pipe.set(self.marker(job.node_id), stamp, ex=self.marker_ttl_s)
        pipe.execute()

    def enqueue_missing(self, node_ids: Iterable[str], *, marker_ttl_s: int | None = None) -> list[str]:
        """Enqueue each node that has no job marked as queued; return the ids enqueued."""
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return []
        if self._script is None:
            self._script = self.redis.register_script(_ENQUEUE_MISSING)
        ttl = marker_ttl_s or self.marker_ttl_s
        stamp = now_ms()
        pipe = self.redis.pipeline(transaction=False)
        for node_id in ids:
            self._script(keys=[self.stream, self.marker(node_id)], args=[node_id, stamp, ttl, self.maxlen], client=pipe)
        results = pipe.execute()
        return [node_id for node_id, added in zip(ids, results, strict=True) if added]

    def close(self) -> None:
        if self._owns_client:
            self.redis.close()


def _translated(fn: F) -> F:
    """Redis errors as the port's: ``QueueLost`` (NOGROUP: the stream or group is gone) or
    ``QueueUnavailable`` (down, timing out, OOM, READONLY...)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ResponseError as exc:
            if "NOGROUP" in str(exc):
                raise QueueLost(str(exc)) from exc
            raise QueueUnavailable(str(exc)) from exc
        except (redis.RedisError, OSError) as exc:
            raise QueueUnavailable(f"{type(exc).__name__}: {exc}") from exc

    return wrapper  # type: ignore[return-value]


class RedisJobSource:
    """``JobSource``: one consumer of the group ``group`` on ``stream``."""

    def __init__(
        self,
        client: redis.Redis,
        consumer: str,
        *,
        visibility_ms: int,
        stream: str = STREAM,
        dead_stream: str = DEAD_STREAM,
        group: str = GROUP,
    ) -> None:
        self.redis = client
        self.consumer = consumer
        self.visibility_ms = visibility_ms
        self.stream = stream
        self.dead_stream = dead_stream
        self.group = group
        self.queue = RedisQueue(client, stream=stream)
        self._cursor = "0-0"

    @_translated
    def prepare(self) -> None:
        try:
            # From the start of the stream: jobs queued before any worker existed are read too.
            self.redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
            log.info("created consumer group %s on %s", self.group, self.stream)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    @_translated
    def ping(self) -> None:
        self.redis.ping()

    @_translated
    def read(self, count: int, block_ms: int) -> list[ClaimedJob]:
        response = self.redis.xreadgroup(self.group, self.consumer, {self.stream: ">"}, count=count, block=block_ms)
        return [_job(mid, fields, 1) for mid, fields in _entries(response)]

    @_translated
    def reclaim(self, min_idle_ms: int, count: int) -> tuple[list[ClaimedJob], bool]:
        next_cursor, claimed, *_ = self.redis.xautoclaim(
            self.stream, self.group, self.consumer, min_idle_time=min_idle_ms, start_id=self._cursor, count=count
        )
        claimed = [(mid, fields) for mid, fields in claimed if fields is not None]
        finished = next_cursor in ("0-0", b"0-0")
        self._cursor = "0-0" if finished else next_cursor  # more to scan: continue on the next call
        if not claimed:
            return [], finished
        deliveries = self._deliveries([mid for mid, _ in claimed])
        # An entry no longer pending was acknowledged by another worker meanwhile: not ours.
        return [_job(mid, fields, deliveries[mid]) for mid, fields in claimed if mid in deliveries], finished

    def _deliveries(self, message_ids: list[str]) -> dict[str, int]:
        pipe = self.redis.pipeline(transaction=False)
        for mid in message_ids:
            pipe.xpending_range(self.stream, self.group, min=mid, max=mid, count=1)
        out: dict[str, int] = {}
        for rows in pipe.execute():
            for row in rows:
                out[str(row["message_id"])] = int(row["times_delivered"])
        return out

    @_translated
    def ack(self, job_id: str) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.xack(self.stream, self.group, job_id)
        pipe.xdel(self.stream, job_id)
        pipe.execute()

    def release(self, job_ids: Sequence[str]) -> None:
        """Idle = the visibility timeout: claimable by other workers now, without counting a
        delivery (the graceful-stop counterpart of a crash)."""
        if not job_ids:
            return
        try:
            self.redis.xclaim(
                self.stream, self.group, self.consumer, 0, list(job_ids), idle=self.visibility_ms, justid=True
            )
        except redis.RedisError as exc:
            log.debug("could not release %s: %s", job_ids, exc)

    def renew(self, job_id: str) -> None:
        try:
            self.redis.xclaim(self.stream, self.group, self.consumer, 0, [job_id], justid=True)
        except redis.RedisError as exc:
            log.debug("could not renew %s: %s", job_id, exc)

    @_translated
    def dead_letter(self, job: ClaimedJob, error: str) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.xadd(
            self.dead_stream,
            {
                "node_id": job.node_id,
                "error": error,
                "attempts": job.deliveries,
                "message_id": job.id,
                "consumer": self.consumer,
                "failed_at": now_ms(),
            },
            maxlen=DEAD_MAXLEN,
            approximate=True,
        )
        pipe.xack(self.stream, self.group, job.id)
        pipe.xdel(self.stream, job.id)
        pipe.execute()

    @_translated
    def enqueue_missing(self, node_ids: Iterable[str], *, marker_ttl_s: int) -> list[str]:
        return self.queue.enqueue_missing(node_ids, marker_ttl_s=marker_ttl_s)

    @_translated
    def forget_stale_consumers(self) -> None:
        try:
            for info in self.redis.xinfo_consumers(self.stream, self.group):
                name = info.get("name")
                if name != self.consumer and info.get("pending") == 0 and info.get("idle", 0) > STALE_CONSUMER_IDLE_MS:
                    self.redis.xgroup_delconsumer(self.stream, self.group, name)
        except ResponseError as exc:  # pragma: no cover - informational only
            log.debug("consumer cleanup skipped: %s", exc)

    def close(self) -> None:
        self.redis.close()


def _job(message_id: str, fields: dict[str, str] | None, deliveries: int) -> ClaimedJob:
    return ClaimedJob(id=message_id, node_id=(fields or {}).get("node_id", ""), deliveries=deliveries)


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
