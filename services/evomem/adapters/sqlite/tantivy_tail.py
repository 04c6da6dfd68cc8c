"""The Tantivy index's tail: the nodes written since its last commit, scored in Python as Tantivy would.

    pending = Pending(seq, namespace, doc, terms)          # a node's new document and terms per field
    fresh = score_tail(searcher, tail, tokens, namespace, avg)   # [(score, rowid)] of the tail's nodes

``tantivy_index.TantivyWords`` keeps the tail (``Pending`` by rowid) until its committer commits it;
a search merges the committed index's hits with ``score_tail``'s. ``Progress`` draws its rebuilds'
progress bar.
"""

from __future__ import annotations

import logging
import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evomem.adapters.sqlite.search import FTS_COLUMNS, FTS_WEIGHTS

log = logging.getLogger(__name__)

WEIGHTS = dict(zip(FTS_COLUMNS, FTS_WEIGHTS, strict=True))
#: Tantivy's BM25 constants.
K1, B = 1.2, 0.75


@dataclass
class Pending:
    """A node whose words changed since the index's last commit: its new document (None: it
    leaves the index) and its terms per field, to score it before it is committed; ``words``
    (every field's terms) and ``lengths`` (each field's length in tokens) are worked out once."""

    seq: int
    namespace: str | None
    doc: Any
    terms: dict[str, Counter[str]]
    purged: bool = False  # its segment is rewritten (``erase_purged``): the words leave the files
    words: frozenset[str] = field(init=False)
    lengths: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.words = frozenset(t for counts in self.terms.values() for t in counts)
        self.lengths = {f: sum(counts.values()) for f, counts in self.terms.items()}


def score_tail(
    searcher: Any, tail: dict[int, Pending], tokens: list[str], namespace: str, avg: dict[str, float]
) -> list[tuple[float, int]]:
    """The tail's nodes of ``namespace`` with one of ``tokens`` scored as Tantivy scores them (BM25
    per field, boosted, summed in the query's order), with the committed index's document
    frequencies and the average field lengths ``avg``; ``weight * idf * (K1 + 1)`` once per (field,
    token) and each (field, length)'s norm once, a node or a field with none of the tokens skipped,
    and each field looked up only for the node's own tokens (in the query's order: the same sum)."""
    wanted = frozenset(tokens)
    n = max(searcher.num_docs, 1)
    part: dict[tuple[str, str], float] = {}  # weight * idf * (K1 + 1)
    norms: dict[tuple[str, int], float] = {}
    out = []
    for rowid, pending in tail.items():
        if pending.namespace != namespace or wanted.isdisjoint(pending.words):
            continue
        own = [t for t in tokens if t in pending.words]
        score = 0.0
        for f, counts in pending.terms.items():
            if wanted.isdisjoint(counts):
                continue
            key = (f, pending.lengths[f])
            norm = norms.get(key)
            if norm is None:
                norm = norms[key] = K1 * (1 - B + B * key[1] / avg[f])
            for token in own:
                tf = counts.get(token, 0)
                if not tf:
                    continue
                c = part.get((f, token))
                if c is None:
                    df = searcher.doc_freq(f, token)
                    c = part[(f, token)] = WEIGHTS[f] * math.log(1 + (n - df + 0.5) / (df + 0.5)) * (K1 + 1)
                score += c * tf / (tf + norm)
        if score > 0:
            out.append((score, rowid))
    return out


class Progress:
    """A progress bar on stderr when it is a terminal; a log line (info) every tenth otherwise, so a
    build in the background (``words.BuildingWords``) shows in the server's log."""

    def __init__(self, total: int, what: str) -> None:
        self.total, self.what, self.done, self.shown = max(total, 1), what, 0, -1
        self.tty = sys.stderr.isatty()

    def step(self, n: int = 1) -> None:
        self.done += n
        share = min(100, self.done * 100 // self.total)
        if share == self.shown or (not self.tty and share % 10):
            return
        self.shown = share
        if not self.tty:
            log.info("%s %d%% (%s/%s)", self.what, share, f"{self.done:,}", f"{self.total:,}")
            return
        bar = "#" * (share // 4) + "." * (25 - share // 4)
        end = "\r" if self.tty and share < 100 else "\n"
        sys.stderr.write(f"{self.what} [{bar}] {share:3d}% ({self.done:,}/{self.total:,}){end}")
        sys.stderr.flush()
