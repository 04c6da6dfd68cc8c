"""check, in both wirings: rules of helper premise17 (issue 33's premise check): a document read first by the
lead of its deciding section where the statement's option is a value (the value it sets comes before the
exceptions and limits that name others); the shared reader's label rule skips a record's header fields
("Status: Accepted") and reads a list after a label's colon as one option, the list."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_document import LEAD_CHARS, deciding
from evomem.domain.subject import analyse, front_matter

CONTEXT = (
    "The team is small and already runs several stateful systems on its own virtual machines. Any choice "
    "here has to be patched, monitored and upgraded by the same four people, and the on-call rota is already "
    "stretched across two time zones, which makes every new pager alert expensive for everyone. We looked "
    "at the incidents of the last year, at the cost of the current "
    "set-up, and at what the other product teams in the company run, so that knowledge can be shared."
)


def policy(title: str, policy: str) -> str:
    text = (
        f"{title}\nStatus: Effective 2019-04-01\n\nPurpose\n{CONTEXT}\n\nPolicy\n{policy}\n\n"
        f"Eligibility\n{CONTEXT}\n\nReview\n{CONTEXT}\n"
    )
    assert len(text) > 1200  # a document, not a note
    return text


LEAVE_12 = policy(
    "PP-12: Parental leave",
    "1. Each eligible parent may take 12 weeks of company-paid parental leave, at full base salary. 2. The "
    "leave may be taken in up to three blocks. 3. Statutory benefits are topped up to full base salary.",
)
LEAVE_20 = policy(
    "PP-26: Parental leave, 2023 revision",
    "1. Each eligible parent may take 20 weeks of company-paid parental leave at full base salary. 2. Leave "
    "may be taken in any number of blocks. 3. Where a newborn is in neonatal care, the leave is extended by "
    "the days in care, up to 12 weeks.",
)


def test_the_lead_of_a_deciding_section() -> None:
    lead = deciding(LEAVE_20, chars=LEAD_CHARS) or ""
    assert "20 weeks" in lead and "up to 12 weeks" not in lead
    assert "up to 12 weeks" in (deciding(LEAVE_20) or "")  # its opening reads on to the exceptions


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_value_is_read_by_the_lead_of_the_deciding_section(tmp_path: Path, wiring: str) -> None:
    """The policy in force names the old value in an exception of its third point: its lead sets 20 weeks."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(LEAVE_12).node.id
        now = service.remember(LEAVE_20, supersedes=first).node.id
        old = service.check("The hr paid parental leave uses 12 weeks.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        held = service.check("The hr paid parental leave uses 20 weeks.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


ADR_11 = (
    "ADR-11: Client state in Wisp\nStatus: Accepted - Date: 2023-02-13 - Author: Pieter de Wit\n"
    "We use Redux Toolkit for client-side UI state in Wisp, with one slice per feature."
)
ADR_14 = (
    "ADR-14: Client state in Wisp, revised\nStatus: Accepted - 2024-01-22 - Supersedes: ADR-11\n"
    "We use Zustand for client-side UI state in Wisp: one small store per feature folder. Redux Toolkit is "
    "removed once the last slice is ported."
)


def test_header_fields_are_no_choice() -> None:
    at = front_matter(ADR_14)
    assert at is not None and ADR_14[at[0] : at[1]].startswith("Status: Accepted")
    facts = analyse(ADR_14)
    assert facts.option is not None and facts.option.text == "Zustand"
    assert {m.role for m in facts.mentions if m.text == "Accepted"} == {"other"}
    mail = "From: Ines (CEO)\nSubject: End of year\n\nHi everyone, bonuses are paid on 20 December."
    assert front_matter(mail) == (0, len("From: Ines (CEO)\nSubject: End of year"))
    assert all(m.role != "chosen" for m in analyse(mail).mentions if m.text == "Ines")
    # a note that is a field or two says what it says: no header
    assert front_matter("Bins: Finn") is None and analyse("Bins: Finn").option.text == "Finn"  # type: ignore[union-attr]
    assert front_matter("Treasurer: Cressida Vane.\nHall: Copper Street.") is None
    assert front_matter("- Ravi: widgets done\n- Leonie: copy waiting on legal\nRelease on Friday.") is None


def test_a_list_after_a_label_is_one_option() -> None:
    facts = analyse("The scheme now has four levels: Public, Internal, Confidential, Restricted.")
    assert facts.option is not None and facts.option.text == "Public, Internal, Confidential, Restricted"
    assert analyse("Leads: Ana, Ben.").option.text == "Ana"  # type: ignore[union-attr]  # two names: no list


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_record_with_a_header_is_read_by_what_it_decides(tmp_path: Path, wiring: str) -> None:
    """ "Status: Accepted" is no option: the record in force chose Zustand, and left Redux Toolkit."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(ADR_11).node.id
        now = service.remember(ADR_14, supersedes=first).node.id
        old = service.check("The wisp client state library uses Redux Toolkit.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        held = service.check("The wisp client state library uses Zustand.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_list_replaced_by_a_longer_one(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Data classification scheme: three levels: Public, Internal, Confidential.").node.id
        service.remember(
            "Data classification scheme revised: four levels: Public, Internal, Confidential, Restricted.",
            supersedes=first,
        )
        old = service.check("The data classification scheme uses three levels: Public, Internal, Confidential.")
        assert old.verdict == "superseded", old
        held = service.check(
            "The data classification scheme uses four levels: Public, Internal, Confidential, Restricted."
        )
        assert held.verdict == "in_force", held


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_note_that_sets_a_new_number_left_the_old_one(tmp_path: Path, wiring: str) -> None:
    """The version in force sets 921600 and then names 115200 in its reason: it left 115200."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("wren firmware debug UART: 115200 8N1 on P0.06 (TX) / P0.08 (RX)").node.id
        service.remember(
            "debug uart 921600 - trace logs were getting truncated at 115200. FTDI cables handle it fine.",
            supersedes=first,
        )
        old = service.check("The wren fw debug uart baud uses 115200.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        assert service.check("The wren fw debug uart baud uses 921600.").verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_number_the_note_sets_first_is_its_own(tmp_path: Path, wiring: str) -> None:
    """ "lowest Node: Node 20 (...). Matrix 20/22": 22 is new, but 20 comes first: the note keeps 20."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("CI runs the test suite on Node 18 and Node 20.").node.id
        service.remember("CI matrix, lowest Node: Node 20 (18 is EOL April 2025). Matrix 20/22.", supersedes=first)
        assert service.check("The oss ci node min uses Node 20.").verdict != "superseded"
