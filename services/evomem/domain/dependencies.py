"""Decisions built on other decisions: the typed edges ``depends_on`` and ``implements``, the
cycles they may not make, and what goes stale when a decision is replaced.

    targets(node.relations)                       # the ids a note depends on (both kinds)
    cycle(targets, goal, graph, roots)            # a path back into ``goal`` (a cycle), or None
    stale(replaced_chain, graph, roots)           # {node id: the dependency it reaches it through}
    reaching(chain, dependents_of)                # the part of the graph ``stale`` reads for ``chain``
    flagged(flag, replaced, replaced_by, via, at) # a node's ``needs_review``, one more entry
    inherited(named, at)                          # a new note built on something already stale
    restored(flag, version)                       # an unlink put ``version`` back in force

A dependency names a node, and means the *decision* (its chain): when the chain's version in
force is replaced (``supersedes``, the ``supersede`` tool, a linker), every active node that depends
on the chain, directly or through a chain of dependencies, needs review. ``graph`` is the active
nodes that name dependencies (one per chain at most: a chain has one head), ``roots`` the chain of
every id involved; the stores read both in the write's transaction and write the flags there.
Pure Python: no storage, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from evomem.domain.model import ReviewFlag

#: The relation types that are dependencies: a note that ``depends_on`` or ``implements`` a decision
#: is stale when that decision is replaced.
DEPENDENCY_KINDS = ("depends_on", "implements")
#: How many dependency hops a propagation or a cycle check follows (a guard, not a product limit).
MAX_HOPS = 64


@dataclass(frozen=True, slots=True)
class Dependent:
    """An active node that names dependencies: its id, its chain, the ids it depends on, its flag."""

    node_id: str
    chain_root: str
    targets: tuple[str, ...]
    flag: ReviewFlag | None = None


def targets(relations: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The ids ``relations`` names as dependencies (``depends_on``, ``implements``), once each."""
    return tuple(dict.fromkeys(i for kind in DEPENDENCY_KINDS for i in relations.get(kind, ())))


def cycle(
    start: Iterable[str], goal: set[str], graph: Sequence[Dependent], roots: Mapping[str, str]
) -> list[str] | None:
    """The ids from one of ``start`` to a node of a ``goal`` chain, following dependencies (each
    chain's active node's), when there is such a path: a note of a ``goal`` chain that depends on
    ``start`` would depend on itself. None: no cycle."""
    by_chain = {d.chain_root: d for d in graph}
    frontier = [(t, [t]) for t in start]
    seen: set[str] = set()
    for _ in range(MAX_HOPS):
        if not frontier:
            return None
        following: list[tuple[str, list[str]]] = []
        for target, path in frontier:
            chain = roots.get(target)
            if chain is None:
                continue
            if chain in goal:
                return path
            if chain in seen:
                continue
            seen.add(chain)
            node = by_chain.get(chain)
            if node is not None:
                following.extend((t, [*path, t]) for t in node.targets)
        frontier = following
    return None


def stale(replaced_chain: str, graph: Sequence[Dependent], roots: Mapping[str, str]) -> dict[str, str]:
    """The active nodes that depend on ``replaced_chain``, directly or through others, each with
    the dependency it names that leads there (its ``via``). A node of the replaced chain itself is
    never stale by its own change."""
    into: dict[str, list[tuple[Dependent, str]]] = {}
    for node in graph:
        for t in node.targets:
            chain = roots.get(t)
            if chain is not None:
                into.setdefault(chain, []).append((node, t))
    out: dict[str, str] = {}
    seen = {replaced_chain}
    frontier = [replaced_chain]
    for _ in range(MAX_HOPS):
        if not frontier:
            break
        following: list[str] = []
        for chain in frontier:
            for node, via in into.get(chain, ()):
                if node.node_id in out or node.chain_root in seen:
                    continue
                out[node.node_id] = via
                seen.add(node.chain_root)
                following.append(node.chain_root)
        frontier = following
    return out


def reaching(chain: str, dependents_of: Callable[[set[str]], Iterable[Dependent]]) -> list[Dependent]:
    """The active nodes that depend on ``chain`` directly or through others, and those that name a
    version of the chains found on the way: every node ``stale(chain, ...)`` can reach, so it answers
    on this part as on the whole graph. ``dependents_of(chains)`` gives the active nodes that may name
    a version of one of ``chains`` (a superset does no harm: ``stale`` follows ``roots``). Read a layer
    at a time, so a write reads the dependents of what it replaced, not every dependent of the namespace."""
    found: dict[str, Dependent] = {}
    seen = {chain}
    frontier = {chain}
    for _ in range(MAX_HOPS):
        if not frontier:
            break
        fresh = [d for d in dependents_of(frontier) if d.node_id not in found]
        found.update((d.node_id, d) for d in fresh)
        frontier = {d.chain_root for d in fresh} - seen
        seen |= frontier
    return list(found.values())


def flagged(flag: ReviewFlag | None, replaced: str, replaced_by: str, via: str, at: int) -> ReviewFlag:
    """``flag`` with one more replaced dependency (once per replaced version)."""
    if flag is None:
        return ReviewFlag((replaced,), (replaced_by,), (via,), at)
    if replaced in flag.replaced:
        return flag
    return ReviewFlag(
        (*flag.replaced, replaced), (*flag.replaced_by, replaced_by), (*flag.via, via), flag.flagged_at or at
    )


def restored(flag: ReviewFlag | None, version: str) -> ReviewFlag | None:
    """``flag`` without the entries that name ``version`` as replaced: an unlink put it back in force.
    None when nothing else is left."""
    if flag is None or version not in flag.replaced:
        return flag
    keep = [i for i, r in enumerate(flag.replaced) if r != version]
    if not keep:
        return None
    pick = lambda xs: tuple(xs[i] for i in keep if i < len(xs))  # noqa: E731
    return ReviewFlag(pick(flag.replaced), pick(flag.replaced_by), pick(flag.via), flag.flagged_at)


def inherited(named: Sequence[tuple[str, str | None, ReviewFlag | None]], at: int) -> ReviewFlag | None:
    """The flag a new note starts with: built on a version already replaced (``(target, the head
    of its chain now, _)``), or on a decision itself flagged (``(target, None, its flag)``), it
    needs review from the start, naming what was replaced. None: nothing it names is stale."""
    flag: ReviewFlag | None = None
    for target, head, theirs in named:
        if head is not None and head != target:
            flag = flagged(flag, target, head, target, at)
        elif theirs is not None:
            for replaced, by in zip(theirs.replaced, theirs.replaced_by, strict=False):
                flag = flagged(flag, replaced, by, target, at)
    return flag


def cycle_message(kind_of: Mapping[str, str], path: Sequence[str]) -> str:
    """What a refused cycle says: the path, and what to do instead."""
    first = kind_of.get(path[0], "depends_on")
    return (
        f"relations.{first}: a dependency cycle: this decision would depend on itself "
        f"({' -> '.join(path)} -> this chain). A decision cannot depend on the decision it replaces, "
        "nor on one that depends on it; drop that dependency"
    )


def kinds_of(relations: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The dependency kind each dependency id is named under (the first, when under both)."""
    out: dict[str, str] = {}
    for kind in DEPENDENCY_KINDS:
        for i in relations.get(kind, ()):
            out.setdefault(i, kind)
    return out
