"""Which option a decision note chooses (``evomem.domain.subject``): how names, numbers and addresses
are cut into words (a title's period, a thousands separator, an address's scheme, calendar words), and
where the option stands (after a label's colon, outside an aside)."""

from __future__ import annotations

import pytest

from evomem.domain.subject import analyse
from evomem.domain.subject_names import clause_spans, find_names


def option(text: str) -> str | None:
    got = analyse(text).option
    return got.text if got else None


def names(text: str) -> list[str]:
    return [text[s:e] for s, e in find_names(text, frozenset())]


def test_a_title_and_its_period_join_the_name_that_follows() -> None:
    assert option("My dentist is Dr. Okafor at Riverside Dental.") == "Dr. Okafor"
    assert "Mr. Hrubý" in names("Steel bar supplier: Ostrava Steelworks (Mr. Hrubý).")
    # the title's period ends no clause; a sentence's period does
    assert len(clause_spans("Ask Mr. Hrubý first")) == 1
    assert len(clause_spans("We use AWS. Postgres stays")) == 2


def test_a_number_is_not_cut_at_its_thousands_separator() -> None:
    assert option("The approval limit is USD 5,000 per request.") == "USD 5,000"
    assert names("Upgraded to Python 3.12 today.") == ["Python 3.12"]
    # nor at a letter or a plus that ends it, nor at a time's colon
    assert names("the lab uses ImageJ 1.54f.") == ["ImageJ 1.54f"]
    assert names("The CLI tool requires Python 3.11+.") == ["CLI", "Python 3.11+"]
    assert names("New 10k PB 46:20!") == ["PB 46:20"]
    assert names("Envoy 1.5s timeout.") == ["Envoy"]  # a unit, not a version
    # a number with a leading zero is no version ("Tel 0161" is a phone number)
    assert names("Call Riverside Dental, Tel 0161 555 0192.") == ["Riverside Dental", "Tel"]


def test_an_address_with_its_scheme_is_one_name() -> None:
    assert option("Docs moved to https://docs.example.com.") == "https://docs.example.com"
    assert option("User uploads go to s3://heron-uploads-prod, presigned.") == "s3://heron-uploads-prod"


def test_calendar_words_are_not_names() -> None:
    text = "Support ops: weekend owner: Leo; holiday cover 23-27 Dec: Anneke; standup Mon-Fri, reviewed in Q3."
    assert not {"Dec", "Mon-Fri", "Q3"} & set(names(text))
    assert "Thu" not in names("Childminder: Jenny Oduya, Mon\u2013Thu till 6.")
    # a short form away from any date is a word like another ("Jan" is a name here)
    assert names("Jan covers on-call this week.") == ["Jan"]


@pytest.mark.parametrize(
    ("text", "chosen"),
    [
        ("Payments on-call primary for this week: Priya. Escalation goes to Tomasz.", "Priya"),
        ("Payments: Stripe processes cards and SEPA direct debits for all EU customers.", "Stripe"),
        ("Release runner for services: Convoy. Docs in the platform handbook.", "Convoy"),
        ("Localisation vendor for Lantern: Babelforge, 12 languages.", "Babelforge"),
        ("fish supplier for the kitchen = Dockside Catch. orders by 9pm", "Dockside Catch"),
    ],
)
def test_the_name_a_label_is_set_to_is_the_option(text: str, chosen: str) -> None:
    assert option(text) == chosen


def test_a_name_after_a_label_that_is_reported_on_is_not_the_option() -> None:
    assert option("Incident: Redis cluster went down; we moved sessions to Memcached.") == "Memcached"


def test_a_name_in_an_aside_is_not_the_option_when_one_outside_is_chosen() -> None:
    assert option("billing pager this wk -> Jonas (Priya out sick)") == "Jonas"
    assert option("Ceramics supplier: Delft Ceramics (Anouk), 60-day terms.") == "Delft Ceramics"
    # alone, the aside's name is what there is
    assert option("Supplier switched (Delft Ceramics now).") == "Delft Ceramics"


def test_a_report_that_chooses_a_name_again_does_not_leave_it() -> None:
    roles = {m.text: m.role for m in analyse("Pine & Petal fired, GreenCut rehired.").mentions}
    assert roles == {"Pine": "prev", "Petal": "prev", "GreenCut": "chosen"}
    # control: a report that is no choice still leaves its name
    assert {m.text: m.role for m in analyse("Moved CI to Buildkite, Jenkins kept crashing.").mentions} == {
        "Buildkite": "chosen",
        "Jenkins": "prev",
    }


def test_a_name_the_sentence_says_is_back_is_the_option() -> None:
    assert option("Sol's back as DM.") == "Sol"
    assert option("Kafka is back as the broker.") == "Kafka"
