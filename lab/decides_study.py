"""How well the ``decides`` gate carries to notes written by someone else (decides19, issue 30).

Leave one development *source* out (not scenario folds): each model is fitted on the labelled notes
(``offers.labelled``: decisions against context, noise and questions) of every other training source,
and scored on the held-out source's. The evaluation sets that are never trained on (dev-g, dev-m,
dev-n) are scored by the models fitted on all training sources. Per held-out set: the AUC, and at the
model's cut-off (chosen on the training sources alone, as ``offers.choose_decides_at`` chooses it: the
highest that loses at most ``DECIDES_LOSS`` of the true pairs, a replacing note or its predecessor
below it, on probabilities cross-fitted over scenario folds of the training sources) the share of
decision notes lost, of non-decisions passed, and of true pairs (gold replacements) lost.

Models:
- ``grams``: the shipped model (``offers.train_decides``: word unigrams and bigrams).
- ``emb``: a logistic regression over the note's MiniLM vector alone.
- ``joint``: one logistic regression over [grams, ``EMB_SCALE`` * vector].
- ``mean``: the mean of the ``grams`` and ``emb`` logits.

Also (``source_out_cut``): the same rule applied to the hand-written training sources' scores each from the
model that left that source out (what a new author's notes get), and its shares per set.

Development data only (``train_linker.dev_files`` refuses blind data).
``python -m lab.decides_study --out lab/results/decides-study`` (writes .json and .md).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lab import offers
from lab import train_linker as tl

EVAL_SETS = ("dev-g", "dev-m", "dev-n")
EMB_C = 1.0
EMB_SCALE = 1.0
FOLDS = 3
HELD: set[str] = set()  # only these held-out sets (``--held``); empty: all

Item = tuple[str, int, str, int]  # text, label, source, scenario index


def items_of(sources: Sequence[Any]) -> list[Item]:
    out: list[Item] = []
    for name, scenarios, _ in sources:
        for k, s in enumerate(scenarios):
            out.extend((t, lab, name, k) for t, lab in offers.labelled(s))
    return out


def true_pairs_of(sources: Sequence[Any]) -> list[tuple[str, str, str, int]]:
    """(note text, predecessor text, source, scenario) of every gold replacement."""
    out = []
    for name, scenarios, _ in sources:
        for k, s in enumerate(scenarios):
            by_i = {n["i"]: n for n in s["notes"]}
            for n in s["notes"]:
                g = n.get("supersedes")
                if g is not None and g in by_i:
                    out.append((n["text"], by_i[g]["text"], name, k))
    return out


class Vectors:
    """The notes' MiniLM vectors (the product's embedder, whole text), kept in a cache file."""

    def __init__(self, cache: Path) -> None:
        from evomem.adapters.models.embedding import OnnxEmbedder

        self.embedder = OnnxEmbedder(threads=1)
        self.key = getattr(self.embedder, "name", None)
        self.cache = cache
        self.vecs: dict[str, list[float]] = tl._read_vector_cache(cache, self.key) if cache.exists() else {}

    def of(self, texts: Sequence[str]) -> Any:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self.vecs]
        for i in range(0, len(missing), 32):
            chunk = missing[i : i + 32]
            for t, v in zip(chunk, self.embedder.encode(chunk), strict=True):
                self.vecs[t] = [round(float(x), 6) for x in v]
            if i % 2048 == 0 and len(missing) > 256:
                print(f"embedded {i} of {len(missing)}", file=sys.stderr)
                tl._write_vector_cache(self.cache, self.key, self.vecs)
        if missing:
            tl._write_vector_cache(self.cache, self.key, self.vecs)
        return np.asarray([self.vecs[t] for t in texts], dtype=np.float64)


Scorer = Callable[[Sequence[str]], Any]  # texts -> logits


def fit_grams(texts: Sequence[str], labels: Sequence[int]) -> Scorer:
    dm = offers.train_decides(list(zip(texts, labels, strict=True)))

    def score(ts: Sequence[str]) -> Any:
        import numpy as np

        return np.asarray([math.log(max(p, 1e-12) / max(1 - p, 1e-12)) for p in map(dm.p, ts)])

    return score


def fit_emb(texts: Sequence[str], labels: Sequence[int], vec: Vectors, c: float = EMB_C) -> Scorer:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=c, max_iter=3000, class_weight="balanced")
    lr.fit(vec.of(texts), np.asarray(labels))

    def score(ts: Sequence[str]) -> Any:
        return lr.decision_function(vec.of(ts))

    return score


def fit_joint(texts: Sequence[str], labels: Sequence[int], vec: Vectors, scale: float = EMB_SCALE) -> Scorer:
    """One L2 logistic regression over the grams (as ``train_decides`` weighs them) and the vector."""
    import numpy as np
    from scipy.sparse import csr_matrix, hstack
    from sklearn.linear_model import LogisticRegression

    from evomem.domain.linkers.decides import grams

    docs = [grams(t) for t in texts]
    freq: dict[str, int] = {}
    for d in docs:
        for gr in d:
            freq[gr] = freq.get(gr, 0) + 1
    vocab = [gr for gr, n in sorted(freq.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2][: offers.MAX_GRAMS]
    index = {gr: j for j, gr in enumerate(vocab)}

    def x_of(ts: Sequence[str]) -> Any:
        rows, cols, vals = [], [], []
        for r, t in enumerate(ts):
            d = grams(t)
            s = 1.0 / math.sqrt(len(d)) if d else 0.0
            for gr in d:
                j = index.get(gr)
                if j is not None:
                    rows.append(r)
                    cols.append(j)
                    vals.append(s)
        xg = csr_matrix((vals, (rows, cols)), shape=(len(ts), len(vocab)))
        return hstack([xg, csr_matrix(vec.of(ts) * scale)]).tocsr()

    lr = LogisticRegression(C=offers.DECIDES_C, max_iter=3000, class_weight="balanced")
    lr.fit(x_of(texts), np.asarray(labels))
    return lambda ts: lr.decision_function(x_of(ts))


def auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores)) if 0 < sum(labels) < len(labels) else math.nan


def cutoff(true_min: Sequence[float], loss: float = offers.DECIDES_LOSS) -> float:
    t = sorted(true_min)
    return t[int(len(t) * loss)] if t else -math.inf


def study(fitters: Mapping[str, Callable[[Sequence[str], Sequence[int]], Scorer]], sources: Any, evals: Any) -> Any:
    """Per held-out set and model: AUC, and the shares lost and passed at the model's cut-off.

    The cut-off: ``offers.choose_decides_at``'s rule on the other training sources' true pairs,
    scored out of fold over scenario folds of all training sources (``FOLDS``; fitted once: a held-out
    set's own notes are in those folds' training data, which moves the cut-off little and costs
    ``FOLDS`` fits instead of ``FOLDS`` per set). ``mean`` is the mean of the ``grams`` and ``emb``
    logits (no fit of its own)."""
    import numpy as np

    train_items = items_of(sources)
    train_pairs = true_pairs_of(sources)
    names = [n for n, _, _ in sources]
    models = [*fitters, "mean"] if {"grams", "emb"} <= set(fitters) else list(fitters)
    if {"grams", "emb30"} <= set(fitters):
        models.append("mean30")
    fold = {(it[2], it[3]): zlib.crc32(f"{it[2]}/{it[3]}/7".encode()) % FOLDS for it in train_items}
    oof: dict[str, dict[str, float]] = {m: {} for m in models}
    for k in range(FOLDS):
        inside = [it for it in train_items if fold[(it[2], it[3])] != k]
        outside = list(dict.fromkeys(it[0] for it in train_items if fold[(it[2], it[3])] == k))
        for m, fitter in fitters.items():
            print(f"fold {k}: {m}", file=sys.stderr)
            sc = fitter([it[0] for it in inside], [it[1] for it in inside])
            oof[m].update(zip(outside, (float(x) for x in sc(outside)), strict=True))
    for mean, emb in (("mean", "emb"), ("mean30", "emb30")):
        if mean in models:
            oof[mean] = {t: (oof["grams"][t] + oof[emb][t]) / 2 for t in oof["grams"]}
    held: list[tuple[str, list[Item], set[str], list[Item], list[Any]]] = []
    for name in names:
        tr = [it for it in train_items if it[2] != name]
        held.append(
            (
                name,
                tr,
                {n for n in names if n != name},
                [it for it in train_items if it[2] == name],
                [p for p in train_pairs if p[2] == name],
            )
        )
    eval_items, eval_pairs = items_of(evals), true_pairs_of(evals)
    for e in (n for n, _, _ in evals):
        held.append(
            (e, train_items, set(names), [it for it in eval_items if it[2] == e], [p for p in eval_pairs if p[2] == e])
        )
    if HELD:
        held = [h for h in held if h[0] in HELD]
    out: dict[str, dict[str, Any]] = {}
    full: dict[str, Scorer] = {}
    kept: dict[str, dict[str, tuple[list[float], list[float], list[float]]]] = {}
    for name, tr, others, te, te_pairs in held:
        print(f"held out {name}: {len(tr)} training notes, {len(te)} held out", file=sys.stderr)
        row: dict[str, Any] = {"notes": len(te), "decisions": sum(it[1] for it in te), "true_pairs": len(te_pairs)}
        texts = list(dict.fromkeys([it[0] for it in te] + [a for p in te_pairs for a in p[:2]]))
        scores: dict[str, dict[str, float]] = {}
        for m, fitter in fitters.items():
            if len(tr) == len(train_items):  # an evaluation set: the models of all training sources
                if m not in full:
                    full[m] = fitter([it[0] for it in tr], [it[1] for it in tr])
                sc = full[m]
            else:
                sc = fitter([it[0] for it in tr], [it[1] for it in tr])
            scores[m] = dict(zip(texts, (float(x) for x in sc(texts)), strict=True))
        for mean, emb in (("mean", "emb"), ("mean30", "emb30")):
            if mean in models:
                scores[mean] = {t: (scores["grams"][t] + scores[emb][t]) / 2 for t in texts}
        for m in models:
            o = oof[m]
            at = cutoff([min(o[a], o[b]) for a, b, src, _ in train_pairs if src in others and a in o and b in o])
            s_of = scores[m]
            ys = np.asarray([it[1] for it in te])
            ss = np.asarray([s_of[it[0]] for it in te])
            pair_min = [min(s_of[a], s_of[b]) for a, b, _, _ in te_pairs]
            kept.setdefault(m, {})[name] = (pair_min, ss[ys == 0].tolist(), ss[ys == 1].tolist())
            row[m] = {
                "auc": round(auc(ss.tolist(), ys.tolist()), 4),
                "at_logit": round(at, 4),
                "decisions_lost": round(float(np.mean(ss[ys == 1] < at)), 4) if (ys == 1).any() else None,
                "nondecisions_passed": round(float(np.mean(ss[ys == 0] >= at)), 4) if (ys == 0).any() else None,
                "true_pairs_lost": round(float(np.mean(np.asarray(pair_min) < at)), 4) if pair_min else None,
            }
            if m != "grams" and "grams" in row and pair_min:
                # at the cut-off that loses as many of the set's true pairs as ``grams`` lost there
                # (an oracle cut-off: the ranking alone, not how the cut-off carries)
                lost = round(row["grams"]["true_pairs_lost"] * len(pair_min))
                t = sorted(pair_min)[min(lost, len(pair_min) - 1)]
                row[m]["at_grams_loss"] = {
                    "decisions_lost": round(float(np.mean(ss[ys == 1] < t)), 4),
                    "nondecisions_passed": round(float(np.mean(ss[ys == 0] >= t)), 4),
                }
            print(f"  {m}: {row[m]}", file=sys.stderr)
        out[name] = row
    out["_source_out_cut"] = source_out_cut(kept, {n for n in names if n.startswith("dev-")})
    return out


def source_out_cut(
    kept: Mapping[str, Mapping[str, tuple[list[float], list[float], list[float]]]], written: set[str]
) -> dict[str, Any]:
    """The cut-off ``choose_decides_at``'s rule gives on the scores of the hand-written training sources
    each held out of its model (not scenario folds), and what it does on the evaluation sets."""
    res: dict[str, Any] = {}
    for m, per in kept.items():
        pool = [x for n, (pm, _, _) in per.items() if n in written for x in pm]
        if not pool:
            continue
        at = cutoff(pool)
        row: dict[str, Any] = {"at_logit": round(at, 4)}
        for n, (pm, nd, dd) in per.items():
            row[n] = {
                "true_pairs_lost": round(sum(x < at for x in pm) / len(pm), 4) if pm else None,
                "nondecisions_passed": round(sum(x >= at for x in nd) / len(nd), 4) if nd else None,
                "decisions_lost": round(sum(x < at for x in dd) / len(dd), 4) if dd else None,
            }
        res[m] = row
    return res


def table(res: Mapping[str, Any], models: Sequence[str]) -> str:
    head = "| held out | notes (decisions) | true pairs | " + " | ".join(
        f"{m} AUC | {m} lost / passed / pairs lost" for m in models
    )
    lines = [head + " |", "|" + "---|" * (3 + 2 * len(models))]
    for name, row in res.items():
        if name.startswith("_"):
            continue
        cells = [name, f"{row['notes']} ({row['decisions']})", str(row["true_pairs"])]
        for m in models:
            r = row[m]
            cells.append(f"{r['auc']:.3f}")
            cells.append(f"{r['decisions_lost']} / {r['nondecisions_passed']} / {r['true_pairs_lost']}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cut_table(res: Mapping[str, Any]) -> str:
    """The source-out cut-off's shares per set (``source_out_cut``)."""
    cuts = res.get("_source_out_cut", {})
    lines = []
    for m, row in cuts.items():
        lines += [
            "",
            f"{m}: cut-off from the hand-written sources each held out of its model, logit {row['at_logit']}",
            "",
            "| set | true pairs lost | decisions lost | non-decisions passed |",
            "|---|---|---|---|",
        ]
        for n, r in row.items():
            if n != "at_logit":
                lines.append(f"| {n} | {r['true_pairs_lost']} | {r['decisions_lost']} | {r['nondecisions_passed']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.decides_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="lab/results/decides-study")
    ap.add_argument("--vector-cache", default="build/lab/decides-vectors.json")
    ap.add_argument("--models", default="grams,emb,joint,mean")
    ap.add_argument("--sets", default="", help="only these held-out sets (comma-separated)")
    ap.add_argument("--held", default="", help="only these held-out sets (comma-separated)")
    args = ap.parse_args(argv)
    HELD.update(x for x in args.held.split(",") if x)
    sources = tl.load_sources(tl.dev_files(), 1)
    evals = tl.load_sources([tl.DEVDATA / f"{n}.jsonl" for n in EVAL_SETS], 0)
    for f in [tl.DEVDATA / f"{n}.jsonl" for n in EVAL_SETS]:
        if any(b in str(f.resolve()) for b in tl.BLIND):
            raise SystemExit(f"refusing blind data: {f}")
    vec = Vectors(Path(args.vector_cache))
    allt = [it[0] for it in items_of(sources) + items_of(evals)]
    allt += [a for p in true_pairs_of(sources) + true_pairs_of(evals) for a in p[:2]]
    vec.of(list(dict.fromkeys(allt)))
    fitters: dict[str, Callable[[Sequence[str], Sequence[int]], Scorer]] = {
        "grams": fit_grams,
        "emb": lambda t, y: fit_emb(t, y, vec),
        "joint": lambda t, y: fit_joint(t, y, vec),
        "joint3": lambda t, y: fit_joint(t, y, vec, scale=3.0),
        "emb30": lambda t, y: fit_emb(t, y, vec, c=30.0),
    }
    models = args.models.split(",")
    fitters = {m: f for m, f in fitters.items() if m in models}
    if args.sets:
        keep = set(args.sets.split(","))
        sources_eval = [s for s in evals if s[0] in keep]
        res = study(fitters, sources, sources_eval)
        res = {k: v for k, v in res.items() if k in keep}
    else:
        res = study(fitters, sources, evals)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out + ".json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    Path(args.out + ".md").write_text(table(res, models) + "\n" + cut_table(res) + "\n", encoding="utf-8")
    print(table(res, models))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
