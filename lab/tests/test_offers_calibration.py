"""lab/offers.py: the calibration and the decides model are reproducible, monotone, and mean what
they say on data whose truth is known (synthetic: a pair is right with the probability its score
claims after a known distortion)."""

from __future__ import annotations

import random

from lab import offers


def _synthetic(seed: int, n: int = 4000) -> tuple[list[float], list[int], list[float]]:
    rng = random.Random(seed)
    raw, labels = [], []
    for _ in range(n):
        x = rng.random()
        raw.append(x)
        labels.append(int(rng.random() < x**3))  # an overconfident score: the truth is x cubed
    return raw, labels, [1.0] * n


def test_the_calibration_is_reproducible_monotone_and_right_where_it_says() -> None:
    raw, labels, w = _synthetic(7)
    first = offers.fit_calibration(raw, labels, w)
    assert first == offers.fit_calibration(raw, labels, w)
    ys = [y for _, y in first]
    assert ys == sorted(ys)
    for x in (0.3, 0.6, 0.9):
        assert abs(offers.apply(first, x) - x**3) < 0.08, x
    # a fresh sample of the same process: each band is right about as often as it claims
    raw2, labels2, _ = _synthetic(8)
    for lo in (0.0, 0.5, 0.8):
        inside = [(offers.apply(first, x), y) for x, y in zip(raw2, labels2, strict=True) if lo <= x < lo + 0.2]
        claimed = sum(p for p, _ in inside) / len(inside)
        seen = sum(y for _, y in inside) / len(inside)
        assert abs(claimed - seen) < 0.06, (lo, claimed, seen)


def test_the_decides_model_is_reproducible_and_tells_a_question_from_a_decision() -> None:
    rng = random.Random(3)
    parts = ["ledger", "cache", "queue", "billing job", "search index", "CI runner", "backup"]
    options = ["Postgres", "SQLite", "Redis", "Kafka", "S3", "nightly", "weekly", "GitLab"]
    items = []
    for _ in range(300):
        a, o = rng.choice(parts), rng.choice(options)
        items.append((f"We decided the {a} uses {o} from now on.", 1))
        items.append((f"Going forward the {a} runs on {o}.", 1))
        items.append((f"Who owns the {a} alerts for {o}?", 0))
        items.append((f"reminder: write up the {a} {o} incident", 0))
    first = offers.train_decides(items)
    assert first == offers.train_decides(items)
    assert first.p("We decided the payroll export uses Kafka from now on.") > 0.5
    assert first.p("Who owns the payroll export alerts for Kafka?") < 0.5


def test_the_cut_offs_keep_offers_off_notes_that_replace_nothing() -> None:
    rng = random.Random(5)
    pairs: list[offers.Pair] = []
    notes: list[offers.Note] = []
    prob: dict[int, float] = {}
    for g in range(400):
        replaces = g % 2 == 0
        idx = []
        for c in range(3):
            right = replaces and c == 0
            p = min(1.0, max(0.0, (0.85 if right else 0.2) + rng.gauss(0, 0.12)))
            prob[len(pairs)] = p
            idx.append(len(pairs))
            pairs.append(offers.Pair("s", g, g % 5, True, len(notes), p, int(right), 0.9, 0.9, True, 1.0))
        notes.append(offers.Note("s", g, True, replaces, replaces, idx))
    cut = offers.choose(notes, pairs, prob)
    assert offers.share_offered_on_nothing(notes, prob, cut["offer_at"])["s"] <= offers.OFFER_SHARE
    assert offers.recall_if_confirmed(notes, pairs, prob, cut["offer_at"]) > 0.8
    assert cut["offer_at"] <= cut["hint_at"] <= cut["link_at"]


def test_long_documents_get_their_own_calibration_when_there_are_enough_of_them() -> None:
    """Two regimes with the same raw scores and different truths (short notes right as often as x,
    long records as x cubed): each pair reads its own regime's calibration, and with too few long
    true pairs the long regime falls back to the pooled one."""
    rng = random.Random(11)
    pairs: list[offers.Pair] = []
    for k in range(6000):
        x = rng.random()
        long = k % 3 == 0
        truth = x**3 if long else x
        pairs.append(offers.Pair("s", k, k % 5, True, k, x, int(rng.random() < truth), 0.9, 0.9, True, 1.0, long))
    short, long = offers.regime_calibrations(pairs, range(len(pairs)))
    assert long, "enough long true pairs: a calibration of their own"
    for x in (0.5, 0.8):
        assert abs(offers.apply(short, x) - x) < 0.08
        assert abs(offers.apply(long, x) - x**3) < 0.08
    few = [i for i, p in enumerate(pairs) if not p.long or (p.label == 1 and i < 200) or p.label == 0]
    few = [i for i in few if not pairs[i].long or pairs[i].label == 0 or i < 200]
    assert sum(pairs[i].long and pairs[i].label for i in few) < offers.MIN_LONG_TRUE
    pooled, none = offers.regime_calibrations(pairs, few)
    assert none == []
    assert pooled


def test_a_source_is_calibrated_by_the_others_and_on_what_trees_that_never_saw_it_give() -> None:
    """Leave one source out: two sources right as often as their score says and one whose offers
    are never right. The odd source's calibration comes from the other two only (it claims what the
    score says), while theirs pool the odd one in (they claim less). With ``fresh`` (the score from
    trees that never saw the source) the calibration is fitted on it and applied to it."""
    rng = random.Random(17)
    pairs: list[offers.Pair] = []
    for k in range(9000):
        source = ("a", "b", "odd")[k % 3]
        x = rng.random()
        right = source != "odd" and rng.random() < x
        p = offers.Pair(source, k, k % 5, True, k, x, int(right), 0.9, 0.9, True, 1.0)
        p.fresh = x**2  # the trees that never saw a source are less sure of it: same order, lower value
        pairs.append(p)
    kept = range(len(pairs))
    judged = {"a", "b", "odd"}
    own = offers.source_calibrated(pairs, kept, judged, fit_new=False, apply_new=False)
    odd = [i for i in kept if pairs[i].source == "odd" and 0.75 <= pairs[i].raw < 0.85]
    a = [i for i in kept if pairs[i].source == "a" and 0.75 <= pairs[i].raw < 0.85]
    assert abs(sum(own[i] for i in odd) / len(odd) - 0.8) < 0.08  # fitted on a and b only
    assert sum(own[i] for i in a) / len(a) < 0.65  # fitted on b and odd
    refit = offers.source_calibrated(pairs, kept, judged, fit_new=True, apply_new=True)
    assert abs(sum(refit[i] for i in odd) / len(odd) - 0.8) < 0.08  # the same truth, read on fresh
    stale = offers.source_calibrated(pairs, kept, judged, fit_new=False, apply_new=True)
    assert sum(stale[i] for i in odd) / len(odd) < 0.72  # fitted on raw, applied to fresh: claims too little here
    short, _ = offers.regime_calibrations(pairs, [i for i in kept if pairs[i].source != "odd"], new=True)
    assert abs(offers.apply(short, 0.64) - 0.8) < 0.08


def test_the_shift_table_reports_each_source_and_the_pool() -> None:
    pairs: list[offers.Pair] = []
    notes: list[offers.Note] = []
    prob: dict[int, float] = {}
    for g in range(60):
        source = "a" if g < 30 else "b"
        right = source == "a" or g % 2 == 0
        prob[len(pairs)] = 0.95
        pairs.append(offers.Pair(source, g, g % 5, True, len(notes), 0.95, int(right), 0.9, 0.9, True, 1.0))
        notes.append(offers.Note(source, g, True, True, True, [len(pairs) - 1]))
    table = offers.shift_table(pairs, notes, {"m": prob}, {"a", "b"}, 0.4)["m"]
    assert table["per_source"]["a"]["top_at_0.9"] == [1.0, 30]
    assert table["per_source"]["b"]["top_at_0.9"] == [0.5, 30]
    assert table["pooled"]["top_at_0.9"] == [0.75, 60]
    assert table["worst_source_at_0.9"] == 0.5
    assert table["pooled"]["error"] == 0.2
