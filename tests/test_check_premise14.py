"""check, in both wirings: rules of helper premise14 (issue 33's premise check): a time of day is one
value; a chain whose scope was only read from its words answers for the scope of the version it
replaced, and an unscoped statement that says what its scope was read from."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.domain.premise_words import named_words, words_of


def test_a_time_of_day_is_one_value() -> None:
    assert words_of("Mila's school pickup: 15:15, side gate.") >= {"15:15"}
    assert "15" not in words_of("pickup 15:15") and "30" not in words_of("pickup 15:30")
    assert named_words("The pickup uses 15:15.") == {"15:15"}
    assert "1" in words_of("Dana 1:1, Tuesdays")  # not a time: no two-digit minutes


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_time_the_version_in_force_changed_from_is_superseded(tmp_path: Path, wiring: str) -> None:
    """ "15:15" is not in "15:30": read by their hour and minutes, the version in force held every
    word of the old time and the check could not tell the versions apart."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Mila's school pickup: 15:15, Monday to Friday, side gate.").node.id
        now = service.remember("Spring term: Mila pickup 15:30 (the timetable has an extra lesson).", supersedes=first)
        old = service.check("The mila school pickup uses 15:15.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        held = service.check("The mila school pickup uses 15:30.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now.node.id], held


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_replacement_whose_scope_was_read_from_its_words_answers_where_it_replaced(
    tmp_path: Path, wiring: str
) -> None:
    """The version in force says "on the test block" (scope tests, read from its words) and replaced
    a decision of the default scope: it answers there, as its author linked it. Given explicitly,
    the scope moves it: a statement of the default scope is not answered by it."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("CAM post-processor for the DMG mills: post v4.2.").node.id
        now = service.remember(
            "DMG mills post: v4.5 validated on the test block, released to cells 1-4.", supersedes=first
        ).node
        assert (now.scope, now.scope_source) == ("tests", "inferred")
        old = service.check("The plant dmg post version uses v4.2.")
        assert old.verdict == "superseded" and [n.id for n in old.in_force] == [now.id], old
        assert service.check("The plant dmg post version uses v4.5.").verdict == "in_force"
        lathe = service.remember("Post-processor for the Okuma lathes: v3.1.").node.id
        service.remember("Okuma lathes post: v3.4.", supersedes=lathe, scope="tests")
        assert service.check("The plant okuma post version uses v3.1.").verdict == "unknown"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_chain_scoped_by_its_words_answers_a_statement_that_says_them(tmp_path: Path, wiring: str) -> None:
    """Every version says "for the iOS app" (scope mobile, read from those words): an unscoped
    statement that says "ios app" is about that chain; one that does not say them is not."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("For the iOS app the minimum version is iOS 15.").node.id
        now = service.remember("For the iOS app we raise the minimum version to iOS 16.", supersedes=first).node
        assert (now.scope, now.scope_source) == ("mobile", "inferred")
        old = service.check("The ios app minimum version uses iOS 15.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        assert service.check("The ios app minimum version uses iOS 16.").verdict == "in_force"
        assert service.check("The minimum version uses iOS 15.").verdict == "unknown"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_the_one_chain_that_holds_the_option_and_left_it_answers_a_topic_no_version_says(
    tmp_path: Path, wiring: str
) -> None:
    """ "the campaign day": no version says "campaign" or "day". The one chain found whose versions
    hold "Saturday" named it and left it, and nothing in force holds it: `superseded`. A note in force
    that holds the option, about anything, leaves it `unknown`."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("We play Fridays.").node.id
        moved = service.remember("Moving game night to Saturday.", supersedes=first).node.id
        back = service.remember("Back to Fridays.", supersedes=moved).node.id
        old = service.check("The campaign day uses Saturday.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [moved], old
        assert [n.id for n in old.in_force] == [back]
        assert service.check("The campaign day uses Friday.").verdict not in ("superseded", "contradicted")
        service.remember("Saturday mornings: the farmers market.")
        assert service.check("The campaign day uses Saturday.").verdict == "unknown"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_notes_in_force_older_than_the_version_that_left_the_option_do_not_keep_it(tmp_path: Path, wiring: str) -> None:
    """The chair's note holds "£48" and is in force, unlinked; the chain's later version left "£48 a
    year": that later decision replaced the chair's note too. A note that holds it written after the
    change keeps the disagreement (`unknown`)."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Allotment plot rent: £48 a year for a full plot.").node.id
        service.remember("Chair confirmed allotment rent is unchanged at £48 for the coming year.")
        now = service.remember("Allotments 2026: full plot £55 a year, half plot £30.", supersedes=first).node.id
        old = service.check("The council allotment rent uses £48 a year.")
        assert old.verdict == "superseded" and old.named[0].id == first, old
        assert old.in_force[0].id == now
        service.remember("Chair: allotment rent is again unchanged at £48 for the coming year.")
        assert service.check("The council allotment rent uses £48 a year.").verdict == "unknown"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_an_older_note_about_another_thing_that_has_the_option_is_not_replaced_by_a_later_version(
    tmp_path: Path, wiring: str
) -> None:
    """Bastien's note holds "bastien" and the version that named Wren Abara does not: it is about
    another mentee, whose later version left her. Bastien's premise is not flagged."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Odalys's mentor is Wren Abara.").node.id
        service.remember("Bastien is also mentored by Wren Abara.")
        service.remember("odalys now mentored by Cato Ferrand", supersedes=first)
        out = service.check("The bastien mentor uses Wren Abara.")
        assert out.verdict not in ("superseded", "contradicted"), out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_note_in_force_older_than_the_version_that_left_the_option_does_not_keep_a_topic_in_other_words(
    tmp_path: Path, wiring: str
) -> None:
    """ "the gym yoga instructor": the yoga chain named Dev and left him; the extra-session note holds
    Dev and "yoga" but is older than "Yoga now with Mei": it does not keep Dev. Written after the
    change, it does (`unknown`)."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Yoga: Dev teaches.").node.id
        service.remember("Extra yoga session Sat 09:00 (also Dev).")
        now = service.remember("Yoga now with Mei.", supersedes=first).node.id
        old = service.check("The gym yoga instructor uses Dev.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        assert [n.id for n in old.in_force] == [now]
        service.remember("Extra yoga session Sun 10:00 (Dev).")
        assert service.check("The gym yoga instructor uses Dev.").verdict == "unknown"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_note_older_than_the_version_that_left_the_option_does_not_keep_a_topic_no_version_says(
    tmp_path: Path, wiring: str
) -> None:
    """ "the oss merge method": no version says "method". The merge chain named rebase-merge and went
    back to squash-merge; the note about noisy history holds "rebase-merge" but is older than the
    revert: `superseded`. A note that holds it written after the revert leaves it `unknown`."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Merging policy: squash-merge all PRs, PR title becomes the commit message.").node.id
        rebase = service.remember(
            "We're switching to rebase-merge so individual commits and their sign-offs are preserved.", supersedes=first
        ).node.id
        service.remember("History got really noisy with fixup commits after the rebase-merge change.")
        service.remember(
            "Reverting to squash-merge; DCO sign-off will be checked on the PR instead.", supersedes=rebase
        )
        old = service.check("The oss merge method uses rebase-merge.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [rebase], old
        service.remember("Fixup commits are fine again: rebase-merge history looks clean.")
        assert service.check("The oss merge method uses rebase-merge.").verdict == "unknown"
