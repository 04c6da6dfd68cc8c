"""The quality benchmark: ODR and VDR for every memory, in one run.

    python -m bench.quality --out bench/results                    # frozen sets, deterministic judge
    python -m bench.quality --out bench/results --limit 10         # first 10 scenarios of each set
    python -m bench.quality --out bench/results --judge llm \\
        --judge-model M --judge-base-url http://localhost:8080/v1  # key in EVOMEM_JUDGE_API_KEY

Reads ``bench/data/odr.jsonl`` and ``bench/data/vdr.jsonl`` (or regenerates a set with
``--seed`` / ``--vdr-seed``), runs every memory of ``bench.memories`` on every scenario, judges
what each returned (``bench.judge``) and writes to ``--out``:

- ``quality.json``: the report (metrics per set and memory, McNemar tests, link quality);
- ``quality.md``: the same as Markdown tables;
- ``quality_rows.jsonl``: one row per question and memory (and one per scenario and linker
  with its links), to read a failure;
- ``quality_odr.png`` and ``quality_vdr.png``: ODR per memory with 95% CI, and link quality.

Metrics: ODR = share of questions whose chosen option is obsolete, with a Wilson 95% CI;
miss rate = share where nothing of the asked topic came back; exact McNemar test, paired per
question, of each memory against flat-dates (event: acting on an obsolete option). VDR adds
link precision and recall of every linker against the gold ``supersedes`` edges, and the
still-valid decisions it hides (their final status is not active).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import platform
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import scenarios as scen
from bench.judge import OUTCOMES, DeterministicJudge, Judge, JudgeError, LLMJudge, Verdict
from bench.memories import BenchError, K, ScenarioRun, available_linkers, build_memories
from bench.stats import mcnemar_exact, wilson

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


def mcnemar(mine: Sequence[str], base: Sequence[str], event: str = "obsolete") -> dict[str, Any]:
    """Paired per question: b = only this memory acted on an obsolete option, c = only the baseline did."""
    b = sum(1 for x, y in zip(mine, base, strict=True) if x == event and y != event)
    c = sum(1 for x, y in zip(mine, base, strict=True) if x != event and y == event)
    return {"baseline": BASELINE, "event": event, "only_this": b, "only_baseline": c, "p": mcnemar_exact(b, c)}


def link_metrics(scenarios: Sequence[Mapping[str, Any]], runs: Sequence[ScenarioRun]) -> dict[str, Any] | None:
    if not runs or runs[0].edges is None:
        return None
    pred_n = gold_n = tp = 0
    by_wording: dict[str, list[int]] = {}
    fp_by_kind: Counter[str] = Counter()
    for s, run in zip(scenarios, runs, strict=True):
        notes = s["notes"]
        gold = {(n["i"], n["supersedes"]) for n in notes if n["supersedes"] is not None}
        pred = set(run.edges or [])
        pred_n += len(pred)
        gold_n += len(gold)
        tp += len(pred & gold)
        for new, old in sorted(gold):
            bucket = by_wording.setdefault(notes[new]["wording"], [0, 0])
            bucket[0] += (new, old) in pred
            bucket[1] += 1
        for new, _old in sorted(pred - gold):
            kind = notes[new]["kind"]
            if kind == "decision" and notes[new]["supersedes"] is not None:
                kind = "decision (wrong target)"
            fp_by_kind[kind] += 1
    return {
        "predicted": pred_n,
        "gold": gold_n,
        "true_positive": tp,
        "precision": round(tp / pred_n, 4) if pred_n else None,
        "recall": round(tp / gold_n, 4) if gold_n else None,
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


def _question_kinds(scenarios: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted({q["kind"] for s in scenarios for q in s["questions"]})


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
        outcome_lists: dict[str, dict[str, list[str]]] = {}
        for mem, by_set in runs.items():
            per_kind: dict[str, list[str]] = {kind: [] for kind in kinds}
            for idx, s in enumerate(items):
                for q in s["questions"]:
                    per_kind[q["kind"]].append(verdicts[(mem, set_name, idx, q["id"])].outcome)
            outcome_lists[mem] = per_kind
            entry: dict[str, Any] = {kind: answer_metrics(per_kind[kind]) for kind in kinds}
            links = link_metrics(items, by_set[set_name])
            hidden = hidden_metrics(items, by_set[set_name])
            if links is not None:
                entry["links"] = links
            if hidden is not None:
                entry["hidden"] = hidden
            block["memories"][mem] = entry
        if BASELINE in outcome_lists:
            for mem, per_kind in outcome_lists.items():
                if mem == BASELINE:
                    continue
                for kind in kinds:
                    block["memories"][mem][kind]["mcnemar_vs_flat_dates"] = mcnemar(
                        per_kind[kind], outcome_lists[BASELINE][kind]
                    )
        qs = [q for s in items for q in s["questions"] if q["kind"] == "main"]
        block["diagnostics"] = {
            "main_questions": len(qs),
            "bm25_first_topic_note_obsolete": sum(q["bm25_first_topic_note_obsolete"] for q in qs),
            "bm25_current_in_top_k": sum(q["bm25_current_in_top_k"] for q in qs),
            "bait_questions": sum(q["wording"] == "bait" for q in qs),
            "versions": dict(sorted(Counter(s["n_versions"] for s in items).items())),
        }
        report_sets[set_name] = block
        # per-question rows, then per-scenario link rows
        for mem, by_set in runs.items():
            for idx, s in enumerate(items):
                run = by_set[set_name][idx]
                for q in s["questions"]:
                    v = verdicts[(mem, set_name, idx, q["id"])]
                    row = {
                        "type": "answer",
                        "set": set_name,
                        "scenario": s["id"],
                        "question": q["id"],
                        "kind": q["kind"],
                        "memory": mem,
                        "outcome": v.outcome,
                        "option": v.option,
                        "note": v.note,
                        "gold_option": q["gold_option"],
                        "gold_note": q["gold_note"],
                        "returned": [
                            [i, it.status]
                            for i, it in zip(run.returned.get(q["id"], []), run.items[q["id"]], strict=False)
                        ],
                        "text": q["text"],
                    }
                    if det_verdicts is not None:
                        d = det_verdicts[(mem, set_name, idx, q["id"])]
                        row["deterministic"] = {"outcome": d.outcome, "option": d.option, "note": d.note}
                        row["llm_reply"] = v.raw
                    rows.append(row)
                if run.edges is not None and mem.startswith("evomem"):
                    gold = {(n["i"], n["supersedes"]) for n in s["notes"] if n["supersedes"] is not None}
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
                            "hidden": sorted(i for i, st in (run.statuses or {}).items() if st != "active"),
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
    started = time.perf_counter()
    runs, seconds = asyncio.run(_run_all(memories, sets, k, progress))
    keys: list[tuple[str, str, int, str]] = []
    jobs: list[tuple[Mapping[str, Any], Mapping[str, Any], list[Any]]] = []
    for mem, by_set in runs.items():
        for set_name, items in sets.items():
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


def markdown(report: Mapping[str, Any]) -> str:
    out = [f"# EvoMem quality benchmark ({report['judge']} judge, k={report['k']})", ""]
    titles = {
        ("odr", "main"): "ODR set: questions on the decision in force",
        ("vdr", "main"): "VDR set: questions on the default-scope decision",
        ("vdr", "scope"): "VDR set: questions on the other scope's decision (valid the whole time)",
    }
    for set_name, block in report["sets"].items():
        for kind in block["question_kinds"]:
            out += [f"## {titles.get((set_name, kind), f'{set_name} / {kind}')}", ""]
            out += [
                "| memory | ODR ↓ | 95% CI | miss | correct | wrong scope | vs flat-dates (only this / only base, p) |",
                "|---|---|---|---|---|---|---|",
            ]
            for mem, entry in block["memories"].items():
                m = entry[kind]
                mc = m.get("mcnemar_vs_flat_dates")
                mc_s = f"{mc['only_this']} / {mc['only_baseline']}, p={_fmt_p(mc['p'])}" if mc else "baseline"
                out.append(
                    f"| {mem} | {m['odr']:.3f} | {_fmt_ci(m)} | {m['miss_rate']:.3f} | {m['correct_rate']:.3f} "
                    f"| {m['wrong_scope_rate']:.3f} | {mc_s} |"
                )
            out.append("")
        linkers = {mem: e for mem, e in block["memories"].items() if "links" in e}
        if linkers:
            out += [f"## {set_name.upper()} set: links and hidden still-valid decisions", ""]
            out += [
                "| memory | links made | precision | recall | scope decisions hidden | current decisions hidden "
                "| still-valid decisions hidden |",
                "|---|---|---|---|---|---|---|",
            ]
            for mem, e in linkers.items():
                lk, hd = e["links"], e.get("hidden", {})

                def frac(g: str, hd: Mapping[str, Any] = hd) -> str:
                    return f"{hd[g]['hidden']} / {hd[g]['total']}" if g in hd else "—"

                prec = "—" if lk["precision"] is None else f"{lk['precision']:.3f}"
                rec = "—" if lk["recall"] is None else f"{lk['recall']:.3f}"
                scoped = frac("scope_decisions")
                if "scope_decisions_bait" in hd:
                    scoped += f" (bait {frac('scope_decisions_bait')}, plain {frac('scope_decisions_plain')})"
                out.append(
                    f"| {mem} | {lk['predicted']} | {prec} | {rec} | {scoped} | "
                    f"{frac('current_main_decisions')} | {frac('still_valid_decisions')} |"
                )
            out.append("")
            for mem, e in linkers.items():
                if mem.startswith("evomem-auto"):
                    rw = ", ".join(f"{w} {v['found']}/{v['gold']}" for w, v in e["links"]["recall_by_wording"].items())
                    fp = ", ".join(f"{k} {v}" for k, v in e["links"]["false_positives_by_kind"].items()) or "none"
                    out += [f"- {mem}: links found by wording: {rw}; false links by kind of note: {fp}."]
            out.append("")
        d = block["diagnostics"]
        out += [
            f"Scenario diagnostics ({set_name}): {block['scenarios']} scenarios, versions {d['versions']}; "
            f"{d['bait_questions']}/{d['main_questions']} main questions name an old option; plain BM25 ranks an "
            f"obsolete version first in {d['bm25_first_topic_note_obsolete']} and keeps the current version in "
            f"its top {report['k']} in {d['bm25_current_in_top_k']}.",
            "",
        ]
    rt = report["runtime_s"]
    out += [
        f"Runtime: {rt['total']:.1f} s in all ("
        + ", ".join(f"{m} {s:.1f} s" for m, s in rt["memories"].items())
        + f", judging {rt['judge']:.1f} s).",
        "",
    ]
    return "\n".join(out)


def plots(report: Mapping[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    groups = [(s, kind) for s, b in report["sets"].items() for kind in b["question_kinds"]]
    mems = report["memories"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    width = 0.8 / max(1, len(groups))
    for gi, (set_name, kind) in enumerate(groups):
        ms = [report["sets"][set_name]["memories"][m][kind] for m in mems]
        xs = [i + gi * width for i in range(len(mems))]
        odr = [m["odr"] for m in ms]
        err = [[m["odr"] - m["odr_ci95"][0] for m in ms], [m["odr_ci95"][1] - m["odr"] for m in ms]]
        axes[0].bar(xs, odr, width, yerr=err, capsize=3, label=f"{set_name}/{kind}")
        axes[1].bar(xs, [m["miss_rate"] for m in ms], width, label=f"{set_name}/{kind}")
    for ax, title in zip(
        axes, ("ODR (obsolete option acted on), 95% Wilson CI", "miss rate (nothing of the topic)"), strict=True
    ):
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(mems))])
        ax.set_xticklabels(mems, rotation=25, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
    fig.suptitle(f"EvoMem quality benchmark — {report['judge']} judge, k={report['k']}")
    fig.tight_layout()
    path = out / "quality_odr.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)

    rows = []
    for set_name, block in report["sets"].items():
        for mem, e in block["memories"].items():
            if "links" in e and mem.startswith("evomem-auto"):
                rows.append((f"{mem}\n{set_name}", e))
    if rows:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        xs = list(range(len(rows)))
        prec = [e["links"]["precision"] or 0.0 for _, e in rows]
        rec = [e["links"]["recall"] or 0.0 for _, e in rows]
        axes[0].bar([x - 0.2 for x in xs], prec, 0.4, label="precision")
        axes[0].bar([x + 0.2 for x in xs], rec, 0.4, label="recall")
        axes[0].set_ylim(0, 1)
        axes[0].set_title("automatic links vs gold supersedes edges", fontsize=10)
        axes[0].legend(fontsize=8)
        hid = [e.get("hidden", {}).get("still_valid_decisions", {}).get("hidden", 0) for _, e in rows]
        sc = [e.get("hidden", {}).get("scope_decisions", {}).get("hidden", 0) for _, e in rows]
        axes[1].bar([x - 0.2 for x in xs], hid, 0.4, label="still-valid decisions hidden")
        axes[1].bar([x + 0.2 for x in xs], sc, 0.4, label="of which other-scope decisions")
        axes[1].set_title("still-valid decisions hidden (count)", fontsize=10)
        axes[1].legend(fontsize=8)
        for ax in axes:
            ax.set_xticks(xs)
            ax.set_xticklabels([r[0] for r in rows], fontsize=8)
        fig.tight_layout()
        path = out / "quality_vdr.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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


def _load_sets(args: argparse.Namespace) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    sets: dict[str, list[dict[str, Any]]] = {}
    sources: dict[str, Any] = {}
    for name, seed, n, path in (("odr", args.seed, 120, args.odr), ("vdr", args.vdr_seed, 80, args.vdr)):
        if name not in args.sets:
            continue
        if seed is not None:
            sets[name] = scen.generate(n, seed, vdr=name == "vdr")
            sources[name] = {"generated": True, "seed": seed, "n": n, "generator": scen.GENERATOR}
        else:
            p = Path(path)
            if not p.exists():
                raise BenchError(f"{p} not found; write it with python -m bench.scenarios (see bench/README.md)")
            sets[name] = scen.load(p)
            sources[name] = {"file": str(p), "sha256": _sha256(p), "n": len(sets[name])}
        if args.limit:
            sets[name] = sets[name][: args.limit]
            sources[name]["limit"] = args.limit
    return sets, sources


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench/results", help="folder for the report, tables and plots")
    ap.add_argument("--odr", default=str(DATA / "odr.jsonl"), help="frozen ODR scenarios")
    ap.add_argument("--vdr", default=str(DATA / "vdr.jsonl"), help="frozen VDR scenarios")
    ap.add_argument("--seed", type=int, default=None, help="regenerate the ODR set (120) with this seed instead")
    ap.add_argument("--vdr-seed", type=int, default=None, help="regenerate the VDR set (80) with this seed instead")
    ap.add_argument("--sets", default="odr,vdr", help="comma list of sets to run (odr, vdr)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N scenarios of each set")
    ap.add_argument(
        "--memories",
        default="",
        help="comma list (default: all): flat, flat-dates, evomem-agent, "
        "evomem-auto (every linker) or evomem-auto:<linker>, oracle",
    )
    ap.add_argument(
        "--linkers",
        default=",".join(available_linkers()),
        help=f"comma list of automatic linkers to run (available: {', '.join(available_linkers())})",
    )
    ap.add_argument(
        "--no-scope-field",
        action="store_true",
        help="do not pass the note's scope to remember (the scope lives only in the text)",
    )
    ap.add_argument("--k", type=int, default=K, help="results asked from every memory per question")
    ap.add_argument("--judge", choices=("deterministic", "llm"), default="deterministic")
    ap.add_argument("--judge-model", default="", help="model name for --judge llm")
    ap.add_argument("--judge-base-url", default="", help="OpenAI-compatible base URL for --judge llm (…/v1)")
    ap.add_argument("--judge-timeout", type=float, default=60.0, help="seconds per LLM judge request")
    ap.add_argument("--judge-workers", type=int, default=4, help="parallel LLM judge requests")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    args.sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    try:
        sets, sources = _load_sets(args)
        linkers = [x.strip() for x in args.linkers.split(",") if x.strip()]
        names = [x.strip() for x in args.memories.split(",") if x.strip()]
        memories = build_memories(names, linkers=linkers, scope_field=not args.no_scope_field)
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
    }
    out = Path(args.out)
    files = write_outputs(report, out, meta)
    print(markdown({**meta, **report}))
    print("wrote " + ", ".join(str(f) for f in files), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
