"""What the linkers are handed, and what they are: the ports of the domain's own code.

The linkers (``evomem.domain.linkers``) read embeddings (``Embedder``), may ask a cross-encoder
(``PairScorer``) and, in the cascade, call other linkers (``Linker``). These Protocols live with
them so that the domain depends on nothing outside it; ``evomem.app.ports`` lists them with the
application's other ports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from evomem.domain.model import LinkDecision, LinkProposal, MemoryNode


@runtime_checkable
class Linker(Protocol):
    """Decides whether a new note replaces one of the candidate decisions.

    Every linker checks status and scope itself: only active, scope-compatible candidates can be
    linked, whatever the caller passes. Each takes every argument and reads what it needs:
    ``similarities``, the search's cosine of the note with a candidate (no second embedding);
    ``scope_inferred``, the note's scope is a guess, so a candidate whose scope differs only by
    such a guess may be *listed* (never linked, ``scope.may_list``); ``earlier``, the candidates'
    earlier versions as the caller read them (the history a linker would otherwise look up)."""

    name: str
    abstains: bool  # whether ``decide`` can answer abstain (the heuristic never does)

    def prepare(self, text: str) -> None:
        """Work on the note alone, ahead of ``decide`` (run while the candidates are searched);
        never raises. A linker with nothing to prepare does nothing."""
        ...

    def wants_candidates(self, text: str) -> bool:
        """Whether ``decide`` would read candidates for this note at all. False only when its
        answer is the same whatever the candidates (a note the linker will not judge: the pair
        linker's ``decides`` gate); the service then searches none and calls ``decide`` with
        none, for the linker's own reason. Never raises (True when unsure)."""
        ...

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        scope_inferred: bool = False,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> LinkDecision:
        """The full answer: link (with a proposal), abstain (with the candidates the note may
        replace, best first) or none."""
        ...

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        """The link only: ``decide``'s proposal when it links, else None (the ProposeLink RPC)."""
        ...


@runtime_checkable
class PairScorer(Protocol):
    """A model that reads a (note, candidate) pair as one text and gives the logit that the note
    replaces the candidate (the pair linker's cross-encoder; ``evomem.adapters.models.onnx_pair``).
    Its calibration, set by its trainer on held-back development data: a candidate's score is
    ``logit(pair model p) + weight * logit``, and a score from ``link_score`` links (``inf``: never)."""

    name: str
    weight: float
    link_score: float

    def logits(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """One logit per (note, candidate) pair, in order."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Texts in, one L2-normalised vector per text out, in order (the linkers' similarity
    features). ``name`` identifies the vector space: vectors of different names are never compared."""

    name: str

    def encode(self, texts: Sequence[str]) -> Any:
        """A sequence of vectors (rows of floats; a float32 numpy array in the ONNX adapter)."""
        ...
