"""Automatic supersession, first version: the heuristic linker.

A note that names no ``supersedes`` may still replace an active decision. The
heuristic says it does when the note carries a *change cue* ("moved", "switched",
"no longer", "went back to", "from X to Y", ...) and shares enough *content
vocabulary* with an active decision in the same namespace. It never links across
namespaces (the store only offers same-namespace candidates) and never across
scopes that are explicit and different.

It is cheap and has no dependencies, but it is not safe alone: the prototype
measured link precision 0.70 and 8 of 80 still-valid decisions hidden. The linker
is therefore off by default (``--auto-supersede off``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evomem.domain.model import MemoryNode
from evomem.domain.scope import compatible as scope_compatible
from evomem.domain.text import words

NAME = "heuristic"
VERSION = "1"

CHANGE_CUE = re.compile(
    r"\b(moved|move|moving|switched|switch|switching|migrated|migrate|migrating|replaced|replace|replacing|"
    r"changed|change|now|no longer|instead|went back|go back|going back|reverted|revert|rolled back|"
    r"dropped|drop|ditched|abandoned|retired|deprecated|superseded|supersedes|updated|upgraded|downgraded|"
    r"anymore|from \w+ to \w+|not \w+ any ?more|new|rewrote|rewritten|ported)\b",
    re.I,
)

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just let me more most my
    no nor not now of off on once only or other our ours out over own same she should so some such than
    that the their theirs them then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours us use used using
    moved move moving switched switch switching migrated migrate replaced replace changed change went
    back instead longer anymore decided decide picked pick chose choose going go team new old""".split()
)

MIN_SHARED = 2
MIN_OVERLAP = 0.25


@dataclass(frozen=True, slots=True)
class LinkProposal:
    target_id: str
    confidence: float
    method: str
    evidence: tuple[str, ...]
    by: str


@dataclass(frozen=True, slots=True)
class LinkDecision:
    """A linker's full answer: link (with a proposal), abstain (with candidates), or none.

    Abstaining is not the same as "no link": the linker saw plausible candidates but is not
    sure enough, so the note is stored unlinked and marked ``possible_supersedes`` for the
    agent to confirm with one ``supersede`` call.
    """

    kind: str  # "link" | "abstain" | "none"
    proposal: LinkProposal | None = None
    candidates: tuple[tuple[str, float], ...] = ()  # (node id, score), best first
    reason: str = ""


def decide(linker: object, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkDecision:
    """Ask any linker for a decision; linkers with only ``propose`` never abstain."""
    full = getattr(linker, "decide", None)
    if callable(full):
        return full(text, scope, candidates)  # type: ignore[no-any-return]
    proposal = linker.propose(text, scope, candidates)  # type: ignore[attr-defined]
    if proposal is None:
        return LinkDecision(kind="none")
    return LinkDecision(kind="link", proposal=proposal)


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if len(w) > 1 and w not in STOPWORDS and not w.isdigit()}


def scopes_compatible(a: str | None, b: str | None) -> bool:
    """Links never cross scopes, explicit or inferred (see ``evomem.domain.scope``):
    same scope, or both in the default scope (unscoped or production)."""
    return scope_compatible(a, b)


class HeuristicLinker:
    """Change cue + overlapping vocabulary, as the prototype described."""

    name = f"{NAME}/{VERSION}"

    def __init__(self, min_shared: int = MIN_SHARED, min_overlap: float = MIN_OVERLAP) -> None:
        self.min_shared = min_shared
        self.min_overlap = min_overlap

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        cue = CHANGE_CUE.search(text)
        if cue is None:
            return None
        mine = content_words(text)
        if not mine:
            return None
        best: tuple[float, MemoryNode, set[str]] | None = None
        for cand in candidates:
            if cand.status != "active" or not scopes_compatible(scope, cand.scope):
                continue
            theirs = content_words(cand.raw_text)
            shared = mine & theirs
            if len(shared) < self.min_shared:
                continue
            overlap = len(shared) / min(len(mine), len(theirs))
            if overlap < self.min_overlap:
                continue
            if best is None or overlap > best[0]:
                best = (overlap, cand, shared)
        if best is None:
            return None
        overlap, cand, shared = best
        return LinkProposal(
            target_id=cand.id,
            confidence=round(min(1.0, overlap), 3),
            method=NAME,
            evidence=(f"change cue: {cue.group(0)!r}", "shared words: " + ", ".join(sorted(shared)[:12])),
            by=self.name,
        )
