"""What the decision timeline lists besides a search: the chains changed last, and the decisions
built on one.

    check_recent(query)                 # RecentQuery's sizes and cursor, or InvalidArgument
    take_recent(heads, query)           # heads newest first -> one RecentPage (filters, cursor)
    with_histories(page, depth, chain)  # each head's earlier versions, read with the page
    dependents_of(chain_ids, graph)     # the dependents (depends_on, implements) of one chain

A chain changes when a version is added to it, so "changed last" is the newest head: node ids are
ULIDs, which sort by creation time, so a store reads its heads in force by id, newest first, from
an index, and stops after one page. The scope and tag filters are recall's (``scope_match``: a
scope also lists the default scope's decisions, in force there too; every tag asked for). Pure
Python: the stores read the rows, this decides which are shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from evomem.domain.dependencies import DEPENDENCY_KINDS, Dependent
from evomem.domain.errors import InvalidArgument
from evomem.domain.model import MemoryNode, is_valid_id
from evomem.domain.recall import check_history_depth, scope_match

#: Chains one page lists at most, and the default.
RECENT_MAX = 100
RECENT_DEFAULT = 20
#: Heads one page reads at most before it stops looking for ones that pass the filters (the page
#: then ends early, with a cursor to go on): a filter that matches nothing costs one bounded read.
RECENT_SCAN_MAX = 2000
#: Dependents one node's page lists at most.
DEPENDENTS_MAX = 200


@dataclass(frozen=True, slots=True)
class RecentQuery:
    """The chains of ``namespace`` whose version in force is newest, newest first: at most
    ``limit``, only heads older than ``before`` (a head id: the cursor of the page before),
    filtered like recall by ``scope`` and ``tags``; with ``history_depth``, each head's earlier
    versions (up to that many) read with the page, in the storage call that reads it."""

    namespace: str
    scope: str | None = None
    tags: tuple[str, ...] = ()
    limit: int = RECENT_DEFAULT
    before: str | None = None
    history_depth: int = 0


@dataclass(slots=True)
class RecentPage:
    """One page: the heads in force, newest first, and ``more``: the ``before`` of the next page
    (None: there is none); ``histories``: head id -> its earlier versions, newest first (asked with
    ``history_depth``; only heads that have some)."""

    heads: list[MemoryNode] = field(default_factory=list)
    more: str | None = None
    histories: dict[str, list[MemoryNode]] = field(default_factory=dict)


def with_histories(page: RecentPage, depth: int, chain: Callable[[str, int], Sequence[MemoryNode]]) -> RecentPage:
    """``page`` with each head's earlier versions, up to ``depth`` (``chain(node_id, depth)``: the node
    and its earlier versions, newest first), for the heads that have some; as it is for depth 0."""
    if depth:
        page.histories = {h.id: list(chain(h.id, depth))[1:] for h in page.heads if h.version > 1}
    return page


def check_recent(query: RecentQuery) -> RecentQuery:
    if isinstance(query.limit, bool) or not isinstance(query.limit, int) or not 1 <= query.limit <= RECENT_MAX:
        raise InvalidArgument(f"limit must be an integer from 1 to {RECENT_MAX}, got {query.limit!r}")
    if query.before is not None and not is_valid_id(query.before):
        raise InvalidArgument(f"before: not a node id: {query.before!r}")
    check_history_depth(query.history_depth)
    return query


def head_sketch(namespace: str, node_id: str, scope: str | None, tags: str | None) -> MemoryNode:
    """A head as far as the filters read it (id, scope, tags: a JSON list as stored), no text:
    a store reads these to fill a page, then the page's nodes in full."""
    return MemoryNode(id=node_id, raw_text="", namespace=namespace, scope=scope, tags=tuple(json.loads(tags or "[]")))


def shown(head: MemoryNode, query: RecentQuery) -> bool:
    """Whether a head in force passes the query's filters (recall's: ``select_hits``)."""
    return scope_match(head.scope, query.scope) is not None and set(query.tags) <= set(head.tags)


def take_recent(heads: Iterable[MemoryNode], query: RecentQuery) -> RecentPage:
    """The page ``heads`` (in force, newest first, after ``query.before``) give: the first
    ``limit`` that pass the filters, and a cursor when another passes after them, or when
    ``RECENT_SCAN_MAX`` were read without filling the page."""
    kept: list[MemoryNode] = []
    for read, head in enumerate(heads, start=1):
        if shown(head, query):
            if len(kept) == query.limit:
                return RecentPage(kept, kept[-1].id)
            kept.append(head)
        if read >= RECENT_SCAN_MAX:
            return RecentPage(kept, head.id)
    return RecentPage(kept, None)


def dependents_of(chain_ids: Iterable[str], graph: Sequence[Dependent]) -> list[str]:
    """The ids of the nodes of ``graph`` (the active nodes that name dependencies) that depend on
    or implement one of ``chain_ids`` (every version of one chain), newest first; the chain's own
    nodes excluded."""
    chain = set(chain_ids)
    found = [d.node_id for d in graph if d.node_id not in chain and chain.intersection(d.targets)]
    return sorted(found, reverse=True)


def dependency_kinds(node: MemoryNode, chain_ids: Iterable[str]) -> list[str]:
    """How ``node`` builds on the chain of ``chain_ids``: ``depends_on``, ``implements``, or both."""
    chain = set(chain_ids)
    return [k for k in DEPENDENCY_KINDS if chain.intersection(node.relations.get(k, ()))]
