"""Whether a note decides something: the probability, from its words, learned from data.

A question ("who owns the payment alerts now?"), a reminder, a report or a complaint about a
component decides nothing: it neither replaces a decision nor is replaced by one, however many words
it shares with one. The pair linker offers no predecessor to a note that decides nothing and offers
no such note as a predecessor (``PairLinker.decide``), below the model's ``decides_at``.

The model is a logistic regression over the note's word unigrams and bigrams (and its question
marks), each present gram counting ``1 / sqrt(number of grams)`` so that a long record weighs no more
than a line. ``lab/offers.py`` fits it on the development notes' kinds (a decision, a scoped
decision or a distractor decision against context, noise and the scenarios' questions) and writes it
into the pair model's file (``decides``); no word is a rule here, each is one weight among thousands.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

#: Characters of a note that are read (a long record's decision is stated early; its tail adds grams
#: of every kind).
READ_CHARS = 2000


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


_TOKEN = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*|\?")
_DIGITS = re.compile(r"[0-9]+")


def grams(text: str) -> list[str]:
    """The distinct unigrams and bigrams of ``text`` (lower case, numbers as ``0``), in order."""
    # every run of ASCII digits as "0" before the tokens are found: a token's digits are ASCII
    # ones (``_TOKEN``) and a run becomes one character of the same class, so the same tokens as
    # replacing ``\d+`` in each token (speed12: one substitution, not one per token)
    toks = _TOKEN.findall(_DIGITS.sub("0", text[:READ_CHARS].lower()))
    out = dict.fromkeys(toks)
    out.update(dict.fromkeys(f"{a} {b}" for a, b in itertools.pairwise(toks)))
    return list(out)


@dataclass(frozen=True, slots=True)
class DecidesModel:
    """p(decides) = sigmoid(intercept + sum of the present grams' weights / sqrt(number of grams))."""

    intercept: float
    weights: Mapping[str, float]
    at: float  # below this probability a note decides nothing
    _cache: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> DecidesModel:
        weights = data["weights"]
        if not isinstance(weights, Mapping):
            raise ValueError("decides: weights must be an object of gram -> weight")
        return cls(
            intercept=float(data["intercept"]),  # type: ignore[arg-type]
            weights={str(k): float(v) for k, v in weights.items()},
            at=float(data["at"]),  # type: ignore[arg-type]
        )

    def p(self, text: str) -> float:
        """The probability that ``text`` decides something (cached by text)."""
        got = self._cache.get(text)
        if got is None:
            gs = grams(text)
            z = sum(self.weights.get(g, 0.0) for g in gs) / math.sqrt(len(gs)) if gs else 0.0
            got = _sigmoid(self.intercept + z)
            if len(self._cache) > 8192:
                self._cache.clear()
            self._cache[text] = got
        return got

    def decides(self, text: str) -> bool:
        return self.p(text) >= self.at
