"""The heuristic linker (``--auto-supersede heuristic``): change cue + shared vocabulary.

A note that names no ``supersedes`` may still replace an active decision. The heuristic
says it does when the note carries a *change cue* ("moved", "switched", "no longer", "went
back to", "from X to Y", ...; ``vocabulary.HEURISTIC_CHANGE_CUE``) and shares enough
*content vocabulary* (``vocabulary.content_words``) with an active decision in the same
namespace. It never links across namespaces (the store only offers same-namespace
candidates) and never across scopes that are explicit and different.

It is cheap and has no dependencies, but it is not safe alone: the prototype measured link
precision 0.70 and 8 of 80 still-valid decisions hidden. It never abstains. The linker is
therefore off by default (``--auto-supersede off``); ``scored`` is the safe one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evomem.domain.linkers.vocabulary import HEURISTIC_CHANGE_CUE, content_words
from evomem.domain.model import LinkDecision, LinkKind, LinkProposal, MemoryNode
from evomem.domain.scope import compatible as scopes_compatible

NAME = "heuristic"
VERSION = "1"

MIN_SHARED = 2
MIN_OVERLAP = 0.25


class HeuristicLinker:
    """Change cue + overlapping vocabulary, as the prototype described."""

    name = f"{NAME}/{VERSION}"
    abstains = False

    def __init__(self, min_shared: int = MIN_SHARED, min_overlap: float = MIN_OVERLAP) -> None:
        self.min_shared = min_shared
        self.min_overlap = min_overlap

    def prepare(self, text: str) -> None:
        """Nothing to do on the note alone ahead of ``decide``."""

    def wants_candidates(self, text: str) -> bool:
        """Only a note with a change cue and content words can link (``propose``)."""
        return HEURISTIC_CHANGE_CUE.search(text) is not None and bool(content_words(text))

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        scope_inferred: bool = False,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> LinkDecision:
        """Link (the best overlap) or none: the heuristic never abstains. It reads the words
        only: ``similarities``, ``scope_inferred`` and ``earlier`` are not read."""
        proposal = self.propose(text, scope, candidates)
        if proposal is None:
            return LinkDecision(kind=LinkKind.NONE)
        return LinkDecision(kind=LinkKind.LINK, proposal=proposal)

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        cue = HEURISTIC_CHANGE_CUE.search(text)
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
