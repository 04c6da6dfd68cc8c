"""The premise benchmark: does ``check`` catch a replaced premise, and does it leave a true one alone?
And does ``needs_review`` follow dependencies?

    python -m bench.premise --out bench/results                     # frozen sets, dev sets, blind sets
    python -m bench.premise --out bench/results --limit 20          # first 20 scenarios of each set
    python -m bench.premise --sets odr,dev-a --out /tmp/p           # named sets only
    python -m bench.premise --hybrid --out bench/results            # and again with vectors on
    python -m bench.premise --hybrid-only --out bench/results       # add the hybrid pass to a report
    python -m bench.premise --sets dev-k --modes agent --misses /tmp/m.jsonl   # each wrong answer

**Premises.** For every question of a scenario set (the ``bench.scenarios`` format: notes with
``option`` and ``supersedes``, questions with ``gold_option`` and ``obsolete_options``), the
scenario's notes are remembered on a fresh embedded server (the default settings, vectors off:
words only) in one of two modes:

- ``agent``: each note with its gold ``supersedes`` (an agent that links what it replaces);
- ``default``: no links given; the server offers likely predecessors (``possible_supersedes``) and
  links nothing, as it does by default.

Then ``check`` is asked, in the question's scope, about the premise of every obsolete option and
of the gold option, in two wordings: ``note`` (the text of the version that chose the option) and
``template`` ("The <topic> uses <option>."). A replaced premise is *caught* when the answer is
``superseded`` or ``contradicted``; a true premise is *wrongly flagged* by the same answers; the
``unknown`` rate is over both. Targets (with agent links): caught >= 0.95, false flags <= 0.02.

**Hybrid.** ``--hybrid`` runs the sets again with vectors on (``vectors="auto"``, the default
embedded setting: BM25 and the packaged MiniLM model, one model whose vectors are kept across
scenarios), in ``agent`` mode, one development scenario in ``--hybrid-every`` (a fixed seed; two
cores), the blind sets whole; the frozen ODR and VDR sets are words only.

**Misses.** ``--misses FILE`` writes each wrong answer on a development set (never a blind one):
the statement, what was expected, what ``check`` answered, its reason and evidence, and the
scenario's notes on the question's topic, to group the misses by cause.

**Dependencies.** A scenario whose notes carry ``depends_on`` (earlier note indices) and
``needs_review_at_end`` (true or false) is remembered with ``relations={"depends_on": [...]}``
(and, in ``agent`` mode, its gold ``supersedes``); at the end each note that says
``needs_review_at_end`` is read back: flag recall (flagged among those that should be) and false
flags (flagged among those that should not). Targets with agent links: recall 1.0, false flags 0.

Blind sets (``bench/blind/blind-*.jsonl``) are run, never read here: only their aggregate numbers
are written, no row, no text.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.memories import scope_label
from evomem.bootstrap.embedded import build_embedded
from evomem.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
MODES = ("agent", "default")
WORDINGS = ("note", "template")
CAUGHT = ("superseded", "contradicted")
HYBRID_EVERY = 3  # the hybrid run reads one development scenario in 3 (2 cores), the blind sets whole
HYBRID_SKIP = ("odr", "vdr")  # the frozen generated sets: words only


def set_files(names: Sequence[str] | None) -> list[tuple[str, Path, bool]]:
    """(name, path, blind) of every set: the frozen ODR and VDR sets, the development sets, the
    blind sets (by name only; their contents are never opened outside the run)."""
    found = [("odr", ROOT / "bench/data/odr.jsonl", False), ("vdr", ROOT / "bench/data/vdr.jsonl", False)]
    found += [(p.stem, p, False) for p in sorted((ROOT / "lab/devdata").glob("dev-*.jsonl")) if p.stem != "dev-long"]
    found += [(p.stem, p, True) for p in sorted((ROOT / "bench/blind").glob("blind-*.jsonl"))]
    return [f for f in found if names is None or f[0] in names]


def load(path: Path, limit: int | None) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                out.append(json.loads(line))
            if limit is not None and len(out) >= limit:
                break
    return out


# ----------------------------------------------------------------------------- one scenario


def _service(folder: Path, n: int, vectors: str = "off") -> Any:
    """A fresh embedded server: words only (``vectors="off"``) or the default hybrid search
    (``"auto"``: the packaged MiniLM model, one shared across scenarios, its vectors kept)."""
    service = build_embedded(Settings(db=str(folder / f"s{n}.db"), vectors=vectors))
    if vectors != "off":
        _share_embedder(service)
    return service


_EMBEDDER: list[Any] = []  # one CachedEmbedder for every scenario of a hybrid run


def _share_embedder(service: Any) -> None:
    semantic = getattr(service, "vectors", None)
    model = getattr(semantic, "embedder", None)
    if model is None:
        return
    if not _EMBEDDER or _EMBEDDER[0].name != model.name:
        from bench.agents import CachedEmbedder

        _EMBEDDER[:] = [CachedEmbedder(model)]
    semantic.embedder = _EMBEDDER[0]  # type: ignore[union-attr]


def _remember_all(service: Any, scenario: Mapping[str, Any], mode: str) -> dict[int, str]:
    ids: dict[int, str] = {}
    for note in scenario["notes"]:
        kwargs: dict[str, Any] = {}
        if note.get("scope"):
            kwargs["scope"] = scope_label(note["scope"])
        if mode == "agent" and note.get("supersedes") is not None and note["supersedes"] in ids:
            kwargs["supersedes"] = ids[note["supersedes"]]
        deps = [ids[i] for i in note.get("depends_on") or () if i in ids]
        if deps:
            kwargs["relations"] = {"depends_on": deps}
        ids[note["i"]] = service.remember(note["text"], **kwargs).node.id
    return ids


def _topic_phrase(scenario: Mapping[str, Any], q: Mapping[str, Any]) -> str:
    for note in scenario["notes"]:
        if note.get("topic") == q.get("topic") and note.get("component") and note.get("aspect"):
            return f"{note['component']} {note['aspect']}"
    return re.sub(r"[/_-]+", " ", str(q.get("topic") or "")).strip()


def _note_naming(scenario: Mapping[str, Any], q: Mapping[str, Any], option: str) -> str | None:
    """The text of the latest version of the question's topic (and scope) that chose ``option``."""
    key = option.casefold()
    named = [
        n
        for n in scenario["notes"]
        if n.get("topic") == q.get("topic")
        and (n.get("scope") or None) == (q.get("scope") or None)
        and str(n.get("option") or "").casefold() == key
    ]
    return named[-1]["text"] if named else None


def statements(scenario: Mapping[str, Any], q: Mapping[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """(wording, statement, true premise?) for the question's gold option and each obsolete one."""
    options = [(q["gold_option"], True)] + [(o, False) for o in q.get("obsolete_options") or ()]
    for option, true in options:
        if not option:
            continue
        text = _note_naming(scenario, q, option)
        if text is not None:
            yield "note", text, true
        yield "template", f"The {_topic_phrase(scenario, q)} uses {option}.", true


def run_scenario(service: Any, scenario: Mapping[str, Any], mode: str, misses: list | None = None) -> dict[str, Any]:
    """Premise answers and dependency flags of one scenario, remembered in ``mode``; with
    ``misses``, each wrong answer (a replaced premise not caught, a true one flagged) is added to
    it with its evidence (``miss``)."""
    ids = _remember_all(service, scenario, mode)
    answers: list[tuple[str, bool, str, float]] = []
    for q in scenario.get("questions") or ():
        if not q.get("gold_option"):
            continue
        scope = scope_label(q["scope"]) if q.get("scope") else None
        for wording, text, true in statements(scenario, q):
            out = service.check(text, scope=scope)
            answers.append((wording, true, out.verdict, out.confidence))
            if misses is not None and (out.verdict in CAUGHT) != (not true):
                misses.append(miss(scenario, q, mode, wording, text, true, out))
    flags: list[tuple[bool, bool]] = []
    for note in scenario["notes"]:
        if "needs_review_at_end" in note and note["i"] in ids:
            node = service.get_node(ids[note["i"]])[0]
            flags.append((bool(note["needs_review_at_end"]), node.needs_review is not None))
    return {"answers": answers, "flags": flags}


def miss(
    scenario: Mapping[str, Any], q: Mapping[str, Any], mode: str, wording: str, text: str, true: bool, out: Any
) -> dict[str, Any]:
    """One wrong answer, for study (development sets only): the statement, what was expected,
    what ``check`` answered and the evidence it read, and the scenario's notes on the topic."""

    def node(n: Any) -> dict[str, Any]:
        return {"id": n.id, "scope": n.scope, "status": str(n.status), "v": n.version, "text": n.raw_text[:400]}

    return {
        "scenario": scenario.get("id"),
        "mode": mode,
        "wording": wording,
        "statement": text,
        "scope": q.get("scope"),
        "expected": "in_force" if true else "superseded/contradicted",
        "gold_option": q.get("gold_option"),
        "answer": out.verdict,
        "confidence": out.confidence,
        "option_read": out.option,
        "reason": out.reason,
        "in_force": [node(n) for n in out.in_force],
        "named": [node(n) for n in out.named],
        "topic_notes": [
            {k: n.get(k) for k in ("i", "scope", "option", "supersedes", "text")}
            for n in scenario["notes"]
            if n.get("topic") == q.get("topic")
        ],
    }


# ----------------------------------------------------------------------------- metrics


def _rate(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def premise_metrics(answers: Sequence[tuple[str, bool, str, float]]) -> dict[str, Any]:
    replaced = [a for a in answers if not a[1]]
    true = [a for a in answers if a[1]]
    return {
        "statements": len(answers),
        "replaced": len(replaced),
        "true": len(true),
        "caught": _rate(sum(a[2] in CAUGHT for a in replaced), len(replaced)),
        "false_flags": _rate(sum(a[2] in CAUGHT for a in true), len(true)),
        "in_force_on_true": _rate(sum(a[2] == "in_force" for a in true), len(true)),
        "unknown": _rate(sum(a[2] == "unknown" for a in answers), len(answers)),
        "verdicts": dict(Counter(a[2] for a in answers)),
        "calibration": calibration(answers),
    }


def calibration(answers: Sequence[tuple[str, bool, str, float]]) -> dict[str, Any]:
    """For each confidence level a verdict was given at: how often that verdict was right
    (in_force on a true premise; superseded or contradicted on a replaced one)."""
    out: dict[str, list[int]] = {}
    for _, true, verdict, conf in answers:
        if verdict == "unknown":
            continue
        right = (verdict == "in_force") == true
        cell = out.setdefault(f"{verdict}@{conf:.2f}", [0, 0])
        cell[0] += right
        cell[1] += 1
    return {k: {"right": r, "n": n, "precision": _rate(r, n)} for k, (r, n) in sorted(out.items())}


def flag_metrics(flags: Sequence[tuple[bool, bool]]) -> dict[str, Any] | None:
    if not flags:
        return None
    should = [f for f in flags if f[0]]
    should_not = [f for f in flags if not f[0]]
    return {
        "notes": len(flags),
        "should_flag": len(should),
        "flag_recall": _rate(sum(f[1] for f in should), len(should)),
        "false_flags": _rate(sum(f[1] for f in should_not), len(should_not)),
    }


def sample(scenarios: list[dict[str, Any]], every: int | None, seed: int = 33) -> list[dict[str, Any]]:
    """One scenario in ``every`` (a fixed seed: the same sample each run), in their order."""
    if not every or every <= 1:
        return scenarios
    import random

    rng = random.Random(seed)
    keep = sorted(rng.sample(range(len(scenarios)), max(1, len(scenarios) // every)))
    return [scenarios[i] for i in keep]


def run_set(
    name: str,
    path: Path,
    limit: int | None,
    progress: bool,
    *,
    vectors: str = "off",
    every: int | None = None,
    misses: list | None = None,
    modes: Sequence[str] = MODES,
) -> dict[str, Any]:
    scenarios = sample(load(path, limit), every)
    out: dict[str, Any] = {"scenarios": len(scenarios), "vectors": vectors}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="evomem-premise-") as tmp:
        for mode in modes:
            answers: list[tuple[str, bool, str, float]] = []
            flags: list[tuple[bool, bool]] = []
            for n, scenario in enumerate(scenarios):
                service = _service(Path(tmp), n * 2 + MODES.index(mode), vectors)
                try:
                    got = run_scenario(service, scenario, mode, misses)
                finally:
                    service.close()
                answers += got["answers"]
                flags += got["flags"]
                if progress and n % 50 == 49:
                    print(f"  {name} {mode}: {n + 1}/{len(scenarios)}", file=sys.stderr)
            out[mode] = {
                "premises": {w: premise_metrics([a for a in answers if a[0] == w]) for w in WORDINGS},
                "dependencies": flag_metrics(flags),
            }
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


# ----------------------------------------------------------------------------- report


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def markdown(report: Mapping[str, Any]) -> str:
    lines = [
        "# Premise check and dependency staleness (`make bench-premise`)",
        "",
        "Embedded server, default settings, vectors off (words only). `agent`: notes remembered with their gold "
        "`supersedes`; `default`: no links given (the server offers, links nothing). Caught: a replaced premise "
        "answered `superseded` or `contradicted` (target >= 0.95 with agent links); false flags: a true premise "
        "answered so (target <= 0.02); unknown: over all statements. `note`: the statement is the text of the "
        'version that chose the option; `template`: "The <topic> uses <option>." Blind sets are run, never read.',
        "",
        "| set | kind | mode | wording | statements | caught | false flags | in force (true) | unknown |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += _rows(report["sets"])
    deps = [(n, b, mode) for n, b in report["sets"].items() for mode in MODES if mode in b and b[mode]["dependencies"]]
    if deps:
        lines += [
            "",
            "| set | kind | mode | notes read | should flag | flag recall | false flags |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, block, mode in deps:
            d = block[mode]["dependencies"]
            kind = "blind" if block["blind"] else "dev"
            lines.append(
                f"| {name} | {kind} | {mode} | {d['notes']} | {d['should_flag']} | {_f(d['flag_recall'])} | "
                f"{_f(d['false_flags'])} |"
            )
    lines += _pooled_lines(report["pooled"], "words only")
    if report.get("hybrid"):
        h = report["hybrid"]
        lines += [
            "",
            "## Hybrid search (vectors on, the default embedded setting)",
            "",
            f"The same, with the packaged MiniLM model: one development scenario in {h['every']} (a fixed seed), "
            "the blind sets whole.",
            "",
            "| set | kind | mode | wording | statements | caught | false flags | in force (true) | unknown |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += _rows(h["sets"])
        lines += _pooled_lines(h["pooled"], "hybrid")
    return "\n".join(lines) + "\n"


def _rows(sets: Mapping[str, Any]) -> list[str]:
    lines = []
    for name, block in sets.items():
        kind = "blind" if block["blind"] else "dev"
        for mode in (x for x in MODES if x in block):
            for w in WORDINGS:
                m = block[mode]["premises"][w]
                if not m["statements"]:
                    continue
                lines.append(
                    f"| {name} | {kind} | {mode} | {w} | {m['statements']} | {_f(m['caught'])} | "
                    f"{_f(m['false_flags'])} | {_f(m['in_force_on_true'])} | {_f(m['unknown'])} |"
                )
    return lines


def _pooled_lines(pooled_by: Mapping[str, Any], label: str) -> list[str]:
    lines: list[str] = []
    for kind in ("dev", "blind"):
        for mode in MODES:
            for w in WORDINGS:
                pooled = pooled_by.get(f"{kind}/{mode}/{w}")
                if pooled:
                    lines.append(
                        f"\nPooled {kind}, {mode}, {w} ({label}): caught {_f(pooled['caught'])}, false flags "
                        f"{_f(pooled['false_flags'])}, unknown {_f(pooled['unknown'])} "
                        f"({pooled['statements']} statements)"
                    )
    return lines


def pool(sets: Mapping[str, Any]) -> dict[str, Any]:
    """Caught, false flags and unknown over every dev set, and over every blind set (counts summed)."""
    out: dict[str, Any] = {}
    for kind, blind in (("dev", False), ("blind", True)):
        for mode in MODES:
            for w in WORDINGS:
                ms = [b[mode]["premises"][w] for b in sets.values() if b["blind"] == blind and mode in b]
                ms = [m for m in ms if m["statements"]]
                if not ms:
                    continue
                rep, tru, n = (
                    sum(m["replaced"] for m in ms),
                    sum(m["true"] for m in ms),
                    sum(m["statements"] for m in ms),
                )
                caught = sum((m["caught"] or 0) * m["replaced"] for m in ms)
                false = sum((m["false_flags"] or 0) * m["true"] for m in ms)
                unknown = sum((m["unknown"] or 0) * m["statements"] for m in ms)
                out[f"{kind}/{mode}/{w}"] = {
                    "statements": n,
                    "caught": _rate(round(caught), rep),
                    "false_flags": _rate(round(false), tru),
                    "unknown": _rate(round(unknown), n),
                }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results")
    parser.add_argument("--sets", help="comma-separated set names (default: all)")
    parser.add_argument("--limit", type=int, help="first N scenarios of each set")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--misses", type=Path, help="write each wrong answer on a development set, with its evidence (JSON lines)"
    )
    parser.add_argument("--modes", default=",".join(MODES), help="agent, default or both (comma-separated)")
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="also run with vectors on (the default embedded setting: words and the packaged MiniLM model)",
    )
    parser.add_argument(
        "--hybrid-every",
        type=int,
        default=HYBRID_EVERY,
        help="hybrid run: one development scenario in N (a fixed seed); blind sets whole (default %(default)s)",
    )
    parser.add_argument(
        "--hybrid-only",
        action="store_true",
        help="run only the hybrid pass, added to the words-only report already in --out",
    )
    parser.add_argument("--hybrid-modes", default="agent", help="the hybrid pass's modes (default: agent)")
    args = parser.parse_args(argv)
    modes = [m for m in MODES if m in args.modes.split(",")]
    names = args.sets.split(",") if args.sets else None
    report: dict[str, Any] = {"sets": {}}
    misses: list[dict[str, Any]] | None = [] if args.misses else None
    files = [f for f in set_files(names) if f[1].exists()]
    if args.hybrid_only:
        report = json.loads((args.out / "premise.json").read_text(encoding="utf-8"))
    for name, path, blind in [] if args.hybrid_only else files:
        print(f"premise: {name}", file=sys.stderr)
        block = run_set(name, path, args.limit, not args.no_progress, misses=None if blind else misses, modes=modes)
        block["blind"] = blind
        report["sets"][name] = block
    report["pooled"] = pool(report["sets"])
    if args.hybrid or args.hybrid_only:
        hybrid_modes = [m for m in MODES if m in args.hybrid_modes.split(",")]
        hybrid: dict[str, Any] = {"every": args.hybrid_every, "sets": {}}
        for name, path, blind in files:
            if name in HYBRID_SKIP:
                continue
            print(f"premise (hybrid): {name}", file=sys.stderr)
            every = None if blind else args.hybrid_every
            progress = not args.no_progress
            block = run_set(name, path, args.limit, progress, vectors="auto", every=every, modes=hybrid_modes)
            block["blind"] = blind
            hybrid["sets"][name] = block
        hybrid["pooled"] = pool(hybrid["sets"])
        report["hybrid"] = hybrid
    if args.misses and misses is not None:
        args.misses.parent.mkdir(parents=True, exist_ok=True)
        with args.misses.open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(m, ensure_ascii=False) + "\n" for m in misses)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "premise.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (args.out / "premise.md").write_text(markdown(report), encoding="utf-8")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
