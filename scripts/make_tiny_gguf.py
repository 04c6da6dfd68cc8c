"""Write a tiny llama-architecture GGUF with random weights, for protocol tests.

    python scripts/make_tiny_gguf.py OUT.gguf [--seed 0]

The file (about 1.8 MB) loads in ``python -m llama_cpp.server --model OUT.gguf`` and answers
``/v1/chat/completions``. Its answers are meaningless: it exists to test the wire protocol,
grammar-constrained sampling, timeouts and garbage handling of a client, never quality.

Shape: 2 layers, 128-wide embeddings, 4 heads, 256-wide FFN, float32, a 448-token
SentencePiece-style ("llama") vocabulary: <unk> <s> </s>, the 256 byte-fallback tokens (so
any text tokenizes), the printable ASCII characters and "▁", and the most frequent character
bigrams of a fixed English sample. A small chat template is embedded so the server needs no
``--chat_format``. The output is fully determined by ``--seed``.

Needs only ``numpy`` and the ``gguf`` package (``pip install gguf``).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

VOCAB_SIZE = 448
N_EMBD = 128
N_HEAD = 4
N_LAYER = 2
N_FF = 256
CONTEXT = 4096
SPACE = "▁"  # SentencePiece's word-boundary marker

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

SAMPLE = (
    "The ledger service stores account balances in Postgres with nightly backups. "
    "We moved the search index from OpenSearch to SQLite full text search because it is simpler. "
    'Answer with JSON only: {"decision": "supersedes", "target_id": null, "confidence": 0.5, '
    '"evidence": ["the note", "the candidate"]}. The new decision replaces the old one when the '
    "team switched, migrated, dropped or reverted something about the same subject."
)


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and token types of a 448-token SentencePiece-style vocabulary."""
    import gguf

    tokens: list[str] = ["<unk>", "<s>", "</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    chars = [SPACE] + [chr(c) for c in range(0x21, 0x7F)]
    tokens += chars
    types += [gguf.TokenType.NORMAL] * len(chars)
    text = SAMPLE.replace(" ", SPACE)
    bigrams = Counter(text[i : i + 2] for i in range(len(text) - 1))
    room = VOCAB_SIZE - len(tokens)
    picked = [bg for bg, _ in bigrams.most_common() if bg not in tokens][:room]
    if len(picked) < room:  # pragma: no cover - the sample is long enough
        raise SystemExit(f"sample text yields only {len(picked)} bigrams, need {room}")
    tokens += picked
    types += [gguf.TokenType.NORMAL] * len(picked)
    # Scores rank merges: frequent bigrams merge first; single characters and specials score lowest.
    scores = [0.0] * (3 + 256) + [-1000.0] * len(chars) + [-float(rank) for rank in range(len(picked))]
    return tokens, scores, [int(t) for t in types]


def write_tiny_gguf(path: Path, seed: int = 0) -> Path:
    import gguf

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    tokens, scores, types = vocabulary()
    assert len(tokens) == VOCAB_SIZE

    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_name("evomem-tiny-random")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB_SIZE)
    w.add_file_type(0)  # all float32
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    def rand(*shape: int, std: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    # numpy shapes are (out, in), as the HF converters write them; gguf reverses them for ggml.
    w.add_tensor("token_embd.weight", rand(VOCAB_SIZE, N_EMBD, std=1.0))
    for i in range(N_LAYER):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(f"blk.{i}.attn_k.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(f"blk.{i}.attn_v.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(f"blk.{i}.attn_output.weight", rand(N_EMBD, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", rand(N_FF, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_up.weight", rand(N_FF, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_down.weight", rand(N_EMBD, N_FF))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    w.add_tensor("output.weight", rand(VOCAB_SIZE, N_EMBD, std=1.0))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to write the .gguf file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = write_tiny_gguf(args.out, seed=args.seed)
    print(f"{path} {path.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
