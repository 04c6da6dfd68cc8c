"""The Triton model repositories: models/triton (the GPU, ONNX Runtime backend) and its CPU
mirror models/triton-cpu (Python backend, the same model.onnx on onnxruntime) describe the same
tensors, and both describe the ONNX graphs they serve. `make models` puts pinned files only.

The configs are parsed with protobuf's text format into Triton's own ``ModelConfig`` message
(``tritonclient.grpc.model_config_pb2``), so a field Triton would read differently fails here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.triton_support import CPU_REPOSITORY, GPU_REPOSITORY, MAKE_MODELS

model_config_pb2 = pytest.importorskip("tritonclient.grpc.model_config_pb2")
text_format = pytest.importorskip("google.protobuf.text_format")

ONNX_TYPES = {"TYPE_INT64": "tensor(int64)", "TYPE_FP32": "tensor(float)"}


def parse(path: Path):
    return text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())


def models(repository: Path) -> set[str]:
    return {p.parent.name for p in repository.glob("*/config.pbtxt")}


def tensors(config) -> dict[str, object]:
    """What a client sees: the tensors (name, type, dims), batching and version policy."""
    kind = model_config_pb2.DataType.Name
    return {
        "name": config.name,
        "max_batch_size": config.max_batch_size,
        "inputs": [(t.name, kind(t.data_type), list(t.dims)) for t in config.input],
        "outputs": [(t.name, kind(t.data_type), list(t.dims)) for t in config.output],
        "dynamic_batching": text_format.MessageToString(config.dynamic_batching)
        if config.HasField("dynamic_batching")
        else None,
        "version_policy": text_format.MessageToString(config.version_policy),
    }


def kinds(config) -> list[str]:
    return [model_config_pb2.ModelInstanceGroup.Kind.Name(g.kind) for g in config.instance_group]


def test_both_repositories_hold_the_cronista_and_the_embedding_model():
    assert models(GPU_REPOSITORY) == models(CPU_REPOSITORY) == {"cronista", "embedding"}


@pytest.mark.parametrize("model", ["cronista", "embedding"])
def test_the_cpu_mirror_describes_the_same_tensors(model):
    gpu = parse(GPU_REPOSITORY / model / "config.pbtxt")
    cpu = parse(CPU_REPOSITORY / model / "config.pbtxt")
    assert tensors(cpu) == tensors(gpu)
    assert gpu.name == model


@pytest.mark.parametrize("model", ["cronista", "embedding"])
def test_the_gpu_config_runs_onnx_runtime_on_the_gpu_with_dynamic_batching(model):
    gpu = parse(GPU_REPOSITORY / model / "config.pbtxt")
    assert gpu.platform == "onnxruntime_onnx" and not gpu.backend
    assert kinds(gpu) == ["KIND_GPU"]
    assert gpu.HasField("dynamic_batching") and gpu.max_batch_size >= 8
    assert list(gpu.dynamic_batching.preferred_batch_size) == sorted(gpu.dynamic_batching.preferred_batch_size)
    assert max(gpu.dynamic_batching.preferred_batch_size) <= gpu.max_batch_size


@pytest.mark.parametrize("model", ["cronista", "embedding"])
def test_the_cpu_mirror_is_a_python_backend_model_on_the_cpu(model):
    cpu = parse(CPU_REPOSITORY / model / "config.pbtxt")
    assert cpu.backend == "python" and not cpu.platform
    assert kinds(cpu) == ["KIND_CPU"]


def test_the_comparison_sees_a_drifted_mirror(tmp_path):
    """The parity check itself: one changed dim, dtype or batching knob is a difference."""
    gpu = parse(GPU_REPOSITORY / "cronista" / "config.pbtxt")
    for change in (
        lambda c: c.output[0].dims.__setitem__(1, 12),
        lambda c: setattr(c.input[1], "data_type", model_config_pb2.TYPE_INT32),
        lambda c: setattr(c, "max_batch_size", 32),
        lambda c: setattr(c.dynamic_batching, "max_queue_delay_microseconds", 1),
        lambda c: setattr(c.input[0], "name", "ids"),
    ):
        drifted = parse(CPU_REPOSITORY / "cronista" / "config.pbtxt")
        change(drifted)
        assert tensors(drifted) != tensors(gpu)


def graph_matches(config, onnx_path: Path) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    kind = model_config_pb2.DataType.Name
    for declared, graph in ((config.input, session.get_inputs()), (config.output, session.get_outputs())):
        by_name = {g.name: g for g in graph}
        assert sorted(t.name for t in declared) == sorted(by_name)
        for t in declared:
            node = by_name[t.name]
            assert ONNX_TYPES[kind(t.data_type)] == node.type, t.name
            shape = node.shape[1:]  # after the batch axis
            assert len(shape) == len(t.dims), (t.name, shape, list(t.dims))
            for want, got in zip(t.dims, shape, strict=True):
                assert want == -1 or want == got, (t.name, shape, list(t.dims))
            assert not isinstance(node.shape[0], int), f"{t.name}: the batch axis must be dynamic"


def test_the_embedding_config_describes_the_packaged_onnx_graph(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(GPU_REPOSITORY, repo, ignore=shutil.ignore_patterns("[0-9]*"))
    run = subprocess.run(
        [sys.executable, str(MAKE_MODELS), "--out", str(repo), "--models", "embedding"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    onnx = repo / "embedding" / "1" / "model.onnx"
    assert onnx.is_file() and not (repo / "embedding" / "1" / "model.py").exists()
    graph_matches(parse(repo / "embedding" / "config.pbtxt"), onnx)


def test_the_cronista_config_describes_the_trained_graph():
    folder = Path(__file__).resolve().parents[1] / "services" / "evomem" / "adapters" / "models" / "cronista"
    if not (folder / "model.onnx").is_file():
        pytest.skip("no cronista model in the repository yet (make -C lab train-cronista)")
    graph_matches(parse(GPU_REPOSITORY / "cronista" / "config.pbtxt"), folder / "model.onnx")


def test_make_models_refuses_a_file_that_does_not_match_its_pin(tmp_path):
    folder = tmp_path / "cronista"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"not the model")
    (folder / "pins.json").write_text(json.dumps({"sha256": {"model.onnx": "0" * 64}}))
    repo = tmp_path / "repo"
    shutil.copytree(CPU_REPOSITORY, repo, ignore=shutil.ignore_patterns("[0-9]*"))
    args = [sys.executable, str(MAKE_MODELS), "--out", str(repo), "--cpu", "--models", "cronista"]
    run = subprocess.run(
        [*args, "--cronista-dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    assert "pinned" in run.stderr
    assert not (repo / "cronista" / "1" / "model.onnx").exists()


def test_make_models_says_when_the_cronista_model_is_missing(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(CPU_REPOSITORY, repo, ignore=shutil.ignore_patterns("[0-9]*"))
    args = [sys.executable, str(MAKE_MODELS), "--out", str(repo), "--cpu", "--models", "cronista"]
    args += ["--cronista-dir", str(tmp_path / "none")]
    skipped = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert skipped.returncode == 0 and "skipped" in skipped.stdout
    required = subprocess.run([*args, "--require", "cronista"], capture_output=True, text=True, timeout=120)
    assert required.returncode == 1 and "make -C lab train-cronista" in required.stderr
