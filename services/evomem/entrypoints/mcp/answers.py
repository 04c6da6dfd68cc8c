"""What the tools answer: a short text an agent reads, and compact structured content.

Every answer is an ``Answer``: ``text`` (the MCP text content) and ``data`` (the structured
content, checked by the client against the tool's published output schema, ``OUTPUT``).

- ``detail="brief"`` (default): the text renders the decisions (id, status, version, scope,
  date, the note, what matched, history lines); the structured content carries the ids and
  versions a program needs to act, and no note text.
- ``detail="full"``: the structured content carries every non-empty field of every node
  (note text included); the text then renders the same lines without the note text.

So a note's text travels once per answer, whichever the detail. Empty fields are dropped.
Note text is cut to ``note_chars`` characters (``truncated: true``; ``get_node(id,
full_text=true)`` pages the whole text), and no answer exceeds ``ANSWER_MAX_BYTES`` of JSON:
a recall that would is answered with shorter notes, then without history, then with fewer hits,
and says so in ``notes``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evomem.app.memory import ForgetOutcome, RecallOutcome, RememberOutcome
from evomem.domain.model import LinkDecision, LinkProvenance, MemoryNode, Stats, iso
from evomem.domain.recall import Match, Resolved, Successor

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
        return len(json.dumps(self.text, ensure_ascii=False).encode()) + len(_compact(self.data).encode())


def _compact(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _prune(d: dict[str, Any]) -> dict[str, Any]:
    """Drop empty fields (None, "", [], {}); booleans and zeros stay."""
    return {k: v for k, v in d.items() if v is not None and v != "" and v != [] and v != {}}


def cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def terms_shown(terms: list[str], n: int = TERMS_SHOWN) -> list[str]:
    """At most ``n`` query words, each cut to 40 characters: a query is never echoed whole."""
    return [t if len(t) <= 40 else t[:40] + "…" for t in terms[:n]]


def _date(ms: int | None) -> str:
    stamp = iso(ms)
    return stamp[:10] if stamp else "?"


# ---------------------------------------------------------------------- node fields


def link_fields(link: LinkProvenance | None) -> dict[str, Any] | None:
    if link is None:
        return None
    return _prune(
        {
            "method": link.method,
            "confidence": link.confidence,
            "by": link.by,
            "evidence": list(link.evidence),
            "requested_id": link.requested_id,
            "created_at": iso(link.created_at) if link.created_at else None,
        }
    )


def full_node(node: MemoryNode, limit: int) -> dict[str, Any]:
    """Every non-empty field of a node; its text fields cut to ``limit`` characters."""
    texts: dict[str, str] = {}
    truncated = False
    for name in TEXT_FIELDS:
        texts[name], cut_here = cut(getattr(node, name), limit)
        truncated = truncated or cut_here
    out = _prune(
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
            "extraction": _prune(
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
    parts.append(_date(node.created_at))
    return ", ".join(parts) + extra


def note_lines(node: MemoryNode, limit: int, indent: str = "  ") -> tuple[list[str], bool]:
    """The note's text for the text content (cut to ``limit``), and whether it was cut."""
    shown, truncated = cut(node.raw_text, limit)
    if truncated:
        shown += f"… [{len(node.raw_text):,} characters; get_node(full_text=true) pages the rest]"
    return [indent + line for line in shown.splitlines() or [""]], truncated


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
        if full:
            hit: dict[str, Any] = {"rank": rank, **full_node(head, limit)}
            hit["matched"] = match_fields(entry.best)
            if entry.matches[1:]:
                hit["also_matched"] = [match_fields(m) for m in entry.matches[1:]]
        else:
            hit = {"id": head.id, "version": head.version}
            if truncated:
                hit["truncated"] = True
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
        lead = f"  may be replaced by {node.id} ({_date(node.created_at)}, {where}{MAYBE})"
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
        entries.append(_prune(entry))
    return entries, lines


def match_fields(m: Match) -> dict[str, Any]:
    return _prune(
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
                **_prune(
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


# ---------------------------------------------------------------------- remember, supersede, unlink, forget


def fit_one(build: Callable[[int], Answer], note_chars: int) -> Answer:
    """One node's answer (detail=full), its text fields shortened until it fits."""
    return fit(lambda limit, _history, _keep, _why: build(limit), note_chars, 0)


def remember_answer(out: RememberOutcome, *, detail: str, note_chars: int) -> Answer:
    if detail == "full":
        return fit_one(lambda limit: _remember(out, detail=detail, note_chars=limit), note_chars)
    return _remember(out, detail=detail, note_chars=note_chars)


def _whys(decision: LinkDecision) -> list[str]:
    """The decision's short reason per candidate ("" where the linker gave none)."""
    why = list(decision.why)[: len(decision.candidates)]
    return why + [""] * (len(decision.candidates) - len(why))


def _remember(out: RememberOutcome, *, detail: str, note_chars: int) -> Answer:
    node = out.node
    data = written_fields(node, detail=detail, note_chars=note_chars)
    data["latency_ms"] = out.latency_ms
    if out.decision is not None:
        data["link_decision"] = _prune(
            {
                "kind": out.decision.kind,
                "candidates": [
                    _prune({"id": c, "score": round(sc, 4), "why": why})
                    for (c, sc), why in zip(out.decision.candidates, _whys(out.decision), strict=True)
                ],
                "reason": out.decision.reason,
            }
        )
    if out.warnings:
        data["warnings"] = list(out.warnings)
    if out.duplicate_of:  # nothing stored: an identical active note was stored moments ago
        data["duplicate_of"] = out.duplicate_of
    lines = [("duplicate of " if out.duplicate_of else "stored ") + head_line(node)]
    lines += link_lines(node)
    lines.append(f"  extraction {node.extraction_state}")
    if node.possible_supersedes:
        why = (
            dict(zip((c for c, _ in out.decision.candidates), _whys(out.decision), strict=True)) if out.decision else {}
        )
        lines.append(
            "  may replace: "
            + "; ".join(f"{c} ({why[c]})" if why.get(c) else c for c in node.possible_supersedes)
            + ". If it does, confirm with supersede(node_id, supersedes)."
        )
    lines += [f"  warning: {w}" for w in out.warnings if not w.startswith("possible_supersedes:")]
    return Answer("\n".join(lines), data)


def written_fields(node: MemoryNode, *, detail: str, note_chars: int) -> dict[str, Any]:
    """A node just written (remember, supersede): brief ids and links, or the whole node."""
    if detail == "full":
        return full_node(node, note_chars)
    return _prune(
        {
            "id": node.id,
            "status": str(node.status),
            "version": node.version,
            "chain_root": node.chain_root if node.chain_root != node.id else None,
            "scope": node.scope,
            "scope_source": node.scope_source,
            "created_at": iso(node.created_at),
            "supersedes": node.supersedes,
            "link": link_fields(node.link),
            "extraction": {"state": str(node.extraction_state)},
            "possible_supersedes": list(node.possible_supersedes),
        }
    )


def link_lines(node: MemoryNode) -> list[str]:
    if not node.supersedes:
        return []
    line = f"  replaces {node.supersedes} (v{node.version - 1}, now superseded)"
    link = node.link
    if link is not None and link.method != "agent":
        line += f"; linked by {link.method}, confidence {link.confidence:.2f}"
    if link is not None and link.requested_id and link.requested_id != node.supersedes:
        line += f"; {link.requested_id} was already replaced, so the chain's head was"
    return [line]


def supersede_answer(node: MemoryNode, *, detail: str, note_chars: int) -> Answer:
    def build(limit: int) -> Answer:
        data = written_fields(node, detail=detail, note_chars=limit)
        return Answer("\n".join(["linked " + head_line(node), *link_lines(node)]), data)

    return fit_one(build, note_chars)


def unlink_answer(node: MemoryNode, restored: MemoryNode, *, detail: str, note_chars: int) -> Answer:
    if detail == "full":
        return fit_one(lambda limit: _unlink(node, restored, detail=detail, note_chars=limit), note_chars)
    return _unlink(node, restored, detail=detail, note_chars=note_chars)


def _unlink(node: MemoryNode, restored: MemoryNode, *, detail: str, note_chars: int) -> Answer:
    if detail == "full":
        data = {"node": full_node(node, note_chars), "restored": full_node(restored, note_chars)}
    else:
        data = {"id": node.id, "restored_head": restored.id, "restored_status": str(restored.status)}
    text = (
        f"unlinked: {restored.id} v{restored.version} is the head of its chain again ({restored.status}); "
        f"{node.id} now starts a chain of its own"
    )
    return Answer(text, data)


def forget_answer(out: ForgetOutcome) -> Answer:
    head = out.chain_head
    in_force = head is not None and str(head.status) == "active"
    if out.purged and out.file_erased is False:
        message = "purged from the table, the search index, the vectors and the caches; not yet from the file: " + (
            out.file_reason or "a reader holds an older snapshot"
        )
    elif out.purged:
        message = "purged: the text was erased from the table, the search index, the vectors, the caches and the file"
    elif out.changed:
        message = "forgotten: dropped from recall; the node and its history are kept"
    else:
        message = "already forgotten; nothing changed (pass purge=true to remove the text)"
    if head is not None and head.id == out.node.id:
        message += "; this was the version in force, so its decision no longer answers recall"
    data = _prune(
        {
            "id": out.node.id,
            "status": str(out.node.status),
            "changed": out.changed,
            "purged": out.purged,
            "chain_head": head.id if head else None,
            "chain_in_force": in_force,
            "erased": out.erased or None,
            "file_erased": out.file_erased,
            "file_erase_reason": out.file_reason if out.file_erased is False else None,
        }
    )
    return Answer(f"{out.node.id} {message}", data)


def stats_answer(stats: Stats, namespace: str | None, server: dict[str, str]) -> Answer:
    data = _prune(
        {
            "namespace": namespace,
            "nodes": sum(stats.by_status.values()),
            "by_status": stats.by_status,
            "purged": stats.purged,
            "chains": stats.chains,
            "extraction": stats.extraction,
            "namespaces": stats.namespaces,
            "db_bytes": stats.db_bytes,
            "schema_version": stats.schema_version,
            "server": server,
            "purges_file_pending": stats.purges_file_pending or None,
            "last_file_erased_at": iso(stats.last_file_erased_at),
        }
    )
    counts = ", ".join(f"{v} {k}" for k, v in stats.by_status.items())
    text = f"{data['nodes']} notes ({counts}), {stats.chains} chains, {stats.purged} purged"
    if stats.extraction:
        text += "; extraction " + ", ".join(f"{v} {k}" for k, v in stats.extraction.items())
    return Answer(text, data)


# ---------------------------------------------------------------------- published output schemas

_S, _I, _B, _N = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "number"}
_STRS = {"type": "array", "items": _S}
_OBJ: dict[str, Any] = {"type": "object"}


def _object(required: list[str], description: str = "", **props: Any) -> dict[str, Any]:
    """A compact object schema: the fields a program relies on; the others are open (README, Tools)."""
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if description:
        out["description"] = description
    return out


_FULL = "detail=full adds every non-empty node field"
_HISTORY = {"type": "array", "items": _object(["id", "version"], "", id=_S, version=_I)}

OUTPUT: dict[str, dict[str, Any]] = {
    "remember": _object(  # detail=full adds every non-empty node field (the detail argument says so)
        ["id", "status", "version"],
        "",
        id=_S,
        status=_S,
        version=_I,
        supersedes=_S,
        link=_OBJ,
        possible_supersedes=_STRS,
        warnings=_STRS,
    ),
    "recall": _object(
        ["results"],
        "",
        results={
            "type": "array",
            "items": _object(
                ["id", "version"],
                "best first; " + _FULL,
                id=_S,
                version=_I,
                history=_HISTORY,
                maybe_replaced_by={"type": "array", "items": _object(["id"], "", id=_S)},
            ),
        },
        notes=_STRS,
    ),
    "get_node": _object(
        [],
        _FULL + "; full_text=true: id, offset, next_offset (absent on the last page), total_chars",
        id=_S,
        status=_S,
        version=_I,
        in_force=_B,
        history=_HISTORY,
        next_offset=_I,
    ),
    "forget": _object(["id", "status", "purged"], "", id=_S, status=_S, purged=_B, chain_in_force=_B),
    "supersede": _object(["id", "version"], "", id=_S, version=_I, supersedes=_S),
    "unlink": _object([], "", id=_S, restored_head=_S),
    "stats": _object(["nodes"], "", nodes=_I, by_status=_OBJ, chains=_I),
}
