"""The tables of ``bench.agents``: agents.md, and the short table printed at the end of a run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.agents_counts import BASELINE, BUCKETS, CONFIRM_AT, ROOT, merge

AGENT_LABELS = {
    "ignore": "ignores offers and hints",
    "hints": "follows recall's hint",
    "perfect": "confirms only a right offer (perfect)",
    "calibrated": "confirms the top offer when shown >= 0.9",
    "credulous": "confirms the top offer",
    "flat-dates": "baseline: flat BM25 with dates",
}
GROUPS = ("dev", "blind")


def _rate(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def summary(acc: Mapping[str, Any]) -> dict[str, Any]:
    """Rates from a set's (or a pool's) counters."""
    agents: dict[str, Any] = {}
    for name, c in acc["agents"].items():
        q = c["questions"]
        agents[name] = {
            "questions": q,
            "odr": _rate(c["obsolete"], q),
            "misses": c["miss"],
            "miss_rate": _rate(c["miss"], q),
            "correct_rate": _rate(c["correct"], q),
        }
        if name == BASELINE:
            continue
        agents[name] |= {
            "hidden": c["hidden"],
            "valid_decisions": c["valid_decisions"],
            "confirmed": c["confirmed"],
            "link_precision": _rate(c["confirmed_right"], c["confirmed"]),
            "link_recall": _rate(c["confirmed_right"], c["gold_edges"]),
            "refused": c["refused"],
        }
        if name == "hints":
            agents[name] |= {
                "followed": c["followed"],
                "followed_spoiled": c["followed_spoiled"],
                "followed_fixed": c["followed_fixed"],
                "top_unreplaced": c["top_unreplaced"],
                "top_unreplaced_hinted": c["top_unreplaced_hinted"],
            }
    o = acc["offers"]
    offers = {
        **o,
        "no_gold_offered_share": _rate(o["no_gold_offered"], o["no_gold_notes"]),
        "offers_per_no_gold_note": _rate(o["no_gold_offers"], o["no_gold_notes"]),
        "nondecision_offered_share": _rate(o["nondecision_offered"], o["nondecision_notes"]),
        "recall_if_confirmed": _rate(o["gold_offered"], o["gold_notes"]),
        "gold_top_share": _rate(o["gold_top"], o["gold_notes"]),
        "offers_right_share": _rate(o["offers_right"], o["offers"]),
    }
    reliability = [
        {"band": f"{b / BUCKETS:.1f}-{(b + 1) / BUCKETS:.1f}", "offers": n, "right": r, "right_share": _rate(r, n)}
        for b, (n, r) in enumerate(acc["reliability"])
    ]
    return {
        "scenarios": acc["scenarios"],
        "seconds": acc["seconds"],
        "agents": agents,
        "offers": offers,
        "reliability": reliability,
    }


def _commit() -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def build_report(
    counts: Mapping[str, dict[str, Any]], groups: Mapping[str, str], *, k: int, seed: int, seconds: float
) -> dict[str, Any]:
    """The JSON report: per set its group, counters and rates; per group the pooled rates."""
    import datetime as dt

    report: dict[str, Any] = {
        "benchmark": "bench.agents",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "k": k,
        "seed": seed,
        "confirm_at": CONFIRM_AT,
        "seconds": round(seconds, 1),
        "sets": {n: {"group": groups[n], "counts": c, "summary": summary(c)} for n, c in counts.items()},
    }
    report["pooled"] = pooled(report)
    return report


def pooled(report: Mapping[str, Any]) -> dict[str, Any]:
    """Per group, the rates over its sets with questions (the PEP chains, one scenario of 736 notes
    without questions, are reported on their own row, not pooled)."""
    out: dict[str, Any] = {}
    for g in GROUPS:
        members = [
            s["counts"]
            for s in report["sets"].values()
            if s["group"] == g and s["counts"]["agents"]["ignore"]["questions"]
        ]
        if members:
            out[g] = summary(merge(members))
    return out


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _frac(n: int | None, d: int | None) -> str:
    return "–" if not d else f"{n}/{d}"


def _cells(a: Mapping[str, Any], agent: str) -> list[str]:
    """ODR, misses, hidden, link precision / recall of one agent in one set or pool."""
    if not a.get("questions") and agent == "flat-dates":
        return ["–"] * 4
    odr = _f(a.get("odr")) if a.get("questions") else "–"
    misses = _frac(a.get("misses"), a.get("questions"))
    if agent == "flat-dates":
        return [odr, misses, "–", "–"]
    hidden = _frac(a.get("hidden"), a.get("valid_decisions"))
    links = "–" if not a.get("confirmed") else f"{_f(a.get('link_precision'))} / {_f(a.get('link_recall'))}"
    return [odr, misses, hidden, links]


def summary_table(report: Mapping[str, Any]) -> list[str]:
    """Rows: the agents and the baseline; columns: dev and blind side by side (pooled over sets)."""
    pooled = report["pooled"]
    heads = ["ODR", "misses", "still-valid hidden", "links P / R"]
    groups = [g for g in GROUPS if g in pooled]
    lines = [
        "| agent | " + " | ".join(f"{g}: {h}" for g in groups for h in heads) + " |",
        "|---|" + "---|" * (len(heads) * len(groups)),
    ]
    for agent, label in AGENT_LABELS.items():
        cells = [c for g in groups for c in _cells(pooled[g]["agents"].get(agent, {}), agent)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _set_rows(report: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(group, set, summary) in report order, each group's pool after its sets."""
    rows = []
    for g in GROUPS:
        names = [n for n, s in report["sets"].items() if s["group"] == g]
        asked = [n for n in names if report["sets"][n]["counts"]["agents"]["ignore"]["questions"]]
        rows += [(g, n, report["sets"][n]["summary"]) for n in asked]
        if g in report["pooled"]:
            rows.append((g, f"**all {g}**", report["pooled"][g]))
        rows += [(g, n, report["sets"][n]["summary"]) for n in names if n not in asked]
    return rows


def unpooled_lines(report: Mapping[str, Any]) -> list[str]:
    """One line per set without questions (the PEP chains): its offers, links and hidden notes."""
    lines = []
    for name, s in report["sets"].items():
        if s["counts"]["agents"]["ignore"]["questions"]:
            continue
        a, o = s["summary"]["agents"], s["summary"]["offers"]
        agents = "; ".join(
            f"{label} {_frac(a[x]['hidden'], a[x]['valid_decisions'])} hidden, links P / R {_cells(a[x], x)[3]}"
            for x, label in (("perfect", "perfect"), ("calibrated", "calibrated"), ("credulous", "credulous"))
        )
        lines.append(
            f"- **{name}** ({s['group']}, {o['notes']} notes, no questions, not pooled): offers on "
            f"{_frac(o['no_gold_offered'], o['no_gold_notes'])} notes that replace nothing, recall if confirmed "
            f"{_f(o['recall_if_confirmed'])} over {o['gold_notes']} replacing notes; {agents}."
        )
    return [*lines, ""] if lines else []


def per_set_table(report: Mapping[str, Any], key: str, title: str) -> list[str]:
    """One metric (ODR, misses, hidden, links) per set and agent."""
    index = {"odr": 0, "misses": 1, "hidden": 2, "links": 3}[key]
    agents = [a for a in AGENT_LABELS if key in ("odr", "misses") or a != "flat-dates"]
    lines = [f"## {title}", "", "| group | set | " + " | ".join(agents) + " |", "|---|---|" + "---|" * len(agents)]
    for g, name, s in _set_rows(report):
        cells = [_cells(s["agents"].get(a, {}), a)[index] for a in agents]
        lines.append(f"| {g} | {name} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def hints_table(report: Mapping[str, Any]) -> list[str]:
    lines = [
        "## The hint reader: hints followed, and on hits that nothing replaced",
        "",
        "| group | set | questions | hint followed | right answer turned wrong | wrong answer turned right "
        "| answers on a note nothing replaced carrying a hint | misses: ignore → hints |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g, name, s in _set_rows(report):
        h, i = s["agents"]["hints"], s["agents"]["ignore"]
        if not h.get("questions"):
            continue
        lines.append(
            f"| {g} | {name} | {h['questions']} | {h['followed']} | {h['followed_spoiled']} | {h['followed_fixed']} "
            f"| {_frac(h['top_unreplaced_hinted'], h['top_unreplaced'])} | {i['misses']} → {h['misses']} |"
        )
    return [*lines, ""]


def offers_table(report: Mapping[str, Any]) -> list[str]:
    lines = [
        "## Offers (the shared replay: nothing confirmed)",
        "",
        "| group | set | notes | notes that replace nothing: with >= 1 offer | offers per such note "
        "| notes that decide nothing: with >= 1 offer | replacing notes | recall if confirmed | gold is the top offer "
        "| offers right | offers without a shown probability |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g, name, s in _set_rows(report):
        o = s["offers"]
        lines.append(
            f"| {g} | {name} | {o['notes']} | {_frac(o['no_gold_offered'], o['no_gold_notes'])} "
            f"({_f(o['no_gold_offered_share'])}) | {_f(o['offers_per_no_gold_note'])} "
            f"| {_frac(o['nondecision_offered'], o['nondecision_notes'])} | {o['gold_notes']} "
            f"| {_f(o['recall_if_confirmed'])} | {_f(o['gold_top_share'])} | {_frac(o['offers_right'], o['offers'])} "
            f"| {o['offers_unscored']} |"
        )
    return [*lines, ""]


def reliability_table(report: Mapping[str, Any]) -> list[str]:
    any_set = next(iter(report["sets"].values()))["summary"]["reliability"]
    bands = [b["band"] for b in any_set]
    lines = [
        "## Reliability: every offer by the probability shown with it (right / offers)",
        "",
        "| group | set | " + " | ".join(bands) + " |",
        "|---|---|" + "---|" * len(bands),
    ]
    for g, name, s in _set_rows(report):
        cells = [_frac(b["right"], b["offers"]) for b in s["reliability"]]
        lines.append(f"| {g} | {name} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _mark(ok: bool | None, text: str) -> str:
    return text if ok is None else f"{text} {'✓' if ok else '✗'}"


def _half(x: float | None, base: float | None) -> bool | None:
    return None if x is None or base is None else x <= base / 2


def targets_table(report: Mapping[str, Any]) -> list[str]:
    """Issue 30's targets (stated on blind data), per set, both groups."""
    lines = [
        "## Issue 30's targets, per set (✓ met, ✗ not)",
        "",
        "Targets (blind data): perfect agent's ODR <= half of flat BM25 with dates; calibrated agent's link "
        "precision >= 0.95 and <= 1 still-valid decision hidden per 80 scenarios; credulous agent <= 8 hidden "
        "per 80 scenarios; hint reader's ODR <= half of the baseline's and its miss rate <= the ignoring agent's "
        "+ 0.05; offers on <= 10% of the notes that replace nothing; recall if confirmed >= 0.95.",
        "",
        "| group | set | perfect ODR (baseline) | calibrated: precision | calibrated: hidden per 80 "
        "| credulous: hidden per 80 | hints: ODR | hints: miss rate (ignore) | offered, notes replacing nothing "
        "| recall if confirmed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g, name, s in _set_rows(report):
        a, o = s["agents"], s["offers"]
        base = a["flat-dates"].get("odr") if a["flat-dates"].get("questions") else None
        per80 = 80 / s["scenarios"] if s["scenarios"] > 1 else None
        cells = []
        perfect = a["perfect"].get("odr") if a["perfect"].get("questions") else None
        cells.append(_mark(_half(perfect, base), f"{_f(perfect)} ({_f(base)})"))
        prec = a["calibrated"].get("link_precision")
        cells.append(_mark(None if prec is None else prec >= 0.95, _f(prec)))
        for agent, cap in (("calibrated", 1), ("credulous", 8)):
            if per80 is None:
                cells.append("–")
                continue
            h = a[agent]["hidden"] * per80
            cells.append(_mark(h <= cap, f"{h:.1f}"))
        hints = a["hints"].get("odr") if a["hints"].get("questions") else None
        cells.append(_mark(_half(hints, base), _f(hints)))
        hm, im = a["hints"].get("miss_rate"), a["ignore"].get("miss_rate")
        ok = None if hm is None or im is None else hm <= im + 0.05
        cells.append(_mark(ok, f"{_f(hm)} ({_f(im)})"))
        share = o["no_gold_offered_share"]
        cells.append(_mark(None if share is None else share <= 0.10, _f(share)))
        rc = o["recall_if_confirmed"]
        cells.append(_mark(None if rc is None else rc >= 0.95, _f(rc)))
        lines.append(f"| {g} | {name} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _set_list(report: Mapping[str, Any], group: str) -> str:
    """``name (scenarios, seconds)`` of every set of ``group``."""
    return ", ".join(
        f"{n} ({s['summary']['scenarios']}, {s['summary']['seconds']:.0f} s)"
        for n, s in report["sets"].items()
        if s["group"] == group
    )


def markdown(report: Mapping[str, Any]) -> str:
    sampled = report.get("sampled") or {}
    groups = [g for g in GROUPS if any(s["group"] == g for s in report["sets"].values())]
    lines = [
        "# Five simulated agents reading the default server's offers and hints",
        "",
        f"{report['date']}, evomem `{report.get('commit', '?')}`, default settings (`build_embedded`), "
        f"recall k={report['k']}, {report['seconds']:.0f} s"
        + (f" ({report['cpu_seconds']:.0f} s of CPU)" if report.get("cpu_seconds") else "")
        + ". Sets (scenarios, seconds): "
        + "; ".join(f"{g}: {_set_list(report, g)}" for g in groups)
        + ".",
        "",
    ]
    if sampled:
        lines += [
            "Sampled with seed "
            f"{report['seed']} to keep the run short: "
            + ", ".join(f"{n} {k} of {v}" for n, (k, v) in sampled.items())
            + " (the other sets run whole).",
            "",
        ]
    if report.get("skipped"):
        lines += ["Skipped: " + "; ".join(report["skipped"]) + ".", ""]
    lines += [
        "ODR: the answer is an obsolete version (the agent acts on the first hit that decides the asked topic "
        "and scope and is not marked superseded; the hint reader on the note its hint names; the baseline on "
        "the newest-dated note of the topic in its top 5). Misses: no answer of the topic. Still-valid hidden: "
        "decisions valid when the questions are asked whose status is not active at the end. Links P / R: "
        "the confirmed links against the gold edges. Dev and blind are pooled over their scenario sets; the PEP "
        "chains have no questions, so they have a row of their own (offers, links and hidden PEPs) and are "
        "not pooled.",
        "",
        *summary_table(report),
        "",
        *unpooled_lines(report),
        *targets_table(report),
        *per_set_table(report, "odr", "ODR per set"),
        *per_set_table(report, "misses", "Misses per set"),
        *per_set_table(report, "hidden", "Still-valid decisions hidden per set"),
        *per_set_table(report, "links", "Confirmed links: precision / recall per set"),
        *hints_table(report),
        *offers_table(report),
        *reliability_table(report),
    ]
    return "\n".join(lines).rstrip() + "\n"


def short_table(report: Mapping[str, Any]) -> str:
    """The summary table, for the terminal."""
    return "\n".join(summary_table(report)) + "\n"
