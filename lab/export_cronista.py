"""Export the trained cronista weights to ONNX (fp32 and int8) and pin their sha256.

    python lab/export_cronista.py --weights build/cronista/weights.npz \
        --out build/lab/cronista [--fp32-out build/cronista/model.fp32.onnx]
    python lab/export_cronista.py --mask-only services/evomem/adapters/models/cronista
        # an int8 model.onnx exported before the masking: mask it in place and re-pin

The export goes to ``build/lab/cronista`` (``--out``); ``python -m lab.handoff`` puts it into
the product (``services/evomem/adapters/models/cronista``) with its sha256 and provenance.

The graph is written node by node with ``onnx.helper`` (opset 17: LayerNormalization, Erf
GELU), the same computation as ``lab/train_cronista.py``'s forward pass; the export fails
unless onnxruntime's outputs match that forward pass (fp32: max |diff| < 1e-3) and the int8
graph tags the check notes the same way. Tensor names and shapes are fixed for Triton:

    input_ids int64 [batch, tokens], attention_mask int64 [batch, tokens]
    -> role_logits float32 [batch, tokens, 11], span_logits float32 [batch, tokens, 9]

int8: ``onnxruntime.quantization.quantize_dynamic`` (weights of MatMul and of the embedding
Gather as int8, activations quantized on the fly), then ``mask_padded_activations``: every
activation is multiplied by the attention mask before it is quantized, so padding positions
are zeros, which never move a per-tensor quantization range (it always includes 0). Without
that, a row's logits depend on how far it was padded (up to 2.7 logits on the held-out notes),
and padding to Triton's length buckets, or next to a longer window, changed fields. Writes
``model.onnx`` (int8, the committed file), ``tokenizer.json`` and ``pins.json`` into ``--out``; the fp32 graph goes to
``--fp32-out`` (not committed; its sha256 is pinned in ``pins.json`` too).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "services"), str(ROOT), str(ROOT / "lab")]

import numpy as np  # noqa: E402

from evomem.adapters.models import onnx_cronista as oc  # noqa: E402
from evomem.adapters.models.loader import sha256_file  # noqa: E402

HIDDEN, HEADS, LAYERS, EPS = 384, 12, 6, 1e-12
OPSET = 17
TOKENIZER = ROOT / "services/evomem/adapters/models/all-MiniLM-L6-v2/tokenizer.json"
CHECK_NOTES = [
    "We moved the ledger to SQLite because Postgres was overkill for a single writer. "
    "We tried DuckDB but it lacked concurrent writers. As a result, backups are now a file copy.",
    "ci: pin node to 20.11 until the esbuild segfault is fixed",
    "hey, anyone know why the nightly build is red again?",
]


class Graph:
    """An ONNX graph written node by node (names numbered in order)."""

    def __init__(self, w: dict[str, np.ndarray]) -> None:
        self.w = w
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.counter = 0

    def init(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def const(self, value: np.ndarray | list[int] | float, dtype: type = np.int64) -> str:
        self.counter += 1
        return self.init(f"const_{self.counter}", np.asarray(value, dtype=dtype))

    def node(self, op: str, inputs: list[str], **attrs: object) -> str:
        from onnx import helper

        self.counter += 1
        out = f"{op.lower()}_{self.counter}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{self.counter}", **attrs))
        return out

    def dense(self, x: str, name: str) -> str:
        wt = self.init(name + ".weight_t", self.w[name + ".weight"].T)
        return self.node("Add", [self.node("MatMul", [x, wt]), self.init(name + ".bias", self.w[name + ".bias"])])

    def ln(self, x: str, name: str) -> str:
        w = self.w
        return self.node(
            "LayerNormalization",
            [x, self.init(name + ".weight", w[name + ".weight"]), self.init(name + ".bias", w[name + ".bias"])],
            axis=-1,
            epsilon=EPS,
        )

    def encoder(self, ids: str, mask: str, types: str | None = None) -> str:
        """BERT's last hidden states [batch, tokens, 384] (``train_cronista.encode``); ``types``:
        a token type input (None: type 0 everywhere, as the cronista)."""
        from onnx import TensorProto

        g, w = self, self.w
        tokens = g.node("Slice", [g.node("Shape", [ids]), g.const([1]), g.const([2])])  # [tokens], 1-D
        x = g.node("Gather", [g.init("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"]), ids])
        pos_table = g.init("embeddings.position_embeddings.weight", w["embeddings.position_embeddings.weight"])
        pos = g.node("Slice", [pos_table, g.const([0]), tokens, g.const([0])])  # the first `tokens` rows
        type_table = w["embeddings.token_type_embeddings.weight"]
        if types is None:
            typed = g.init("embeddings.token_type_0", type_table[0])
        else:
            typed = g.node("Gather", [g.init("embeddings.token_type_embeddings.weight", type_table), types])
        x = g.node("Add", [g.node("Add", [x, pos]), typed])
        x = g.ln(x, "embeddings.LayerNorm")
        maskf = g.node("Cast", [mask], to=TensorProto.FLOAT)
        bias = g.node("Mul", [g.node("Sub", [g.const(1.0, np.float32), maskf]), g.const(oc_mask_neg(), np.float32)])
        bias = g.node("Unsqueeze", [bias, g.const([1, 2])])  # [batch, 1, 1, tokens]
        hd = HIDDEN // HEADS
        split_shape = g.const([0, 0, HEADS, hd])
        merge_shape = g.const([0, 0, HIDDEN])
        scale = g.const(1.0 / math.sqrt(hd), np.float32)
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."

            def heads(z: str) -> str:
                return g.node("Transpose", [g.node("Reshape", [z, split_shape])], perm=[0, 2, 1, 3])

            q = heads(g.dense(x, p + "attention.self.query"))
            k = g.node(
                "Transpose", [g.node("Reshape", [g.dense(x, p + "attention.self.key"), split_shape])], perm=[0, 2, 3, 1]
            )
            v = heads(g.dense(x, p + "attention.self.value"))
            scores = g.node("Add", [g.node("Mul", [g.node("MatMul", [q, k]), scale]), bias])
            att = g.node("Softmax", [scores], axis=-1)
            ctx = g.node("Reshape", [g.node("Transpose", [g.node("MatMul", [att, v])], perm=[0, 2, 1, 3]), merge_shape])
            x = g.ln(g.node("Add", [x, g.dense(ctx, p + "attention.output.dense")]), p + "attention.output.LayerNorm")
            h = g.dense(x, p + "intermediate.dense")
            e = g.node("Erf", [g.node("Mul", [h, g.const(1.0 / math.sqrt(2.0), np.float32)])])
            h = g.node(
                "Mul", [g.node("Mul", [h, g.node("Add", [e, g.const(1.0, np.float32)])]), g.const(0.5, np.float32)]
            )
            x = g.ln(g.node("Add", [x, g.dense(h, p + "output.dense")]), p + "output.LayerNorm")
        return x


def build_graph(w: dict[str, np.ndarray]) -> bytes:
    import onnx
    from onnx import TensorProto, helper

    g = Graph(w)
    x = g.encoder("input_ids", "attention_mask")
    role = g.node(
        "Add",
        [
            g.node("MatMul", [x, g.init("head.role.weight", w["head.role.weight"])]),
            g.init("head.role.bias", w["head.role.bias"]),
        ],
    )
    span = g.node(
        "Add",
        [
            g.node("MatMul", [x, g.init("head.span.weight", w["head.span.weight"])]),
            g.init("head.span.bias", w["head.span.bias"]),
        ],
    )
    g.nodes.append(helper.make_node("Identity", [role], ["role_logits"], name="role_logits"))
    g.nodes.append(helper.make_node("Identity", [span], ["span_logits"], name="span_logits"))
    graph = helper.make_graph(
        g.nodes,
        "cronista",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [
            helper.make_tensor_value_info("role_logits", TensorProto.FLOAT, ["batch", "tokens", len(oc.ROLE_LABELS)]),
            helper.make_tensor_value_info("span_logits", TensorProto.FLOAT, ["batch", "tokens", len(oc.SPAN_LABELS)]),
        ],
        g.inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="evomem-export-cronista"
    )
    model.ir_version = 8  # readable by onnxruntime >= 1.10 and Triton's ORT backend
    model.doc_string = (
        f"{oc.MODEL_NAME}-{oc.MODEL_VERSION}: role labels {list(oc.ROLE_LABELS)}; span labels {list(oc.SPAN_LABELS)}"
    )
    onnx.checker.check_model(model)
    return model.SerializeToString()


def oc_mask_neg() -> float:
    from train_cronista import MASK_NEG

    return MASK_NEG


MASK_AXIS = "pad_mask_axis"
MASK_3D = "pad_mask_3d"


def mask_padded_activations(model):  # type: ignore[no-untyped-def]
    """Multiply the input of every ``DynamicQuantizeLinear`` by the attention mask ([batch, tokens, 1]).

    ``quantize_dynamic`` quantizes each activation tensor with one scale from its min and max,
    padding positions included, so padding changed the real tokens' results. Zeros never move
    that range (DynamicQuantizeLinear's range always includes 0), so with padding positions
    zeroed a row gives the same logits however far it is padded: bit for bit on the held-out
    notes. Real tokens are multiplied by 1.0 (exact), so an unpadded row is unchanged. The
    activations are [batch, tokens, hidden] (``build_graph``). Idempotent."""
    from onnx import TensorProto, helper

    graph = model.graph
    if any(n.output and n.output[0] == MASK_3D for n in graph.node):
        return model, 0
    nodes = list(graph.node)
    out = [
        helper.make_node("Cast", ["attention_mask"], ["pad_mask_f"], to=TensorProto.FLOAT, name="pad_mask_cast"),
        helper.make_node("Unsqueeze", ["pad_mask_f", MASK_AXIS], [MASK_3D], name="pad_mask_unsqueeze"),
    ]
    graph.initializer.append(helper.make_tensor(MASK_AXIS, TensorProto.INT64, [1], [-1]))
    masked = 0
    for n in nodes:
        if n.op_type == "DynamicQuantizeLinear":
            x = n.input[0]
            out.append(helper.make_node("Mul", [x, MASK_3D], [x + "_pad_masked"], name=f"{n.name or x}_pad_mask"))
            n.input[0] = x + "_pad_masked"
            masked += 1
        out.append(n)
    del graph.node[:]
    graph.node.extend(out)
    return model, masked


def mask_file(path: Path) -> int:
    import onnx

    model, masked = mask_padded_activations(onnx.load(str(path)))
    if masked:
        onnx.checker.check_model(model)
        onnx.save(model, str(path))
    return masked


def pin_runtime(out: Path, sha: str) -> None:
    if out.resolve() == oc.DEFAULT_MODEL_DIR.resolve():
        # The packaged folder's pin is compiled into the runtime too, so that swapping the folder's
        # model *and* pins.json is still caught.
        src = Path(oc.__file__)
        code = src.read_text()
        new = re.sub(r'"model\.onnx": "[0-9a-f]*"', f'"model.onnx": "{sha}"', code, count=1)
        if new != code:
            src.write_text(new)
            print(f"pinned model.onnx in {src.relative_to(ROOT)}")


def mask_only(folder: Path) -> int:
    """Mask an already exported int8 model in place and update its pins (pins.json, the runtime)."""
    int8 = folder / "model.onnx"
    masked = mask_file(int8)
    print(f"{int8}: {masked} DynamicQuantizeLinear inputs masked" if masked else f"{int8}: already masked")
    pins = json.loads((folder / "pins.json").read_text())
    pins["sha256"]["model.onnx"] = sha256_file(int8)
    pins["bytes"]["model.onnx"] = int8.stat().st_size
    pins["padding_masked"] = True
    (folder / "pins.json").write_text(json.dumps(pins, indent=2) + "\n")
    pin_runtime(folder, pins["sha256"]["model.onnx"])
    print(json.dumps(pins["sha256"], indent=2))
    return 0


def quantize_into(fp32: Path, out: Path) -> Path:
    """The int8 graph of ``fp32`` as ``out/model.onnx`` (MatMul and embedding Gather weights int8,
    padding masked before every quantized activation), with the tokenizer beside it."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out.mkdir(parents=True, exist_ok=True)
    int8 = out / "model.onnx"
    quantize_dynamic(
        str(fp32), str(int8), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul", "Gather"], per_channel=False
    )
    print(f"int8: {mask_file(int8)} DynamicQuantizeLinear inputs masked (padding-invariant)")
    shutil.copyfile(TOKENIZER, out / "tokenizer.json")
    return int8


def session(path: Path):  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def training_of(meta: dict[str, Any], train_notes: Path) -> dict[str, Any]:
    """What ``pins.json`` says of the training: the trainer's ``train_meta.json`` and the data as
    ``lab.handoff`` reads it, ``data_files`` (the hand-written notes) and ``sources`` (the generated
    notes, ``gen-cronista-<seed>-n<n>``: ``lab.cronista_data.generated``, made again from their seed)."""
    generated = [f"gen-cronista-{meta['generated_seed']}-n{meta['generated_n']}"] if meta.get("generated_notes") else []
    return {**meta, "data_files": [str(train_notes.resolve().relative_to(ROOT))], "sources": generated}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", default=str(ROOT / "build/cronista/weights.npz"))
    ap.add_argument("--out", default=str(ROOT / "build/lab/cronista"), help="lab.handoff takes it from there")
    ap.add_argument("--fp32-out", default=str(ROOT / "build/cronista/model.fp32.onnx"))
    ap.add_argument("--mask-only", default="", help="mask an exported int8 model folder in place (no weights)")
    args = ap.parse_args(argv)
    if args.mask_only:
        return mask_only(Path(args.mask_only))

    import jax.numpy as jnp
    import train_cronista as tc
    from tokenizers import Tokenizer

    w = dict(np.load(args.weights))
    meta_file = Path(args.weights).with_name("train_meta.json")  # written by lab/train_cronista.py
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    fp32 = Path(args.fp32_out)
    fp32.parent.mkdir(parents=True, exist_ok=True)
    fp32.write_bytes(build_graph(w))

    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.no_truncation()
    tok.no_padding()
    params = {k: jnp.asarray(v) for k, v in w.items()}
    sess = session(fp32)
    worst = 0.0
    for text in [*CHECK_NOTES, " ".join(CHECK_NOTES) * 6]:
        wins = oc.windows(tok, text)
        ids, mask = oc.batch_arrays([x.ids for x in wins])
        want = [np.asarray(a) for a in tc.forward(params, jnp.asarray(ids), jnp.asarray(mask, dtype=jnp.float32))]
        got = sess.run(list(oc.OUTPUT_NAMES), {"input_ids": ids, "attention_mask": mask})
        for a, b in zip(want, got, strict=True):
            for r, win in enumerate(wins):  # padding rows are not compared
                n = len(win.ids) + 2
                worst = max(worst, float(np.abs(a[r, :n] - b[r, :n]).max()))
    print(f"fp32 ONNX vs the training forward pass: max |diff| {worst:.2e}")
    if worst > 1e-3:
        raise SystemExit("the ONNX graph does not compute what was trained")

    out = Path(args.out)
    int8 = quantize_into(fp32, out)
    q = session(int8)
    agree = total = 0
    from lab import cronista_data

    # int8 against fp32 on training notes (never the held-out ones): the share of tokens tagged alike
    for text in CHECK_NOTES + [n["text"] for n in cronista_data.load_notes(cronista_data.TRAIN)[:150]]:
        wins = oc.windows(tok, text)
        ids, mask = oc.batch_arrays([x.ids for x in wins])
        a = sess.run(["role_logits"], {"input_ids": ids, "attention_mask": mask})[0].argmax(-1)
        b = q.run(["role_logits"], {"input_ids": ids, "attention_mask": mask})[0].argmax(-1)
        agree += int((a == b)[mask == 1].sum())
        total += int((mask == 1).sum())
    print(f"int8 vs fp32 role tags on 150 training notes: {agree}/{total} tokens agree")
    pins = {
        "model": f"{oc.MODEL_NAME}-{oc.MODEL_VERSION}",
        "sha256": {
            "model.onnx": sha256_file(int8),
            "tokenizer.json": sha256_file(out / "tokenizer.json"),
            "model.fp32.onnx": sha256_file(fp32),
        },
        "bytes": {"model.onnx": int8.stat().st_size, "model.fp32.onnx": fp32.stat().st_size},
        "inputs": {"input_ids": ["batch", "tokens"], "attention_mask": ["batch", "tokens"]},
        "outputs": {
            "role_logits": ["batch", "tokens", len(oc.ROLE_LABELS)],
            "span_logits": ["batch", "tokens", len(oc.SPAN_LABELS)],
        },
        "role_labels": list(oc.ROLE_LABELS),
        "span_labels": list(oc.SPAN_LABELS),
        "max_tokens": oc.MAX_TOKENS,
        "opset": OPSET,
        "fp32_max_abs_diff_vs_training": worst,
        "int8_role_tag_agreement": f"{agree}/{total}",
        "padding_masked": True,
        "training": training_of(meta, cronista_data.TRAIN),
    }
    (out / "pins.json").write_text(json.dumps(pins, indent=2) + "\n")
    pin_runtime(out, pins["sha256"]["model.onnx"])
    print(json.dumps(pins, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
