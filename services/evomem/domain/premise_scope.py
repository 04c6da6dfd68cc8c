"""Which decisions answer a premise for a scope (``evomem.domain.premise``): a scope's own and the
default scope's; a later decision of the default scope that says it covers the scope too ("all depots,
including the UK, move to ..."), which replaced the scope's own decisions there; the scope a statement
names (``names_scope``); and a document that decides nothing, rejected or only proposed (``is_undecided``)."""

from __future__ import annotations

import re

from evomem.domain.model import MemoryNode, Status
from evomem.domain.premise_words import meets as _meets
from evomem.domain.premise_words import words_of as _words
from evomem.domain.scope import is_default, normalise
from evomem.domain.subject import LONG_NOTE_CHARS


def in_scope(head: MemoryNode, scope: str | None) -> bool:
    """The decisions that answer for ``scope``: its own, and the default scope's (an unscoped
    statement is about the default scope)."""
    return is_default(head.scope) or (scope is not None and normalise(head.scope) == normalise(scope))


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
    wide = [h for h, _ in chains if is_default(h.scope) and h.status == Status.ACTIVE and covers(h.raw_text, scope)]
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


_STATUS = re.compile(r"^\s*status\b[^:=\n]{0,20}[:=-]\s*(\w+)", re.I | re.M)
_UNDECIDED = frozenset({"rejected", "proposed", "draft", "withdrawn", "declined", "introduced"})
_PROPOSAL = re.compile(r"\b(?:proposal|draft)\b", re.I)


def is_undecided(node: MemoryNode) -> bool:
    """A document whose header says it was rejected or only proposed ("Status: Rejected", "status:
    proposed"; a title "Proposal to relicense ..." or "(draft for consultation)" with no status):
    it decides nothing."""
    text = node.raw_text
    if len(text) <= LONG_NOTE_CHARS:
        return False
    status = _STATUS.search(text[:600])
    if status is not None:
        return status.group(1).lower() in _UNDECIDED
    return bool(_PROPOSAL.search(text.split("\n", 1)[0]))
