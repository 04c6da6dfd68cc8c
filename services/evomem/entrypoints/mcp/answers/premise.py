"""The answer of ``check``: the verdict and its confidence, the decisions in force that decided
it, the versions that named the statement's option, and each change (when, why, who)."""

from __future__ import annotations

from typing import Any

from evomem.app.premise import Change, CheckOutcome
from evomem.domain.model import MemoryNode, iso
from evomem.entrypoints.mcp.answers.core import Answer, cut, day, head_line, prune, review_fields, review_line

WHY_CHARS = 300


def _node(node: MemoryNode, limit: int) -> dict[str, Any]:
    text, truncated = cut(node.raw_text, limit)
    return prune(
        {
            "id": node.id,
            "status": str(node.status),
            "version": node.version,
            "scope": node.scope,
            "text": text,
            "truncated": truncated or None,
            "needs_review": review_fields(node.needs_review),
        }
    )


def _change(c: Change) -> dict[str, Any]:
    why, _ = cut(c.newer.trigger or c.newer.change, WHY_CHARS)
    return prune(
        {
            "replaced": c.older.id,
            "by": c.newer.id,
            "at": iso(c.at),
            "why": why,
            "who": c.who,
            "method": c.newer.link.method if c.newer.link else None,
        }
    )


def check_answer(out: CheckOutcome, *, note_chars: int) -> Answer:
    limit = min(note_chars, 500)
    asked = f"{out.node.id}" if out.node is not None else repr(cut(out.statement or "", 120)[0])
    lines = [
        f"{out.verdict} (confidence {out.confidence:.2f}): {asked}" + (f" in scope {out.scope}" if out.scope else "")
    ]
    if out.reason:
        lines.append(f"  {out.reason}")
    for node in out.named:
        lines.append(f"  named it: {head_line(node)}: {cut(node.raw_text, 200)[0]}")
    for c in out.changes:
        who = f" by {c.who}" if c.who else ""
        why = f": {cut(c.newer.trigger, 200)[0]}" if c.newer.trigger else ""
        lines.append(f"  changed {day(c.at)}{who}: {c.older.id} -> {c.newer.id}{why}")
    for node in out.in_force:
        lines.append(f"  in force: {head_line(node)}: {cut(node.raw_text, 200)[0]}")
        lines.extend(review_line(node.needs_review))
    if out.node is not None and out.node.needs_review is not None and out.node not in out.in_force:
        lines.extend(review_line(out.node.needs_review))
    data = prune(
        {
            "verdict": out.verdict,
            "confidence": out.confidence,
            "node_id": out.node.id if out.node is not None else None,
            "scope": out.scope,
            "option": out.option,
            "in_force": [n.id for n in out.in_force],
            "evidence": [_node(n, limit) for n in [*out.in_force, *out.named]],
            "changes": [_change(c) for c in out.changes],
            "needs_review": review_fields(out.node.needs_review) if out.node is not None else None,
            "reason": out.reason,
            "latency_ms": out.latency_ms,
        }
    )
    return Answer("\n".join(lines), data)
