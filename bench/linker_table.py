"""ONE table of the automatic linkers, development and blind sets side by side (aggregates only).

    python -m bench.linker_table --quality bench/results/linking/quality.json \\
        --peps bench/results/linking/peps.json --out bench/results/linking.md

Inputs: ``bench.quality`` reports (``evomem-auto:<linker>`` memories, ``+confirm`` twins, the
``flat-dates`` baseline; a set listed in the report's ``blind_sets`` is blind) and the PEP
chains' report of ``bench.external`` (blind: external data). Rows: heuristic, scored (the
baseline), pair, pair + confirm (the agent confirms the listed candidates with ``supersede``),
first pooled over all development sets and over all blind sets (the side-by-side comparison),
then per set. Columns: auto-link ODR (and flat BM25 with dates), link precision and recall,
abstentions (on a replacing note / on a note that replaces nothing), recall if confirmed,
still-valid decisions hidden, how often ``--auto-supersede llm`` would ask the LLM (the pair
linker's abstentions: count and share of remembers), linker time per remember (candidate search,
which embeds the new note once for the vector half and ``vectors.add`` reuses, + decision; p50/p95
ms) and the decision alone.
Nothing here names a scenario, a question or a note, so blind sets are printed the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROWS = (("heuristic", "heuristic"), ("scored", "scored"), ("pair", "pair"), ("pair + confirm", "pair+confirm"))
HEAD = (
    "| set | data | linker | auto ODR (flat-dates) | precision | recall | abstained (gold / none) "
    "| recall if confirmed | hidden valid | LLM asks | ms p50 / p95 | decide ms p50 / p95 "
    "| note embedding ms p50 / p95 |"
)


def _f(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _quality_entries(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per (set, row) of a quality report, with the counts the pooled rows need."""
    out: list[dict[str, Any]] = []
    blind = set(report.get("blind_sets", ()))
    cost_all = report.get("linker_cost") or {}
    for set_name, block in report["sets"].items():
        mems = block["memories"]
        base = mems.get("flat-dates", {}).get("main", {})
        for label, key in ROWS:
            e = mems.get(f"evomem-auto:{key}")
            if e is None:
                continue
            links = e.get("links") or {}
            ab = links.get("abstentions") or {}
            hidden = (e.get("hidden") or {}).get("still_valid_decisions") or {}
            main = e.get("main") or {}
            cost = e.get("linker_cost") or (cost_all.get(f"evomem-auto:{key}") or {}).get(set_name) or {}
            out.append(
                {
                    "set": set_name,
                    "blind": set_name in blind,
                    "scenarios": block.get("scenarios"),
                    "row": label,
                    "questions": main.get("questions", 0),
                    "obsolete": (main.get("outcomes") or {}).get("obsolete", 0),
                    "base_q": base.get("questions", 0),
                    "base_obsolete": (base.get("outcomes") or {}).get("obsolete", 0),
                    "predicted": links.get("predicted", 0),
                    "tp": links.get("true_positive", 0),
                    "gold": links.get("gold", 0),
                    "found_if_confirmed": links.get("found_if_confirmed", 0),
                    "ab_gold": ab.get("on_gold", 0),
                    "ab_none": ab.get("no_gold", 0),
                    "hidden": hidden.get("hidden", 0),
                    "valid": hidden.get("total", 0),
                    "gate": cost.get("llm_gate") if key == "pair" else None,
                    **_times(cost),
                }
            )
    return out


def _times(cost: Mapping[str, Any]) -> dict[str, Any]:
    """A run's ``linker_cost`` as the table's time columns: remembers, linker, decision and note
    embedding p50 / p95 (None where the run did not measure one)."""
    return {
        "remembers": cost.get("remembers", 0),
        "p50": cost.get("p50_ms"),
        "p95": cost.get("p95_ms"),
        "d50": cost.get("decide_p50_ms"),
        "d95": cost.get("decide_p95_ms"),
        "e50": cost.get("embed_p50_ms"),
        "e95": cost.get("embed_p95_ms"),
    }


def _pep_entries(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    peps = report.get("peps") or {}
    out: list[dict[str, Any]] = []
    gold = peps.get("gold_edges", 0)
    for label, key in ROWS:
        e = (peps.get("linkers") or {}).get(key.removesuffix("+confirm"))
        if e is None:
            continue
        ab = e.get("abstentions") or {}
        cost = e.get("linker_cost") or {}
        confirm = key.endswith("+confirm")
        tp = e.get("true_positive", 0)
        found = round((e.get("recall_if_confirmed") or 0) * gold)
        out.append(
            {
                "set": "peps",
                "blind": True,
                "scenarios": peps.get("peps"),
                "row": label,
                "questions": 0,
                "obsolete": 0,
                "base_q": 0,
                "base_obsolete": 0,
                # + confirm: every listed gold predecessor confirmed (confirmations are right by construction)
                "predicted": e.get("links_made", 0) + (found - tp if confirm else 0),
                "tp": found if confirm else tp,
                "gold": gold,
                "found_if_confirmed": found,
                "ab_gold": ab.get("on_gold", 0),
                "ab_none": ab.get("no_gold", 0),
                "hidden": e.get("still_valid_hidden", 0),
                "valid": peps.get("still_valid_peps", 0),
                # the PEP test counts no gate: the pair linker's abstentions are where the cascade asks
                "gate": ab.get("total", 0) if key == "pair" else None,
                **_times(cost),
            }
        )
    return out


def _mab_entries(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """MemoryAgentBench fact consolidation (``bench.external``'s report; blind: external data). One
    set per size. Its ODR is the share of the questions whose fact was overwritten that the first
    active hit answers with an overwritten fact (``first_hit``: the judge, which reads dates, finds
    no obsolete answer for any memory there, so it would tell the linkers apart by nothing); the
    baseline in brackets is flat-dates' first hit (BM25, dates not read). Abstentions and recall
    if confirmed come from the offers (``possible_supersedes``); the MAB run counts no
    still-valid facts (—). Its ODR is not the scenario sets' one, so these rows stay out of the
    pooled rows."""
    out: list[dict[str, Any]] = []
    for set_name, block in (report.get("memoryagentbench") or {}).items():
        mems = block.get("memories") or {}
        base = (mems.get("flat-dates") or {}).get("updated") or {}
        for label, key in ROWS:
            e = mems.get(f"evomem-auto:{key}")
            if e is None:
                continue
            upd = e.get("updated") or {}
            links = e.get("links") or {}
            ab = links.get("abstentions") or {}
            out.append(
                {
                    "set": set_name.replace("factconsolidation_", "mab-"),
                    "blind": True,
                    "scenarios": f"{block.get('facts')} facts",
                    "row": label,
                    "questions": upd.get("questions", 0),
                    "obsolete": (upd.get("first_hit") or {}).get("obsolete", 0),
                    "base_q": base.get("questions", 0),
                    "base_obsolete": (base.get("first_hit") or {}).get("obsolete", 0),
                    "predicted": links.get("predicted", 0),
                    "tp": links.get("true_positive", 0),
                    "gold": links.get("gold", 0),
                    "found_if_confirmed": links.get("found_if_confirmed"),  # None: a report without offers
                    "pooled": False,  # another ODR: kept out of the pooled rows
                    "ab_gold": ab.get("on_gold", 0),
                    "ab_none": ab.get("no_gold", 0),
                    "hidden": 0,
                    "valid": 0,
                    "gate": None,
                    "remembers": 0,
                    "p50": None,
                    "p95": None,
                }
            )
    return out


def _line(name: str, kind: str, e: Mapping[str, Any], scenarios: Any = None) -> str:
    odr = _ratio(e["obsolete"], e["questions"])
    base = _ratio(e["base_obsolete"], e["base_q"])
    gate = "—" if e["gate"] is None else f"{e['gate']} ({_f(_ratio(e['gate'], e['remembers']), 2)})"
    ms = "—" if e.get("p50") is None else f"{_f(e['p50'], 1)} / {_f(e['p95'], 1)}"
    ms += " | " + ("—" if e.get("d50") is None else f"{_f(e['d50'], 1)} / {_f(e['d95'], 1)}")
    ms += " | " + ("—" if e.get("e50") is None else f"{_f(e['e50'], 1)} / {_f(e['e95'], 1)}")
    where = f"{name} ({scenarios})" if scenarios else name
    hidden = f"{e['hidden']} / {e['valid']}" if e["valid"] else "—"  # MAB counts no still-valid facts
    found = e["found_if_confirmed"]
    confirmed = "—" if found is None else _f(_ratio(found, e["gold"]))
    return (
        f"| {where} | {kind} | {e['row']} | {_f(odr)} ({_f(base)}) | {_f(_ratio(e['tp'], e['predicted']))} "
        f"| {_f(_ratio(e['tp'], e['gold']))} | {e['ab_gold']} / {e['ab_none']} "
        f"| {confirmed} | {hidden} | {gate} | {ms} |"
    )


def _pool(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    keys = ("questions", "obsolete", "base_q", "base_obsolete", "predicted", "tp", "gold", "found_if_confirmed")
    out: dict[str, Any] = {k: sum(e[k] for e in entries) for k in keys}
    out.update({k: sum(e[k] for e in entries) for k in ("ab_gold", "ab_none", "hidden", "valid", "remembers")})
    gates = [e["gate"] for e in entries if e["gate"] is not None]
    out["gate"] = sum(gates) if gates else None
    for key in ("p50", "p95", "d50", "d95", "e50", "e95"):
        out[key] = None  # percentiles do not pool; see the per-set rows
    out["row"] = entries[0]["row"]
    return out


def table(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [HEAD, "|---" * HEAD.count(" | ") + "|---|"]
    for kind, blind in (("dev", False), ("blind", True)):
        for label, _ in ROWS:
            mine = [e for e in entries if e["blind"] is blind and e["row"] == label and e.get("pooled", True)]
            if mine:
                sets = sorted({e["set"] for e in mine})
                lines.append(_line(f"**all {kind}** ({len(sets)} sets)", kind, _pool(mine)))
    for blind in (False, True):
        for set_name in dict.fromkeys(e["set"] for e in entries if e["blind"] is blind):
            for e in (e for e in entries if e["set"] == set_name):
                lines.append(_line(set_name, "blind" if blind else "dev", e, e["scenarios"]))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.linker_table", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quality", action="append", default=[], help="a bench.quality report (repeatable)")
    ap.add_argument("--peps", default="", help="bench.external's PEP report (peps.json)")
    ap.add_argument("--mab", default="", help="bench.external's MemoryAgentBench report (mab.json)")
    ap.add_argument("--note", default="", help="a paragraph on how the run was made, printed above the table")
    ap.add_argument("--out", default="", help="write the table here as well (bench/results/linking.md)")
    args = ap.parse_args(argv)
    entries: list[dict[str, Any]] = []
    for p in args.quality or ["bench/results/linking/quality.json"]:
        entries += _quality_entries(json.loads(Path(p).read_text(encoding="utf-8")))
    if args.peps and Path(args.peps).exists():
        entries += _pep_entries(json.loads(Path(args.peps).read_text(encoding="utf-8")))
    if args.mab and Path(args.mab).exists():
        entries += _mab_entries(json.loads(Path(args.mab).read_text(encoding="utf-8")))
    text = "# Automatic linking: development and blind sets\n\n"
    if args.note:
        text += args.note.strip() + "\n\n"
    text += "\n".join(table(entries)) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
