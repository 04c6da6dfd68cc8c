"""check, in both wirings: rules of helper premise18 (issue 33's premise check): a resolution's operative part
("NOW, THEREFORE, BE IT RESOLVED by ...:") and minutes' "Resolved:" section are a deciding section, read before
the recitals that name what they replace; one capital letter after a number is the number's unit ("4000 K"), not a
name; "on acceptance" is no scope; a standard's number ("ISO 8655-6") is one word; a document alone does not hold
what it names only as replaced; a rejected or proposed document contests no decided replacement."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_document import deciding
from evomem.domain.premise_words import named_words, words_of
from evomem.domain.scope import infer_scope
from evomem.domain.subject import analyse

RECITAL = (
    "WHEREAS, the City maintains approximately 14,200 street lights, most of them old sodium fixtures that are "
    "costly to run and to repair, and the Department of Public Works has studied the fixtures that neighbouring "
    "cities installed over the last five years, their cost, their efficacy and the complaints they drew; and\n"
    "WHEREAS, the Council heard the residents' associations, the police and the dark-sky society at two public "
    "hearings, and the Department reported on the prices of the fixtures then on the market; and\n"
)


def resolution(number: int, title: str, recitals: str, resolved: str) -> str:
    text = (
        f"Resolution {number}: {title}\nCity Council of Port Alder\nAdopted: 2022-11-15 | Vote: 7-2\n\n"
        f"{RECITAL}{recitals}\nNOW, THEREFORE, BE IT RESOLVED by the City Council of Port Alder:\n\n{resolved}\n\n"
        "Fiscal impact: USD 9.8 million over the life of the programme, within the capital plan approved by the "
        "Council for the current and the next two fiscal years, with the savings in energy and maintenance reported "
        "to the Council each year by the Department of Public Works.\n"
    )
    assert len(text) > 1200  # a document, not a note
    return text


FIRST = resolution(
    512,
    "LED street lighting conversion standard",
    "WHEREAS, fixtures of 4000 K were the most widely available roadway fixtures at the time;\n",
    "1. Replacement fixtures shall have a correlated colour temperature of 4000 K. 2. Public Works shall "
    "convert all City-owned street lights by 2020-12-31.",
)
NOW = resolution(
    603,
    "Revised citywide LED colour temperature standard",
    "WHEREAS, the 2022 survey found that most residents considered the 4000 K light too bright, and 3000 K "
    "fixtures now have efficacy within 3% of 4000 K fixtures;\n",
    "1. New and replacement street light fixtures citywide shall have a correlated colour temperature of "
    "3000 K. 2. Existing 4000 K fixtures on residential streets shall be replaced with 3000 K modules.",
)


def test_a_resolution_decides_in_its_operative_part() -> None:
    part = deciding(NOW) or ""
    assert part.startswith("Resolution 603") and "shall have a correlated colour temperature of 3000 K" in part
    assert "WHEREAS" not in part


def test_minutes_decide_in_their_resolved_section() -> None:
    minutes = (
        "Transport Committee, 12 February 2025\n\nPresent\n" + RECITAL + "\nResolved:\n(i) Residential streets "
        "carry a 25 mph limit. (ii) The school zones continue unchanged.\n\nNext meeting\n" + RECITAL + RECITAL
    )
    part = deciding(minutes) or ""
    assert "carry a 25 mph limit" in part and "WHEREAS" not in part


def test_a_capital_letter_after_a_number_is_its_unit() -> None:
    assert all(m.text != "K" for m in analyse("The streets use 4000 K now.").mentions)
    assert all(m.text != "V" for m in analyse("Chargers run at 230 V.").mentions)
    assert analyse("We moved to Plan B.").option is not None  # a letter after a word is a name's


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_resolution_replaced_by_one_that_names_the_old_value_in_its_recitals(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(FIRST).node.id
        now = service.remember(NOW, supersedes=first).node.id
        old = service.check("The streets led colour temperature uses 4000 K.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        held = service.check("The streets led colour temperature uses 3000 K.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


def test_on_acceptance_is_a_moment_not_a_scope() -> None:
    assert infer_scope("Offers hold 21 days; a deposit of 10% on acceptance.") is None
    found = infer_scope("Deploy on the acceptance environment first.")
    assert found is not None and found.scope == "qa"
    assert infer_scope("Feature flags stay on in QA only.") is not None


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_chain_that_names_a_payment_on_acceptance_answers_an_unscoped_statement(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Offers for garden works hold 21 days from their date, deposit 10% on acceptance.")
        service.remember(
            "Material costs swing weekly. New offer terms: hold 10 days; deposit on acceptance is now 15%.",
            supersedes=first.node.id,
        )
        old = service.check("The garden offer validity uses 21 days.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first.node.id], old


def test_a_standards_number_is_one_word() -> None:
    assert {"8655-6", "iso"} <= words_of("the gravimetric method of ISO 8655-6") and "6" not in words_of("ISO 8655-6")
    assert "8655-6" in named_words("The lab uses ISO 8655-6.") and "6" not in named_words("The lab uses ISO 8655-6.")
    assert {"2025", "08", "25"} <= words_of("dual run from 2025-08-25")  # a date's numbers count each


@pytest.mark.parametrize("wiring", WIRINGS)
def test_an_interval_is_not_read_in_a_standards_number(tmp_path: Path, wiring: str) -> None:
    """The version in force names the standard "ISO 8655-6": its "6" is not the "every 6 months" it left."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(
            "Pipette calibration: each pipette is calibrated every 6 months by the contracted service, "
            "gravimetric method of ISO 8655-6 at three volumes."
        ).node.id
        service.remember(
            "Pipette calibration, risk-based: each pipette is calibrated every 12 months by the contracted "
            "service, gravimetric method of ISO 8655-6.",
            supersedes=first,
        )
        old = service.check("The lab pipette calibration interval uses every 6 months.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        assert service.check("The lab pipette calibration interval uses every 12 months.").verdict == "in_force"


REMOTE = (
    "RP-22: Remote public comment at Council meetings\nCity of Millbrook | Council Rules of Procedure\n\n"
    "Background\nDuring the pandemic the Council took public comment by phone under emergency orders, which lapsed "
    "last year. Since then, comment has been in person only. Residents with disabilities, caregivers and shift "
    "workers have asked the Council to restore a remote option. When RP-19 replaced RP-12's three-minute limit "
    "earlier this year, councillors argued that a remote option would soften the effect of shorter speaking times.\n\n"
    "Rule 7.6 Remote public comment\n7.6.1 Members of the public may give comment by live video through the City's "
    "meeting platform, at general public comment and on agenda items, subject to the same time limits as in-person "
    "speakers.\n7.6.2 Remote speakers register through the online form by the time the item is called and receive a "
    "link. Camera use is optional.\n7.6.3 Remote and in-person speakers are called alternately, where both are "
    "waiting.\n7.6.4 If the meeting platform fails, the meeting continues in person; the failure does not "
    "invalidate Council action.\n\nEvaluation\nThe Clerk reports after six months on the number of remote speakers, "
    "technical problems and any disruption.\n"
)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_document_alone_does_not_hold_what_it_says_was_replaced(tmp_path: Path, wiring: str) -> None:
    """A document of its own chain reports another chain's change ("When RP-19 replaced RP-12's three-minute
    limit"): it does not hold "three minutes" in force."""
    assert len(REMOTE) > 1200
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Public comment: each speaker may address the council for three minutes.").node.id
        service.remember(
            "Public comment rules revised: each speaker may address the council for two minutes.", supersedes=first
        )
        service.remember(REMOTE)
        old = service.check("The council public comment time limit uses three minutes.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old


DRAFT = (
    "HRP-29: Remote-first working (draft for consultation)\nPeople team\n\nBackground\n"
    "Today employees may work from home two days per week under the hybrid working policy. Several teams asked "
    "whether a remote-first model would suit them better, with the office as a place to meet rather than to work "
    "every day, and the works council asked for a consultation before any change is made to the policy.\n\n"
    "Proposal\nTeams choose their own rhythm; the office stays open for team days, workshops and onboarding. The "
    "two days per week rule would be dropped for teams that opt in, and their desks would be shared.\n\n"
    "Questions for the consultation\nHow would team days be planned across locations? Which roles need to be on "
    "site, and how often? How would the equipment stipend change for people working from home most of the week? "
    "What would the change mean for the office leases that end next year, and for the canteen contract?\n\n"
    "Timeline\nComments are open for six weeks. The people team will summarise them for the management board, "
    "which decides whether a revised policy is drafted, and the works council will be heard again on any text "
    "before it is adopted. Until then nothing changes for anyone, and the current policy applies in full.\n"
)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_draft_that_names_the_option_does_not_contest_its_replacement(tmp_path: Path, wiring: str) -> None:
    """A proposal describes the rule of its day: it casts no doubt on the decision that replaced that rule."""
    assert len(DRAFT) > 1200
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Hybrid working: employees may work from home two days per week.").node.id
        service.remember(DRAFT)
        service.remember(
            "Hybrid working policy revised: employees may work from home up to three days per week.", supersedes=first
        )
        old = service.check("The hybrid working remote days uses two days per week.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
