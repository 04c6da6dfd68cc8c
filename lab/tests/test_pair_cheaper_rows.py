"""speed12: the pair linker's cheaper computations give what the ones they replaced gave, to the bit.

Each function speed12 changed is compared with the one it replaced (kept here verbatim as the
reference) on the development scenarios of ``lab/devdata`` (each note against the notes before it,
words only and with made-up cosines that tie and repeat), and on random inputs where ties, signed
zeros and NaN decide which value ``max`` keeps: ``pair_features`` (the note's own values computed once,
each candidate's largest other similarity in one pass each way: ``_others_max``), the trees compiled
with each feature read once into a local (``_compile_trees`` against walking the arrays,
``_tree_sum``), the ``decides`` model's grams (one digit substitution over the text, not one per
token), and ``frame``'s alignment from a range's first pair. Floats are compared by ``float.hex``
(``==`` would take -0.0 for 0.0).
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Sequence

from evomem.adapters.models.pair_weights import shipped_pair_model
from evomem.domain.linkers import decides, pair_model, pair_reading
from evomem.domain.linkers import pair_features as pf
from evomem.domain.linkers.pair_reading import Reading
from evomem.domain.scope import is_default
from lab.tests.devtexts import scenario_texts


def _bits(rows: Sequence[Sequence[float]]) -> list[list[str]]:
    return [[float(v).hex() for v in r] for r in rows]


def _features_before(
    note: Reading,
    cands: Sequence[Reading],
    cos_full: Sequence[float | None],
    cos_dec: Sequence[float | None],
    created: Sequence[int],
    scopes: tuple[str | None, Sequence[str | None]],
    history: Sequence[frozenset[str]],
    chained: Sequence[bool] = (),
) -> list[list[float]]:
    """``pair_features.pair_features`` as it was before speed12, verbatim."""
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
    sim = dec if has_emb else [pf._jacc(note.toks, c.toks) for c in cands]
    rows: list[list[float]] = []
    for i, c in enumerate(cands):
        shared = note.toks & c.toks
        shared_dist = note.dist & c.dist
        left = note.leaving & c.toks
        left_dist = note.leaving & c.dist
        restate = (c.dist - c.toks.intersection(note.leaving)) & (note.toks - note.leaving) if c.dist else set()
        new = note.dist - c.toks
        back = bool(note.back_to & (c.toks | history[i])) if note.back_to else False
        x_cos = dec[i] if has_emb else pf._jacc(note.toks, c.toks)
        row = [
            1.0,
            1.0 if has_emb else 0.0,
            full[i],
            dec[i],
            1.0 / (1 + cos_rank[i]) if has_emb else 0.0,
            (best - dec[i]) if has_emb else 0.0,
            pf._jacc(note.toks, c.toks),
            math.log1p(len(shared)),
            math.log1p(len(shared_dist)),
            len(shared) / len(c.toks) if c.toks else 0.0,
            1.0 if left else 0.0,
            1.0 if left_dist else 0.0,
            1.0 if note_leave_dist and not (note_leave_dist & c.toks) else 0.0,
            len(restate) / len(c.dist) if c.dist else 0.0,
            len(new) / len(note.dist) if note.dist else 0.0,
            1.0 if back else 0.0,
            1.0 if note.change else 0.0,
            1.0 if note.hedge else 0.0,
            1.0 if note.question else 0.0,
            1.0 if c.hedge or c.question else 0.0,
            1.0 if pair_reading.refers(note, c.ident) else 0.0,
            1.0 / (1 + i),
            1.0 / (1 + recency[i]),
            1.0 if not is_default(scope) and not is_default(cand_scopes[i]) else 0.0,
            1.0 if note.long else 0.0,
            1.0 if c.long else 0.0,
            pf._jacc(note.title, c.title) if note.long and c.long else 0.0,
            (1.0 if left else 0.0) * x_cos,
            (1.0 if note.change else 0.0) * x_cos,
            math.log1p(n),
            float(sum(1 for j in range(n) if created[j] > created[i] and sim[j] >= sim[i] - 0.05)),
            sim[i] - max((sim[j] for j in range(n) if j != i), default=0.0),
            1.0 if chained[i] else 0.0,
            1.0 if note.keep else 0.0,
            1.0 if note.decides else 0.0,
            1.0 if note.reports else 0.0,
            1.0 if c.decides else 0.0,
            1.0 if c.reports else 0.0,
            len(note.toks - c.toks) / len(note.toks) if note.toks else 0.0,
            *pair_reading.frame(note, c),
        ]
        rows.append(row)
    return rows


def _cases(scenarios: list[list[Reading]]) -> list[tuple]:
    """(note, candidates, cos_full, cos_dec, created, scopes, history, chained) of each note against
    the notes before it: words only, and with cosines rounded to a few values (ties, and a zero
    of either sign) so that the ranks, margins and counts of close candidates are exercised."""
    rnd = random.Random(12)
    out = []
    for k, notes in enumerate(scenarios):
        for i in range(1, len(notes)):
            cands = notes[:i][-20:]
            n = len(cands)
            created = [rnd.choice([j * 1000, 5000]) for j in range(n)]
            scopes = (rnd.choice([None, "team-a"]), [rnd.choice([None, "team-a", "default"]) for _ in range(n)])
            history = [
                frozenset(rnd.sample(sorted(c.toks), min(2, len(c.toks)))) if k % 3 == 0 else frozenset() for c in cands
            ]
            chained = [rnd.random() < 0.3 for _ in range(n)]
            none = [None] * n
            out.append((notes[i], cands, none, none, created, scopes, history, chained))
            cos = [rnd.choice([0.0, -0.0, 0.25, 0.5, 0.55, 0.9, round(rnd.random(), 2)]) for _ in range(n)]
            full = [rnd.choice([0.1, 0.5, round(rnd.random(), 3)]) for _ in range(n)]
            out.append((notes[i], cands, full, cos, created, scopes, history, chained))
    return out


def test_the_rows_are_the_rows_of_before(scenarios: list[list[Reading]]) -> None:
    cases = _cases(scenarios)
    assert len(cases) > 6000
    for case in cases:
        assert _bits(pf.pair_features(*case)) == _bits(_features_before(*case))


def test_each_candidates_largest_other_is_the_generator_max() -> None:
    rnd = random.Random(7)
    pool = [0.0, -0.0, 0.5, 0.5, -1.0, 1e-9, 0.25, math.inf, -math.inf]
    for trial in range(20000):
        n = rnd.randint(0, 7)
        values = [rnd.choice(pool) if rnd.random() < 0.7 else rnd.random() for _ in range(n)]
        if trial % 10 == 0 and n:
            values[rnd.randrange(n)] = math.nan
        want = [max((values[j] for j in range(n) if j != i), default=0.0) for i in range(n)]
        got = pf._others_max(values)
        assert [v.hex() for v in got] == [v.hex() for v in want], values
        assert all(math.isnan(w) or math.copysign(1, g) == math.copysign(1, w) for g, w in zip(got, want, strict=True))


def test_the_compiled_trees_sum_what_walking_them_sums(scenarios: list[list[Reading]]) -> None:
    model = shipped_pair_model()
    walk = pair_model._compile_trees(model.trees)
    rows = [r for case in _cases(scenarios)[::7] for r in pf.pair_features(*case)]
    assert len(rows) > 5000
    assert all(walk(x).hex() == pair_model._tree_sum(model.trees, x).hex() for x in rows)


def _grams_before(text: str) -> list[str]:
    """``decides.grams`` as it was before speed12, verbatim."""
    toks = [re.sub(r"\d+", "0", t) for t in decides._TOKEN.findall(text[: decides.READ_CHARS].lower())]
    out = dict.fromkeys(toks)
    out.update(dict.fromkeys(f"{a} {b}" for a, b in itertools.pairwise(toks)))
    return list(out)


def test_the_decides_grams_are_the_grams_of_before() -> None:
    texts = [t for ts in scenario_texts() for t in ts]
    texts += ["v1.2.3 on 10.0.0.1: p99 < 250ms?", "x\u0661\u06622 ab12cd 3\u0663 \u0130stanbul 12'34 a.1.b", "007 42nd"]
    rnd = random.Random(3)
    alphabet = "ab1 2.'?\u0661\u0130Z9"
    texts += ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30))) for _ in range(5000)]
    for t in texts:
        assert decides.grams(t) == _grams_before(t), t


def test_a_model_decides_as_before(scenarios: list[list[Reading]]) -> None:
    model = shipped_pair_model()
    assert model.decides is not None
    for ts in scenario_texts():
        for t in ts:
            gs = _grams_before(t)
            z = sum(model.decides.weights.get(g, 0.0) for g in gs) / math.sqrt(len(gs)) if gs else 0.0
            assert model.decides.p(t).hex() == decides._sigmoid(model.decides.intercept + z).hex()


def test_a_reading_splits_as_before() -> None:
    """``decision_text``'s patterns compiled once split and scan as the ``re`` functions did."""
    from evomem.domain.linkers import decision_text as dt

    for ts in scenario_texts():
        for t in ts:
            assert dt.sentences(t) == [p.strip() for p in re.split(r"(?<=[.!?;])\s+|\n+", t) if p.strip()]
            clauses = re.split(r"(?<=[.!?;:\n])\s+", t)
            assert dt._CLAUSES.split(t) == clauses
            assert [[m.span() for m in dt._WORDISH.finditer(c)] for c in clauses] == [
                [m.span() for m in re.finditer(r"[\w.\-+/]*\w", c)] for c in clauses
            ]


def _distinctive_before(text: str) -> set[str]:
    """``decision_text.distinctive`` as it was before speed12, verbatim."""
    from evomem.domain.linkers import decision_text as dt

    out: set[str] = set()
    for sent in re.split(r"(?<=[.!?;:\n])\s+", text):
        for j, m in enumerate(re.finditer(r"[\w.\-+/]*\w", sent)):
            w = m.group(0)
            low = w.lower()
            if low in dt.STOPWORDS or (len(low) < 2 and not low.isdigit()):
                continue
            if any(c.isdigit() for c in w) or (j > 0 and w[0].isupper()) or any(c.isupper() for c in w[1:]):
                out.update(dt.tokens(w))
    return {t for t in out if t not in dt.STOPWORDS}


def test_the_names_and_values_are_those_of_before() -> None:
    """``distinctive`` with each word's kind cached: the same names and values, the same word at
    the start of a sentence and after it."""
    from evomem.domain.linkers import decision_text as dt

    texts = [t for ts in scenario_texts() for t in ts]
    texts += ["Redis stays. Redis is out; the Q3 p99 of gRPC v1.2 is A. a I 7 x.y Ünïcode ÉCOLE", "X", ""]
    for t in texts:
        assert dt.distinctive(t) == _distinctive_before(t), t
