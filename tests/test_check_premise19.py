"""check, in both wirings: rules of helper premise19 (issue 33's premise check): a head that goes back to the option
every version of its chain names (the one between only as a reason) holds it; a chain in force that holds the option
and a word of the statement's topic that the chain which left the option never says contests that replacement; a
note whose option stands in a question ("are we still using DPD for the islands?") does not choose it."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_words import asks
from evomem.domain.subject import analyse


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_goes_back_to_the_option_every_version_names_holds_it(tmp_path: Path, wiring: str) -> None:
    """The version between names the option only as the reason it moved ("Sam has football on Tuesdays"): the words
    of the option tell no version apart, and the head that says it again is in force."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Book club meeting day: Tuesday evenings").node.id
        between = service.remember(
            "Sam has football on Tuesdays from April, we meet Monday then", supersedes=first
        ).node.id
        now = service.remember("football season's over so Tuesday meetings again", supersedes=between).node.id
        held = service.check("The book club meeting day uses Tuesday.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held
        assert service.check("The book club meeting day uses Monday.").verdict == "superseded"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_chain_about_the_very_thing_contests_another_ones_replacement(tmp_path: Path, wiring: str) -> None:
    """Another team's budget went from 40 to 55 per day; "Team Osprey keeps 40 per day" is about the team the
    statement names, which the chain that left 40 never names: no replacement is read for Osprey."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Team travel per diem: 40 per day.").node.id
        service.remember("finance approved 55 per day for team travel starting Q3", supersedes=first)
        service.remember("Team Osprey keeps 40 per day")
        osprey = service.check("The team osprey travel per diem uses 40 per day.")
        assert osprey.verdict not in ("superseded", "contradicted"), osprey
        old = service.check("The team travel per diem uses 40 per day.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old


def test_an_option_in_a_question_is_asked_about_not_chosen() -> None:
    assert asks(analyse("Mairi: are we still using DPD for the islands? I need to know who to chase."))
    assert not asks(analyse("Islands parcels ship with DPD from now on. Any questions?"))


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_question_that_names_the_option_does_not_hold_it(tmp_path: Path, wiring: str) -> None:
    """ "is Tomas doing next Saturday?" asks; it does not keep Tomas in force beside the chain that left him."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(
            "Sorted Saturday mornings: Tomas will walk the dogs every Saturday 8-10, £10/walk."
        ).node.id
        service.remember("Tomas cancelled today, exams. Had to ask Grandma.")
        service.remember("Ines: is Tomas doing next Saturday or should I ask Grandma again?")
        service.remember("Tomas says he can't do Saturdays during exam season at all. Need a plan.")
        service.remember(
            "Saturdays are Lena from now on (Tomas's cousin, first aid trained). Same times, £11/walk.",
            supersedes=first,
        )
        old = service.check("The kovac household saturday dogwalker uses Tomas.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
