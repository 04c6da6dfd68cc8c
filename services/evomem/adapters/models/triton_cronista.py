"""The ``triton`` cronista: the project's model on a Triton server, the lite cronista when it is down.

    model = TritonModel("triton:8001", "cronista", timeout_s=2.0, retries=2)
    cronista = TritonCronista(model)          # tokenizer from the model folder, nothing else local
    ex = cronista.extract("We moved the ledger to SQLite because Postgres was overkill.")
    ex.extractor                              # "triton/cronista-minilm-1", or, during an outage,
                                              # "lite/1 (fallback from triton/cronista-minilm-1)"
    cronista.degraded                         # None, or why the last call fell back

What runs where: tokenization, windows and decoding are ``OnnxCronista``'s, here in the
cronista service (``tokenizers``, the model folder's pinned ``tokenizer.json``); only the graph
runs on Triton (model ``cronista`` of models/triton, the same ``model.onnx``). So a note gets
the same fields from ``onnx`` in process and from ``triton``: the client cannot tell the
servers apart, and the tests compare the two on the same file. ``TritonModel`` pads each
request's token axis to a length bucket (``LENGTH_BUCKETS``) so that Triton can batch notes of
different lengths; the model masks padding, so the clauses and spans are the same as unpadded.

**Fallback.** When Triton cannot answer within the deadline (after the retries of
``TritonModel``), the note is extracted by the lite cronista instead: the extraction's
``extractor`` names the backend that was actually used (stored on the node), the fallback is
counted in ``evomem_cronista_fallbacks_total{backend="triton", reason}``, and ``degraded``
says why. For ``retry_after_s`` after a failure, calls go to lite at once (no deadline spent
per note during an outage); then Triton is tried again, and the service's health probe
(``check``) clears the state as soon as the model is ready. The cronista service reports
NOT_SERVING for ``evomem.v1.CronistaService`` while degraded (the server's overall "" status
stays SERVING: it still answers, through lite). A request Triton refuses (a wrong tensor) is
a fallback too, with reason ``refused``, and logged as an error: it is a deployment bug.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evomem.adapters.models.loader import open_tokenizer, require
from evomem.adapters.models.onnx_cronista import (
    FOLDER,
    MODEL_NAME,
    MODEL_VERSION,
    OUTPUT_NAMES,
    CronistaModelUnavailable,
    OnnxCronista,
    pinned_hashes,
)
from evomem.adapters.models.triton import TritonModel, TritonUnavailable
from evomem.app.ports import Extractor
from evomem.domain.cronista import LiteCronista
from evomem.domain.model import Extraction
from evomem.ops.runtime import metric

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

NAME = "triton"
PROBE_NOTE = "Probe: we chose Triton because the health check asks it."


#: The model folder as the triton backend reads it: the tokenizer only, checked against the cronista's pins.
TOKENIZER = replace(
    FOLDER,
    files=("tokenizer.json",),
    missing="{path} not found; the triton backend tokenizes with the model's tokenizer",
    mismatch="{path} does not match its pinned sha256 ({want:.12}...)",
)


class _TritonReader(OnnxCronista):
    """``OnnxCronista`` whose graph runs on Triton: its tokenizer and decoding, no local session."""

    def __init__(self, model: TritonModel, model_dir: str | Path | None, *, verify: bool) -> None:
        super().__init__(model_dir, verify=verify)
        self.remote = model
        self.name = f"{NAME}/{MODEL_NAME}-{MODEL_VERSION}"

    def _open(self) -> tuple[Any, Any]:
        """(no session, the pinned tokenizer): the graph is Triton's."""
        (tok,) = TOKENIZER.paths(self.model_dir)
        if self.verify:
            TOKENIZER.verify(self.model_dir, pinned_hashes(self.model_dir))
        require("tokenizers", CronistaModelUnavailable, "pip install 'evomem-mcp[triton]'")
        return None, open_tokenizer(tok)

    def _loaded(self, seconds: float) -> None:
        """Nothing to log: the model is Triton's."""

    def infer(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = self.remote.infer({"input_ids": input_ids, "attention_mask": attention_mask}, list(OUTPUT_NAMES))
        return out[OUTPUT_NAMES[0]], out[OUTPUT_NAMES[1]]


class TritonCronista:
    """The ``triton`` Extractor (``evomem.app.ports.Extractor``), with the lite cronista as fallback."""

    def __init__(
        self,
        model: TritonModel,
        model_dir: str | Path | None = None,
        *,
        fallback: Extractor | None = None,
        retry_after_s: float = 5.0,
        verify: bool = True,
    ) -> None:
        self.reader = _TritonReader(model, model_dir, verify=verify)
        self.name = self.reader.name
        self.model = model
        self.fallback = fallback if fallback is not None else LiteCronista()
        self.retry_after_s = retry_after_s
        self.on_change: Callable[[str | None], None] | None = None  # the service's health, told at once
        self._state_lock = threading.Lock()
        self._degraded: str | None = None
        self._skip_until = 0.0
        self._fallbacks = metric(
            "counter",
            "evomem_cronista_fallbacks_total",
            "Notes extracted by the fallback because the backend could not answer",
            ("backend", "reason"),
        )

    @property
    def degraded(self) -> str | None:
        """None while Triton answers; else why the last call fell back."""
        return self._degraded

    def load(self) -> None:
        """The tokenizer (raises ``CronistaModelUnavailable`` when it is missing or not the pinned file)."""
        self.reader.load()

    def _set(self, reason: str | None) -> None:
        with self._state_lock:
            changed = reason != self._degraded
            self._degraded = reason
            self._skip_until = time.monotonic() + self.retry_after_s if reason else 0.0
        if changed:
            if reason:
                log.warning(
                    "cronista degraded: Triton %s (%s); extracting with %s", self.model.url, reason, self.fallback.name
                )
            else:
                log.info("cronista: Triton %s answers again; extracting with %s", self.model.url, self.name)
            if self.on_change is not None:
                self.on_change(reason)

    def check(self) -> str | None:
        """The health probe: is the model ready on Triton? Updates and returns ``degraded``.

        While degraded, ready is not enough: a probe note must come back within the deadline
        (a restarted server's first inferences are slow), so health turns SERVING only when
        notes would go to Triton again."""
        if not self.model.ready():
            if self._degraded is None:
                self._set("unavailable")
            return self._degraded
        if self._degraded is not None:
            try:
                self.reader.extract(PROBE_NOTE)
            except TritonUnavailable as exc:
                self._set(exc.reason)
                return self._degraded
        self._set(None)
        return None

    def extract(self, text: str) -> Extraction:
        if not isinstance(text, str):
            raise TypeError(f"extract takes a string, got {type(text).__name__}")
        if self._degraded is not None and time.monotonic() < self._skip_until:
            return self._fall_back(text, self._degraded)
        try:
            extraction = self.reader.extract(text)
        except TritonUnavailable as exc:
            if exc.reason == "refused":
                log.error("Triton refused the cronista's request (a model/config mismatch?): %s", exc.message)
            else:
                log.warning("Triton could not answer: %s", exc.message)
            self._set(exc.reason)
            return self._fall_back(text, exc.reason)
        if self._degraded is not None:
            self._set(None)
        return extraction

    def _fall_back(self, text: str, reason: str) -> Extraction:
        if self._fallbacks is not None:
            self._fallbacks.labels(NAME, reason).inc()
        ex = self.fallback.extract(text)
        return _renamed(ex, f"{ex.extractor} (fallback from {self.name})")

    def close(self) -> None:
        self.model.close()


def _renamed(ex: Extraction, extractor: str) -> Extraction:
    return replace(ex, extractor=extractor)


def fallback_count(reason: str | None = None) -> float:
    """This process's ``evomem_cronista_fallbacks_total{backend="triton"}`` (all reasons, or one)."""
    counter: Any = metric("counter", "evomem_cronista_fallbacks_total", "", ("backend", "reason"))
    if counter is None:
        return 0.0
    total = 0.0
    for family in counter.collect():
        for sample in family.samples:
            labels = sample.labels
            wanted = reason is None or labels.get("reason") == reason
            if sample.name.endswith("_total") and labels.get("backend") == NAME and wanted:
                total += sample.value
    return total
