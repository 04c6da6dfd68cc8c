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
from evomem.adapters.triton_client import TritonEmbedder, TritonModel, TritonUnavailable
from evomem.ports import Embedder
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
    from evomem.adapters.embedding import OnnxEmbedder

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
    from evomem.adapters.embedding import OnnxEmbedder
    from evomem.adapters.sqlite_store import SQLiteStore
    from evomem.adapters.triton_client import FallbackEmbedder
    from evomem.bootstrap import build_vectors
    from evomem.domain.model import NewNote
    from evomem.runtime import metric
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
    from evomem.adapters.sqlite_store import SQLiteStore
    from evomem.bootstrap import build_vectors
    from evomem.runtime import ConfigError
    from evomem.settings import Settings

    store = SQLiteStore(tmp_path / "evomem.db")
    try:
        with pytest.raises(ConfigError, match="EVOMEM_TRITON_URL"):
            build_vectors(Settings.from_env({"EVOMEM_EMBEDDING_BACKEND": "triton", "EVOMEM_VECTORS": "on"}), store)
    finally:
        store.close()
