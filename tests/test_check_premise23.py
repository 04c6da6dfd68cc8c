"""check, in both wirings: rules of helper premise23 (issue 33's premise check). A short note that opens a clause
with what it says is gone, before a leaving verb that takes no object ("the monthly stock take is discontinued",
"Ana & Joel moved out"), or says it ends a thing ("ending the Trackly contract"), left it; a later short note in
force that says the option still holds, in words of the statement's topic, contests a replacement read by the
words (the later version changed another part of what it replaced)."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_words import left_after_verb, reported_words


def _left(text: str) -> list[str]:
    return [text[s:e] for s, e in left_after_verb(text)]


def test_what_a_clause_opens_with_before_a_leaving_verb_is_left() -> None:
    assert _left("Team notes: the monthly stock take is discontinued (the scanner covers it).") == [
        "monthly stock take"
    ]
    assert _left("Ana & Joel moved out; the Brennans at No. 9.") == ["Ana & Joel"]
    assert _left("the pub quiz ends this month") == ["pub quiz"]
    assert _left("We're ending the Trackly contract at renewal") == ["Trackly contract"]


def test_a_verb_of_schedule_or_of_value_leaves_nothing() -> None:
    """ "ends at 10:15" says when, "dropped to 3.8%" a new value, "bus stops" a noun; a pronoun names nothing."""
    assert _left("Standup ends at 10:15 now") == []
    assert _left("savings rate dropped to 3.8%") == ["to 3.8%"]  # the leaving verb's object, as before
    assert _left("The bus stops at the school gate.") == []
    assert _left("That's it for the tuck shop - it stops this Sunday") == []


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_says_the_option_is_discontinued_left_it(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Warehouse rituals: monthly stock take, first Monday, run by the floor lead.").node.id
        service.remember(
            "Warehouse review outcomes: the monthly stock take is discontinued (the scanners cover it); "
            "forklift checks move to Friday.",
            supersedes=first,
        )
        old = service.check("The warehouse stock take uses monthly stock take.")
        assert old.verdict == "superseded", old


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_later_note_that_says_the_option_still_holds_contests_the_replacement(tmp_path: Path, wiring: str) -> None:
    """The later version moved the launch date, not the pilot date it named beside it: a later note that says the
    pilot still begins on its date keeps the statement from being flagged."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(
            "Rollout plan signed off: store launch in the new region on 2025-10-06, pilot starts 2025-09-15, "
            "old checkout switched off the day after launch."
        ).node.id
        service.remember(
            "Moving the store launch back a week to 2025-10-13 because the payment audit slipped. "
            "Pilot start date is unchanged.",
            supersedes=first,
        )
        service.remember("For the avoidance of doubt: the pilot still begins 2025-09-15.")
        held = service.check("The shop pilot start uses 2025-09-15.")
        assert held.verdict not in ("superseded", "contradicted"), held
        moved = service.check("The shop store launch uses 2025-10-06.")
        assert moved.verdict == "superseded", moved


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_later_note_that_only_names_the_option_contests_nothing(tmp_path: Path, wiring: str) -> None:
    """A later note that names the old option of another thing ("Lena opened an account at Brightbank") leaves
    the replacement read."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Tomas banks with Brightbank.").node.id
        service.remember("tomas moved his account to Northmere", supersedes=first)
        service.remember("Lena opened a savings account at Brightbank.")
        old = service.check("The tomas bank uses Brightbank.")
        assert old.verdict == "superseded", old


@pytest.mark.parametrize("wiring", WIRINGS)
def test_an_older_report_holds_no_more_of_the_statement_by_a_word_in_another_form(tmp_path: Path, wiring: str) -> None:
    """A report in force, older than the version that left the option, that holds the statement's "breached" where
    the version that named the option says "breaches": the same words of it, not more; the later decision
    replaced the report's option too."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(
            "Error budget policy v1: when any core service breaches its monthly budget, a company-wide release "
            "freeze applies until the budget recovers."
        ).node.id
        service.remember("Search breached its budget, so we're in the company-wide release freeze until Friday.")
        service.remember(
            "Revised error budget policy: we freeze only the affected service when its budget is breached, "
            "instead of the whole company.",
            supersedes=first,
        )
        old = service.check("The sre budget breached action uses company-wide release freeze.")
        assert old.verdict == "superseded", old


def test_a_parenthesis_that_reports_on_a_word_opens_a_clause() -> None:
    text = "Harbour office phone: 01632 960 300 (the 0555 line was temporary)."
    assert [text[s:e] for s, e in reported_words(text)] == ["0555"]


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_reports_on_the_old_value_in_a_parenthesis_left_it(tmp_path: Path, wiring: str) -> None:
    """The head goes back to the number before and says in a parenthesis that the one it replaced was temporary:
    that number was replaced, though the head still names it."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Harbour office phone: 01632 960 011.").node.id
        second = service.remember("Harbour office phone: 01632 960 300.", supersedes=first).node.id
        third = service.remember("harbour new number again: 01632 960 555", supersedes=second).node.id
        service.remember("Harbour office phone: 01632 960 300 (the 555 line was temporary).", supersedes=third)
        old = service.check("The harbour office phone uses 01632 960 555.")
        assert old.verdict == "superseded", old
