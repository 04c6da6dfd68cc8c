"""The vector index: sqlite-vec in a real SQLite file, by namespace, with quantized scans.

Needs a SQLite driver that loads extensions plus sqlite-vec (``pip install evomem-mcp``, the default install:
sqlean.py and sqlite-vec); skipped, saying so, when they are missing. Vectors here are
synthetic (seeded numpy) or from the hashing fake, except one test that uses the real model
when the ``embeddings`` extra is installed.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import numpy as np
import pytest

from evomem.adapters.models.embedding import HashingEmbedder
from evomem.adapters.vectors.index import (
    SCANS,
    VectorIndex,
    VectorIndexMismatch,
    VectorIndexUnavailable,
    sqlite_driver,
)
from evomem.adapters.vectors.quantize import quantize_int8
from evomem.domain.errors import InvalidArgument

DIM = 384


def _driver_missing() -> str | None:
    if importlib.util.find_spec("sqlite_vec") is None:
        return "sqlite-vec is not installed; install it with: pip install evomem-mcp"
    try:
        sqlite_driver()
    except VectorIndexUnavailable as exc:
        return str(exc)
    return None


_MISSING = _driver_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


def unit_rows(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def clustered(n: int, clusters: int, seed: int = 0, spread: float = 0.35) -> np.ndarray:
    """Unit vectors around a few topics, like sentence embeddings (not iid noise)."""
    rng = np.random.default_rng(seed)
    centres = unit_rows(clusters, seed + 1)
    x = centres[rng.integers(0, clusters, n)] + spread * rng.standard_normal((n, DIM)).astype(np.float32) / np.sqrt(
        DIM / 8
    )
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def exact_top(x: np.ndarray, ids: list[str], q: np.ndarray, k: int) -> list[str]:
    d = 1.0 - x @ q
    return [ids[i] for i in np.argsort(d, kind="stable")[:k]]


@pytest.fixture(params=SCANS)
def index(request: pytest.FixtureRequest, tmp_path: Path):
    ix = VectorIndex(tmp_path / "evomem.vec.db", scan=request.param, model="test-model")
    yield ix
    ix.close()


def test_add_search_remove(index: VectorIndex) -> None:
    x = unit_rows(300)
    ids = [f"n{i:03d}" for i in range(300)]
    assert index.add_many(zip(ids, ["default"] * 300, x, strict=True)) == 300
    assert index.count() == 300 and index.count("default") == 300 and "n007" in index

    hits = index.search(x[7], "default", k=5)
    assert hits[0][0] == "n007"
    assert hits[0][1] == pytest.approx(0.0, abs=2e-3)  # int8 rescoring: within rounding of exact
    assert [h[1] for h in hits] == sorted(h[1] for h in hits)
    assert len(hits) == 5

    assert index.remove("n007") is True
    assert index.remove("n007") is False
    assert "n007" not in index and index.count() == 299
    assert "n007" not in [h[0] for h in index.search(x[7], "default", k=10)]


def test_namespaces_are_isolated(index: VectorIndex) -> None:
    x = unit_rows(40, seed=3)
    index.add_many((f"a{i}", "alpha", x[i]) for i in range(20))
    index.add_many((f"b{i}", "beta", x[i]) for i in range(20))  # the same vectors, other namespace
    for q in x[:20]:
        assert all(h[0].startswith("a") for h in index.search(q, "alpha", k=20))
        assert all(h[0].startswith("b") for h in index.search(q, "beta", k=20))
    assert index.search(x[0], "gamma", k=3) == []
    # Candidates from another namespace are ignored, not leaked.
    assert index.search(x[0], "alpha", k=5, candidate_ids=["b0", "b1", "a1"]) == [
        ("a1", pytest.approx(float(1 - x[1] @ x[0]), abs=2e-2))
    ]


def test_add_replaces_and_can_move_a_node_to_another_namespace(index: VectorIndex) -> None:
    x = unit_rows(3, seed=5)
    index.add("n1", "alpha", x[0])
    index.add("n1", "alpha", x[1])  # replaced in place
    assert index.search(x[1], "alpha", k=1)[0][0] == "n1"
    assert index.search(x[1], "alpha", k=1)[0][1] < 0.01
    index.add("n1", "beta", x[2])  # moved
    assert index.search(x[2], "alpha", k=1) == []
    assert index.search(x[2], "beta", k=1)[0][0] == "n1"
    assert index.count() == 1


def test_candidate_ids_restrict_the_search_and_are_exact(tmp_path: Path) -> None:
    x = unit_rows(500, seed=9)
    ids = [f"n{i}" for i in range(500)]
    with VectorIndex(tmp_path / "v.db", rescore="float32") as ix:
        ix.add_many(zip(ids, ["ns"] * 500, x, strict=True))
        cands = ids[100:300:2]
        got = ix.search(x[0], "ns", k=10, candidate_ids=[*cands, "missing-id"])
        sub = x[100:300:2]
        assert [g[0] for g in got] == exact_top(sub, cands, x[0], 10)
        want = sorted(float(1 - v @ x[0]) for v in sub)[:10]
        assert [g[1] for g in got] == pytest.approx(want, abs=1e-5)
        assert ix.search(x[0], "ns", k=10, candidate_ids=[]) == []


@pytest.mark.parametrize("scan", ["binary", "int8"])
def test_quantized_search_agrees_with_float_on_top1(tmp_path: Path, scan: str) -> None:
    """Queries near stored vectors (a paraphrase is near its note): top-1 must match exact float."""
    x = clustered(3000, clusters=30, seed=11)
    ids = [f"n{i}" for i in range(len(x))]
    rng = np.random.default_rng(12)
    picks = rng.choice(len(x), 100, replace=False)
    queries = x[picks] + 0.5 * rng.standard_normal((100, DIM)).astype(np.float32) / np.sqrt(DIM)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    with VectorIndex(tmp_path / f"{scan}.db", scan=scan) as ix:
        ix.add_many(zip(ids, ["ns"] * len(x), x, strict=True))
        top1 = [ix.search(q, "ns", k=10)[0][0] == exact_top(x, ids, q, 1)[0] for q in queries]
        recall10 = [len({h[0] for h in ix.search(q, "ns", k=10)} & set(exact_top(x, ids, q, 10))) / 10 for q in queries]
    assert np.mean(top1) >= 0.95, np.mean(top1)
    assert np.mean(recall10) >= 0.85, np.mean(recall10)


def test_fake_embedder_end_to_end(tmp_path: Path) -> None:
    fake = HashingEmbedder()
    notes = {
        "n1": "we moved the ledger to SQLite",
        "n2": "the cafeteria menu changed on Monday",
        "n3": "billing uses Stripe for card payments",
    }
    with VectorIndex(tmp_path / "v.db", model=fake.name) as ix:
        ix.add_many((k, "default", v) for k, v in zip(notes, fake.encode(list(notes.values())), strict=True))
        assert ix.search(fake.encode(["where is the ledger? SQLite?"])[0], "default", k=1)[0][0] == "n1"


def test_the_real_model_finds_the_paraphrase(tmp_path: Path) -> None:
    from evomem.adapters.models.embedding import OnnxEmbedder, resolve_model_files

    if importlib.util.find_spec("onnxruntime") is None or resolve_model_files()[0] is None:
        pytest.skip("embedding model not installed; install it with: pip install evomem-mcp")
    e = OnnxEmbedder()
    notes = [
        "we moved the ledger to SQLite",
        "the cafeteria menu changed",
        "the deploy pipeline now runs on GitHub Actions",
        "we rotate the API keys every ninety days",
    ]
    with VectorIndex(tmp_path / "v.db", model=e.name) as ix:
        ix.add_many((f"n{i}", "default", v) for i, v in enumerate(e.encode(notes)))
        q = e.encode(["the accounting book now lives in an embedded database"])[0]
        assert ix.search(q, "default", k=1)[0][0] == "n0"


def test_reopen_keeps_vectors_and_refuses_other_settings(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    x = unit_rows(10)
    with VectorIndex(path, model="model-a") as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(10))
    with VectorIndex(path) as ix:  # no model given: the stored one is kept
        assert ix.model == "model-a"
        assert ix.search(x[4], "ns", k=1)[0][0] == "n4"
    with pytest.raises(VectorIndexMismatch, match="model-a"):
        VectorIndex(path, model="model-b")
    with pytest.raises(VectorIndexMismatch, match="scan"):
        VectorIndex(path, scan="float32")
    with pytest.raises(VectorIndexMismatch, match="dim"):
        VectorIndex(path, dim=256)


def test_bad_vectors_are_refused(tmp_path: Path) -> None:
    with VectorIndex(tmp_path / "v.db") as ix:
        with pytest.raises(InvalidArgument, match="dimensions"):
            ix.add("n1", "ns", np.ones(10, dtype=np.float32))
        with pytest.raises(InvalidArgument, match="zeros"):
            ix.add("n1", "ns", np.zeros(DIM, dtype=np.float32))
        bad = np.ones(DIM, dtype=np.float32)
        bad[3] = np.nan
        with pytest.raises(InvalidArgument, match="NaN"):
            ix.add("n1", "ns", bad)
        with pytest.raises(InvalidArgument):
            ix.add("", "ns", np.ones(DIM))
        with pytest.raises(InvalidArgument):
            ix.search(np.ones(DIM), "ns", k=0)
        assert ix.count() == 0  # nothing half-written


def test_remove_erases_the_vector_bytes_from_disk(tmp_path: Path) -> None:
    """Purge must not leave an embedding (which can leak the text) in the file or the WAL."""
    path = tmp_path / "v.db"
    secret = unit_rows(1, seed=42)[0]
    for scan in ("binary", "float32"):
        p = path.with_name(f"{scan}.db")
        with VectorIndex(p, scan=scan, rescore="float32") as ix:
            ix.add_many((f"n{i}", "ns", v) for i, v in enumerate(unit_rows(50, seed=1)))
            ix.add("secret", "ns", secret)
            ix.checkpoint()
            needles = [secret.tobytes()[:64], quantize_int8(secret).tobytes()[:64]]
            on_disk = p.read_bytes()
            assert needles[0] in on_disk  # it was there (float32 rescoring copy, and the float scan)
            assert ix.remove("secret")
            assert ix.checkpoint()
            files = [p.read_bytes()] + (
                [p.with_name(p.name + "-wal").read_bytes()] if p.with_name(p.name + "-wal").exists() else []
            )
            assert not any(n in data for n in needles for data in files)


def test_concurrent_writers_from_threads(tmp_path: Path) -> None:
    ix = VectorIndex(tmp_path / "v.db")
    x = unit_rows(200, seed=4)
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(t, 200, 4):
                ix.add(f"n{i}", f"ns{t % 2}", x[i])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert ix.count() == 200 and ix.count("ns0") == 100
    assert ix.search(x[8], "ns0", k=1)[0][0] == "n8"
    ix.close()


def test_in_memory_index(tmp_path: Path) -> None:
    with VectorIndex(":memory:") as ix:
        ix.add("n1", "ns", unit_rows(1)[0])
        assert ix.search(unit_rows(1)[0], "ns", k=1)[0][0] == "n1"
        assert ix.stats()["vectors"] == 1
