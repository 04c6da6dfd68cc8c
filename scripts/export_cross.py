"""Export the pair cross-encoder to ONNX (int8), calibrate its link threshold, and pin it.

    python scripts/export_cross.py --weights build/cross/weights.npz \
        --calib build/cross/calib_scores.jsonl --out services/evomem/adapters/models/pair-cross

The graph is the cronista's encoder (``export_cronista.Graph.encoder``, the same BERT as
``train_cronista.encode``) with token types, and a linear head on the ``[CLS]`` state:

    input_ids int64 [batch, tokens], token_type_ids int64 [batch, tokens],
    attention_mask int64 [batch, tokens]  ->  logits float32 [batch]

The export fails unless onnxruntime's fp32 logits match the training forward pass (max |diff|
< 1e-3). int8: ``quantize_dynamic`` (MatMul and embedding Gather weights; the head stays fp32),
then the padding mask on every quantized activation (``export_cronista.mask_padded_activations``:
a row's logit does not depend on how far it is padded). The fp32 graph is not committed.

Calibration (``calibrate``): the ``calib`` pairs (scenarios never trained on) give, per note,
the pair model's first choice and the encoder's logit for it; ``link_logit`` is the lowest
logit at which those notes are linked to their gold predecessor with precision >= 0.98 pooled
and on every source with at least ``MIN_GOLD`` gold edges. Written to ``pins.json`` with the
numbers it was set from.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "services"), str(ROOT), str(ROOT / "scripts")]

import numpy as np  # noqa: E402
from export_cronista import OPSET, TOKENIZER, Graph, mask_file, session  # noqa: E402

from evomem.adapters.pinned import sha256_file  # noqa: E402

MODEL_NAME = "pair-cross-minilm-1"
PRECISION = 0.98
MIN_GOLD = 30
INPUTS = ("input_ids", "token_type_ids", "attention_mask")
CHECK_PAIRS = [
    ("We moved the ledger to SQLite; Postgres was overkill.", "The ledger runs on Postgres."),
    ("Standup is at 9:30 now.", "Daily standup happens at 10:00 in room B."),
    ("hey, anyone know why the nightly build is red again?", "CI runs on GitHub Actions."),
]


def build_graph(w: dict[str, np.ndarray]) -> bytes:
    import onnx
    from onnx import TensorProto, helper

    g = Graph(w)
    x = g.encoder("input_ids", "attention_mask", types="token_type_ids")
    cls = g.node("Gather", [x, g.const([0])], axis=1)  # [batch, 1, 384]: the [CLS] state
    # the head as Mul + ReduceSum (over both trailing axes: [batch]), not a MatMul, so int8
    # quantization leaves it in fp32
    z = g.node(
        "ReduceSum",
        [g.node("Mul", [cls, g.init("head.pair.w", w["head.pair.weight"][:, 0])]), g.const([1, 2])],
        keepdims=0,
    )
    z = g.node("Add", [z, g.init("head.pair.bias", w["head.pair.bias"])])
    g.nodes.append(helper.make_node("Identity", [z], ["logits"], name="logits"))
    graph = helper.make_graph(
        g.nodes,
        "pair_cross",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"]) for n in INPUTS],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch"])],
        g.inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="evomem-export-cross"
    )
    model.ir_version = 8
    model.doc_string = f"{MODEL_NAME}: logit that the first text replaces the second ([CLS] a [SEP] b [SEP])"
    onnx.checker.check_model(model)
    return model.SerializeToString()


def arrays(tok: Any, pairs: list[tuple[str, str]]) -> dict[str, np.ndarray]:
    from evomem.adapters.onnx_pair import pair_ids

    rows = [pair_ids(tok.encode(a).ids[1:-1], tok.encode(b).ids[1:-1]) for a, b in pairs]
    width = max(len(ids) for ids, _ in rows)
    out = {n: np.zeros((len(rows), width), np.int64) for n in INPUTS}
    for r, (ids, types) in enumerate(rows):
        out["input_ids"][r, : len(ids)] = ids
        out["token_type_ids"][r, : len(ids)] = types
        out["attention_mask"][r, : len(ids)] = 1
    return out


def _threshold(decisions: list[tuple[float, bool]], precision: float = PRECISION) -> float | None:
    """The lowest logit t at which decisions with logit >= t are right with ``precision`` (None: none is)."""
    tp = fp = 0
    best = None
    for z, ok in sorted(decisions, key=lambda d: -d[0]):
        tp += ok
        fp += not ok
        if tp / (tp + fp) >= precision:
            best = z
    return best


def calibrate(calib: list[dict[str, Any]]) -> dict[str, Any]:
    """Per calibration note, the encoder's logit on the pair model's first choice: the threshold
    for precision >= ``PRECISION`` pooled and on every source with enough gold edges, and what it gives."""
    firsts = [r for r in calib if r["best"]]
    by_source: dict[str, list[tuple[float, bool]]] = {}
    gold: dict[str, int] = {}
    for r in firsts:
        by_source.setdefault(r["source"], []).append((r["logit"], bool(r["label"])))
    for r in calib:
        if r["label"]:
            gold[r["source"]] = gold.get(r["source"], 0) + 1
    pooled = [d for v in by_source.values() for d in v]
    ts = [_threshold(pooled)] + [_threshold(v) for s, v in by_source.items() if gold.get(s, 0) >= MIN_GOLD]
    t = max((x for x in ts if x is not None), default=float("inf")) if all(x is not None for x in ts) else float("inf")
    report = {}
    for s, v in [*by_source.items(), ("all", pooled)]:
        links = [ok for z, ok in v if z >= t]
        g = sum(gold.values()) if s == "all" else gold.get(s, 0)
        report[s] = {
            "notes": len(v),
            "gold": g,
            "links": len(links),
            "precision": round(sum(links) / len(links), 4) if links else None,
            "recall": round(sum(links) / g, 4) if g else None,
        }
    return {"link_logit": t, "precision_target": PRECISION, "calibration": report}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", default=str(ROOT / "build/cross/weights.npz"))
    ap.add_argument("--calib", default=str(ROOT / "build/cross/calib_scores.jsonl"))
    ap.add_argument("--meta", default=str(ROOT / "build/cross/train_meta.json"))
    ap.add_argument("--out", default=str(ROOT / "services/evomem/adapters/models/pair-cross"))
    ap.add_argument("--fp32-out", default=str(ROOT / "build/cross/model.fp32.onnx"))
    args = ap.parse_args(argv)

    import jax.numpy as jnp
    import train_cross as tx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from tokenizers import Tokenizer

    w = dict(np.load(args.weights))
    fp32 = Path(args.fp32_out)
    fp32.parent.mkdir(parents=True, exist_ok=True)
    fp32.write_bytes(build_graph(w))
    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.no_truncation()
    tok.no_padding()
    params = {k: jnp.asarray(v) for k, v in w.items()}
    feeds = arrays(tok, CHECK_PAIRS)
    want = np.asarray(
        tx.logits(
            params,
            jnp.asarray(feeds["input_ids"]),
            jnp.asarray(feeds["token_type_ids"]),
            jnp.asarray(feeds["attention_mask"], dtype=jnp.float32),
        )
    )
    got = session(fp32).run(["logits"], feeds)[0]
    worst = float(np.abs(want - got).max())
    print(f"fp32 ONNX vs the training forward pass: max |diff| {worst:.2e}")
    if worst > 1e-3:
        raise SystemExit("the ONNX graph does not compute what was trained")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    int8 = out / "model.onnx"
    quantize_dynamic(
        str(fp32), str(int8), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul", "Gather"], per_channel=False
    )
    print(f"int8: {mask_file(int8)} DynamicQuantizeLinear inputs masked (padding-invariant)")
    shutil.copyfile(TOKENIZER, out / "tokenizer.json")
    q = session(int8).run(["logits"], feeds)[0]
    print(f"int8 vs fp32 logits on the check pairs: max |diff| {float(np.abs(q - got).max()):.3f}")

    calib = [json.loads(x) for x in Path(args.calib).read_text(encoding="utf-8").splitlines() if x.strip()]
    cal = calibrate(calib)
    print(json.dumps(cal, indent=1))
    meta = json.loads(Path(args.meta).read_text()) if Path(args.meta).exists() else {}
    pins = {
        "model": MODEL_NAME,
        "sha256": {
            "model.onnx": sha256_file(int8),
            "tokenizer.json": sha256_file(out / "tokenizer.json"),
            "model.fp32.onnx": sha256_file(fp32),
        },
        "bytes": {"model.onnx": int8.stat().st_size, "model.fp32.onnx": fp32.stat().st_size},
        "inputs": {n: ["batch", "tokens"] for n in INPUTS},
        "outputs": {"logits": ["batch"]},
        "max_tokens": tx.MAX_TOKENS,
        "opset": OPSET,
        "fp32_max_abs_diff_vs_training": worst,
        "padding_masked": True,
        **cal,
        "training": {k: meta[k] for k in meta if k != "history"} | {"history": meta.get("history")},
    }
    (out / "pins.json").write_text(json.dumps(pins, indent=2) + "\n")
    print(f"wrote {int8} and {out / 'pins.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
