"""The parts every answer is made of: ``Answer``, the limits, a node's fields and lines, and
``fit`` (shorter notes, then no history, then fewer items, until an answer fits)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evomem.domain.model import LinkProvenance, MemoryNode, ReviewFlag, iso

#: The largest answer, text and structured content together, in UTF-8 bytes of JSON. The official
#: MCP client refuses server-sent events over 1 MiB; this leaves room for the JSON-RPC envelope.
ANSWER_MAX_BYTES = 512 * 1024
#: Characters of note text per ``get_node(full_text=true)`` page (at most 4 UTF-8 bytes each).
PAGE_CHARS = 100_000
DEFAULT_NOTE_CHARS = 2000
QUERY_ECHO_CHARS = 200
TERMS_SHOWN = 12
DETAILS = ("brief", "full")
TEXT_FIELDS = ("raw_text", "change", "trigger", "alternatives_tried", "consequences", "summary")


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    data: dict[str, Any]

    def size(self) -> int:
        """UTF-8 bytes of both parts as JSON (what the wire carries, give or take the envelope)."""
        return len(json.dumps(self.text, ensure_ascii=False).encode()) + len(compact(self.data).encode())


def compact(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def prune(d: dict[str, Any]) -> dict[str, Any]:
    """Drop empty fields (None, "", [], {}); booleans and zeros stay."""
    return {k: v for k, v in d.items() if v is not None and v != "" and v != [] and v != {}}


def cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def terms_shown(terms: list[str], n: int = TERMS_SHOWN) -> list[str]:
    """At most ``n`` query words, each cut to 40 characters: a query is never echoed whole."""
    return [t if len(t) <= 40 else t[:40] + "…" for t in terms[:n]]


def day(ms: int | None) -> str:
    stamp = iso(ms)
    return stamp[:10] if stamp else "?"


# ---------------------------------------------------------------------- node fields


def link_fields(link: LinkProvenance | None) -> dict[str, Any] | None:
    if link is None:
        return None
    return prune(
        {
            "method": link.method,
            "confidence": link.confidence,
            "by": link.by,
            "evidence": list(link.evidence),
            "requested_id": link.requested_id,
            "created_at": iso(link.created_at) if link.created_at else None,
        }
    )


def review_fields(flag: ReviewFlag | None) -> dict[str, Any] | None:
    """``needs_review``: each replaced dependency, what replaced it, and the dependency named on the way."""
    if flag is None:
        return None
    return {
        "since": iso(flag.flagged_at) if flag.flagged_at else None,
        "replaced": [
            prune({"dependency": r, "replaced_by": b, "via": v if v != r else None})
            for r, b, v in zip(flag.replaced, flag.replaced_by, flag.via, strict=False)
        ],
    }


def review_line(flag: ReviewFlag | None) -> list[str]:
    """The text line of a flagged node: what it depended on, and what replaced it."""
    if flag is None:
        return []
    parts = []
    for r, b, v in zip(flag.replaced, flag.replaced_by, flag.via, strict=False):
        through = "" if v == r else f" (through {v})"
        parts.append(f"{r} was replaced by {b}{through}")
    return ["  needs_review: a decision it depends on changed: " + "; ".join(parts) + ". Confirm with review()."]


def full_node(node: MemoryNode, limit: int) -> dict[str, Any]:
    """Every non-empty field of a node; its text fields cut to ``limit`` characters."""
    texts: dict[str, str] = {}
    truncated = False
    for name in TEXT_FIELDS:
        texts[name], cut_here = cut(getattr(node, name), limit)
        truncated = truncated or cut_here
    out = prune(
        {
            "id": node.id,
            "status": str(node.status),
            "version": node.version,
            "namespace": node.namespace,
            "scope": node.scope,
            "scope_source": node.scope_source,
            "scope_evidence": node.scope_evidence,
            "created_at": iso(node.created_at),
            "chain_root": node.chain_root,
            "supersedes": node.supersedes,
            "superseded_by": node.superseded_by,
            **texts,
            "tags": list(node.tags),
            "session": node.session,
            "author": node.author,
            "relations": {k: list(v) for k, v in node.relations.items()},
            "link": link_fields(node.link),
            "extraction": prune(
                {
                    "state": str(node.extraction_state),
                    "extractor": node.extractor,
                    "error": node.extraction_error,
                    "attempts": node.extraction_attempts or None,
                }
            ),
            "forgotten_at": iso(node.forgotten_at),
            "possible_supersedes": list(node.possible_supersedes),
            "file_erased_at": iso(node.file_erased_at),  # purged: when the bytes left every file
            "needs_review": review_fields(node.needs_review),
        }
    )
    if texts["summary"] == texts["raw_text"]:
        out.pop("summary", None)  # a one-sentence note is its own summary: not twice
    if node.purged:
        out["purged"] = True
    if truncated:
        out["truncated"] = True
        out["text_chars"] = len(node.raw_text)
    return out


def head_line(node: MemoryNode, *, extra: str = "") -> str:
    """``<id> <status> v<version>, <scope>, <date>``: what an agent needs to act on a node."""
    parts = [f"{node.id} {node.status} v{node.version}"]
    if node.scope:
        parts.append(node.scope)
    parts.append(day(node.created_at))
    return ", ".join(parts) + extra


def note_lines(node: MemoryNode, limit: int, indent: str = "  ") -> tuple[list[str], bool]:
    """The note's text for the text content (cut to ``limit``), and whether it was cut."""
    shown, truncated = cut(node.raw_text, limit)
    if truncated:
        shown += f"… [{len(node.raw_text):,} characters; get_node(full_text=true) pages the rest]"
    return [indent + line for line in shown.splitlines() or [""]], truncated


def fit(build: Callable[[int, bool, int, str | None], Answer], note_chars: int, items: int) -> Answer:
    """Shorter notes, then no history, then fewer items, until the answer fits."""
    answer = build(note_chars, True, items, None)
    if answer.size() <= ANSWER_MAX_BYTES:
        return answer
    why = f"answer cut to fit {ANSWER_MAX_BYTES // 1024} KiB: "
    limit = note_chars
    while limit > 0:
        limit = limit // 2 if limit > 32 else 0
        answer = build(limit, True, items, why + f"notes shown up to {limit} characters")
        if answer.size() <= ANSWER_MAX_BYTES:
            return answer
    answer = build(0, False, items, why + "history left out; ask with a smaller k or history_depth")
    keep = items
    while answer.size() > ANSWER_MAX_BYTES and keep > 0:
        keep //= 2
        answer = build(0, False, keep, why + f"only the first {keep} results; ask with a smaller k")
    return answer


def fit_one(build: Callable[[int], Answer], note_chars: int) -> Answer:
    """One node's answer (detail=full), its text fields shortened until it fits."""
    return fit(lambda limit, _history, _keep, _why: build(limit), note_chars, 0)
