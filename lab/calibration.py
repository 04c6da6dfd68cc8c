"""The rules a link threshold is set by, shared by every calibrated linker.

Plain Python (math only): ``lab.train_linker`` sets the pair model's ``link_at`` and
``link_at_long`` with them, and ``lab/export_cross.py`` (in the training environment) the
cross-encoder's ``link_score``, so one rule stands behind every link a model makes on its own:

- the links at a threshold reach precision ``PRECISION`` pooled and on every source with at least
  ``MIN_GOLD_FOR_CALIBRATION`` gold edges, all at once (precision is not monotone in the
  threshold: the highest of each source's own thresholds can leave another source below it);
- they *show* it pooled and on each family of sources (the hand-written development files apart
  from the generated sets): the one-sided Clopper-Pearson bound of their error rate, at
  ``CONFIDENCE``, is at most ``1 - PRECISION`` (0 wrong needs 149 links).

A threshold is a score of any scale (a probability, a logit); where none holds, the caller's
``none`` (1.0 for a probability: nothing links below it; ``math.inf`` for a logit).
"""

from __future__ import annotations

import math

PRECISION = 0.98
MIN_GOLD_FOR_CALIBRATION = 30
#: A link threshold must show its precision with this one-sided confidence (``error_bound``).
CONFIDENCE = 0.95


def error_bound(errors: int, links: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided Clopper-Pearson upper bound, at ``confidence``, of the error rate of
    ``links`` links of which ``errors`` were wrong: the rate p at which ``errors`` or fewer
    would happen with probability ``1 - confidence`` (0 errors in n links: ``1 - (1 - c) ** (1 / n)``).
    Bisection on the binomial tail (plain Python: the tests run without scipy)."""
    if errors >= links:
        return 1.0
    alpha = 1.0 - confidence

    def at_most(p: float) -> float:  # P(X <= errors), X ~ Binomial(links, p); falls as p grows
        logs = [
            math.lgamma(links + 1) - math.lgamma(i + 1) - math.lgamma(links - i + 1)
            + (i * math.log(p) if i else 0.0) + (links - i) * math.log1p(-p)
            for i in range(errors + 1)
        ]  # fmt: skip
        top = max(logs)
        return math.exp(top) * sum(math.exp(v - top) for v in logs)

    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if at_most(mid) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


def link_threshold(
    dec: list[tuple[float, bool, bool]], precision: float = PRECISION, *, shown: bool = False, none: float = 1.0
) -> float:
    """The lowest threshold t at which the notes whose best candidate has p >= t are linked to their
    gold predecessor with precision >= ``precision`` (``none`` when no threshold does). ``shown``: the
    links must show that precision, not only reach it: the upper bound of their error rate
    (``error_bound``) is at most ``1 - precision``, so a handful of right links proves nothing
    (0 wrong needs 149 links at 0.98 and 95 %)."""
    tp = fp = 0
    t = none
    for p, ok, _ in sorted(dec, key=lambda d: -d[0]):
        tp += ok
        fp += not ok
        if tp / (tp + fp) >= precision and (not shown or error_bound(fp, tp + fp) <= 1 - precision):
            t = p
    return t


def _threshold_everywhere(
    by_source: dict[str, list[tuple[float, bool, bool]]], families: dict[str, str] | None = None, none: float = 1.0
) -> float:
    """The lowest threshold at which, all at once: the pooled links show the precision
    (``link_threshold(shown=True)``); every source with enough gold edges (counted in these
    decisions) that links anything reaches it; and every family of sources (``families``: source
    -> family, the hand-written development files apart from the generated sets) with enough gold
    edges that links anything shows it on its own links. ``none`` when no threshold does.

    Until 2026-12-06 it was the highest of the pooled threshold and each source's own lowest one,
    at which another source's precision could be lower (precision is not monotone in the
    threshold), and no family had to show anything: the generated sets' hundreds of right links
    showed the precision for the written files' few."""
    families = families or {}
    source_gold: dict[str, int] = {n: sum(1 for d in v if d[2]) for n, v in by_source.items()}
    family_gold: dict[str, int] = {}
    for n, g in source_gold.items():
        if n in families:
            family_gold[families[n]] = family_gold.get(families[n], 0) + g
    # right and wrong links so far, of each source and family with enough gold edges
    per_source = {n: [0, 0] for n, g in source_gold.items() if g >= MIN_GOLD_FOR_CALIBRATION}
    per_family = {f: [0, 0] for f, g in family_gold.items() if g >= MIN_GOLD_FOR_CALIBRATION}
    events = sorted(((d[0], n, d[1]) for n, v in by_source.items() for d in v), key=lambda e: -e[0])
    tp = fp = 0
    t = none
    i = 0
    while i < len(events):
        p = events[i][0]
        while i < len(events) and events[i][0] == p:  # ties link together
            _, n, ok = events[i]
            tp += ok
            fp += not ok
            for counts in (per_source.get(n), per_family.get(families.get(n, ""))):
                if counts is not None:
                    counts[0 if ok else 1] += 1
            i += 1
        linking = [(r, w) for r, w in (*per_source.values(), *per_family.values()) if r + w]
        if tp / (tp + fp) < PRECISION or any(r / (r + w) < PRECISION for r, w in linking):
            continue
        shown = [(tp, fp)] + [(r, w) for r, w in per_family.values() if r + w]
        if all(error_bound(w, r + w) <= 1 - PRECISION for r, w in shown):
            t = p
    return t
