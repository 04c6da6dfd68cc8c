"""What the pair linker offers, and with what probability: the gates, the calibration, the cut-offs.

``lab/train_linker.py`` replays the development scenarios and computes each candidate pair's
out-of-fold probability (grouped by scenario). This module turns those into what an agent reads:

1. **Decides.** A logistic regression over a note's words (``evomem.domain.linkers.decides``),
   fitted on the development notes' kinds: a decision (``decision``, ``distractor``,
   ``scope_decision``) against a note that decides nothing (``context``, ``noise``,
   ``scope_note``) and the scenarios' questions. Cross-fitted with the same folds: a note's
   probability comes from a model that never saw its scenario. ``decides_at`` is the highest cut-off
   that loses at most ``DECIDES_LOSS`` of the true pairs (note or predecessor below it).
2. **Scope.** A candidate whose scope differs from the note's (given or inferred) is dropped unless
   the note names that scope (``pair.names_scope``).
3. **Calibration.** Isotonic regression of the label on the out-of-fold probability of the pairs
   that pass the gates, on the hand-written sources (each alike): the generators' templated notes
   are easier, and pooled with them the probability claimed too much on hand-written notes. Long
   documents (the note or the candidate) get a calibration of their own (``calibration_long``)
   when their pairs hold ``MIN_LONG_TRUE`` true ones: records of one domain look alike, and with
   one calibration for both the probability of a pair of long records meant what short notes'
   did (blind PEP chains: offers shown at 0.9 or more were right 3 times in 12).
   Cross-fitted again for the report, so the reliability tables read probabilities that never saw
   their pair's scenario. With ``fresh`` (the trainer's
   ``--calibrate-on source``, not what ships) the calibration is fitted on each pair's probability
   from trees fitted without its whole source, and the report's probabilities come from a calibration
   fitted on the other sources (leave one source out; ``lab/results/source-shift.md``). It predicted
   the blind gap but did not close it (lab/HISTORY.md, calib10).
4. **Cut-offs** on those calibrated out-of-fold probabilities, judged on the hand-written sources,
   each alike: ``offer_at`` the lowest at which notes that replace nothing get an offer in at most
   ``OFFER_SHARE`` of cases;
   ``hint_at`` the lowest at which a top offer is right at least ``HINT_PRECISION`` of the time;
   ``link_at`` the lowest at which it is right ``LINK_PRECISION`` of the time over at least
   ``MIN_LINKS`` links (1.0, linking declarations only, when none shows it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.memories import scope_label
from evomem.domain.linkers.decides import DecidesModel, grams
from evomem.domain.linkers.pair import names_scope
from evomem.domain.linkers.pair_model import calibrate, is_long
from evomem.domain.scope import compatible, infer_scope

DECIDES_LOSS = 0.02
OFFER_SHARE = 0.08
HINT_PRECISION = 0.9
LINK_PRECISION = 0.98
MIN_LINKS = 50
MIN_HINTS = 30
MAX_P = 0.99  # no offer is shown as certain: the top band holds a few hundred pairs
MIN_PER_SOURCE = 5  # a source's precision counts from this many top offers
MIN_LONG_TRUE = 30  # long documents get a calibration of their own from this many true pairs
DECIDES = frozenset({"decision", "distractor", "scope_decision"})
NOT_DECIDES = frozenset({"context", "noise", "scope_note"})
MAX_GRAMS = 20000
DECIDES_C = 2.0
BANDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001)


# ----------------------------------------------------------------------------- decides


def labelled(scenario: Mapping[str, Any]) -> Iterable[tuple[str, int]]:
    """(text, decides) of a scenario's notes whose kind says, and of its questions (never decide)."""
    for n in scenario["notes"]:
        if n.get("kind") in DECIDES:
            yield n["text"], 1
        elif n.get("kind") in NOT_DECIDES:
            yield n["text"], 0
    for q in scenario.get("questions", ()):
        if q.get("text"):
            yield q["text"], 0


def train_decides(items: Sequence[tuple[str, int]], at: float = 0.5) -> DecidesModel:
    """The decides model fitted on ``items`` (text, label): an L2 logistic regression over the
    ``MAX_GRAMS`` most frequent grams, each counting 1/sqrt(the note's gram count)."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    docs = [grams(t) for t, _ in items]
    freq: dict[str, int] = {}
    for d in docs:
        for g in d:
            freq[g] = freq.get(g, 0) + 1
    vocab = [g for g, c in sorted(freq.items(), key=lambda kv: (-kv[1], kv[0])) if c >= 2][:MAX_GRAMS]
    index = {g: j for j, g in enumerate(vocab)}
    rows, cols, vals = [], [], []
    for r, d in enumerate(docs):
        scale = 1.0 / math.sqrt(len(d)) if d else 0.0
        for g in d:
            j = index.get(g)
            if j is not None:
                rows.append(r)
                cols.append(j)
                vals.append(scale)
    x = csr_matrix((vals, (rows, cols)), shape=(len(docs), len(vocab)))
    y = np.array([lab for _, lab in items])
    lr = LogisticRegression(C=DECIDES_C, max_iter=2000, class_weight="balanced")
    lr.fit(x, y)
    weights = {g: round(float(w), 4) for g, w in zip(vocab, lr.coef_[0].tolist(), strict=True) if abs(w) >= 1e-3}
    return DecidesModel(intercept=float(lr.intercept_[0]), weights=weights, at=at)


def decides_to_dict(model: DecidesModel) -> dict[str, Any]:
    return {
        "kind": "lr-grams",
        "intercept": round(model.intercept, 6),
        "at": round(model.at, 4),
        "weights": dict(sorted(model.weights.items())),
    }


# ----------------------------------------------------------------------------- pairs


@dataclass
class Pair:
    source: str
    group: int
    fold: int
    linked: bool
    note: int  # the entry's index in ``notes``
    raw: float
    label: int
    note_decides: float
    cand_decides: float
    scope_ok: bool
    weight: float
    long: bool = False  # the note or the candidate is a long document (``pair_model.is_long``)
    fresh: float = math.nan  # the probability from trees that never saw the pair's source (``source_shift``)

    def new(self) -> float:
        """The probability as a source the trees never saw gets it: ``fresh`` when the trainer
        computed it, else the scenario-fold ``raw``."""
        return self.raw if math.isnan(self.fresh) else self.fresh


@dataclass
class Note:
    source: str
    group: int
    linked: bool
    replaces: bool  # the note has a gold predecessor
    gold_in: bool  # and the search found it
    pairs: list[int]
    words: bool = False  # a replay without embeddings (``--vectors off``): reported apart, never judged


def _scope_of(n: Mapping[str, Any]) -> str | None:
    if n.get("scope"):
        return scope_label(n["scope"])
    got = infer_scope(n["text"])
    return got.scope if got is not None else None


def pairs_of(
    sources: Sequence[Any],
    groups: Sequence[Any],
    oof: Sequence[float],
    fold: Mapping[int, int],
    weight: Sequence[float],
) -> tuple[list[Pair], list[Note]]:
    """Every replayed pair with what the gates and the calibration read, and every replayed note.
    ``oof``, ``weight``: per row, in the groups' order (``train_linker.calibrate``)."""
    from tqdm import tqdm

    items = {name: its for name, its, _ in sources}
    folds = sorted(set(fold.values()))
    by_fold: dict[int, list[tuple[str, int]]] = {k: [] for k in folds}
    for g, (name, k, _) in enumerate(groups):
        by_fold[fold[g]].extend(labelled(items[name][k]))
    models = {}
    for k in tqdm(folds, desc="decides, cross-fitted", unit="fold"):
        models[k] = train_decides([it for j in folds if j != k for it in by_fold[j]])
    pairs: list[Pair] = []
    notes: list[Note] = []
    pos = 0
    for g, (name, k, entries) in enumerate(tqdm(groups, desc="pairs", unit="scenario")):
        dm = models[fold[g]]
        by_i = {n["i"]: n for n in items[name][k]["notes"]}
        for e in entries:
            note = by_i[e["note"]]
            nd = dm.p(note["text"])
            n_scope = _scope_of(note)
            idx = []
            for c, lab, row in zip(e["cands"], e["labels"], e["rows"], strict=True):
                cand = {"text": e["extra"][-c - 1], "scope": None} if c < 0 else by_i[c]
                c_scope = _scope_of(cand)
                ok = compatible(n_scope, c_scope) or names_scope(note["text"], c_scope)
                idx.append(len(pairs))
                pairs.append(
                    Pair(
                        name,
                        g,
                        fold[g],
                        e["linked"],
                        len(notes),
                        oof[pos],
                        lab,
                        nd,
                        dm.p(cand["text"]),
                        ok,
                        weight[pos],
                        is_long(row),
                    )
                )
                pos += 1
            notes.append(
                Note(name, g, e["linked"], e["gold"] is not None, bool(e["gold_in"]), idx, bool(e.get("words")))
            )
    return pairs, notes


def choose_decides_at(pairs: Sequence[Pair], loss: float = DECIDES_LOSS) -> float:
    """The highest cut-off at which at most ``loss`` of the true pairs fall below it (note or candidate)."""
    true = sorted(min(p.note_decides, p.cand_decides) for p in pairs if p.label)
    if not true:
        return 0.0
    return true[int(len(true) * loss)]


def passes(p: Pair, decides_at: float) -> bool:
    return p.note_decides >= decides_at and p.cand_decides >= decides_at and p.scope_ok


# ----------------------------------------------------------------------------- calibration


def fit_calibration(raw: Sequence[float], labels: Sequence[int], weights: Sequence[float]) -> list[tuple[float, float]]:
    """Isotonic regression of ``labels`` on ``raw`` as the points of a piecewise-linear map
    (``PairModel.calibration``): the first and last point of each flat step."""
    import numpy as np
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=MAX_P, out_of_bounds="clip")
    iso.fit(np.asarray(raw), np.asarray(labels, dtype=float), sample_weight=np.asarray(weights))
    xs, ys = iso.X_thresholds_.tolist(), iso.y_thresholds_.tolist()
    return [(round(float(a), 6), round(float(b), 4)) for a, b in zip(xs, ys, strict=True)]


def apply(points: Sequence[tuple[float, float]], raw: float) -> float:
    """``raw`` through the calibration ``points``, as the product reads it."""
    return calibrate(points, raw)


def regime_calibrations(
    pairs: Sequence[Pair], train: Sequence[int], new: bool = False
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(short, long) calibrations fitted on the pairs ``train``: each regime on its own pairs;
    the long one empty (the short one serves) while its pairs hold fewer than ``MIN_LONG_TRUE``
    true pairs, too few for an isotonic fit to mean anything. ``new``: fitted on each pair's
    probability from trees that never saw its source (``Pair.new``), not the scenario-fold one."""

    def on(idx: Sequence[int]) -> list[tuple[float, float]]:
        xs = [pairs[i].new() if new else pairs[i].raw for i in idx]
        return fit_calibration(xs, [pairs[i].label for i in idx], [pairs[i].weight for i in idx])

    long = [i for i in train if pairs[i].long]
    short = [i for i in train if not pairs[i].long]
    enough = sum(pairs[i].label for i in long) >= MIN_LONG_TRUE
    return (on(short) if enough else on(train)), (on(long) if enough else [])


def cross_calibrated(
    pairs: Sequence[Pair], kept: Sequence[int], seed: int, fit_on: set[str] | None = None
) -> dict[int, float]:
    """Each kept pair's calibrated probability from a calibration of its regime fitted on the
    other folds (on the pairs of the sources ``fit_on``, default all)."""
    out: dict[int, float] = {}
    folds = sorted({pairs[i].fold for i in kept})
    for k in folds:
        train = [i for i in kept if pairs[i].fold != k and (fit_on is None or pairs[i].source in fit_on)]
        short, long = regime_calibrations(pairs, train)
        for i in kept:
            if pairs[i].fold == k:
                out[i] = apply(long if pairs[i].long and long else short, pairs[i].raw)
    return out


def source_calibrated(
    pairs: Sequence[Pair], kept: Sequence[int], fit_on: set[str], fit_new: bool, apply_new: bool
) -> dict[int, float]:
    """Each kept pair's calibrated probability from a calibration fitted on the pairs of the sources
    ``fit_on`` other than the pair's own (leave one source out; a source outside ``fit_on`` gets the
    calibration of all of them). ``fit_new``/``apply_new``: the calibration is fitted on/applied to
    the probability from trees that never saw the pair's source (``Pair.new``), else the
    scenario-fold one (``Pair.raw``)."""
    out: dict[int, float] = {}
    cache: dict[str | None, tuple[list[tuple[float, float]], list[tuple[float, float]]]] = {}
    for i in kept:
        p = pairs[i]
        left = p.source if p.source in fit_on else None
        if left not in cache:
            train = [j for j in kept if pairs[j].source in fit_on and pairs[j].source != left]
            cache[left] = regime_calibrations(pairs, train, new=fit_new)
        short, long = cache[left]
        out[i] = apply(long if p.long and long else short, p.new() if apply_new else p.raw)
    return out


# ----------------------------------------------------------------------------- cut-offs


def offered(note: Note, prob: Mapping[int, float], at: float) -> list[int]:
    """The note's offers at cut-off ``at``, best first."""
    got = [i for i in note.pairs if i in prob and prob[i] >= at]
    return sorted(got, key=lambda i: -prob[i])


def share_offered_on_nothing(notes: Sequence[Note], prob: Mapping[int, float], at: float) -> dict[str, float]:
    """Per source: the share of notes that replace nothing (linked replay) with at least one offer."""
    seen: dict[str, list[int]] = {}
    for n in notes:
        if n.linked and not n.replaces:
            seen.setdefault(n.source, []).append(int(bool(offered(n, prob, at))))
    return {s: sum(v) / len(v) for s, v in seen.items() if v}


def recall_if_confirmed(notes: Sequence[Note], pairs: Sequence[Pair], prob: Mapping[int, float], at: float) -> float:
    """The share of replacing notes (linked replay) whose gold predecessor is among the offers."""
    hit = tot = 0
    for n in notes:
        if n.linked and n.replaces:
            tot += 1
            hit += any(pairs[i].label for i in offered(n, prob, at)[:3])
    return hit / tot if tot else 0.0


def top_precision(
    notes: Sequence[Note], pairs: Sequence[Pair], prob: Mapping[int, float], at: float
) -> tuple[float, int]:
    """(precision, count) of the top offers at or above ``at`` (linked replay)."""
    right = count = 0
    for n in notes:
        got = offered(n, prob, at)
        if n.linked and got:
            count += 1
            right += pairs[got[0]].label
    return (right / count if count else 1.0), count


def choose(
    notes: Sequence[Note], pairs: Sequence[Pair], prob: Mapping[int, float], judged: set[str] | None = None
) -> dict[str, float]:
    """offer_at, hint_at and link_at on the calibrated out-of-fold probabilities, each source of
    ``judged`` (default: all; the trainer passes the hand-written ones) weighing alike."""
    judged = judged if judged is not None else {n.source for n in notes}
    mine = [n for n in notes if n.source in judged and not n.words]  # the default regime: hybrid
    grid = [round(0.01 * k, 2) for k in range(1, 100)]

    def precision(at: float) -> tuple[float, int]:
        per = [top_precision([n for n in mine if n.source == s], pairs, prob, at) for s in sorted(judged)]
        per = [p for p in per if p[1] >= MIN_PER_SOURCE]
        return (_mean(p for p, _ in per) if per else 1.0), sum(c for _, c in per)

    offer_at = next((t for t in grid if _mean(share_offered_on_nothing(mine, prob, t).values()) <= OFFER_SHARE), 0.99)
    hint_at = next((t for t in grid if t >= offer_at and _ok(precision(t), HINT_PRECISION, MIN_HINTS)), 1.01)
    link_at = next((t for t in grid if t >= hint_at and _ok(precision(t), LINK_PRECISION, MIN_LINKS)), 1.0)
    return {"offer_at": offer_at, "hint_at": hint_at, "link_at": link_at}


def _ok(got: tuple[float, int], precision: float, least: int) -> bool:
    return got[0] >= precision and got[1] >= least


def _mean(values: Iterable[float]) -> float:
    v = list(values)
    return sum(v) / len(v) if v else 0.0


def reliability(
    pairs: Sequence[Pair], notes: Sequence[Note], prob: Mapping[int, float], at: float
) -> list[dict[str, Any]]:
    """Offers shown (linked replay, at or above ``at``, top 3) by band of probability: count, mean
    probability and share right."""
    shown = [i for n in notes if n.linked for i in offered(n, prob, at)[:3]]
    rows = []
    for lo, hi in itertools.pairwise(BANDS):
        inside = [i for i in shown if lo <= prob[i] < hi]
        if inside:
            rows.append(
                {
                    "band": f"{lo:.1f}-{min(hi, 1.0):.1f}",
                    "offers": len(inside),
                    "mean_p": round(_mean(prob[i] for i in inside), 3),
                    "right": round(_mean(pairs[i].label for i in inside), 3),
                }
            )
    return rows


#: The shown probability at which ``bench.agents``' calibrated agent confirms the top offer.
CONFIRM_AT = 0.9


def shift_table(
    pairs: Sequence[Pair],
    notes: Sequence[Note],
    probs: Mapping[str, Mapping[int, float]],
    judged: set[str],
    at: float,
) -> dict[str, Any]:
    """Per way of calibrating (``probs``: name -> each kept pair's probability), per source of
    ``judged`` and pooled over them (linked replay, with embeddings): the precision of the top offer
    shown at ``CONFIRM_AT`` or more (and how many), the reliability bands of the offers shown at
    ``at`` (top 3), and their calibration error (the offers' mean gap between band probability and
    share right)."""

    def one(mine: Sequence[Note], prob: Mapping[int, float]) -> dict[str, Any]:
        bands = reliability(pairs, mine, prob, at)
        shown = sum(b["offers"] for b in bands)
        gap = sum(b["offers"] * abs(b["mean_p"] - b["right"]) for b in bands) / shown if shown else 0.0
        precision, count = top_precision(mine, pairs, prob, CONFIRM_AT)
        return {"top_at_0.9": [round(precision, 3), count], "error": round(gap, 3), "reliability": bands}

    out: dict[str, Any] = {}
    for name, prob in probs.items():
        mine = [n for n in notes if n.source in judged and not n.words]
        rows = {s: one([n for n in mine if n.source == s], prob) for s in sorted(judged)}
        counted = [r["top_at_0.9"] for r in rows.values() if r["top_at_0.9"][1] >= MIN_PER_SOURCE]
        out[name] = {
            "pooled": one(mine, prob),
            "worst_source_at_0.9": min((p for p, _ in counted), default=1.0),
            "per_source": rows,
        }
    return out


def fit(
    sources: Sequence[Any],
    groups: Sequence[Any],
    oof: Sequence[float],
    weight: Sequence[float],
    fold: Mapping[int, int],
    seed: int,
    written: set[str] | None = None,
    fresh: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Everything the weights file gains (``decides``, ``calibration``, the cut-offs) and the report.

    ``fresh``: per row, the probability from trees that never saw the row's source (the trainer's
    ``new_source_probabilities``; the scenario-fold one where the source was never held out). Given,
    the calibration is fitted on it, the cut-offs are chosen on each hand-written source calibrated
    by the others (leave one source out: a set the calibration never saw, as a user's is), and the
    report's ``source_shift`` compares the ways of calibrating on the sources held out."""
    pairs, notes = pairs_of(sources, groups, oof, fold, weight)
    if fresh is not None:
        for p, f in zip(pairs, fresh, strict=True):
            p.fresh = f
    decides_at = choose_decides_at(pairs)
    kept = [i for i, p in enumerate(pairs) if passes(p, decides_at)]
    # calibrated on the hand-written sources (what users write; the generators' templates are
    # easier, and a probability pooled with them would claim too much on hand-written notes)
    by_scenario = cross_calibrated(pairs, kept, seed, written)
    judged = written if written is not None else {p.source for p in pairs}
    probs: dict[str, dict[int, float]] = {"scenario_folds": by_scenario}
    if fresh is not None:
        probs["source_out_calibration"] = source_calibrated(pairs, kept, judged, fit_new=False, apply_new=False)
        probs["source_out"] = source_calibrated(pairs, kept, judged, fit_new=False, apply_new=True)
        probs["source_out_refit"] = source_calibrated(pairs, kept, judged, fit_new=True, apply_new=True)
    prob = probs["source_out_refit"] if fresh is not None else by_scenario
    cut = choose(notes, pairs, prob, written)
    fitted = [i for i in kept if written is None or pairs[i].source in written]
    items = {name: its for name, its, _ in sources}
    everything = [it for name, k, _ in groups for it in labelled(items[name][k])]
    decides = train_decides(everything, at=decides_at)
    points, points_long = regime_calibrations(pairs, fitted, new=fresh is not None)
    report: dict[str, Any] = {"decides_at": decides_at, **cut, "per_source": {}}
    if fresh is not None:
        report["source_shift"] = shift_table(pairs, notes, probs, judged, cut["offer_at"])
    report["long_pairs"] = {
        "fitted": sum(pairs[i].long for i in fitted),
        "true": sum(pairs[i].long and pairs[i].label for i in fitted),
        "own_calibration": bool(points_long),
    }
    for name, words in [(s, w) for s in dict.fromkeys(p.source for p in pairs) for w in (False, True)]:
        mine = [n for n in notes if n.source == name and n.words == words]
        if not mine:
            continue
        report["per_source"][name + (" (words only)" if words else "")] = {
            "offers_on_nothing": round(share_offered_on_nothing(mine, prob, cut["offer_at"]).get(name, 0.0), 3),
            "recall_if_confirmed": round(recall_if_confirmed(mine, pairs, prob, cut["offer_at"]), 3),
            "hint_precision": [round(x, 3) for x in top_precision(mine, pairs, prob, cut["hint_at"])],
            "reliability": reliability(pairs, mine, prob, cut["offer_at"]),
        }
    lost = [p for p in pairs if p.label and not passes(p, decides_at)]
    report["true_pairs_gated"] = {"lost": len(lost), "of": sum(p.label for p in pairs)}
    report["pairs_gated"] = {"kept": len(kept), "of": len(pairs)}
    return {
        "decides": decides_to_dict(decides),
        "calibration": [list(p) for p in points],
        "calibration_long": [list(p) for p in points_long],
        **cut,
        "report": report,
    }
