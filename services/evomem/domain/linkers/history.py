"""Where a linker reads a candidate's earlier versions: what the caller read, or the store's lookup.

The scored and pair linkers read a candidate's chain back a few versions (what a terse "Ledger runs
on SQLite" is about; whether "back to X" returns to it). The caller may give those versions with the
candidates (``decide(..., earlier=)``, node id -> node); else the linker asks its ``lookup`` (the
store's ``get_many``). Either way the linker walks the chain the same way, so the same versions give
the same decision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from evomem.domain.model import MemoryNode

Lookup = Callable[[Iterable[str]], Mapping[str, MemoryNode]]


def versions_from(lookup: Lookup | None, earlier: Mapping[str, MemoryNode] | None) -> Lookup | None:
    """The lookup a linker walks a chain with: ``earlier`` when given (the versions it holds of
    the ids asked for), else ``lookup`` (None: no history)."""
    if earlier is None:
        return lookup

    def held(ids: Iterable[str]) -> Mapping[str, MemoryNode]:
        return {i: earlier[i] for i in ids if i in earlier}

    return held
