"""check, in both wirings: rules of helper premise22 (issue 33's premise check): what a short note leaves after a
leaving verb, written in any case ("moving off eu-central-2", "dropping the free tasting evening"), is what it
left: the shared reader reads a leaving verb only before a name, so a version in force that names the old option
there held its words as its own and the words told no version apart."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_lexical import _causes
from evomem.domain.premise_words import changed_values, left_after_verb, named_words


def _left(text: str) -> list[str]:
    return [text[s:e] for s, e in left_after_verb(text)]


def test_what_a_leaving_verb_leaves_in_any_case() -> None:
    assert _left("We're moving off eu-central-2 after the price rise; storage becomes Wasabi us-east-1.") == [
        "eu-central-2"
    ]
    assert _left("We're dropping the free tasting evening; it ends this month") == ["free tasting evening"]
    assert _left("Gave up on rebase merge, merge commits from now") == ["rebase merge"]
    assert _left("no longer using paper timesheets for the crew") == ["paper timesheets"]


def test_a_leaving_word_used_as_a_noun_leaves_nothing() -> None:
    """ "drop rate", "cancellation fee", "removal" name a thing, not a change."""
    assert _left("The game legendary drop rate uses 0.6%.") == []
    assert _left("The clinic late cancellation fee uses £35.") == []
    assert _left("The skip removal day uses Tuesday.") == []


def test_a_document_leaves_nothing_by_its_leaving_verbs() -> None:
    """A document's leaving verbs speak of anything ("retired staff keep their cards"): read by its own rules."""
    assert _left("Retired staff keep their cards. " + "Section text. " * 100) == []


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_moves_off_a_lowercase_option_left_it(tmp_path: Path, wiring: str) -> None:
    """The head names the old region only after "moving off": the statement that names it was replaced, the new
    one is in force, though both share "Wasabi" and a hyphened shape."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Object storage default: Wasabi eu-central-2.").node.id
        now = service.remember(
            "We're moving off eu-central-2 after the price rise - object storage default becomes Wasabi us-east-1.",
            supersedes=first,
        ).node.id
        old = service.check("The object storage default uses Wasabi eu-central-2.")
        assert old.verdict == "superseded", old
        held = service.check("The object storage default uses Wasabi us-east-1.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_drops_a_lowercase_option_left_it(tmp_path: Path, wiring: str) -> None:
    """A lowercase option the statement reader does not read: the words decide, and the head's "dropping X" is
    what it left."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Members' perk: free tasting evening every first Friday.").node.id
        service.remember(
            "We're dropping the free tasting evening; members get ten percent off bottles instead.", supersedes=first
        )
        old = service.check("The members perk uses free tasting evening.")
        assert old.verdict == "superseded", old


def test_a_name_at_a_sentence_start_is_read_where_more_than_its_first_letter_says_so() -> None:
    """ "AWS", "9:15", "3 years" are names anywhere; a word capitalised only by its place ("Kafka", "Committee")
    at a sentence's start is not read (no memory here to tell a name from a word)."""
    assert named_words("AWS us-east-1 is the default region.") == {"aws", "us", "east", "1"}
    assert named_words("9:15 standup moves to 9:30") == {"9:15", "9:30"}
    assert named_words("3 years without a loan") == {"3"}
    assert named_words("Kafka is the broker. SQS for jobs.") == {"sqs"}
    assert named_words("Committee: seniors train on pitch 2") == {"2"}


@pytest.mark.parametrize("wiring", WIRINGS)
def test_an_option_left_and_named_again_only_in_the_cause_was_left(tmp_path: Path, wiring: str) -> None:
    """ "move off pitch 3 to pitch 5, since pitch 3 is being re-turfed": the cause names the old pitch again; the
    head did not keep it. The head's own text as a statement holds the new pitch."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Under-14s squad: train on pitch 3, Tuesdays and Thursdays.").node.id
        head = "Under-14s move off pitch 3 to pitch 5, since pitch 3 is being re-turfed; lights on 5 too."
        now = service.remember(head, supersedes=first).node.id
        old = service.check("The under-14s training pitch uses pitch 3.")
        assert old.verdict == "superseded", old
        held = service.check("The under-14s training pitch uses pitch 5.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held
        assert service.check(head).verdict == "in_force"


def test_only_a_cause_is_read_as_a_reason_that_names_what_was_left() -> None:
    """ "so we're replacing X with Y" carries the decision: its words are the head's own."""
    text = "The rack is being retired, so we're replacing the Mac minis with EC2 Mac instances."
    assert _causes(text) == ()
    text = "Moving off pitch 3 to pitch 5, since pitch 3 is being re-turfed."
    assert [text[s:e] for s, e in _causes(text)] == ["since pitch 3 is being re-turfed"]


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_name_with_its_lowercase_qualifier_is_one_option(tmp_path: Path, wiring: str) -> None:
    """ "self-hosted Mac minis" and "EC2 Mac instances ... self-hosted images" share "Mac", "self-hosted" and as many
    of the statement's words: the statement's whole phrase tells them apart ("minis"), which the head says it left.
    Read by its name alone ("Mac"), nothing told the versions apart."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Render farm: self-hosted Mac minis.").node.id
        head = "Design render farm: replacing the self-hosted Mac minis with EC2 Mac instances on self-hosted images."
        service.remember(head, supersedes=first)
        old = service.check("The design render farm uses self-hosted Mac minis.")
        assert old.verdict == "superseded", old
        assert service.check("The design render farm uses EC2 Mac instances.").verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_an_option_read_in_part_is_told_by_its_whole_phrase(tmp_path: Path, wiring: str) -> None:
    """The reader reads "Kestrel" of "the Kestrel authenticator app", a name both versions hold (the bank's): the
    words of the whole phrase tell the head, which holds "authenticator app", from the version it replaced."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Kestrel Bank online banking: second factor is SMS codes for all retail customers.")
        now = service.remember(
            "Fraud desk: retail 2FA moves from SMS codes to the Kestrel authenticator app, because of SIM-swap fraud.",
            supersedes=first.node.id,
        ).node.id
        held = service.check("The login second factor uses the Kestrel authenticator app.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held
        assert service.check("The login second factor uses SMS codes.").verdict == "superseded"


def test_a_value_changed_from_one_number_to_another_whatever_the_verb() -> None:
    text = "Oceania: the pool grew, so we're narrowing the band from ±300 ELO to ±200 ELO for ranked."
    assert [text[s:e] for s, e in changed_values(text, {"300", "elo"}, {"300", "elo"})] == ["±300 ELO"]
    # a range it restates (its end was held before) is no change; nor is one the version before never held
    text = "Shop open from 9:00 to 17:00, closed Sundays from now on."
    assert changed_values(text, {"9:00", "17:00"}, {"9:00", "17:00"}) == ()
    assert changed_values("Band goes from ±300 ELO to ±200 ELO.", {"elo"}, {"elo"}) == ()
    # a statement has no chain: a number on each side, another on each
    assert changed_values("Band goes from ±300 ELO to ±200 ELO.") != ()
    assert changed_values("open from 9 to 5") != () and changed_values("from 3 rooms to 3 halls") == ()


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_head_that_changes_a_value_from_one_number_to_another_left_the_old_one(tmp_path: Path, wiring: str) -> None:
    """ "narrowing the band from ±300 ELO to ±200 ELO": no change verb the reader knows, but the old number, which
    the version it replaced held, gave way to one no version held."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Oceania region: the pool is small, so ranked matches within ±300 ELO.").node.id
        head = "Oceania: after the server merge the pool grew, so we're narrowing the band from ±300 ELO to ±200 ELO."
        service.remember(head, supersedes=first)
        old = service.check("The ranked match band uses ±300 ELO.")
        assert old.verdict == "superseded", old
        assert service.check("The ranked match band uses ±200 ELO.").verdict == "in_force"
        assert service.check(head).verdict == "in_force"
