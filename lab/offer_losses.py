"""Where the replaced decision is lost on its way to the agent's offers (development sets only).

For every note that replaces a decision, replayed through the default embedded server as
``bench.agents`` replays it (no link confirmed), this says where its gold predecessor went:

    not_candidate   the candidate search (BM25 + vectors) did not list it
    note_decides    the note itself was judged to decide nothing (no offer at all)
    cand_decides    the predecessor was judged to decide nothing
    scope           the predecessor is in another scope the note does not name
    below_offer     scored, but its calibrated probability was under ``offer_at``
    offered         offered (recall if confirmed counts these)

and, for ``below_offer``, the predecessor's rank among the scored candidates and its probability.

    python -m lab.offer_losses [--sets dev-j,dev-a] [--sample 30] [--seed 30] [--out build/lab/offer_losses.json]

Blind sets are never run here: this is a tool for reading development misses.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evomem.domain.linkers.pair import PairLinker, names_scope
from evomem.domain.scope import compatible as scope_compatible

STAGES = ("not_candidate", "note_decides", "cand_decides", "scope", "below_offer", "offered")


class Recorder:
    """Wraps ``PairLinker.decide``: every call's note, candidates, gates and probabilities, by note text.
    Every note is searched for (``wants_candidates``): a note the ``decides`` gate rejects is still
    shown its candidates, so that a gold one is counted at ``note_decides``, not ``not_candidate``."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}
        self._orig = PairLinker.decide
        self._wants = PairLinker.wants_candidates

    def __enter__(self) -> Recorder:
        rec = self

        def decide(linker: PairLinker, text: str, scope: str | None, candidates: Sequence[Any], *a: Any, **kw: Any):
            out = rec._orig(linker, text, scope, candidates, *a, **kw)
            try:
                rec.calls[text] = rec._explain(linker, text, scope, candidates, *a, **kw)
            except Exception as exc:  # a diagnostic never changes the replay
                rec.calls[text] = {"error": repr(exc)}
            return out

        PairLinker.decide = decide  # type: ignore[method-assign]
        PairLinker.wants_candidates = lambda linker, text: True  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        PairLinker.decide = self._orig  # type: ignore[method-assign]
        PairLinker.wants_candidates = self._wants  # type: ignore[method-assign]

    @staticmethod
    def _explain(
        linker: PairLinker,
        text: str,
        scope: str | None,
        candidates: Sequence[Any],
        similarities: Mapping[str, float] | None = None,
        scope_inferred: bool = False,
        earlier: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        dm = linker.model.decides
        nodes = [c for c in candidates if c.status == "active"]
        info: dict[str, Any] = {
            "offer_at": linker.offer_at or 0.0,  # this linker's cut-off (EVOMEM_OFFER_MIN_P or the model's)
            "scope": scope,
            "note_p_decides": None if dm is None else round(dm.p(text), 3),
            "note_decides": True if dm is None else dm.decides(text),
            "cands": {},
        }
        if not nodes:
            return info
        probs, _rows = linker.score(text, scope, nodes, similarities, earlier)
        order = sorted(range(len(nodes)), key=lambda i: -probs[i])
        for rank, i in enumerate(order):
            c = nodes[i]
            info["cands"][c.id] = {
                "rank": rank,
                "p": round(probs[i], 3),
                "decides": True if dm is None else dm.decides(c.raw_text),
                "p_decides": None if dm is None else round(dm.p(c.raw_text), 3),
                "scope_ok": scope_compatible(scope, c.scope) or names_scope(text, c.scope),
                "sim": None if similarities is None else similarities.get(c.id),
            }
        return info


def stage(call: Mapping[str, Any] | None, gold_id: str) -> str:
    if call is None or "error" in call:
        return "not_candidate"
    cand = call["cands"].get(gold_id)
    if cand is None:
        return "not_candidate"
    if not call["note_decides"]:
        return "note_decides"
    if not cand["decides"]:
        return "cand_decides"
    if not cand["scope_ok"]:
        return "scope"
    return "offered" if cand["p"] >= call["offer_at"] else "below_offer"


async def run(sets: Mapping[str, Sequence[Mapping[str, Any]]], progress: bool) -> dict[str, Any]:
    from tqdm import tqdm

    from bench.agents import DefaultServer, gold_of, replay

    out: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    async with DefaultServer() as memory:
        for name, items in sets.items():
            counts: Counter[str] = Counter()
            for scenario in tqdm(items, desc=name, disable=not progress, file=sys.stderr, leave=False):
                with Recorder() as rec:
                    ids = await _replay_ids(memory, scenario, replay)
                for note in scenario["notes"]:
                    for g in gold_of(note):
                        if g not in ids:
                            continue
                        call = rec.calls.get(note["text"]) or rec.calls.get(note["text"].strip())
                        s = stage(call, ids[g])
                        counts[s] += 1
                        gold_text = next(n["text"] for n in scenario["notes"] if n["i"] == g)
                        cand = (call or {}).get("cands", {}).get(ids[g], {})
                        rows.append(
                            {
                                "set": name,
                                "scenario": scenario.get("index"),
                                "stage": s,
                                "note": note["text"],
                                "gold": gold_text,
                                "note_p_decides": (call or {}).get("note_p_decides"),
                                "gold_p": cand.get("p"),
                                "gold_rank": cand.get("rank"),
                                "gold_p_decides": cand.get("p_decides"),
                                "gold_sim": cand.get("sim"),
                                "n_cands": len((call or {}).get("cands", {})),
                            }
                        )
            out[name] = dict(counts)
    return {"counts": out, "rows": rows}


async def _replay_ids(memory: Any, scenario: Mapping[str, Any], replay: Any) -> dict[int, str]:
    """The scenario replayed as the ignoring agent does; the ids its notes got."""
    ids: dict[int, str] = {}
    orig = memory.call

    async def call(tool: str, args: dict[str, Any]) -> Any:
        answer = await orig(tool, args)
        if tool == "remember":
            note = next(n for n in scenario["notes"] if n["text"] == args["raw_text"])
            ids[note["i"]] = answer["id"]
        return answer

    memory.call = call
    try:
        await replay(memory, {**scenario, "questions": []}, None)
    finally:
        memory.call = orig
    return ids


def main(argv: Sequence[str] | None = None) -> int:
    from bench.agents import dev_sets, sample

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", default=None, help="comma-separated development sets (default: all)")
    p.add_argument("--sample", type=int, default=30)
    p.add_argument("--seed", type=int, default=30)
    p.add_argument("--out", type=Path, default=Path("build/lab/offer_losses.json"))
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    sets = dev_sets()
    if args.sets:
        sets = {k: v for k, v in sets.items() if k in args.sets.split(",")}
    sets = {k: sample(v, args.sample, args.seed) for k, v in sets.items()}
    result = asyncio.run(run(sets, not args.no_progress))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    total: Counter[str] = Counter()
    for name, counts in result["counts"].items():
        total.update(counts)
        n = sum(counts.values()) or 1
        print(
            f"{name:10s} "
            + " ".join(f"{s}={counts.get(s, 0)}" for s in STAGES)
            + f"  recall={counts.get('offered', 0) / n:.3f}"
        )
    n = sum(total.values()) or 1
    print("ALL        " + " ".join(f"{s}={total.get(s, 0)}" for s in STAGES) + f"  recall={total['offered'] / n:.3f}")
    below = [r for r in result["rows"] if r["stage"] == "below_offer"]
    ranks = Counter(min(r["gold_rank"], 5) for r in below)
    print("below_offer: gold rank", dict(sorted(ranks.items())), "p deciles", _deciles([r["gold_p"] for r in below]))
    return 0


def _deciles(xs: list[float]) -> list[float]:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return []
    return [round(xs[min(len(xs) - 1, int(q * len(xs)))], 3) for q in (0.1, 0.25, 0.5, 0.75, 0.9)]


if __name__ == "__main__":
    raise SystemExit(main())
