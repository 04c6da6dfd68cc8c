"""Per-note extraction latency of the cronista backends in one run: lite, onnx in process, triton.

    python -m bench.triton_latency --triton-url 127.0.0.1:8001 [--model-dir DIR] [--notes N] [--out DIR]

``--triton-url`` is a Triton server that serves the cronista model of ``--model-dir`` (the same
``model.onnx``): on the CPU, ``make triton-cpu`` (PyTriton's tritonserver, the Python-backend
mirror of models/triton) or ``scripts/serve_triton_cpu.py`` on a repository made with
``scripts/make_models.py --cronista-dir``. Notes are the held-out labelled notes
(lab/cronista/eval_notes.jsonl), each extracted once, one at a time, after a warm-up; the
numbers are p50 and p95 over those calls. Triton is also called from 8 threads at once (its
dynamic batcher merges them), reported as notes per second. ``triton`` pads each request to a
length bucket (``LENGTH_BUCKETS``, what production does); ``triton-unbucketed`` sends each note
at its own width, to show what the padding costs on this machine. Prints a table and writes
``triton_latency.json`` to ``--out`` when given (``python -m bench.report`` puts it in
docs/BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "bench" / "cronista" / "eval_notes.jsonl"


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50_ms": pick(0.5) * 1000, "p95_ms": pick(0.95) * 1000, "mean_ms": statistics.fmean(values) * 1000}


def timed(extract, texts: list[str]) -> list[float]:
    for text in texts[:5]:
        extract(text)  # warm-up
    out = []
    for text in texts:
        started = time.perf_counter()
        extract(text)
        out.append(time.perf_counter() - started)
    return out


def main(argv: list[str] | None = None) -> int:
    from evomem.adapters.models.onnx_cronista import DEFAULT_MODEL_DIR, OnnxCronista
    from evomem.adapters.models.triton import TritonModel
    from evomem.adapters.models.triton_cronista import TritonCronista
    from evomem.domain.cronista import LiteCronista

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--triton-url", required=True)
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--server", default="", help="what serves --triton-url, recorded in the JSON")
    args = parser.parse_args(argv)

    texts = [json.loads(line)["text"] for line in NOTES.read_text().splitlines() if line.strip()][: args.notes]
    triton = TritonCronista(TritonModel(args.triton_url, "cronista", timeout_s=30), args.model_dir)
    plain = TritonCronista(TritonModel(args.triton_url, "cronista", timeout_s=30, length_buckets=()), args.model_dir)
    backends = {
        "lite": LiteCronista(),
        "onnx": OnnxCronista(args.model_dir),
        "triton": triton,
        "triton-unbucketed": plain,
    }
    rows = {name: percentiles(timed(b.extract, texts)) for name, b in backends.items()}
    if triton.degraded is not None or plain.degraded is not None:
        raise SystemExit(f"Triton fell back to lite during the run ({triton.degraded}): the numbers are not Triton's")
    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(triton.extract, texts))
    rows["triton"]["notes_per_s_8_threads"] = len(texts) / (time.perf_counter() - started)
    print(f"{len(texts)} notes from {NOTES.name}, model {args.model_dir}")
    print("| backend | p50 ms | p95 ms | mean ms |")
    print("|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['mean_ms']:.2f} |")
    print(f"triton, 8 threads: {rows['triton']['notes_per_s_8_threads']:.0f} notes/s")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        model_dir = args.model_dir.resolve()
        shown = str(model_dir.relative_to(ROOT)) if model_dir.is_relative_to(ROOT) else str(model_dir)
        result = {
            "notes": len(texts),
            "model_dir": shown,
            "triton_url": args.triton_url,
            "server": args.server,
            "length_buckets": list(triton.model.length_buckets),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "backends": rows,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load {' / '.join(f'{x:.1f}' for x in os.getloadavg())} at the end",
        }
        (args.out / "triton_latency.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
