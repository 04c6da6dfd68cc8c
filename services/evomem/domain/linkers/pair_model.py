"""The pair model: the probability that a note replaces a candidate, from one row of ``pair_features``.

Boosted trees (or a logistic regression) and the linker's thresholds, built from the weights file's
contents (``PairModel.from_dict``); reading that file is an adapter's work
(``evomem.adapters.models.pair_weights``). Inference is plain Python, a few hundred comparisons per
pair: the trees are compiled once per model into one function of nested ifs (``_compile_trees``:
the same comparisons and the same sum as walking them, ``_tree_sum``). The shipped trees are
histogram boosting with monotone constraints (``lab.train_linker.MONOTONE``): the probability may
only rise with the evidence that the two notes share a subject (cosines, shared words, the frame) or
that the note leaves the candidate, so a fold cannot teach the trees a pocket of unrelated pairs to
link (the unconstrained trees gave p 0.99 to pairs such as a release note against another project's
deprecation).
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evomem.domain.linkers.decides import DecidesModel
from evomem.domain.linkers.pair_features import FEATURES


def _tree_sum(trees: Sequence[Mapping[str, Sequence[float]]], x: Sequence[float]) -> float:
    """The sum of the trees' leaves for ``x``, walking the arrays (what ``_compile_trees`` compiles)."""
    total = 0.0
    for t in trees:
        feature, threshold, left, right, value = t["f"], t["t"], t["l"], t["r"], t["v"]
        k = 0
        while feature[k] >= 0:
            k = int(left[k]) if x[int(feature[k])] <= threshold[k] else int(right[k])
        total += value[k]
    return total


def _compile_trees(trees: Sequence[Mapping[str, Sequence[float]]]) -> Callable[[Sequence[float]], float]:
    """``_tree_sum`` as one Python function of nested ifs, one block per tree: the same
    comparisons (each threshold written with ``repr``, which reads back as the same float) and
    the leaves added in the same order, so the same sum to the last bit; about 8 times faster
    than walking the arrays (a long note has 20 candidates, each through every tree). Each
    feature a tree reads is taken from ``x`` once into a local variable (speed12: a quarter less
    time than indexing ``x`` at each of the ~1,000 comparisons of a pair)."""
    used = sorted({int(f) for t in trees for f in t["f"] if f >= 0})
    # each feature the trees read is read from ``x`` once, into a local (``x_3``), not at every comparison
    lines = ["def walk(x):", *(f"    x_{f} = x[{f}]" for f in used), "    total = 0.0"]

    def emit(t: Mapping[str, Sequence[float]], k: int, depth: int) -> None:
        pad = "    " * depth
        f = t["f"][k]
        if f < 0:
            lines.append(f"{pad}total += {float(t['v'][k])!r}")
            return
        lines.append(f"{pad}if x_{int(f)} <= {float(t['t'][k])!r}:")
        emit(t, int(t["l"][k]), depth + 1)
        lines.append(f"{pad}else:")
        emit(t, int(t["r"][k]), depth + 1)

    for t in trees:
        emit(t, 0, 1)
    lines.append("    return total")
    namespace: dict[str, Any] = {}
    try:
        exec(compile("\n".join(lines), "<pair_model trees>", "exec"), namespace)  # our own model's numbers only
    except (SyntaxError, RecursionError, MemoryError, ValueError):  # trees too deep to compile: walk them
        return functools.partial(_tree_sum, trees)
    return namespace["walk"]  # type: ignore[no-any-return]


def calibrate(points: Sequence[tuple[float, float]], raw: float) -> float:
    """``raw`` through a calibration's (raw, probability) points, raw increasing: linear between
    them, flat beyond them; ``raw`` itself when there are none."""
    if not points:
        return raw
    if raw <= points[0][0]:
        return points[0][1]
    if raw >= points[-1][0]:
        return points[-1][1]
    k = bisect.bisect_right(points, (raw, math.inf))
    (x0, y0), (x1, y1) = points[k - 1], points[k]
    return y0 if x1 <= x0 else y0 + (y1 - y0) * (raw - x0) / (x1 - x0)


_NOTE_LONG, _CAND_LONG = FEATURES.index("note_long"), FEATURES.index("cand_long")


def is_long(x: Sequence[float]) -> bool:
    """Whether the pair of feature row ``x`` is in the long documents' regime."""
    return bool(x[_NOTE_LONG] or x[_CAND_LONG])


def logit(p: float) -> float:
    """The log-odds of ``p``, clipped to [1e-6, 1 - 1e-6]."""
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def sigmoid(z: float) -> float:
    """The logistic function, without overflow for a large ``|z|``."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass(frozen=True, slots=True)
class PairModel:
    """The pair model, one of two kinds (``kind`` in the JSON file):

    - ``lr``: standardised logistic regression, p = sigmoid(b + sum w * (x - mean) / scale);
    - ``gbt``: gradient-boosted trees, p = sigmoid(init + rate * sum of the trees' leaves), each
      tree as parallel arrays (feature, threshold, left, right, value; feature -1 is a leaf).
    """

    kind: str
    link_at: float
    abstain_at: float
    link_at_long: float | None = None  # when the note or the candidate is long (None: ``link_at``)
    subject_at: float = 1.0  # decision-part cosine from which a candidate is on the note's subject
    subject_at_full: float = 1.0  # whole-note cosine from which it is (1.0, an older file: never)
    weights: tuple[float, ...] = ()
    mean: tuple[float, ...] = ()
    scale: tuple[float, ...] = ()
    intercept: float = 0.0
    trees: tuple[Mapping[str, Sequence[float]], ...] = ()
    rate: float = 0.1
    features: tuple[str, ...] = FEATURES
    meta: Mapping[str, Any] | None = None
    # calibration: (raw probability, probability that the pair is a replacement) points, raw
    # increasing, fitted out of fold on development data (``lab/offers.py``); () reads raw as is
    calibration: tuple[tuple[float, float], ...] = ()
    # the same for long documents (the note or the candidate ``note_long``/``cand_long``): records of
    # one domain look alike, and the short notes' calibration claimed too much on them; () uses
    # ``calibration``
    calibration_long: tuple[tuple[float, float], ...] = ()
    offer_at: float | None = None  # calibrated p from which a candidate is offered (None: the older rules)
    hint_at: float = 1.01  # calibrated p from which recall marks a hit "may be replaced by"
    # the same when the possible successor is itself a result of that recall (both answer one
    # question: an offer at a given p is right more often there; ``lab/recall_hints.py``); None: ``hint_at``
    hint_at_shown: float | None = None
    decides: DecidesModel | None = None  # whether a note decides anything (``decides.py``)
    # the trees as one compiled function (``_compile_trees``), made by the first ``prob``
    _walk: list[Callable[[Sequence[float]], float]] = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairModel:
        """The model a weights file holds (its parsed JSON). Raises ValueError when the file's
        features are not this linker's ``FEATURES``."""
        if tuple(data["features"]) != FEATURES:
            raise ValueError(f"features {data['features']} do not match this linker's {FEATURES}")
        return cls(
            kind=data["kind"],
            link_at=float(data["link_at"]),
            link_at_long=float(data["link_at_long"]) if data.get("link_at_long") is not None else None,
            abstain_at=float(data["abstain_at"]),
            subject_at=float(data.get("subject_at", 1.0)),
            subject_at_full=float(data.get("subject_at_full", 1.0)),
            weights=tuple(data.get("weights", ())),
            mean=tuple(data.get("mean", ())),
            scale=tuple(data.get("scale", ())),
            intercept=float(data.get("intercept", 0.0)),
            trees=tuple(data.get("trees", ())),
            rate=float(data.get("rate", 0.1)),
            features=tuple(data["features"]),
            meta=data.get("training"),
            calibration=tuple((float(a), float(b)) for a, b in data.get("calibration", ())),
            calibration_long=tuple((float(a), float(b)) for a, b in data.get("calibration_long", ())),
            offer_at=float(data["offer_at"]) if data.get("offer_at") is not None else None,
            hint_at=float(data.get("hint_at", 1.01)),
            hint_at_shown=float(data["hint_at_shown"]) if data.get("hint_at_shown") is not None else None,
            decides=DecidesModel.from_dict(data["decides"]) if data.get("decides") else None,
        )

    def prob(self, x: Sequence[float]) -> float:
        """The probability that the pair of feature row ``x`` (``FEATURES`` order) is a
        replacement: the model's output through its calibration (the long documents' own when
        the note or the candidate is long and the file has one)."""
        return self.calibrated(self.raw(x), long=is_long(x))

    def calibrated(self, raw: float, *, long: bool = False) -> float:
        """``raw`` through the calibration (``calibrate``) of its regime."""
        return calibrate(self.calibration_long if long and self.calibration_long else self.calibration, raw)

    def raw(self, x: Sequence[float]) -> float:
        """The model's own output for feature row ``x``, before calibration."""
        z = self.intercept
        if self.kind == "gbt":
            if not self._walk:
                self._walk.append(_compile_trees(self.trees))
            return sigmoid(z + self.rate * self._walk[0](x))
        for w, v, m, s in zip(self.weights, x, self.mean, self.scale, strict=True):
            z += w * (v - m) / s
        return sigmoid(z)
