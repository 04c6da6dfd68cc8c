"""How often "this note names that record's identifier with a replacing verb" is a supersession,
and how often the stricter "this record declares it replaces that one" is.

    python -m lab.explicit_refs lab/devdata/*.jsonl

For every note of every scenario and every earlier record still in force by the gold chains (the
linker's candidates), the pair linker's reading (``pair_reading.read``) says whether the note names
the record with a replacing verb (``pair_reading.refers``: a feature of the model, and the record is
listed first) and whether it declares it replaces it (``pair_reading.declares``: a link on its own); the gold
``supersedes`` says whether it replaces it. Prints, per file and rule, the pairs it fires on, how
many are supersessions (its precision) and how many of the supersessions between identified
records it finds (its recall). No model, no embedder: the rules alone.

Development data only: this reads texts, so it refuses blind data (``train_linker.BLIND``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evomem.domain.linkers import pair_reading
from lab.train_linker import BLIND


def fires(scenarios: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (note, record in force before it) pair where the record has an identifier:
    whether each rule fires and whether the note supersedes the record."""
    out = []
    for s in scenarios:
        notes = s["notes"]
        reads = [pair_reading.read(n["text"]) for n in notes]
        superseded: set[int] = set()
        for k, n in enumerate(notes):
            for j in range(k):
                if j in superseded or reads[j].ident is None:
                    continue
                out.append(
                    {
                        "scenario": s["id"],
                        "note": k,
                        "record": j,
                        "refers": pair_reading.refers(reads[k], reads[j].ident),
                        "declares": pair_reading.declares(reads[k], reads[j].ident),
                        "supersedes": n.get("supersedes") == j,
                    }
                )
            if n.get("supersedes") is not None:
                superseded.add(int(n["supersedes"]))
    return out


def summary(rows: list[dict[str, Any]], rule: str) -> dict[str, Any]:
    fired = [r for r in rows if r[rule]]
    right = sum(r["supersedes"] for r in fired)
    gold = sum(r["supersedes"] for r in rows)
    return {
        "pairs": len(rows),
        "fires": len(fired),
        "right": right,
        "precision": round(right / len(fired), 3) if fired else None,
        "supersessions": gold,
        "recall": round(right / gold, 3) if gold else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.explicit_refs", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="development JSONL scenario files")
    ap.add_argument("--wrong", action="store_true", help="also print the pairs it fires on wrongly")
    args = ap.parse_args(argv)
    for f in args.files:
        if any(b in str(Path(f).resolve()) for b in BLIND):
            raise SystemExit(f"refusing blind data: {f}")
    for f in args.files:
        scenarios = [json.loads(line) for line in Path(f).read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = fires(scenarios)
        for rule in ("refers", "declares"):
            print(json.dumps({"file": f, "rule": rule, **summary(rows, rule)}))
            if args.wrong:
                for r in rows:
                    if r[rule] and not r["supersedes"]:
                        print(f"  wrong: {r['scenario']} note {r['note']} -> record {r['record']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
