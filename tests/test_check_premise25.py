"""check, in both wirings: rules of helper premise25 (issue 33's premise check). A statement whose option is a
word of absence ("The office plants watering uses none.") is read by the one chain about its topic: in force
where its version in force ended the thing, superseded where an earlier version did and a later one chose
again; nothing said where no version ended anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_absent import says_nothing


def test_only_a_word_of_absence_is_read_as_nothing() -> None:
    assert says_nothing("The office plants watering uses none.")
    assert says_nothing("The garage spare key uses nobody.")
    assert not says_nothing("The office plants watering uses Noneto Gardens.")
    assert not says_nothing("The office plants watering uses none of the interns.")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_ended_the_thing_says_none_holds(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Office plants: watered by Kasia every Monday and Thursday.").node.id
        service.remember("We're scrapping the plant watering rota - the new pots water themselves.", supersedes=first)
        service.remember("Printer toner ordered for the second floor.")
        now = service.check("The office plants watering uses none.")
        assert now.verdict == "in_force", now
        old = service.check("The office plants watering uses Kasia.")
        assert old.verdict == "superseded", old


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_chose_again_says_none_was_replaced(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Build cache: nightly builds keep a warm Gradle cache on the runners.").node.id
        second = service.remember(
            "Removing the Gradle build cache from the runners, it masks stale outputs.", supersedes=first
        )
        service.remember(
            "Reverting: the Gradle build cache is back on the runners until incremental builds are fixed.",
            supersedes=second.node.id,
        )
        out = service.check("The nightly build cache uses none.")
        assert out.verdict == "superseded", out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_chain_where_nothing_ended_says_nothing_of_none(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Team offsite venue: the Larch Barn in Ashby.").node.id
        service.remember("Team offsite venue moves to Fernhill Lodge, Larch Barn is booked out.", supersedes=first)
        out = service.check("The team offsite venue uses none.")
        assert out.verdict not in ("in_force", "superseded"), out


def test_a_date_after_a_capital_is_split_as_elsewhere() -> None:
    """ "Stripe API 2024-06-20" holds the date as "uses 2024-06-20" does; a standard's number stays one word."""
    from evomem.domain.premise_words import words_of

    assert {"2024", "06", "20"} <= words_of("Pin updated: Stripe API 2024-06-20 across the platform.")
    assert {"2024", "06", "20"} <= words_of("The payments api version uses 2024-06-20.")
    assert "8655-6" in words_of("Pipettes are calibrated to ISO 8655-6.")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_date_named_after_a_capital_is_in_force(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Timetable API version pinned to 2023-01-09.").node.id
        service.remember("Pin moved: Timetable API 2024-03-18 for every client.", supersedes=first)
        now = service.check("The rail data api version uses 2024-03-18.")
        assert now.verdict == "in_force", now


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_value_raised_to_is_not_what_the_head_left(tmp_path: Path, wiring: str) -> None:
    """ "threshold raised to 5 unpaid notices": the head left the old threshold, not the words it shares with it."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Borrowers are blocked after 3 unpaid notices.").node.id
        service.remember("Circulation desk: threshold raised to 5 unpaid notices.", supersedes=first)
        now = service.check("The library block rule uses 5 unpaid notices.")
        assert now.verdict == "in_force", now
