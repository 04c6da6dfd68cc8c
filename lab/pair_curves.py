"""Precision against recall of the pair model's out-of-fold links, by family and regime.

Why the pair linker lists instead of links, drawn from development data only:

    python -m lab.train_linker --check --dump build/pair-oof.jsonl --vector-cache build/linker-vectors.json
    python -m lab.pair_curves build/pair-oof.jsonl --out bench/results/linking/pair-curves [--cross]

(``make linker-curves`` runs both.) The dump holds one line per replayed note (``train_linker._dump``:
each development scenario replayed with its earlier gold links made and with none made, the
note's candidates from the service's own search, each scored by the model of the fold that did
not train on its scenario). A note "links" at threshold t when its best candidate's probability
reaches t, as the linker would with ``link_at`` = t; it is right when that candidate is the
note's gold predecessor. For each family (``written``: the hand-written files under
lab/devdata; ``generated``: the generators' frozen files and generated sets) and regime
(``short``; ``long``: the note or its best candidate is a long document, where ``link_at_long``
applies) this writes:

- the curve: precision of the links against their recall (right links over notes with a gold
  predecessor), every threshold;
- at precision 0.90, 0.95 and 0.98 (point estimates): the lowest threshold that reaches it and
  what links there;
- ``shown``: the lowest threshold at which the 95 % upper bound of the links' error rate
  (``calibration.error_bound``, Clopper-Pearson) is at most 0.02, the rule ``link_at`` is set
  by; none when no threshold shows it;
- of the wrong links, how many went to an earlier version of the right chain (``earlier``: the
  gold predecessor's own predecessors, still active in the replay without links; such a link
  hides nothing in force, but it is not the link the note asks for, and it counts as wrong here
  as in calibration).

``--cross`` adds the cross-encoder's reading (``OnnxPairScorer``, the shipped model) of the
written short notes' best pairs, on the odd-indexed scenarios only (``make train-cross`` never
trains on them: ``cross_pairs`` leaves the held-out halves out): for a grid of pair-model
thresholds and encoder logits, the links that pass both, and their bound. It answers whether the
encoder, used as a second opinion that can veto, makes the top of the written curve sure
enough to show 0.98.

Blind data is refused: the dump is development data by construction (``train_linker`` refuses
``bench/blind`` and the external data); this module reads the dump and, with ``--cross``, the
shipped encoder's model files.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lab.calibration import PRECISION, error_bound
from lab.train_linker import load_jsonl

FAMILIES = ("written", "generated")
REGIMES = ("short", "long")
TARGETS = (0.90, 0.95, PRECISION)
PEP_TARGET = (0.5, 0.9)  # the target on the PEP chains: recall 0.5 at precision 0.9
CROSS_P = (0.80, 0.85, 0.90, 0.93, 0.95)
CROSS_Z = (-1.0, 0.0, 1.0, 2.0)


def load(path: Path | str) -> list[dict[str, Any]]:
    rows = load_jsonl(Path(path))
    for r in rows:
        if not {"family", "long", "earlier"} <= r.keys():
            raise SystemExit(
                f"{path}: not a dump of this version of lab.train_linker (no family, long or earlier); rerun --dump"
            )
    return rows


def curve(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The links of ``rows`` at every threshold (ties link together): points of (threshold,
    links, wrong, wrong to an earlier version, recall, precision), and the gold notes."""
    rows = sorted(rows, key=lambda r: -r["top"][0][0])
    gold = sum(1 for r in rows if r["gold_i"] is not None)
    points: list[dict[str, Any]] = []
    links = wrong = early = 0
    i = 0
    while i < len(rows):
        p = rows[i]["top"][0][0]
        while i < len(rows) and rows[i]["top"][0][0] == p:
            r = rows[i]
            links += 1
            if not r["ok"]:
                wrong += 1
                early += bool(r["earlier"])
            i += 1
        points.append(
            {
                "threshold": p,
                "links": links,
                "wrong": wrong,
                "earlier": early,
                "recall": (links - wrong) / gold if gold else 0.0,
                "precision": (links - wrong) / links,
            }
        )
    return {"gold": gold, "notes": len(rows), "points": points}


def at_precision(points: Sequence[dict[str, Any]], target: float) -> dict[str, Any] | None:
    """The lowest threshold whose links reach ``target`` (point estimate), or None."""
    ok = [pt for pt in points if pt["precision"] >= target]
    return ok[-1] if ok else None


def shown(points: Sequence[dict[str, Any]], target: float = PRECISION) -> dict[str, Any] | None:
    """The lowest threshold whose links *show* ``target``: the 95 % upper bound of their error
    rate at most ``1 - target`` (the rule ``train_linker`` sets ``link_at`` by), or None."""
    found = None
    for pt in points:
        # the bound is never below the observed rate: skip what cannot pass (and the slow tail)
        if pt["wrong"] / pt["links"] <= 1 - target and error_bound(pt["wrong"], pt["links"]) <= 1 - target:
            found = pt
    return found


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per family and regime: the curve, the points at each target and the shown point."""
    out: dict[str, Any] = {}
    for fam in FAMILIES:
        for reg in REGIMES:
            sel = [r for r in rows if r["family"] == fam and r["long"] == (reg == "long")]
            c = curve(sel)
            pts = c["points"]
            out[f"{fam}/{reg}"] = {
                "notes": c["notes"],
                "gold": c["gold"],
                "at": {f"{t:.2f}": at_precision(pts, t) for t in TARGETS},
                "shown": shown(pts),
                "curve": [[round(pt["recall"], 4), round(pt["precision"], 4), pt["threshold"]] for pt in pts],
            }
    return out


def cross_grid(rows: Sequence[dict[str, Any]], logits: Sequence[float]) -> list[dict[str, Any]]:
    """Links that pass both the pair model's threshold and the encoder's logit, on ``rows``
    (each with the encoder's logit of its best pair in ``logits``)."""
    grid = []
    for pt in CROSS_P:
        for zt in CROSS_Z:
            kept = [r for r, z in zip(rows, logits, strict=True) if r["top"][0][0] >= pt and z >= zt]
            wrong = sum(1 for r in kept if not r["ok"])
            grid.append(
                {
                    "p_at": pt,
                    "z_at": zt,
                    "links": len(kept),
                    "wrong": wrong,
                    "bound": round(error_bound(wrong, len(kept)), 4) if kept else None,
                }
            )
    return grid


def cross_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The written short notes of odd-indexed scenarios (never trained on by ``make train-cross``)
    whose best pair reaches the lowest grid threshold."""
    return [
        r
        for r in rows
        if r["family"] == "written" and not r["long"] and r["scenario"] % 2 == 1 and r["top"][0][0] >= min(CROSS_P)
    ]


def markdown(summary: dict[str, Any], grid: list[dict[str, Any]] | None, source: str) -> str:
    lines = [
        "# The pair model's links, out of fold: precision against recall",
        "",
        f"`python -m lab.pair_curves {source}` (development data only; `make linker-curves`). A note links "
        "at threshold t when its best candidate's out-of-fold probability reaches t; right when that is "
        "its gold predecessor. Recall: right links over notes with a gold predecessor (each scenario "
        "replayed with and without its earlier links). *Shown*: the lowest threshold at which the 95 % "
        "upper bound of the links' error rate is at most 0.02 (how `link_at` is set). *Earlier*: wrong "
        "links to an earlier version of the right chain (they hide nothing in force).",
        "",
        "| family / regime | notes | with gold | precision 0.90: t, links, recall | 0.95 | 0.98 | shown 0.98 "
        "| wrong (earlier) at 0.90 |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(pt: dict[str, Any] | None) -> str:
        return "none" if pt is None else f"{pt['threshold']:.3f}, {pt['links']}, {pt['recall']:.3f}"

    for key, s in summary.items():
        p90 = s["at"]["0.90"]
        early = "—" if p90 is None else f"{p90['wrong']} ({p90['earlier']})"
        lines.append(
            f"| {key} | {s['notes']} | {s['gold']} | {cell(p90)} | {cell(s['at']['0.95'])} | "
            f"{cell(s['at']['0.98'])} | {cell(s['shown'])} | {early} |"
        )
    if grid is not None:
        lines += [
            "",
            "## The cross-encoder as a second opinion (written short notes, odd-indexed scenarios)",
            "",
            "Links that pass both the pair model's probability and the encoder's logit; *bound*: the 95 % "
            "upper bound of their error rate (0.02 or less shows precision 0.98).",
            "",
            "| pair p at least | encoder logit at least | links | wrong | bound |",
            "|---|---|---|---|---|",
        ]
        lines += [f"| {g['p_at']} | {g['z_at']} | {g['links']} | {g['wrong']} | {g['bound']} |" for g in grid]
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, reg in zip(axes, REGIMES, strict=True):
        for fam, colour in zip(FAMILIES, ("tab:red", "tab:blue"), strict=True):
            s = summary[f"{fam}/{reg}"]
            if not s["curve"]:
                continue
            xs = [c[0] for c in s["curve"]]
            ys = [c[1] for c in s["curve"]]
            ax.plot(xs, ys, color=colour, label=f"{fam} ({s['gold']} with gold)")
            if s["shown"] is not None:
                ax.plot([s["shown"]["recall"]], [s["shown"]["precision"]], "o", color=colour)
        ax.axhline(PRECISION, color="grey", linestyle="--", linewidth=1)
        if reg == "long":  # where the issue asks the linker to be on the (blind) PEP chains, for scale
            ax.plot([PEP_TARGET[0]], [PEP_TARGET[1]], "x", color="black", label="target on the PEP chains (blind)")
        ax.set_title(f"{reg} notes")
        ax.set_xlabel("recall (right links / notes with a predecessor)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0.5, 1.005)
        ax.legend(loc="lower left", fontsize=8)
    axes[0].set_ylabel("precision of the links")
    fig.suptitle("Pair model, out of fold: a dot marks the lowest threshold that shows 0.98 (dashed)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.pair_curves", description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", help="a train_linker --dump file")
    ap.add_argument("--out", default="bench/results/linking/pair-curves", help="writes OUT.json, OUT.md, OUT.png")
    ap.add_argument("--cross", action="store_true", help="add the shipped cross-encoder's second opinion")
    args = ap.parse_args(argv)
    rows = load(args.dump)
    summary = summarise(rows)
    grid = None
    if args.cross:
        from evomem.adapters.models.onnx_pair import OnnxPairScorer
        from evomem.domain.linkers.pair import cross_text

        picked = cross_rows(rows)
        scorer = OnnxPairScorer()
        z = scorer.logits([(cross_text(r["note"]), cross_text(r["top"][0][1])) for r in picked]) if picked else []
        grid = cross_grid(picked, [float(v) for v in z])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    body = {"dump": args.dump, "families": summary, "cross": grid}
    out.with_suffix(".json").write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(summary, grid, args.dump), encoding="utf-8")
    plot(summary, out.with_suffix(".png"))
    print(out.with_suffix(".md").read_text(encoding="utf-8"))
    print(f"wrote {out}.json, .md, .png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
