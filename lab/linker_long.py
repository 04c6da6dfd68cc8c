"""The automatic linker's time per remember on long documents, and every decision it made.

Development data only: the long records of ``lab/devdata/dev-long.jsonl`` and long decision
records made up here (``long_records``: 2,000-8,000 characters, sections Context, Decision,
Consequences, Status, some of them replacing an earlier record of their subject). Each workload
is remembered in order into one in-memory store (a few hundred long notes, as the PEP row has),
with ``auto_supersede`` set to the linker:

- ``dev-long``: every note of dev-long, all scenarios in one namespace (247 notes);
- ``dev-long-concat``: three consecutive dev-long records joined into one note (about 6-11k chars);
- ``generated``: ``--generated`` made-up records.

It reports the linker's time per remember (``bench.timing``: candidate search + decision) and
the decision alone, p50/p95, per workload; ``--decisions FILE`` writes every remember's
decision (kind, target, confidence, listed candidates and the candidates the search gave the
linker, as note indices) so that two runs, before and after a change, can be compared with
``--compare OTHER``.

    python -m lab.linker_long --decisions /tmp/before.json
    python -m lab.linker_long --decisions /tmp/after.json --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.memories import scope_label
from bench.timing import instrument

ROOT = Path(__file__).resolve().parents[1]
DEV_LONG = ROOT / "lab" / "devdata" / "dev-long.jsonl"

_SUBJECTS = (
    "message broker",
    "container registry",
    "metrics backend",
    "feature flag service",
    "build cache",
    "secrets manager",
    "search index",
    "object storage",
    "CI runner fleet",
    "API gateway",
    "payroll provider",
    "travel booking policy",
    "laptop refresh cycle",
    "on-call rota",
    "incident review process",
    "data retention period",
    "vendor for translation",
    "code review rule",
    "release cadence",
    "backup schedule",
)
_OPTIONS = (
    "RabbitMQ",
    "Kafka",
    "NATS",
    "Harbor",
    "Artifactory",
    "Prometheus",
    "VictoriaMetrics",
    "Unleash",
    "LaunchDarkly",
    "Bazel remote cache",
    "Vault",
    "OpenSearch",
    "MinIO",
    "GitLab runners",
    "Envoy",
    "Kong",
    "ADP",
    "Deel",
    "Navan",
    "TravelPerk",
    "every 36 months",
    "every 48 months",
    "weekly rotation",
    "fortnightly rotation",
    "blameless reviews within 5 days",
    "90 days",
    "400 days",
    "Lokalise",
    "two approvals",
    "one approval",
    "monthly releases",
    "six-week trains",
    "nightly at 02:00 UTC",
    "hourly snapshots",
)
_FILLER = (
    "The working group met several times and collected input from the teams that depend on this.",
    "Costs were compared over three years, including support contracts and the time of the people who run it.",
    "Security reviewed the options against the current threat model and the audit findings of last year.",
    "Teams asked for a migration path that does not require a freeze of more than one day.",
    "The owner keeps a list of open questions in the tracker and reviews it every month.",
    "Documentation lives next to the code and is updated in the same change as the behaviour.",
    "Nobody wants a second system to run in parallel for longer than one quarter.",
    "Existing dashboards and alerts have to keep working or be replaced before the cut-over.",
    "The finance team needs the invoices split per cost centre, with a monthly report.",
    "We measured the current setup for two weeks and wrote the numbers into the appendix.",
    "Support hours must cover both the European and the American offices.",
    "The legal team checked the data processing agreement and the subprocessor list.",
    "Training is offered as two one-hour sessions, recorded for people who cannot attend.",
    "A rollback plan is written before any change goes out, with the person who decides on it.",
    "Open points are tracked with an owner and a date; nothing stays open without one.",
)


def long_records(n: int, seed: int = 11) -> list[dict[str, Any]]:
    """``n`` made-up decision records of 2,000-8,000 characters; about a third replace an earlier
    record of their subject (a new option, said with or without a cue), others add to it."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    current: dict[str, tuple[int, str]] = {}
    for i in range(n):
        subject = rng.choice(_SUBJECTS)
        option = rng.choice(_OPTIONS)
        prev = current.get(subject)
        replaces = prev is not None and rng.random() < 0.5
        number = 100 + i
        where = rng.choice(("platform", "company", "EU office", "mobile team"))
        lines = [f"ADR-{number}: {subject.capitalize()} for the {where}"]
        lines.append(f"Status: {rng.choice(('Accepted', 'Proposed', 'Accepted', 'Superseded', 'Draft'))}")
        lines.append("")
        lines.append("## Context")
        body = [rng.choice(_FILLER) for _ in range(rng.randint(3, 12))]
        if prev is not None:
            body.insert(0, f"Today the {subject} is {prev[1]}, decided in ADR-{prev[0]}.")
        lines.append(" ".join(body))
        lines.append("")
        lines.append("## Decision")
        if replaces and prev is not None:
            cue = rng.choice(
                (
                    f"We move from {prev[1]} to {option}.",
                    f"{option} replaces {prev[1]}.",
                    f"The {subject} is {option} now.",
                )
            )
            lines.append(f"{cue} " + " ".join(rng.choice(_FILLER) for _ in range(rng.randint(1, 4))))
        else:
            lines.append(f"We will use {option} for the {subject}. " + " ".join(rng.choice(_FILLER) for _ in range(2)))
        lines.append("")
        lines.append("## Consequences")
        lines.append(" ".join(rng.choice(_FILLER) for _ in range(rng.randint(4, 14))))
        target = rng.randint(2000, 8000)
        k = 1
        text = "\n".join(lines)
        while len(text) < target:  # more sections that decide nothing, to the target length
            extra = [
                "",
                f"## {rng.choice(('Rollout', 'Review and sign-off', 'FAQ', 'Glossary', 'Appendix'))} {k}",
                " ".join(rng.choice(_FILLER) for _ in range(rng.randint(3, 10))),
            ]
            text += "\n".join(extra)
            k += 1
        out.append({"i": i, "text": text[: max(target, 2000)], "scope": None})
        current[subject] = (number, option)
    return out


def dev_long_notes() -> list[dict[str, Any]]:
    notes: list[dict[str, Any]] = []
    with DEV_LONG.open(encoding="utf-8") as fh:
        for line in fh:
            for note in json.loads(line)["notes"]:
                scope = note.get("scope")
                notes.append({"i": len(notes), "text": note["text"], "scope": scope_label(scope) if scope else None})
    return notes


def concatenated(notes: Sequence[dict[str, Any]], k: int = 3) -> list[dict[str, Any]]:
    """Runs of ``k`` long dev-long records joined into one note each."""
    longs = [n["text"] for n in notes if len(n["text"]) > 1500]
    return [
        {"i": j, "text": "\n\n".join(longs[s : s + k]), "scope": None}
        for j, s in enumerate(range(0, len(longs) - k + 1, k))
    ]


def workloads(generated: int) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    dev = dev_long_notes()
    yield "dev-long", dev
    yield "dev-long-concat", concatenated(dev)
    if generated:
        yield "generated", long_records(generated)


def _pct(xs: Sequence[float], q: float) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def sample() -> list[tuple[str, list[dict[str, Any]]]]:
    """A small fixed sample of the workloads (lab/tests/test_long_linking.py): the first 20 dev-long
    notes, 3 concatenations and 15 generated records."""
    dev = dev_long_notes()
    return [("dev-long", dev[:20]), ("dev-long-concat", concatenated(dev)[:3]), ("generated", long_records(15))]


def run(name: str, notes: Sequence[dict[str, Any]], linker: str, *, vectors: str = "auto") -> dict[str, Any]:
    """Remember ``notes`` in order into one fresh store; timings and decisions (as note indices)."""
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    service = build_embedded(Settings(db=":memory:", auto_supersede=linker, vectors=vectors))
    index: dict[str, int] = {}
    seen: list[list[int]] = []
    inner = service.linker
    decide = inner.decide  # type: ignore[union-attr]

    def spy(text: str, scope: Any, candidates: Sequence[Any], *args: Any, **kw: Any) -> Any:
        seen.append([index.get(c.id, -1) for c in candidates])
        return decide(text, scope, candidates, *args, **kw)

    inner.decide = spy  # type: ignore[union-attr, method-assign]
    timings = instrument(service)  # the linker's cost per remember, measured from outside (bench.timing)
    decisions: list[dict[str, Any]] = []
    started = time.perf_counter()
    for note in notes:
        calls = len(seen)
        out = service.remember(note["text"], scope=note["scope"], namespace="long")
        index[out.node.id] = note["i"]
        d = out.decision
        if d is None:
            decisions.append({"i": note["i"], "kind": None})
            continue
        p = d.proposal
        decisions.append(
            {
                "i": note["i"],
                "kind": str(d.kind.value),
                "target": index.get(p.target_id, -1) if p is not None else None,
                "confidence": p.confidence if p is not None else None,
                "evidence": list(p.evidence) if p is not None else None,
                "candidates": [[index.get(c, -1), s] for c, s in d.candidates],
                "why": list(d.why),
                "reason": d.reason,
                "searched": seen[-1] if len(seen) > calls else None,
                "linked_to": index.get(out.linked_to, -1) if out.linked_to else None,
            }
        )
    wall = time.perf_counter() - started
    ms, dec, emb = timings.linker_ms, timings.decide_ms, timings.embed_ms
    service.close()  # type: ignore[attr-defined]
    chars = [len(n["text"]) for n in notes]
    return {
        "workload": name,
        "notes": len(notes),
        "chars_median": int(statistics.median(chars)),
        "chars_max": max(chars),
        "linker_calls": len(ms),
        "linker_ms_p50": round(_pct(ms, 0.5), 2),
        "linker_ms_p95": round(_pct(ms, 0.95), 2),
        "linker_ms_max": round(max(ms, default=0.0), 2),
        "decide_ms_p50": round(_pct(dec, 0.5), 2),
        "decide_ms_p95": round(_pct(dec, 0.95), 2),
        "note_embed_ms_p50": round(_pct(emb, 0.5), 2),
        "wall_s": round(wall, 1),
        "kinds": {k: sum(1 for d in decisions if d["kind"] == k) for k in ("link", "abstain", "none", None)},
        "decisions": decisions,
    }


def compare(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[str]:
    """Differences between two runs' decisions (empty: the same)."""
    out: list[str] = []
    for ra, rb in zip(a, b, strict=False):
        if ra["workload"] != rb["workload"]:
            out.append(f"workload {ra['workload']} vs {rb['workload']}")
            continue
        if len(ra["decisions"]) != len(rb["decisions"]):
            out.append(f"{ra['workload']}: {len(ra['decisions'])} vs {len(rb['decisions'])} decisions")
        for da, db in zip(ra["decisions"], rb["decisions"], strict=False):
            if da != db:
                out.append(f"{ra['workload']} note {da['i']}: {da} != {db}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--linker", default="pair")
    ap.add_argument("--generated", type=int, default=300, help="made-up long records (0: none)")
    ap.add_argument("--only", default=None, help="comma-separated workloads to run")
    ap.add_argument("--decisions", default=None, help="write the runs (timings and decisions) here")
    ap.add_argument("--compare", default=None, help="a --decisions file of an earlier run to compare with")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    runs = []
    for name, notes in workloads(args.generated):
        if only is not None and name not in only:
            continue
        r = run(name, notes, args.linker)
        runs.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "decisions"}), flush=True)
    if args.decisions:
        Path(args.decisions).write_text(json.dumps(runs), encoding="utf-8")
    if args.compare:
        other = json.loads(Path(args.compare).read_text(encoding="utf-8"))
        diffs = compare(other, runs)
        print(f"decisions compared with {args.compare}: {len(diffs)} differences", flush=True)
        for d in diffs[:20]:
            print("  " + d)
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
