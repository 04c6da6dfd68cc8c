"""check, in both wirings: rules of helper premise17 (issue 33's premise check): a document read first by the
lead of its deciding section where the statement's option is a value (the value it sets comes before the
exceptions and limits that name others)."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_document import LEAD_CHARS, deciding

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
