"""The cronista service builds the extractor EVOMEM_CRONISTA_BACKEND names, from the settings only.

``lite`` and ``onnx`` run here for real (the packaged model, in process); ``triton`` against a
real server is tests/test_triton_cronista.py. A backend that cannot load refuses to start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evomem.bootstrap.services import build_cronista
from evomem.ops.runtime import ConfigError
from evomem.settings import Settings

LEDGER = "We moved the ledger to SQLite because Postgres was overkill for a single writer."


def serve(env: dict[str, str]):
    from evomem.adapters.grpc.clients import GrpcExtractor

    service = build_cronista(Settings.from_env({"EVOMEM_GRPC_HOST": "127.0.0.1", "EVOMEM_GRPC_PORT": "0", **env}))
    running = service.start()
    return service, GrpcExtractor(f"127.0.0.1:{running.port}")


@pytest.mark.parametrize(("backend", "extractor"), [("lite", "lite/1"), ("onnx", "onnx/cronista-minilm-1")])
def test_the_service_extracts_with_the_backend_the_settings_name(backend, extractor):
    pytest.importorskip("onnxruntime")
    service, client = serve({"EVOMEM_CRONISTA_BACKEND": backend})
    try:
        assert service.description == f"backend {extractor}"
        ex = client.extract(LEDGER)
        assert ex.extractor == extractor
        assert ex.change and ex.change in LEDGER
    finally:
        service.stop()


@pytest.mark.parametrize("backend", ["onnx", "triton"])
def test_a_model_folder_without_the_model_refuses_to_start(backend, tmp_path: Path):
    env = {"EVOMEM_CRONISTA_BACKEND": backend, "EVOMEM_CRONISTA_MODEL_DIR": str(tmp_path)}
    if backend == "triton":
        env["EVOMEM_TRITON_URL"] = "127.0.0.1:1"
    with pytest.raises(ConfigError, match=f"EVOMEM_CRONISTA_BACKEND={backend}: .*not found"):
        build_cronista(Settings.from_env(env))
