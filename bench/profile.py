"""Where recall's and remember's time goes: the in-core service under pyinstrument, default settings.

    python -m bench.profile --notes 100000 --out bench/results/profile     # builds the store as bench.speed does

Writes ``recall-<vectors>.txt`` and ``remember-<vectors>.txt`` (pyinstrument's call tree, main thread
only: the vector half of a search runs on a pool thread and shows as the wait for it) and prints the
p50/p95 of the profiled calls. ``docs/BENCHMARKS.md`` ("Where the time goes") reads the trees.
Nothing here is asserted; the profiler adds its own cost, so compare the shares, not the times.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from bench import datagen
from bench.speed import QUERIES, graphs_built, new_notes, vectors_available, words_built
from bench.stats import pct


def profile(base: Path, vectors: str, remembers: int, out: Path) -> dict[str, float]:
    from pyinstrument import Profiler

    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    db = base.with_name(f"{base.stem}-profile-{vectors}.db")
    shutil.copyfile(base, db)
    try:
        words_built(db)
        graphs_built(db)
        service = build_embedded(Settings(db=str(db), vectors=vectors))
        service.recall(QUERIES[0], k=5)  # loads the model: start-up, not a call's cost
        service.remember("We picked Postgres for the warm-up ledger database")  # builds the linker
        recall: list[float] = []
        remember: list[float] = []
        profiler = Profiler(interval=0.0005)
        profiler.start()
        for _ in range(5):
            for q in QUERIES:
                t = time.perf_counter()
                service.recall(q, k=5)
                recall.append((time.perf_counter() - t) * 1000)
        profiler.stop()
        (out / f"recall-{vectors}.txt").write_text(profiler.output_text(unicode=False, color=False))
        profiler = Profiler(interval=0.0005)
        profiler.start()
        for text in new_notes(remembers, 7):
            t = time.perf_counter()
            service.remember(text)
            remember.append((time.perf_counter() - t) * 1000)
        profiler.stop()
        (out / f"remember-{vectors}.txt").write_text(profiler.output_text(unicode=False, color=False))
        service.close()
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        for folder in (".words", ".hnsw"):
            shutil.rmtree(str(db) + folder, ignore_errors=True)
    return {
        "recall_p50_ms": round(pct(recall, 50), 2),
        "recall_p95_ms": round(pct(recall, 95), 2),
        "remember_p50_ms": round(pct(remember, 50), 2),
        "remember_p95_ms": round(pct(remember, 95), 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--notes", type=int, default=100_000)
    p.add_argument("--remembers", type=int, default=100)
    p.add_argument("--out", type=Path, default=Path("bench/results/profile"))
    p.add_argument("--workdir", type=Path, default=Path("bench/results/tmp"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    args.workdir.mkdir(parents=True, exist_ok=True)
    base = args.workdir / f"speed-{args.notes}.db"
    ready = args.workdir / f"speed-{args.notes}.db.vectors"
    if not base.exists():
        datagen.build(base, args.notes, seed=1)
        ready.unlink(missing_ok=True)
    hybrid = vectors_available()
    if hybrid and not ready.exists():
        datagen.add_vectors(base, seed=1)
        ready.touch()
    for vectors in ("off", "on") if hybrid else ("off",):
        print(vectors, profile(base, vectors, args.remembers, args.out), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
