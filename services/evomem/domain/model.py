"""Nodes and chains: the data the core reasons about.

A *chain* is the linear history of one decision. Every node belongs to exactly one
chain (``chain_root`` is the id of its first version). The *head* is the one node of
the chain that nothing supersedes; it is the version in force unless it was forgotten.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum


class Status(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"


class ExtractionState(StrEnum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"  # retried until the queue gives up; then dead-lettered


class LinkMethod(StrEnum):
    AGENT = "agent"  # remember(supersedes=...) or the supersede tool
    HEURISTIC = "heuristic"  # change cue + shared vocabulary


@dataclass(frozen=True, slots=True)
class LinkProvenance:
    """Who or what made a supersedes link, and how sure it was."""

    method: str
    confidence: float = 1.0
    by: str | None = None  # author (agent) or linker name/version
    evidence: tuple[str, ...] = ()
    requested_id: str | None = None  # the id the caller named, when it was re-targeted to the head
    created_at: int = 0  # ms since epoch


@dataclass(frozen=True, slots=True)
class Extraction:
    """What the cronista pulls out of a note. Every field is a span of the source."""

    trigger: str = ""
    change: str = ""
    alternatives_tried: str = ""
    consequences: str = ""
    summary: str = ""
    extractor: str = ""


@dataclass(frozen=True, slots=True)
class ReviewFlag:
    """Why an active decision needs review (``needs_review``): decisions it depends on, directly or
    through others (``depends_on``, ``implements``), were replaced. Entry ``i``: the version that was
    in force (``replaced``), the version in force after the change (``replaced_by``), and the
    dependency this node names that leads to it (``via``: the same chain, or one built on it)."""

    replaced: tuple[str, ...] = ()
    replaced_by: tuple[str, ...] = ()
    via: tuple[str, ...] = ()
    flagged_at: int = 0  # ms since epoch: the first change that flagged it


@dataclass(slots=True)
class MemoryNode:
    id: str
    raw_text: str
    namespace: str = "default"
    scope: str | None = None
    trigger: str = ""
    change: str = ""
    alternatives_tried: str = ""
    consequences: str = ""
    summary: str = ""
    tags: tuple[str, ...] = ()
    session: str | None = None
    author: str | None = None
    created_at: int = 0  # ms since epoch
    relations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    status: Status = Status.ACTIVE
    supersedes: str | None = None
    superseded_by: str | None = None
    chain_root: str = ""
    version: int = 1
    link: LinkProvenance | None = None  # provenance of the link to ``supersedes``
    extraction_state: ExtractionState = ExtractionState.PENDING
    extractor: str = ""
    extraction_error: str | None = None
    extraction_attempts: int = 0
    forgotten_at: int | None = None
    purged_at: int | None = None
    scope_source: str | None = None
    scope_evidence: str | None = None
    possible_supersedes: tuple[str, ...] = ()
    # When a purge's bytes were gone from every file (the database and its WAL): None while a
    # reader's snapshot keeps the checkpoint from finishing (a background task retries).
    file_erased_at: int | None = None
    # Set when a decision it depends on was replaced (``domain.dependencies``); cleared by review.
    needs_review: ReviewFlag | None = None

    @property
    def purged(self) -> bool:
        return self.purged_at is not None

    @property
    def is_head(self) -> bool:
        return self.superseded_by is None


@dataclass(frozen=True, slots=True)
class NewNote:
    """What ``remember`` asks the store to write (validated and normalised)."""

    raw_text: str
    namespace: str = "default"
    scope: str | None = None
    tags: tuple[str, ...] = ()
    session: str | None = None
    author: str | None = None
    relations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    extraction: Extraction | None = None  # None: extraction is pending (queued)
    scope_source: str | None = None  # "explicit", "inferred", or None when unscoped
    scope_evidence: str | None = None  # the text span a scope was inferred from
    possible_supersedes: tuple[str, ...] = ()  # candidates a linker abstained on
    possible_supersedes_why: tuple[str, ...] = ()  # the linker's few words per candidate, in that order
    # the linker's confidence (0-1) per candidate, in that order; recall shows likelier successors first
    possible_supersedes_confidence: tuple[float, ...] = ()


class InsertOutcome(StrEnum):
    """What ``Store.insert_once`` did with a note."""

    INSERTED = "inserted"  # a new node
    REPLAYED = "replayed"  # the idempotency key was used before, with the same text: the first node
    DUPLICATE = "duplicate"  # no key, and the same text is an active note of the window: that node


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One match (full-text, vector, or both fused), before chain resolution."""

    node_id: str
    chain_root: str
    score: float  # higher is better (negated bm25; a fused reciprocal-rank score after fuse())
    via: tuple[str, ...] = ("bm25",)  # which searches found it: "bm25", "vector"


@dataclass(frozen=True, slots=True)
class Stats:
    by_status: dict[str, int]
    purged: int
    chains: int
    extraction: dict[str, int]
    namespaces: dict[str, int]
    db_bytes: int
    schema_version: int
    purges_file_pending: int = 0  # purged nodes whose bytes may still be in the WAL or the file
    last_file_erased_at: int | None = None  # when the latest purge was erased from every file


# ---------------------------------------------------------------- ids and time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_PATTERN = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_id(ms: int | None = None) -> str:
    """A ULID: 48-bit millisecond timestamp + 80 random bits, Crockford base32.

    Ids sort by creation time, so 'newest first' needs no extra column.
    """
    ts = now_ms() if ms is None else ms
    return _ulid((ts << 80) | int.from_bytes(os.urandom(10), "big"))


def _ulid(value: int) -> str:
    """A 128-bit value as a ULID's 26 Crockford base32 characters."""
    out = []
    for _ in range(26):
        out.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(out))


#: How far ahead of the clock a store's newest id may be for a new write to follow it (``write_ms``):
#: two writes in one millisecond, or a clock stepped back a little. An id further ahead (a note
#: imported from a skewed clock) is not followed, so it cannot drag every later write's time along.
FOLLOW_MS = 1000


def id_ms(node_id: str) -> int:
    """The millisecond a ULID was made at (its first 10 characters)."""
    value = 0
    for ch in node_id[:10]:
        value = value * 32 + _CROCKFORD.index(ch)
    return value


def write_ms(now: int, newest_id: str | None) -> int:
    """The millisecond of a store's new node: ``now``, or one past the store's newest id when that
    is ``now`` or at most ``FOLLOW_MS`` ahead. Read under the store's write lock, the created_at
    and the ids of one store's writes then keep their order: 'later' (the premise check) and
    'newest first' (ids) never meet a tie of two writes in one millisecond."""
    if newest_id is None:
        return now
    last = id_ms(newest_id)
    return last + 1 if now <= last <= now + FOLLOW_MS else now


def id_floor(ms: int) -> str:
    """The smallest ULID of millisecond ``ms``: ids created at ``ms`` or later sort at or above it."""
    return _ulid(ms << 80)


def is_valid_id(value: object) -> bool:
    return isinstance(value, str) and bool(ID_PATTERN.match(value))


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------- link decisions


class LinkKind(StrEnum):
    """What a linker answers (``LinkDecisionKind`` in ``protos/evomem/v1/linker.proto``)."""

    LINK = "link"  # the note replaces ``proposal.target_id``
    ABSTAIN = "abstain"  # plausible candidates, not sure: the note is stored with ``possible_supersedes``
    NONE = "none"  # the note replaces nothing


@dataclass(frozen=True, slots=True)
class LinkProposal:
    """A link a linker proposes: the node the note replaces, how sure it is, and why."""

    target_id: str
    confidence: float
    method: str  # heuristic, scored, pair, llm: becomes the link's ``LinkProvenance.method``
    evidence: tuple[str, ...]
    by: str  # the linker's name and version


@dataclass(frozen=True, slots=True)
class LinkDecision:
    """A linker's full answer: link (with a proposal), abstain (with candidates), or none.

    Abstaining is not the same as "no link": the linker saw plausible candidates but is not
    sure enough, so the note is stored unlinked and marked ``possible_supersedes`` for the
    agent to confirm with one ``supersede`` call. ``kind`` accepts the enum's values as
    strings ("link") and is always a ``LinkKind`` after construction; any other value is a
    ``ValueError``.
    """

    kind: LinkKind
    proposal: LinkProposal | None = None
    candidates: tuple[tuple[str, float], ...] = ()  # (node id, score), best first
    reason: str = ""
    why: tuple[str, ...] = ()  # a short reason per candidate, in ``candidates``' order (may be empty)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", LinkKind(self.kind))
