"""Small statistics, without scipy: Wilson intervals, the exact McNemar test, latency percentiles."""

from __future__ import annotations

import math
import statistics


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval for a proportion (z = 1.96). ``(0, 0)`` when ``n`` is 0."""
    if n <= 0:
        return (0.0, 0.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def binom_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial test of ``k`` successes in ``n`` trials against p = 1/2."""
    if n == 0:
        return 1.0
    k = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2.0 * tail)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar p-value: the binomial test on the discordant pairs ``b`` and ``c``."""
    return binom_two_sided(b, b + c)


def pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile by nearest rank (NaN when ``values`` is empty)."""
    if not values:
        return float("nan")
    s = sorted(values)
    i = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[i]


def summary(values: list[float]) -> dict[str, float]:
    """Median and p95 in milliseconds, and the count (``values`` must not be empty)."""
    return {
        "p50_ms": round(statistics.median(values), 3),
        "p95_ms": round(pct(values, 95), 3),
        "n": len(values),
    }
