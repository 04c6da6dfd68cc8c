"""``auto``'s Tantivy index built in the background (``words.BuildingWords``): the store answers
from FTS5 at once, the index is built in a thread and swapped in once it has read the log written
meanwhile; closing the store stops a build, a crash loses nothing; and the words log stays bounded
on a store that settles on FTS5. Real SQLite, real Tantivy: the hooks below only hold the build
at a point, with events."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evomem.adapters.sqlite import tantivy_folder, tantivy_index, words, words_log
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.model import NewNote
from tests.test_word_index_auto import filled

ROOT = Path(__file__).resolve().parents[1]


def found(store: SQLiteStore, *terms: str) -> set[str]:
    return {h.node_id for h in store.search(list(terms), namespace="default", limit=50, active_only=False)}


def building(store: SQLiteStore) -> words.BuildingWords:
    index = store._words
    assert isinstance(index, words.BuildingWords)
    return index


def log_rows(path: Path, store: SQLiteStore | None = None) -> int | None:
    """The words log's rows in the file (read on ``store``'s connection while it is open: its
    writes may be in its WAL only); None without the log."""
    conn = store._db.get() if store is not None else sqlite3.connect(path)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'words_log'").fetchone() is None:
            return None
        return int(conn.execute("SELECT count(*) FROM words_log").fetchone()[0])
    finally:
        if store is None:
            conn.close()


class Held:
    """A point of the build held until ``go``: ``entered`` is set when the build reaches it."""

    def __init__(self) -> None:
        self.entered, self.go = threading.Event(), threading.Event()

    def around(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def held(index: tantivy_index.TantivyWords, *args: Any) -> Any:
            self.entered.set()
            assert self.go.wait(30)
            return original(index, *args)

        return held


@pytest.fixture
def caught_up_held(monkeypatch: pytest.MonkeyPatch) -> Iterator[Held]:
    """The build held after its snapshot of the notes, before it reads the log written since."""
    held = Held()
    monkeypatch.setattr(
        tantivy_index.TantivyWords, "_catch_up_at_open", held.around(tantivy_index.TantivyWords._catch_up_at_open)
    )
    yield held
    held.go.set()


def test_a_large_store_answers_before_its_index_is_built_then_swaps_to_it(
    tmp_path: Path, caught_up_held: Held, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(tantivy_index, "PROGRESS_FROM", 1)
    db = tmp_path / "b.db"
    ids = filled(db)
    store = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        build = building(store)
        assert caught_up_held.entered.wait(30)  # the notes are in the new index, not committed to the swap
        assert store.word_index == "fts5" and not build.done.is_set()
        assert found(store, "ledger", "pipeline", "grafana") == set(ids)  # FTS5 answers meanwhile
        during = store.insert(NewNote(raw_text="The cache is warmed from the nightly snapshot.")).id
        assert found(store, "snapshot") == {during}
        assert not store.wait_for_word_index(timeout=0.01)  # the build is held
        caught_up_held.go.set()
        assert store.wait_for_word_index(timeout=30) and build.done.is_set()
        assert store.word_index == "tantivy"

        def no_fts5(*args: object, **kwargs: object) -> None:
            raise AssertionError("searched FTS5 after the swap")

        monkeypatch.setattr(words.fulltext, "search", no_fts5)
        assert found(store, "snapshot") == {during}  # written during the build: read from the log
        assert found(store, "ledger", "pipeline", "grafana") == set(ids)
        after = store.insert(NewNote(raw_text="Snapshots are kept for thirty days.")).id
        assert found(store, "snapshot", "snapshots") == {during, after}
    finally:
        store.close()
    said = [r.getMessage() for r in caplog.records]
    assert any("building" in m and "in the background" in m for m in said)  # the start
    assert any(m.startswith("word index: building 100%") for m in said)  # the progress
    assert any("built in" in m and "searches use it from now on" in m for m in said)  # the swap
    again = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:  # the index was committed: the next open uses it at once
        assert isinstance(again._words, tantivy_index.TantivyWords) and again.wait_for_word_index(timeout=0)
        assert found(again, "snapshot", "snapshots") == {during, after}
    finally:
        again.close()


def bounds_state(path: Path, store: SQLiteStore | None = None) -> int:
    """``term_bounds_state.rows``: the rows the FTS5 term bounds have seen; -1: not kept (read on
    ``store``'s connection while it is open)."""
    conn = store._db.get() if store is not None else sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT rows FROM term_bounds_state").fetchone()[0])
    finally:
        if store is None:
            conn.close()


def test_a_build_does_not_wait_for_the_fts5_term_bounds(tmp_path: Path, caught_up_held: Held) -> None:
    """A store once on Tantivy (its FTS5 bounds not kept) that lost its index answers at once: the
    bounds are not rebuilt for the build's time, and FTS5 bounds its searches with ``k1 + 1``."""
    db = tmp_path / "t.db"
    ids = filled(db)
    assert bounds_state(db) == len(ids)
    caught_up_held.go.set()
    SQLiteStore(db, word_index="tantivy").close()
    assert bounds_state(db) == -1
    shutil.rmtree(tmp_path / "t.db.words")
    caught_up_held.go.clear()
    store = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        assert caught_up_held.entered.wait(30) and store.word_index == "fts5"
        assert bounds_state(db, store) == -1  # not rebuilt at open
        assert found(store, "ledger", "pipeline", "grafana") == set(ids)
        caught_up_held.go.set()
        assert building(store).done.wait(30) and store.word_index == "tantivy"
    finally:
        store.close()
    assert bounds_state(db) == -1


def test_an_index_far_behind_the_log_catches_up_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=words.__name__)
    db = tmp_path / "l.db"
    ids = filled(db)
    SQLiteStore(db, word_index="tantivy").close()
    on_fts5 = SQLiteStore(db, word_index="fts5")  # the folder is there: the log keeps these writes
    try:
        ids += [on_fts5.insert(NewNote(raw_text=f"Runbook {n} covers the failover.")).id for n in range(3)]
    finally:
        on_fts5.close()
    near = SQLiteStore(db, word_index="auto", tantivy_from=1)  # 3 writes behind: opened at once
    try:
        assert isinstance(near._words, tantivy_index.TantivyWords)
    finally:
        near.close()
    on_fts5 = SQLiteStore(db, word_index="fts5")
    try:
        ids += [on_fts5.insert(NewNote(raw_text=f"Runbook {n} covers the rollback.")).id for n in range(3)]
    finally:
        on_fts5.close()
    monkeypatch.setattr(tantivy_folder, "BEHIND_FROM", 3)
    far = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        assert building(far).done.wait(30) and far.word_index == "tantivy"
        assert found(far, "ledger", "pipeline", "grafana", "runbook") == set(ids)
    finally:
        far.close()
    assert any("the index is 3 writes behind" in r.getMessage() for r in caplog.records)


def test_a_second_store_leaves_a_build_in_progress_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another store (another process) opening the file while the index is built, before anything
    is committed in it, finds the folder held: it neither builds nor wipes it, and searches FTS5."""
    held = Held()
    monkeypatch.setattr(tantivy_index.TantivyWords, "_rebuild", held.around(tantivy_index.TantivyWords._rebuild))
    db = tmp_path / "s.db"
    ids = filled(db)
    first = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        assert held.entered.wait(30)
        second = SQLiteStore(db, word_index="auto", tantivy_from=1)
        try:
            assert building(second).done.wait(30) and second.word_index == "fts5"
            assert found(second, "ledger", "pipeline", "grafana") == set(ids)
        finally:
            second.close()
        held.go.set()
        assert building(first).done.wait(30) and first.word_index == "tantivy"
        assert found(first, "ledger", "pipeline", "grafana") == set(ids)
    finally:
        first.close()
    assert any("held by another process" in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


def test_up_to_date_term_bounds_are_kept_during_a_build_and_dropped_at_the_swap(
    tmp_path: Path, caught_up_held: Held
) -> None:
    db = tmp_path / "u.db"
    ids = filled(db)  # written on FTS5: its bounds are up to date
    store = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        assert caught_up_held.entered.wait(30) and store.word_index == "fts5"
        assert bounds_state(db, store) == len(ids)  # kept while FTS5 answers
        ids.append(store.insert(NewNote(raw_text="The queue moved to NATS.")).id)
        assert bounds_state(db, store) == len(ids)
        caught_up_held.go.set()
        assert building(store).done.wait(30) and store.word_index == "tantivy"
        assert bounds_state(db, store) == -1  # as at an open on Tantivy
    finally:
        store.close()


def test_closing_the_store_during_a_build_stops_it_and_the_next_open_builds_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=words.__name__)
    db = tmp_path / "c.db"
    ids = filled(db)
    entered = threading.Event()
    rebuild = tantivy_index.TantivyWords._rebuild

    def until_stopped(index: tantivy_index.TantivyWords, conn: sqlite3.Connection) -> int:
        entered.set()
        assert index._stop_build is not None and index._stop_build.wait(30)  # the store closes
        return rebuild(index, conn)  # sees the stop at its first note

    monkeypatch.setattr(tantivy_index.TantivyWords, "_rebuild", until_stopped)
    store = SQLiteStore(db, word_index="auto", tantivy_from=1)
    build = building(store)
    assert entered.wait(30)
    assert found(store, "ledger") == {ids[0]}
    store.close()
    assert build.done.is_set() and not build._thread.is_alive()
    assert any("stopped (the store closes)" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(tantivy_index.TantivyWords, "_rebuild", rebuild)
    again = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:  # nothing was committed: built again, in the background
        assert building(again).done.wait(30) and again.word_index == "tantivy"
        assert found(again, "ledger", "pipeline", "grafana") == set(ids)
    finally:
        again.close()


CRASH = """
import os, sys, threading
sys.path[:0] = [{services!r}, {root!r}]
from evomem.adapters.sqlite import tantivy_index
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.model import NewNote
inserted = threading.Event()
def crash(index, *args, **kwargs):
    inserted.wait(30)
    os._exit(3)  # the process dies in the middle of the build
tantivy_index.TantivyWords._pending = crash
store = SQLiteStore({db!r}, word_index="auto", tantivy_from=1)
node = store.insert(NewNote(raw_text="The cron jobs moved to Temporal workflows."))
print(node.id, flush=True)
inserted.set()
store._words._thread.join()
"""


def test_a_crash_during_the_build_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    ids = filled(db)
    script = CRASH.format(services=str(ROOT / "services"), root=str(ROOT), db=str(db))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 3, out.stderr  # died in the build
    node_id = out.stdout.split()[0]
    store = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        assert building(store).done.wait(30) and store.word_index == "tantivy"
        assert found(store, "ledger", "pipeline", "grafana") == set(ids)
        assert found(store, "temporal") == {node_id}
    finally:
        store.close()


def test_an_fts5_open_drops_a_log_no_index_reads(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    ids = filled(db)
    SQLiteStore(db, word_index="tantivy").close()
    assert log_rows(db) == 0
    shutil.rmtree(tmp_path / "d.db.words")  # nothing beside the file will read the log
    store = SQLiteStore(db, word_index="fts5")
    try:
        assert log_rows(db, store) is None  # dropped, triggers and all
        ids.append(store.insert(NewNote(raw_text="The queue moved to NATS.")).id)
        assert log_rows(db, store) is None
    finally:
        store.close()
    later = SQLiteStore(db, word_index="tantivy")  # builds from the notes
    try:
        assert found(later, "ledger", "pipeline", "grafana", "nats") == set(ids)
    finally:
        later.close()


def test_an_fts5_store_keeps_the_log_bounded_and_an_index_behind_it_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(words_log, "LOG_KEEP", 3)
    monkeypatch.setattr(words, "TRIM_EVERY", 4)
    db = tmp_path / "e.db"
    ids = filled(db)
    SQLiteStore(db, word_index="tantivy").close()  # an index beside the file: the log may be read again
    store = SQLiteStore(db, word_index="auto", tantivy_from=100)  # below the threshold: FTS5 for good
    try:
        for n in range(20):
            ids.append(store.insert(NewNote(raw_text=f"Runbook {n} covers the failover.")).id)
            rows = log_rows(db, store)
            assert rows is not None and rows <= 3 + 4  # trimmed to LOG_KEEP every TRIM_EVERY writes
    finally:
        store.close()
    again = SQLiteStore(db, word_index="tantivy")  # its watermark is in the trimmed part: rebuilt
    try:
        assert found(again, "ledger", "pipeline", "grafana", "runbook") == set(ids)
        assert len(again._words.indexed_rowids()) == len(ids)  # type: ignore[attr-defined]
    finally:
        again.close()


def test_the_log_is_pruned_on_tantivy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tantivy_index, "PRUNE_EVERY", 5)
    db = tmp_path / "p.db"
    store = SQLiteStore(db, word_index="tantivy")
    try:
        for n in range(30):
            store.insert(NewNote(raw_text=f"Runbook {n} covers the failover."))
            store._words.flush()
        rows = log_rows(db, store)
        assert rows is not None and rows <= 5
    finally:
        store.close()


def test_a_failed_build_settles_on_fts5_and_drops_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "f.db"
    ids = filled(db)
    SQLiteStore(db, word_index="tantivy").close()
    shutil.rmtree(tmp_path / "f.db.words")
    assert log_rows(db) == 0

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tantivy_index.TantivyWords, "__init__", full_disk)
    store = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        assert building(store).done.wait(30) and store.word_index == "fts5"
        assert log_rows(db, store) is None
        assert bounds_state(db, store) == len(ids)  # FTS5 for good: its term bounds rebuilt and kept
        ids.append(store.insert(NewNote(raw_text="The queue moved to NATS.")).id)
        assert found(store, "ledger", "pipeline", "grafana", "nats") == set(ids) and log_rows(db, store) is None
    finally:
        store.close()
    assert any("could not be built" in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
