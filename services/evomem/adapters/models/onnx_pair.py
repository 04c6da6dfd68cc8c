"""The pair cross-encoder on onnxruntime: "does this note replace that decision", read as one text.

``OnnxPairScorer`` implements ``evomem.app.ports.PairScorer`` for the pair linker
(``evomem.domain.linkers.pair``): all-MiniLM-L6-v2 fine-tuned by this project on pairs
``[CLS] note [SEP] candidate [SEP]`` from development data (``lab/train_cross.py``; model card
``models/pair-cross/README.md``), int8, one logit per pair. Unlike the pair model's features it
reads both texts together, so "the standup is at 9:30 now" can be seen to restate the slot of
"standup at 10:00" with a new value, whatever the words.

The folder holds ``model.onnx``, ``tokenizer.json`` and ``pins.json`` (their sha256, checked on
load by ``evomem.adapters.models.loader``, and the calibration: ``weight`` and ``link_score``, see
``evomem.app.ports.PairScorer``).
Token ids are cached per text, so a candidate is tokenized once, not on every remember.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from evomem.adapters.models.loader import PINS_FILE, FolderModel, ModelFolder, open_encoder
from evomem.domain.errors import Unavailable

log = logging.getLogger(__name__)

MODEL_NAME = "pair-cross-minilm-1"
DEFAULT_MODEL_DIR = Path(__file__).parent / "pair-cross"
INPUT_NAMES = ("input_ids", "token_type_ids", "attention_mask")
OUTPUT_NAMES = ("logits",)
MAX_TOKENS = 128  # [CLS] note [SEP] candidate [SEP], as trained
CLS_ID, SEP_ID = 101, 102
CACHE = 8192  # texts whose token ids are kept


_SHARED: dict[str, OnnxPairScorer] = {}
_SHARED_LOCK = threading.Lock()


class PairModelUnavailable(Unavailable):
    """The cross-encoder's files are missing, damaged or cannot be loaded."""


#: The model folder: its files, pinned in its ``pins.json`` (which holds the calibration too, so it
#: must be there), and what its errors say.
FOLDER = ModelFolder(
    PairModelUnavailable,
    ("model.onnx", "tokenizer.json"),
    missing="{path} not found; build the cross-encoder with: make -C lab train-cross, then make -C lab handoff",
    unreadable="{path} is unreadable ({exc}); rebuild with: make -C lab train-cross, then make -C lab handoff",
    mismatch="{path} does not match its pinned sha256 (got {got:.12}...): the file is damaged or was replaced; "
    "restore it from the repository or rebuild it with: make -C lab train-cross, then make -C lab handoff",
    required=(PINS_FILE,),
)


class _Opened(NamedTuple):
    """What a load gives: the session, the tokenizer and the calibration (weight, link_score)."""

    session: Any
    tokenizer: Any
    calibration: tuple[float, float]


def pair_ids(a: Sequence[int], b: Sequence[int], max_tokens: int = MAX_TOKENS) -> tuple[list[int], list[int]]:
    """Token ids and type ids of ``[CLS] a [SEP] b [SEP]`` cut to ``max_tokens``: the longer text is
    cut first, neither below half of the room when both are long (``lab/train_cross.py`` too)."""
    room = max_tokens - 3
    a, b = list(a), list(b)
    if len(a) + len(b) > room:
        half = room // 2
        if len(a) <= half:
            b = b[: room - len(a)]
        elif len(b) <= half:
            a = a[: room - len(b)]
        else:
            a, b = a[:half], b[: room - half]
    return [CLS_ID, *a, SEP_ID, *b, SEP_ID], [0] * (len(a) + 2) + [1] * (len(b) + 1)


class OnnxPairScorer(FolderModel):
    """The ``PairScorer`` port on onnxruntime (CPU). Thread-safe; loads on first use."""

    name = f"onnx/{MODEL_NAME}"
    default_dir = DEFAULT_MODEL_DIR

    def __init__(
        self, model_dir: str | os.PathLike[str] | None = None, threads: int = 1, *, verify: bool = True
    ) -> None:
        super().__init__(model_dir, threads, verify=verify)
        self._ids: dict[str, list[int]] = {}

    @classmethod
    def shared(cls, model_dir: str | os.PathLike[str] | None = None) -> OnnxPairScorer:
        """One scorer per model folder in a process (a server, or a benchmark that builds a
        service per scenario, loads the session and caches token ids once)."""
        key = str((Path(model_dir).expanduser() if model_dir is not None else DEFAULT_MODEL_DIR).resolve())
        with _SHARED_LOCK:
            scorer = _SHARED.get(key)
            if scorer is None:
                scorer = _SHARED[key] = cls(model_dir)
            return scorer

    @property
    def weight(self) -> float:
        """How much the encoder's logit counts next to the pair model's (``pins.json``)."""
        return self._model.get().calibration[0]

    @property
    def link_score(self) -> float:
        """The combined score from which the linker links (``pins.json``; inf: never)."""
        return self._model.get().calibration[1]

    def _open(self) -> _Opened:
        """The session, the tokenizer and the calibration of the model folder, its files checked
        against ``pins.json``."""
        model, tok = FOLDER.paths(self.model_dir)
        pins = FOLDER.read_pins(self.model_dir)
        if self.verify:
            FOLDER.verify(self.model_dir, pins["sha256"])
        session, tokenizer = open_encoder(model, tok, self.threads, INPUT_NAMES, OUTPUT_NAMES, PairModelUnavailable)
        calibration = (1.0, math.inf)
        weight, link = pins.get("weight"), pins.get("link_score")
        if isinstance(weight, (int, float)) and isinstance(link, (int, float)) and not math.isnan(link):
            calibration = (float(weight), float(link))
        return _Opened(session, tokenizer, calibration)

    def _loaded(self, seconds: float) -> None:
        log.info("pair cross-encoder %s loaded from %s in %.2fs", self.name, self.model_dir, seconds)

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._ids]
        if missing:
            if len(self._ids) + len(missing) > CACHE:
                self._ids.clear()
            for t, enc in zip(missing, self._model.get().tokenizer.encode_batch(missing), strict=True):
                self._ids[t] = enc.ids[1:-1]  # without its own [CLS] / [SEP]
        return [self._ids[t] for t in texts]

    def logits(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """One logit per (note, candidate) pair, in order. Each pair runs on its own: int8
        activations are quantized with one scale per tensor, so in a batch a pair's logit would
        depend on the other pairs beside it, and a candidate could link or not depending on which
        others were found. Alone, a pair always gets the same logit."""
        if not pairs:
            return []
        session = self._model.get().session
        import numpy as np

        firsts = self._token_ids([a for a, _ in pairs])
        seconds = self._token_ids([b for _, b in pairs])
        out = []
        for a, b in zip(firsts, seconds, strict=True):
            ids, types = pair_ids(a, b)
            feeds = {
                "input_ids": np.asarray([ids], np.int64),
                "token_type_ids": np.asarray([types], np.int64),
                "attention_mask": np.ones((1, len(ids)), np.int64),
            }
            (z,) = session.run(list(OUTPUT_NAMES), feeds)
            out.append(float(z[0]))
        return out
