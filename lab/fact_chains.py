"""Development diagnostics for the linker in one big store: generated fact chains, and scenario sets
pooled into one scenario.

    python -m lab.fact_chains chains --out /tmp/chains.jsonl            # 2,948 facts, seed 1
    python -m lab.fact_chains pool lab/devdata/dev-f.jsonl --out /tmp/devf-pooled.jsonl
    python -m bench.quality --out /tmp/run --linkers pair --data chains=/tmp/chains.jsonl \\
        --memories evomem-auto:pair,evomem-auto:pair+confirm

``chains``: short templated facts ("The employer of Kalo Mira is Tenzu.") about 300 invented people,
three relations each, some updated up to 7 times (a quarter of the updates an exact revert to the
value before), all interleaved in one scenario. Invented names: nothing the embedding model or the
linker's lists know. It is development data (generated; never a blind number) for the ground where the
pair model is weakest: a fact restated with a new value, among many facts of the same form. It found
that the model ranked the same person's earlier fact below other people's (``pair_features.listed``).

``pool``: every scenario of a set remembered into one store, as the external sets are (topics and
questions keep their scenario apart, dates follow the order). The linker then searches the whole
set's notes, not one scenario's few.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SYLLABLES = ("ka", "lo", "mi", "ra", "ten", "vo", "zu", "pel", "dor", "fin")
SYLLABLES += ("gar", "hul", "jas", "ker", "lum", "nor", "pra", "sil", "tov", "wex")
RELATIONS = (
    "spouse", "employer", "city of residence", "manager", "favourite sport", "citizenship",
    "head coach", "doctor", "bank", "car brand", "lawyer", "language",
)  # fmt: skip
UPDATES = (0, 0, 0, 1, 2, 3, 5, 7)  # updates per fact, drawn uniformly
REVERT = 0.25  # share of updates (from the second on) that go back to the value before


def chains(seed: int = 1, people: int = 300, relations: int = 3, max_notes: int = 4000) -> dict[str, Any]:
    """One scenario of interleaved fact chains (the shared scenario format; see ``bench.scenarios``)."""
    rng = random.Random(seed)

    def name() -> str:
        return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()

    names = sorted({f"{name()} {name()}" for _ in range(people * 4 // 3)})[:people]
    keys = [(p, r) for p in names for r in rng.sample(RELATIONS, relations)]
    rng.shuffle(keys)
    timeline: list[tuple[float, str, str]] = []
    for person, relation in keys:
        values = [name()]
        for _ in range(rng.choice(UPDATES) if len(timeline) < max_notes else 0):
            values.append(values[-2] if len(values) >= 2 and rng.random() < REVERT else name())
        times = sorted(rng.random() for _ in values)
        timeline += [(t, f"{person}/{relation}", v) for t, v in zip(times, values, strict=True)]
    timeline.sort()
    notes: list[dict[str, Any]] = []
    last: dict[str, int] = {}
    history: dict[str, list[str]] = {}
    for _, topic, value in timeline:
        person, relation = topic.split("/")
        i = len(notes)
        notes.append(
            {
                "i": i,
                "text": f"The {relation} of {person} is {value}.",
                "date": f"{i:06d}",
                "kind": "decision",
                "topic": topic,
                "scope": None,
                "option": value,
                "supersedes": last.get(topic),
                "valid_at_question": True,
            }
        )
        if topic in last:
            notes[last[topic]]["valid_at_question"] = False
        last[topic] = i
        history.setdefault(topic, []).append(value)
    questions = []
    for topic, i in last.items():
        if len(history[topic]) < 2:
            continue
        person, relation = topic.split("/")
        current = notes[i]["option"]
        questions.append(
            {
                "id": f"q{len(questions)}",
                "kind": "main",
                "text": f"What is the {relation} of {person}?",
                "topic": topic,
                "scope": None,
                "gold_option": current,
                "obsolete_options": sorted({v for v in history[topic][:-1] if v != current}),
                "wrong_scope_options": [],
                "gold_note": i,
            }
        )
    return {"id": f"chains-{seed}", "set": "chains", "author": "lab.fact_chains", "phenomena": [],
            "notes": notes, "questions": questions}  # fmt: skip


def pool(scenarios: Iterable[dict[str, Any]], name: str = "pooled") -> dict[str, Any]:
    """Every scenario's notes and questions in one scenario, in order: indexes shifted, topics and
    question ids prefixed with the scenario's id, dates renumbered to keep the order."""
    notes: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for sc in scenarios:
        base = len(notes)
        for n in sorted(sc["notes"], key=lambda n: n["i"]):
            notes.append(
                {
                    **n,
                    "i": base + n["i"],
                    "topic": f"{sc['id']}/{n['topic']}",
                    "supersedes": None if n["supersedes"] is None else base + n["supersedes"],
                    "date": f"{len(notes):06d}",
                }
            )
        for q in sc["questions"]:
            questions.append(
                {
                    **q,
                    "id": f"{sc['id']}-{q['id']}",
                    "topic": f"{sc['id']}/{q['topic']}",
                    "gold_note": base + q["gold_note"],
                }
            )
    return {
        "id": name,
        "set": name,
        "author": "lab.fact_chains",
        "phenomena": [],
        "notes": notes,
        "questions": questions,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.fact_chains", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("chains", help="generated fact chains about invented people, one scenario")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--people", type=int, default=300)
    c.add_argument("--out", required=True)
    p = sub.add_parser("pool", help="a scenario file's scenarios as one scenario")
    p.add_argument("source")
    p.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.what == "chains":
        if args.people < 1:
            ap.error("--people must be at least 1")
        scenario = chains(args.seed, args.people)
    else:
        src = Path(args.source)
        if not src.is_file():
            ap.error(f"{src} not found")
        scenario = pool(json.loads(ln) for ln in src.read_text(encoding="utf-8").splitlines() if ln.strip())
    Path(args.out).write_text(json.dumps(scenario) + "\n", encoding="utf-8")
    gold = sum(1 for n in scenario["notes"] if n["supersedes"] is not None)
    counts = f"{len(scenario['notes'])} notes ({gold} replacing one), {len(scenario['questions'])} questions"
    print(f"wrote {counts} to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
