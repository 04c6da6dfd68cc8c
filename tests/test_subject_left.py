"""What a decision note says it left (``evomem.domain.subject``): the names a later clause reports
on ("Snyk seats were $40k"), and the phrases a change leaves in any case ("from two weeks to three
weeks", "instead of seven"), which ``Facts.left`` spans and the premise check reads."""

from __future__ import annotations

import pytest

from evomem.domain.subject import analyse, lowercase_vocabulary


def roles(text: str) -> dict[str, str]:
    return {m.text: m.role for m in analyse(text).mentions}


def left(text: str) -> list[str]:
    return [text[s:e] for s, e in analyse(text).left]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("PR dependency check is OSV-Scanner plus Dependabot alerts. Snyk seats were $40k.", "Snyk"),
        ("Reverting homework to SatchelPad for the rest of the year, Quillboard contract paused.", "Quillboard"),
        ("Switching labelling vendor to Annotaria from batch 7. Tagsmith's contract ends after batch 6.", "Tagsmith"),
        ("Flags for brindle: Flipt from today. The Unleash VM gets decommissioned in June.", "Unleash VM"),
    ],
)
def test_a_later_clause_reporting_on_a_name_leaves_it(text: str, name: str) -> None:
    assert roles(text)[name] == "prev"
    assert name in left(text)


def test_names_listed_together_are_both_left() -> None:
    got = roles("Every card product moves to Thredd. Marqeta and Galileo contracts wind down by Q3.")
    assert (got["Thredd"], got["Marqeta"], got["Galileo"]) == ("chosen", "prev", "prev")


def test_a_later_clause_that_does_not_report_keeps_the_name() -> None:
    """Controls: the name is described, or it acts, in the present; neither leaves it."""
    assert roles("Ledger runs on SQLite. The Postgres cluster is the analytics store.")["Postgres"] != "prev"
    assert roles("We use Kafka for events. The Kafka brokers run on three nodes.")["Kafka"] != "prev"
    assert roles("Ledger runs on SQLite; Postgres was overkill.") == {"SQLite": "chosen", "Postgres": "prev"}


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("Eng all-hands: sprint length changes from two weeks to three weeks starting next quarter.", "two weeks"),
        ("Fraud ops: raising the review threshold from orders over $500 to orders over $750.", "orders over $500"),
        ("Records Committee: retention is now six years instead of seven, in line with the law.", "seven"),
        ("Climate budget: council cuts the day single to €1.90, replacing €2.40, valid 90 minutes.", "€2.40"),
        ("Hotfix: ranked decay window is 12 days. Short of the old 14, long enough for a holiday.", "14"),
    ],
)
def test_a_change_leaves_the_value_it_changes_from(text: str, phrase: str) -> None:
    assert phrase in left(text)


def test_a_range_is_not_a_change() -> None:
    """A range ("from 10:00 to 20:00") with no verb of change is what the note chooses, not what it left."""
    assert left("Visiting is from 10:00 to 20:00 daily.") == []
    assert left("The shop opens from Monday to Friday.") == []


def test_a_name_opening_a_change_note_and_reported_on_is_left() -> None:
    """A note that opens with X reported on ("X keeps failing") and then changes something leaves X."""
    text = "CourtNest keeps double-booking and half the seniors can't use it. We're reverting to the paper sheet."
    assert roles(text) == {"CourtNest": "prev"}
    assert roles("Dev & Ola moved out; the Lindqvists at No. 16.")["Ola"] == "prev"


def test_a_name_opening_a_note_stays_chosen_unless_the_note_changes_something_else() -> None:
    """Controls: no later change (a status note), a choice in the passive, a name that goes somewhere."""
    assert roles("CourtNest keeps the booking list for all courts.") == {"CourtNest": "chosen"}
    assert roles("Postgres was picked for the ledger; we moved off MySQL.") == {"Postgres": "chosen", "MySQL": "prev"}
    assert roles("Kafka moved to the new cluster; switching brokers next week.")["Kafka"] == "chosen"


def test_a_parenthesis_reporting_on_a_name_leaves_it() -> None:
    assert roles("Kovács Lab main funder: Wellcome Trust (ERC ended).")["ERC"] == "prev"
    assert roles("Ledger on SQLite (Postgres backups nightly).")["Postgres"] != "prev"


def test_a_name_followed_by_its_report_verb_opens_a_change_note_as_left() -> None:
    assert roles("La Brisa closed; the Miramar restaurant is now Mar Salado.")["La Brisa"] == "prev"
    assert roles("Owen can't make it; best man is Arjun.") == {"Owen": "prev", "Arjun": "chosen"}
    # a name qualifying another noun is not what the report is about
    assert roles("K2 offer ended, back to Kettle Classic pricing.").get("K2") != "prev"


def test_a_value_a_clause_opens_with_and_reports_on_is_left() -> None:
    text = "Rolling the vectoriser back to text-embed-3.0 and re-indexing. 3.1 hurt long-tail recall; revisit later."
    assert left(text) == ["3.1"]
    assert left("Rolled prod back to churn-xgb 3.2.0 - 3.4.1 was trained on a snapshot missing users.") == ["3.4.1"]
    # controls: a count with its noun, and a value no change leaves
    assert left("Visiting 10:00-20:00; 2 visitors allowed.") == []
    assert left("K2 offer ended, back to £39.99") == []


def test_a_value_with_inner_separators_is_left_whole() -> None:
    """Times, decimals and thousands keep their separators: "08:40", "£1,100"."""
    assert left("Governors: main school first bell moves from 08:40 to 08:30, to align with the buses.") == ["08:40"]
    assert left("North Campus: first bell moves to 08:50 (instead of 08:15). The early period is gone.") == ["08:15"]
    assert left("Ward price changes from £1,100 to £1,250.") == ["£1,100"]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Finance sync: billing moves off Paddle; Chargebee handles invoicing from Feb 1.", "Paddle"),
        ("After the cost review we're moving shipment status events off Kafka onto NATS JetStream.", "Kafka"),
        ("Karl gave up Japanese, learning Korean instead.", "Japanese"),
        ("We cancelled Zoom, calls are on Jitsi now.", "Zoom"),
    ],
)
def test_a_leaving_verb_leaves_its_name_in_any_inflection(text: str, name: str) -> None:
    """A leaving verb is read by its stem ("moves off" as "moved off"), with its object between
    ("moving X off Kafka"), and a phrase ("gave up")."""
    assert roles(text)[name] == "prev"


def test_accented_letters_are_part_of_a_word_and_names_compare_without_them() -> None:
    assert "raul" in analyse("Raúl lives in Valencia.").subject
    assert "joao" in analyse("João finally replaced the Seat, Dacia Sandero.").subject
    accented = analyse("Team lunch moves to Café Brûlée.").option
    plain = analyse("Team lunch moves to Cafe Brulee.").option
    assert accented is not None and plain is not None
    assert (accented.text, accented.key) == ("Café Brûlée", plain.key)


def test_a_sentence_initial_verb_form_of_a_word_the_memory_uses_is_not_part_of_a_name() -> None:
    """ "Cancelled" begins like "cancellation", which the memory writes in lowercase: a verb, not part
    of the name "Cancelled FibreNest"; without such a word the reader cannot tell."""
    text = "Cancelled FibreNest inside the cooling-off period and went back to Zapline."
    vocab = lowercase_vocabulary([text, "Zapline cancellation done."])
    got = {m.text: m.role for m in analyse(text, vocab).mentions}
    assert got == {"FibreNest": "prev", "Zapline": "chosen"}


def test_not_the_value_leaves_it() -> None:
    """ "3 days, not the 4 we had" and "not quite the 8% I had" say in so many words what is left."""
    assert left("Office days cap: 3 a week. Not the 4 we had before the move, but fair.") == [
        "4 we had before the move"
    ]
    assert left("Savings rate set to 7% from May - not quite the 8% I had, but close.") == ["8% I had"]


@pytest.mark.parametrize(
    "text",
    [
        "Reverting to yarn: pnpm symlinks broke the React Native bundler.",
        "Zone trial results: conveyor jams. We're returning to wave picking, 45-minute waves.",
        "The release train goes back to Tuesdays from next week.",
        "Rolling back to Tillpoint 7.2 everywhere until the vendor ships a patch.",
        "Paging tool: back to PagerDuty.",
    ],
)
def test_going_back_is_read_in_any_inflection(text: str) -> None:
    assert analyse(text).revert_cue is not None


def test_restoring_a_backup_is_no_going_back() -> None:
    assert analyse("Restore the nightly backup to the staging bucket before the demo.").revert_cue is None
