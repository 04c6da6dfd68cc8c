"""The quality benchmark: ODR and VDR for every memory, in one run.

    python -m bench.quality --out bench/results                    # frozen sets, deterministic judge
    python -m bench.quality --out bench/results --limit 10         # first 10 scenarios of each set
    python -m bench.quality --out bench/results --judge llm \\
        --judge-model M --judge-base-url http://localhost:8080/v1  # key in EVOMEM_JUDGE_API_KEY

Reads ``bench/data/odr.jsonl``, ``bench/data/vdr.jsonl`` and ``bench/data/para.jsonl`` (or
regenerates a set with ``--seed`` / ``--vdr-seed`` / ``--para-seed``), runs every memory of
``bench.memories`` on every scenario (the ``+bm25`` twins on the paraphrase set only), judges
what each returned (``bench.judge``) and writes to ``--out``:

- ``quality.json``: the report (metrics per set and memory, McNemar tests, link quality);
- ``quality.md``: the same as Markdown tables;
- ``quality_rows.jsonl``: one row per question and memory (and one per scenario and linker
  with its links), to read a failure;
- ``quality_odr.png``, ``quality_vdr.png`` and ``quality_para.png``: ODR per memory with 95% CI,
  link quality with abstentions, and the paraphrase set's hit rate by question wording.

Metrics: ODR = share of questions whose chosen option is obsolete, with a Wilson 95% CI;
miss rate = share where nothing of the asked topic came back; exact McNemar test, paired per
question, of each memory against flat-dates (event: acting on an obsolete option). VDR adds
link precision and recall of every linker against the gold ``supersedes`` edges, abstentions
apart (``link_metrics``), and the still-valid decisions it hides (their final status is not
active). A linker that can abstain also runs as ``+confirm`` (the agent confirms abstentions
with ``supersede``): its ODR is reported next to the auto-link ODR, which stays the headline.
The paraphrase set adds the hit rate (the decision in force among the top k) per question
wording, and exact McNemar tests of every EvoMem memory (hybrid recall) against its ``+bm25``
twin: on hits, on obsolete answers and on the gold edges linked. Cost: linker time per remember
of every automatic linker (``linker_cost``: the remembers that called it, p50/p95 ms), per set and
over all sets, from ``bench.timing``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import paraphrase as para
from bench import scenarios as scen
from bench.judge import OUTCOMES, DeterministicJudge, Judge, JudgeError, LLMJudge, Verdict
from bench.memories import (
    BenchError,
    K,
    LLMEndpoint,
    ScenarioRun,
    available_linkers,
    build_memories,
    has_vectors_setting,
)
from bench.stats import mcnemar_exact, summary, wilson
from evomem.adapters.models.loader import sha256_file

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
BASELINE = "flat-dates"


# ----------------------------------------------------------------------------- running


async def _run_all(
    memories: Sequence[Any], sets: Mapping[str, Sequence[Mapping[str, Any]]], k: int, progress: bool
) -> tuple[dict[str, dict[str, list[ScenarioRun]]], dict[str, float]]:
    from tqdm import tqdm

    runs: dict[str, dict[str, list[ScenarioRun]]] = {}
    seconds: dict[str, float] = {}
    for memory in memories:
        started = time.perf_counter()
        runs[memory.name] = {}
        async with memory:
            for set_name, items in sets.items():
                only = getattr(memory, "sets", None)
                if only is not None and set_name not in only:
                    continue
                bar = tqdm(
                    items,
                    desc=f"{memory.name} {set_name}",
                    unit="sc",
                    disable=not progress,
                    file=sys.stderr,
                    leave=False,
                )
                runs[memory.name][set_name] = [await memory.run(s, k) for s in bar]
        seconds[memory.name] = round(time.perf_counter() - started, 3)
    return runs, seconds


def _judge_all(
    judge: Judge, jobs: list[tuple[Mapping[str, Any], Mapping[str, Any], list[Any]]], workers: int, progress: bool
) -> list[Verdict]:
    from tqdm import tqdm

    if isinstance(judge, DeterministicJudge) or workers <= 1:
        return [
            judge.judge(s, q, items)
            for s, q, items in tqdm(
                jobs, desc=f"judge {judge.name}", disable=not progress, file=sys.stderr, leave=False
            )
        ]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(judge.judge, s, q, items) for s, q, items in jobs]
        return [
            f.result()
            for f in tqdm(futures, desc=f"judge {judge.name}", disable=not progress, file=sys.stderr, leave=False)
        ]


# ----------------------------------------------------------------------------- metrics


def _rate(count: int, n: int) -> float:
    return round(count / n, 4) if n else 0.0


def answer_metrics(outcomes: Sequence[str]) -> dict[str, Any]:
    n = len(outcomes)
    counts = Counter(outcomes)
    lo, hi = wilson(counts["obsolete"], n)
    return {
        "questions": n,
        "outcomes": {o: counts[o] for o in OUTCOMES},
        "odr": _rate(counts["obsolete"], n),
        "odr_ci95": [round(lo, 4), round(hi, 4)],
        "miss_rate": _rate(counts["miss"], n),
        "correct_rate": _rate(counts["correct"], n),
        "wrong_scope_rate": _rate(counts["wrong_scope"], n),
    }


def mcnemar(
    mine: Sequence[Any], base: Sequence[Any], event: Any = "obsolete", baseline: str = BASELINE
) -> dict[str, Any]:
    """Paired per question: b = only this memory had the event (e.g. acted on an obsolete option),
    c = only the baseline did."""
    b = sum(1 for x, y in zip(mine, base, strict=True) if x == event and y != event)
    c = sum(1 for x, y in zip(mine, base, strict=True) if x != event and y == event)
    return {"baseline": baseline, "event": event, "only_this": b, "only_baseline": c, "p": mcnemar_exact(b, c)}


def _ci(successes: int, n: int) -> list[float]:
    lo, hi = wilson(successes, n)
    return [round(lo, 4), round(hi, 4)]


def gold_edges(scenario: Mapping[str, Any]) -> set[tuple[int, int]]:
    return {(n["i"], n["supersedes"]) for n in scenario["notes"] if n["supersedes"] is not None}


def link_metrics(scenarios: Sequence[Mapping[str, Any]], runs: Sequence[ScenarioRun]) -> dict[str, Any] | None:
    """Links against the gold ``supersedes`` edges, abstentions apart.

    Precision counts only the links made (an abstention links nothing). An abstention is
    counted on a note with a gold edge (safe but missed: ``on_gold``, of which ``target_listed``
    have the true predecessor among ``possible_supersedes``) or on a note with none
    (``no_gold``). ``recall_if_confirmed``: gold edges linked, or abstained on with the true
    predecessor listed (what an agent confirming abstentions with ``supersede`` would get).
    Links the agent confirmed (the ``+confirm`` memories) count as links, and apart as
    ``confirmed``.
    """
    if not runs or runs[0].edges is None:
        return None
    pred_n = gold_n = tp = confirmed = confirmed_tp = 0
    abst_gold = abst_gold_listed = abst_none = 0
    by_wording: dict[str, list[int]] = {}
    fp_by_kind: Counter[str] = Counter()
    for s, run in zip(scenarios, runs, strict=True):
        notes = s["notes"]
        gold = gold_edges(s)
        pred = set(run.edges or [])
        pred_n += len(pred)
        gold_n += len(gold)
        tp += len(pred & gold)
        confirmed += len(run.confirmed)
        confirmed_tp += len(set(run.confirmed) & gold)
        for i, listed in run.abstentions.items():
            target = notes[i]["supersedes"]
            if target is None:
                abst_none += 1
            else:
                abst_gold += 1
                abst_gold_listed += target in listed
        for new, old in sorted(gold):
            bucket = by_wording.setdefault(notes[new]["wording"], [0, 0])
            bucket[0] += (new, old) in pred
            bucket[1] += 1
        for new, _old in sorted(pred - gold):
            kind = notes[new]["kind"]
            if kind == "decision" and notes[new]["supersedes"] is not None:
                kind = "decision (wrong target)"
            fp_by_kind[kind] += 1
    found_if_confirmed = tp - confirmed_tp + abst_gold_listed
    return {
        "predicted": pred_n,
        "gold": gold_n,
        "true_positive": tp,
        "false_positive": pred_n - tp,
        "precision": round(tp / pred_n, 4) if pred_n else None,
        "recall": round(tp / gold_n, 4) if gold_n else None,
        "recall_ci95": _ci(tp, gold_n),
        "confirmed": confirmed,
        "abstentions": {
            "total": abst_gold + abst_none,
            "on_gold": abst_gold,
            "on_gold_target_listed": abst_gold_listed,
            "no_gold": abst_none,
        },
        "recall_if_confirmed": round(found_if_confirmed / gold_n, 4) if gold_n else None,
        "found_if_confirmed": found_if_confirmed,
        "recall_by_wording": {
            w: {"found": f, "gold": g, "recall": _rate(f, g)} for w, (f, g) in sorted(by_wording.items())
        },
        "false_positives_by_kind": dict(sorted(fp_by_kind.items())),
    }


def hidden_metrics(scenarios: Sequence[Mapping[str, Any]], runs: Sequence[ScenarioRun]) -> dict[str, Any] | None:
    """Still-valid notes whose final status is not active, by kind."""
    if not runs or runs[0].statuses is None:
        return None
    groups: dict[str, list[int]] = {}

    def count(group: str, hidden: bool) -> None:
        bucket = groups.setdefault(group, [0, 0])
        bucket[0] += hidden
        bucket[1] += 1

    for s, run in zip(scenarios, runs, strict=True):
        statuses = run.statuses or {}
        for n in s["notes"]:
            if not n["valid_at_question"]:
                continue
            hidden = statuses.get(n["i"], "active") != "active"
            if n["option"] is not None:
                count("still_valid_decisions", hidden)
            if n["kind"] == "scope_decision":
                count("scope_decisions", hidden)
                if "bait" in s:
                    count("scope_decisions_bait" if s["bait"] else "scope_decisions_plain", hidden)
            if n["kind"] == "decision":
                count("current_main_decisions", hidden)
            count("still_valid_notes", hidden)
    return {g: {"hidden": h, "total": t} for g, (h, t) in groups.items()}


def _percentiles(values: list[float]) -> dict[str, float | None]:
    """``bench.stats.summary``, or None for p50 and p95 when nothing was timed."""
    return summary(values) if values else {"p50_ms": None, "p95_ms": None}


def linker_cost(runs: Sequence[ScenarioRun]) -> dict[str, Any] | None:
    """Linker time per remember: how many remembers called the linker, and p50/p95 of those calls.

    ``bench.timing`` times a remember's candidate search and link decision; a remember
    with no active candidate, or one the linker does not judge (``Linker.wants_candidates``: no
    search), is not timed. None: no linker.
    """
    if not runs or runs[0].linker_ms is None:
        return None
    ms = [x for run in runs for x in run.linker_ms or ()]
    remembers = sum(run.remembers for run in runs)
    stats = _percentiles(ms)
    dstats = _percentiles([x for run in runs for x in run.linker_decide_ms or ()])
    estats = _percentiles([x for run in runs for x in run.note_embed_ms or ()])
    gate = sum(run.llm_gate for run in runs)
    llm_calls = [run.llm_calls for run in runs if run.llm_calls is not None]
    lstats = _percentiles([x for run in runs for x in run.llm_ms])
    return {
        "remembers": remembers,
        "linker_calls": len(ms),
        "call_share": _rate(len(ms), remembers),
        "p50_ms": stats["p50_ms"],
        "p95_ms": stats["p95_ms"],
        "max_ms": round(max(ms), 3) if ms else None,
        "total_s": round(sum(ms) / 1000, 3),
        "decide_p50_ms": dstats["p50_ms"],
        "decide_p95_ms": dstats["p95_ms"],
        # the note's own embedding, computed before the linker (storage's cost: ``add`` stores it)
        "embed_p50_ms": estats["p50_ms"],
        "embed_p95_ms": estats["p95_ms"],
        # remembers on which --auto-supersede llm (the LLM behind this linker) would ask the LLM
        "llm_gate": gate,
        "llm_gate_share": _rate(gate, remembers),
        # the llm linker: calls it made to its model (None for the other linkers)
        "llm_calls": sum(llm_calls) if llm_calls else None,
        "llm_call_p50_ms": lstats["p50_ms"],
        "llm_call_p95_ms": lstats["p95_ms"],
    }


def cost_report(runs: Mapping[str, Mapping[str, Sequence[ScenarioRun]]]) -> dict[str, Any]:
    """``linker_cost`` per memory with a linker: per set, and over all its sets (``all``)."""
    out: dict[str, Any] = {}
    for mem, by_set in runs.items():
        per = {set_name: linker_cost(set_runs) for set_name, set_runs in by_set.items()}
        per = {set_name: c for set_name, c in per.items() if c is not None}
        if per:
            per["all"] = linker_cost([run for set_runs in by_set.values() for run in set_runs])
            out[mem] = per
    return out


def _question_kinds(scenarios: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted({q["kind"] for s in scenarios for q in s["questions"]})


def _hit(run: ScenarioRun, q: Mapping[str, Any]) -> bool:
    """Whether the decision in force (the gold note) is among what the memory returned."""
    gold = q.get("gold_note")
    return gold is not None and gold in run.returned.get(q["id"], [])


def _vector_only(run: ScenarioRun, q: Mapping[str, Any]) -> bool:
    """Whether the decision in force came back, found by the vector search alone."""
    returned = run.returned.get(q["id"], [])
    via = run.via.get(q["id"], [])
    return any(i == q.get("gold_note") and v == ["vector"] for i, v in zip(returned, via, strict=False))


def wording_metrics(
    items: Sequence[Mapping[str, Any]], runs: Sequence[ScenarioRun], outcomes: Sequence[Sequence[str]]
) -> dict[str, Any]:
    """Per question wording (and ``all``): hit rate (the decision in force among the top k), ODR, miss."""
    groups: dict[str, list[tuple[bool, str, bool]]] = {"all": []}
    for s, run, outs in zip(items, runs, outcomes, strict=True):
        for q, outcome in zip(s["questions"], outs, strict=True):
            if q["kind"] != "main" or q.get("gold_note") is None:
                continue  # a question with no single decision in force (a set of dependencies) has no hit
            event = (_hit(run, q), outcome, _vector_only(run, q))
            groups["all"].append(event)
            groups.setdefault(q["wording"], []).append(event)
    out: dict[str, Any] = {}
    for w, events in groups.items():
        n = len(events)
        hits = sum(h for h, _, _ in events)
        m = answer_metrics([o for _, o, _ in events])
        out[w] = {
            "questions": n,
            "hits": hits,
            "hit_rate": _rate(hits, n),
            "hit_ci95": _ci(hits, n),
            "vector_only_hits": sum(v for _, _, v in events),
            **{key: m[key] for key in ("odr", "odr_ci95", "miss_rate", "correct_rate")},
        }
    return out


def _paired_links(
    items: Sequence[Mapping[str, Any]], mine: Sequence[ScenarioRun], base: Sequence[ScenarioRun]
) -> tuple[list[bool], list[bool]]:
    a: list[bool] = []
    b: list[bool] = []
    for s, x, y in zip(items, mine, base, strict=True):
        for edge in sorted(gold_edges(s)):
            a.append(edge in set(x.edges or []))
            b.append(edge in set(y.edges or []))
    return a, b


def compare_twins(
    items: Sequence[Mapping[str, Any]],
    mine: Sequence[ScenarioRun],
    base: Sequence[ScenarioRun],
    mine_out: Sequence[Sequence[str]],
    base_out: Sequence[Sequence[str]],
    baseline: str,
) -> dict[str, Any]:
    """A memory against its BM25-only twin, paired per question (hits, obsolete) and per gold edge."""
    per: dict[str, dict[str, list[Any]]] = {"all": {"a": [], "b": [], "ao": [], "bo": []}}
    for s, x, y, xo, yo in zip(items, mine, base, mine_out, base_out, strict=True):
        for q, a_out, b_out in zip(s["questions"], xo, yo, strict=True):
            if q["kind"] != "main":
                continue
            for key in ("all", q["wording"]):
                g = per.setdefault(key, {"a": [], "b": [], "ao": [], "bo": []})
                g["a"].append(_hit(x, q))
                g["b"].append(_hit(y, q))
                g["ao"].append(a_out)
                g["bo"].append(b_out)
    out: dict[str, Any] = {"baseline": baseline, "hits": {}, "obsolete": {}}
    for key, g in per.items():
        out["hits"][key] = mcnemar(g["a"], g["b"], event=True, baseline=baseline)
        out["obsolete"][key] = mcnemar(g["ao"], g["bo"], event="obsolete", baseline=baseline)
    if mine and mine[0].edges is not None and base and base[0].edges is not None:
        a, b = _paired_links(items, mine, base)
        out["links"] = mcnemar(a, b, event=True, baseline=baseline)
    return out


def build_report(
    sets: Mapping[str, Sequence[Mapping[str, Any]]],
    runs: Mapping[str, Mapping[str, Sequence[ScenarioRun]]],
    verdicts: Mapping[tuple[str, str, int, str], Verdict],
    det_verdicts: Mapping[tuple[str, str, int, str], Verdict] | None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    report_sets: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for set_name, items in sets.items():
        kinds = _question_kinds(items)
        block: dict[str, Any] = {"scenarios": len(items), "question_kinds": kinds, "memories": {}}
        ran = {mem: by_set[set_name] for mem, by_set in runs.items() if set_name in by_set}
        outcome_lists: dict[str, dict[str, list[str]]] = {}
        per_scenario: dict[str, list[list[str]]] = {}  # memory -> per scenario, outcome per question
        for mem, set_runs in ran.items():
            per_kind: dict[str, list[str]] = {kind: [] for kind in kinds}
            per_scenario[mem] = []
            for idx, s in enumerate(items):
                outs = [verdicts[(mem, set_name, idx, q["id"])].outcome for q in s["questions"]]
                per_scenario[mem].append(outs)
                for q, o in zip(s["questions"], outs, strict=True):
                    per_kind[q["kind"]].append(o)
            outcome_lists[mem] = per_kind
            entry: dict[str, Any] = {kind: answer_metrics(per_kind[kind]) for kind in kinds}
            entry["by_wording"] = wording_metrics(items, set_runs, per_scenario[mem])
            links = link_metrics(items, set_runs)
            hidden = hidden_metrics(items, set_runs)
            cost = linker_cost(set_runs)
            if links is not None:
                entry["links"] = links
            if hidden is not None:
                entry["hidden"] = hidden
            if cost is not None:
                entry["linker_cost"] = cost
            block["memories"][mem] = entry
        if BASELINE in outcome_lists:
            for mem, per_kind in outcome_lists.items():
                if mem == BASELINE:
                    continue
                for kind in kinds:
                    block["memories"][mem][kind]["mcnemar_vs_flat_dates"] = mcnemar(
                        per_kind[kind], outcome_lists[BASELINE][kind]
                    )
        twins = {m: f"{m}+bm25" for m in ran if f"{m}+bm25" in ran}
        if twins:
            block["hybrid_vs_bm25"] = {
                m: compare_twins(items, ran[m], ran[t], per_scenario[m], per_scenario[t], t) for m, t in twins.items()
            }
        confirms = {m: f"{m}+confirm" for m in ran if f"{m}+confirm" in ran}
        if confirms:
            block["confirm"] = {}
            for m, c in confirms.items():
                block["confirm"][m] = {
                    "memory": c,
                    "supersede_calls": block["memories"][c].get("links", {}).get("confirmed", 0),
                    **{
                        kind: {
                            "auto_odr": block["memories"][m][kind]["odr"],
                            "auto_odr_ci95": block["memories"][m][kind]["odr_ci95"],
                            "confirmed_odr": block["memories"][c][kind]["odr"],
                            "confirmed_odr_ci95": block["memories"][c][kind]["odr_ci95"],
                            "mcnemar": mcnemar(outcome_lists[c][kind], outcome_lists[m][kind], baseline=m),
                        }
                        for kind in kinds
                    },
                }
        qs = [q for s in items for q in s["questions"] if q["kind"] == "main"]
        replacing = [n for s in items for n in s["notes"] if n["supersedes"] is not None]
        block["diagnostics"] = {
            "main_questions": len(qs),
            "bm25_first_topic_note_obsolete": sum(q["bm25_first_topic_note_obsolete"] for q in qs),
            "bm25_current_in_top_k": sum(q["bm25_current_in_top_k"] for q in qs),
            "bait_questions": sum(q["wording"] == "bait" for q in qs),
            "versions": dict(sorted(Counter(s["n_versions"] for s in items).items())),
            "question_wordings": dict(sorted(Counter(q["wording"] for q in qs).items())),
            "gold_edges": len(replacing),
        }
        if any("shared_words" in n for n in replacing):
            block["diagnostics"]["gold_edges_by_shared_words"] = {
                str(k): v for k, v in sorted(Counter(n["shared_words"] for n in replacing).items())
            }
        report_sets[set_name] = block
        # per-question rows, then per-scenario link rows
        for mem, set_runs in ran.items():
            for idx, s in enumerate(items):
                run = set_runs[idx]
                for q in s["questions"]:
                    v = verdicts[(mem, set_name, idx, q["id"])]
                    row = {
                        "type": "answer",
                        "set": set_name,
                        "scenario": s["id"],
                        "question": q["id"],
                        "kind": q["kind"],
                        "wording": q["wording"],
                        "memory": mem,
                        "outcome": v.outcome,
                        "hit": _hit(run, q),
                        "option": v.option,
                        "note": v.note,
                        "gold_option": q.get("gold_option"),
                        "gold_note": q.get("gold_note"),
                        "returned": [
                            [i, it.status]
                            for i, it in zip(run.returned.get(q["id"], []), run.items[q["id"]], strict=False)
                        ],
                        "text": q["text"],
                    }
                    if q["id"] in run.via:
                        row["via"] = run.via[q["id"]]
                    if det_verdicts is not None:
                        d = det_verdicts[(mem, set_name, idx, q["id"])]
                        row["deterministic"] = {"outcome": d.outcome, "option": d.option, "note": d.note}
                        row["llm_reply"] = v.raw
                    rows.append(row)
                if run.edges is not None and mem.startswith("evomem"):
                    gold = gold_edges(s)
                    pred = set(run.edges)
                    rows.append(
                        {
                            "type": "links",
                            "set": set_name,
                            "scenario": s["id"],
                            "memory": mem,
                            "edges": sorted(pred),
                            "false_positive": sorted(pred - gold),
                            "missed": sorted(gold - pred),
                            "methods": {str(k): m for k, m in sorted(run.link_methods.items())},
                            "abstentions": {str(k): c for k, c in sorted(run.abstentions.items())},
                            "confirmed": sorted(run.confirmed),
                            "hidden": sorted(i for i, st in (run.statuses or {}).items() if st != "active"),
                            **(
                                {"linker_ms": [round(x, 3) for x in run.linker_ms]} if run.linker_ms is not None else {}
                            ),
                        }
                    )
    return report_sets, rows


def run_suite(
    sets: Mapping[str, Sequence[Mapping[str, Any]]],
    memories: Sequence[Any],
    *,
    judge: Judge | None = None,
    k: int = K,
    workers: int = 4,
    progress: bool = False,
) -> dict[str, Any]:
    """Run every memory on every set and judge; returns the report (with ``rows``)."""
    judge = judge or DeterministicJudge()
    memories = [m for m in memories if getattr(m, "sets", None) is None or set(m.sets) & set(sets)]
    started = time.perf_counter()
    runs, seconds = asyncio.run(_run_all(memories, sets, k, progress))
    keys: list[tuple[str, str, int, str]] = []
    jobs: list[tuple[Mapping[str, Any], Mapping[str, Any], list[Any]]] = []
    for mem, by_set in runs.items():
        for set_name, items in sets.items():
            if set_name not in by_set:
                continue
            for idx, s in enumerate(items):
                for q in s["questions"]:
                    keys.append((mem, set_name, idx, q["id"]))
                    jobs.append((s, q, by_set[set_name][idx].items[q["id"]]))
    judged = time.perf_counter()
    verdicts = dict(zip(keys, _judge_all(judge, jobs, workers, progress), strict=True))
    det = None
    if not isinstance(judge, DeterministicJudge):
        det = dict(zip(keys, _judge_all(DeterministicJudge(), jobs, 1, False), strict=True))
    report_sets, rows = build_report(sets, runs, verdicts, det)
    return {
        "judge": judge.name,
        "k": k,
        "memories": [m.name for m in memories],
        "sets": report_sets,
        "linker_cost": cost_report(runs),
        "runtime_s": {
            "total": round(time.perf_counter() - started, 3),
            "judge": round(time.perf_counter() - judged, 3),
            "memories": seconds,
        },
        "rows": rows,
    }


# ----------------------------------------------------------------------------- outputs


def _fmt_ci(m: Mapping[str, Any]) -> str:
    lo, hi = m["odr_ci95"]
    return f"{lo:.3f}–{hi:.3f}"


def _fmt_p(p: float) -> str:
    return "1" if p >= 0.9995 else (f"{p:.3f}" if p >= 0.001 else f"{p:.1e}")


TITLES = {
    ("odr", "main"): "ODR set: questions on the decision in force",
    ("vdr", "main"): "VDR set: questions on the default-scope decision",
    ("vdr", "scope"): "VDR set: questions on the other scope's decision (valid the whole time)",
    ("para", "main"): "Paraphrase set: questions on the decision in force (all three wordings)",
}
WORDING_TITLES = {"old_words": "old words", "new_words": "new words", "neither": "neither"}


def _f3(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _fmt_range(ci: Sequence[float]) -> str:
    return f"{ci[0]:.3f}–{ci[1]:.3f}"


def _mc(mc: Mapping[str, Any]) -> str:
    return f"{mc['only_this']} / {mc['only_baseline']}, p={_fmt_p(mc['p'])}"


def _answer_tables(set_name: str, block: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for kind in block["question_kinds"]:
        out += [f"## {TITLES.get((set_name, kind), f'{set_name} / {kind}')}", ""]
        out += [
            "| memory | ODR ↓ | 95% CI | miss | correct | wrong scope | vs flat-dates (only this / only base, p) |",
            "|---|---|---|---|---|---|---|",
        ]
        for mem, entry in block["memories"].items():
            m = entry[kind]
            mc = m.get("mcnemar_vs_flat_dates")
            out.append(
                f"| {mem} | {m['odr']:.3f} | {_fmt_ci(m)} | {m['miss_rate']:.3f} | {m['correct_rate']:.3f} "
                f"| {m['wrong_scope_rate']:.3f} | {_mc(mc) if mc else 'baseline'} |"
            )
        out.append("")
    return out


def _confirm_table(set_name: str, block: Mapping[str, Any]) -> list[str]:
    if not block.get("confirm"):
        return []
    out = [
        f"## {set_name.upper()} set: automatic links, and after the agent confirms abstentions",
        "",
        "Auto-link ODR is the headline: the linker alone. After confirming: when the linker abstained and the true "
        "predecessor was among `possible_supersedes`, the agent called `supersede` with it (one call).",
        "",
        "| linker | question | auto-link ODR ↓ | 95% CI | ODR after confirming | 95% CI | supersede calls "
        "| fewer / more obsolete answers, p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mem, c in block["confirm"].items():
        for kind in block["question_kinds"]:
            r = c[kind]
            mc = r["mcnemar"]
            out.append(
                f"| {mem} | {kind} | {r['auto_odr']:.3f} | {_fmt_range(r['auto_odr_ci95'])} | {r['confirmed_odr']:.3f} "
                f"| {_fmt_range(r['confirmed_odr_ci95'])} | {c['supersede_calls']} "
                f"| {mc['only_baseline']} / {mc['only_this']}, p={_fmt_p(mc['p'])} |"
            )
    return [*out, ""]


def _link_tables(set_name: str, block: Mapping[str, Any]) -> list[str]:
    linkers = {mem: e for mem, e in block["memories"].items() if "links" in e}
    if not linkers:
        return []
    out = [f"## {set_name.upper()} set: links and abstentions", ""]
    out += [
        "Precision counts only the links made. An abstention links nothing: it is safe, and the note lists "
        "`possible_supersedes`. *Abstained, gold edge*: the note does replace a decision (in brackets: the true "
        "predecessor was listed); *no gold edge*: it replaces nothing. *Recall if confirmed*: gold edges linked, "
        "or abstained on with the true predecessor listed.",
        "",
        "| memory | links made | correct | wrong | precision | recall | 95% CI | abstained, gold edge (listed) "
        "| abstained, no gold edge | recall if confirmed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mem, e in linkers.items():
        lk = e["links"]
        ab = lk.get("abstentions", {})
        confirmed = f" (of which {lk['confirmed']} confirmed)" if lk.get("confirmed") else ""
        out.append(
            f"| {mem} | {lk['predicted']}{confirmed} | {lk['true_positive']} | {lk['false_positive']} "
            f"| {_f3(lk['precision'])} | {_f3(lk['recall'])} | {_fmt_range(lk['recall_ci95'])} "
            f"| {ab.get('on_gold', 0)} ({ab.get('on_gold_target_listed', 0)}) | {ab.get('no_gold', 0)} "
            f"| {_f3(lk.get('recall_if_confirmed'))} |"
        )
    out.append("")
    hidden = {mem: e["hidden"] for mem, e in linkers.items() if "hidden" in e}
    if hidden:
        out += [f"## {set_name.upper()} set: hidden still-valid decisions", ""]
        out += [
            "| memory | scope decisions hidden | current decisions hidden | still-valid decisions hidden |",
            "|---|---|---|---|",
        ]
        for mem, hd in hidden.items():

            def frac(g: str, hd: Mapping[str, Any] = hd) -> str:
                return f"{hd[g]['hidden']} / {hd[g]['total']}" if g in hd else "—"

            scoped = frac("scope_decisions")
            if "scope_decisions_bait" in hd:
                scoped += f" (bait {frac('scope_decisions_bait')}, plain {frac('scope_decisions_plain')})"
            out.append(f"| {mem} | {scoped} | {frac('current_main_decisions')} | {frac('still_valid_decisions')} |")
        out.append("")
    for mem, e in linkers.items():
        if mem.startswith("evomem-auto"):
            rw = ", ".join(f"{w} {v['found']}/{v['gold']}" for w, v in e["links"]["recall_by_wording"].items())
            fp = ", ".join(f"{k} {v}" for k, v in e["links"]["false_positives_by_kind"].items()) or "none"
            out += [f"- {mem}: links found by wording: {rw}; false links by kind of note: {fp}."]
    return [*out, ""]


def _wording_tables(set_name: str, block: Mapping[str, Any], k: int) -> list[str]:
    """Hit rate and ODR by question wording; hybrid against BM25 alone (sets with +bm25 twins)."""
    if "hybrid_vs_bm25" not in block:
        return []
    wordings = [w for w in WORDING_TITLES if w in block["diagnostics"]["question_wordings"]]
    out = [f"## {set_name.upper()} set: the decision in force in the top {k}, by question wording", ""]
    out += [
        "Hit: the version in force is among the results (for EvoMem, a hit on an old version resolved to it "
        "counts). Cells: hit rate / ODR. *Vector only*: hits found by the vector search and not by BM25.",
        "",
        "| memory | "
        + " | ".join(f"{WORDING_TITLES[w]}: hit / ODR" for w in wordings)
        + " | all: hit rate | 95% CI | all: ODR | 95% CI | vector only |",
        "|---|" + "---|" * (len(wordings) + 5),
    ]
    for mem, e in block["memories"].items():
        bw = e["by_wording"]
        cells = " | ".join(f"{bw[w]['hit_rate']:.3f} / {bw[w]['odr']:.3f}" for w in wordings)
        a = bw["all"]
        out.append(
            f"| {mem} | {cells} | {a['hit_rate']:.3f} | {_fmt_range(a['hit_ci95'])} | {a['odr']:.3f} "
            f"| {_fmt_range(a['odr_ci95'])} | {a['vector_only_hits']} |"
        )
    out += ["", f"## {set_name.upper()} set: hybrid recall (BM25 + vectors, RRF) against BM25 alone, paired", ""]
    out += [
        "Exact McNemar tests on the same questions (hits: the version in force returned; obsolete: the answer "
        "acted on an obsolete option) and on the same gold edges (links found).",
        "",
        "| memory | wording | hit rate hybrid | hit rate BM25 | hits only hybrid / only BM25, p "
        "| ODR hybrid | ODR BM25 | obsolete only hybrid / only BM25, p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mem, cmp in block["hybrid_vs_bm25"].items():
        twin = cmp["baseline"]
        for w in ["all", *wordings]:
            h, b = block["memories"][mem]["by_wording"][w], block["memories"][twin]["by_wording"][w]
            out.append(
                f"| {mem} | {WORDING_TITLES.get(w, w)} | {h['hit_rate']:.3f} | {b['hit_rate']:.3f} "
                f"| {_mc(cmp['hits'][w])} | {h['odr']:.3f} | {b['odr']:.3f} | {_mc(cmp['obsolete'][w])} |"
            )
    out.append("")
    linked = {m: c for m, c in block["hybrid_vs_bm25"].items() if "links" in c and m.startswith("evomem-auto")}
    if linked:
        out += [
            "| linker | link recall hybrid | 95% CI | link recall BM25 | 95% CI | precision hybrid / BM25 "
            "| recall if confirmed hybrid / BM25 | edges only hybrid / only BM25, p |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for mem, cmp in linked.items():
            h, b = block["memories"][mem]["links"], block["memories"][cmp["baseline"]]["links"]
            out.append(
                f"| {mem} | {_f3(h['recall'])} | {_fmt_range(h['recall_ci95'])} | {_f3(b['recall'])} "
                f"| {_fmt_range(b['recall_ci95'])} | {_f3(h['precision'])} / {_f3(b['precision'])} "
                f"| {_f3(h['recall_if_confirmed'])} / {_f3(b['recall_if_confirmed'])} | {_mc(cmp['links'])} |"
            )
        out.append("")
    return out


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def cost_table(cost: Mapping[str, Mapping[str, Any]], *, title: str = "## Cost: linker time per remember") -> list[str]:
    """Linker calls and p50/p95 per automatic-linker memory and its ``+bm25`` twin (``+confirm``: JSON only)."""
    mems = {m: c for m, c in cost.items() if m.startswith("evomem-auto:") and "+confirm" not in m}
    if not mems:
        return []
    out = [
        title,
        "",
        "Time of the remembers that called the linker, in process. *Decision*: the linker's own time "
        "(`bench.timing`). *With candidates*: candidate search (BM25, and with vectors the "
        "note's neighbours) plus the decision (`linker_ms`). With vectors the search includes the note's own "
        "embedding, which runs beside BM25 (`remember` stores that vector whether or not a linker runs); "
        "`note_embed_ms` in the JSON times it only where something embeds it before the search. "
        "A remember with no active candidate of a compatible scope does not call it; "
        "*share*: remembers that did. *LLM asked*: remembers on which `--auto-supersede llm`, the LLM behind "
        "this linker, would call the model (the linker abstained, or said none to a note with a change cue); "
        "each such call costs the model's latency on top; for `evomem-auto:llm` itself, the calls it made "
        "and their p50 / p95. "
        "The `+bm25` twin (paraphrase set) finds candidates by "
        "BM25 alone. `+confirm` memories: in the JSON (`linker_cost`).",
        "",
        "| memory | set | remembers | linker calls | share | decision p50 / p95 ms | with candidates p50 / p95 ms "
        "| max ms | LLM asked (share) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mem, per in mems.items():
        for set_name, c in per.items():
            if c.get("llm_calls") is not None:  # the llm linker itself: the model calls it made
                gate = (
                    f"{c['llm_calls']} ({_rate(c['llm_calls'], c['remembers']):.3f}) made, each "
                    f"{_ms(c.get('llm_call_p50_ms'))} / {_ms(c.get('llm_call_p95_ms'))} ms"
                )
            elif "scored" in mem:
                gate = f"{c.get('llm_gate', 0)} ({c.get('llm_gate_share') or 0:.3f})"
            else:
                gate = "—"
            out.append(
                f"| {mem} | {set_name} | {c['remembers']} | {c['linker_calls']} | {c['call_share']:.3f} "
                f"| {_ms(c.get('decide_p50_ms'))} / {_ms(c.get('decide_p95_ms'))} "
                f"| {_ms(c['p50_ms'])} / {_ms(c['p95_ms'])} | {_ms(c['max_ms'])} | {gate} |"
            )
    return [*out, ""]


def markdown(report: Mapping[str, Any]) -> str:
    out = [f"# EvoMem quality benchmark ({report['judge']} judge, k={report['k']})", ""]
    for set_name, block in report["sets"].items():
        out += _answer_tables(set_name, block)
        out += _wording_tables(set_name, block, report["k"])
        out += _confirm_table(set_name, block)
        out += _link_tables(set_name, block)
        d = block["diagnostics"]
        line = (
            f"Scenario diagnostics ({set_name}): {block['scenarios']} scenarios, versions {d['versions']}; "
            f"{d['bait_questions']}/{d['main_questions']} main questions name an old option; plain BM25 ranks an "
            f"obsolete version first in {d['bm25_first_topic_note_obsolete']} and keeps the current version in "
            f"its top {report['k']} in {d['bm25_current_in_top_k']}."
        )
        if "gold_edges_by_shared_words" in d:
            shared = ", ".join(f"{n}: {c}" for n, c in d["gold_edges_by_shared_words"].items())
            line += (
                f" Question wordings {d['question_wordings']}. Gold edges by content-word stems the new note shares "
                f"with the old one: {shared}."
            )
        out += [line, ""]
    out += cost_table(report.get("linker_cost") or {})
    rt = report["runtime_s"]
    out += [
        f"Runtime: {rt['total']:.1f} s in all ("
        + ", ".join(f"{m} {s:.1f} s" for m, s in rt["memories"].items())
        + f", judging {rt['judge']:.1f} s).",
        "",
    ]
    return "\n".join(out)


# ----------------------------------------------------------------------------- plots
# Drawn from the report alone (``python -m bench.quality --plot-only``), so a figure can be redone
# from the committed quality.json without rerunning the benchmark.

BASELINE_COLOR, EVOMEM_COLOR, ORACLE_COLOR, ZERO_COLOR = "#9e9e9e", "#1f77b4", "#cfcfcf", "#2ca02c"


def _memory_color(mem: str) -> str:
    if mem == "oracle":
        return ORACLE_COLOR
    return EVOMEM_COLOR if mem.startswith("evomem") else BASELINE_COLOR


def _hbars(
    ax: Any,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    ci: Sequence[Sequence[float]] | None = None,
    colors: Sequence[str] | None = None,
    fmt: str = "{:.3f}",
    lower_is_better: bool = True,
    xmax: float | None = None,
) -> None:
    """Horizontal bars with their value written at the end, and a marker where the value is 0
    (a zero-height bar is invisible: the best result must not look like missing data)."""  # fmt: skip
    ys = list(range(len(labels)))[::-1]
    err = None
    if ci is not None:
        err = [[max(0.0, v - c[0]) for v, c in zip(values, ci, strict=True)],
               [max(0.0, c[1] - v) for v, c in zip(values, ci, strict=True)]]  # fmt: skip
    ax.barh(ys, values, 0.62, xerr=err, capsize=3, color=colors, error_kw={"elinewidth": 1, "ecolor": "#444"})
    top = max([*values, *(c[1] for c in ci)] if ci else values, default=1.0) or 1.0
    for y, v, c in zip(ys, values, ci or [None] * len(values), strict=True):
        end = c[1] if c else v
        if v == 0:
            ax.plot([0], [y], marker="D", color=ZERO_COLOR, markersize=7, zorder=5, clip_on=False)
            text, style = "0" + (" (best)" if lower_is_better else ""), {"color": ZERO_COLOR, "fontweight": "bold"}
        else:
            text, style = fmt.format(v), {}
        ax.annotate(text, (end, y), xytext=(7, 0), textcoords="offset points", va="center", fontsize=8, **style)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=8)
    limit = xmax if xmax is not None else (1.0 if top > 0.5 else 0.5)
    ax.set_xlim(0, limit * 1.15)
    ax.set_xticks([x / 10 for x in range(0, int(limit * 10) + 1, 2 if limit == 1.0 else 1)])
    ax.axvline(0, color="#333", linewidth=0.8)
    ax.grid(axis="x", alpha=0.25)


def plots(report: Mapping[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = [_odr_plot(plt, report, out)]
    links = _links_plot(plt, report, out)
    if links is not None:
        written.append(links)
    for set_name, block in report["sets"].items():
        if "hybrid_vs_bm25" in block:
            written.append(_wording_plot(plt, set_name, block, report["k"], out))
    return written


def _odr_plot(plt: Any, report: Mapping[str, Any], out: Path) -> Path:
    """One column per question set and kind: ODR (top) and miss rate (bottom) per memory.
    A kind where every memory scores 0 is named in the footnote instead of drawn."""
    from matplotlib.patches import Patch

    panels, flat = [], []
    for set_name, block in report["sets"].items():
        for kind in block["question_kinds"]:
            mems = [m for m in block["memories"] if not m.endswith("+bm25")]  # the +bm25 twins: quality_para.png
            if all(
                block["memories"][m][kind]["odr"] == 0 and block["memories"][m][kind]["miss_rate"] == 0 for m in mems
            ):
                flat.append(f"{set_name}/{kind}")
                continue
            panels.append((set_name, kind, mems))
    if not panels:  # every kind is 0 everywhere: draw them all rather than nothing
        panels = [(s, k, [m for m in b["memories"] if not m.endswith("+bm25")]) for s, b in report["sets"].items()
                  for k in b["question_kinds"]]  # fmt: skip
        flat = []
    fig, axes = plt.subplots(2, len(panels), figsize=(5.2 * len(panels), 8.6), squeeze=False)
    for col, (set_name, kind, mems) in enumerate(panels):
        entries = report["sets"][set_name]["memories"]
        n = entries[mems[0]][kind]["questions"]
        colors = [_memory_color(m) for m in mems]
        _hbars(axes[0][col], mems, [entries[m][kind]["odr"] for m in mems],
               ci=[entries[m][kind]["odr_ci95"] for m in mems], colors=colors)  # fmt: skip
        axes[0][col].set_title(
            f"{set_name} set, {kind} questions (n={n})\nODR: obsolete decision acted on", fontsize=10
        )
        misses = [entries[m][kind]["miss_rate"] for p in panels for m in p[2] if p[:2] == (set_name, kind)]
        worst = max(entries2[m][k2]["miss_rate"] for s2, k2, ms2 in panels for m in ms2
                    for entries2 in [report["sets"][s2]["memories"]])  # fmt: skip
        _hbars(axes[1][col], mems, misses, colors=colors, xmax=1.0 if worst > 0.5 else 0.5)
        axes[1][col].set_title(
            f"{set_name}/{kind}: miss rate (nothing on the topic in the top {report['k']})", fontsize=10
        )
        if col:
            for row in (0, 1):
                axes[row][col].set_yticklabels([])
    legend = [Patch(color=BASELINE_COLOR, label="baseline memory (flat notes, no history)"),
              Patch(color=EVOMEM_COLOR, label="EvoMem (agent links, or the automatic linker named)"),
              Patch(color=ORACLE_COLOR, label="oracle (gold links)")]  # fmt: skip
    fig.legend(handles=legend, loc="lower center", ncol=3, fontsize=9, frameon=False, bbox_to_anchor=(0.5, 0.0))
    foot = "Lower is better. Error bars: 95% Wilson CI. Green diamond: exactly 0."
    if flat:
        foot += f" Not drawn, 0 for every memory: {', '.join(flat)}."
    fig.text(0.5, 0.045, foot, ha="center", fontsize=8.5, color="#333")
    fig.suptitle(f"How often an agent acts on an obsolete decision ({report['judge']} judge, top k={report['k']})")
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))
    path = out / "quality_odr.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _links_plot(plt: Any, report: Mapping[str, Any], out: Path) -> Path | None:
    """The automatic linkers on each set: precision and recall of the links they make (left),
    and the harm a wrong link does, counted (right). Series that are 0 everywhere are named in
    the footnote instead of drawn."""
    rows = []
    for set_name, block in report["sets"].items():
        for mem, e in block["memories"].items():
            if "links" in e and mem.startswith("evomem-auto") and not mem.endswith("+bm25"):
                rows.append((f"{set_name}: {mem.removeprefix('evomem-auto:')}", e))
    if not rows:
        return None
    labels = [r[0] for r in rows]
    rate_series = {
        "precision (links made that are right)": [e["links"]["precision"] or 0.0 for _, e in rows],
        "recall (gold links found)": [e["links"]["recall"] or 0.0 for _, e in rows],
        "recall if abstentions are confirmed": [e["links"].get("recall_if_confirmed") or 0.0 for _, e in rows],
    }
    count_series = {
        "wrong links": [e["links"]["false_positive"] for _, e in rows],
        "still-valid decisions hidden": [
            e.get("hidden", {}).get("still_valid_decisions", {}).get("hidden", 0) for _, e in rows
        ],
        "abstained on a gold link": [e["links"]["abstentions"]["on_gold"] for _, e in rows],
        "abstained, no gold link": [e["links"]["abstentions"]["no_gold"] for _, e in rows],
    }
    recall = rate_series["recall (gold links found)"]
    dropped = [name for name, vals in count_series.items() if not any(vals)]
    if rate_series["recall if abstentions are confirmed"] == recall:  # no abstentions: the same bars twice
        del rate_series["recall if abstentions are confirmed"]
        dropped.insert(0, "recall if abstentions are confirmed (the same as recall: no linker abstained)")
    count_series = {k: v for k, v in count_series.items() if any(v)}
    fig, axes = plt.subplots(1, 2, figsize=(15, 0.55 * len(rows) + 3.2))
    ys = list(range(len(rows)))[::-1]
    for ax, series, fmt, title in (
        (axes[0], rate_series, "{:.2f}", "automatic links against the gold supersedes edges (higher is better)"),
        (axes[1], count_series, "{:.0f}", "harm done by wrong links, count (lower is better)"),
    ):
        h = 0.8 / max(1, len(series))
        top = max((v for vals in series.values() for v in vals), default=1.0) or 1.0
        for si, (name, vals) in enumerate(series.items()):
            offs = [y + 0.4 - h * (si + 0.5) for y in ys]
            ax.barh(offs, vals, h, label=name)
            for y, v in zip(offs, vals, strict=True):
                if v == 0:
                    ax.plot([0], [y], marker="D", color=ZERO_COLOR, markersize=5, zorder=5, clip_on=False)
                    ax.text(0.012 * top, y, " 0", va="center", fontsize=7, color=ZERO_COLOR, fontweight="bold")
                else:
                    ax.text(v + 0.012 * top, y, fmt.format(v), va="center", fontsize=7)
        ax.set_yticks(ys)
        ax.set_yticklabels(labels, fontsize=8)
        ax.set_xlim(0, top * 1.18)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.25)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, frameon=False)
    axes[1].set_yticklabels([])
    foot = "Green diamond: exactly 0."
    if dropped:
        foot += f" Not drawn: {'; '.join(dropped)} (0 for every linker unless said)."
    fig.text(0.5, 0.01, foot, ha="center", fontsize=8.5, color="#333")
    fig.suptitle("Automatic linking (--auto-supersede): right links, missed links, and the harm of wrong ones")
    fig.tight_layout(rect=(0, 0.03, 1, 0.95))
    path = out / "quality_vdr.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


#: The memories drawn in the paraphrase figure: a baseline, then EvoMem with BM25 alone and hybrid.
PARA_MEMORIES = ("flat-dates", "evomem-agent+bm25", "evomem-agent", "evomem-auto:scored+bm25", "evomem-auto:scored")


def _wording_plot(plt: Any, set_name: str, block: Mapping[str, Any], k: int, out: Path) -> Path:
    wordings = [w for w in ("all", *WORDING_TITLES) if w == "all" or w in block["diagnostics"]["question_wordings"]]
    mems = [m for m in PARA_MEMORIES if m in block["memories"] and "by_wording" in block["memories"][m]]
    if not mems:  # a run without these memories: its first five that have wordings
        mems = [m for m in block["memories"] if "by_wording" in block["memories"][m]][:5]
    styles = {"flat-dates": (BASELINE_COLOR, None), "evomem-agent+bm25": ("#aec7e8", "//"),
              "evomem-agent": (EVOMEM_COLOR, None), "evomem-auto:scored+bm25": ("#ffbb78", "//"),
              "evomem-auto:scored": ("#ff7f0e", None)}  # fmt: skip
    fig, axes = plt.subplots(1, 2, figsize=(15, 6.2), gridspec_kw={"width_ratios": [3, 1.25]})
    width = 0.82 / max(1, len(mems))
    for mi, mem in enumerate(mems):
        bw = block["memories"][mem]["by_wording"]
        xs = [wi + (mi - (len(mems) - 1) / 2) * width for wi in range(len(wordings))]
        rates = [bw[w]["hit_rate"] for w in wordings]
        err = [[r - bw[w]["hit_ci95"][0] for r, w in zip(rates, wordings, strict=True)],
               [bw[w]["hit_ci95"][1] - r for r, w in zip(rates, wordings, strict=True)]]  # fmt: skip
        color, hatch = styles.get(mem, (None, None))
        axes[0].bar(xs, rates, width, yerr=err, capsize=2, label=mem, color=color, hatch=hatch, edgecolor="white")
        for x, r, w in zip(xs, rates, wordings, strict=True):
            y = bw[w]["hit_ci95"][1] + 0.015
            if r == 0:
                axes[0].plot([x], [0], marker="D", color="#d62728", markersize=5, zorder=5, clip_on=False)
            axes[0].text(x, y, f"{r:.2f}", ha="center", fontsize=6.5, rotation=90, va="bottom")
    axes[0].set_xticks(range(len(wordings)))
    axes[0].set_xticklabels(
        [
            WORDING_TITLES.get(w, "all questions") + f"\n(n={block['memories'][mems[0]]['by_wording'][w]['questions']})"
            for w in wordings
        ]
    )
    axes[0].set_ylim(0, 1.25)
    axes[0].set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    axes[0].set_ylabel("decision in force found in the top k (higher is better)")
    axes[0].set_title(
        f"decision in force in the top {k}, by the words the question shares (95% Wilson CI)", fontsize=10
    )
    axes[0].legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    axes[0].grid(axis="y", alpha=0.25)
    linkers = [m for m in block["memories"] if m.startswith("evomem-auto") and "links" in block["memories"][m]
               and not m.endswith("+confirm")]  # fmt: skip
    ys = list(range(len(linkers)))[::-1]
    rec = [block["memories"][m]["links"]["recall"] or 0.0 for m in linkers]
    prec = [block["memories"][m]["links"]["precision"] or 0.0 for m in linkers]
    for off, vals, name, color in ((0.2, prec, "link precision", "#2ca02c"), (-0.2, rec, "link recall", "#9467bd")):
        axes[1].barh([y + off for y in ys], vals, 0.38, label=name, color=color)
        for y, v in zip(ys, vals, strict=True):
            axes[1].text(v + 0.02, y + off, f"{v:.2f}", va="center", fontsize=7)
    axes[1].set_yticks(ys)
    axes[1].set_yticklabels([m.removeprefix("evomem-auto:") for m in linkers], fontsize=8)
    axes[1].set_xlim(0, 1.2)
    axes[1].set_title("automatic links against gold edges", fontsize=10)
    axes[1].legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    fig.suptitle(
        f"{set_name} set (paraphrased questions): hybrid recall (BM25 + vectors) against BM25 alone (hatched, +bm25)"
    )
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    path = out / f"quality_{set_name}.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_outputs(report: dict[str, Any], out: Path, meta: Mapping[str, Any]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    rows = report.pop("rows")
    report = {**meta, **report, "rows_file": "quality_rows.jsonl"}
    files = [out / "quality.json", out / "quality.md", out / "quality_rows.jsonl"]
    files[0].write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    files[1].write_text(markdown(report), encoding="utf-8")
    with files[2].open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    files += plots(report, out)
    return files


# ----------------------------------------------------------------------------- CLI


#: Paths whose sets are blind: reported in aggregate only (no per-question or per-link rows).
BLIND_PATHS = ("bench/blind/", "data/external/")


def is_blind(name: str, path: Path) -> bool:
    where = str(path.resolve())
    return name.startswith("blind") or any(b in where for b in BLIND_PATHS)


def adapt_scenarios(items: Sequence[Mapping[str, Any]], name: str) -> list[dict[str, Any]]:
    """Scenarios in the shared format (``/work/tasks/scenario-format.md``: notes with i, text, date,
    kind, topic, scope, option, supersedes, valid_at_question; questions with id, kind, text, topic,
    scope, gold_option, obsolete_options, wrong_scope_options, gold_note) with the generator-only
    fields this report reads filled with neutral values: the set name and index, the wording
    ("written"), the BM25 diagnostics (0) and the number of versions of the asked topic."""
    out: list[dict[str, Any]] = []
    for k, s in enumerate(items):
        notes = [{"wording": "written", **n} for n in s["notes"]]
        topics = Counter((n["topic"], n["scope"]) for n in notes if n.get("option") is not None)
        questions = [
            {"wording": "written", "bm25_first_topic_note_obsolete": 0, "bm25_current_in_top_k": 0, **q}
            for q in s["questions"]
        ]
        main = next((q for q in questions if q["kind"] == "main"), questions[0] if questions else None)
        versions = topics.get((main["topic"], main["scope"]), 1) if main else 1
        out.append({**s, "set": name, "index": k, "n_versions": versions, "notes": notes, "questions": questions})
    return out


def _load_data(specs: Sequence[str]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """``--data NAME=PATH`` sets (shared scenario format)."""
    sets: dict[str, list[dict[str, Any]]] = {}
    sources: dict[str, Any] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        name = name.strip().lower()
        if not sep or not name or not path:
            raise BenchError(f"--data wants NAME=PATH, got {spec!r}")
        p = Path(path)
        if not p.exists():
            raise BenchError(f"{p} not found")
        items = [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
        sets[name] = adapt_scenarios(items, name)
        sources[name] = {"file": str(p), "sha256": sha256_file(p), "n": len(items), "blind": is_blind(name, p)}
    return sets, sources


def _load_sets(args: argparse.Namespace) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    sets: dict[str, list[dict[str, Any]]] = {}
    sources: dict[str, Any] = {}
    if args.data:
        sets, sources = _load_data(args.data)
        if args.limit:
            for name in sets:
                sets[name] = sets[name][: args.limit]
                sources[name]["limit"] = args.limit
    unknown = set(args.sets) - {"odr", "vdr", "para"} - set(sets)
    if unknown:
        raise BenchError(f"unknown set {sorted(unknown)}; known: odr, vdr, para")
    for name, seed, n, path in (
        ("odr", args.seed, 120, args.odr),
        ("vdr", args.vdr_seed, 80, args.vdr),
        ("para", args.para_seed, 72, args.para),
    ):
        if name not in args.sets or name in sets:
            continue
        if seed is not None:
            if name == "para":
                sets[name] = para.generate(n, seed)
                sources[name] = {"generated": True, "seed": seed, "n": n, "generator": para.GENERATOR}
            else:
                sets[name] = scen.generate(n, seed, vdr=name == "vdr")
                sources[name] = {"generated": True, "seed": seed, "n": n, "generator": scen.GENERATOR}
        else:
            p = Path(path)
            if not p.exists():
                tool = "bench.paraphrase" if name == "para" else "bench.scenarios"
                raise BenchError(f"{p} not found; write it with python -m {tool} (see bench/README.md)")
            sets[name] = scen.load(p)
            sources[name] = {"file": str(p), "sha256": sha256_file(p), "n": len(sets[name])}
        if args.limit:
            sets[name] = sets[name][: args.limit]
            sources[name]["limit"] = args.limit
    return sets, sources


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench/results", help="folder for the report, tables and plots")
    ap.add_argument("--odr", default=str(DATA / "odr.jsonl"), help="frozen ODR scenarios")
    ap.add_argument("--vdr", default=str(DATA / "vdr.jsonl"), help="frozen VDR scenarios")
    ap.add_argument("--para", default=str(DATA / "para.jsonl"), help="frozen paraphrase scenarios")
    ap.add_argument("--seed", type=int, default=None, help="regenerate the ODR set (120) with this seed instead")
    ap.add_argument("--vdr-seed", type=int, default=None, help="regenerate the VDR set (80) with this seed instead")
    ap.add_argument("--para-seed", type=int, default=None, help="regenerate the paraphrase set (72) with this seed")
    ap.add_argument(
        "--sets", default=None, help="comma list of sets to run (odr, vdr, para; default all, or the --data sets)"
    )
    ap.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a scenario file in the shared format (repeatable); a blind one (under bench/blind or "
        "data/external, or a name starting with 'blind') is reported in aggregate only",
    )
    ap.add_argument("--limit", type=int, default=0, help="only the first N scenarios of each set")
    ap.add_argument(
        "--memories",
        default="",
        help="comma list (default: all): flat, flat-dates, evomem-agent, "
        "evomem-auto (every linker) or evomem-auto:<linker>, oracle; suffixes +confirm (the agent confirms "
        "abstentions) and +bm25 (vectors off; paraphrase set only)",
    )
    ap.add_argument(
        "--no-confirm",
        action="store_true",
        help="do not run evomem-auto:<linker>+confirm for the linkers that can abstain",
    )
    ap.add_argument(
        "--linkers",
        default=",".join(available_linkers()),
        help=f"comma list of automatic linkers to run (available: {', '.join(available_linkers())})",
    )
    ap.add_argument("--llm-model", default="", help="model for the llm linker (adds evomem-auto:llm)")
    ap.add_argument("--llm-base-url", default="", help="OpenAI-compatible base URL (…/v1) for the llm linker")
    ap.add_argument("--llm-timeout", type=float, default=30.0, help="seconds per llm linker call (bench default 30)")
    ap.add_argument(
        "--no-scope-field",
        action="store_true",
        help="do not pass the note's scope to remember (the scope lives only in the text)",
    )
    ap.add_argument("--pair-model", default="", help="weights file for the pair linker (default: the shipped one)")
    ap.add_argument(
        "--cross-encoder",
        choices=("on", "off", "default"),
        default="default",
        help="the pair linker's cross-encoder (default: the setting's default)",
    )
    ap.add_argument("--k", type=int, default=K, help="results asked from every memory per question")
    ap.add_argument("--judge", choices=("deterministic", "llm"), default="deterministic")
    ap.add_argument("--judge-model", default="", help="model name for --judge llm")
    ap.add_argument("--judge-base-url", default="", help="OpenAI-compatible base URL for --judge llm (…/v1)")
    ap.add_argument("--judge-timeout", type=float, default=60.0, help="seconds per LLM judge request")
    ap.add_argument("--judge-workers", type=int, default=4, help="parallel LLM judge requests")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    ap.add_argument(
        "--postgres",
        action="store_true",
        help="add evomem-agent@postgres (and +bm25): the same memory over PostgreSQL 17 + pgvector (Docker)",
    )
    args = ap.parse_args(argv)
    if args.postgres:
        from bench import memories as bench_memories
        from bench import postgres

        problem = postgres.available()
        if problem:
            print(f"error: --postgres: {problem}", file=sys.stderr)
            return 2
        with postgres.BenchPostgres() as server:
            bench_memories.POSTGRES = server
            try:
                return _main(args)
            finally:
                bench_memories.POSTGRES = None
    return _main(args)


def _main(args: argparse.Namespace) -> int:
    if args.sets is None:
        args.sets = "" if args.data else "odr,vdr,para"
    args.sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    args.sets += [spec.partition("=")[0].strip().lower() for spec in args.data]
    if args.pair_model:
        from bench import memories as bench_memories

        bench_memories.PAIR_MODEL = args.pair_model
    if args.cross_encoder != "default":
        from bench import memories as bench_memories

        bench_memories.CROSS_ENCODER = args.cross_encoder == "on"
    try:
        sets, sources = _load_sets(args)
        linkers = [x.strip() for x in args.linkers.split(",") if x.strip()]
        llm = None
        if args.llm_model or args.llm_base_url:
            if not (args.llm_model and args.llm_base_url):
                raise BenchError("the llm linker needs both --llm-model and --llm-base-url")
            llm = LLMEndpoint(args.llm_model, args.llm_base_url, args.llm_timeout)
            linkers += [] if "llm" in linkers else ["llm"]
        names = [x.strip() for x in args.memories.split(",") if x.strip()]
        memories = build_memories(
            names,
            linkers=linkers,
            scope_field=not args.no_scope_field,
            sets=args.sets,
            confirm=not args.no_confirm,
            llm=llm,
        )
        judge: Judge = (
            LLMJudge(args.judge_model, args.judge_base_url, timeout=args.judge_timeout)
            if args.judge == "llm"
            else DeterministicJudge()
        )
        report = run_suite(
            sets, memories, judge=judge, k=args.k, workers=args.judge_workers, progress=not args.no_progress
        )
    except (BenchError, JudgeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from evomem import __version__

    meta = {
        "benchmark": "evomem-quality/1",
        "evomem_version": __version__,
        "python": platform.python_version(),
        "sources": sources,
        "scope_field": not args.no_scope_field,
        "linkers": linkers,
        "vectors_setting": has_vectors_setting(),
        **({"pair_model": args.pair_model} if args.pair_model else {}),
        **({"cross_encoder": args.cross_encoder} if args.cross_encoder != "default" else {}),
    }
    blind = {name for name, src in sources.items() if src.get("blind")}
    if blind:  # aggregate only: no row names a blind scenario, question or note
        report["rows"] = [r for r in report["rows"] if r.get("set") not in blind]
        meta["blind_sets"] = sorted(blind)
    out = Path(args.out)
    files = write_outputs(report, out, meta)
    print(markdown({**meta, **report}))
    print("wrote " + ", ".join(str(f) for f in files), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
