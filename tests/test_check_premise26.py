"""check, in both wirings: rules of helper premise26 (issue 33's premise check). A statement that something has
nothing ("... uses none."): the first version of a chain ended nothing ("switched off 00:30-05:30" is what it chose),
and "agreed to end", "ending it", "is gone" end the thing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_absent import _ENDS


def _remember(service: object, text: str, supersedes: str | None = None) -> str:
    time.sleep(0.01)  # each note later than the one before
    kwargs = {"supersedes": supersedes} if supersedes else {}
    return service.remember(text, **kwargs).node.id  # type: ignore[attr-defined]


def test_ending_words() -> None:
    assert _ENDS.search("Cabinet agreed to end part-night lighting on residential roads")
    assert _ENDS.search("we're ending it from 1 March, van costs too high")
    assert _ENDS.search("Release train is gone. Teams deploy whenever green.")
    assert not _ENDS.search("Quarterly review at the end of March")
    assert not _ENDS.search("the tenancy will end date is in the contract")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_first_version_that_names_an_off_time_ended_nothing(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = _remember(service, "Fountain pumps: the park fountain pumps switched off 23:00-07:00.")
        _remember(
            service, "Parks board agreed to end night shutdown of the fountain pumps after the algae report.", first
        )
        out = service.check("The park fountain pumps uses none.")
        assert out.verdict == "in_force", out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_first_version_that_switched_something_off_is_no_ending(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = _remember(service, "Car park barrier: the staff car park barrier switched off 20:00-06:00.")
        _remember(service, "Staff car park barrier now on the new ANPR camera from the security contractor.", first)
        out = service.check("The staff car park barrier uses none.")
        assert out.verdict != "superseded", out
