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


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_went_back_to_the_option_says_it(tmp_path: Path, wiring: str) -> None:
    """The version it replaced names the option as what it left; the head says it went back to it."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Energy is with Brightwatt, fixed tariff, renews 30 April. Account BW-20931.").node.id
        second = service.remember(
            "Switching energy to Lumora from 1 May - cheaper unit rate. Brightwatt exit fee paid.", supersedes=first
        ).node.id
        service.remember(
            "Cancelled Lumora in the cooling-off period and went back to Brightwatt - same tariff, 12 months.",
            supersedes=second,
        )
        now = service.check("The household gas supplier uses Brightwatt.")
        assert now.verdict == "in_force", now
        assert service.check("The household gas supplier uses Lumora.").verdict != "in_force"
