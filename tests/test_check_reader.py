"""check, read by the words of the versions (``domain.premise.lexical``), in both wirings: rules of
helper premise12 (issue 33's premise check)."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_scopes_own_note_holds_the_option_there_over_a_replaced_default_chain(tmp_path: Path, wiring: str) -> None:
    """Read by the words, as by the reading: a scope's own decision that holds the option's words
    holds there, though it holds fewer of the statement's words than a default-scope chain whose
    earlier version named the option and was replaced."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Checkout card payments: 3-D Secure challenge on every order, all shops.").node.id
        service.remember(
            "Dropping the 3-D Secure challenge on checkout after the conversion drop: none, risk scoring only.",
            supersedes=first,
        )
        eu = service.remember("The EU shop keeps 3-D Secure, a PSD2 rule.", scope="eu-shop").node.id
        statement = "The checkout card payments challenge uses 3-D Secure."
        held = service.check(statement, scope="eu-shop")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [eu], held
        # in the default scope the chain's version in force left it
        assert service.check(statement).verdict == "superseded"
