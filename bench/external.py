"""External sets: facts and decisions nobody on the team wrote.

Read in place from ``../shared/data/external`` (relative to the project root; ``--data`` to
point elsewhere); nothing is copied into the repository.

1. MemoryAgentBench fact consolidation, single hop (``factconsolidation_sh_{6k,32k,64k,262k}``).
   The numbered facts are fed in order, one note each; a later fact with the same subject and
   relation overwrites an earlier one. Every aligned question is asked with ``recall`` (k=5).
   ``first_hit_current``: the first returned item not marked superseded holds the gold answer and
   is not an overwritten fact (the external README's criterion). The deterministic judge of
   ``bench.judge`` also scores the top k (topic = the question's subject and relation):
   correct / obsolete / miss. Memories: flat, flat-dates (the fact number as date),
   evomem-agent (the agent links each overwriting fact to the one it overwrites, from the
   aligned pairs) and evomem-auto:<linker> for every linker (no link is passed).
2. Python PEP supersession chains, as a linking test. All 736 PEPs are fed in order of
   creation (``Created:``), without their ``Superseded-By``/``Replaces``/``Status`` headers,
   to EvoMem with each automatic linker. The links it makes are scored against the 47 gold
   edges (precision, recall; an edge whose newer PEP was created before the older one cannot be
   made at insertion time and is counted apart), and still-valid PEPs (never the older side of a
   gold edge) that end up superseded are counted as hidden. A linker that abstains
   (``link_decision.kind == "abstain"``) links nothing: abstentions are counted apart, on a PEP
   with a gold edge (and whether a gold predecessor was among ``possible_supersedes``) or not.
   Linker time per remember (``bench.timing``): calls, p50, p95.

    python -m bench.external --out bench/results [--sizes 6k,32k] [--linkers heuristic]
    python -m bench.external --skip-mab --missing-ok --name peps --out bench/results   # make bench

Every offline linker runs by default (heuristic first: the baseline). ``--name`` sets the output
files' stem (``external``: ``external.json``, ``external.md``, ``external_rows.jsonl``).
``--missing-ok``: a part whose data folder is missing is skipped (said on stderr and in the
outputs) instead of failing the run.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.judge import DeterministicJudge, Item
from bench.memories import BenchError, EvoMemMemory, FlatMemory, K, LLMEndpoint, ScenarioRun, available_linkers
from bench.quality import _f3, _ms, answer_metrics, linker_cost

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "external"
SIZES = ("6k", "32k", "64k", "262k")
_FACT = re.compile(r"^(\d+)\. (.*)$", re.M)
_STRIP_HEADERS = ("superseded-by", "replaces", "status")


# ----------------------------------------------------------------------------- MemoryAgentBench


def mab_scenario(data: Path, size: str) -> dict[str, Any]:
    """One fact-consolidation context as a scenario (notes = facts, questions = aligned questions)."""
    source = f"factconsolidation_sh_{size}"
    rows = json.loads((data / "memoryagentbench" / "Conflict_Resolution.json").read_text(encoding="utf-8"))
    row = next((r for r in rows if r["metadata"].get("source") == source), None)
    if row is None:
        raise BenchError(f"{source} not found in Conflict_Resolution.json")
    facts = [(int(i), text.strip()) for i, text in _FACT.findall(row["context"])]
    if [i for i, _ in facts] != list(range(len(facts))):
        raise BenchError(f"{source}: facts are not numbered 0..n-1")
    topic = {i: f"fact{i}" for i, _ in facts}
    supersedes: dict[int, int] = {}
    with (data / "memoryagentbench" / "factconsolidation_sh_pairs.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            pair = json.loads(line)
            if pair["source"] != source:
                continue
            chain = sorted(pair["chain"], key=lambda c: c["idx"])
            for c in chain:
                topic[c["idx"]] = pair["key"]
            for prev, cur in itertools.pairwise(chain):
                supersedes[cur["idx"]] = prev["idx"]
    replaced = set(supersedes.values())
    notes = [
        {
            "i": i,
            "text": text,
            "date": f"{i:06d}",
            "topic": topic[i],
            "scope": None,
            "option": text,
            "supersedes": supersedes.get(i),
            "valid_at_question": i not in replaced,
            "kind": "fact",
        }
        for i, text in facts
    ]
    questions = []
    with (data / "memoryagentbench" / "factconsolidation_sh_questions.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if q["source"] != source:
                continue
            idx = q["current_idx"]
            if notes[idx]["text"] != q["current_fact"].strip():
                raise BenchError(f"{q['qid']}: current_idx {idx} does not hold the current fact")
            questions.append(
                {
                    "id": q["qid"],
                    "kind": "updated" if q["superseded_facts"] else "not_updated",
                    "text": q["question"],
                    "topic": topic[idx],
                    "scope": None,
                    "gold_option": notes[idx]["text"],
                    "obsolete_options": [t.strip() for t in q["superseded_facts"]],
                    "wrong_scope_options": [],
                    "gold": q["gold"],
                    "gold_note": idx,
                }
            )
    return {"id": source, "set": f"mab{size}", "index": 0, "notes": notes, "questions": questions}


def first_hit_current(items: Sequence[Item], question: Mapping[str, Any]) -> str:
    """``current``, ``obsolete`` (an overwritten fact), ``other`` (another fact) or ``miss``."""
    for item in items:
        if item.status in ("superseded", "forgotten"):
            continue
        text = item.text.strip()
        if text in question["obsolete_options"]:
            return "obsolete"
        if any(g.lower() in text.lower() for g in question["gold"]):
            return "current"
        return "other"
    return "miss"


async def _run_mab(scenario: Mapping[str, Any], memories: Sequence[Any], k: int) -> dict[str, ScenarioRun]:
    out: dict[str, ScenarioRun] = {}
    for memory in memories:
        async with memory:
            out[memory.name] = await memory.run(scenario, k)
    return out


def mab_links(notes: Sequence[Mapping[str, Any]], run: ScenarioRun) -> dict[str, Any]:
    """The links an automatic linker made against the overwrites, its abstentions (on a fact that
    overwrites one, and whether that one was listed in ``possible_supersedes``; on a fact that
    overwrites none), and the overwrites linked or listed (``found_if_confirmed``)."""
    by_i = {n["i"]: n for n in notes}
    gold = {(n["i"], n["supersedes"]) for n in notes if n["supersedes"] is not None}
    pred = set(run.edges or ())
    on_gold = listed = no_gold = 0
    for i, offered in run.abstentions.items():
        target = by_i[i]["supersedes"] if i in by_i else None
        if target is None:
            no_gold += 1
        else:
            on_gold += 1
            listed += target in offered
    tp = len(pred & gold)
    confirmed_tp = len(set(run.confirmed) & gold)  # links the agent confirmed: listed too, counted once
    return {
        "predicted": len(pred),
        "gold": len(gold),
        "true_positive": tp,
        "confirmed": len(run.confirmed),
        "abstentions": {"on_gold": on_gold, "on_gold_target_listed": listed, "no_gold": no_gold},
        "found_if_confirmed": tp - confirmed_tp + listed,
    }


#: The linkers whose offers the MemoryAgentBench run also confirms, as an agent would (one
#: ``supersede`` when the overwritten fact is listed): ``evomem-auto:<linker>+confirm``.
CONFIRMED = ("pair",)


def run_mab(data: Path, sizes: Sequence[str], linkers: Sequence[str], k: int = K) -> tuple[dict[str, Any], list]:
    judge = DeterministicJudge()
    report: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for size in sizes:
        scenario = mab_scenario(data, size)
        memories: list[Any] = [FlatMemory(dates=False), FlatMemory(dates=True), EvoMemMemory(statuses=False)]
        memories += [EvoMemMemory(linker=lk, statuses=False) for lk in linkers]
        # and the agent confirming the pair linker's offers (the table's "pair + confirm" row)
        memories += [
            EvoMemMemory(linker=lk, statuses=False, confirm_abstentions=True) for lk in linkers if lk in CONFIRMED
        ]
        started = time.perf_counter()
        runs = asyncio.run(_run_mab(scenario, memories, k))
        block: dict[str, Any] = {
            "facts": len(scenario["notes"]),
            "questions": len(scenario["questions"]),
            "updated_questions": sum(q["kind"] == "updated" for q in scenario["questions"]),
            "gold_overwrites": sum(n["supersedes"] is not None for n in scenario["notes"]),
            "memories": {},
        }
        for name, run in runs.items():
            entry: dict[str, Any] = {}
            for subset in ("all", "updated"):
                qs = [q for q in scenario["questions"] if subset == "all" or q["kind"] == "updated"]
                firsts = [first_hit_current(run.items[q["id"]], q) for q in qs]
                verdicts = [judge.judge(scenario, q, run.items[q["id"]]) for q in qs]
                entry[subset] = {
                    "first_hit_current": round(firsts.count("current") / len(qs), 4) if qs else 0.0,
                    "first_hit": {o: firsts.count(o) for o in ("current", "obsolete", "other", "miss")},
                    **answer_metrics([v.outcome for v in verdicts]),
                }
                if subset == "all":
                    for q, f, v in zip(qs, firsts, verdicts, strict=True):
                        rows.append(
                            {
                                "type": "mab",
                                "set": scenario["id"],
                                "memory": name,
                                "question": q["id"],
                                "kind": q["kind"],
                                "first_hit": f,
                                "outcome": v.outcome,
                                "note": v.note,
                                "gold_note": q["gold_note"],
                                "returned": run.returned[q["id"]],
                            }
                        )
            if run.edges is not None and name.startswith("evomem-auto"):
                entry["links"] = mab_links(scenario["notes"], run)
            block["memories"][name] = entry
        block["runtime_s"] = round(time.perf_counter() - started, 3)
        report[scenario["id"]] = block
    return report, rows


# ----------------------------------------------------------------------------- PEPs


def strip_headers(text: str, drop: Sequence[str] = _STRIP_HEADERS) -> str:
    """Remove the given RFC-822 style header fields (and their continuation lines) from a PEP."""
    lines = text.splitlines()
    out: list[str] = []
    in_header = True
    skipping = False
    for line in lines:
        if in_header:
            if not line.strip():
                in_header = False
                skipping = False
                out.append(line)
                continue
            if line[:1] in (" ", "\t"):
                if not skipping:
                    out.append(line)
                continue
            name = line.split(":", 1)[0].strip().lower()
            skipping = name in drop
            if not skipping:
                out.append(line)
            continue
        out.append(line)
    return "\n".join(out).strip() + "\n"


def load_peps(data: Path) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """All PEPs in order of creation (ties: by number), and the gold (new, old) edges."""
    peps = []
    for path in sorted((data / "peps" / "texts").glob("pep-*.rst")):
        raw = path.read_text(encoding="utf-8")
        number = int(re.search(r"^PEP:\s*(\d+)", raw, re.M).group(1))  # type: ignore[union-attr]
        created = re.search(r"^Created:\s*(\S+)", raw, re.M)
        date = dt.datetime.strptime(created.group(1), "%d-%b-%Y").date() if created else dt.date(1900, 1, 1)
        peps.append({"pep": number, "created": date.isoformat(), "text": strip_headers(raw)})
    peps.sort(key=lambda p: (p["created"], p["pep"]))
    edges: list[tuple[int, int]] = []
    with (data / "peps" / "pep_chains.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            for e in json.loads(line)["edges"]:
                edges.append((int(e["new"]), int(e["old"])))
    return peps, sorted(set(edges))


async def _feed_peps(linker: str, peps: Sequence[Mapping[str, Any]], llm: LLMEndpoint | None = None) -> ScenarioRun:
    """Every PEP remembered in order; the run's edges, abstentions (PEP -> PEPs listed), final
    statuses and linker time per remember."""
    from tqdm import tqdm

    memory = EvoMemMemory(linker=linker, llm=llm if linker == "llm" else None)
    ids: dict[int, str] = {}
    back: dict[str, int] = {}
    run = ScenarioRun(items={}, edges=[], statuses={})
    async with memory:
        with memory.session():
            for p in tqdm(peps, desc=f"peps {memory.name}", unit="pep", leave=False, file=sys.stderr):
                out = await memory.call("remember", {"raw_text": p["text"], "namespace": "peps"})
                ids[p["pep"]] = out["id"]
                back[out["id"]] = p["pep"]
                if out.get("supersedes"):
                    run.edges.append((p["pep"], back[out["supersedes"]]))  # type: ignore[union-attr]
                    run.link_evidence[p["pep"]] = list((out.get("link") or {}).get("evidence") or [])
                decision = out.get("link_decision") or {}
                if decision.get("kind") == "abstain":
                    listed = out.get("possible_supersedes") or [c.get("id") for c in decision.get("candidates", [])]
                    run.abstentions[p["pep"]] = [back.get(c) for c in listed if isinstance(c, str)]
            for pep, node_id in ids.items():
                got = await memory.call("get_node", {"node_id": node_id})
                run.statuses[pep] = got["status"]  # type: ignore[index]
        run.remembers = len(ids)
    memory.add_timings(run)
    return run


def run_peps(
    data: Path, linkers: Sequence[str], *, llm: LLMEndpoint | None = None, limit: int = 0
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``limit``: only the first N PEPs in creation order, and the gold edges between them.
    ``llm``: the endpoint of the ``llm`` linker, when ``linkers`` has it (``bench.llm``)."""
    peps, gold = load_peps(data)
    if limit:
        peps = peps[:limit]
        kept = {p["pep"] for p in peps}
        gold = [(n, o) for n, o in gold if n in kept and o in kept]
    created = {p["pep"]: p["created"] for p in peps}
    order = {p["pep"]: i for i, p in enumerate(peps)}
    reachable = [(n, o) for n, o in gold if order[n] > order[o]]
    old_side = {o for _, o in gold}
    still_valid = [p["pep"] for p in peps if p["pep"] not in old_side]
    report: dict[str, Any] = {
        "peps": len(peps),
        "gold_edges": len(gold),
        "gold_edges_linkable_in_creation_order": len(reachable),
        "still_valid_peps": len(still_valid),
        **({"limit": limit} if limit else {}),
        "linkers": {},
    }
    rows: list[dict[str, Any]] = []
    olds: dict[int, set[int]] = {}
    for n, o in gold:
        olds.setdefault(n, set()).add(o)
    for linker in linkers:
        started = time.perf_counter()
        run = asyncio.run(_feed_peps(linker, peps, **({"llm": llm} if llm else {})))
        statuses = run.statuses or {}
        pred = set(run.edges or [])
        tp = pred & set(gold)
        hidden = [p for p in still_valid if statuses.get(p) != "active"]
        on_gold = [p for p in run.abstentions if p in olds]
        listed = [p for p in on_gold if olds[p] & set(run.abstentions[p])]
        confirmable = {(p, o) for p in on_gold for o in olds[p] & set(run.abstentions[p])} - tp
        report["linkers"][linker] = {
            "links_made": len(pred),
            "true_positive": len(tp),
            "precision": round(len(tp) / len(pred), 4) if pred else None,
            "recall": round(len(tp) / len(gold), 4) if gold else None,
            "recall_linkable": round(len(tp) / len(reachable), 4) if reachable else None,
            "abstentions": {
                "total": len(run.abstentions),
                "on_gold": len(on_gold),
                "on_gold_target_listed": len(listed),
                "no_gold": len(run.abstentions) - len(on_gold),
            },
            "recall_if_confirmed": round((len(tp) + len(confirmable)) / len(gold), 4) if gold else None,
            "still_valid_hidden": len(hidden),
            "linker_cost": linker_cost([run]),
            "runtime_s": round(time.perf_counter() - started, 3),
            # links the gold set does not have, with what the linker read (a reader can judge them)
            "wrong_links": [
                {"new": n, "old": o, "evidence": run.link_evidence.get(n, [])} for n, o in sorted(pred - set(gold))
            ],
        }
        for n, o in sorted(pred | set(gold)):
            rows.append(
                {
                    "type": "pep_link",
                    "linker": linker,
                    "new": n,
                    "old": o,
                    "predicted": (n, o) in pred,
                    "gold": (n, o) in set(gold),
                    "new_created": created[n],
                    "old_created": created[o],
                }
            )
        rows.extend({"type": "pep_hidden", "linker": linker, "pep": p} for p in hidden)
        rows.extend(
            {"type": "pep_abstain", "linker": linker, "pep": p, "listed": c, "gold": sorted(olds.get(p, ()))}
            for p, c in sorted(run.abstentions.items())
        )
    return report, rows


# ----------------------------------------------------------------------------- outputs


def markdown(report: Mapping[str, Any]) -> str:
    out = ["# EvoMem on external sets", ""]
    for part, why in (report.get("skipped") or {}).items():
        out += [f"- {part}: skipped ({why}).", ""]
    mab = report.get("memoryagentbench")
    if mab:
        out += [
            f"## MemoryAgentBench fact consolidation, single hop (k={report['k']})",
            "",
            "`first hit current`: the first returned item not marked superseded holds the current fact "
            "(dates are not read, so flat and flat-dates tie on it). "
            "ODR / miss: deterministic judge over the top k, on the questions whose fact was overwritten.",
            "",
            "| set | facts | questions (updated) | memory | first hit current (all) | first hit current (updated) "
            "| ODR (updated) | miss (updated) | links made / correct (of gold) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for set_name, block in mab.items():
            for mem, e in block["memories"].items():
                lk = e.get("links")
                links = f"{lk['predicted']} / {lk['true_positive']} ({lk['gold']})" if lk else "—"
                out.append(
                    f"| {set_name} | {block['facts']} | {block['questions']} ({block['updated_questions']}) "
                    f"| {mem} | {e['all']['first_hit_current']:.3f} | {e['updated']['first_hit_current']:.3f} "
                    f"| {e['updated']['odr']:.3f} | {e['updated']['miss_rate']:.3f} | {links} |"
                )
        out.append("")
    peps = report.get("peps")
    if peps:
        out += [
            "## Python PEP supersession chains (automatic linking)",
            "",
            f"{peps['peps']} PEPs in order of creation, headers Superseded-By/Replaces/Status removed; "
            f"{peps['gold_edges']} gold edges ({peps['gold_edges_linkable_in_creation_order']} linkable in "
            f"creation order); {peps['still_valid_peps']} still-valid PEPs.",
            "",
            "Precision counts only the links made. An abstention links nothing: *abstained, gold edge*: the PEP "
            "does replace one (in brackets: a gold predecessor was among `possible_supersedes`); *no gold edge*: "
            "it replaces none. *Recall if confirmed*: gold edges linked, or abstained on with the predecessor "
            "listed. Linker time: the remembers that called the linker, p50 / p95 in ms, for the decision alone "
            "and with the candidate search (BM25 and the note's embedding neighbours); the first linker is the "
            "baseline.",
            "",
            "| linker | links made | correct | precision | recall (of linkable) | abstained, gold edge (listed) "
            "| abstained, no gold edge | recall if confirmed | still-valid PEPs hidden | linker calls "
            "| decision p50 / p95 ms | with candidates p50 / p95 ms | time |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for linker, e in peps["linkers"].items():
            ab = e.get("abstentions") or {}
            c = e.get("linker_cost") or {}
            out.append(
                f"| {linker} | {e['links_made']} | {e['true_positive']} | {_f3(e['precision'])} "
                f"| {_f3(e['recall'])} ({_f3(e['recall_linkable'])}) "
                f"| {ab.get('on_gold', 0)} ({ab.get('on_gold_target_listed', 0)}) | {ab.get('no_gold', 0)} "
                f"| {_f3(e.get('recall_if_confirmed'))} | {e['still_valid_hidden']} / {peps['still_valid_peps']} "
                f"| {c.get('linker_calls', 0)} | {_ms(c.get('decide_p50_ms'))} / {_ms(c.get('decide_p95_ms'))} "
                f"| {_ms(c.get('p50_ms'))} / {_ms(c.get('p95_ms'))} | {e['runtime_s']:.0f} s |"
            )
        out.append("")
        for linker, e in peps["linkers"].items():
            wrong = e.get("wrong_links") or []
            if not wrong or len(wrong) > 10:
                continue  # none, or too many to read one by one (the rows file has them all)
            out.append(f"Links by {linker} that the gold set (the PEP headers) does not have, and its evidence:")
            out.append("")
            for w in wrong:
                said = "; ".join(w["evidence"]) or "no evidence recorded"
                out.append(f"- PEP {w['new']} → PEP {w['old']}: {said[:300]}")
            out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.external", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench/results", help="folder for external.json / .md / _rows.jsonl")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="the external data folder (read in place)")
    ap.add_argument("--sizes", default=",".join(SIZES), help="fact-consolidation sizes (6k,32k,64k,262k)")
    ap.add_argument(
        "--linkers",
        default=",".join(available_linkers()),
        help=f"comma list of automatic linkers (default, and available: {', '.join(available_linkers())})",
    )
    ap.add_argument("--skip-mab", action="store_true", help="skip MemoryAgentBench")
    ap.add_argument("--skip-peps", action="store_true", help="skip the PEP linking test")
    ap.add_argument(
        "--missing-ok",
        action="store_true",
        help="skip (and say so) a part whose data is missing instead of failing",
    )
    ap.add_argument("--name", default="external", help="stem of the output files (<name>.json, .md, _rows.jsonl)")
    ap.add_argument("--k", type=int, default=K)
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    if args.no_progress:
        os.environ["TQDM_DISABLE"] = "1"  # tqdm reads TQDM_* defaults from the environment
    data = Path(args.data)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    linkers = [s.strip() for s in args.linkers.split(",") if s.strip()]
    parts = {"memoryagentbench": not args.skip_mab, "peps": not args.skip_peps}
    skipped: dict[str, str] = {}
    try:
        for part, wanted in parts.items():
            if wanted and not (data / part).is_dir():
                where = data if not data.is_dir() else data / part
                why = f"external data folder {where} not found (see ../shared/data/external/README.md)"
                if not args.missing_ok:
                    raise BenchError(why)
                skipped[part] = why
                print(f"{part}: skipped, {why}", file=sys.stderr)
        if bad := [s for s in sizes if s not in SIZES]:
            raise BenchError(f"unknown size {bad}; known: {', '.join(SIZES)}")
        if bad := [lk for lk in linkers if lk not in available_linkers()]:
            raise BenchError(f"unknown linker {bad}; available: {', '.join(available_linkers())}")
        started = time.perf_counter()
        report: dict[str, Any] = {"benchmark": "evomem-external/1", "data": str(data), "k": args.k}
        if skipped:
            report["skipped"] = skipped
        rows: list[dict[str, Any]] = []
        if parts["memoryagentbench"] and "memoryagentbench" not in skipped:
            report["memoryagentbench"], r = run_mab(data, sizes, linkers, args.k)
            rows += r
        if parts["peps"] and "peps" not in skipped:
            report["peps"], r = run_peps(data, linkers)
            rows += r
        report["runtime_s"] = round(time.perf_counter() - started, 3)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / f"{args.name}.json", out / f"{args.name}.md", out / f"{args.name}_rows.jsonl"]
    files[0].write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    files[1].write_text(markdown(report), encoding="utf-8")
    with files[2].open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(markdown(report))
    print(f"wrote {', '.join(str(f) for f in files)} in {report['runtime_s']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
