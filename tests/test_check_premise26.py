"""check, in both wirings: rules of helper premise26 (issue 33's premise check). A note of its own, later than the
version that left an option, that names the option but decides nothing (a report of the old value used since) does
not keep it in force; a decision that names it again does (the chains disagree). A statement that something has
nothing: the first version of a chain ended nothing ("switched off 00:30-05:30" is what it chose), and "agreed to
end", "ending it", "is gone" end the thing."""

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


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_later_report_of_the_old_value_does_not_keep_it(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = _remember(service, "Gym lockers: members pay with coins at the door")
        _remember(service, "gym lockers switch to the Lockit app from Monday, coin slots sealed", first)
        _remember(service, "a member still queued at the door with coins for a gym locker, sent him to the app")
        _remember(service, "Printer toner ordered for the second floor.")
        old = service.check("The gym lockers uses coins.")
        assert old.verdict == "superseded", old
        new = service.check("The gym lockers uses the Lockit app.")
        assert new.verdict not in ("superseded", "contradicted"), new


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_later_decision_naming_the_old_value_is_no_report(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = _remember(service, "Gym lockers: members pay with coins at the door")
        _remember(service, "gym lockers switch to the Lockit app from Monday, coin slots sealed", first)
        _remember(service, "Decision: we are going with coins again for the gym lockers, the app keeps crashing")
        old = service.check("The gym lockers uses coins.")
        assert old.verdict != "superseded", old


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
