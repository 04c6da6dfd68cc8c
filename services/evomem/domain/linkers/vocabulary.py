"""The words every reader of a note shares: one tokeniser, one stopword list, one change cue.

The linkers (``heuristic``, ``scored`` and the ``cascade``'s gates), the scored linker's
reader (``evomem.domain.subject``) and recall's query terms (``evomem.domain.text``) all read
their vocabulary here. Where a reader needs a different list, the difference is named and
documented below, next to the one list it differs from, and built from it: there are no
copies. The differences are kept because the benchmarks measured each reader with them
(``docs/BENCHMARKS.md``); folding them would change what the linkers link.

This module imports nothing from ``evomem``: it is the leaf every reader builds on.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

# ----------------------------------------------------------------------------- words

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """The lowercase words of a text (``\\w+`` runs, outer underscores stripped)."""
    return [w.strip("_") for w in _WORD.findall(text.lower()) if w.strip("_")]


@lru_cache(maxsize=4096)
def _plain(c: str) -> str:
    base = "".join(x for x in unicodedata.normalize("NFKD", c) if not unicodedata.combining(x))
    return base if len(base) == 1 else c


def fold(text: str) -> str:
    """Lowercase, accents taken off letter by letter ("Raúl" -> "raul", "João" -> "joao"), each
    letter one letter still: how the subject reader and the premise check compare names and words
    (a note may write a name with its accents, a question without)."""
    low = text.lower()
    return low if low.isascii() else "".join(_plain(c) for c in low)


# ----------------------------------------------------------------------------- stopwords

#: English function words: they carry no topic. The one stopword list.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it it's its itself just let me more most my
    no nor not of off on once only or other our ours out over own same she should so some such than
    that the their theirs them then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours us shall may might
    must one two three per via onto upon across within without lot lots etc""".split()
)

#: Words that say a decision is made, changed or undone; never part of a subject.
CUE_WORDS = frozenset(
    """pick picks picked picking choose chose chosen chooses decide decided decides decision decisions
    select selected selects adopt adopted adopts adopting standardise standardised standardize standardized
    settle settled settles agree agreed agrees go goes going went gone use uses used using run runs ran
    running move moves moved moving migrate migrates migrated migrating migration switch switches switched
    switching replace replaces replaced replacing replacement change changes changed changing revert
    reverts reverted reverting roll rolls rolled rolling back return returns returned returning drop drops
    dropped ditch ditched abandon abandoned retire retired retiring deprecate deprecated keep keeps kept
    stay stays stayed instead longer anymore now new old upgrade upgraded upgrades downgrade downgraded
    update updated port ported rewrote rewritten consolidate consolidated opt opted prefer preferred
    lives live hosted host hosts""".split()
)

# Named difference 1: the heuristic's content words (``content_words``). Its list is the
# prototype's: it counts a few function words as content, and drops some of the cue words
# (the ones a change note shares with any note it replaces) and "team".

#: Function words of ``STOPWORDS`` the heuristic keeps as content ("two replicas", "via Kafka").
HEURISTIC_KEEPS = frozenset(
    "across etc it's lot lots may might must one onto per shall three two upon via within without".split()
)
#: Words the heuristic drops on top: cue words (all in ``CUE_WORDS``) and "team".
HEURISTIC_DROPS = frozenset(
    """use used using moved move moving switched switch switching migrated migrate replaced replace changed
    change went back instead longer anymore decided decide picked pick chose choose going go new old now
    team""".split()
)
HEURISTIC_STOPWORDS = (STOPWORDS - HEURISTIC_KEEPS) | HEURISTIC_DROPS

# Named difference 2: recall's query terms (``evomem.domain.text.query_terms``). A question
# keeps the words it may hinge on ("before", "after", "only", "without", "between") and drops
# "whose": BM25 then scores the words that can tell two notes apart.

#: Words of ``STOPWORDS`` a search query keeps.
QUERY_KEEPS = frozenset(
    """above across after again against also am aren't because before below between both doing during each
    etc few further hers his it's itself just let lot lots more most off once one only onto other ours out
    own per same such theirs three through too two until upon very via while within without yours""".split()
)
QUERY_STOPWORDS = (STOPWORDS - QUERY_KEEPS) | {"whose"}


def content_words(text: str) -> set[str]:
    """The heuristic's vocabulary of a note: its words, less ``HEURISTIC_STOPWORDS``, single
    letters and numbers."""
    return {w for w in words(text) if len(w) > 1 and w not in HEURISTIC_STOPWORDS and not w.isdigit()}


# ----------------------------------------------------------------------------- change cues


def _cue(phrases: Iterable[str]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(phrases) + r")\b", re.I)


#: Phrases that say a decision changed (regular expressions, matched as whole words).
CHANGE_PHRASES: tuple[str, ...] = (
    *("moved", "move", "moving", "migrated", "migrate", "migrating", "switched", "switch", "switching"),
    *("replaced", "replace", "replacing", "changed", "change", "changing", "no longer", "instead"),
    *("reverted", "revert", "rolled back", "roll back", "went back", "go back", "going back"),
    *(r"back (?:on|to)", "is back", "are back", r"returns? to", "returned to"),
    *("dropped", "ditched", "abandoned", "retired", "deprecated", "superseded", "supersedes"),
    *("from now on", "from here on", "going forward", "as of", "now", "anymore", "any more", r"from \S+ to"),
)

#: The one change-cue pattern: the note says something changed, explicitly or by a time
#: marker ("from here on", "as of"). The scored linker's reader uses it.
CHANGE_CUE = _cue(CHANGE_PHRASES)

# Named difference 3: the heuristic's change cue, the prototype's, which the heuristic and
# the cascade's gates use (which notes are worth an LLM call: ``bench/results/llm.md``
# measured the gate with it). It reads edits and novelty as a change too ("updated",
# "rewrote", "new"), wants a word after "from X to", and reads neither time markers nor
# returns ("is back", "as of").

#: Phrases of ``CHANGE_PHRASES`` the heuristic's cue does not read.
HEURISTIC_CUE_SKIPS = frozenset(
    (
        *("changing", "roll back", r"back (?:on|to)", "is back", "are back", r"returns? to", "returned to"),
        *("from now on", "from here on", "going forward", "as of", "any more", r"from \S+ to"),
    )
)
#: Phrases the heuristic's cue reads on top.
HEURISTIC_CUE_ADDS: tuple[str, ...] = (
    *("drop", "updated", "upgraded", "downgraded", "new", "rewrote", "rewritten", "ported"),
    *(r"from \w+ to \w+", r"not \w+ any ?more"),
)
HEURISTIC_CHANGE_CUE = _cue((*(p for p in CHANGE_PHRASES if p not in HEURISTIC_CUE_SKIPS), *HEURISTIC_CUE_ADDS))
