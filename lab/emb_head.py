"""An interaction head over the decision parts' frozen sentence embeddings, as one more pair feature.

The pair model's embedding features are scalars: the cosine of the two whole notes and of their
decision parts. A cosine says "same subject"; it cannot say "same subject, new value / new choice"
against "same subject, unrelated note". This experiment (head9, issue 30) learns a linear head over
the elementwise product ``u * v`` and the absolute difference ``|u - v|`` of the two decision parts'
MiniLM vectors (384 dims each, the vectors the linker already computes for ``cos_dec``), trained on
the replays' pairs to predict "the note replaces this candidate". Its score, out of fold on the
training replays (the folds of ``train_linker.fold_of``, so the trees never see an in-sample score),
is the feature ``emb_head``; the trees are refitted with it.

    # the eval replays (dev-g, dev-m, dev-n: never trained on), with embeddings
    python -m lab.emb_head replay --out build/lab/eval-groups.pkl --vector-cache build/lab/vectors-eval.json
    # train the pair model with the head (python -m lab.emb_head fit <train_linker's arguments>) or without, then:
    python -m lab.emb_head eval --model build/lab/pair/pair_model.json --groups build/lab/eval-groups.pkl ...

Blind data is refused (``train_linker.dev_files``'s rule).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evomem.domain.linkers import pair as pl
from evomem.domain.linkers import pair_features as pf
from evomem.domain.linkers import pair_model as pm
from evomem.domain.linkers.pair_reading import declares, read
from lab import train_linker as tl

EVAL_SETS = ("dev-g", "dev-m", "dev-n")
NAME = "emb_head"
DIM = 384
#: The head's L2 penalty (sklearn's C, on the pairs' weights as train_linker gives them).
HEAD_C = 1.0


# ----------------------------------------------------------------------------- vectors


def part_key(text: str) -> str:
    """The text whose vector stands for ``text``'s decision part (``pair._part_key``, as the linker embeds it)."""
    return pl._part_key(text, read(text).part)


def texts_of(sources: Sequence[Any], groups: Sequence[Any]) -> list[list[tuple[str, list[str]]]]:
    """Per group, per entry: (the note's text, its candidates' texts), as the replay remembered them."""
    items = {name: its for name, its, _ in sources}
    out = []
    for name, k, entries in groups:
        by_i = {n["i"]: n["text"] for n in items[name][k]["notes"]}
        out.append([(by_i[e["note"]], [e["extra"][-c - 1] if c < 0 else by_i[c] for c in e["cands"]]) for e in entries])
    return out


def head_input(u: Any, v: Any) -> Any:
    """The head's input of pairs (rows of ``u`` and ``v``): ``u * v`` and ``|u - v|``."""
    import numpy as np

    return np.hstack([u * v, np.abs(u - v)])


class Vectors:
    """The decision parts' vectors from a vector cache (text -> vector), embedded when missing."""

    def __init__(self, cache: dict[str, list[float]], embedder: Any = None) -> None:
        self.cache = cache
        self.embedder = embedder
        self.keys: dict[str, str] = {}

    def key(self, text: str) -> str:
        k = self.keys.get(text)
        if k is None:
            k = self.keys[text] = part_key(text)
        return k

    def of(self, texts: Sequence[str]) -> Any:
        import numpy as np

        keys = [self.key(t) for t in texts]
        missing = [k for k in dict.fromkeys(keys) if k not in self.cache]
        if missing:
            if self.embedder is None:  # a few: a note the service stored as a duplicate of another text
                from evomem.adapters.models.embedding import OnnxEmbedder

                print(f"emb_head: embedding {len(missing)} decision parts the cache lacks", file=sys.stderr)
                self.embedder = OnnxEmbedder(threads=1)
            for k, vec in zip(missing, self.embedder.encode(missing), strict=True):
                self.cache[k] = [float(x) for x in vec]
        return np.asarray([self.cache[k] for k in keys], dtype=np.float32)


def pair_table(sources: Sequence[Any], groups: Sequence[Any], vectors: Vectors) -> dict[str, Any]:
    """Every row with embeddings (``has_emb``) of the groups: its group, position in the flat row
    order, label, and the index of its (note part, candidate part) pair in the deduplicated list
    of part pairs (the linked and unlinked replays share most pairs)."""
    import numpy as np

    has_emb = pf.FEATURES.index("has_emb")
    texts = texts_of(sources, groups)
    pair_index: dict[tuple[str, str], int] = {}
    rows_pos, rows_pair, rows_group, rows_label = [], [], [], []
    pos = 0
    for g, ((_, _, entries), tx) in enumerate(zip(groups, texts, strict=True)):
        for e, (note, cands) in zip(entries, tx, strict=True):
            nk = vectors.key(note)
            for row, lab, cand in zip(e["rows"], e["labels"], cands, strict=True):
                if row[has_emb]:
                    key = (nk, vectors.key(cand))
                    j = pair_index.setdefault(key, len(pair_index))
                    rows_pos.append(pos)
                    rows_pair.append(j)
                    rows_group.append(g)
                    rows_label.append(lab)
                pos += 1
    keys = list(pair_index)
    parts = sorted({k for pair in keys for k in pair})
    at = {k: i for i, k in enumerate(parts)}
    mat = vectors.of(parts)
    return {
        "pos": np.asarray(rows_pos),
        "pair": np.asarray(rows_pair),
        "group": np.asarray(rows_group),
        "label": np.asarray(rows_label, dtype=float),
        "u": mat[[at[a] for a, _ in keys]],
        "v": mat[[at[b] for _, b in keys]],
        "n_rows": pos,
    }


# ----------------------------------------------------------------------------- the head


def fit_head(x: Any, y: Any, w: Any, c: float = HEAD_C) -> tuple[list[float], float]:
    """A weighted L2 logistic regression on the head's input: (weights, intercept)."""
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=c, max_iter=3000)
    lr.fit(x, y, sample_weight=w)
    return [float(v) for v in lr.coef_[0]], float(lr.intercept_[0])


def head_score(weights: Sequence[float], intercept: float, x: Any) -> Any:
    """The head's logit for rows of its input."""
    import numpy as np

    return x @ np.asarray(weights, dtype=np.float32) + intercept


def _pair_data(table: dict[str, Any], rows: Any, weight: Any) -> tuple[Any, Any, Any, Any]:
    """The deduplicated part pairs of ``rows`` (indices into the table's rows): their input,
    label (a pair is true if any of its rows is) and summed weight."""
    import numpy as np

    pairs = table["pair"][rows]
    uniq, inv = np.unique(pairs, return_inverse=True)
    y = np.zeros(len(uniq))
    np.maximum.at(y, inv, table["label"][rows])
    w = np.zeros(len(uniq))
    np.add.at(w, inv, weight[rows])
    x = head_input(table["u"][uniq], table["v"][uniq])
    return x, y, w / w.mean(), uniq


def out_of_fold(
    table: dict[str, Any], weight: Any, fold: dict[int, int], c: float = HEAD_C, fit_on: Any = None
) -> tuple[Any, Any]:
    """Each table row's head logit from a head fitted on the other folds' groups, and the head
    fitted on all (weights, intercept). ``weight``: per table row (the trainer's row weights);
    ``fit_on``: a mask of the rows the heads are fitted on (default all; every row is scored)."""
    import numpy as np

    folds = np.asarray([fold[int(g)] for g in table["group"]])
    fit_on = np.ones(len(folds), dtype=bool) if fit_on is None else np.asarray(fit_on)
    oof = np.zeros(len(table["pos"]))
    for k in sorted(set(fold.values())):
        train = np.flatnonzero((folds != k) & fit_on)
        x, y, w, _ = _pair_data(table, train, weight)
        wts, b0 = fit_head(x, y, w, c)
        test = np.flatnonzero(folds == k)
        oof[test] = head_score(wts, b0, head_input(table["u"][table["pair"][test]], table["v"][table["pair"][test]]))
        print(f"  head fold {k}: {len(y)} pairs, {int(y.sum())} true", file=sys.stderr)
    x, y, w, _ = _pair_data(table, np.flatnonzero(fit_on), weight)
    return oof, fit_head(x, y, w, c)


def row_weights(sources: Sequence[Any], groups: Sequence[Any]) -> list[float]:
    """Per row (flat order), the weight ``train_linker.calibrate`` gives it."""
    family = {name: tl._family(meta) for name, _, meta in sources}
    family_sources = {f: sum(1 for v in family.values() if v == f) for f in set(family.values())}
    per_source_rows: dict[str, int] = {}
    for name, _, entries in groups:
        for e in entries:
            per_source_rows[name] = per_source_rows.get(name, 0) + len(e["rows"])
    return [
        1000.0 / per_source_rows[name] / family_sources[family[name]]
        for name, _, entries in groups
        for e in entries
        for _ in e["rows"]
    ]


def add_feature(groups: Sequence[Any], table: dict[str, Any], scores: Any) -> None:
    """Append ``emb_head`` to every row of ``groups``: the head's logit where the row has
    embeddings (``table``), 0 where it has none."""
    value = dict(zip(table["pos"].tolist(), [round(float(s), 6) for s in scores], strict=True))
    pos = 0
    for _, _, entries in groups:
        for e in entries:
            for row in e["rows"]:
                row.append(value.get(pos, 0.0))
                pos += 1


def use_feature() -> None:
    """Make ``emb_head`` one of the pair features for this process (the lab's trainer and
    evaluator): appended last, so every other feature keeps its index."""
    if NAME not in pf.FEATURES:
        pf.FEATURES = (*pf.FEATURES, NAME)
        pm.FEATURES = pf.FEATURES
        tl.MONOTONE[NAME] = 1


def augment(sources: Sequence[Any], groups: Sequence[Any], seed: int, vector_cache: str, c: float = HEAD_C) -> dict:
    """The trainer's hook (``python -m lab.emb_head fit`` passes it as ``train_linker.main``'s
    ``augment``): the head fitted out of fold, its scores appended to the rows; returns the head
    fitted on everything, for the weights file."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    cache = json.loads(Path(vector_cache).read_text(encoding="utf-8"))["vectors"]
    table = pair_table(sources, groups, Vectors(cache))
    weight = np.asarray(row_weights(sources, groups))[table["pos"]]
    fold = tl.fold_of(len(groups), seed)
    oof, (wts, b0) = out_of_fold(table, weight, fold, c)
    auc = roc_auc_score(table["label"], oof, sample_weight=weight)
    print(f"emb_head: out-of-fold AUC {auc:.4f} over {len(oof)} rows with embeddings", file=sys.stderr)
    add_feature(groups, table, oof)
    use_feature()
    return {"kind": "lr", "input": "u*v, |u-v| of the decision parts", "c": c, "weights": wts, "intercept": b0,
            "oof_auc": round(float(auc), 4)}  # fmt: skip


# ----------------------------------------------------------------------------- out of sample


def replay_eval(out: str, vector_cache: str, seed: int) -> None:
    """The eval sets replayed as the trainer replays (both regimes of links made and not, with
    embeddings), saved like ``--save-groups``."""
    from evomem.adapters.models.embedding import OnnxEmbedder

    embedder = OnnxEmbedder(threads=1)
    linker = pl.PairLinker(embedder, model=pm.PairModel(kind="lr", link_at=1.0, abstain_at=1.0), cache_size=1_000_000)
    if Path(vector_cache).exists():
        linker._vectors.update(tl._read_vector_cache(Path(vector_cache), embedder.name))
    files = [tl.DEVDATA / f"{n}.jsonl" for n in EVAL_SETS]
    sources = tl.load_sources(files, 0)
    groups = tl.build_groups(sources, linker, seed)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fh:
        pickle.dump((sources, groups), fh)
    # the decision parts' vectors too (the head reads them; the replay embedded most already)
    vectors = Vectors(linker._vectors, embedder)
    for tx in texts_of(sources, groups):
        for note, cands in tx:
            vectors.of([note, *cands])
    tl._write_vector_cache(Path(vector_cache), embedder.name, linker._vectors)


def evaluate(model_path: str, groups_path: str, vector_cache: str) -> dict[str, Any]:
    """What the product would offer on the eval replays (linked replay, with embeddings), per set:
    recall if confirmed (the gold predecessor among the top 3 offers at ``offer_at``), offers on
    notes that replace nothing, and the top offer's precision at ``hint_at`` and at 0.9. The gates
    are the product's (``PairLinker._gate``: the decides model, the scope), and a record that
    declares it replaces one candidate links to it (``pair.declares``)."""
    import numpy as np

    data = json.loads(Path(model_path).read_text(encoding="utf-8"))
    head = data.get(NAME)
    if head is not None:
        use_feature()
    model = pm.PairModel.from_dict(data)
    with open(groups_path, "rb") as fh:
        sources, groups = pickle.load(fh)
    items = {name: its for name, its, _ in sources}
    if head is not None:
        cache = json.loads(Path(vector_cache).read_text(encoding="utf-8"))["vectors"]
        table = pair_table(sources, groups, Vectors(cache))
        x = head_input(table["u"][table["pair"]], table["v"][table["pair"]])
        add_feature(groups, table, head_score(head["weights"], head["intercept"], x))
    dm = model.decides
    out: dict[str, Any] = {}
    for name in dict.fromkeys(n for n, _, _ in groups):
        hit = tot = nothing = offered_nothing = 0
        tops: list[tuple[float, int]] = []
        for g_name, k, entries in groups:
            if g_name != name:
                continue
            by_i = {n["i"]: n for n in items[name][k]["notes"]}
            for e in entries:
                if not e["linked"]:
                    continue
                note = by_i[e["note"]]
                probs: list[tuple[float, int]] = []
                texts = [e["extra"][-c - 1] if c < 0 else by_i[c]["text"] for c in e["cands"]]
                reading = read(note["text"])
                declared = [
                    lab
                    for t, lab in zip(texts, e["labels"], strict=True)
                    if reading.decl_sents and declares(reading, read(t).ident)
                ]
                if len(declared) == 1:  # a record that declares it replaces one candidate links to it
                    probs = [(1.0, declared[0])]
                elif dm is None or dm.decides(note["text"]):
                    n_scope = tl.offers._scope_of(note)
                    for c, lab, row in zip(e["cands"], e["labels"], e["rows"], strict=True):
                        cand = {"text": e["extra"][-c - 1], "scope": None} if c < 0 else by_i[c]
                        if dm is not None and not dm.decides(cand["text"]):
                            continue
                        c_scope = tl.offers._scope_of(cand)
                        if not (tl.offers.compatible(n_scope, c_scope) or pl.names_scope(note["text"], c_scope)):
                            continue
                        p = model.prob(row)
                        if p >= (model.offer_at or 0.0):
                            probs.append((p, lab))
                probs.sort(key=lambda t: -t[0])
                if e["gold"] is not None:
                    tot += 1
                    hit += any(lab for _, lab in probs[:3])
                else:
                    nothing += 1
                    offered_nothing += bool(probs)
                if probs:
                    tops.append(probs[0])

        def precision(at: float, tops: list[tuple[float, int]] = tops) -> list[float]:
            got = [lab for p, lab in tops if p >= at]
            return [round(float(np.mean(got)), 3) if got else 1.0, len(got)]

        out[name] = {
            "replacing": tot,
            "recall_if_confirmed": round(hit / tot, 3) if tot else None,
            "hits": hit,
            "replaces_nothing": nothing,
            "offers_on_nothing": round(offered_nothing / nothing, 3) if nothing else None,
            "with_offer_on_nothing": offered_nothing,
            "top_precision_at_hint": precision(model.hint_at),
            "top_precision_at_0.9": precision(0.9),
        }
    aucs = _aucs(model, groups, head is not None)
    tot = sum(v["replacing"] for v in out.values())
    nothing = sum(v["replaces_nothing"] for v in out.values())
    out["pooled"] = {
        "recall_if_confirmed": round(sum(v["hits"] for v in out.values()) / tot, 3),
        "offers_on_nothing": round(sum(v["with_offer_on_nothing"] for v in out.values()) / nothing, 3),
        "offer_at": model.offer_at,
        "hint_at": model.hint_at,
        "auc": aucs,
    }
    return out


def _aucs(model: pm.PairModel, groups: Sequence[Any], with_head: bool) -> dict[str, float]:
    """AUC over every pair with embeddings of the linked replay, of the model's probability, the
    decision parts' cosine and (when the model has it) the head's score."""
    from sklearn.metrics import roc_auc_score

    has_emb, cos = pf.FEATURES.index("has_emb"), pf.FEATURES.index("cos_dec")
    rows = [
        (r, lab)
        for _, _, es in groups
        for e in es
        if e["linked"]
        for r, lab in zip(e["rows"], e["labels"], strict=True)
    ]
    rows = [(r, lab) for r, lab in rows if r[has_emb]]
    y = [lab for _, lab in rows]
    out = {
        "model": roc_auc_score(y, [model.raw(r) for r, _ in rows]),
        "cos_dec": roc_auc_score(y, [r[cos] for r, _ in rows]),
    }
    if with_head:
        out[NAME] = roc_auc_score(y, [r[-1] for r, _ in rows])
    return {k: round(float(v), 4) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.emb_head", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("replay", help="replay the eval sets (dev-g, dev-m, dev-n) with embeddings")
    r.add_argument("--out", required=True)
    r.add_argument("--vector-cache", required=True)
    r.add_argument("--seed", type=int, default=7)
    e = sub.add_parser("eval", help="what a model file offers on the eval replays")
    e.add_argument("--model", required=True)
    e.add_argument("--groups", required=True)
    e.add_argument("--vector-cache", required=True)
    sub.add_parser(
        "fit",
        help="train the pair model with the head as one more feature: the rest of the line is "
        "lab.train_linker's arguments (needs --vector-cache); the weights file carries the head",
        add_help=False,
    )
    args, rest = ap.parse_known_args(argv)
    if args.cmd == "fit":
        return tl.main(rest, augment=augment)
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.cmd == "replay":
        replay_eval(args.out, args.vector_cache, args.seed)
    else:
        print(json.dumps(evaluate(args.model, args.groups, args.vector_cache), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
