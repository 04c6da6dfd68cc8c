"""check, in both wirings: rules of helper premise27 (issue 33's premise check). A note of its own, later than the
version that left an option, that names the option but decides nothing (a report of the old value used since) does
not keep it in force; a decision that names it again does (the chains disagree). But a change that says, in a
sentence of its own about the statement's part, that this part holds as it did ("Dual-run start date is
unchanged") left nothing of it: a later note naming the option says what still holds, and it stays in force."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_words import keeps_beside


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


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_change_that_keeps_the_part_beside_it_leaves_nothing(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = _remember(service, "Kitchen refit plan agreed: fitters arrive 2031-03-02, skip delivered 2031-02-27.")
        _remember(
            service,
            "Pushing the fitters back a week to 2031-03-09 as the worktops are late. Skip delivery date is unchanged.",
            first,
        )
        _remember(service, "Reminder for the neighbours: skip still arrives 2031-02-27.")
        _remember(service, "Printer toner ordered for the second floor.")
        kept = service.check("The kitchen skip delivery uses 2031-02-27.")
        assert kept.verdict not in ("superseded", "contradicted"), kept


def test_keeps_beside() -> None:
    topic = {"skip", "delivery"}
    assert keeps_beside("Fitters back a week to 2031-03-09. Skip delivery date is unchanged.", topic)
    # one sentence: it speaks of the change in it, or the part it keeps is another
    assert not keeps_beside("skip delivery goes to 2031-03-01, fitters unchanged", topic)
    # the keeping sentence is about another part; the statement's part is changed elsewhere
    assert not keeps_beside("Skip delivery moves to 2031-03-01. Fitters unchanged.", topic)
    # no word of keeping
    assert not keeps_beside("Fitters back a week. Skip delivery date 2031-03-01.", topic)
