"""Recall's storage side, once: search, fuse, resolve to the heads, read their history.

    answer = recall_nodes(store, vectors, query, pool)

Written against the ports, so the same function runs in the embedded process (over
``SQLiteStore`` and ``SemanticIndex``) and in the storage service, where the ``RecallNodes``
RPC runs it next to the file: the gateway's ``MemoryService.recall`` then makes one storage
call (``GrpcStorage.recall_nodes``) instead of one per step. ``MemoryService.recall`` validates
and sizes the query (``RecallQuery``) and turns the ``RecallAnswer`` into its outcome.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import replace

from evomem.app.ports import Store, Vectors
from evomem.domain.errors import InvalidArgument
from evomem.domain.model import MemoryNode, SearchHit, Status
from evomem.domain.recall import HISTORY_DEPTH_MAX as HISTORY_DEPTH_MAX  # re-exported: the tools' limits
from evomem.domain.recall import (
    SUCCESSOR_DEPTH,
    SUCCESSORS_FETCHED,
    RecallAnswer,
    RecallQuery,
    Resolved,
    Successor,
    attach_successors,
    fuse,
    resolve,
    select_hits,
    successor_ids,
    successors_to_follow,
)
from evomem.domain.recall import check_history_depth as check_history_depth

log = logging.getLogger("evomem.recall")

K_MAX = 100
SEARCH_LIMIT_MAX = 4 * 100 * K_MAX  # full-text hits per recall: a filtered recall of K_MAX asks 4 x fanout x k


def check_k(k: object) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= K_MAX:
        raise InvalidArgument(f"k must be an integer from 1 to {K_MAX}, got {k!r}")
    return k


def check_query(query: RecallQuery) -> RecallQuery:
    """Refuse a query no service would send (the RPC's input, before any work)."""
    check_k(query.k)
    check_history_depth(query.history_depth)
    if not 1 <= query.limit <= SEARCH_LIMIT_MAX:
        raise InvalidArgument(f"limit must be from 1 to {SEARCH_LIMIT_MAX}, got {query.limit}")
    if not 0 <= query.vector_limit <= query.limit:
        raise InvalidArgument(f"vector_limit must be from 0 to limit ({query.limit}), got {query.vector_limit}")
    return query


class LazyPool:
    """The threads the vector half of a search runs on, started by the first hybrid search."""

    def __init__(self, workers: int = 4) -> None:
        self.workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __call__(self) -> Executor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="evomem-nearest")
            return self._pool


Pool = Callable[[], Executor]


def nearest(
    vectors: Vectors | None, text: str, namespace: str, limit: int
) -> tuple[list[tuple[str, float]], str | None]:
    """Vector neighbours and no problem, or none and why: a vector failure (model missing,
    index busy) costs only the semantic half of a search, never the search."""
    if vectors is None or limit < 1:
        return [], None
    try:
        return vectors.nearest(text, namespace=namespace, limit=limit), None
    except Exception as exc:
        return [], str(exc) or type(exc).__name__


def search_both(
    store: Store,
    vectors: Vectors | None,
    pool: Pool,
    terms: Sequence[str],
    text: str,
    namespace: str,
    limit: int,
    vector_limit: int,
    *,
    active_only: bool = False,
    prune: float = 1.0,
    meanwhile: Callable[[list[SearchHit]], object] | None = None,
) -> tuple[list[SearchHit], list[tuple[str, float]], str | None]:
    """BM25 hits and the nearest notes by meaning, the two searched at the same time: the
    vector half (embedding the text, scanning the index) runs on a pool thread while BM25
    runs here. Both spend their time in C (SQLite, onnxruntime) without the GIL, so hybrid
    recall costs about the slower of the two rather than their sum. When BM25 is done first
    (a text not embedded before: a remember's note, a new query), this thread does the vector
    half's catch-up meanwhile (``Vectors.catch_up``), so the scan starts as the embedding ends.
    When the vector half is quick (``Vectors.quick``: the text's vector cached, a graph to search)
    it runs here, before BM25: both hold the GIL for much of their time, so on a pool thread they
    mostly take turns; at 100k notes the overlap saved ~5 % of a recall and cost a third more CPU
    (on a busy machine the pool's short bursts are scheduled sooner: profile.md, speed21).
    ``prune``: ``Store.search``'s. ``meanwhile``: called with the BM25 hits before the vector half is
    waited for (a remember reads its candidates' rows there while the note is embedded)."""
    if vectors is None or vector_limit < 1:
        hits = store.search(terms, namespace=namespace, limit=limit, active_only=active_only, prune=prune)
        if meanwhile is not None:
            meanwhile(hits)
        return hits, [], None
    if quick(vectors, text, namespace):
        near, problem = nearest(vectors, text, namespace, vector_limit)
        hits = store.search(terms, namespace=namespace, limit=limit, active_only=active_only, prune=prune)
        if meanwhile is not None:
            meanwhile(hits)
        return hits, near, problem
    future = pool().submit(nearest, vectors, text, namespace, vector_limit)
    try:
        hits = store.search(terms, namespace=namespace, limit=limit, active_only=active_only, prune=prune)
        if not future.done():
            catch_up(vectors, namespace)
        if meanwhile is not None:
            meanwhile(hits)
    finally:
        near, problem = future.result()  # never raises: nearest turns a failure into no neighbours
    return hits, near, problem


def quick(vectors: Vectors, text: str, namespace: str) -> bool:
    """``vectors.quick``, whose failure costs nothing: the pool, as before."""
    try:
        return vectors.quick(text, namespace=namespace)
    except Exception as exc:
        log.debug("vector quick check failed (searching on the pool): %s", exc)
        return False


def catch_up(vectors: Vectors, namespace: str) -> None:
    """``vectors.catch_up``, whose failure costs nothing: ``nearest`` does it again and reports."""
    try:
        vectors.catch_up(namespace)
    except Exception as exc:
        log.debug("vector catch-up ahead of the search failed (the search does it again): %s", exc)


def hybrid(store: Store, hits: list[SearchHit], near: Sequence[tuple[str, float]]) -> list[SearchHit]:
    """BM25 hits fused (RRF) with the nearest versions by meaning. Forgotten versions are
    left out, as full-text search leaves them out; every version counts otherwise, since
    resolution sends an old version's hit to its chain's head. A version BM25 found is neither
    forgotten nor purged (full-text search leaves both out: a purge forgets) and names its chain:
    only the others are read, and only as far as this needs (``Store.sketches``)."""
    roots = {h.node_id: h.chain_root for h in hits}
    nodes = store.sketches(i for i, _ in near if i not in roots)
    roots.update((i, n.chain_root) for i, n in nodes.items() if n.status != Status.FORGOTTEN and not n.purged)
    return fuse(hits, [SearchHit(i, roots[i], sim, via=("vector",)) for i, sim in near if i in roots])


def recall_nodes(
    store: Store,
    vectors: Vectors | None,
    query: RecallQuery,
    pool: Pool,
    *,
    vectors_off: str | None = None,
) -> RecallAnswer:
    """The whole storage side of recall: BM25 (and ``vectors`` when the query asks for them,
    fused), the heads, the hits of the first ``k`` chains in force, resolution, each head's
    possible successors (``maybe_replaced_by``), history.

    ``vectors_off``: why ``vectors`` is None, reported when the query requires vectors."""
    if not query.terms:
        return RecallAnswer()
    problem = vectors_off if vectors is None and query.vector_limit and query.vectors_required else None
    hits, near, failed = search_both(
        store, vectors, pool, query.terms, query.text, query.namespace, query.limit, query.vector_limit
    )
    if near:
        hits = hybrid(store, hits, near)
    heads, kept = heads_until_k(store, hits, k=query.k, scope=query.scope, tags=query.tags)
    nodes = kept_nodes(store, kept, heads)
    resolved = resolve(kept, nodes, heads, query.terms, scope=query.scope)
    wanted = successor_ids(resolved)
    if wanted:  # the newer notes that may replace a head (unconfirmed): shown beside it, never instead
        offered: dict[str, Sequence[Successor]] = {}
        seen = set(wanted)
        for _ in range(SUCCESSOR_DEPTH):  # and those that may replace them, along a chain of versions
            found = store.possible_successors(wanted, namespace=query.namespace, limit=SUCCESSORS_FETCHED, full=False)
            found = in_force(store, found)
            offered.update(found)
            wanted = successors_to_follow(found, seen)
            seen.update(wanted)
            if not wanted:
                break
        attach_successors(resolved, offered, scope=query.scope)
        read_shown(store, resolved)
    results: list[tuple[Resolved, list[MemoryNode]]] = []
    for entry in resolved:
        history = store.chain(entry.head.id, query.history_depth)[1:] if query.include_history else []
        results.append((entry, history))
    dropped = {h.chain_root for h in hits if h.chain_root in heads and heads[h.chain_root].status == "forgotten"}
    return RecallAnswer(results, hidden_forgotten=len(dropped), vector_problem=failed or problem)


def heads_until_k(
    store: Store, hits: Sequence[SearchHit], *, k: int, scope: str | None, tags: Sequence[str]
) -> tuple[dict[str, MemoryNode], list[SearchHit]]:
    """``select_hits`` with only the heads it needs: the chains in the order the hits first name
    them, a batch of heads at a time (``2 * k``, then twice as many), until ``k`` chains pass.
    The kept hits are those of every head read at once: a chain after the ``k``-th that passes
    is never kept, and every chain before it is read. Reading every hit's head (~70 for
    ``k=5``, whole nodes) cost a recall on the 100k bench store ~17-18 ms of CPU against
    ~12-15 ms this way (one A/B run, two rounds). Without a scope or tags the first batch is
    ``k`` heads: only a forgotten head fails then, and the ``k`` first chains nearly always pass.
    The heads returned are the
    ones read, so ``hidden_forgotten`` counts the forgotten chains among them: all of the hits'
    chains whenever fewer than ``k`` pass, the only case where recall reports it."""
    roots = list(dict.fromkeys(h.chain_root for h in hits))
    heads: dict[str, MemoryNode] = {}
    start, size = 0, max(k if scope is None and not tags else 2 * k, 1)
    while True:
        heads.update(store.heads(roots[start : start + size]))
        start += size
        kept = select_hits(hits, heads, k=k, scope=scope, tags=tags)
        if start >= len(roots) or len({h.chain_root for h in kept}) >= k:
            return heads, kept
        size *= 2


def kept_nodes(store: Store, kept: Sequence[SearchHit], heads: Mapping[str, MemoryNode]) -> dict[str, MemoryNode]:
    """The kept hits' nodes, whole (``resolve`` reads their fields): a hit on its chain's head is
    the head ``heads_until_k`` read, the same row; only the other versions are read again."""
    nodes: dict[str, MemoryNode] = {}
    for hit in kept:
        head = heads.get(hit.chain_root)
        if head is not None and head.id == hit.node_id:
            nodes[hit.node_id] = head
    rest = [h.node_id for h in kept if h.node_id not in nodes]
    if rest:
        nodes.update(store.get_many(rest))
    return nodes


def read_shown(store: Store, resolved: Sequence[Resolved]) -> None:
    """The hints shown, read in full: ``possible_successors`` gave sketches (what deciding them
    needs), ~8 per head and step where a recall shows a few (on a small-vocabulary 10k store,
    decoding ~175 full rows was two thirds of a recall). One gone meanwhile is left out."""
    ids = [s.node.id for r in resolved for s in r.maybe_replaced_by]
    if not ids:
        return
    nodes = store.get_many(ids)
    for r in resolved:
        r.maybe_replaced_by = [replace(s, node=nodes[s.node.id]) for s in r.maybe_replaced_by if s.node.id in nodes]


def in_force(store: Store, offered: dict[str, list[Successor]]) -> dict[str, list[Successor]]:
    """Each offered note as the version in force of its chain: one confirmed since (``supersede``)
    is shown as its chain's head, with the offer's reason."""
    roots = {s.node.chain_root for found in offered.values() for s in found if s.node.status != Status.ACTIVE}
    if not roots:
        return offered
    heads = store.heads(roots)
    return {
        k: [
            Successor(heads.get(s.node.chain_root, s.node), s.reason, s.result, s.position, s.confidence)
            if s.node.status != Status.ACTIVE
            else s
            for s in found
        ]
        for k, found in offered.items()
    }
