"""Recall resolution: every hit answers with the version in force.

Pure functions over hits and nodes; the store only supplies them.

1. Full-text hits (any non-forgotten version) arrive best first.
2. Each hit is resolved to the head of its chain.
3. Hits that reach the same head merge: the head keeps its best-scoring match, and every
   matching version is listed, so the agent can see *why* the current decision came up
   (often because an older version matched the words of the question better).
4. A chain whose head was forgotten answers nothing: forgetting the current decision
   retracts it, and an older version it replaced does not come back into force by itself
   (that would be acting on an obsolete decision). Remember it again to restore it.
5. Scope and tag filters apply to the head (the version in force).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evomem.domain.model import MemoryNode, SearchHit, Status
from evomem.domain.text import words

MATCH_FIELDS = ("change", "trigger", "alternatives_tried", "consequences", "summary", "raw_text", "tags")


@dataclass(slots=True)
class Match:
    node_id: str
    version: int
    score: float
    is_head: bool
    fields: list[str]
    terms: list[str]


@dataclass(slots=True)
class Resolved:
    head: MemoryNode
    score: float
    best: Match
    matches: list[Match] = field(default_factory=list)


def matched_fields(node: MemoryNode, terms: Sequence[str]) -> tuple[list[str], list[str]]:
    """Which fields of ``node`` contain which query terms (prefix match approximates stemming)."""
    fields: list[str] = []
    found: list[str] = []
    for name in MATCH_FIELDS:
        value = " ".join(node.tags) if name == "tags" else getattr(node, name)
        if not value:
            continue
        vocab = set(words(value))
        hit = [t for t in terms if t in vocab or any(_stem_eq(t, w) for w in vocab)]
        if hit:
            fields.append(name)
            found.extend(t for t in hit if t not in found)
    return fields, found


def _stem_eq(term: str, word: str) -> bool:
    n = min(len(term), len(word))
    return n >= 4 and term[: max(4, n - 2)] == word[: max(4, n - 2)]


def resolve(
    hits: Sequence[SearchHit],
    nodes: Mapping[str, MemoryNode],
    heads: Mapping[str, MemoryNode],
    terms: Sequence[str],
    *,
    k: int,
    scope: str | None = None,
    tags: Sequence[str] = (),
) -> list[Resolved]:
    by_head: dict[str, Resolved] = {}
    order: list[str] = []
    for hit in hits:
        head = heads.get(hit.chain_root)
        node = nodes.get(hit.node_id)
        if head is None or node is None or head.status == Status.FORGOTTEN:
            continue
        if scope is not None and head.scope != scope:
            continue
        if tags and not set(tags) <= set(head.tags):
            continue
        fields, found = matched_fields(node, terms)
        match = Match(
            node_id=node.id,
            version=node.version,
            score=round(hit.score, 4),
            is_head=node.id == head.id,
            fields=fields,
            terms=found,
        )
        entry = by_head.get(head.id)
        if entry is None:
            by_head[head.id] = Resolved(head=head, score=hit.score, best=match, matches=[match])
            order.append(head.id)
        else:
            entry.matches.append(match)
    return [by_head[h] for h in order[:k]]
