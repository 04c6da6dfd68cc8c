"""The linker's candidate search, pruned (``candidates.CANDIDATE_PRUNE``, exact since speed11: the
term parts and their stored bounds), decides as the exhaustive search (issue 32, speed10, speed11).

On a ``bench.datagen`` store (the speed suite's notes) with the MaxScore passes turned on for a
store this small, the same new notes are remembered twice, each time into a fresh copy: once
with the candidate search as shipped (``prune`` = ``CANDIDATE_PRUNE``), once ranking every match
(``PRUNE_ROWS`` above the store's rows). Every decision (its kind, the candidates listed with their
probabilities, the offers) must be the same, candidates named by their text (ids differ per copy).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from bench import datagen
from bench.speed import new_notes
from evomem.adapters.sqlite import search as sqlite_search
from evomem.app import candidates
from evomem.bootstrap.embedded import build_embedded
from evomem.settings import Settings


@pytest.fixture(scope="module")
def background(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return datagen.build(tmp_path_factory.mktemp("prune") / "speed.db", 1500, seed=3, progress=False)


def _decisions(db: Path, notes: list[str]) -> list[tuple[Any, ...]]:
    service = build_embedded(Settings(db=str(db), vectors="off"))
    try:
        text_of = lambda node_id: service.storage.get(node_id).raw_text  # noqa: E731
        out = []
        for text in notes:
            got = service.remember(text)
            d = got.decision
            assert d is not None
            out.append(
                (
                    d.kind,
                    tuple((text_of(c), p) for c, p in d.candidates),
                    tuple(text_of(c) for c in got.node.possible_supersedes),
                )
            )
        return out
    finally:
        service.close()


def test_the_pruned_candidate_search_decides_as_the_exhaustive_one(background, tmp_path, monkeypatch) -> None:
    assert candidates.CANDIDATE_PRUNE >= 1.0
    notes = new_notes(60, 29)
    monkeypatch.setattr(sqlite_search, "PRUNE_FROM", 0)
    pruned_calls: list[float] = []
    real = sqlite_search.search_pruned

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        pruned_calls.append(args[7] if len(args) > 7 else kwargs.get("prune", 1.0))
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite_search, "search_pruned", counted)
    shutil.copy(background, tmp_path / "pruned.db")
    pruned = _decisions(tmp_path / "pruned.db", notes)
    assert pruned_calls.count(candidates.CANDIDATE_PRUNE) >= len(notes), "each candidate search went through the passes"

    monkeypatch.setattr(sqlite_search, "PRUNE_ROWS", 10**9)  # every match ranked
    shutil.copy(background, tmp_path / "every.db")
    every = _decisions(tmp_path / "every.db", notes)
    assert pruned == every
    assert sum(1 for kind, _, offered in every if offered) >= 10, "the notes get offers: the test compares something"
