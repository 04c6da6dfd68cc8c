"""The ``JobQueue`` port on a Redis stream (the multi-service wiring's extraction queue).

One stream, ``evomem:extract``; each entry is one job with the fields ``node_id`` and
``enqueued_at`` (ms since the epoch). The worker (``evomem.entrypoints.worker``) reads it as
the consumer group ``workers``; jobs it gives up on go to ``evomem:extract:dead``.

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

import time
from collections.abc import Iterable
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

from evomem.ports import ExtractionJob

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
