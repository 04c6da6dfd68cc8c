"""Static sentence embeddings: a token -> vector table distilled from all-MiniLM-L6-v2, read with numpy.

    embedder = StaticEmbedder()            # free: nothing is imported or read yet
    vectors = embedder.encode(["we moved the ledger to SQLite"])   # loads on first call
    vectors.shape, vectors.dtype           # (1, 256), float32, each row L2-normalised

The table was distilled by model2vec from the MiniLM the project ships (``lab/distill_static.py``,
``make -C lab distill-static``; handed over by ``lab.handoff``): every WordPiece token run through
the model once, PCA to 256 dimensions, rows weighted by a Zipf estimate of the token's frequency.
A sentence's vector is the mean of its tokens' rows (model2vec's ``StaticModel.encode``: its own
tokenizer, no special tokens, unknown tokens dropped, at most 512 tokens), L2-normalised: no
network, no onnxruntime, a table lookup per token. A text with no known token gets the zero vector.

The folder (``static/`` beside this module, or ``EVOMEM_EMBEDDING_MODEL_DIR``) holds
``model.safetensors`` (one float16 tensor, ``embeddings``), ``tokenizer.json`` and ``pins.json``
(their sha256, checked on load by ``evomem.adapters.models.loader``; the model's name and dim).
The safetensors file is read here (an 8-byte header length, a JSON header, the raw tensor), so
the runtime needs numpy and tokenizers only, both already in the default install.

Chosen by ``EVOMEM_EMBEDDER=static`` (``bootstrap.vectors``). Its vectors live in their own space
(the name carries the table's sha256), so a store embedded with MiniLM is re-embedded, not mixed.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from evomem.adapters.models.embedding import _check_texts, l2_normalise
from evomem.adapters.models.loader import PINS_FILE, FolderModel, ModelFolder, open_tokenizer, require
from evomem.domain.errors import Unavailable

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MODEL_NAME = "minilm-static-256"
DIM = 256
MAX_TOKENS = 512  # model2vec's default max_length
DEFAULT_MODEL_DIR = Path(__file__).parent / "static"
TABLE = "model.safetensors"
TENSOR = "embeddings"
#: The packaged table's sha256: its pins.json must agree, and the vector space is named after it.
MODEL_SHA256 = "752af54a759ea4069f757abc0b8e6725c171662600ef0b132c83e37920508f66"
HINT = "distil it with: make -C lab distill-static, then make -C lab handoff"


class StaticModelUnavailable(Unavailable):
    """The static model's files are missing, damaged or cannot be read."""


FOLDER = ModelFolder(
    StaticModelUnavailable,
    (TABLE, "tokenizer.json"),
    missing="{path} not found; " + HINT,
    unreadable="{path} is unreadable ({exc}); " + HINT,
    mismatch="{path} does not match its pinned sha256 (got {got:.12}..., pinned {want:.12}...): the file is "
    "damaged or was replaced; restore it from the repository or " + HINT,
    required=(PINS_FILE,),
    packaged=DEFAULT_MODEL_DIR,
    compiled={TABLE: MODEL_SHA256},
)

_DTYPES = {"F16": "<f2", "F32": "<f4"}


class _Opened(NamedTuple):
    table: Any  # (tokens, dim) float16 or float32
    tokenizer: Any
    unk_id: int | None
    max_chars: int  # model2vec cuts a text at max tokens x the median token length before tokenizing


def read_table(path: Path, name: str = TENSOR) -> np.ndarray:
    """One 2-D float tensor of a safetensors file, with numpy (no safetensors package)."""
    import numpy as np

    try:
        with path.open("rb") as f:
            size = int.from_bytes(f.read(8), "little")
            if not 2 <= size <= 1 << 24:
                raise ValueError(f"header length {size}")
            header = json.loads(f.read(size))
        meta = header[name]
        dtype, shape, (start, end) = _DTYPES[meta["dtype"]], meta["shape"], meta["data_offsets"]
        if len(shape) != 2 or (end - start) != shape[0] * shape[1] * np.dtype(dtype).itemsize:
            raise ValueError(f"tensor {name} of shape {shape} does not fill bytes {start}-{end}")
        table = np.fromfile(path, dtype=dtype, count=shape[0] * shape[1], offset=8 + size + start)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StaticModelUnavailable(f"{path} is not a safetensors file with a float tensor {name!r} ({exc})") from exc
    return table.reshape(shape)


class StaticEmbedder(FolderModel):
    """The ``EmbeddingModel`` port over a static table. Thread-safe; loads on first ``encode``."""

    default_dir = DEFAULT_MODEL_DIR

    def __init__(
        self, model_dir: str | os.PathLike[str] | None = None, threads: int = 1, *, verify: bool = True
    ) -> None:
        super().__init__(model_dir, threads, verify=verify)
        self.dim, self.name = DIM, f"{MODEL_NAME}-{MODEL_SHA256[:8]}"
        if self.model_dir.resolve() != DEFAULT_MODEL_DIR.resolve():
            self.dim, self.name = _folder_identity(self.model_dir)

    def _open(self) -> _Opened:
        numpy = require("numpy", StaticModelUnavailable, "pip install numpy tokenizers")
        require("tokenizers", StaticModelUnavailable, "pip install numpy tokenizers")
        table_path, tok_path = FOLDER.paths(self.model_dir)
        if self.verify:
            FOLDER.verify(self.model_dir, FOLDER.hashes(self.model_dir))
        table = read_table(table_path)
        if table.shape[1] != self.dim:
            raise StaticModelUnavailable(f"{table_path} has {table.shape[1]} dimensions, expected {self.dim}")
        tokenizer = open_tokenizer(tok_path)
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        vocab = tokenizer.get_vocab()
        if len(vocab) != table.shape[0]:
            raise StaticModelUnavailable(f"{tok_path} has {len(vocab)} tokens, {table_path} {table.shape[0]} rows")
        median = int(numpy.median([len(t) for t in vocab]))
        return _Opened(table, tokenizer, tokenizer.token_to_id("[UNK]"), MAX_TOKENS * max(1, median))

    def _loaded(self, seconds: float) -> None:
        log.info("static embedding model %s loaded from %s in %.2fs", self.name, self.model_dir, seconds)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row of ``dim`` per text, in order. Loads the model if needed."""
        import numpy as np

        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        opened = self._model.get()
        encodings = opened.tokenizer.encode_batch([t[: opened.max_chars] for t in texts], add_special_tokens=False)
        for row, enc in enumerate(encodings):
            ids = [i for i in enc.ids if i != opened.unk_id]
            if ids:
                out[row] = opened.table[ids].mean(axis=0, dtype=np.float32)
        return l2_normalise(out)


def _folder_identity(folder: Path) -> tuple[int, str]:
    """(dim, name) of a static model folder that is not the packaged one, from its ``pins.json``
    (cheap: one small JSON file); the name carries the table's sha256, so two tables never share a space."""
    path = folder / PINS_FILE
    try:
        pins = json.loads(path.read_text())
        sha = str(pins["sha256"][TABLE])
        return int(pins.get("dim", DIM)), f"{pins.get('model') or MODEL_NAME}-{sha[:8]}"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StaticModelUnavailable(f"{path} is unreadable or pins no {TABLE} ({exc}); " + HINT) from exc
