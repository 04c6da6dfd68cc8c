"""Premises: is a decision still in force (``check``), and a decision built on a replaced one
confirmed or replaced (``review``). Over the ``Storage`` port only, so the embedded process and the
gateway run the same code; ``MemoryService.check`` and ``MemoryService.review`` call these.

    review(storage, rules, supersede, node_id, still_valid=True, superseded_by=None, author=None)
    check_node(storage, rules, node_id, namespace)        # in force? if not: the head, each change
    check_statement(recall, statement, scope, namespace)  # in_force / superseded / contradicted / unknown

``needs_review`` itself is set by the stores, in the write that replaces a decision
(``evomem.domain.dependencies``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Protocol

from evomem.app.notes import NoteRules
from evomem.app.ports import Storage
from evomem.domain import text as textrules
from evomem.domain.errors import InvalidArgument, NamespaceMismatch, NotFound, Purged
from evomem.domain.model import MemoryNode, ReviewFlag, Status
from evomem.domain.premise import judge
from evomem.domain.scope import infer_scope


class Host(Protocol):
    """What ``check`` and ``review`` use of the service (``MemoryService``, or the one a
    ``GuardedService`` scopes): its storage, its rules and defaults, its recall and supersede."""

    storage: Storage
    rules: NoteRules
    config: Any

    def recall(self, query: object, **kwargs: Any) -> Any: ...

    def supersede(self, node_id: object, supersedes: object, *, author: object = None) -> MemoryNode: ...


@dataclass(slots=True)
class ReviewOutcome:
    node: MemoryNode  # the reviewed node, as it is now
    changed: bool  # a flag was cleared (or the node was replaced)
    cleared: ReviewFlag | None  # the flag it had
    replaced_by: MemoryNode | None = None  # superseded_by: the note now in force in its place


def review_for(
    service: Host, node_id: object, *, still_valid: object = True, superseded_by: object = None, author: object = None
) -> ReviewOutcome:
    """``review`` as ``MemoryService.review`` runs it: the author (or the server's default) links."""
    by = textrules.clean_short(author, "author") or service.config.default_author

    def link(newer: str, older: str) -> MemoryNode:
        return service.supersede(newer, older, author=by)

    return review(
        service.storage, service.rules, link, node_id, still_valid=still_valid, superseded_by=superseded_by, author=by
    )


def check(
    service: Host, statement: object = None, *, node_id: object = None, scope: object = None, namespace: object = None
) -> CheckOutcome:
    """Exactly one of ``statement`` (``check_statement``) or ``node_id`` (``check_node``)."""
    started = time.perf_counter()
    if (statement in (None, "")) == (node_id in (None, "")):
        raise InvalidArgument("check needs exactly one of statement (what you assume) or node_id (a decision)")
    if node_id not in (None, ""):
        out = check_node(service.storage, service.rules, node_id, textrules.clean_label(namespace, "namespace"))
    else:
        out = check_statement(service.recall, statement, scope, service.rules.namespace(namespace))
    out.latency_ms = round((time.perf_counter() - started) * 1000, 3)
    return out


def review(
    storage: Storage,
    rules: NoteRules,
    supersede: Callable[[str, str], MemoryNode],
    node_id: object,
    *,
    still_valid: object = True,
    superseded_by: object = None,
    author: str | None = None,
) -> ReviewOutcome:
    """Clear ``node_id``'s ``needs_review``: confirmed still valid (``still_valid``), or replaced in
    the same call by ``superseded_by`` (an existing note, linked as with ``supersede``; the replaced
    version's flag goes with it). ``still_valid=false`` alone is refused: say what replaces it."""
    nid = rules.node_id(node_id)
    if not isinstance(still_valid, bool):
        raise InvalidArgument("still_valid must be true or false")
    newer = None if superseded_by in (None, "") else rules.node_id(superseded_by, "superseded_by")
    node = storage.get(nid)
    if node is None:
        raise NotFound(f"node_id: no node with id {nid}")
    if node.purged:
        raise Purged(f"node {nid} was purged")
    if node.status != Status.ACTIVE:
        head = f" (the version in force is in its chain: get_node({nid}))" if node.superseded_by else ""
        raise InvalidArgument(f"node {nid} is {node.status}: only a decision in force is reviewed{head}")
    if newer is None and not still_valid:
        raise InvalidArgument(
            "still_valid=false needs superseded_by: the id of the note that replaces it (remember it first); "
            "or forget the node if nothing replaces it"
        )
    if newer is not None:
        linked = supersede(newer, nid)
        after = storage.get(nid)
        assert after is not None
        return ReviewOutcome(after, True, node.needs_review, linked)
    after, changed = storage.review(nid, by=author)
    return ReviewOutcome(after, changed, node.needs_review)


# ---------------------------------------------------------------------------- check


@dataclass(frozen=True, slots=True)
class Change:
    """One step of a chain: ``newer`` replaced ``older``, when, why (its trigger) and who."""

    newer: MemoryNode
    older: MemoryNode

    @property
    def at(self) -> int:
        return self.newer.link.created_at if self.newer.link and self.newer.link.created_at else self.newer.created_at

    @property
    def who(self) -> str | None:
        return (self.newer.link.by if self.newer.link else None) or self.newer.author


@dataclass(slots=True)
class CheckOutcome:
    verdict: str  # in_force, superseded, contradicted, unknown; a node: in_force, superseded, retracted
    confidence: float
    statement: str | None = None
    node: MemoryNode | None = None  # check(node_id): the node asked about
    scope: str | None = None  # the scope the statement was answered for
    option: str | None = None  # the statement's option, as read
    in_force: list[MemoryNode] = field(default_factory=list)  # the decisions in force that decided
    named: list[MemoryNode] = field(default_factory=list)  # the versions that named the option
    changes: list[Change] = field(default_factory=list)  # what replaced what, oldest first
    reason: str = ""
    latency_ms: float = 0.0


RECALL_K = 8
RECALL_HISTORY = 10


def check_node(storage: Storage, rules: NoteRules, node_id: object, namespace: str | None) -> CheckOutcome:
    """Is the decision ``node_id`` in force? If not: the version in force and each change since."""
    nid = rules.node_id(node_id)
    node = storage.get(nid)
    if node is None:
        raise NotFound(f"node_id: no node with id {nid}")
    if namespace is not None and node.namespace != namespace:
        raise NamespaceMismatch(f"node_id: node {nid} is in namespace {node.namespace!r}, not {namespace!r}")
    if node.purged:
        raise Purged(f"node {nid} was purged: its text is gone, there is nothing to check")
    head = node if node.superseded_by is None else storage.heads([node.chain_root]).get(node.chain_root)
    if head is None:  # pragma: no cover - a chain always has a head
        raise NotFound(f"node_id: the chain of {nid} has no head")
    steps = storage.chain(head.id, head.version - node.version) if head.id != node.id else [node]
    changes = [Change(newer, older) for newer, older in pairwise(steps)][::-1]
    if head.status == Status.ACTIVE and head.id == node.id:
        return CheckOutcome("in_force", 1.0, node=node, scope=node.scope, in_force=[node])
    if head.status != Status.ACTIVE:
        why = "its chain's latest version was forgotten: no version of this decision is in force"
        return CheckOutcome("retracted", 1.0, node=node, scope=node.scope, changes=changes, reason=why)
    return CheckOutcome("superseded", 1.0, node=node, scope=head.scope, in_force=[head], changes=changes)


def check_statement(
    recall: Callable[..., Any], statement: object, scope: object, namespace: str | None
) -> CheckOutcome:
    """Is ``statement`` still true? The decisions it is about, found by recall's search (hybrid
    when vectors are on) in the statement's scope, read as the linker reads them
    (``domain.premise.judge``)."""
    if not isinstance(statement, str):
        raise InvalidArgument("statement must be a string, e.g. 'the ledger runs on Postgres'")
    text = textrules.clean_free_text(statement)
    if not text or not text.strip():
        raise InvalidArgument("statement is empty: say what you assume, e.g. 'the ledger runs on Postgres'")
    wanted = textrules.clean_label(scope, "scope")
    if wanted is None:
        inferred = infer_scope(text)
        wanted = inferred.scope if inferred is not None else None
    out = recall(
        text, k=RECALL_K, include_history=True, history_depth=RECALL_HISTORY, scope=wanted, namespace=namespace
    )
    chains: list[tuple[MemoryNode, list[MemoryNode]]] = []
    seen: set[str] = set()
    for hit, history in out.results:
        for node, past in ((hit.head, history), *((s.node, []) for s in hit.maybe_replaced_by)):
            if node.id not in seen:
                seen.add(node.id)
                chains.append((node, list(past)))
    j = judge(text, wanted, chains)
    changes = [Change(r.successor, r.named) for r in j.readings if r.successor is not None and r.named is not None]
    return CheckOutcome(
        str(j.verdict),
        j.confidence,
        statement=text,
        scope=wanted,
        option=j.option,
        in_force=[r.head for r in j.readings if r.head.status == Status.ACTIVE],
        named=[r.named for r in j.readings if r.named is not None],
        changes=changes,
        reason=j.reason,
    )
