"""The pair linker's features of a (note, candidate) pair, and which candidates it lists.

``pair_features`` gives one row per candidate, in ``FEATURES`` order, over features that name no
product, component or topic:

- embedding similarity of the whole notes and of their decision parts (``decision_text``: the
  "Decision" section, the Status paragraph or the first paragraph of a long document), and the
  candidate's rank by that similarity among the candidates;
- word overlap of the two decision parts (all content words, and names/values);
- the candidate's words in a *leaving* position of the note ("instead of X", "from X",
  "no longer X", "X is out", "replaces X"), a leaving position that names something else,
  the candidate's names restated outside one, new names the note brings;
- a revert ("back to X") to a word of the candidate's chain, a change cue, a hedge;
- an explicit reference to the candidate's identifier ("supersedes ADR-12": ``pair_reading.refers``);
- the frame (``pair_reading.frame``): how far a short note restates the candidate's words with a
  value swapped;
- recency and search rank among the candidates, scope, and lengths.

``plausible_ranked`` says which candidates may be the note's predecessor and ``listed`` which of them
an abstention shows; ``lab.train_linker`` calibrates against the same two rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from evomem.domain.linkers.pair_reading import Reading, frame, refers
from evomem.domain.scope import is_default

MAX_LISTED = 3
NO_EMBEDDING_JACCARD = 0.25  # without an embedder: the word overlap that puts a candidate on the subject

FEATURES = (
    "bias",
    "has_emb",
    "cos_full",
    "cos_dec",
    "cos_rank",
    "cos_gap",
    "jacc",
    "shared",
    "shared_dist",
    "cov_cand",
    "leave_hit",
    "leave_hit_dist",
    "leave_other",
    "restate",
    "new_value",
    "back_hit",
    "change",
    "hedge",
    "question",
    "cand_hedge",
    "explicit_ref",
    "search_rank",
    "recency_rank",
    "scoped_same",
    "note_long",
    "cand_long",
    "title_jacc",
    "leave_x_cos",
    "change_x_cos",
    "n_cands",
    "newer_similar",
    "margin",
    "cand_chained",
    "keep",
    "decides",
    "reports",
    "cand_decides",
    "cand_reports",
    "novel",
    "frame_kept",
    "frame_prefix",
    "frame_value",
)


def _jacc(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def pair_features(
    note: Reading,
    cands: Sequence[Reading],
    cos_full: Sequence[float | None],
    cos_dec: Sequence[float | None],
    created: Sequence[int],
    scopes: tuple[str | None, Sequence[str | None]],
    history: Sequence[frozenset[str]],
    chained: Sequence[bool] = (),
) -> list[list[float]]:
    """One feature vector (in ``FEATURES`` order) per candidate."""
    n = len(cands)
    chained = list(chained) or [False] * n
    has_emb = all(c is not None for c in cos_dec) and n > 0
    dec = [float(c) if c is not None else 0.0 for c in cos_dec]
    full = [float(c) if c is not None else 0.0 for c in cos_full]
    order = sorted(range(n), key=lambda i: -dec[i])
    cos_rank = {i: r for r, i in enumerate(order)}
    best = max(dec) if dec else 0.0
    by_time = sorted(range(n), key=lambda i: -created[i])
    recency = {i: r for r, i in enumerate(by_time)}
    scope, cand_scopes = scopes
    note_leave_dist = note.leaving & note.dist
    jacc = [_jacc(note.toks, c.toks) for c in cands]
    sim = dec if has_emb else jacc
    others = _others_max(sim)
    dated = list(zip(created, sim, strict=True))
    # what depends on the note alone, once (speed12: the same values the loop computed per candidate)
    emb = 1.0 if has_emb else 0.0
    change = 1.0 if note.change else 0.0
    hedge, question = (1.0 if note.hedge else 0.0), (1.0 if note.question else 0.0)
    note_scoped = not is_default(scope)
    note_long = 1.0 if note.long else 0.0
    n_cands = math.log1p(n)
    keep, decides, reports = (1.0 if note.keep else 0.0), (1.0 if note.decides else 0.0), (1.0 if note.reports else 0.0)
    toks, ndist, leaving, back_to = note.toks, note.dist, note.leaving, note.back_to
    moved = toks - leaving
    rows: list[list[float]] = []
    for i, c in enumerate(cands):
        ctoks, cdist = c.toks, c.dist
        shared = toks & ctoks
        shared_dist = ndist & cdist
        left = leaving & ctoks
        left_dist = leaving & cdist
        restate = (cdist - ctoks.intersection(leaving)) & moved if cdist else set()
        new = ndist - ctoks
        back = bool(back_to & (ctoks | history[i])) if back_to else False
        x_cos = dec[i] if has_emb else jacc[i]
        hit = 1.0 if left else 0.0
        ci, si = created[i], sim[i] - 0.05
        row = [
            1.0,
            emb,
            full[i],
            dec[i],
            1.0 / (1 + cos_rank[i]) if has_emb else 0.0,
            (best - dec[i]) if has_emb else 0.0,
            jacc[i],
            math.log1p(len(shared)),
            math.log1p(len(shared_dist)),
            len(shared) / len(ctoks) if ctoks else 0.0,
            hit,
            1.0 if left_dist else 0.0,
            1.0 if note_leave_dist and not (note_leave_dist & ctoks) else 0.0,
            len(restate) / len(cdist) if cdist else 0.0,
            len(new) / len(ndist) if ndist else 0.0,
            1.0 if back else 0.0,
            change,
            hedge,
            question,
            1.0 if c.hedge or c.question else 0.0,
            1.0 if refers(note, c.ident) else 0.0,
            1.0 / (1 + i),
            1.0 / (1 + recency[i]),
            1.0 if note_scoped and not is_default(cand_scopes[i]) else 0.0,
            note_long,
            1.0 if c.long else 0.0,
            _jacc(note.title, c.title) if note.long and c.long else 0.0,
            hit * x_cos,
            change * x_cos,
            n_cands,
            float(sum(1 for cj, sj in dated if cj > ci and sj >= si)),
            sim[i] - others[i],
            1.0 if chained[i] else 0.0,
            keep,
            decides,
            reports,
            1.0 if c.decides else 0.0,
            1.0 if c.reports else 0.0,
            len(toks - ctoks) / len(toks) if toks else 0.0,
            *frame(note, c),
        ]
        rows.append(row)
    return rows


def _others_max(values: Sequence[float]) -> list[float]:
    """For each ``i``, ``max((values[j] for j != i), default=0.0)``, in one pass each way: the
    value the generator's ``max`` keeps (the first of the largest; which zero of +0.0 and -0.0 it
    keeps shows in a difference) where that was a pass over the others per candidate. A NaN
    makes ``max`` depend on where it stands: then the others are walked as before."""
    n = len(values)
    if any(v != v for v in values):
        return [max((values[j] for j in range(n) if j != i), default=0.0) for i in range(n)]
    before: list[float | None] = [None] * n  # max of values[:i], the first of the largest
    cur: float | None = None
    for i, v in enumerate(values):
        before[i] = cur
        if cur is None or v > cur:
            cur = v
    out = [0.0] * n
    cur = None  # max of values[i + 1:], built from the end: values[i + 1] unless a later one is larger
    for i in range(n - 1, -1, -1):
        b = before[i]
        if b is None:
            out[i] = cur if cur is not None else 0.0
        else:
            out[i] = cur if cur is not None and cur > b else b
        v = values[i]
        cur = v if cur is None or not cur > v else cur
    return out


_LEAVE, _COS, _EMB = FEATURES.index("leave_hit"), FEATURES.index("cos_dec"), FEATURES.index("has_emb")
_JACC, _SHARED, _FULL = FEATURES.index("jacc"), FEATURES.index("shared"), FEATURES.index("cos_full")


def plausible_ranked(
    probs: Sequence[float],
    rows: Sequence[Sequence[float]],
    abstain_at: float,
    subject_at: float,
    subject_at_full: float,
) -> list[int]:
    """The candidates that may be the note's predecessor, likeliest first: the model gives it at
    least ``abstain_at``, the note leaves its words, or it is on the note's subject (decision-part
    cosine at least ``subject_at`` or whole-note cosine at least ``subject_at_full``; without
    embeddings, enough shared words). Never none for a pair that may be a replacement. The
    linker lists ``MAX_LISTED`` of them (``listed``); ``lab.train_linker`` calibrates
    ``abstain_at`` against this same rule (the shipped model's ``abstain_at`` was calibrated
    when the list was the first ``MAX_LISTED``)."""

    def same_subject(r: Sequence[float]) -> bool:
        if r[_EMB]:
            return r[_COS] >= subject_at or r[_FULL] >= subject_at_full
        return r[_JACC] >= NO_EMBEDDING_JACCARD and r[_SHARED] >= math.log1p(2)

    ranked = sorted(range(len(probs)), key=lambda i: -probs[i])
    return [i for i in ranked if probs[i] >= abstain_at or rows[i][_LEAVE] > 0 or same_subject(rows[i])]


def listed(plausible: Sequence[int], rows: Sequence[Sequence[float]]) -> list[int]:
    """The ``MAX_LISTED`` candidates an abstention shows, from ``plausible`` (likeliest first):
    the model's likeliest, with the last place kept for the plausible candidate closest to the
    note by meaning (decision-part cosine; without embeddings, shared words) when the model ranks
    it lower. The model's order among candidates it thinks unlikely is weak where it never
    learned the wording: a restated fact with a new value ("The employer of Ann is Vohul" after
    "... is Tenzuzu") restates the candidate's names and brings few new ones, which the model
    reads as a follow-up, so it ranked the true predecessor below other people's facts."""
    top = list(plausible[:MAX_LISTED])
    if len(plausible) <= MAX_LISTED:
        return top

    def close(i: int) -> float:
        r = rows[i]
        return r[_COS] if r[_EMB] else r[_JACC]

    nearest = max(plausible, key=close)
    if nearest not in top:
        top[-1] = nearest
    return top
