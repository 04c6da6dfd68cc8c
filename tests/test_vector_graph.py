"""The HNSW graph of a namespace (``adapters.vectors.graph``, ``EVOMEM_VECTOR_SEARCH``): a derived copy
of ``vec_items`` that follows ``vec_log`` as the bits do. Real SQLite (sqlite-vec) and real usearch.

A note is found by meaning through the graph right after its deferred vector write; a purged or
removed vector is never returned (and its bytes leave the graph and its saved file); another
process's writes are seen; namespaces never leak; a deleted, corrupt or stale saved graph is
rebuilt with one warning; a bad setting is a clear error; ``scan`` gives the old answers.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evomem.adapters.vectors import graph as graph_mod
from evomem.adapters.vectors.graph import Graphs, usearch_problem
from evomem.adapters.vectors.index import VectorIndex
from evomem.adapters.vectors.quantize import quantize_int8
from evomem.settings import HNSW_FROM, VECTOR_SEARCHES, Settings, SettingsError
from tests.test_vector_index import _MISSING

ROOT = Path(__file__).resolve().parents[1]
DIM = 384

pytestmark = pytest.mark.skipif(
    _MISSING is not None or usearch_problem() is not None, reason=_MISSING or usearch_problem() or ""
)


def unit_rows(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def hnsw(path: Path, **kw: object) -> VectorIndex:
    return VectorIndex(path, vector_search="hnsw", **kw)  # type: ignore[arg-type]


def built(ix: VectorIndex, namespace: str, probe: np.ndarray) -> None:
    """The first search starts the build (the scan answers it); wait for the graph."""
    ix.search(probe, namespace, 1)
    assert ix._graphs is not None and ix._graphs.wait(namespace, 60)


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [h[0] for h in hits]


def test_the_settings_match_the_adapter_and_a_bad_value_is_a_clear_error() -> None:
    assert VECTOR_SEARCHES == graph_mod.MODES and HNSW_FROM == graph_mod.HNSW_FROM
    s = Settings.from_env({"EVOMEM_VECTOR_SEARCH": "hnsw", "EVOMEM_HNSW_FROM": "1000"})
    assert (s.vectors.search, s.vectors.hnsw_from) == ("hnsw", 1000)
    assert Settings.from_env({}).vectors.search == "auto"
    with pytest.raises(SettingsError, match="EVOMEM_VECTOR_SEARCH must be one of auto, scan, hnsw"):
        Settings.from_env({"EVOMEM_VECTOR_SEARCH": "fast"})
    with pytest.raises(SettingsError, match="EVOMEM_HNSW_FROM"):
        Settings.from_env({"EVOMEM_HNSW_FROM": "-1"})
    with pytest.raises(ValueError, match="vector_search must be one of"):
        VectorIndex(":memory:", vector_search="fast")


def test_the_graph_answers_as_the_exact_search_on_a_small_namespace(tmp_path: Path) -> None:
    x = unit_rows(300, seed=1)
    stored = np.array([quantize_int8(v) for v in x], dtype=np.float32)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    with hnsw(tmp_path / "v.db") as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(300))
        built(ix, "ns", x[0])
        assert ix.stats()["graphs"] == {"ns": 300}
        for i in (0, 17, 299):
            q = x[i] + 0.3 * unit_rows(1, seed=100 + i)[0]
            exact = [f"n{j}" for j in np.argsort(-(stored @ (q / np.linalg.norm(q))))[:5]]
            assert ids(ix.search(q, "ns", 5)) == exact  # random vectors: the binary shortlist misses some
        assert "ns" not in ix.stats()["cached"]  # the bits left memory once the graph answered


def test_scan_gives_the_old_answers_and_builds_nothing(tmp_path: Path) -> None:
    x = unit_rows(100, seed=2)
    with VectorIndex(tmp_path / "v.db", vector_search="scan") as ix, VectorIndex(tmp_path / "v.db") as old:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(100))
        for i in range(0, 100, 10):
            assert ix.search(x[i], "ns", 10) == old.search(x[i], "ns", 10)
        assert ix._graphs is None and ix.stats()["graphs"] == {}
    assert not (tmp_path / "v.db.hnsw").exists()


def test_auto_takes_the_graph_from_the_size_on(tmp_path: Path) -> None:
    x = unit_rows(60, seed=3)
    with VectorIndex(tmp_path / "v.db", vector_search="auto", hnsw_from=50) as ix:
        ix.add_many((f"a{i}", "small", x[i]) for i in range(40))
        ix.add_many((f"b{i}", "big", x[i]) for i in range(60))
        ix.search(x[0], "small", 1)
        ix.search(x[0], "big", 1)
        assert ix._graphs is not None and ix._graphs.wait("big", 60)
        assert not ix._graphs.ready("small")
        assert ix.stats()["graphs"] == {"big": 60}


def test_a_namespace_is_quick_only_while_a_graph_answers_it(tmp_path: Path) -> None:
    """``quick``: recall then searches it on its own thread (speed21); a scan stays on the pool."""
    x = unit_rows(60, seed=3)
    with VectorIndex(tmp_path / "v.db", vector_search="auto", hnsw_from=50) as ix:
        ix.add_many((f"a{i}", "small", x[i]) for i in range(40))
        ix.add_many((f"b{i}", "big", x[i]) for i in range(60))
        assert not ix.quick("big")  # no graph yet
        ix.search(x[0], "small", 1)
        ix.search(x[0], "big", 1)
        assert ix._graphs is not None and ix._graphs.wait("big", 60)
        assert ix.quick("big") and not ix.quick("small") and not ix.quick("none")
    with VectorIndex(tmp_path / "v.db", vector_search="scan") as scan:
        scan.search(x[0], "big", 1)
        assert not scan.quick("big")


def test_writes_removes_and_moves_are_followed_and_namespaces_never_leak(tmp_path: Path) -> None:
    x = unit_rows(200, seed=4)
    with hnsw(tmp_path / "v.db") as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(100))
        ix.add_many((f"o{i}", "other", x[100 + i]) for i in range(50))
        built(ix, "ns", x[0])
        built(ix, "other", x[100])
        ix.add("new", "ns", x[150])  # written after the build
        assert ids(ix.search(x[150], "ns", 1)) == ["new"]
        assert ix.remove("n3")
        assert "n3" not in ids(ix.search(x[3], "ns", 100))
        ix.add("n5", "other", x[5])  # moved to another namespace
        assert "n5" not in ids(ix.search(x[5], "ns", 100))
        assert ids(ix.search(x[5], "other", 1)) == ["n5"]
        for q in x[:20]:  # never a node of the other namespace
            assert all(i.startswith("o") or i == "n5" for i in ids(ix.search(q, "other", 60)))
            assert not any(i.startswith("o") or i == "n5" for i in ids(ix.search(q, "ns", 100)))
        assert ix.stats()["graphs"] == {"ns": 99, "other": 51}


WRITER = """
import json, sys
import numpy as np
from evomem.adapters.vectors.index import VectorIndex
path, adds, removes = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
with VectorIndex(path) as ix:
    ix.add_many((node, "ns", np.asarray(v, dtype=np.float32)) for node, v in adds)
    for node in removes:
        assert ix.remove(node)
"""


def test_writes_by_another_process_are_seen_by_the_next_search(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    x = unit_rows(200, seed=5)
    with hnsw(path) as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(100))
        built(ix, "ns", x[0])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "services"), str(ROOT)])}
        adds = [("p150", x[150].tolist()), ("p151", x[151].tolist())]
        subprocess.run(
            [sys.executable, "-c", WRITER, str(path), json.dumps(adds), json.dumps(["n3"])],
            check=True,
            env=env,
            timeout=120,
        )
        assert ids(ix.search(x[150], "ns", 1)) == ["p150"]
        assert ids(ix.search(x[151], "ns", 1)) == ["p151"]
        assert "n3" not in ids(ix.search(x[3], "ns", 100))
        assert ix.stats()["graphs"] == {"ns": 101}


def test_a_purged_vector_is_never_returned_and_leaves_the_graph_and_its_file(tmp_path: Path) -> None:
    from evomem.adapters.sqlite.purge import purge_vector
    from evomem.adapters.sqlite.store import SQLiteStore

    store = SQLiteStore(tmp_path / "evomem.db")
    x = unit_rows(60, seed=6)
    secret = -x[0]
    needle = quantize_int8(secret).tobytes()
    with hnsw(store.path) as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(60))
        ix.add("secret", "ns", secret)
        built(ix, "ns", x[1])
        assert ids(ix.search(secret, "ns", 1)) == ["secret"]
        folder = Path(str(store.path) + ".hnsw")
        assert any(needle in f.read_bytes() for f in folder.glob("*.usearch"))
        with store._write() as conn:  # the store's purge, in its own transaction
            purge_vector(conn, "secret", vec_loaded=store.vec_loaded)
        assert "secret" not in ids(ix.search(secret, "ns", 61))
        graph = ix._graphs._graphs["ns"]  # type: ignore[union-attr]
        assert needle not in bytes(graph.index.save())  # its bytes left memory (every slot, freed ones too)
        assert not any(needle in f.read_bytes() for f in folder.glob("*.usearch"))  # and the disk
        assert not list(folder.glob("*.json"))  # (the saved graph is deleted; saved again at close)
    saved = list(folder.glob("*.usearch"))
    assert len(saved) == 1 and needle not in saved[0].read_bytes()
    store.close()


def test_a_saved_graph_is_reused_and_a_deleted_corrupt_or_stale_one_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "v.db"
    x = unit_rows(120, seed=7)
    with hnsw(path) as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(100))
        built(ix, "ns", x[0])
    folder = Path(str(path) + ".hnsw")
    (meta,) = folder.glob("*.json")

    def reopen() -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="evomem.adapters.vectors.graph"), hnsw(path) as ix:
            built(ix, "ns", x[0])
            assert ids(ix.search(x[7], "ns", 1)) == ["n7"]
            assert ix.stats()["graphs"]["ns"] == ix.count("ns")
        return [r.getMessage() for r in caplog.records]

    assert reopen() == []  # loaded, not rebuilt: no warning
    # Written while no index was open: the saved graph catches up from the log.
    with VectorIndex(path) as plain:
        plain.add("late", "ns", x[110])
        plain.remove("n2")
    assert reopen() == []
    with hnsw(path) as ix:
        built(ix, "ns", x[0])
        assert ids(ix.search(x[110], "ns", 1)) == ["late"] and "n2" not in ids(ix.search(x[2], "ns", 120))
    (usearch_file,) = folder.glob("*.usearch")
    usearch_file.write_bytes(usearch_file.read_bytes()[: usearch_file.stat().st_size // 2])  # corrupt
    warned = reopen()
    assert len(warned) == 1 and "building it again" in warned[0]
    data = json.loads(meta.read_text())  # stale: a position the log never reached (another file's graph)
    meta.write_text(json.dumps({**data, "seq": data["seq"] + 1000}))
    warned = reopen()
    assert len(warned) == 1 and "outside the log" in warned[0]
    for f in folder.iterdir():  # deleted
        f.unlink()
    assert reopen() == []  # nothing saved: built from the file, nothing to warn about
    assert len(list(folder.glob("*.usearch"))) == 1  # and saved again


def test_two_processes_saving_one_namespace_leave_a_graph_that_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A save that lands in the middle of another's (between its JSON and its removal of older files)
    waits for it: without the folder's lock the first save then deleted the second's file, which the
    JSON names."""
    import threading
    import time

    path = tmp_path / "v.db"
    x = unit_rows(130, seed=11)
    with hnsw(path) as first, hnsw(path) as second:
        first.add_many((f"n{i}", "ns", x[i]) for i in range(100))
        built(first, "ns", x[0])
        second.add("late", "ns", x[120])
        built(second, "ns", x[0])
        g1 = first._graphs._graphs["ns"]  # type: ignore[union-attr]
        g2 = second._graphs._graphs["ns"]  # type: ignore[union-attr]
        assert g1.seen < g2.seen  # two positions: two file names
        replace = graph_mod.os.replace
        racer: list[threading.Thread] = []

        def replace_then_race(src: object, dst: object) -> None:
            replace(src, dst)  # type: ignore[arg-type]
            if not racer and str(dst).endswith(".json"):  # the first save's JSON: its last write but one
                racer.append(threading.Thread(target=second._graphs._save, args=("ns", g2)))  # type: ignore[union-attr]
                racer[0].start()
                time.sleep(0.5)  # the other save runs to its end here, unless it waits for the lock

        monkeypatch.setattr(graph_mod.os, "replace", replace_then_race)
        first._graphs._save("ns", g1)  # type: ignore[union-attr]
        racer[0].join(30)
        monkeypatch.setattr(graph_mod.os, "replace", replace)
        folder = Path(str(path) + ".hnsw")
        (meta,) = folder.glob("*.json")
        assert (folder / json.loads(meta.read_text())["file"]).exists()
        g1.saved = g2.saved = g1.seen = g2.seen  # nothing left to save at close
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="evomem.adapters.vectors.graph"), hnsw(path) as ix:
        built(ix, "ns", x[0])
        assert ids(ix.search(x[120], "ns", 1)) == ["late"]
    assert [r.getMessage() for r in caplog.records] == []


def test_a_graph_behind_the_compacted_log_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evomem.adapters.vectors import index as vector_index

    monkeypatch.setattr(vector_index, "LOG_KEEP", 20)
    path = tmp_path / "v.db"
    x = unit_rows(200, seed=8)
    with hnsw(path) as ix, VectorIndex(path) as writer:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(50))
        built(ix, "ns", x[0])
        for i in range(50, 150):  # another object's writes, compacted past the graph's position
            writer.add(f"n{i}", "ns", x[i])
        assert ids(ix.search(x[140], "ns", 1)) == ["n140"]  # the scan answers while it rebuilds
        assert ix._graphs is not None and ix._graphs.wait("ns", 60)
        assert ids(ix.search(x[145], "ns", 1)) == ["n145"]
        assert ix.stats()["graphs"] == {"ns": 150}


def test_usearch_missing_is_one_warning_and_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(graph_mod, "usearch_problem", lambda: "usearch cannot be imported (test)")
    x = unit_rows(30, seed=9)
    with caplog.at_level(logging.WARNING, logger="evomem.adapters.vectors.graph"), hnsw(tmp_path / "v.db") as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(30))
        for i in range(5):
            assert ids(ix.search(x[i], "ns", 1)) == [f"n{i}"]
        assert ix.stats()["graphs"] == {}
    assert len(caplog.records) == 1 and "binary scan answers" in caplog.records[0].getMessage()


def test_a_graph_that_fails_is_one_warning_and_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    x = unit_rows(40, seed=10)
    with hnsw(tmp_path / "v.db") as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(40))
        built(ix, "ns", x[0])

        def broken(self: object, query: object, want: int) -> list[int]:
            raise RuntimeError("broken graph")

        monkeypatch.setattr(graph_mod.Graph, "nearest", broken)
        with caplog.at_level(logging.WARNING, logger="evomem.adapters.vectors.graph"):
            for i in range(5):
                assert ids(ix.search(x[i], "ns", 1)) == [f"n{i}"]
        assert len(caplog.records) == 1 and "broken graph" in caplog.records[0].getMessage()
        assert ix.stats()["graphs"] == {}


def test_a_note_is_found_by_meaning_through_the_graph_right_after_its_deferred_write(tmp_path: Path) -> None:
    from evomem.bootstrap.embedded import build_embedded
    from evomem.bootstrap.vectors import vectors_problem

    if vectors_problem() is not None:
        pytest.skip(f"hybrid recall cannot run here: {vectors_problem()}")
    settings = Settings(db=str(tmp_path / "m.db"), vectors="on", vector_search="hnsw")
    service = build_embedded(settings)
    try:
        for text in ("The team picked Grafana for dashboards.", "Deploys go out on Tuesdays after the standup."):
            service.remember(text)
        vectors = service.vectors
        assert vectors is not None
        index = vectors.index  # type: ignore[attr-defined]
        assert vectors.nearest("dashboards", namespace="default", limit=1)  # starts the build
        assert index._graphs.wait("default", 60)
        node = service.remember("Bookkeeping records now live in SQLite.").node
        near = vectors.nearest("where are accounting entries persisted", namespace="default", limit=3)
        assert near[0][0] == node.id  # the deferred write waited for, then found through the graph
        assert index.stats()["graphs"] == {"default": 3}
        service.forget(node.id, purge=True)
        near = vectors.nearest("where are accounting entries persisted", namespace="default", limit=3)
        assert node.id not in [i for i, _ in near]
    finally:
        service.close()


def test_graphs_validate_their_arguments() -> None:
    with pytest.raises(ValueError, match="vector search must be one of"):
        Graphs(lambda: None, dim=DIM, model=None, mode="fast")
    with pytest.raises(ValueError, match="needs the binary scan"):
        VectorIndex(":memory:", vector_search="hnsw", rescore="float32")
