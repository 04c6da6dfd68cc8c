"""How right recall's "may be replaced by" hints are, by probability, and whether the successor is
itself one of the answer's results: the data behind the pair model's ``hint_at_shown``.

    python -m lab.recall_hints --sample 30 --out lab/results/recall_hints.json

``hint_at`` (``lab/offers.py``) is chosen on the remember side: the top offer of a note, among
every earlier note of the memory, is right ``HINT_PRECISION`` of the time from it. A hint is read
at recall, where the question narrows things: when the possible successor is itself a result of the
same recall (both notes answer one question), the two are on one subject, and an offer at a given
probability is right more often than the same offer read without the question. This replays the
development sets (never a blind one) through the default server (``bench.agents.DefaultServer``,
hints shown at any probability), asks every question in-core, and for every successor a result
carries records its probability, whether it is a result too, and whether it is right (a later
version of the result's decision in the scenario's gold chains). Then, on a grid of the two cut-offs
(successor among the results, and not), the hint reader's ODR and misses, and each kind's precision
by band.

``choose_shown`` picks the lowest cut-off for a successor among the results at which those hints
are right at least ``HINT_PRECISION`` of the time over ``MIN_HINTS``, each source weighing alike
(the rule ``lab/offers.choose`` uses for ``hint_at``, applied to the hints recall shows).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.agents import DefaultServer, dev_sets, gold_of, outcome_of, remember_note, sample, top_answer
from bench.agents import Hit as AgentHit

HINT_PRECISION = 0.9  # as lab/offers.py
MIN_HINTS = 30
MIN_PER_SOURCE = 5
GRID = [round(0.01 * k, 2) for k in range(30, 100)]


@dataclass
class Seen:
    """One successor recall showed under a result: its probability, whether it heads a result of
    the same answer, whether it is right."""

    source: str
    p: float | None
    in_results: bool
    right: bool


@dataclass
class Question:
    """One question's results: (note, status, [(successor note, p, in results)]) in rank order."""

    source: str
    scenario: int
    qid: str
    hits: list[tuple[int | None, str, list[tuple[int | None, float | None, bool]]]] = field(default_factory=list)


class HintServer(DefaultServer):
    """The default server with every stored offer shown as a hint (``hint_min_p`` 0)."""

    def settings(self, db: str = ":memory:", database_url: str | None = None) -> Any:
        got = super().settings(db, database_url)
        return got.model_copy(update={"linker": got.linker.model_copy(update={"hint_min_p": 0.0})})


def later_versions(notes: Sequence[Mapping[str, Any]]) -> dict[int, set[int]]:
    """For each note, the notes that replace it directly or through others (gold)."""
    direct: dict[int, set[int]] = {n["i"]: set() for n in notes}
    for n in notes:
        for t in gold_of(n):
            direct[t].add(n["i"])

    def reach(i: int, seen: set[int]) -> set[int]:
        for j in direct[i] - seen:
            seen.add(j)
            reach(j, seen)
        return seen

    return {i: reach(i, set()) for i in direct}


async def replay(memory: HintServer, name: str, scenario: Mapping[str, Any], k: int) -> list[Question]:
    ns = f"{name}{scenario['index']}"
    ids: dict[int, str] = {}
    back: dict[str, int] = {}
    out: list[Question] = []
    with memory.session():
        for note in scenario["notes"]:
            await remember_note(memory, note, ns, ids, back)
        service = memory._current.service  # type: ignore[union-attr]
        for q in scenario["questions"]:
            got = service.recall(q["text"], k=k, namespace=ns)
            row = Question(name, int(scenario["index"]), str(q["id"]))
            for entry, _ in got.results:
                row.hits.append(
                    (
                        back.get(entry.head.id),
                        str(entry.head.status),
                        [(back.get(s.node.id), s.confidence, s.result is not None) for s in entry.maybe_replaced_by],
                    )
                )
            out.append(row)
    return out


def seen_hints(questions: Sequence[Question], scenarios: Mapping[tuple[str, int], Mapping[str, Any]]) -> list[Seen]:
    out: list[Seen] = []
    for q in questions:
        after = later_versions(scenarios[(q.source, q.scenario)]["notes"])
        for note, _status, succ in q.hits:
            for y, p, shown in succ:
                out.append(Seen(q.source, p, shown, note is not None and y is not None and y in after.get(note, set())))
    return out


def hint_reader(
    questions: Sequence[Question], scenarios: Mapping[tuple[str, int], Mapping[str, Any]], at_out: float, at_in: float
) -> dict[str, dict[str, int]]:
    """Per source: the hint reader's outcomes with hints shown from ``at_out`` (successor not a
    result) and ``at_in`` (a result)."""
    per: dict[str, dict[str, int]] = {}
    for q in questions:
        sc = scenarios[(q.source, q.scenario)]
        question = next(x for x in sc["questions"] if str(x["id"]) == q.qid)
        hits = [
            AgentHit(
                note,
                status,
                [y for y, p, shown in succ if p is not None and p >= (at_in if shown else at_out)],
            )
            for note, status, succ in q.hits
        ]
        top = top_answer(sc, question, hits)
        note = None if top is None else (top.hints[0] if top.hints else top.note)
        c = per.setdefault(q.source, {})
        got = outcome_of(sc, question, note)
        c[got] = c.get(got, 0) + 1
        c["questions"] = c.get("questions", 0) + 1
    return per


def odr(counts: Mapping[str, int]) -> float:
    """Obsolete answers among the answers that decide the asked topic and scope (bench.agents)."""
    decided = counts.get("correct", 0) + counts.get("obsolete", 0)
    return counts.get("obsolete", 0) / decided if decided else 0.0


def precision(seen: Sequence[Seen], at: float, in_results: bool) -> tuple[float, int]:
    """Mean over sources (each with ``MIN_PER_SOURCE`` hints) of the share right, and the count."""
    per: dict[str, list[bool]] = {}
    for s in seen:
        if s.in_results == in_results and s.p is not None and s.p >= at:
            per.setdefault(s.source, []).append(s.right)
    rates = [sum(v) / len(v) for v in per.values() if len(v) >= MIN_PER_SOURCE]
    return (sum(rates) / len(rates) if rates else 1.0), sum(len(v) for v in per.values())


def choose_shown(seen: Sequence[Seen]) -> float | None:
    """The lowest cut-off at which hints whose successor is a result are right ``HINT_PRECISION``
    of the time over ``MIN_HINTS`` (None: none)."""
    for t in GRID:
        got, n = precision(seen, t, True)
        if got >= HINT_PRECISION and n >= MIN_HINTS:
            return t
    return None


def bands(seen: Sequence[Seen], in_results: bool) -> list[dict[str, Any]]:
    """Hints by band of probability: count and share right."""
    rows = []
    for lo, hi in ((0.0, 0.4), (0.4, 0.5), (0.5, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01)):
        inside = [s.right for s in seen if s.in_results == in_results and s.p is not None and lo <= s.p < hi]
        if inside:
            rows.append(
                {"band": f"{lo:.1f}-{min(hi, 1.0):.1f}", "hints": len(inside), "right": round(_mean(inside), 3)}
            )
    return rows


def _mean(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if values else 0.0


async def run(sets: Mapping[str, Sequence[Mapping[str, Any]]], k: int) -> list[Question]:
    from tqdm import tqdm

    logging.getLogger("evomem.calls").setLevel(logging.WARNING)
    out: list[Question] = []
    async with HintServer() as memory:
        for name, items in sets.items():
            for scenario in tqdm(items, desc=f"hints {name}", unit="sc", file=sys.stderr, leave=False):
                out.extend(await replay(memory, name, scenario, k))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.recall_hints", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=int, default=30, help="scenarios per development set (0: all)")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--sets", default="", help="comma list of development sets (default: all)")
    ap.add_argument("--out", type=Path, default=Path("lab/results/recall_hints.json"))
    ap.add_argument("--cache", type=Path, default=None, help="keep the replayed questions here and reuse them")
    ap.add_argument(
        "--write", type=Path, default=None, help="set hint_at_shown in this weights file (then hand it over)"
    )
    args = ap.parse_args(argv)
    from evomem.adapters.models.pair_weights import shipped_pair_model

    wanted = {s for s in args.sets.split(",") if s}
    sets = {n: sample(v, args.sample, args.seed) for n, v in dev_sets().items() if not wanted or n in wanted}
    scenarios = {(n, int(sc["index"])): sc for n, v in sets.items() for sc in v}
    if args.cache is not None and args.cache.exists():
        questions = [Question(**q) for q in json.loads(args.cache.read_text())]
    else:
        questions = asyncio.run(run(sets, args.k))
        if args.cache is not None:
            args.cache.write_text(json.dumps([asdict(q) for q in questions]))
    seen = seen_hints(questions, scenarios)
    at_out = shipped_pair_model().hint_at
    shown_at = choose_shown(seen)
    report: dict[str, Any] = {
        "sets": {n: len(v) for n, v in sets.items()},
        "seed": args.seed,
        "hint_at": at_out,
        "hint_at_shown": shown_at,
        "bands_among_results": bands(seen, True),
        "bands_alone": bands(seen, False),
        "hint_reader": {},
    }
    for label, a_in in (("hint_at", at_out), ("hint_at_shown", at_out if shown_at is None else shown_at)):
        per = hint_reader(questions, scenarios, at_out, a_in)
        pooled: dict[str, int] = {}
        for c in per.values():
            for key, v in c.items():
                pooled[key] = pooled.get(key, 0) + v
        report["hint_reader"][label] = {
            "among_results_from": a_in,
            "odr": round(odr(pooled), 3),
            "misses": pooled.get("miss", 0),
            "questions": pooled["questions"],
            "per_set": {s: round(odr(c), 3) for s, c in per.items()},
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "sets"}, indent=1))
    if args.write is not None and shown_at is not None:
        data = json.loads(args.write.read_text())
        data["hint_at_shown"] = max(shown_at, data.get("offer_at") or 0.0)
        data.setdefault("training", {})["hint_at_shown"] = {
            k: report[k] for k in ("sets", "seed", "bands_among_results")
        }
        args.write.write_text(json.dumps(data, indent=1) + "\n")
        print(f"hint_at_shown {data['hint_at_shown']} written to {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
