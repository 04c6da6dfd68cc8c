"""Field scores and latency of the cronista backends, in one run: ``lite`` against the ``onnx`` model.

    python -m lab.cronista_eval [--out bench/results/cronista] [--peps DIR] [--fp32 build/cronista/model.fp32.onnx]

Two test sets, neither ever trained or tuned on:

- the held-out labelled notes ``lab/cronista/eval_notes.jsonl`` (written by a helper who
  never saw the code; many styles). Gold fields are the labelled clauses of each role, in
  source order, joined as the cronista joins clauses; gold spans are the labelled strings.
- PEP sections (``shared/data/external/peps/texts``), a real-text check that needs no
  labelling: Motivation -> trigger, Specification / Proposal -> change, Rejected Ideas /
  Alternatives -> alternatives tried, Backwards Compatibility / Consequences -> consequences.
  From each PEP that has a Motivation and a Specification (or Proposal) section, the first
  ``--pep-paragraphs`` prose paragraphs of each mapped section (headings, code blocks and
  directives stripped, lines reflowed) are joined into one text; each field is scored
  against its own section's text, over the PEPs that have that section.

Scores per field: exact match (whitespace-normalised; an empty gold field is matched by an
empty answer) and SQuAD-style token F1 (lower-cased word tokens), averaged over notes. The
summary is scored against the source sentences that hold a gold clause. The four spans
(subject, option chosen, option left, scope) only the model extracts; lite is scored as empty.

Latency: ``extract`` per note, in process, one thread, after a warm-up; p50 and p95 over the
held-out notes (and over the PEP texts, which are long).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lab import cronista_data as data

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("trigger", "change", "alternatives_tried", "consequences")
PEPS = ROOT.parent / "shared" / "data" / "external" / "peps" / "texts"
_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def token_f1(pred: str, gold: str) -> float:
    """SQuAD-style token F1 of two strings (1.0 when both are empty)."""
    p, g = tokens(pred or ""), tokens(gold or "")
    if not p and not g:
        return 1.0
    if not p or not g:
        return 0.0
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def exact(pred: str, gold: str) -> float:
    return float(" ".join((pred or "").split()) == " ".join((gold or "").split()))


def gold_summary(note: dict[str, Any]) -> str:
    from evomem.domain.cronista import sentences

    text = note["text"]
    spans = [(a, b) for a, b, role in data.clause_spans(note) if role in data.FIELD_OF_ROLE]
    out, pos = [], 0
    for s in sentences(text):
        i = text.find(s, pos)
        pos = i + len(s) if i >= 0 else pos
        if i >= 0 and any(a < i + len(s) and b > i for a, b in spans):
            out.append(s)
    return " ".join(out)


# ---------------------------------------------------------------------------- PEP sections

_ROLE_OF_HEADING = (
    (re.compile(r"^motivation\b", re.I), "trigger"),
    (re.compile(r"^(specification|proposal|the proposal|proposed (change|solution|specification))\b", re.I), "change"),
    (
        re.compile(r"^(rejected (ideas|alternatives|proposals)|alternatives?( considered| approaches)?)\b", re.I),
        "alternatives_tried",
    ),
    (re.compile(r"^(backwards?[ -]compatibility|consequences)\b", re.I), "consequences"),
)


def _top_sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, body lines) of the top-level sections (headings underlined with '=')."""
    lines = text.splitlines()
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            line.strip()
            and not line.startswith(" ")
            and re.fullmatch(r"=+", nxt.strip() or "x")
            and len(nxt.strip()) >= 3
        ):
            out.append((line.strip(), []))
            i += 2
            continue
        if out:
            out[-1][1].append(line)
        i += 1
    return out


def _prose_paragraphs(body: list[str]) -> list[str]:
    paras: list[list[str]] = [[]]
    for line in body:
        if line.strip():
            paras[-1].append(line)
        elif paras[-1]:
            paras.append([])
    out = []
    for p in paras:
        if not p:
            continue
        if len(p) == 2 and re.fullmatch(r"[-~^\"'`=+*#]{3,}", p[1].strip()):
            continue  # a sub-heading
        if p[0].startswith((" ", "\t", "..", "::", "+", "|", "=")) or p[0].strip().startswith(">>>"):
            continue  # code, directives, tables, quotes
        text = " ".join(line.strip() for line in p)
        if text.endswith("::"):
            text = text[:-1]
        if len(tokens(text)) >= 5:
            out.append(text)
    return out


def pep_texts(folder: Path, paragraphs: int = 2, limit: int | None = None) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(folder.glob("pep-*.rst")) + sorted(folder.glob("pep-*.txt")):
        sections: dict[str, str] = {}
        order: list[str] = []
        for heading, body in _top_sections(path.read_text(encoding="utf-8", errors="replace")):
            role = next((r for rx, r in _ROLE_OF_HEADING if rx.search(heading)), None)
            if role is None or role in sections:
                continue
            paras = _prose_paragraphs(body)[:paragraphs]
            if paras:
                sections[role] = "\n\n".join(paras)
                order.append(role)
        if "trigger" in sections and "change" in sections:
            docs.append({"id": path.stem, "text": "\n\n".join(sections[r] for r in order), "gold": sections})
    return docs[:limit] if limit else docs


# ---------------------------------------------------------------------------- scoring


def _percentile(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return 0.0
    k = max(0, min(len(s) - 1, round(q * (len(s) - 1))))
    return s[k]


def score_notes(
    extract: Callable[[str], Any], notes: list[dict[str, Any]], analyse: Callable[[str], Any] | None
) -> dict[str, Any]:
    sums: dict[str, list[float]] = {}
    for note in notes:
        gold = data.gold_fields(note)
        got = analyse(note["text"]) if analyse else None
        ex = got.extraction if got is not None else extract(note["text"])
        for name in FIELDS:
            sums.setdefault(f"{name}.exact", []).append(exact(getattr(ex, name), gold[name]))
            sums.setdefault(f"{name}.f1", []).append(token_f1(getattr(ex, name), gold[name]))
        gs = gold_summary(note)
        sums.setdefault("summary.exact", []).append(exact(ex.summary, gs))
        sums.setdefault("summary.f1", []).append(token_f1(ex.summary, gs))
        for kind in data.SPAN_KINDS:
            want = (note.get("spans") or {}).get(kind) or ""
            pred = (got.spans.get(kind) or "") if got is not None else ""
            sums.setdefault(f"{kind}.exact", []).append(exact(pred, want))
            sums.setdefault(f"{kind}.f1", []).append(token_f1(pred, want))
    return {k: round(statistics.fmean(v), 4) for k, v in sums.items()} | {"n": len(notes)}


def score_peps(extract: Callable[[str], Any], docs: list[dict[str, Any]]) -> dict[str, Any]:
    sums: dict[str, list[float]] = {}
    for doc in docs:
        ex = extract(doc["text"])
        for name in FIELDS:
            if name not in doc["gold"]:
                continue
            sums.setdefault(f"{name}.exact", []).append(exact(getattr(ex, name), doc["gold"][name]))
            sums.setdefault(f"{name}.f1", []).append(token_f1(getattr(ex, name), doc["gold"][name]))
    out: dict[str, Any] = {k: round(statistics.fmean(v), 4) for k, v in sums.items()}
    out["n"] = len(docs)
    out["n_per_field"] = {name: len(sums.get(f"{name}.f1", [])) for name in FIELDS}
    return out


def latency(extract: Callable[[str], Any], texts: list[str], warmup: int = 5) -> dict[str, float]:
    for t in texts[:warmup]:
        extract(t)
    times, cpu = [], []
    for t in texts:
        t0, c0 = time.perf_counter(), time.thread_time()
        extract(t)
        cpu.append((time.thread_time() - c0) * 1000)
        times.append((time.perf_counter() - t0) * 1000)
    return {
        "p50_ms": round(_percentile(times, 0.5), 2),
        "p95_ms": round(_percentile(times, 0.95), 2),
        # CPU time of the calling thread (onnxruntime runs on it with one thread): what the note
        # costs without the waiting a loaded machine adds
        "cpu_p50_ms": round(_percentile(cpu, 0.5), 2),
        "cpu_p95_ms": round(_percentile(cpu, 0.95), 2),
        "n": len(times),
    }


def _fp32_dir(fp32: Path, tmp: Path) -> Path:
    """A model folder holding the fp32 graph (its sha256 taken from the committed pins)."""
    import shutil

    from evomem.adapters.models import onnx_cronista as oc

    pins = json.loads((oc.DEFAULT_MODEL_DIR / "pins.json").read_text())
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(fp32, tmp / "model.onnx")
    shutil.copyfile(oc.DEFAULT_MODEL_DIR / "tokenizer.json", tmp / "tokenizer.json")
    sha = dict(pins["sha256"])
    sha["model.onnx"] = sha["model.fp32.onnx"]
    (tmp / "pins.json").write_text(json.dumps({**pins, "sha256": sha}))
    return tmp


def run(args: argparse.Namespace) -> dict[str, Any]:
    from evomem.adapters.models.onnx_cronista import OnnxCronista
    from evomem.domain.cronista import LiteCronista

    notes = data.load_notes(args.eval)
    docs = pep_texts(Path(args.peps), args.pep_paragraphs, args.pep_limit) if Path(args.peps).is_dir() else []
    backends: dict[str, Any] = {"lite": LiteCronista(), "onnx-int8": OnnxCronista(threads=1)}
    if args.fp32 and Path(args.fp32).is_file():
        backends["onnx-fp32"] = OnnxCronista(
            _fp32_dir(Path(args.fp32), ROOT / "build" / "cronista-fp32-dir"), threads=1
        )
    t0 = time.time()
    report: dict[str, Any] = {
        "eval_set": str(Path(args.eval).relative_to(ROOT)) if Path(args.eval).is_relative_to(ROOT) else args.eval,
        "eval_notes": len(notes),
        "eval_styles": dict(Counter(n.get("style", "?") for n in notes)),
        "pep_texts": len(docs),
        "pep_paragraphs_per_section": args.pep_paragraphs,
        "machine": f"{platform.machine()}, python {platform.python_version()}",
        "backends": {},
    }
    for name, backend in backends.items():
        analyse = getattr(backend, "analyse", None)
        if hasattr(backend, "load"):
            lt = time.perf_counter()
            backend.load()
            load_s = round(time.perf_counter() - lt, 2)
        else:
            load_s = 0.0
        entry = {
            "extractor": backend.name,
            "load_seconds": load_s,
            "held_out": score_notes(backend.extract, notes, analyse),
            "peps": score_peps(backend.extract, docs) if docs else {},
            "latency_notes": latency(backend.extract, [n["text"] for n in notes]),
            "latency_peps": latency(backend.extract, [d["text"] for d in docs], warmup=2) if docs else {},
        }
        report["backends"][name] = entry
        print(f"{name}: done ({time.time() - t0:.0f}s)", file=sys.stderr, flush=True)
    report["seconds"] = round(time.time() - t0, 1)
    report["load"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    from evomem.adapters.models import onnx_cronista

    report["decode"] = onnx_cronista.DECODE
    return report


def markdown(r: dict[str, Any]) -> str:
    names = list(r["backends"])
    styles = ", ".join(f"{k} {v}" for k, v in sorted(r["eval_styles"].items()))
    out = [
        "# Cronista: lite against the onnx model",
        "",
        f"Held-out set: `{r['eval_set']}`, {r['eval_notes']} notes ({styles}); "
        f"PEP texts: {r['pep_texts']} (first {r['pep_paragraphs_per_section']} prose paragraphs of each mapped "
        "section). "
        "Never trained or tuned on. Written by `python -m lab.cronista_eval`.",
        "",
        "## Held-out notes: exact match / token F1",
        "",
        "| field | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---" for _ in names) + " |",
    ]
    rows = [*FIELDS, "summary", *data.SPAN_KINDS]
    for f in rows:
        cells = []
        for n in names:
            h = r["backends"][n]["held_out"]
            e, f1 = h.get(f"{f}.exact"), h.get(f"{f}.f1")
            cells.append("—" if (n == "lite" and f in data.SPAN_KINDS) else f"{e:.3f} / {f1:.3f}")
        out.append(f"| {f} | " + " | ".join(cells) + " |")
    out += [
        "",
        "lite extracts no spans (—); scored as empty answers it would get: "
        + ", ".join(f"{k} {r['backends']['lite']['held_out'][k + '.exact']:.3f}" for k in data.SPAN_KINDS)
        + " exact (the share of notes without that span).",
        "",
    ]
    if r["pep_texts"]:
        out += [
            "## PEP sections: exact match / token F1",
            "",
            "| field (section) | PEPs | " + " | ".join(names) + " |",
            "| --- | --- | " + " | ".join("---" for _ in names) + " |",
        ]
        label = {
            "trigger": "trigger (Motivation)",
            "change": "change (Specification / Proposal)",
            "alternatives_tried": "alternatives tried (Rejected Ideas / Alternatives)",
            "consequences": "consequences (Backwards Compatibility / Consequences)",
        }
        for f in FIELDS:
            npf = r["backends"][names[0]]["peps"]["n_per_field"][f]
            cells = [
                f"{r['backends'][n]['peps'][f + '.exact']:.3f} / {r['backends'][n]['peps'][f + '.f1']:.3f}"
                for n in names
            ]
            out.append(f"| {label[f]} | {npf} | " + " | ".join(cells) + " |")
        out.append("")
    out += [
        "## Latency per note (in process, one thread)",
        "",
        "| backend | extractor | load s | notes p50 ms | notes p95 ms | notes CPU p50 ms | notes CPU p95 ms "
        "| PEP texts p50 ms | PEP texts p95 ms |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for n in names:
        b = r["backends"][n]
        lp = b.get("latency_peps") or {}
        out.append(
            f"| {n} | `{b['extractor']}` | {b['load_seconds']} | "
            f"{b['latency_notes']['p50_ms']} | {b['latency_notes']['p95_ms']} | "
            f"{b['latency_notes']['cpu_p50_ms']} | {b['latency_notes']['cpu_p95_ms']} | "
            f"{lp.get('p50_ms', '—')} | {lp.get('p95_ms', '—')} |"
        )
    out += [
        "",
        "Wall times include the waiting of a machine shared with other jobs; CPU times are the calling "
        "thread's (onnxruntime runs the graph on it, one thread).",
        "",
        f"Machine: {r['machine']} (2 shared cores, load {r.get('load', '?')}); clause decoding "
        f"`{r.get('decode', '?')}`; run took {r['seconds']} s.",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval", default=str(data.EVAL))
    ap.add_argument("--peps", default=str(PEPS))
    ap.add_argument("--pep-paragraphs", type=int, default=2)
    ap.add_argument("--pep-limit", type=int, default=None)
    ap.add_argument("--fp32", default=str(ROOT / "build" / "cronista" / "model.fp32.onnx"))
    ap.add_argument("--out", default=str(ROOT / "lab" / "results" / "cronista"))
    args = ap.parse_args(argv)
    report = run(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
