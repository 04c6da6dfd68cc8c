"""remember answers before its note's vector is written: the note is found by its words the moment
remember returns, by its meaning once the index write after the answer is done (``add_soon``), and a
crash in between loses nothing (the backfill at the next start embeds what has no vector).

Real parts: the embedded wiring's defaults (SQLite file with sqlite-vec, the offline ONNX model,
the pair offerer), and a real process killed with SIGKILL-like ``os._exit`` for the crash.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from evomem.app.memory import MemoryService
from evomem.bootstrap.embedded import build_embedded
from evomem.bootstrap.vectors import vectors_problem
from evomem.settings import Settings

pytestmark = pytest.mark.skipif(
    vectors_problem() is not None, reason=f"hybrid recall cannot run here: {vectors_problem()}"
)

NOTE = "Bookkeeping records now live in SQLite."
BY_WORDS = "bookkeeping sqlite"
BY_MEANING = "where are accounting entries persisted"  # no word in common with NOTE
OTHERS = ["The team picked Grafana for dashboards.", "Deploys go out on Tuesdays after the standup."]


def heads(service: MemoryService, query: str) -> list[str]:
    return [e.head.id for e, _ in service.recall(query, k=3).results]


def nearest_ids(service: MemoryService, query: str) -> list[str]:
    assert service.vectors is not None
    return [i for i, _ in service.vectors.nearest(query, namespace="default", limit=3)]


def test_found_by_words_at_once_and_by_meaning_after_the_write_that_follows_the_answer(tmp_path: Path) -> None:
    service = build_embedded(Settings(db=str(tmp_path / "m.db"), vectors="on"))
    try:
        for text in OTHERS:
            service.remember(text)
        vectors = service.vectors
        assert vectors is not None and vectors.settle()
        index = vectors.index  # type: ignore[attr-defined]
        gate, real = threading.Event(), index.add_many

        def held(items):  # type: ignore[no-untyped-def]
            gate.wait(30)  # the write after the answer, held until the test has looked
            return real(items)

        index.add_many = held
        node = service.remember(NOTE).node
        assert node.id not in index  # remember answered before its vector was written
        assert heads(service, BY_WORDS)[0] == node.id  # and its words are searchable already
        assert not vectors.settle(timeout_s=0.05)  # the write is still queued
        gate.set()
        assert vectors.settle()
        assert node.id in index
        assert nearest_ids(service, BY_MEANING)[0] == node.id
        assert heads(service, BY_MEANING)[0] == node.id  # hybrid recall finds it by meaning
    finally:
        service.close()


def test_a_search_by_meaning_waits_for_the_writes_this_process_queued(tmp_path: Path) -> None:
    service = build_embedded(Settings(db=str(tmp_path / "m.db"), vectors="on"))
    try:
        node = service.remember(NOTE).node
        assert nearest_ids(service, BY_MEANING)[0] == node.id  # no settle: nearest waits for it
    finally:
        service.close()


def test_catch_up_stores_the_queued_write_first(tmp_path: Path) -> None:
    """What a search does ahead of its scan while its text is embedded (``search_both``): the queued
    vector stored, then the table's copy brought up to date; ``nearest`` then finds the note."""
    service = build_embedded(Settings(db=str(tmp_path / "m.db"), vectors="on"))
    try:
        vectors = service.vectors
        assert vectors is not None
        service.remember(OTHERS[0])
        assert vectors.settle()
        index = vectors.index  # type: ignore[attr-defined]
        gate, real = threading.Event(), index.add_many

        def held(items):  # type: ignore[no-untyped-def]
            gate.wait(30)
            return real(items)

        index.add_many = held
        node = service.remember(NOTE).node
        ahead = threading.Thread(target=vectors.catch_up, args=("default",))
        ahead.start()
        ahead.join(0.1)
        assert ahead.is_alive() and node.id not in index  # it waits for the write after the answer
        gate.set()
        ahead.join(30)
        assert not ahead.is_alive() and node.id in index
        assert nearest_ids(service, BY_MEANING)[0] == node.id
    finally:
        service.close()


CRASH = textwrap.dedent(
    """
    import os, sys, threading
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    service = build_embedded(Settings(db=sys.argv[1], vectors="on"))
    index = service.vectors.index
    index.add_many = lambda items: threading.Event().wait()  # the write after the answer never happens
    node = service.remember(sys.argv[2]).node
    print(node.id, flush=True)
    os._exit(9)  # a crash: no close, no flush, nothing after the answer
    """
)


def test_a_crash_between_the_answer_and_the_vector_write_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    done = subprocess.run(
        [sys.executable, "-c", CRASH, str(db), NOTE], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 9, done.stderr
    node_id = done.stdout.strip()
    service = build_embedded(Settings(db=str(db), vectors="on"))
    try:
        vectors = service.vectors
        assert vectors is not None
        assert heads(service, BY_WORDS) == [node_id]  # the note was stored with its words
        assert node_id not in vectors.index  # type: ignore[attr-defined]  # and no vector
        missing = [row[0] for row in vectors.missing()]  # type: ignore[attr-defined]
        assert missing == [node_id]  # the pending mark: a live node without a vector
        assert vectors.backfill() == 1  # what the next start runs (app.background)
        assert nearest_ids(service, BY_MEANING) == [node_id]
    finally:
        service.close()
