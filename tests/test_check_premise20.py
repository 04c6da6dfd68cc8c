"""check, in both wirings: rules of helper premise20 (issue 33's premise check): the template wording writes a name
of letters then digits as one word ("the lowtide sc47 shoot day", a slug's "Sc 47"); a chain whose notes write its
parts apart holds it, in the share of the statement's words that makes a chain about it."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_words import share_held


def test_a_joined_name_is_held_where_its_parts_are() -> None:
    assert share_held({"sc47", "day"}, {"sc", "47", "day"}) == 1.0
    assert share_held({"sc47", "day"}, {"sc", "48", "day"}) == 0.5
    assert share_held({"v1.0.1", "day"}, {"v1", "0", "1", "day"}) == 0.5  # a dotted version stays one value


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_statement_that_joins_a_name_reads_the_chain_that_writes_it_apart(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Sc 47 scheduled for Day 18 with the stunt team.").node.id
        now = service.remember("Sc 47 moves to Day 21, the rig needs another week.", supersedes=first).node.id
        held = service.check("The lowtide sc47 shoot day uses Day 21.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held
        assert service.check("The lowtide sc47 shoot day uses Day 18.").verdict == "superseded"
