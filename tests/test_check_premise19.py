"""check, in both wirings: rules of helper premise19 (issue 33's premise check): a head that goes back to the option
every version of its chain names (the one between only as a reason) holds it; a chain in force that holds the option
and a word of the statement's topic that the chain which left the option never says contests that replacement."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired


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
