"""The cascade: a cheap linker first, a second opinion (the LLM) only when a gate says so.

``--auto-supersede llm`` is ``CascadeLinker(PairLinker, LLMLinker, pair_unsure)`` (wired in
``evomem.bootstrap``): the pair linker answers, and the LLM is asked whenever the pair model is
unsure about a plausible candidate (it abstained), not only when a cue word is present, and there
are eligible candidates. ``unsure_or_cued`` is the gate the scored linker used (abstained, or none
for a note with a change cue). What to ask and when to trust the answer is policy,
so it lives here; the LLM call itself is an adapter (``evomem.adapters.llm_linker``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from evomem.domain.linkers.vocabulary import HEURISTIC_CHANGE_CUE
from evomem.domain.model import LinkDecision, LinkKind, LinkProposal, MemoryNode
from evomem.domain.scope import compatible as scopes_compatible

if TYPE_CHECKING:
    from evomem.domain.linkers.contracts import Linker

#: How many candidates a second opinion is offered (the LLM's prompt lists them all).
MAX_OFFERED = 8

#: ``needs_llm(cheap_decision, text, scope, offered)``: whether to ask the LLM. On a cheap "none" its
#: answer may depend on the note's text only (``CascadeLinker.wants_candidates`` asks it before any
#: search, with no scope and no candidates).
Gate = Callable[[LinkDecision, str, str | None, Sequence[MemoryNode]], bool]


def eligible_candidates(scope: str | None, candidates: Sequence[MemoryNode], limit: int) -> list[MemoryNode]:
    """Active, scope-compatible candidates, in the caller's order, without duplicates."""
    out: list[MemoryNode] = []
    seen: set[str] = set()
    for cand in candidates:
        if cand.id in seen or cand.status != "active" or not scopes_compatible(scope, cand.scope):
            continue
        seen.add(cand.id)
        out.append(cand)
        if len(out) >= limit:
            break
    return out


def has_change_cue(cheap: LinkDecision, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> bool:
    """The heuristic's gate: the LLM is worth asking only when the note says something changed."""
    return HEURISTIC_CHANGE_CUE.search(text) is not None


def unsure_or_cued(cheap: LinkDecision, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> bool:
    """The scored linker's gate: ask the LLM when the cheap linker abstains, or finds nothing
    although the note says something changed (a paraphrase it could not read). A link from
    the scored linker stands: it links only when sure (measured precision 1.0, docs/BENCHMARKS.md)."""
    if cheap.kind is LinkKind.ABSTAIN:
        return True
    return cheap.kind is LinkKind.NONE and HEURISTIC_CHANGE_CUE.search(text) is not None


def pair_unsure(cheap: LinkDecision, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> bool:
    """The pair linker's gate: ask the LLM whenever the pair linker offers a candidate it does not
    link (it abstains exactly then: a candidate at or above its calibrated ``offer_at``, cue word or
    not); its links stand (calibrated for precision >= 0.98 on development data) and its none means
    no candidate reaches the cut-off (a lower ``offer_at`` lets the LLM read more)."""
    return cheap.kind is LinkKind.ABSTAIN


class CascadeLinker:
    """A cheap linker first; the LLM only when ``needs_llm`` says so and candidates exist.

    ``needs_llm(cheap_decision, text, scope, offered)`` is the gate: ``has_change_cue`` (any
    note with a change cue, whatever the cheap linker said) or ``unsure_or_cued`` (only when
    the cheap linker abstains, or says none to a note with a change cue). When the gate stays
    shut, or there are no eligible candidates, the answer is the cheap linker's. When it
    opens, the LLM decides, and its abstention stands: the cheap linker's guess is not used
    instead, only listed first among the candidates. With ``trust_cheap_at``, a cheap link at
    least that confident is accepted without asking the LLM.
    """

    def __init__(
        self,
        cheap: Linker,
        llm: Linker,
        needs_llm: Gate = has_change_cue,
        *,
        trust_cheap_at: float | None = None,
        max_candidates: int = MAX_OFFERED,
    ) -> None:
        self.cheap = cheap
        self.llm = llm
        self.needs_llm = needs_llm
        self.trust_cheap_at = trust_cheap_at
        self.max_candidates = max_candidates
        self.name = f"cascade({cheap.name}>{llm.name})"
        self.abstains = cheap.abstains or llm.abstains

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        return self.decide(text, scope, candidates).proposal

    def prepare(self, text: str) -> None:
        """The cheap linker's work on the note alone (the LLM has none)."""
        self.cheap.prepare(text)

    def wants_candidates(self, text: str) -> bool:
        """When the cheap linker wants them, or when the gate would ask the LLM after the cheap
        linker's none (``has_change_cue``, ``unsure_or_cued`` on a note with a change cue): a gate
        reads the cheap decision and the note (``Gate``)."""
        if self.cheap.wants_candidates(text):
            return True
        none = LinkDecision(kind=LinkKind.NONE, reason="the cheap linker judges no candidate")
        try:
            return self.llm.wants_candidates(text) and self.needs_llm(none, text, None, ())
        except Exception:  # a gate that fails here is asked again in ``decide``
            return True

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        scope_inferred: bool = False,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> LinkDecision:
        """The cheap linker's decision (given ``similarities``, ``scope_inferred`` and ``earlier``),
        or the LLM's when the gate opens (it reads the note and the candidates only)."""
        cheap = self.cheap.decide(
            text, scope, candidates, similarities=similarities, scope_inferred=scope_inferred, earlier=earlier
        )
        offered = eligible_candidates(scope, candidates, self.max_candidates)
        if not offered or not self.needs_llm(cheap, text, scope, offered):
            return cheap
        if (
            self.trust_cheap_at is not None
            and cheap.proposal is not None
            and cheap.proposal.confidence >= self.trust_cheap_at
        ):
            return cheap
        decision = self.llm.decide(text, scope, candidates)
        if decision.kind is LinkKind.ABSTAIN and cheap.proposal is not None:
            first = cheap.proposal.target_id
            ids = [cid for cid, _ in decision.candidates]
            if first in ids:  # the cheap guess goes first among the candidates, never in force
                i = ids.index(first)
                ordered = (decision.candidates[i], *decision.candidates[:i], *decision.candidates[i + 1 :])
                return replace(decision, candidates=ordered)
        return decision
