"""A linker built on first use: what the embedded server offers with costs nothing until a note needs it.

The pair linker's module and weights take tens of ms to load; the embedded server wraps the offerer
in ``LazyLinker`` so they load at the first ``remember`` that needs them, not before a server's first
answer. It is a ``Linker`` itself (``contracts.Linker``): every call goes to the linker it builds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from evomem.domain.linkers.contracts import Linker
from evomem.domain.model import LinkDecision, LinkProposal, MemoryNode


class LazyLinker:
    """A ``Linker`` built on first use: the pair linker's module and weights (tens of ms) load at
    the first ``remember`` that needs them, not before a server's first answer."""

    abstains = True

    def __init__(self, build: Callable[[], Linker], name: str = "pair") -> None:
        self._build = build
        self._linker: Linker | None = None
        self._lock = threading.Lock()
        self._name = name

    def built(self) -> Linker:
        if self._linker is None:
            with self._lock:
                if self._linker is None:
                    self._linker = self._build()
        return self._linker

    @property
    def name(self) -> str:
        return self._linker.name if self._linker is not None else self._name

    def prepare(self, text: str) -> None:
        self.built().prepare(text)

    def wants_candidates(self, text: str) -> bool:
        """The built linker's answer; True when it cannot be built (``decide`` then fails, and the
        service stores the note unlinked, as before)."""
        try:
            return self.built().wants_candidates(text)
        except Exception:
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
        return self.built().decide(text, scope, candidates, similarities, scope_inferred, earlier)

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        return self.built().propose(text, scope, candidates)
