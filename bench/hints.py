"""Recall on a small-vocabulary store where most notes offer earlier ones (``possible_supersedes``):
what the "may be replaced by" hints cost.

    python -m bench.hints --notes 10000 --out bench/results

Each note is a few words of a 200-word vocabulary (a query's word is in about one note in fifteen)
and lists up to three earlier notes that share a word, as the pair offerer would. Prints and writes
``hints.json``: recall p50/p95 (wall) and CPU per recall, words only, k=5, in-core.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from bench.stats import pct

WORDS = [f"w{i:03d}" for i in range(200)]


def build(path: Path, n: int, seed: int = 3) -> None:
    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.domain.model import NewNote

    rng = random.Random(seed)
    store = SQLiteStore(path)
    by_word: dict[str, list[str]] = {}
    try:
        for _ in range(n):
            words = rng.sample(WORDS, 8)
            near = list(dict.fromkeys(i for w in words[:3] for i in by_word.get(w, [])[-2:]))[:3]
            note = NewNote(
                raw_text="We decided " + " ".join(words) + ".",
                possible_supersedes=tuple(near),
                possible_supersedes_why=tuple("shares words" for _ in near),
                possible_supersedes_confidence=tuple(round(rng.random(), 2) for _ in near),
            )
            node = store.insert(note)
            for w in words:
                by_word.setdefault(w, []).append(node.id)
    finally:
        store.close()


def measure(path: Path, rounds: int, seed: int = 4) -> dict[str, float]:
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    rng = random.Random(seed)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(20)]
    service = build_embedded(Settings(db=str(path), vectors="off"))
    try:
        service.recall(queries[0], k=5)
        wall: list[float] = []
        cpu0 = time.process_time()
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                service.recall(q, k=5)
                wall.append((time.perf_counter() - t) * 1000)
        cpu = (time.process_time() - cpu0) * 1000 / len(wall)
        hinted = sum(1 for q in queries for e, _ in service.recall(q, k=5).results if e.maybe_replaced_by)
    finally:
        service.close()
    return {
        "recall_p50_ms": round(pct(wall, 50), 2),
        "recall_p95_ms": round(pct(wall, 95), 2),
        "recall_cpu_ms": round(cpu, 2),
        "hinted_results": hinted,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--notes", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--out", type=Path, default=Path("bench/results"))
    p.add_argument("--workdir", type=Path, default=Path("bench/results/tmp"))
    args = p.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    db = args.workdir / f"hints-{args.notes}.db"
    if not db.exists():
        build(db, args.notes)
    result = {"notes": args.notes, **measure(db, args.rounds)}
    print(json.dumps(result), file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hints.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
