"""Recall resolution: every hit answers with the version in force.

Pure functions over hits and nodes; the store only supplies them.

1. Full-text hits (any non-forgotten version) arrive best first. With vectors on (hybrid
   recall), the nearest notes by embedding arrive too, and ``fuse`` merges the two rankings
   by reciprocal rank fusion (RRF) before anything else: a version found by both searches
   ranks above one found by either alone, and neither score scale has to be calibrated
   against the other. Resolution below sees one ranking and does not care where it came from.
2. Each hit is resolved to the head of its chain.
3. Hits that reach the same head merge: the head keeps its best-scoring match, and every
   matching version is listed, so the agent can see *why* the current decision came up
   (often because an older version matched the words of the question better).
4. A chain whose head was forgotten answers nothing: forgetting the current decision
   retracts it, and an older version it replaced does not come back into force by itself
   (that would be acting on an obsolete decision). Remember it again to restore it.
5. Scope and tag filters apply to the head (the version in force). Asking for a scope
   (say ``staging``) returns that scope's decisions first, then the default scope's
   (unscoped or ``production``), which stay in force in every scope until a decision of
   that scope overrides them there. Each result says which (``scope_match``: exact or
   default). Decisions of other scopes are not returned.
6. A head that a later active note lists in its ``possible_supersedes`` (a linker abstained,
   nobody confirmed) carries that note as ``maybe_replaced_by`` (``attach_successors``): the
   newer note that may replace it, shown next to it, unconfirmed. Nothing is hidden or
   re-ranked on a guess; a successor that is itself a result is referenced by its rank. The
   likeliest successors come first, by the confidence their linker gave and where it listed
   the head (a newer note that replaces nothing may still list an old decision as a distant
   guess, ahead of the version that does replace it), newest first among equals. A successor
   is shown when its offer's probability reaches a cut-off (``HintCutoffs``), a lower one when it
   is itself a result: two notes that answer the same question are on one subject, and there an
   offer is right more often than the same offer read without the question.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evomem.domain.errors import InvalidArgument
from evomem.domain.model import MemoryNode, SearchHit, Status
from evomem.domain.scope import compatible, is_default, normalise
from evomem.domain.text import words

#: Earlier versions one answer carries per chain at most (recall, get_node, the timeline's listing).
HISTORY_DEPTH_MAX = 50


def check_history_depth(depth: object) -> int:
    # bool is an int subclass: refuse it here as k does (fix: True was accepted as depth 1).
    if not isinstance(depth, int) or isinstance(depth, bool) or not 0 <= depth <= HISTORY_DEPTH_MAX:
        raise InvalidArgument(f"history_depth must be an integer from 0 to {HISTORY_DEPTH_MAX}")
    return depth


MATCH_FIELDS = ("change", "trigger", "alternatives_tried", "consequences", "summary", "raw_text", "tags")


@dataclass(slots=True)
class Match:
    node_id: str
    version: int
    score: float
    is_head: bool
    fields: list[str]
    terms: list[str]
    via: list[str] = field(default_factory=lambda: ["bm25"])


@dataclass(slots=True)
class Successor:
    """A later note that lists a head in its ``possible_supersedes``: it may replace that
    decision, unconfirmed (a linker abstained and nobody called ``supersede``)."""

    node: MemoryNode
    reason: str | None = None  # the linker's few words on why it listed the head, when stored
    result: int | None = None  # the index of the answer's result whose head it is, when it is one
    # where the note listed the head among its possible_supersedes (0: its linker's first choice)
    # and its linker's confidence (None: not stored); reached through other notes, the weakest
    # step along the way (``likelihood``)
    position: int = 0
    confidence: float | None = None

    @property
    def likelihood(self) -> tuple[float, int]:
        """Higher is likelier: the confidence (none stored counts below any), then listed earlier."""
        return (-1.0 if self.confidence is None else self.confidence, -self.position)


@dataclass(frozen=True, slots=True)
class HintCutoffs:
    """The probabilities from which recall shows a possible successor: ``alone`` when it is not one
    of the answer's results, ``among_results`` when it is (0 and 0: every successor, one stored
    without a probability included; above 1: none)."""

    alone: float = 0.0
    among_results: float = 0.0

    @classmethod
    def both(cls, at: float) -> HintCutoffs:
        return cls(at, at)

    @property
    def shows_all(self) -> bool:
        return self.alone <= 0 and self.among_results <= 0

    def shown(self, successor: Successor) -> bool:
        """Whether ``successor`` is shown: its offer's probability (the weakest step's, along a
        chain of offers) reaches the cut-off for where it stands; one stored without a probability is not."""
        at = self.among_results if successor.result is not None else self.alone
        return successor.confidence is not None and successor.confidence >= at


@dataclass(slots=True)
class Resolved:
    head: MemoryNode
    score: float
    best: Match
    matches: list[Match] = field(default_factory=list)
    scope_match: str | None = None  # "exact" or "default" when recall asked for a scope
    maybe_replaced_by: list[Successor] = field(default_factory=list)  # likeliest first, unconfirmed


def scope_match(head_scope: str | None, wanted: str | None) -> str | None:
    """How a head answers a recall for ``wanted``: exact, default (fallback), or None (no)."""
    if wanted is None:
        return "exact"
    if normalise(head_scope) == normalise(wanted) or (is_default(head_scope) and is_default(wanted)):
        return "exact"
    if is_default(head_scope):
        return "default"
    return None


def matched_fields(node: MemoryNode, terms: Sequence[str]) -> tuple[list[str], list[str]]:
    """Which fields of ``node`` contain which query terms (prefix match approximates stemming).

    A field is split into words only when one of the terms' first five letters (a shorter term:
    the term) is in its lowercased text, since every word ``words`` gives is part of that text; the
    words' prefixes only when a term is not one of the words."""
    fields: list[str] = []
    found: list[str] = []
    for name in MATCH_FIELDS:
        value = " ".join(node.tags) if name == "tags" else getattr(node, name)
        if not value:
            continue
        low = value.lower()
        if not any(t[:5] in low for t in terms):
            continue
        vocab = set(words(value))
        stems: set[str] | None = None
        hit: list[str] = []
        for t in terms:
            if t in vocab:
                hit.append(t)
            elif len(t) >= 5:
                if stems is None:
                    stems = {w[:5] for w in vocab if len(w) >= 5}
                if t[:5] in stems:
                    hit.append(t)
        if hit:
            fields.append(name)
            found.extend(t for t in hit if t not in found)
    return fields, found


RRF_K = 60  # the constant of Cormack et al. (2009): damps the weight of the very first ranks


def fuse(*rankings: Sequence[SearchHit], k: int = RRF_K) -> list[SearchHit]:
    """Reciprocal rank fusion: each hit scores the sum of ``1 / (k + rank)`` over the rankings
    that hold it (rank from 1). Best first; ties keep the order of the first ranking."""
    score: dict[str, float] = {}
    first: dict[str, SearchHit] = {}
    via: dict[str, list[str]] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            score[hit.node_id] = score.get(hit.node_id, 0.0) + 1.0 / (k + rank)
            first.setdefault(hit.node_id, hit)
            seen = via.setdefault(hit.node_id, [])
            seen.extend(v for v in hit.via if v not in seen)
    order = sorted(score, key=lambda i: -score[i])  # sorted() is stable: first-seen order breaks ties
    return [
        SearchHit(node_id=i, chain_root=first[i].chain_root, score=round(score[i], 6), via=tuple(via[i])) for i in order
    ]


def select_hits(
    hits: Sequence[SearchHit],
    heads: Mapping[str, MemoryNode],
    *,
    k: int,
    scope: str | None = None,
    tags: Sequence[str] = (),
) -> list[SearchHit]:
    """The hits that belong to the first ``k`` chains whose head is in force and passes the filters."""
    kept: set[str] = set()
    out: list[SearchHit] = []
    for hit in hits:
        head = heads.get(hit.chain_root)
        if head is None or head.status == Status.FORGOTTEN:
            continue
        if scope_match(head.scope, scope) is None:
            continue
        if tags and not set(tags) <= set(head.tags):
            continue
        if hit.chain_root not in kept:
            if len(kept) == k:
                continue
            kept.add(hit.chain_root)
        out.append(hit)
    return out


def resolve(
    hits: Sequence[SearchHit],
    nodes: Mapping[str, MemoryNode],
    heads: Mapping[str, MemoryNode],
    terms: Sequence[str],
    *,
    scope: str | None = None,
) -> list[Resolved]:
    """Group hits chosen by ``select_hits`` under their heads and say why each matched."""
    grouped: dict[str, list[tuple[SearchHit, MemoryNode]]] = {}
    for hit in hits:
        head = heads.get(hit.chain_root)
        node = nodes.get(hit.node_id)
        if head is None or node is None:
            continue
        grouped.setdefault(head.id, []).append((hit, node))
    out: list[Resolved] = []
    for head_id, matches in grouped.items():
        head = heads[matches[0][1].chain_root]
        views = []
        for hit, node in matches:
            fields, found = matched_fields(node, terms)
            views.append(
                Match(
                    node_id=node.id,
                    version=node.version,
                    score=round(hit.score, 4),
                    is_head=node.id == head_id,
                    fields=fields,
                    terms=found,
                    via=list(hit.via),
                )
            )
        out.append(
            Resolved(
                head=head,
                score=matches[0][0].score,
                best=views[0],
                matches=views,
                scope_match=scope_match(head.scope, scope) if scope is not None else None,
            )
        )
    # A scope's own decisions come before the default scope's (stable: BM25 order within each).
    out.sort(key=lambda r: r.scope_match == "default")
    return out


MAYBE_REPLACED_MAX = 2  # successors shown per result
SUCCESSORS_FETCHED = 8  # asked of the store per head: room for the scope filter below
SUCCESSOR_DEPTH = 3  # offers followed from a head: a successor's own possible successors, and theirs


def successor_ids(resolved: Sequence[Resolved]) -> list[str]:
    """The heads whose possible successors recall looks up: the active ones."""
    return [r.head.id for r in resolved if r.head.status == Status.ACTIVE]


def attach_successors(
    resolved: Sequence[Resolved],
    offered: Mapping[str, Sequence[Successor]],
    *,
    scope: str | None = None,
    limit: int = MAYBE_REPLACED_MAX,
) -> None:
    """Set each active head's ``maybe_replaced_by``: up to ``limit`` of the notes ``offered``
    for it (the store's reverse lookup of ``possible_supersedes``), and for those in turn (a
    version that may replace a version that may replace the head, ``SUCCESSOR_DEPTH`` deep:
    unconfirmed offers along a chain of several versions), that are active, later than the
    head, of its namespace and another chain, in a scope that could replace the head's
    (``scope.compatible``) and that this recall would answer (``scope_match``). One reached
    through another says so in its ``reason``. One that heads another result is referenced by
    its index there.

    Likeliest first: by ``Successor.likelihood`` (the linker's confidence in the offer, then
    where the note listed what it may replace), taken along the way at its weakest step (a
    sure offer reached through an unsure one counts as unsure), then newest first. The last
    note of a chain of unconfirmed versions is usually its linker's best guess for its own
    predecessor; a note that replaces nothing, newer still, may list the head as a distant
    guess, and newest-first alone would show it instead."""
    rank = {r.head.id: i for i, r in enumerate(resolved)}
    for entry in resolved:
        head = entry.head
        entry.maybe_replaced_by = []
        if head.status != Status.ACTIVE:
            continue
        reached: dict[str, Successor] = {}
        # note -> the weakest step (likelihood) on its likeliest way here
        frontier: dict[str, tuple[float, int]] = {head.id: (math.inf, 0)}
        for _ in range(SUCCESSOR_DEPTH):
            nxt: dict[str, tuple[float, int]] = {}
            for via, at in frontier.items():
                for s in offered.get(via, ()):
                    y = s.node
                    if y.id == head.id or y.status != Status.ACTIVE or y.purged:
                        continue
                    if y.namespace != head.namespace or y.chain_root == head.chain_root:
                        continue
                    if y.created_at < head.created_at or not compatible(y.scope, head.scope):
                        continue
                    if scope_match(y.scope, scope) is None:
                        continue
                    weakest = min(at, s.likelihood)
                    known = reached.get(y.id)
                    if known is not None and known.likelihood >= weakest:
                        continue
                    reason = s.reason or None if via == head.id else f"may replace {via}, listed here"
                    confidence = None if weakest[0] < 0 else weakest[0]
                    reached[y.id] = Successor(y, reason, rank.get(y.id), -weakest[1], confidence)
                    nxt[y.id] = weakest
            frontier = nxt
        found = sorted(reached.values(), key=lambda s: (s.likelihood, s.node.created_at, s.node.id), reverse=True)
        entry.maybe_replaced_by = found[:limit]


def successors_to_follow(offered: Mapping[str, Sequence[Successor]], seen: set[str]) -> list[str]:
    """The offered notes whose own possible successors are not fetched yet (``attach_successors``
    follows offers ``SUCCESSOR_DEPTH`` deep)."""
    out = [s.node.id for found in offered.values() for s in found if s.node.id not in seen]
    return list(dict.fromkeys(out))


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """What recall asks of storage, validated and sized by the service: one call's worth."""

    terms: tuple[str, ...]  # the words searched (query_terms)
    text: str  # the query as searched: what the vector half embeds
    namespace: str
    k: int  # chains to answer
    limit: int  # full-text hits to fetch
    vector_limit: int = 0  # nearest vectors to fetch; 0: BM25 only
    vectors_required: bool = False  # a store without vectors is a problem to report, not quiet BM25
    scope: str | None = None
    tags: tuple[str, ...] = ()
    include_history: bool = False
    history_depth: int = 5


@dataclass(slots=True)
class RecallAnswer:
    """The resolved heads, their matches and their history (newest first), best first."""

    results: list[tuple[Resolved, list[MemoryNode]]] = field(default_factory=list)
    # matching chains left out because their head was forgotten, among the heads recall read
    # (``recalling.heads_until_k``): every matching chain whenever fewer than k results pass
    hidden_forgotten: int = 0
    vector_problem: str | None = None  # why the vector half was skipped (it failed, or there are none)
