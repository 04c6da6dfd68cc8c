"""The cost curve's corpus and bench (``bench.datagen``, ``bench.curve``), on tiny stores: the bulk load
writes a real EvoMem store (the product's schema, opened and searched by the product afterwards), with
the generator's memory bounded by its topic window; the curve measures every row it reports."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ lives at the project root, next to tests/ (not an installed package)
    sys.path.insert(0, str(ROOT))

from bench import curve, datagen  # noqa: E402
from evomem.adapters.sqlite.store import SQLiteStore  # noqa: E402
from evomem.bootstrap.embedded import build_embedded  # noqa: E402
from evomem.settings import Settings  # noqa: E402


def _schema(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        return sorted(conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall())


def test_bulk_built_store_is_the_products_schema_and_the_product_reads_it(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.db"
    SQLiteStore(fresh).close()
    built = datagen.build(tmp_path / "built.db", 3_000, seed=3, progress=False, batch=700, window=100)
    assert not list(tmp_path.glob("*.building*"))  # renamed into place once complete
    assert _schema(built) == _schema(fresh)  # indexes and the FTS trigger were put back as created
    with sqlite3.connect(built) as conn:
        conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('integrity-check')")  # FTS matches the rows
        count, heads = conn.execute(
            "SELECT count(*), sum(superseded_by IS NULL) FROM nodes WHERE status != 'forgotten'"
        ).fetchone()
        replaced = conn.execute("SELECT count(*) FROM nodes WHERE supersedes IS NOT NULL").fetchone()[0]
    assert count == 3_000 and replaced > 300 and heads == count - replaced
    store = SQLiteStore(built)
    try:
        assert store.check_invariants() == []
    finally:
        store.close()
    service = build_embedded(Settings(db=str(built), vectors="off"))
    try:
        hits = service.recall("which queue does billing use", k=5)
        assert hits.results and all(r.head.status == "active" for r, _ in hits.results)
        stored = service.remember("We moved the ledger cache from Redis to Memcached, Redis was overkill.")
        found = service.recall("ledger cache memcached", k=5)
        assert stored.node.id in {r.head.id for r, _ in found.results}  # the trigger is back: searchable at once
    finally:
        service.close()


def test_generator_memory_is_bounded_by_its_topic_window() -> None:
    window = 50
    alive: dict[tuple[str, str, int], bool] = {}
    evicted = 0
    for note in datagen.notes(2_000, seed=5, window=window):
        topic = note["topic"]
        if note["evicted"] is not None:
            evicted += 1
            alive.pop(note["evicted"], None)  # type: ignore[call-overload]
        if note["replaces"]:
            assert topic in alive  # a replacement picks a topic still in the window
        alive[topic] = True  # type: ignore[index]
        assert len(alive) <= window
    assert evicted > 0
    # Below the window the generator writes what it wrote before it had one.
    assert list(datagen.notes(300, seed=5, window=10**6)) == list(datagen.notes(300, seed=5))


def test_curve_measures_every_row_on_a_tiny_store(tmp_path: Path) -> None:
    out = tmp_path / "out"
    rc = curve.main(
        ["--sizes", "300,600", "--out", str(out), "--rounds", "1", "--remembers", "2", "--vectors-up-to", "0",
         "--no-progress"]
    )  # fmt: skip
    assert rc == 0
    report = json.loads((out / "cost_curve.json").read_text())
    assert [s["notes"] for s in report["sizes"]] == [300, 600]
    for size in report["sizes"]:
        words = size["served"]["words"]
        assert words["recall"]["n"] == len(curve.QUERIES) and words["remember"]["n"] == 2
        assert words["startup_ms"] > 0 and words["peak_rss_mib"] > 0
        assert size["db_bytes"] > 0 and "build_s" in size["load"]
        assert size["floors"]["fts5_recall_k50"]["n"] == len(curve.QUERIES)
        assert size["floors"]["tantivy"]["recall_k50"]["n"] == len(curve.QUERIES)
        on_tantivy = size["served"]["tantivy"]  # the same store served with EVOMEM_WORD_INDEX=tantivy
        assert on_tantivy["recall"]["n"] == len(curve.QUERIES) and on_tantivy["remember"]["n"] == 2
    assert not list(tmp_path.rglob("*.words"))  # the copies' Tantivy indexes went with them
    assert (out / "cost_curve.png").stat().st_size > 0
    assert "| 600 |" in (out / "cost_curve.md").read_text()


def test_curve_interleaves_the_modes_and_pools_their_passes(tmp_path: Path, monkeypatch) -> None:
    calls: list[tuple[str, int, int, bool]] = []
    real = curve.served

    def recorded(db: Path, mode: str, rounds: int, remembers: int, seed: int, first: bool = True) -> dict:
        calls.append((mode, rounds, remembers, first))
        return real(db, mode, rounds, remembers, seed, first)

    monkeypatch.setattr(curve, "served", recorded)
    out = tmp_path / "out"
    rc = curve.main(
        ["--sizes", "300", "--out", str(out), "--rounds", "3", "--remembers", "3", "--passes", "2",
         "--vectors-up-to", "0", "--no-progress"]
    )  # fmt: skip
    assert rc == 0
    # one process per mode in turn, each mode's rounds and remembers split between its two passes
    assert calls == [("words", 2, 2, True), ("tantivy", 2, 2, True), ("words", 1, 1, False), ("tantivy", 1, 1, False)]
    (size,) = json.loads((out / "cost_curve.json").read_text())["sizes"]
    assert size["passes"] == 2
    for mode in ("words", "tantivy"):
        row = size["served"][mode]
        assert row["passes"] == 2 and row["recall"]["n"] == 3 * len(curve.QUERIES) and row["remember"]["n"] == 3
        assert "recall_ms" not in row and row["startup_ms"] > 0
    assert "processes per mode, by size: 300: 2" in (out / "cost_curve.md").read_text()
    assert not list(tmp_path.rglob("curve-300-*.db"))  # the copies went after the last pass


def test_curve_serves_the_products_defaults_with_their_indexes_built_first(tmp_path: Path, monkeypatch) -> None:
    from bench.speed import vectors_available

    if not vectors_available():
        import pytest

        pytest.skip("no embedding model here")
    monkeypatch.setenv("EVOMEM_HNSW_FROM", "100")  # the graph and Tantivy at a tiny size (the children read it)
    monkeypatch.setenv("EVOMEM_TANTIVY_FROM", "100")
    out = tmp_path / "out"
    rc = curve.main(
        ["--sizes", "300", "--out", str(out), "--rounds", "1", "--remembers", "2", "--no-progress",
         "--usearch-up-to", "0"]
    )  # fmt: skip
    assert rc == 0
    (size,) = json.loads((out / "cost_curve.json").read_text())["sizes"]
    assert set(size["served"]) == {"words", "hybrid", "default", "tantivy"}
    default = size["served"]["default"]
    assert default["vectors"] and default["recall"]["n"] == len(curve.QUERIES) and default["remember"]["n"] == 2
    assert default["built"]["word_index_build_s"] >= 0  # its Tantivy index built before its process
    assert size["graph"]["graph"] is True and size["graph"]["graph_build_s"] >= 0  # the graph answered its floor
    assert size["floors"]["graph_k20"]["n"] == len(curve.QUERIES)
    assert default["graph_wait_ms"] < 5_000  # the graph was there: loaded, not built, by the served process
    assert not list(tmp_path.rglob("*.hnsw")) and not list(tmp_path.rglob("*.words"))  # went with the copies
    assert "The product's defaults" in (out / "cost_curve.md").read_text()
