"""A tiny Okapi BM25, in plain Python, for the flat baselines and the oracle.

No stemming, no stopwords: lowercased ``\\w+`` tokens, k1=1.2, b=0.75 and the
non-negative IDF ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (as Lucene). Documents that
share no term with the query are never returned. Ties keep insertion order (older
first), like a store scanning its rows in order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"\w+", re.UNICODE)

K1 = 1.2
B = 0.75


def tokenize(text: str) -> list[str]:
    return [t.strip("_") for t in _TOKEN.findall(text.lower()) if t.strip("_")]


class BM25:
    def __init__(self, docs: Sequence[str], *, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self.n = len(docs)
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, doc in enumerate(docs):
            tf = Counter(tokenize(doc))
            self.lengths.append(sum(tf.values()))
            for term, f in tf.items():
                self.postings.setdefault(term, []).append((i, f))
        self.avgdl = (sum(self.lengths) / self.n) if self.n else 0.0
        self.idf = {t: math.log(1.0 + (self.n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self.postings.items()}

    def scores(self, query: str) -> dict[int, float]:
        """Score of every document that shares a term with the query."""
        out: dict[int, float] = {}
        for term in dict.fromkeys(tokenize(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for i, f in self.postings[term]:
                norm = self.k1 * (1.0 - self.b + self.b * self.lengths[i] / self.avgdl)
                out[i] = out.get(i, 0.0) + idf * f * (self.k1 + 1.0) / (f + norm)
        return out

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """Indices and scores of the ``k`` best documents with a positive score, best first."""
        scored = [(i, s) for i, s in self.scores(query).items() if s > 0.0]
        scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:k]
