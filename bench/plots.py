"""Redraw the quality benchmark's figures from a saved report, without rerunning the benchmark.

    python -m bench.plots                                  # bench/results/quality.json -> its PNGs
    python -m bench.plots path/to/quality.json --out DIR

Writes ``quality_odr.png``, ``quality_vdr.png`` and ``quality_para.png`` (``bench.quality.plots``,
the same functions the benchmark calls after a run).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.quality import plots


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.plots", description=__doc__.splitlines()[0])
    ap.add_argument("report", nargs="?", default="bench/results/quality.json")
    ap.add_argument("--out", default=None, help="folder for the PNGs (default: the report's folder)")
    args = ap.parse_args(argv)
    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    out = Path(args.out) if args.out else Path(args.report).parent
    out.mkdir(parents=True, exist_ok=True)
    for path in plots(report, out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
