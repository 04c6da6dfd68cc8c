"""The rules for storing a note, in one place: what ``remember`` applies to an agent's arguments and
what the storage service applies, once, to a note that arrives from another process.

    rules = NoteRules(config)
    rules.node_id(value, "supersedes")            # a ULID, or InvalidId
    rules.relations(value)                        # {"caused_by": ("01J...",)}: shape and ids
    rules.check_relations(rels, namespace, found) # each id exists, in the namespace, not purged
    rules.check_write(write, store.get_many)      # a NoteWrite from the wire: the same text rules,
                                                  # labels, tags, ids, relations and an extraction from the text
    rules.check_result(extraction, state, error)  # a worker's extraction result, then
    rules.check_fields(node, extraction)          # its fields are spans of the node's text
    offered_note(note, decision, listed)          # the note listing a linker's possible_supersedes

Every refusal is a domain error with the code ``remember`` gives for the same input, and what
``remember`` cleans (control characters) is cleaned the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from evomem.domain import text as textrules
from evomem.domain.errors import InvalidArgument, InvalidId, NamespaceMismatch, NotFound, Purged
from evomem.domain.model import (
    Extraction,
    ExtractionState,
    LinkDecision,
    LinkProvenance,
    MemoryNode,
    NewNote,
    is_valid_id,
)
from evomem.domain.remember import NoteWrite

MAX_RELATION_TYPES = 16
MAX_RELATION_IDS = 64
MAX_POSSIBLE_SUPERSEDES = 64
MAX_EVIDENCE = 16
MAX_REASON_CHARS = 200  # a linker's reason for listing a candidate (a few words, scores)
MAX_DEDUPE_WINDOW_MS = 86_400_000  # a day
SCOPE_SOURCES = ("explicit", "inferred")
_RELATION = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_LINK_METHOD = re.compile(r"^[a-z][a-z0-9_.:-]{0,31}$")


@dataclass(frozen=True, slots=True)
class NoteLimits:
    default_namespace: str = "default"
    max_note_bytes: int = textrules.DEFAULT_MAX_NOTE_BYTES


class NoteRules:
    """The checks a note passes before it is written, wherever it comes from."""

    def __init__(self, limits: NoteLimits | None = None) -> None:
        self.limits = limits or NoteLimits()

    # ------------------------------------------------------------------ single values

    @staticmethod
    def node_id(node_id: object, what: str = "node_id") -> str:
        if not isinstance(node_id, str) or not node_id.strip():
            raise InvalidId(f"{what} must be a node id such as 01J9ZK3V8W5Q6R7S8T9V0W1X2Y")
        node_id = node_id.strip().upper()
        if not is_valid_id(node_id):
            raise InvalidId(
                f"{what} {node_id[:40]!r} is not a valid node id (26 characters, Crockford base32, "
                "as returned by remember)"
            )
        return node_id

    @staticmethod
    def if_head(value: object, target: str | None) -> bool:
        """``if_head``: a boolean, and true only with a ``supersedes`` to hold to."""
        if not isinstance(value, bool):
            raise InvalidArgument("if_head must be true or false")
        if value and target is None:
            raise InvalidArgument("if_head needs supersedes: the id of the head you mean to replace")
        return value

    def namespace(self, namespace: object) -> str:
        return textrules.clean_label(namespace, "namespace") or self.limits.default_namespace

    # ------------------------------------------------------------------ relations

    def relations(self, relations: object) -> dict[str, tuple[str, ...]]:
        """Typed edges, checked for shape: lowercase snake_case types, lists of node ids."""
        if relations is None:
            return {}
        if not isinstance(relations, Mapping):
            raise InvalidArgument('relations must be an object such as {"caused_by": ["<node id>"]}')
        if len(relations) > MAX_RELATION_TYPES:
            raise InvalidArgument(f"at most {MAX_RELATION_TYPES} relation types per note")
        out: dict[str, tuple[str, ...]] = {}
        for kind, ids in relations.items():
            if not isinstance(kind, str) or not _RELATION.match(kind):
                raise InvalidArgument(
                    f"relation type {kind!r} is not valid: use lowercase snake_case such as caused_by"
                )
            if isinstance(ids, str):
                ids = [ids]
            if not isinstance(ids, Sequence) or len(ids) > MAX_RELATION_IDS:
                raise InvalidArgument(f"relations.{kind} must be a list of at most {MAX_RELATION_IDS} ids")
            out[kind] = tuple(dict.fromkeys(self.node_id(i, f"relations.{kind}") for i in ids))
        return out

    @staticmethod
    def relation_ids(relations: Mapping[str, Sequence[str]]) -> list[str]:
        return [i for ids in relations.values() for i in ids]

    @staticmethod
    def check_relations(
        relations: Mapping[str, Sequence[str]], namespace: str, found: Mapping[str, MemoryNode]
    ) -> None:
        """Each related id names a live node of ``namespace`` (``found``: the nodes read for them)."""
        for kind, ids in relations.items():
            for i in ids:
                node = found.get(i)
                if node is None:
                    raise NotFound(f"relations.{kind}: no node with id {i}")
                if node.namespace != namespace:
                    raise NamespaceMismatch(f"relations.{kind}: node {i} is in namespace {node.namespace!r}")
                if node.purged:
                    raise Purged(f"relations.{kind}: node {i} was purged")

    # ------------------------------------------------------------------ a note from another process

    def check_note(self, note: NewNote) -> NewNote:
        """A ``NewNote`` from the wire, put through the rules ``remember`` applies to its arguments:
        text, labels, tags, short fields, relation shapes and ids, the linker's offers, and an
        extraction only if every field is taken from the text. (That the related nodes exist is the
        store's to check, in the write's transaction.)"""
        text, _ = textrules.clean_note(note.raw_text, self.limits.max_note_bytes)
        ns = self.namespace(note.namespace)  # empty: the default namespace, as remember
        scope = textrules.clean_label(note.scope, "scope")
        source = note.scope_source if scope is not None else None
        if source is not None and source not in SCOPE_SOURCES:
            raise InvalidArgument(f"scope_source must be explicit or inferred, got {source[:40]!r}")
        evidence = None
        if scope is not None and note.scope_evidence:
            evidence = textrules.check_span(text, note.scope_evidence, "scope_evidence")
        ids = [self.node_id(i, "possible_supersedes") for i in note.possible_supersedes]
        possible = tuple(dict.fromkeys(ids))
        if len(possible) > MAX_POSSIBLE_SUPERSEDES:
            raise InvalidArgument(f"at most {MAX_POSSIBLE_SUPERSEDES} possible_supersedes")
        if len(note.possible_supersedes_why) > len(note.possible_supersedes):
            raise InvalidArgument("possible_supersedes_why: at most one reason per possible_supersedes entry")
        why: dict[str, str] = {}
        for i, reason in zip(ids, note.possible_supersedes_why, strict=False):
            clean_reason = textrules.clean_short(reason, "possible_supersedes_why", limit=MAX_REASON_CHARS) or ""
            why.setdefault(i, clean_reason)
        reasons = tuple(why.get(i, "") for i in possible) if why else ()
        if len(note.possible_supersedes_confidence) > len(note.possible_supersedes):
            raise InvalidArgument("possible_supersedes_confidence: at most one per possible_supersedes entry")
        conf: dict[str, float] = {}
        for i, c in zip(ids, note.possible_supersedes_confidence, strict=False):
            if not (isinstance(c, (int, float)) and 0.0 <= c <= 1.0):
                raise InvalidArgument(f"possible_supersedes_confidence must be from 0 to 1, got {c!r}")
            conf.setdefault(i, float(c))
        confidences = tuple(conf.get(i, 0.0) for i in possible) if conf else ()
        extraction = None
        if note.extraction is not None:
            extraction = textrules.check_extraction(text, note.extraction)
        return NewNote(
            raw_text=text,
            namespace=ns,
            scope=scope,
            tags=textrules.clean_tags(list(note.tags)),
            session=textrules.clean_short(note.session, "session"),
            author=textrules.clean_short(note.author, "author"),
            relations=self.relations(dict(note.relations) if note.relations else None),
            extraction=extraction,
            scope_source=source,
            scope_evidence=evidence,
            possible_supersedes=possible,
            possible_supersedes_why=reasons,
            possible_supersedes_confidence=confidences,
        )

    @staticmethod
    def check_link(link: LinkProvenance | None) -> LinkProvenance | None:
        """A link's provenance from another process: a method label, a confidence in [0, 1],
        short free text. The store sets ``requested_id`` and ``created_at`` itself."""
        if link is None:
            return None
        if not isinstance(link.method, str) or not _LINK_METHOD.match(link.method):
            raise InvalidArgument("link.method must be a short lowercase label such as agent or heuristic")
        if not isinstance(link.confidence, int | float) or not math.isfinite(link.confidence):
            raise InvalidArgument("link.confidence must be a number from 0 to 1")
        if not 0.0 <= float(link.confidence) <= 1.0:
            raise InvalidArgument(f"link.confidence must be from 0 to 1, got {link.confidence}")
        if len(link.evidence) > MAX_EVIDENCE:
            raise InvalidArgument(f"at most {MAX_EVIDENCE} link.evidence entries")
        evidence = tuple(textrules.clean_short(e, "link.evidence", limit=500) or "" for e in link.evidence)
        return LinkProvenance(
            method=link.method,
            confidence=float(link.confidence),
            by=textrules.clean_short(link.by, "link.by"),
            evidence=tuple(e for e in evidence if e),
        )

    def check_write(self, write: NoteWrite, read: Callable[[list[str]], Mapping[str, MemoryNode]]) -> NoteWrite:
        """Storage's door (RememberNote): the note checked by ``check_note``, its related nodes read
        with ``read`` (they exist, in the note's namespace), the target's id, the link (only with a
        target), the key and the dedupe window."""
        dedupe = write.dedupe_window_ms
        if isinstance(dedupe, bool) or not isinstance(dedupe, int):
            raise InvalidArgument("dedupe_window_ms must be an integer")
        if not 0 <= dedupe <= MAX_DEDUPE_WINDOW_MS:
            raise InvalidArgument(f"dedupe_window_ms must be from 0 to {MAX_DEDUPE_WINDOW_MS}")
        if write.link is not None and write.supersedes in (None, ""):
            raise InvalidArgument("link: a link's provenance describes a supersedes link; send supersedes with it")
        note = self.check_note(write.note)
        if note.relations:
            self.check_relations(note.relations, note.namespace, read(self.relation_ids(note.relations)))
        target = None if write.supersedes in (None, "") else self.node_id(write.supersedes, "supersedes")
        self.if_head(write.if_head, target)
        return replace(
            write,
            note=note,
            supersedes=target,
            link=self.check_link(write.link),
            idempotency_key=textrules.clean_key(write.idempotency_key),
        )

    @staticmethod
    def check_result(
        extraction: Extraction | None, state: ExtractionState, error: object
    ) -> tuple[Extraction | None, str | None]:
        """A job's result (storage's SetExtraction): ``done`` with an extraction, or ``failed`` with
        an error (cut to a short text). The fields are checked against the node's text by
        ``check_fields``, once the node is read."""
        if state is ExtractionState.PENDING:
            raise InvalidArgument("state must be done or failed: a job's result")
        if state is ExtractionState.DONE and extraction is None:
            raise InvalidArgument("state done needs the extraction")
        if state is ExtractionState.FAILED and extraction is not None:
            raise InvalidArgument("state failed carries an error, not an extraction")
        message = None if error is None else (textrules.clean_short(error, "error", limit=2000) or "")
        return extraction, message

    @staticmethod
    def check_fields(node: MemoryNode, extraction: Extraction | None) -> Extraction | None:
        """Every field of ``extraction`` is a span of ``node``'s text (a forged answer is refused)."""
        return None if extraction is None else textrules.check_extraction(node.raw_text, extraction)


# ---------------------------------------------------------------------------- offers


def _reasons(decision: LinkDecision, listed: Sequence[str]) -> tuple[str, ...]:
    """The linker's short reason for each of ``listed`` ("" where it gave none), cut to a few words."""
    why = dict(zip((c for c, _ in decision.candidates), decision.why, strict=False))
    return tuple((why.get(c) or "")[:MAX_REASON_CHARS] for c in listed)


def _confidences(decision: LinkDecision, listed: Sequence[str]) -> tuple[float, ...]:
    """The linker's confidence in each of ``listed`` (its link's for a target it did not list)."""
    conf = {c: p for c, p in decision.candidates}
    if decision.proposal is not None:
        conf.setdefault(decision.proposal.target_id, decision.proposal.confidence)
    return tuple(min(max(float(conf.get(c, 0.0)), 0.0), 1.0) for c in listed)


def offered_note(note: NewNote, decision: LinkDecision, listed: Sequence[str]) -> NewNote:
    """``note`` listing ``listed`` as its possible_supersedes, with the linker's reasons and confidences."""
    return replace(
        note,
        possible_supersedes=tuple(listed),
        possible_supersedes_why=_reasons(decision, listed),
        possible_supersedes_confidence=_confidences(decision, listed),
    )
