"""Per-token rate limits: a token bucket per identity, counted where every worker sees it.

The bucket is ``throttled-py``'s token bucket (a maintained library, not a hand-written
one). With a Redis URL (the gateway's EVOMEM_REDIS_URL, or EVOMEM_RATE_REDIS_URL) the
buckets live in Redis, so a limit holds across gunicorn workers and gateway replicas; without
one (the embedded server, one process) they live in memory.

``RateLimitMiddleware`` wraps the MCP app: a request whose bearer token (or the timeline page's
sign-in cookie, the same token) is known and has a ``rate`` takes one token from that
identity's bucket; an empty bucket answers HTTP 429 with ``Retry-After`` (whole seconds, at
least 1). Requests without a valid token pass through, to be answered 401 by the SDK's bearer
middleware (or the page's sign-in form). If Redis cannot be reached, the call is let
through and the failure logged: a limit is protection, not a reason for an outage.
"""

from __future__ import annotations

import json
import logging
import math
from datetime import timedelta
from typing import Any

from evomem.app.access import Principal

log = logging.getLogger("evomem.security.ratelimit")

KEY_PREFIX = "evomem:rate"


def _quota(rate: float) -> Any:
    from throttled.asyncio import per_duration

    if rate >= 1:
        per_second = max(1, round(rate))
        return per_duration(timedelta(seconds=1), per_second, burst=per_second)
    return per_duration(timedelta(seconds=max(1, round(1 / rate))), 1, burst=1)


class RateLimiter:
    """One token bucket per (identity, rate), in ``store`` (throttled's Redis or memory store)."""

    def __init__(self, store: Any, where: str) -> None:
        self.store = store
        self.where = where
        self._limiters: dict[tuple[str, float], Any] = {}

    def _limiter(self, principal: Principal) -> Any:
        from throttled.asyncio import RateLimiterType, Throttled

        assert principal.rate is not None
        key = (principal.name, principal.rate)
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = Throttled(
                using=RateLimiterType.TOKEN_BUCKET.value,
                quota=_quota(principal.rate),
                store=self.store,
                key_prefix=KEY_PREFIX,
            )
            self._limiters[key] = limiter
        return limiter

    async def retry_after(self, principal: Principal) -> float | None:
        """Take one token; None when allowed, else the seconds until one is back."""
        if principal.rate is None:
            return None
        try:
            result = await self._limiter(principal).limit(principal.name)
        except Exception as exc:  # Redis down: let the call through, say so
            log.warning("rate limit not checked (%s): %s", self.where, exc)
            return None
        if not result.limited:
            return None
        return max(float(result.state.retry_after), 0.001)


def build_limiter(redis_url: str | None) -> RateLimiter:
    from throttled.asyncio import MemoryStore, RedisStore

    if redis_url:
        return RateLimiter(RedisStore(server=redis_url), "redis")
    return RateLimiter(MemoryStore(), "memory")


#: The cookie the timeline page's sign-in form sets (``evomem.entrypoints.web.timeline``): a token.
UI_COOKIE = "evomem_ui"


def _ui_cookie(header: str) -> str | None:
    """The value of ``UI_COOKIE`` in a Cookie header, or None."""
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == UI_COOKIE and value:
            return value
    return None


class RateLimitMiddleware:
    """ASGI: 429 with ``Retry-After`` once a token's identity is over its rate."""

    def __init__(self, app: Any, verifier: Any, limiter: RateLimiter) -> None:
        self.app = app
        self.verifier = verifier
        self.limiter = limiter

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        principal = self._principal(scope)
        if principal is not None and principal.rate is not None:
            wait = await self.limiter.retry_after(principal)
            if wait is not None:
                await self._too_many(send, wait, principal)
                return
        await self.app(scope, receive, send)

    def _principal(self, scope: Any) -> Principal | None:
        """The identity a request names: its bearer token, else the timeline page's sign-in
        cookie (``UI_COOKIE``, the same token), so the page counts against the same bucket."""
        cookie = None
        for name, value in scope.get("headers") or ():
            text = value.decode("latin-1")  # latin-1 decodes any byte
            if name.lower() == b"authorization":
                if text[:7].lower() != "bearer ":
                    return None
                return self.verifier.principal(text[7:])
            if name.lower() == b"cookie" and cookie is None:
                cookie = _ui_cookie(text)
        return self.verifier.principal(cookie) if cookie else None

    @staticmethod
    async def _too_many(send: Any, wait: float, principal: Principal) -> None:
        seconds = max(1, math.ceil(wait))
        body = json.dumps(
            {
                "error": "rate_limited",
                "error_description": f"{principal.name!r} is limited to {principal.rate:g} calls per second; "
                f"retry in {seconds} s",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(seconds).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
