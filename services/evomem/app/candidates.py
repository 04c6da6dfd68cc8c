"""The linker's candidates: the active decisions a new note may replace, found by words and meaning.

    found = find_candidates(store, vectors, pool, query)    # a ContextQuery with candidates=True

BM25 looks for the note's decision part (``query.search_terms``; exact, ``CANDIDATE_PRUNE``); with
vectors, the note's nearest active notes by meaning are fused in by rank (a paraphrase shares few
words), and every candidate's cosine with the note comes with them: the neighbours' from the search,
the others' from their stored vectors (so the linker embeds no candidate text again). Candidates whose
scope rules them out are dropped, but a scope inferred from a text (the note's, or a candidate's)
is a guess and rules nothing out (``scope.may_list``): the linker may list such a candidate for the
agent to confirm, never link it. Each candidate's earlier versions are read too, so a linker that
reads a chain's history ("back to Postgres") finds it in the answer. Candidates and earlier versions
are read as link sketches (``Store.link_sketches``: the fields a linker reads, no tags, relations or
link to decode).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evomem.app.ports import Store, Vectors
from evomem.app.recall import Pool, search_both
from evomem.domain.model import MemoryNode, SearchHit, Status
from evomem.domain.recall import fuse
from evomem.domain.remember import ContextQuery
from evomem.domain.scope import may_list as scope_may_list

#: The word search's aggressive pruning factor (``Store.search``'s ``prune``): 1, exact. speed10 set 1.25
#: (FTS5 left out a row once its terms' bounds could not reach 1.25 times the 20th score) when the bound
#: was idf * (k1 + 1); with each term's stored largest contribution (speed11) the exact search of a bench
#: note at 100k ranks fewer rows than 1.25 did and takes less time, and 1.25 on the tight bounds changed
#: 40 % of the bench notes' top 20. So the linker's candidates are the exact BM25 answer again.
CANDIDATE_PRUNE = 1.0
#: The linker's vector neighbours are active decisions only, but the index holds every version:
#: the search asks it for this many times ``vector_limit`` and keeps the first active ones.
ACTIVE_NEIGHBOURS_OVERSAMPLE = 4


@dataclass(slots=True)
class Found:
    candidates: list[MemoryNode] = field(default_factory=list)
    similarities: dict[str, float] = field(default_factory=dict)
    earlier: dict[str, MemoryNode] = field(default_factory=dict)
    vector_problem: str | None = None


def find_candidates(store: Store, vectors: Vectors | None, pool: Pool, query: ContextQuery) -> Found:
    """Active decisions of the namespace with a compatible scope, best first, with the cosine of
    the note with each one the vector half found and their earlier versions."""
    limit, vector_limit = query.limit, query.vector_limit
    nodes: dict[str, MemoryNode] = {}
    ahead: dict[str, MemoryNode] = {}  # the BM25 candidates' earlier versions, read with them

    def read_hits(found: list[SearchHit]) -> None:  # while the vector half embeds the note
        nodes.update(store.link_sketches(h.node_id for h in found))
        ahead.update(earlier_versions(store, list(nodes.values()), query.earlier_depth))

    hits, near, problem = search_both(
        store,
        vectors if vector_limit > 0 else None,
        pool,
        query.search_terms,
        query.text,
        query.namespace,
        limit,
        vector_limit * ACTIVE_NEIGHBOURS_OVERSAMPLE,
        active_only=True,
        prune=CANDIDATE_PRUNE,
        meanwhile=read_hits,
    )
    unread = [i for i, _ in near[:vector_limit] if i not in nodes]
    if unread:
        nodes.update(store.link_sketches(unread))
    if near:
        vhits = [
            SearchHit(i, nodes[i].chain_root, sim, via=("vector",))
            for i, sim in active_nearest(store, near, nodes, vector_limit)
        ]
        hits = fuse(hits, vhits)[:limit]
    out = [nodes[h.node_id] for h in hits if h.node_id in nodes]
    kept = [
        n
        for n in out
        if scope_may_list(
            query.scope, n.scope, a_inferred=query.scope_inferred, b_inferred=n.scope_source == "inferred"
        )
    ]
    similarities = dict(near)
    if near and vectors is not None:  # the cosines the vector half did not find, from the stored vectors
        similarities.update(stored_similarities(vectors, query, [n.id for n in kept if n.id not in similarities]))
    return Found(kept, similarities, earlier_versions(store, kept, query.earlier_depth, ahead), problem)


def stored_similarities(vectors: Vectors, query: ContextQuery, node_ids: list[str]) -> dict[str, float]:
    """The note's cosine with each of ``node_ids`` (BM25 candidates), from their stored vectors: the
    linker compares the note with every candidate, and would otherwise embed their texts again.
    {} on any failure (the linker then embeds what it needs)."""
    if not node_ids:
        return {}
    try:
        return vectors.similarities(query.text, namespace=query.namespace, node_ids=node_ids)
    except Exception:  # derived data: the linker embeds them itself
        return {}


def active_nearest(
    store: Store, near: Sequence[tuple[str, float]], nodes: dict[str, MemoryNode], want: int
) -> list[tuple[str, float]]:
    """The first ``want`` of ``near`` (nearest first) that are active, reading into ``nodes``
    the ones it has not read yet, ``want`` at a time: the vector index holds every version,
    so a long history's superseded versions would otherwise crowd the decisions in force out
    of the linker's neighbours. A store without superseded neighbours reads nothing more."""
    out: list[tuple[str, float]] = []
    for start in range(0, len(near), want):
        batch = near[start : start + want]
        unread = [i for i, _ in batch if i not in nodes]
        if unread:
            nodes.update(store.link_sketches(unread))
        out += [(i, sim) for i, sim in batch if i in nodes and nodes[i].status == Status.ACTIVE]
        if len(out) >= want:
            break
    return out[:want]


def earlier_versions(
    store: Store, nodes: Sequence[MemoryNode], depth: int, read: Mapping[str, MemoryNode] | None = None
) -> dict[str, MemoryNode]:
    """Every version up to ``depth`` back from each of ``nodes``, by id: a chain read a step at a
    time for all of them at once. ``read``: versions read before (the same rows), not read again."""
    out: dict[str, MemoryNode] = {}
    known = read or {}
    wanted = {n.supersedes for n in nodes if n.supersedes}
    for _ in range(depth):
        wanted -= out.keys()
        if not wanted:
            break
        found = {i: known[i] for i in wanted if i in known}
        if len(found) < len(wanted):
            found.update(store.link_sketches(wanted - found.keys()))
        out.update(found)
        wanted = {n.supersedes for n in found.values() if n.supersedes}
    return out
