"""The cronista model on a GPU machine: latency at batch 1, throughput at batch 64, a fine-tuning run.

    make gpu-check          # = python lab/gpu_check.py --out build/gpu-check

For a machine with an NVIDIA GPU, torch (CUDA), onnxruntime (CPU), tokenizers and numpy; no
network, no Docker, no Triton. Under 10 minutes. What it does:

1. Reads the committed int8 graph ``services/evomem/adapters/models/cronista/model.onnx``
   (sha256 checked against ``pins.json``) and dequantizes its weights into the same BERT
   computation written in torch (``forward`` below mirrors ``lab/export_cronista.py``).
   ``--weights build/cronista/weights.npz`` uses the fp32 training weights instead.
2. Parity: the torch model on the GPU against onnxruntime on the CPU, on the held-out notes'
   texts: share of words whose role tag agrees.
3. Latency per note at batch 1 (p50/p95 over real note texts, tokenization included and
   excluded), throughput at batch 64 (notes/s), in fp32 and fp16, CUDA-synchronised timings.
4. Fine-tunes on the GPU for ``--train-seconds`` (the same loss as ``lab/train_cronista.py``,
   on ``lab/cronista/train_notes.jsonl`` plus the generated notes) and reports steps/s and the
   loss curve: the speed-up over the CPU run of ``make train-cronista``.

Writes ``gpu_check.json`` (and prints it). Numbers are measurements, not asserts.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "services"), str(ROOT)]

import numpy as np  # noqa: E402

from evomem.adapters.models import onnx_cronista as oc  # noqa: E402
from evomem.adapters.models.loader import sha256_file  # noqa: E402

HIDDEN, HEADS, LAYERS, EPS = 384, 12, 6, 1e-12
MASK_NEG = -10000.0


def weights_from_onnx(path: Path) -> dict[str, np.ndarray]:
    """fp32 weights of the graph, by initializer name (int8 ones dequantized: (q - zero_point) * scale)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    raw = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out: dict[str, np.ndarray] = {}
    for name, value in raw.items():
        if name.endswith("_quantized"):
            base = name[: -len("_quantized")]
            scale = raw[base + "_scale"].astype(np.float32)
            zp = raw.get(base + "_zero_point", np.zeros_like(scale)).astype(np.float32)
            out[base] = (value.astype(np.float32) - zp) * scale
        elif not name.endswith(("_scale", "_zero_point")):
            out[name] = value
    return out


def weights_from_npz(path: Path) -> dict[str, np.ndarray]:
    """The training weights, renamed to the graph's initializer names."""
    w = dict(np.load(path))
    out = {}
    for k, v in w.items():
        if k.endswith(".weight") and v.ndim == 2 and not k.startswith(("embeddings.", "head.")):
            out[k + "_t"] = v.T.copy()
        elif k == "embeddings.token_type_embeddings.weight":
            out["embeddings.token_type_0"] = v[0]
        else:
            out[k] = v
    return out


class Ops:
    """The few array operations ``forward`` needs, for torch (GPU run) or numpy (a CPU check of this file)."""

    def __init__(self, lib: str) -> None:
        self.lib = lib
        if lib == "torch":
            import torch

            self.t = torch

    def ln(self, x: Any, g: Any, b: Any) -> Any:
        if self.lib == "torch":
            return self.t.nn.functional.layer_norm(x, (x.shape[-1],), g, b, EPS)
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + EPS) * g + b

    def gelu(self, x: Any) -> Any:
        if self.lib == "torch":
            return self.t.nn.functional.gelu(x)  # exact (erf) GELU, as in the graph
        from scipy.special import erf

        return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))

    def softmax(self, x: Any) -> Any:
        if self.lib == "torch":
            return self.t.softmax(x, dim=-1)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def perm(self, x: Any, p: tuple[int, ...]) -> Any:
        return x.permute(*p) if self.lib == "torch" else x.transpose(*p)


def forward(w: dict[str, Any], ids: Any, mask: Any, ops: Ops, dropout: float = 0.0) -> tuple[Any, Any]:
    """The graph of export_cronista.py: BERT (post-LN) + role and span heads. ``mask`` is float."""

    def drop(x: Any) -> Any:
        if dropout and ops.lib == "torch":
            return ops.t.nn.functional.dropout(x, dropout, training=True)
        return x

    b, t = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t][None]
    x = ops.ln(x + w["embeddings.token_type_0"], w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    bias = ((1.0 - mask) * MASK_NEG)[:, None, None, :]
    hd = HIDDEN // HEADS

    def dense(z: Any, name: str) -> Any:
        return z @ w[name + ".weight_t"] + w[name + ".bias"]

    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        q = ops.perm(dense(x, p + "attention.self.query").reshape(b, t, HEADS, hd), (0, 2, 1, 3))
        k = ops.perm(dense(x, p + "attention.self.key").reshape(b, t, HEADS, hd), (0, 2, 3, 1))
        v = ops.perm(dense(x, p + "attention.self.value").reshape(b, t, HEADS, hd), (0, 2, 1, 3))
        att = ops.softmax((q @ k) * (1.0 / math.sqrt(hd)) + bias)
        ctx = ops.perm(att @ v, (0, 2, 1, 3)).reshape(b, t, HIDDEN)
        x = ops.ln(
            x + drop(dense(ctx, p + "attention.output.dense")),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        h = ops.gelu(dense(x, p + "intermediate.dense"))
        x = ops.ln(
            x + drop(dense(h, p + "output.dense")), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
        )
    x = drop(x)
    return x @ w["head.role.weight"] + w["head.role.bias"], x @ w["head.span.weight"] + w["head.span.bias"]


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[max(0, min(len(s) - 1, round(q * (len(s) - 1))))], 3) if s else 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "build" / "gpu-check"))
    ap.add_argument("--weights", default=None, help="fp32 training weights (.npz) instead of the int8 graph")
    ap.add_argument("--notes", type=int, default=300, help="note texts timed at batch 1")
    ap.add_argument("--train-seconds", type=float, default=120.0)
    ap.add_argument("--cpu-check", action="store_true", help="run the numpy path against onnxruntime and stop")
    args = ap.parse_args(argv)
    started = time.time()
    from tokenizers import Tokenizer

    from lab import cronista_data as data

    mdir = oc.DEFAULT_MODEL_DIR
    pins = oc.pinned_hashes(mdir)
    for name in ("model.onnx", "tokenizer.json"):
        if sha256_file(mdir / name) != pins[name]:
            raise SystemExit(f"{mdir / name} does not match its pinned sha256")
    tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    w_np = weights_from_npz(Path(args.weights)) if args.weights else weights_from_onnx(mdir / "model.onnx")
    texts = [n["text"] for n in data.load_notes(data.EVAL)] + [n["text"] for n in data.load_notes(data.TRAIN)]
    texts = texts[: max(args.notes, 64)]
    cpu = oc.OnnxCronista(threads=4)
    cpu.load()

    def tag_agreement(run: Any) -> float:
        agree = total = 0
        for text in texts[:100]:
            wins = oc.windows(tok, text)
            ids, mask = oc.batch_arrays([x.ids for x in wins])
            want = cpu.infer(ids, mask)[0].argmax(-1)
            got = np.asarray(run(ids, mask)).argmax(-1)
            agree += int((want == got)[mask == 1].sum())
            total += int((mask == 1).sum())
        return round(agree / max(total, 1), 4)

    report: dict[str, Any] = {
        "model": f"{oc.MODEL_NAME}-{oc.MODEL_VERSION}",
        "weights": args.weights or "int8 graph (dequantized)",
    }
    if args.cpu_check:
        ops = Ops("numpy")
        report["numpy_vs_onnxruntime_role_tag_agreement"] = tag_agreement(
            lambda i, m: forward(w_np, i, m.astype(np.float32), ops)[0]
        )
        print(json.dumps(report, indent=2))
        return 0

    import torch

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this check is for a GPU machine (see --cpu-check)")
    dev = torch.device("cuda")
    ops = Ops("torch")
    torch.manual_seed(1234)
    report["device"] = torch.cuda.get_device_name(0)
    report["torch"] = torch.__version__
    report["python"] = platform.python_version()

    def to_dev(w: dict[str, np.ndarray], dtype: Any) -> dict[str, Any]:
        out = {}
        for k, v in w.items():
            t = torch.from_numpy(np.ascontiguousarray(v)).to(dev)
            out[k] = t.to(dtype) if t.is_floating_point() else t
        return out

    def runner(w: dict[str, Any], dtype: Any) -> Any:
        @torch.inference_mode()
        def run(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
            i = torch.from_numpy(ids).to(dev)
            m = torch.from_numpy(mask).to(dev).to(dtype)
            role, _ = forward(w, i, m, ops)
            return role.float().cpu().numpy()

        return run

    def time_batches(w: dict[str, Any], dtype: Any, batch: int, reps: int) -> dict[str, float]:
        rows_all = [oc.windows(tok, t)[0].ids for t in texts]
        times, tok_times = [], []
        for r in range(reps):
            chunk = [texts[(r * batch + j) % len(texts)] for j in range(batch)]
            t0 = time.perf_counter()
            rows = [oc.windows(tok, t)[0].ids for t in chunk]
            ids, mask = oc.batch_arrays(rows)
            t1 = time.perf_counter()
            with torch.inference_mode():
                i = torch.from_numpy(ids).to(dev)
                m = torch.from_numpy(mask).to(dev).to(dtype)
                role, span = forward(w, i, m, ops)
                role.float().cpu(), span.float().cpu()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            times.append((t2 - t0) * 1000)
            tok_times.append((t2 - t1) * 1000)
        del rows_all
        out = {"p50_ms": _pct(times, 0.5), "p95_ms": _pct(times, 0.95), "model_only_p50_ms": _pct(tok_times, 0.5)}
        if batch > 1:
            out["notes_per_s"] = round(batch / (sorted(times)[len(times) // 2] / 1000), 1)
        return out

    for label, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
        w = to_dev(w_np, dtype)
        run = runner(w, dtype)
        for _ in range(10):  # warm-up (CUDA context, kernels)
            run(*oc.batch_arrays([oc.windows(tok, texts[0])[0].ids]))
        report[label] = {
            "role_tag_agreement_with_onnxruntime_cpu": tag_agreement(run),
            "batch1": time_batches(w, dtype, 1, min(args.notes, len(texts))),
            "batch64": time_batches(w, dtype, 64, 30),
        }
        print(json.dumps({label: report[label]}), flush=True)

    # CPU reference in the same run: onnxruntime int8, 1 thread, batch 1.
    one = oc.OnnxCronista(threads=1)
    one.load()
    lat = []
    for t in texts[:100]:
        t0 = time.perf_counter()
        one.extract(t)
        lat.append((time.perf_counter() - t0) * 1000)
    report["onnxruntime_int8_cpu_1thread_extract"] = {"p50_ms": _pct(lat, 0.5), "p95_ms": _pct(lat, 0.95)}

    # Fine-tuning on the GPU: the training script's loss, from these weights, for a fixed time.
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_cronista", ROOT / "scripts" / "train_cronista.py")
    tc = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(tc)  # type: ignore[union-attr]
    notes = data.load_notes(data.TRAIN) * 2 + data.generated(seed=1234, n=40)
    exs = tc.examples(notes, tok)
    params = {k: torch.nn.Parameter(v) for k, v in to_dev(w_np, torch.float32).items() if v.is_floating_point()}
    opt = torch.optim.AdamW(params.values(), lr=3e-5, weight_decay=0.01)
    ce = torch.nn.CrossEntropyLoss(reduction="none")
    steps, losses, t0 = 0, [], time.time()
    epoch = 0
    while time.time() - t0 < args.train_seconds:
        for ids, mask, rl, sl, wt in tc.batches(exs, 64, random.Random(epoch)):
            i = torch.from_numpy(ids.astype(np.int64)).to(dev)
            m = torch.from_numpy(mask).to(dev)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                role, span = forward(params, i, m, ops, dropout=0.1)
            role, span = role.float(), span.float()
            r = torch.from_numpy(rl.astype(np.int64)).to(dev)
            s = torch.from_numpy(sl.astype(np.int64)).to(dev)
            wt_t = torch.from_numpy(wt).to(dev)
            loss = (
                (
                    ce(role.reshape(-1, role.shape[-1]), r.reshape(-1))
                    + ce(span.reshape(-1, span.shape[-1]), s.reshape(-1))
                )
                * wt_t.reshape(-1)
            ).sum() / wt_t.sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params.values(), 1.0)
            opt.step()
            steps += 1
            losses.append(float(loss))
            if time.time() - t0 > args.train_seconds:
                break
        epoch += 1
    torch.cuda.synchronize()
    elapsed = time.time() - t0
    report["fine_tune"] = {
        "windows": len(exs),
        "batch": 64,
        "steps": steps,
        "epochs_started": epoch,
        "seconds": round(elapsed, 1),
        "steps_per_s": round(steps / elapsed, 2),
        "windows_per_s": round(steps * 64 / elapsed, 1),
        "loss_first_10": round(float(np.mean(losses[:10])), 4) if losses else None,
        "loss_last_10": round(float(np.mean(losses[-10:])), 4) if losses else None,
    }
    report["seconds"] = round(time.time() - started, 1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
