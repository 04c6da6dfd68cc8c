"""Choose the cronista's clause decoding ("runs" or "vote") on a development split, never the held-out set.

    python lab/train_cronista.py --out build/cronista-dev --dev 80     # a model that never saw 80 train notes
    python lab/cronista_decode_dev.py --weights build/cronista-dev/weights.npz --dev 80

The development notes are the first ``--dev`` of ``train_notes.jsonl`` in the trainer's seeded
order (the ones that run did not train on). Prints exact match / token F1 per field for each
decoding. Runs in the training environment (jax).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "services"), str(ROOT), str(ROOT / "lab")]

import numpy as np  # noqa: E402

from evomem.adapters.models import onnx_cronista as oc  # noqa: E402
from lab import cronista_data as data  # noqa: E402
from lab.cronista_eval import FIELDS, exact, token_f1  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", default=str(ROOT / "build/cronista-dev/weights.npz"))
    ap.add_argument("--dev", type=int, default=80)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args(argv)
    import jax.numpy as jnp
    import train_cronista as tc
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(oc.DEFAULT_MODEL_DIR / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    hand = data.load_notes(data.TRAIN)
    order = list(range(len(hand)))
    random.Random(args.seed).shuffle(order)
    dev = [hand[i] for i in order[: args.dev]]
    params = {k: jnp.asarray(v) for k, v in np.load(args.weights).items()}
    scores: dict[str, dict[str, list[float]]] = {"runs": {}, "vote": {}}
    for note in dev:
        text = note["text"]
        wins = oc.windows(tok, text)
        if not wins:
            continue
        ids, mask = oc.batch_arrays([w.ids for w in wins])
        width = next(b for b in tc.BUCKETS if ids.shape[1] <= b)
        pi = np.zeros((ids.shape[0], width), np.int32)
        pm = np.zeros((ids.shape[0], width), np.float32)
        pi[:, : ids.shape[1]], pm[:, : ids.shape[1]] = ids, mask
        role, span = (np.asarray(a) for a in tc._jit_forward()(params, jnp.asarray(pi), jnp.asarray(pm)))
        gold = data.gold_fields(note)
        for mode in scores:
            clauses, _ = oc.decode(
                text,
                wins,
                [role[i, 1 : len(w.ids) + 1] for i, w in enumerate(wins)],
                [span[i, 1 : len(w.ids) + 1] for i, w in enumerate(wins)],
                mode=mode,
            )
            got = oc.fields_of(clauses)
            for f in FIELDS:
                scores[mode].setdefault(f + ".exact", []).append(exact(got[f], gold[f]))
                scores[mode].setdefault(f + ".f1", []).append(token_f1(got[f], gold[f]))
    table = {m: {k: round(float(np.mean(v)), 4) for k, v in s.items()} for m, s in scores.items()}
    print(json.dumps({"dev_notes": len(dev), **table}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
