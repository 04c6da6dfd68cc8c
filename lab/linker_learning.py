"""Would more hand-written data make the pair model sure on hand-written text? A learning curve.

    python -m lab.linker_learning --vector-cache build/linker-vectors.json \\
        --out bench/results/linking/pair-learning          # (make linker-learning)

The pair dataset is ``train_linker``'s (every development scenario replayed through the service,
with and without its earlier links), and so are the 5 folds by scenario (``--seed``). In each
fold the model (histogram boosting, ``train_linker.fit_hgb``) is fitted on every generated
scenario of the training folds and on a share f of their hand-written scenarios (drawn once per
scenario with the seed, nested: the scenarios of a smaller share are in every larger one),
weighted as ``train_linker.calibrate`` weighs them (each source the same total weight, the
written files together as much as the generated data), and it scores the held-out fold whole.
So every share is judged on the same notes, out of fold.

For each share: the hand-written short notes' links (a note links at t when its best candidate
reaches t), the recall at precision 0.90, 0.95 and 0.98 (point estimates) and whether any
threshold *shows* 0.98 (``pair_curves.shown``, the rule ``link_at`` is set by); the generated
short notes alongside, as a control. If the written curve climbs with the share, more hand-written
development data is a way to a model that links; if it is flat, the features are what limit it.
Development data only (``train_linker`` refuses blind data).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evomem.domain.linkers import pair as pl
from evomem.domain.linkers.pair_model import PairModel
from lab import pair_curves as pc
from lab import train_linker as tl

FRACTIONS = (0.25, 0.5, 0.75, 1.0)


def note_rows(groups: list[Any], oof: Any, family: dict[str, str]) -> list[dict[str, Any]]:
    """Per replayed note, what ``pair_curves.curve`` reads: best probability, right or not, gold."""
    return [
        {
            "family": family[name],
            "long": long,
            "top": [[ps[best], ""]],
            "ok": e["cands"][best] == e["gold"],
            "gold_i": e["gold"],
            "earlier": False,
        }
        for name, _, e, ps, best, long in tl.per_note(groups, oof)
    ]


Fitter = Callable[[Any, Any, Any, int], Callable[[Any], Any]]


def hgb(x: Any, y: Any, w: Any, seed: int) -> Callable[[Any], Any]:
    """``train_linker``'s model (monotone histogram boosting): its probability function."""
    est = tl.fit_hgb(x, y, w, seed)
    return lambda z: est.predict_proba(z)[:, 1]


def learning(
    sources: list[Any],
    groups: list[Any],
    seed: int,
    fractions: tuple[float, ...] = FRACTIONS,
    fitter: Fitter = hgb,
) -> list[dict[str, Any]]:
    """One entry per share of the written scenarios (see the module docstring)."""
    import numpy as np

    family = {name: tl._family(meta) for name, _, meta in sources}
    family_sources = {f: sum(1 for v in family.values() if v == f) for f in set(family.values())}
    xs, ys, gid = [], [], []
    for g, (_, _, entries) in enumerate(groups):
        for e in entries:
            xs.extend(e["rows"])
            ys.extend(e["labels"])
            gid.extend([g] * len(e["rows"]))
    x, y, gid_a = np.array(xs), np.array(ys, dtype=float), np.array(gid)
    names = np.array([groups[g][0] for g in gid])
    fold = tl.fold_of(len(groups), seed)  # train_linker.calibrate's folds
    fold_a = np.array([fold[g] for g in gid_a])
    draw = random.Random(seed + 1)
    share = {g: draw.random() for g in range(len(groups))}  # a written scenario is in every share above it
    written_group = np.array([family[groups[g][0]] == "written" for g in gid])
    share_a = np.array([share[g] for g in gid])
    written = [g for g, (n, _, _) in enumerate(groups) if family[n] == "written"]
    out = []
    for f in fractions:
        started = time.perf_counter()
        oof = np.zeros(len(y))
        for k in range(tl.FOLDS):
            tr = (fold_a != k) & (~written_group | (share_a < f))
            te = fold_a == k
            rows_of = {n: int(c) for n, c in zip(*np.unique(names[tr], return_counts=True), strict=True)}
            w = np.array([1000.0 / rows_of[n] / family_sources[family[n]] for n in names[tr]])
            oof[te] = fitter(x[tr], y[tr], w, seed)(x[te])
        notes = note_rows(groups, oof, family)
        entry: dict[str, Any] = {
            "share": f,
            "written_scenarios_trained": round(sum(1 for g in written if share[g] < f) * (tl.FOLDS - 1) / tl.FOLDS),
            "seconds": round(time.perf_counter() - started, 1),
        }
        for fam in pc.FAMILIES:
            c = pc.curve([r for r in notes if r["family"] == fam and not r["long"]])
            pts = c["points"]
            entry[fam] = {
                "gold": c["gold"],
                **{f"recall_at_{t:.2f}": _recall(pc.at_precision(pts, t)) for t in pc.TARGETS},
                "shown": pc.shown(pts),
            }
        out.append(entry)
        print(
            f"share {f:.2f}: written recall at 0.95 {entry['written']['recall_at_0.95']:.3f}, "
            f"at 0.98 {entry['written']['recall_at_0.98']:.3f} ({entry['seconds']} s)",
            file=sys.stderr,
        )
    print(f"({len(written)} written scenarios in all)", file=sys.stderr)
    return out


def _recall(pt: dict[str, Any] | None) -> float:
    return 0.0 if pt is None else round(pt["recall"], 4)


def markdown(curve: list[dict[str, Any]]) -> str:
    lines = [
        "# Would more hand-written data make the pair model sure? (development data, out of fold)",
        "",
        "`python -m lab.linker_learning` (`make linker-learning`): each share of the hand-written "
        "scenarios in the training folds, every generated scenario, the same held-out folds. Short notes; "
        "recall at a precision is the largest recall whose links reach it (point estimate); *shown*: a "
        "threshold whose links' 95 % error bound is at most 0.02 (how `link_at` is set).",
        "",
        "| share of written scenarios | written scenarios per training fold | written: recall at 0.90 | 0.95 | 0.98 "
        "| shown | generated: recall at 0.95 | 0.98 | shown |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in curve:
        wr, ge = e["written"], e["generated"]
        lines.append(
            f"| {e['share']:.2f} | {e['written_scenarios_trained']} | {wr['recall_at_0.90']:.3f} | "
            f"{wr['recall_at_0.95']:.3f} | {wr['recall_at_0.98']:.3f} | {'yes' if wr['shown'] else 'no'} | "
            f"{ge['recall_at_0.95']:.3f} | {ge['recall_at_0.98']:.3f} | {'yes' if ge['shown'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.linker_learning", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--vector-cache", default="", help="as train_linker's")
    ap.add_argument("--out", default="bench/results/linking/pair-learning", help="writes OUT.json and OUT.md")
    args = ap.parse_args(argv)
    from evomem.adapters.models.embedding import OnnxEmbedder

    embedder = OnnxEmbedder(threads=1)
    linker = pl.PairLinker(embedder, model=PairModel(kind="lr", link_at=1.0, abstain_at=1.0), cache_size=1_000_000)
    key = getattr(embedder, "name", None)
    if args.vector_cache:
        linker._vectors.update(tl._read_vector_cache(Path(args.vector_cache), key))
    sources = tl.load_sources(tl.dev_files(), 1)
    groups = tl.build_groups(sources, linker, args.seed)
    if args.vector_cache:
        tl._write_vector_cache(Path(args.vector_cache), key, linker._vectors)
    curve = learning(sources, groups, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"seed": args.seed, "curve": curve}, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(curve), encoding="utf-8")
    print(markdown(curve))
    return 0


if __name__ == "__main__":
    sys.exit(main())
