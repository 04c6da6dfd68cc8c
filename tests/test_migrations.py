"""Schema migrations: named, recorded, applied once, safe when processes race to open a file."""

from __future__ import annotations

import multiprocessing as mp
import os
from contextlib import closing
from pathlib import Path

import pytest

from evomem.adapters.sqlite import schema as sqlite_schema
from evomem.adapters.sqlite.driver import sqlite as sqlite3
from evomem.adapters.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService


def migrations_table(path: Path) -> list[tuple[int, str, int]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").fetchall()


def object_names(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}


def test_a_fresh_file_records_every_migration_by_name(db_path):
    store = SQLiteStore(db_path)
    store.close()

    rows = migrations_table(db_path)
    assert [(v, n) for v, n, _ in rows] == [(i, name) for i, (name, _) in enumerate(MIGRATIONS, start=1)]
    assert [n for _, n, _ in rows][:2] == ["0001_nodes_chains_fts", "0002_link_audit"]
    assert all(applied > 0 for _, _, applied in rows)
    assert {"nodes", "nodes_fts", "link_audit", "schema_migrations"} <= object_names(db_path)


def test_migration_names_are_unique_and_ordered():
    names = [name for name, _ in MIGRATIONS]
    assert len(names) == len(set(names)) == SCHEMA_VERSION
    assert names == sorted(names)
    assert all(name[:4].isdigit() for name in names)


def test_schema_version_is_the_number_of_migrations(store):
    assert store.schema_version() == SCHEMA_VERSION == len(MIGRATIONS)
    assert store.stats().schema_version == SCHEMA_VERSION


def test_opening_an_existing_file_again_does_not_reapply_migrations(db_path):
    first = SQLiteStore(db_path)
    node_id = MemoryService.local(first).remember("The ledger uses SQLite.").node.id
    first.close()
    before = migrations_table(db_path)

    for _ in range(2):
        again = SQLiteStore(db_path)
        assert again.schema_version() == SCHEMA_VERSION
        assert again.get(node_id) is not None, "data survives a reopen"
        again.close()

    assert migrations_table(db_path) == before, "same rows, same applied_at"


def test_two_stores_open_at_once_on_one_file_share_one_schema(db_path):
    a = SQLiteStore(db_path)
    b = SQLiteStore(db_path)
    try:
        node_id = MemoryService.local(a).remember("The ledger uses SQLite.").node.id
        assert b.get(node_id) is not None
        assert len(migrations_table(db_path)) == SCHEMA_VERSION
    finally:
        a.close()
        b.close()


def test_an_older_file_gets_only_the_missing_migrations(db_path, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(sqlite_schema, "MIGRATIONS", MIGRATIONS[:1])
        old = SQLiteStore(db_path)
        old.close()
    # What an older version wrote: a row with only the first migration's columns.
    node_id = "01JA0000000000000000000000"
    raw = sqlite3.connect(db_path)
    raw.execute(
        "INSERT INTO nodes (id, raw_text, created_at, status, chain_root, version, extraction_state) "
        "VALUES (?, 'Written by an older version.', 1, 'active', ?, 1, 'pending')",
        (node_id, node_id),
    )
    raw.commit()
    raw.close()
    assert [v for v, _, _ in migrations_table(db_path)] == [1]
    assert "link_audit" not in object_names(db_path)
    first_applied = migrations_table(db_path)[0]

    upgraded = SQLiteStore(db_path)
    try:
        assert upgraded.schema_version() == SCHEMA_VERSION
        assert upgraded.get(node_id) is not None
    finally:
        upgraded.close()
    rows = migrations_table(db_path)
    assert rows[0] == first_applied, "migration 1 was not applied again"
    assert [v for v, _, _ in rows] == list(range(1, SCHEMA_VERSION + 1))
    assert "link_audit" in object_names(db_path)


def test_a_failing_migration_rolls_back_and_records_nothing(db_path, monkeypatch):
    broken = [*MIGRATIONS, ("9999_broken", "CREATE TABLE half_done (x INTEGER);\nTHIS IS NOT SQL;")]
    monkeypatch.setattr(sqlite_schema, "MIGRATIONS", broken)
    with pytest.raises(sqlite3.OperationalError):
        SQLiteStore(db_path)
    names = object_names(db_path)  # the whole run is one transaction: nothing is left behind
    assert not names & {"half_done", "nodes", "link_audit", "schema_migrations"}, names
    monkeypatch.setattr(sqlite_schema, "MIGRATIONS", MIGRATIONS)
    store = SQLiteStore(db_path)  # and a fixed release migrates the same file cleanly
    store.close()
    assert len(migrations_table(db_path)) == SCHEMA_VERSION


def test_journal_mode_is_wal(store, db_path):
    assert store._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with closing(sqlite3.connect(db_path)) as conn:  # persisted in the file, seen by any opener
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_foreign_keys_and_secure_delete_are_on(store):
    conn = store._conn()
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1


def _open_each(paths: list[str], start: object, results: object) -> None:
    """Open each fresh file in turn, all processes together (a barrier per file)."""
    for path in paths:
        try:
            start.wait()  # type: ignore[attr-defined]
            store = SQLiteStore(path)
            # Each process its own text: identical notes moments apart would be one (the dedupe window).
            node_id = MemoryService.local(store).remember(f"Opened concurrently by process {os.getpid()}.").node.id
            version = store.schema_version()
            store.close()
            results.put((path, "ok", version, node_id))  # type: ignore[attr-defined]
        except BaseException as exc:
            results.put((path, "error", repr(exc), None))  # type: ignore[attr-defined]


@pytest.mark.parametrize("processes", [2, 4])
def test_processes_opening_a_fresh_file_at_the_same_time_all_succeed(tmp_path, processes):
    rounds = 16  # the race is narrow: try it on several fresh files
    paths = [str(tmp_path / f"race-{i}.db") for i in range(rounds)]
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(processes)
    results = ctx.Queue()
    procs = [ctx.Process(target=_open_each, args=(paths, start, results)) for _ in range(processes)]
    for p in procs:
        p.start()
    got = [results.get(timeout=60) for _ in range(processes * rounds)]
    for p in procs:
        p.join(timeout=30)

    assert [g for g in got if g[1] != "ok"] == []
    assert {g[2] for g in got} == {SCHEMA_VERSION}
    for path in paths:
        rows = migrations_table(Path(path))
        assert [v for v, _, _ in rows] == list(range(1, SCHEMA_VERSION + 1)), "each migration recorded once"
        store = SQLiteStore(path)
        try:
            mine = {g[3] for g in got if g[0] == path}
            assert len(mine) == processes
            assert set(store.get_many(mine)) == mine
            assert store.check_invariants() == []
        finally:
            store.close()
