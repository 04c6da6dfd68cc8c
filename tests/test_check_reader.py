"""check, read by the words of the versions (``domain.premise.lexical``), in both wirings: rules of
helper premise12 (issue 33's premise check)."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_words import reported_words


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


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_note_in_force_about_something_else_that_names_the_option_does_not_keep_it(
    tmp_path: Path, wiring: str
) -> None:
    """A chain tied to the statement by its option and a word of its topic, which named the option
    and left it, answers `superseded` though a note in force names the option, when that note
    holds no word of the statement's topic: it is about something else (her passport)."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Priya drives the Sprinter.").node.id
        now = service.remember("Dmitri drives the Sprinter now.", supersedes=first).node.id
        service.remember("Priya's passport expires 2027-03-01.")
        out = service.check("The van sprinter driver uses Priya.")
        assert out.verdict == "superseded" and [n.id for n in out.named] == [first], out
        assert [n.id for n in out.in_force] == [now]
        assert service.check("The van sprinter driver uses Dmitri.").verdict not in ("superseded", "contradicted")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_name_before_the_verb_no_chain_holds_with_the_option_is_a_label(tmp_path: Path, wiring: str) -> None:
    """ "4b" before the verb names the flat: a chain that lacks it is about something else only when a
    chain that holds it names the option ("Kitchen on 3rd floor still uses Square Mile"); here only
    the heating note holds it, so the rota's chain, which never says the flat, answers."""
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember("Flat 4B heating: Vaillant boiler.")
        first = service.remember("Stairs rota this month: Ola.").node.id
        bruno = service.remember("stairs: Bruno", supersedes=first).node.id
        now = service.remember("stairs: Ola again", supersedes=bruno).node.id
        old = service.check("The flat 4b stairs rota uses Bruno.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [bruno], old
        held = service.check("The flat 4b stairs rota uses Ola.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


_REJECTED = (
    "TRS-7: Layered collars and a higher hedge ratio\n\nStatus: {status}\nDate: 2023-04-02\n\n"
    "Context\nThe treasury hedges 50% of forecast net exposure in each currency with forwards. Sales in the US "
    "grew and the board asked whether a higher share should be hedged, and whether options would cost less.\n\n"
    "Proposal\nHedge 75% of forecast net exposure, half of it with zero-cost collars, rolled monthly; keep "
    "forwards for the rest. The treasury team would need a new option pricing tool and a second dealer line.\n\n"
    "Review outcome\nThe committee found that the collars add accounting work under hedge accounting rules, that "
    "the dealers quoted wide spreads, and that the current 50% of forecast net exposure with forwards is enough "
    "for the size of the business. Kept for the history of the discussion; nothing changes in the policy.\n\n"
    "Consequences\nNo change to the hedging programme, the dealer lines or the reporting. The question may come "
    "back when US sales pass a third of revenue. The treasury team reviews the exposure forecast every quarter and "
    "reports the hedge coverage to the audit committee twice a year, with the mark-to-market of open forwards and "
    "the forecast error of the previous two quarters, so that the committee can see whether 50% still fits."
)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_rejected_document_does_not_say_the_option_is_in_force(tmp_path: Path, wiring: str) -> None:
    """Read by the words, a document whose header says it was rejected or only proposed decides
    nothing: it may disagree with a chain that left the option (`unknown`), never say it holds."""
    old = "The treasury fx hedge ratio uses 50% of forecast net exposure."
    new = "The treasury fx hedge ratio uses 60% of forecast net exposure."
    for status, held in (("Rejected", False), ("Accepted", True)):
        with wired(wiring, tmp_path / f"{status}.db") as service:
            first = service.remember("FX hedging: 50% of forecast net exposure, forwards only.").node.id
            service.remember("FX hedging raised to 60% of forecast net exposure from January.", supersedes=first)
            service.remember(_REJECTED.format(status=status))
            assert (service.check(old).verdict == "in_force") is held, status
            assert service.check(new).verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_name_joined_by_hyphens_to_a_digit_tells_versions_apart(tmp_path: Path, wiring: str) -> None:
    """ "us-east-2" is one name: its letters tell it from "us-west-2", though only "2" holds a digit
    (rule of helper premise13). Before, only "2" named it, which every version held: no answer."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("staging region us-east-2").node.id
        now = service.remember("staging migrated to us-west-2", supersedes=first).node.id
        old = service.check("The cloud acct staging region uses us-east-2.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        assert [n.id for n in old.in_force] == [now]
        assert service.check("The cloud acct staging region uses us-west-2.").verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_note_in_force_of_a_scope_the_statement_names_keeps_the_option(tmp_path: Path, wiring: str) -> None:
    """A chain tied to the statement only by its option and a word of its topic, which left the option,
    does not say it was replaced when a note in force of a scope the statement names ("qa") holds the
    option and a word of the topic: the statement may be about that scope (rule of helper premise13)."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("staging bucket region us-east-2").node.id
        service.remember("staging bucket migrated to us-west-2", supersedes=first)
        service.remember("qa bucket stays in us-east-2", scope="qa")
        out = service.check("The cloud acct qa bucket uses us-east-2.")
        assert out.verdict not in ("superseded", "contradicted"), out
        # a scope the statement does not name keeps nothing
        assert service.check("The cloud acct prod bucket uses us-east-2.").verdict == "superseded"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_word_a_later_clause_reports_on_is_left_by_the_version_in_force(tmp_path: Path, wiring: str) -> None:
    """A version in force that reports on the old option in a later clause ("hammerhead repo archived",
    "the helix experiment is over") left it, though the word is lowercase and no name (rule of helper
    premise13); said of the version in force itself, the note still holds."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Load testing tool: hammerhead (our Go tool in perf/), scenarios in perf/.").node.id
        text = "Load tests: k6, scripts in perf/k6/, results to Grafana. hammerhead repo archived."
        now = service.remember(text, supersedes=first).node.id
        old = service.check("The perf load test tool uses hammerhead.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        assert [n.id for n in old.in_force] == [now]
        held = service.check(text)
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_statement_does_not_assert_what_a_later_clause_reports_on(tmp_path: Path, wiring: str) -> None:
    """The version in force, said whole, holds: the word its later clause reports on ("the Tuesday
    rehearsal was cancelled") is left by the statement as by the note (rule of helper premise13)."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("My choir rehearsal is Tuesdays 18:00 at the hall on Kiln Lane.").node.id
        service.remember("Choir tonight as usual, Tuesday 18:00.")
        text = "Choir is now Mondays 18:30 — the Tuesday rehearsal was cancelled by the hall."
        now = service.remember(text, supersedes=first).node.id
        held = service.check(text)
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


def test_only_a_short_note_leaves_a_word_a_later_clause_reports_on() -> None:
    """A document's clauses open with any words ("Options considered", "Every team ..."): only a short
    note's are read (rule of helper premise13; read in documents it lowered note wording)."""
    note = "Load tests: k6, scripts in perf/k6/. hammerhead repo archived."
    assert [note[s:e] for s, e in reported_words(note)] == ["hammerhead"]
    document = note + " Context. " + "Every team reviewed the options and the budget in the quarter. " * 25
    assert reported_words(document) == ()
