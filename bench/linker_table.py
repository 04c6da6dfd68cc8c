"""One table of the automatic linkers per set, from ``bench.quality`` reports (aggregates only).

    python -m bench.linker_table bench/results/quality.json [more quality.json ...]

Rows: every ``evomem-auto:<linker>`` memory of each report (the ``+confirm`` twin gives the ODR
after confirming); ``flat-dates`` as the baseline ODR. Columns: auto-link ODR, ODR after
confirming, link precision, recall, abstentions (on a gold edge / on none), recall if confirmed,
still-valid decisions hidden, and linker time per remember (candidate search + decision, p50/p95
ms). Nothing here names a scenario, so blind sets are printed the same way.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _f(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def rows(report: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    blind = set(report.get("blind_sets", ()))
    for set_name, block in report["sets"].items():
        mems = block["memories"]
        base = mems.get("flat-dates", {}).get("main", {}).get("odr")
        tag = " (blind)" if set_name in blind else ""
        out += [
            f"### {set_name}{tag}: {block['scenarios']} scenarios, flat-dates ODR {_f(base)}",
            "",
            "| linker | auto ODR | ODR confirmed | precision | recall | abstained (gold / none) "
            "| recall if confirmed | hidden | ms p50 / p95 |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for mem, e in mems.items():
            if not mem.startswith("evomem-auto:") or mem.endswith("+confirm") or mem.endswith("+bm25"):
                continue
            links = e.get("links") or {}
            ab = links.get("abstentions") or {}
            hidden = (e.get("hidden") or {}).get("still_valid_decisions") or {}
            cost = e.get("linker_cost") or {}
            confirmed = mems.get(f"{mem}+confirm", {}).get("main", {}).get("odr")
            out.append(
                f"| {mem.removeprefix('evomem-auto:')} | {_f(e['main']['odr'])} | {_f(confirmed)} "
                f"| {_f(links.get('precision'))} | {_f(links.get('recall'))} "
                f"| {ab.get('on_gold', 0)} / {ab.get('no_gold', 0)} | {_f(links.get('recall_if_confirmed'))} "
                f"| {hidden.get('hidden', 0)} / {hidden.get('total', 0)} "
                f"| {_f(cost.get('p50_ms'), 1)} / {_f(cost.get('p95_ms'), 1)} |"
            )
        out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    paths = (argv if argv is not None else sys.argv[1:]) or ["bench/results/quality.json"]
    for p in paths:
        report = json.loads(Path(p).read_text(encoding="utf-8"))
        print("\n".join(rows(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
