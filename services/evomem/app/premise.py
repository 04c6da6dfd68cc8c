"""Premises: is a decision still in force (``check``), and a decision built on a replaced one
confirmed or replaced (``review``). Over the ``Storage`` port only, so the embedded process and the
gateway run the same code; ``MemoryService.check`` and ``MemoryService.review`` call these.

    review(storage, rules, supersede, node_id, still_valid=True, superseded_by=None, author=None)

``needs_review`` itself is set by the stores, in the write that replaces a decision
(``evomem.domain.dependencies``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evomem.app.notes import NoteRules
from evomem.app.ports import Storage
from evomem.domain.errors import InvalidArgument, NotFound, Purged
from evomem.domain.model import MemoryNode, ReviewFlag, Status


@dataclass(slots=True)
class ReviewOutcome:
    node: MemoryNode  # the reviewed node, as it is now
    changed: bool  # a flag was cleared (or the node was replaced)
    cleared: ReviewFlag | None  # the flag it had
    replaced_by: MemoryNode | None = None  # superseded_by: the note now in force in its place


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
