"""Which decisions answer a premise for a scope (``evomem.domain.premise``): a scope's own and the
default scope's; a later decision of the default scope that says it covers the scope too ("all depots,
including the UK, move to ..."), which replaced the scope's own decisions there; the scope a statement
names (``names_scope``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from evomem.domain.model import MemoryNode, Status
from evomem.domain.premise_document import whole_text
from evomem.domain.premise_words import meets as _meets
from evomem.domain.premise_words import words_of as _words
from evomem.domain.scope import is_default, normalise
from evomem.domain.subject import LONG_NOTE_CHARS


def in_scope(head: MemoryNode, scope: str | None) -> bool:
    """The decisions that answer for ``scope``: its own, and the default scope's (an unscoped
    statement is about the default scope)."""
    return is_default(head.scope) or (scope is not None and normalise(head.scope) == normalise(scope))


def answers_for(head: MemoryNode, past: Sequence[MemoryNode], scope: str | None, said: set[str]) -> bool:
    """Whether a chain answers for ``scope``: its version in force does (``in_scope``), or it replaced
    a version that does and its own scope was only read from its words ("deposit on acceptance": qa;
    "validated on the test block": tests), as was each version between them. Its author linked it as
    the replacement of a decision there: a scope read from a word it says in passing does not move
    that decision elsewhere. A scope given explicitly does ("In staging, the ledger runs on DuckDB").
    A chain whose every version's scope was read from its words answers an unscoped statement whose
    words (``said``) name that scope or say what it was read from ("the mobile ios minimum version"
    against "Raise minimum iOS version to 16", read as scope mobile from "iOS")."""
    for node in (head, *past):
        if in_scope(node, scope):
            return True
        if node.scope_source != "inferred":
            return False
    evidence = _words(head.scope_evidence or "")
    return scope is None and (names_scope(said, head) or (bool(evidence) and evidence <= said))


def names_scope(said: set[str], node: MemoryNode) -> bool:
    """Whether a statement's words (``said``) name a note's scope ("... dev region ...": scope dev;
    "... uses eu-central-1": scope eu, as a note "dev stays in eu-central-1" was kept)."""
    scope = _scope_words(str(node.scope or ""))
    return bool(scope) and scope <= said


def _scope_words(scope: str) -> set[str]:
    """A scope's words: its name split at hyphens and underscores ("eu-west", "kids_menu")."""
    return _words(scope.replace("-", " ").replace("_", " "))


def overridden(
    chains: list[tuple[MemoryNode, list[MemoryNode]]], scope: str | None
) -> tuple[list[tuple[MemoryNode, list[MemoryNode]]], MemoryNode | None]:
    """A scope's own decisions hold there over the default scope's, unless a later decision in force
    of the default scope says it covers this scope too ("all depots, including the UK, move to
    ..."): the chains left when the scope's own chains older than it are left out, and it."""
    if scope is None:
        return chains, None
    wide = [h for h, _ in chains if is_default(h.scope) and h.status == Status.ACTIVE and covers(whole_text(h), scope)]
    if not wide:
        return chains, None
    newest = max(wide, key=lambda h: h.created_at)
    kept = [(h, past) for h, past in chains if is_default(h.scope) or h.created_at > newest.created_at]
    return kept, newest


_INCLUDING = re.compile(r"\b(?:including|incl\.|included)\b", re.I)
_EXCLUDING = re.compile(
    r"\b(?:except|excluding|apart from|other than|outside|but not|untouched|unaffected|not|separate)\b", re.I
)


def covers(text: str, scope: str) -> bool:
    """Whether a decision's text says it covers ``scope`` too: a clause that names the scope (its
    words, or words that begin like them: "children's" for "childrens") beside "including" or
    "included" and no word that excludes ("except", "outside", "untouched"); a short note only."""
    wanted = {w for w in _scope_words(scope) if len(w) > 2}
    if not wanted or len(text) > LONG_NOTE_CHARS:  # a document includes every word somewhere
        return False
    for clause in re.split(r"[.;:!?\n]+|\s[-\u2013\u2014]\s|\(", text):
        if _INCLUDING.search(clause) and not _EXCLUDING.search(clause) and _meets(wanted, _words(clause)):
            return True
    return False
