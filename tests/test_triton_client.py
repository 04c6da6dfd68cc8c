"""The Triton client (``TritonModel``: deadline, retries with backoff, refusals) and the Triton
embedder, against a real Triton server on the CPU: PyTriton's tritonserver 2.51 serving
models/triton-cpu (Python-backend models that run the same model.onnx with onnxruntime) on
loopback, in its own venv (tests/triton_support.py). The embedding model is the packaged int8
all-MiniLM-L6-v2 (`make models` puts it in the repository), so storage could embed on Triton
with the vectors it writes in process.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from bench.procs import free_port
from evomem.adapters.models.triton import LENGTH_BUCKETS, TritonEmbedder, TritonModel, TritonUnavailable, bucket_width
from evomem.app.ports import Embedder
from tests.triton_support import TritonServer, cpu_repository, triton_venv

pytest.importorskip("tritonclient.grpc")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> TritonServer:
    python = triton_venv()
    base = tmp_path_factory.mktemp("triton")
    server = TritonServer(cpu_repository(base, models="embedding"), base / "run", python).start()
    yield server
    server.stop()


# ----------------------------------------------------------------------------- the embedder


def test_the_triton_embedder_gives_the_in_process_vectors(server):
    from evomem.adapters.models.embedding import OnnxEmbedder

    local = OnnxEmbedder()
    if not local.available:
        pytest.skip("the packaged embedding model is not installed")
    remote = TritonEmbedder(TritonModel(server.grpc_url, "embedding", timeout_s=10, max_batch_size=16))
    assert isinstance(remote, Embedder) and remote.name == local.name
    texts = [f"we moved service {i} to gRPC because latency mattered" * (1 + i % 3) for i in range(40)]
    got, want = remote.encode(texts), local.encode(texts)  # 40 rows: three requests of at most 16
    assert got.shape == (40, 384)
    assert np.abs(got - want).max() < 1e-4
    assert remote.encode([]).shape == (0, 384)


def test_length_buckets_leave_the_vectors_unchanged(server):
    """Padded to 32/64/128/256 tokens (so the dynamic batcher can stack requests of different
    lengths) or sent at their own width, the rows get the same vectors."""
    texts = [f"we moved service {i} to gRPC because latency mattered " * (1 + i % 7) for i in range(24)]
    bucketed = TritonEmbedder(TritonModel(server.grpc_url, "embedding", timeout_s=10), batch_size=1)
    plain = TritonEmbedder(TritonModel(server.grpc_url, "embedding", timeout_s=10, length_buckets=()), batch_size=1)
    assert bucketed.model.length_buckets == LENGTH_BUCKETS and plain.model.length_buckets == ()
    a, b = bucketed.encode(texts), plain.encode(texts)
    assert np.abs(a - b).max() < 1e-6


def test_a_token_request_is_padded_to_its_bucket_and_its_outputs_cut_back(server):
    model = TritonModel(server.grpc_url, "embedding", timeout_s=10)
    sent: list[tuple[int, ...]] = []
    real = model._infer_once

    def spy(inputs, outputs, deadline):
        sent.append(next(iter(inputs.values())).shape)
        return real(inputs, outputs, deadline)

    model._infer_once = spy  # type: ignore[method-assign]
    ids = np.array([[101, 2057, 2333, 1996, 2326, 102]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    out = model.infer(feeds, ["last_hidden_state"])["last_hidden_state"]
    assert sent == [(1, 32)] and out.shape == (1, 6, 384)


# ----------------------------------------------------------------------------- bucket choice (no server)


@pytest.mark.parametrize(
    ("length", "width"),
    [(0, 32), (1, 32), (32, 32), (33, 64), (64, 64), (65, 128), (128, 128), (129, 256), (256, 256), (257, 257)],
)
def test_a_length_goes_to_the_smallest_bucket_that_holds_it(length, width):
    assert LENGTH_BUCKETS == (32, 64, 128, 256)
    assert bucket_width(length) == width


def test_bucket_choice_with_other_buckets_or_none():
    assert bucket_width(5, (16, 8)) == 8  # unsorted buckets are fine
    assert bucket_width(17, (8, 16)) == 17  # past the largest: as it is
    assert bucket_width(7, ()) == 7
    with pytest.raises(ValueError):
        bucket_width(-1)
    with pytest.raises(ValueError):
        TritonModel("127.0.0.1:1", "m", length_buckets=(0, 32))
    assert TritonModel("127.0.0.1:1", "m", length_buckets=(64, 32, 64)).length_buckets == (32, 64)


def test_only_token_inputs_of_one_width_are_padded():
    model = TritonModel("127.0.0.1:1", "m")
    ids = np.ones((2, 5), dtype=np.int64)
    padded, width = model._pad_to_bucket({"input_ids": ids, "attention_mask": ids})
    assert width == 5 and padded["input_ids"].shape == (2, 32)
    assert padded["input_ids"][:, 5:].sum() == 0 and padded["attention_mask"][:, :5].all()
    for feeds in ({"x": np.ones((2, 5, 3))}, {"a": ids, "b": np.ones((2, 6), dtype=np.int64)}, {"a": np.ones((2, 32))}):
        same, width = model._pad_to_bucket(feeds)
        assert same is feeds and width is None
    same, width = TritonModel("127.0.0.1:1", "m", length_buckets=())._pad_to_bucket({"input_ids": ids})
    assert width is None and same["input_ids"] is ids


# ----------------------------------------------------------------------------- deadline, retries, refusals


def test_a_refused_request_is_not_retried(server):
    model = TritonModel(server.grpc_url, "embedding", timeout_s=5, retries=3)
    ids = np.zeros((1, 4), dtype=np.int64)
    started = time.monotonic()
    with pytest.raises(TritonUnavailable) as err:
        model.infer({"input_ids": ids, "attention_mask": ids, "wrong_name": ids}, ["last_hidden_state"])
    assert err.value.reason == "refused"
    assert time.monotonic() - started < 1.0


def test_an_unknown_model_is_refused(server):
    model = TritonModel(server.grpc_url, "no-such-model", timeout_s=5, retries=3)
    ids = np.zeros((1, 4), dtype=np.int64)
    with pytest.raises(TritonUnavailable) as err:
        model.infer({"input_ids": ids}, ["x"])
    assert err.value.reason == "refused"
    assert not model.ready() and TritonModel(server.grpc_url, "embedding").ready()


def test_an_unreachable_server_is_retried_with_backoff_within_the_deadline():
    model = TritonModel(f"127.0.0.1:{free_port()}", "cronista", timeout_s=3, retries=3, backoff_s=0.1)
    ids = np.zeros((1, 4), dtype=np.int64)
    started = time.monotonic()
    with pytest.raises(TritonUnavailable) as err:
        model.infer({"input_ids": ids, "attention_mask": ids}, ["role_logits"])
    elapsed = time.monotonic() - started
    assert err.value.reason == "unavailable"
    assert "after 4 attempts" in err.value.message
    assert 0.1 * (0.5 + 1 + 2) <= elapsed < 3.5  # three backoffs (0.1, 0.2, 0.4 s, jitter 50-100%)


def test_the_deadline_bounds_the_whole_call(server):
    model = TritonModel(server.grpc_url, "embedding", timeout_s=0.002, retries=5)
    ids = np.ones((64, 256), dtype=np.int64)
    started = time.monotonic()
    with pytest.raises(TritonUnavailable) as err:
        model.infer({"input_ids": ids, "attention_mask": ids, "token_type_ids": ids * 0}, ["last_hidden_state"])
    assert err.value.reason == "deadline"
    assert time.monotonic() - started < 1.0


def test_storage_embeds_on_triton_and_in_process_when_triton_is_down(tmp_path):
    """EVOMEM_EMBEDDING_BACKEND=triton: storage's vectors come from Triton's embedding model; with
    Triton killed, notes and queries are embedded in process (the same vectors), counted."""
    from evomem.adapters.models.embedding import OnnxEmbedder
    from evomem.adapters.models.triton import FallbackEmbedder
    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.bootstrap.vectors import build_vectors
    from evomem.domain.model import NewNote
    from evomem.ops.runtime import metric
    from evomem.settings import Settings

    if not OnnxEmbedder().available:
        pytest.skip("the packaged embedding model is not installed")
    own = TritonServer(cpu_repository(tmp_path, models="embedding"), tmp_path / "run", triton_venv()).start()
    store = SQLiteStore(tmp_path / "evomem.db")
    try:
        env = {"EVOMEM_EMBEDDING_BACKEND": "triton", "EVOMEM_TRITON_URL": own.grpc_url, "EVOMEM_VECTORS": "on"}
        vectors = build_vectors(Settings.from_env({**env, "EVOMEM_TRITON_TIMEOUT_MS": "2000"}), store)
        assert vectors is not None and isinstance(vectors.embedder, FallbackEmbedder)
        counter = metric("counter", "evomem_embedding_fallbacks_total", "", ("reason",))

        def fallbacks() -> float:
            return sum(s.value for f in counter.collect() for s in f.samples if s.name.endswith("_total"))

        before = fallbacks()
        ledger = store.insert(NewNote(raw_text="We moved the ledger to SQLite because Postgres was overkill."))
        vectors.add([ledger])
        assert fallbacks() == before  # on Triton
        own.kill()
        cache = store.insert(NewNote(raw_text="The cache runs on Redis since memcached evicted sessions."))
        vectors.add([cache])
        assert fallbacks() > before  # in process
        hits = vectors.nearest("where do the bookkeeping records live", namespace="default", limit=2)
        assert hits and hits[0][0] == ledger.id
        local = OnnxEmbedder().encode([ledger.raw_text])[0]
        assert float(np.dot(vectors.embedder.encode([ledger.raw_text])[0], local)) > 0.9999
    finally:
        own.stop()
        store.close()


def test_the_triton_embedding_backend_needs_a_url(tmp_path):
    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.bootstrap.vectors import build_vectors
    from evomem.ops.runtime import ConfigError
    from evomem.settings import Settings

    store = SQLiteStore(tmp_path / "evomem.db")
    try:
        with pytest.raises(ConfigError, match="EVOMEM_TRITON_URL"):
            build_vectors(Settings.from_env({"EVOMEM_EMBEDDING_BACKEND": "triton", "EVOMEM_VECTORS": "on"}), store)
    finally:
        store.close()
