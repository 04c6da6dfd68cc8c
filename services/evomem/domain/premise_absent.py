"""The premise check of a statement that something has nothing ("The loyalty points uses none.", "the night
shift: nothing"): its option is a word of absence, which no note names as an option. It holds where the chain
about its topic ended the thing and chose nothing since (its version in force says it dropped it: "We're
ending the points scheme on 31 March"); it was replaced where an earlier version did and the version in force
chose again ("ok reverting: back to 2 retries")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from evomem.domain.model import MemoryNode, Status
from evomem.domain.premise_types import Judgement, Reading, Verdict
from evomem.domain.premise_words import complement, left_after_verb, topic_words
from evomem.domain.premise_words import meets as _meets
from evomem.domain.premise_words import words_of as _words
from evomem.domain.subject import LONG_NOTE_CHARS

ABSENT = 0.8  # a chain read by its topic and the version that ended the thing
TOPIC_SHARE = 0.5  # the share of the statement's topic words a chain's versions must hold

#: A statement's option that says there is nothing: the whole phrase after its verb.
_NOTHING = re.compile(r"(?:none|nothing|no\s?one|nobody|n/a)", re.I)

#: A note that ends something, with nothing in its place: a verb of ending ("scrap the dish rota", "night shift
#: discontinued", "we are removing the product detail cache entirely", "will not run in spring term", "agreed to end
#: part-night lighting", "we're ending it from 1 March", "the release train is gone"), or it says
#: there is none ("none scheduled", "no longer cost readers anything"). Read with ``left_after_verb``.
_ENDS = re.compile(
    r"\b(?:none|nothing|no\s+longer|(?:will|shall|does|do|did)\s+not\s+(?:run|continue|be\s+renewed)|"
    r"scrap(?:s|ped|ping)?|discontinu(?:e|es|ed|ing)|abolish(?:es|ed|ing)?|axe[sd]?|"
    r"end(?:s|ed|ing)\s+(?:the|our|their|its|this|it|them)\b|(?:to|will|shall|would|must)\s+end\b(?!\s+(?:of|up|date)\b)|"
    r"(?:is|are|'s)\s+gone\b|remov(?:e|es|ed|ing)\b|cancel(?:s|l?ed|l?ing)?\b|"
    r"(?:stop|stops|stopped|stopping)\b|drop(?:s|ped|ping)?\b|get\s+rid\s+of|do(?:ing)?\s+away\s+with)",
    re.I,
)


def says_nothing(statement: str) -> bool:
    """Whether the statement's option is a word of absence ("... uses none.")."""
    said = (complement(statement) or "").strip(" .!")
    return bool(said) and _NOTHING.fullmatch(said) is not None


def ends(node: MemoryNode) -> bool:
    """Whether a short version says it ended something (``_ENDS``, ``left_after_verb``). A document: no (its
    verbs of ending speak of anything)."""
    text = node.raw_text
    if len(text) > LONG_NOTE_CHARS:
        return False
    return bool(_ENDS.search(text) or left_after_verb(text))


def absent(statement: str, chains: Sequence[tuple[MemoryNode, Sequence[MemoryNode]]]) -> Judgement | None:
    """A statement that says its topic has nothing (``says_nothing``), read by the one chain of several versions
    whose versions hold most of its topic's words (at least ``TOPIC_SHARE``): ``in_force`` where its version in
    force ended the thing (``ends``), ``superseded`` where only an earlier version did and a later one chose
    again. None: not such a statement, no chain or several about it, or no version ended anything."""
    if not says_nothing(statement):
        return None
    topic = topic_words(statement) - _words(complement(statement) or "")
    if not topic:
        return None
    best: list[tuple[MemoryNode, list[MemoryNode]]] = []
    top = 0.0
    for head, past in chains:
        if head.status != Status.ACTIVE or not past:
            continue
        versions = [head, *past]
        held = set().union(*(_words(v.raw_text) for v in versions))
        share = sum(_meets({t}, held) for t in topic) / len(topic)
        if share < TOPIC_SHARE or share < top:
            continue
        if share > top:
            best, top = [], share
        best.append((head, versions))
    if len(best) != 1:
        return None
    head, versions = best[0]
    if ends(head):
        reading = Reading(head, "words", "supports", named=head)
        return Judgement(Verdict.IN_FORCE, ABSENT, readings=[reading], reason="its version in force ended it")
    # an ending presupposes something before it: the chain's first version (``version`` 1) chose what it names
    # ("streetlights switched off 00:30-05:30"), it ended nothing the chain held
    at = next((i for i, v in enumerate(versions) if i > 0 and v.version > 1 and ends(v)), None)
    if at is None:
        return None
    reading = Reading(head, "words", "replaced", named=versions[at], successor=versions[at - 1])
    why = "an earlier version ended it; a later one chose again"
    return Judgement(Verdict.SUPERSEDED, ABSENT, readings=[reading], reason=why)
