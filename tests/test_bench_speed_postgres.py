"""The speed bench on both engines (``make bench-postgres-speed``), end to end on a tiny corpus:
the SQLite store built, measured next to raw FTS5, loaded into a real PostgreSQL 17 + pgvector
(``postgres_server.py``) and measured there next to the raw tsvector, pgvector and insert floors,
in one run. Nothing about speed is asserted: only that every row is measured, on the same data.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from postgres_server import PostgresServer

from bench import speed

NOTES, REMEMBERS = 300, 3


def test_speed_bench_measures_both_engines_on_the_same_data(tmp_path: Path) -> None:
    import psycopg

    server = PostgresServer.shared()
    out, work = tmp_path / "results", tmp_path / "work"
    rc = speed.main(
        ["--sizes", str(NOTES), "--rounds", "1", "--remembers", str(REMEMBERS), "--paths", "in_core,in_core_hybrid",
         "--postgres", "on", "--only-with-postgres", "--database-url", server.admin_url("postgres"),
         "--name", "speed_postgres", "--out", str(out), "--workdir", str(work)]
    )  # fmt: skip
    assert rc == 0
    report = json.loads((out / "speed_postgres.json").read_text())
    (size,) = report["sizes"]
    assert size["notes"] == NOTES
    hybrid = "vector_floor" in size  # the embedding model and sqlite-vec are installed
    assert list(size["paths"]) == (["in_core", "in_core_hybrid"] if hybrid else ["in_core"])  # no MCP paths
    assert size["paths"]["in_core"]["remember"]["n"] == REMEMBERS
    for path in size["paths"].values():  # recall with fresh queries too, and remember against both recalls
        assert path["recall_fresh"]["n"] == len(speed.QUERIES)
        assert path["remember_vs_recall_p50"] > 0 and path["remember_vs_recall_fresh_p95"] > 0
    pg = size["postgres"]
    assert pg["tsvector_floor"]["recall"]["n"] == len(speed.QUERIES)
    assert pg["tsvector_floor"]["remember"]["n"] == REMEMBERS
    assert set(pg["paths"]) == ({"pg_in_core", "pg_in_core_hybrid"} if hybrid else {"pg_in_core"})
    for path in pg["paths"].values():
        assert path["recall"]["n"] == len(speed.QUERIES)
        assert path["remember"]["n"] == REMEMBERS
        assert path["recall_vs_floor_p50"] > 0
    if hybrid:
        assert pg["pgvector_floor"]["vector_search"]["n"] == len(speed.QUERIES)
        assert "vectors_s" in pg["load"] and "hnsw_index_s" in pg["load"]

    # The same data: every note of the SQLite store is in PostgreSQL, with the same text, and
    # only the remembers of the PostgreSQL paths were added.
    with sqlite3.connect(work / f"speed-{NOTES}.db") as lite:
        notes = dict(lite.execute("SELECT id, raw_text FROM nodes"))
        vectors = lite.execute("SELECT count(*) FROM vec_items").fetchone()[0] if hybrid else 0
    url = server.admin_url(f"speed_{NOTES}")
    try:
        with psycopg.connect(url) as conn:
            there = dict(conn.execute("SELECT id, raw_text FROM nodes").fetchall())
            pg_vectors = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    finally:
        server.drop(url)
    assert len(notes) == NOTES
    assert {k: there.get(k) for k in notes} == notes
    assert len(there) == NOTES + REMEMBERS * len(pg["paths"])
    assert pg_vectors >= vectors

    md = (out / "speed_postgres.md").read_text()
    for row in ("raw FTS5", "raw tsvector", "| pg_in_core |", "Loading PostgreSQL", "remember ÷ fresh recall"):
        assert row in md
    if hybrid:
        assert "raw pgvector HNSW" in md


def test_only_with_postgres_skips_with_a_reason_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = speed.main(
        ["--sizes", "10", "--postgres", "off", "--only-with-postgres", "--name", "x", "--out", str(tmp_path)]
    )
    assert rc == 0
    assert "skipped, PostgreSQL cannot be benchmarked here" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


def test_unknown_path_is_refused() -> None:
    with pytest.raises(SystemExit):
        speed.main(["--paths", "in_core,over_carrier_pigeon"])


def test_fresh_queries_are_new_distinct_and_the_same_each_run() -> None:
    fresh = speed.fresh_queries(400, seed=1)
    assert len(set(fresh)) == 400 and not set(fresh) & set(speed.QUERIES)
    assert fresh == speed.fresh_queries(400, seed=1) != speed.fresh_queries(400, seed=2)
    with pytest.raises(ValueError):
        speed.fresh_queries(5001, seed=1)
