"""The answers of the tools that read: recall (hits, what matched, history, the notes that may
replace a hit) and get_node (one node, or one page of its text)."""

from __future__ import annotations

from typing import Any

from evomem.app.memory import RecallOutcome
from evomem.domain.model import MemoryNode, iso
from evomem.domain.recall import Match, Resolved, Successor
from evomem.entrypoints.mcp.answers.core import (
    PAGE_CHARS,
    QUERY_ECHO_CHARS,
    TERMS_SHOWN,
    Answer,
    cut,
    day,
    fit,
    full_node,
    head_line,
    note_lines,
    prune,
    review_fields,
    review_line,
    terms_shown,
)


def _matched(m: Match) -> str:
    terms = terms_shown(m.terms)
    how = ("on " + ", ".join(terms)) if terms else ""
    if "vector" in m.via:
        how = f"{how} and by meaning" if how else "by meaning"
    where = "" if m.is_head else f" v{m.version} (older)"
    return f"  matched{where} {how}".rstrip()


# ---------------------------------------------------------------------- recall


def recall_answer(out: RecallOutcome, *, detail: str, note_chars: int, scoped: bool) -> Answer:
    """The recall answer, fitted within ``ANSWER_MAX_BYTES``."""
    hits = len(out.results)

    def build(limit: int, history: bool, keep: int, cut_note: str | None) -> Answer:
        return _recall(out, detail=detail, limit=limit, history=history, keep=keep, scoped=scoped, cut_note=cut_note)

    return fit(build, note_chars, hits)


def _recall(
    out: RecallOutcome, *, detail: str, limit: int, history: bool, keep: int, scoped: bool, cut_note: str | None
) -> Answer:
    full = detail == "full"
    lines: list[str] = []
    results: list[dict[str, Any]] = []
    seen: dict[str, int] = {}  # successors already shown with their text, and under which result
    for rank, (entry, past) in enumerate(out.results[:keep], start=1):
        entry: Resolved
        head = entry.head
        default = scoped and entry.scope_match == "default"
        lines.append(head_line(head, extra=" (default scope: in force here)" if default else ""))
        text, truncated = note_lines(head, limit)
        if not full:
            lines.extend(text)
        lines.append(_matched(entry.best))
        lines.extend(review_line(head.needs_review))
        if full:
            hit: dict[str, Any] = {"rank": rank, **full_node(head, limit)}
            hit["matched"] = match_fields(entry.best)
            if entry.matches[1:]:
                hit["also_matched"] = [match_fields(m) for m in entry.matches[1:]]
        else:
            hit = {"id": head.id, "version": head.version}
            if truncated:
                hit["truncated"] = True
            if head.needs_review is not None:
                hit["needs_review"] = review_fields(head.needs_review)
        if scoped and entry.scope_match:
            hit["scope_match"] = entry.scope_match
        if entry.maybe_replaced_by:
            successors, successor_lines = maybe_replaced_parts(
                entry.maybe_replaced_by, rank, keep, limit, full=full, seen=seen
            )
            hit["maybe_replaced_by"] = successors
            lines.extend(successor_lines)
        if history and past:
            steps, step_lines = history_parts(head, past, limit, full=full)
            hit["history"] = steps
            lines.extend(step_lines)
        results.append(hit)
    notes = list(out.notes) + ([cut_note] if cut_note else [])
    if not results:
        terms = ", ".join(terms_shown(out.terms)) + (" …" if len(out.terms) > TERMS_SHOWN else "")
        lines.append(f"no decision in force matches ({terms})" if out.terms else "no decision matches")
    lines.extend(f"note: {n}" for n in notes)
    data: dict[str, Any] = {"results": results}
    if full:
        query, _ = cut(out.query, QUERY_ECHO_CHARS)
        data = {"query": query, "terms": terms_shown(out.terms, TERMS_SHOWN * 4), "count": len(results), **data}
        data["latency_ms"] = out.latency_ms
    if notes:
        data["notes"] = notes
    return Answer("\n".join(lines), data)


MAYBE = "unconfirmed"  # the server instructions say how to confirm (supersede)


def maybe_replaced_parts(
    successors: list[Successor], rank: int, keep: int, limit: int, *, full: bool, seen: dict[str, int]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The newer notes that may replace a hit (a linker listed it, nobody confirmed): (structured
    entries, text lines). Each note's text travels once, as a hit's does: in the text (brief) or
    the structured content (full); a successor that is itself a shown result is referenced by
    its rank instead (``result``), one shown under an earlier result by that rank (``shown_under``).
    brief: the id (as a brief hit; date, scope and text are in the text); full: every field of
    the node and the linker's ``reason``."""
    entries: list[dict[str, Any]] = []
    lines: list[str] = []
    for y in successors:
        node = y.node
        where = f"{node.scope}, " if node.scope else ""
        lead = f"  may be replaced by {node.id} ({day(node.created_at)}, {where}{MAYBE})"
        if y.result is not None and y.result < keep:  # its head line, date and text are that result's
            shown = y.result + 1
            entries.append({"id": node.id, "result": shown})
            lines.append(
                f"  may be replaced by {node.id}: result {shown} {'above' if shown < rank else 'below'} ({MAYBE})"
            )
            continue
        if node.id in seen:
            entries.append({"id": node.id, "shown_under": seen[node.id]})
            lines.append(f"  may be replaced by {node.id}: shown under result {seen[node.id]} ({MAYBE})")
            continue
        seen[node.id] = rank
        text, truncated = note_lines(node, limit, indent="    ")
        if full:
            entry = {**full_node(node, limit), "reason": y.reason}
            lines.append(lead)
        else:
            entry = {"id": node.id, "truncated": truncated or None}  # as a brief hit: the id to act on
            lines.append(f"{lead}: {text[0][4:]}")
            lines.extend(text[1:])
        entries.append(prune(entry))
    return entries, lines


def match_fields(m: Match) -> dict[str, Any]:
    return prune(
        {
            "node_id": m.node_id,
            "version": m.version,
            "is_current": m.is_head,
            "score": m.score,
            "fields": m.fields,
            "terms": terms_shown(m.terms, TERMS_SHOWN * 4),
            "via": m.via,
        }
    )


def history_parts(
    newer: MemoryNode, past: list[MemoryNode], limit: int, *, full: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """``past`` is newest first and starts just below ``newer``: (structured steps, text lines)."""
    steps: list[dict[str, Any]] = []
    lines: list[str] = []
    successor = newer
    for node in past:
        text, truncated = note_lines(node, limit, indent="     ")
        lines.append("  └ " + head_line(node))
        if full:
            replaced_at = successor.created_at if successor.link is None else successor.link.created_at
            why, _ = cut(successor.trigger, limit)
            what, _ = cut(successor.change or successor.summary, limit)
            step = {
                **full_node(node, limit),
                **prune(
                    {
                        "replaced_by": successor.id,
                        "replaced_at": iso(replaced_at),
                        "why_replaced": why,
                        "what_changed": what,
                        "replaced_by_method": successor.link.method if successor.link else None,
                    }
                ),
            }
        else:
            lines.extend(text)
            step = {"id": node.id, "version": node.version}
            if str(node.status) != "superseded":
                step["status"] = str(node.status)
            if truncated:
                step["truncated"] = True
        steps.append(step)
        successor = node
    return steps, lines


# ---------------------------------------------------------------------- get_node


def get_node_answer(
    node: MemoryNode, head: MemoryNode | None, past: list[MemoryNode], *, detail: str, note_chars: int
) -> Answer:
    def build(limit: int, history: bool, keep: int, cut_note: str | None) -> Answer:
        return _get_node(node, head, past[:keep] if history else [], detail=detail, limit=limit, cut_note=cut_note)

    return fit(build, note_chars, len(past))


def _get_node(
    node: MemoryNode,
    head: MemoryNode | None,
    past: list[MemoryNode],
    *,
    detail: str,
    limit: int,
    cut_note: str | None,
) -> Answer:
    full = detail == "full"
    in_force = node.superseded_by is None and str(node.status) == "active"
    extra = ""
    if head is not None:
        extra = f" (replaced; in force: {head.id} {head.status} v{head.version})"
    lines = [head_line(node, extra=extra)]
    text, truncated = note_lines(node, limit)
    if full:
        data: dict[str, Any] = full_node(node, limit)
    else:
        lines.extend(text)
        data = {"id": node.id, "status": str(node.status), "version": node.version}
        if truncated:
            data["truncated"] = True
            data["text_chars"] = len(node.raw_text)
        if node.needs_review is not None:
            data["needs_review"] = review_fields(node.needs_review)
    lines.extend(review_line(node.needs_review))
    data["in_force"] = in_force
    if head is not None:
        data["current_head"] = {"id": head.id, "status": str(head.status), "version": head.version}
    if past:
        steps, step_lines = history_parts(node, past, limit, full=full)
        data["history"] = steps
        lines.extend(step_lines)
    if cut_note:
        data["notes"] = [cut_note]
        lines.append(f"note: {cut_note}")
    return Answer("\n".join(lines), data)


def page_answer(node: MemoryNode, offset: int) -> Answer:
    """One page of a note's full text: the text content is exactly that page."""
    total = len(node.raw_text)
    end = min(total, offset + PAGE_CHARS)
    data: dict[str, Any] = {"id": node.id, "offset": offset, "total_chars": total}
    if end < total:
        data["next_offset"] = end
    return Answer(node.raw_text[offset:end], data)
