"""The linker's cost per remember, measured from outside the product: wrappers around the ports.

    timings = instrument(service)        # an embedded MemoryService (LocalStorage), once built
    ... remember ...
    timings.linker_ms, timings.decide_ms, timings.embed_ms, timings.llm_ms

The product keeps no timing queues. This wraps, on one service:

- its vectors' ``prepare``: the note's own embedding when something computes it before the
  candidate search (storage no longer does: the search embeds it beside BM25, so it is in the
  search's time);
- its storage's ``remember_context`` when it searches candidates: the candidate search (an
  embedding ``prepare`` timed taken out);
- its linker's (or offerer's) ``decide``: the decision alone; ``linker_ms`` is search + decision,
  counted for every remember that called the linker with candidates (one with no candidate never
  does; a note the linker does not judge, ``wants_candidates``, is not searched for and its
  ``decide``, given no candidate, only says why: not timed either);
- with ``--auto-supersede llm``, the cascade's model calls (``llm_ms``, one per call made).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evomem.domain.model import LinkDecision, LinkProposal, MemoryNode
from evomem.domain.remember import ContextQuery, RememberContext


@dataclass
class Timings:
    linker_ms: list[float] = field(default_factory=list)
    decide_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)
    llm_ms: list[float] = field(default_factory=list)
    llm: bool = False  # the linker is the llm cascade (its calls are counted)
    _search_ms: float = 0.0
    _embedded_ms: float = 0.0


class _Wrapped:
    """Everything of ``inner`` but what the subclass times."""

    def __init__(self, inner: Any, timings: Timings) -> None:
        self._inner = inner
        self._timings = timings

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._inner, name)


class _TimedVectors(_Wrapped):
    def prepare(self, text: str) -> None:
        started = time.perf_counter()
        try:
            self._inner.prepare(text)
        finally:
            ms = (time.perf_counter() - started) * 1000
            self._timings.embed_ms.append(ms)
            self._timings._embedded_ms = ms


class _TimedStorage(_Wrapped):
    def remember_context(self, query: ContextQuery) -> RememberContext:
        self._timings._embedded_ms = 0.0
        started = time.perf_counter()
        try:
            return self._inner.remember_context(query)
        finally:
            if query.candidates:
                total = (time.perf_counter() - started) * 1000
                self._timings._search_ms = total - self._timings._embedded_ms


class _TimedLinker(_Wrapped):
    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        scope_inferred: bool = False,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> LinkDecision:
        if not candidates:  # a note the linker does not judge: no search, nothing decided (not timed)
            return self._inner.decide(text, scope, candidates, similarities, scope_inferred, earlier)
        started = time.perf_counter()
        try:
            return self._inner.decide(text, scope, candidates, similarities, scope_inferred, earlier)
        finally:
            ms = (time.perf_counter() - started) * 1000
            self._timings.decide_ms.append(ms)
            self._timings.linker_ms.append(self._timings._search_ms + ms)

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        return self._inner.propose(text, scope, candidates)


class _TimedModel(_Wrapped):
    """The llm cascade's second opinion: one entry per call made."""

    def decide(self, *args: Any, **kwargs: Any) -> LinkDecision:
        started = time.perf_counter()
        try:
            return self._inner.decide(*args, **kwargs)
        finally:
            self._timings.llm_ms.append((time.perf_counter() - started) * 1000)


def instrument(service: Any) -> Timings:
    """Wrap ``service``'s storage, vectors and linker (see the module docstring); the timings."""
    timings = Timings()
    storage = service.storage
    if getattr(storage, "vectors", None) is not None:
        storage.vectors = _TimedVectors(storage.vectors, timings)
    service.storage = _TimedStorage(storage, timings)
    for role in ("linker", "offerer"):
        linker = getattr(service, role)
        if linker is None:
            continue
        llm = getattr(linker, "llm", None)  # the cascade's model (``--auto-supersede llm``)
        if llm is not None:
            linker.llm = _TimedModel(llm, timings)
            timings.llm = True
        setattr(service, role, _TimedLinker(linker, timings))
    return timings
