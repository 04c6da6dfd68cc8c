"""Write a tiny cronista model folder with random weights, for protocol tests.

    python scripts/make_tiny_cronista.py OUT_DIR [--seed 0]

OUT_DIR gets ``model.onnx`` (about 1 MB), the all-MiniLM-L6-v2 ``tokenizer.json`` the real
model uses, and ``pins.json`` with both files' sha256, the layout of
``services/evomem/adapters/models/cronista/``. The graph has the real model's tensors, so
``OnnxCronista(model_dir=OUT_DIR)`` loads it in process and Triton serves it from a model
repository (``scripts/make_models.py --cronista-dir OUT_DIR``):

    inputs   input_ids       int64  [batch, tokens]
             attention_mask  int64  [batch, tokens]
    outputs  role_logits     float  [batch, tokens, 11]
             span_logits     float  [batch, tokens, 9]

Each token's logits are a random projection of a random embedding of its id (masked tokens
get zeros). Its tags are meaningless: it exists to test the wire protocol, batching, deadlines
and fallbacks of a client, never quality (the tiny GGUF of scripts/make_tiny_gguf.py plays the
same part for the llama.cpp linker). Needs ``numpy`` and ``onnx``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "services" / "evomem" / "adapters" / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
VOCAB = 30522
WIDTH = 8
ROLE_LABELS = 11
SPAN_LABELS = 9


def build(seed: int) -> bytes:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    emb = rng.normal(0, 1, (VOCAB, WIDTH)).astype(np.float32)
    w_role = rng.normal(0, 1, (WIDTH, ROLE_LABELS)).astype(np.float32)
    w_span = rng.normal(0, 1, (WIDTH, SPAN_LABELS)).astype(np.float32)
    # A bias that makes "O" likely on spans, so the tiny model tags short runs, like a real one.
    b_span = np.array([2.0] + [0.0] * (SPAN_LABELS - 1), dtype=np.float32)
    inits = [
        numpy_helper.from_array(emb, "embedding"),
        numpy_helper.from_array(w_role, "w_role"),
        numpy_helper.from_array(w_span, "w_span"),
        numpy_helper.from_array(b_span, "b_span"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis"),
    ]
    nodes = [
        helper.make_node("Gather", ["embedding", "input_ids"], ["tokens"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "last_axis"], ["mask_3d"]),
        helper.make_node("Mul", ["tokens", "mask_3d"], ["masked"]),
        helper.make_node("MatMul", ["masked", "w_role"], ["role_logits"]),
        helper.make_node("MatMul", ["masked", "w_span"], ["span_raw"]),
        helper.make_node("Add", ["span_raw", "b_span"], ["span_logits"]),
    ]
    dims = ["batch", "tokens"]
    graph = helper.make_graph(
        nodes,
        "tiny_cronista",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, dims),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims),
        ],
        [
            helper.make_tensor_value_info("role_logits", TensorProto.FLOAT, [*dims, ROLE_LABELS]),
            helper.make_tensor_value_info("span_logits", TensorProto.FLOAT, [*dims, SPAN_LABELS]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="evomem-tiny")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def write(out: Path, seed: int = 0) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "model.onnx").write_bytes(build(seed))
    shutil.copyfile(TOKENIZER, out / "tokenizer.json")
    pins = {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in ("model.onnx", "tokenizer.json")}
    (out / "pins.json").write_text(json.dumps({"model": f"tiny-random-{seed}", "sha256": pins}, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(write(args.out, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
