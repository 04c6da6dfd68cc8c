"""``EVOMEM_WORD_INDEX=auto`` (the default): the SQLite store's word index is Tantivy when the store
holds ``EVOMEM_TANTIVY_FROM`` notes at open, FTS5 below; decided at each open, said in one log line,
and FTS5 (with one warning) where Tantivy cannot be had: its folder cannot be written, another
process holds its writer, the package is missing. The thresholds here are tiny; the suite's small
stores stay on FTS5 with the default one."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from evomem.adapters.sqlite import tantivy_index, words
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.bootstrap.stores import open_store
from evomem.domain.model import NewNote
from evomem.settings import TANTIVY_FROM, Settings

TEXTS = (
    "We keep the billing ledger in PostgreSQL because of its transactions.",
    "The deploy pipeline runs on GitHub Actions.",
    "Grafana dashboards are provisioned from Git.",
)


def found(store: SQLiteStore, *terms: str) -> set[str]:
    return {h.node_id for h in store.search(list(terms), namespace="default", limit=20, active_only=False)}


def filled(path: Path, texts: tuple[str, ...] = TEXTS) -> list[str]:
    """A store at ``path`` holding ``texts`` (written on FTS5); their ids."""
    store = SQLiteStore(path)
    try:
        return [store.insert(NewNote(raw_text=t)).id for t in texts]
    finally:
        store.close()


def settled(store: SQLiteStore) -> SQLiteStore:
    """``store`` once a background build of its Tantivy index (``words.BuildingWords``) has ended."""
    if isinstance(store._words, words.BuildingWords):
        assert store._words.done.wait(60)
    return store


def choices(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == words.__name__ and r.getMessage().startswith("word index: ")]


def test_the_default_is_auto_from_the_measured_threshold() -> None:
    assert (Settings().store.word_index, Settings().store.tantivy_from) == ("auto", TANTIVY_FROM)
    s = Settings.from_env({"EVOMEM_TANTIVY_FROM": "5"})
    assert (s.store.word_index, s.store.tantivy_from) == ("auto", 5)


def test_auto_takes_fts5_below_the_threshold_and_tantivy_from_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "a.db"
    ids = filled(db, TEXTS[:2])
    caplog.set_level(logging.DEBUG, logger=words.__name__)
    below = SQLiteStore(db, word_index="auto", tantivy_from=3)
    try:
        assert below.word_index == "fts5"
        ids.append(below.insert(NewNote(raw_text=TEXTS[2])).id)
        assert below.word_index == "fts5"  # grown to the threshold while open: still FTS5 until the next open
    finally:
        below.close()
    assert not (tmp_path / "a.db.words").exists()
    [line] = choices(caplog)
    assert line.levelno == logging.DEBUG  # a small store's start stays quiet
    assert line.getMessage() == "word index: fts5 (the store holds 2 notes; auto takes Tantivy from 3)"
    caplog.clear()
    at = SQLiteStore(db, word_index="auto", tantivy_from=3)
    try:
        assert isinstance(at._words, words.BuildingWords)  # no index yet: built in the background
        assert settled(at).word_index == "tantivy" and isinstance(at._words._words, tantivy_index.TantivyWords)
        assert (tmp_path / "a.db.words").is_dir()
        assert found(at, "ledger", "pipeline", "grafana") == set(ids)  # every note, the one FTS5 took too
    finally:
        at.close()
    first, built = choices(caplog)
    assert "the store holds 3 notes; auto takes Tantivy from 3" in first.getMessage()
    assert "building" in first.getMessage() and "in the background" in first.getMessage()
    assert "built in" in built.getMessage()
    assert {first.levelno, built.levelno} == {logging.INFO}


def test_explicit_indexes_keep_their_meaning(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    filled(db)
    on_fts5 = SQLiteStore(db, word_index="fts5", tantivy_from=0)
    try:
        assert on_fts5.word_index == "fts5"
    finally:
        on_fts5.close()
    on_tantivy = SQLiteStore(db, word_index="tantivy", tantivy_from=10**9)
    try:
        assert on_tantivy.word_index == "tantivy"
    finally:
        on_tantivy.close()


def test_the_settings_reach_the_store(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    filled(db)
    for threshold, expected in (("4", "fts5"), ("3", "tantivy")):
        store = open_store(Settings.from_env({"EVOMEM_DB": str(db), "EVOMEM_TANTIVY_FROM": threshold}), "")
        try:
            assert isinstance(store, SQLiteStore) and settled(store).word_index == expected
        finally:
            store.close()


def test_auto_stays_on_fts5_when_another_process_holds_the_writer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "b.db"
    filled(db)
    first = settled(SQLiteStore(db, word_index="auto", tantivy_from=1))
    try:
        assert first.word_index == "tantivy"
        caplog.clear()
        second = SQLiteStore(db, word_index="auto", tantivy_from=1)
        try:
            assert second.word_index == "fts5"
            note = second.insert(NewNote(raw_text="The cache is warmed from the nightly snapshot."))
            assert found(second, "snapshot") == {note.id} and found(first, "snapshot") == {note.id}
        finally:
            second.close()
    finally:
        first.close()
    [warning] = [r for r in choices(caplog) if r.levelno >= logging.WARNING]
    assert "held by another process" in warning.getMessage() and "word index: fts5" in warning.getMessage()


def test_auto_stays_on_fts5_when_the_folder_cannot_be_made(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "c.db"
    ids = filled(db)
    (tmp_path / "c.db.words").write_text("not an index")  # something else where the folder would be
    store = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        assert store.word_index == "fts5"
        assert found(store, "ledger", "pipeline", "grafana") == set(ids)  # nothing lost
    finally:
        store.close()
    assert (tmp_path / "c.db.words").read_text() == "not an index"
    [warning] = [r for r in choices(caplog) if r.levelno >= logging.WARNING]
    assert "c.db.words is not a folder" in warning.getMessage()
    assert "nothing is lost" in warning.getMessage()


def test_auto_stays_on_fts5_in_a_directory_it_cannot_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "d.db"
    ids = filled(db)
    real = os.access
    # as a user without write permission sees tmp_path (the suite may run as root, who may write anywhere)
    monkeypatch.setattr(words.os, "access", lambda p, mode: False if Path(p) == tmp_path else real(p, mode))
    store = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        assert store.word_index == "fts5"
        assert found(store, "ledger", "pipeline", "grafana") == set(ids)
    finally:
        store.close()
    assert not (tmp_path / "d.db.words").exists()
    [warning] = [r for r in choices(caplog) if r.levelno >= logging.WARNING]
    assert f"{tmp_path} cannot be written" in warning.getMessage()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_auto_stays_on_fts5_in_a_read_only_directory(tmp_path: Path) -> None:
    db = tmp_path / "ro" / "r.db"
    db.parent.mkdir()
    ids = filled(db)
    db.parent.chmod(0o555)
    try:
        store = SQLiteStore(db, word_index="auto", tantivy_from=1)
        try:
            assert store.word_index == "fts5" and found(store, "ledger", "pipeline", "grafana") == set(ids)
        finally:
            store.close()
    finally:
        db.parent.chmod(0o755)


def test_auto_stays_on_fts5_when_tantivy_fails_to_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "f.db"
    ids = filled(db)

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tantivy_index.TantivyWords, "__init__", full_disk)
    store = SQLiteStore(db, word_index="auto", tantivy_from=1)
    try:
        assert settled(store).word_index == "fts5" and found(store, "ledger", "pipeline", "grafana") == set(ids)
    finally:
        store.close()
    [warning] = [r for r in choices(caplog) if r.levelno >= logging.WARNING]
    assert "Tantivy could not be built" in warning.getMessage() and "No space left" in warning.getMessage()


def test_auto_stays_on_fts5_without_the_package(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "p.db"
    filled(db)
    monkeypatch.setitem(sys.modules, "tantivy", None)  # as a lite install without it
    store = open_store(Settings.from_env({"EVOMEM_DB": str(db), "EVOMEM_TANTIVY_FROM": "1"}), "")
    try:
        assert isinstance(store, SQLiteStore) and store.word_index == "fts5"
    finally:
        store.close()
    [warning] = [r for r in choices(caplog) if r.levelno >= logging.WARNING]
    assert "tantivy package is not installed" in warning.getMessage()


def test_evomem_admin_opens_sqlite_on_fts5_whatever_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-shot command (export, import, backup) builds no Tantivy index and takes no server's writer."""
    from evomem.bootstrap import stores

    asked: list[str] = []

    class Recorded(SQLiteStore):
        def __init__(self, *args: object, word_index: str = "fts5", **kwargs: object) -> None:
            asked.append(word_index)
            super().__init__(*args, word_index=word_index, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stores, "SQLiteStore", Recorded)
    store = stores.open_location(str(tmp_path / "admin.db"))
    store.close()
    assert asked == ["fts5"]
    served = stores.open_store(Settings(db=str(tmp_path / "admin.db")), "")
    served.close()
    assert asked == ["fts5", "auto"]  # the server's own open keeps the default


def test_the_stores_default_threshold_is_the_settings_default() -> None:
    """The adapter keeps its own default (an adapter imports no settings: tests/test_layers.py);
    it must be the one ``EVOMEM_TANTIVY_FROM`` documents."""
    from evomem.adapters.sqlite import words
    from evomem.settings import TANTIVY_FROM, Settings

    assert words.TANTIVY_FROM == TANTIVY_FROM == Settings.from_env({}).store.tantivy_from
