"""check, in both wirings: rules of helper premise24 (issue 33's premise check). A template statement whose topic
is in words its notes do not use ("the household boiler service interval") is in force where one chain alone holds
its option's words, its version in force holds them with a word of the topic, and no version left them; not where
that head names them as the version it replaced did (a report on what it left: "Marta's on leave")."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired


@pytest.mark.parametrize("wiring", WIRINGS)
def test_the_one_chain_whose_head_holds_the_option_and_a_topic_word_says_it(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Loan with Corbel Savings: fixed at 5.12% until 30 June 2025.").node.id
        service.remember(
            "Refinance signed. From 1 July the loan is on a 3-year fix at 4.07% (same lender).", supersedes=first
        )
        service.remember("Council tax goes up 4.99% in April.")
        now = service.check("The household loan rate uses 4.07%.")
        assert now.verdict == "in_force", now
        old = service.check("The household loan rate uses 5.12%.")
        assert old.verdict == "superseded", old


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_names_the_option_as_the_version_it_replaced_did_is_not_read_in_force(
    tmp_path: Path, wiring: str
) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Support rota this week (Mon 3 -> Sun 9): lead is Marta. Rota tool updated.").node.id
        service.remember(
            "Marta's on leave from today. Tobias is lead on the support rota through Sunday 9th.", supersedes=first
        )
        old = service.check("The helpdesk rota lead uses Marta.")
        assert old.verdict != "in_force", old


@pytest.mark.parametrize("wiring", WIRINGS)
def test_the_one_note_that_holds_the_option_in_other_words_says_it(tmp_path: Path, wiring: str) -> None:
    """No word of the statement's topic in any note: the one chain that holds its option, in force, nothing left it."""
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember("Podcasts go out through Wavecrest (one login for both shows).")
        service.remember("Newsletter footer gets the new logo next month.")
        now = service.check("The media audio host uses Wavecrest.")
        assert now.verdict == "in_force", now


@pytest.mark.parametrize("wiring", WIRINGS)
def test_two_chains_that_hold_the_option_do_not_say_it_alone(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember("Podcasts go out through Wavecrest (one login for both shows).")
        service.remember("Wavecrest invoice queried: we were billed twice in May.")
        assert service.check("The media audio host uses Wavecrest.").verdict != "in_force"
