"""The answers of the tools that write or count: remember, supersede, unlink, forget and stats."""

from __future__ import annotations

from typing import Any

from evomem.app.memory import ForgetOutcome, RememberOutcome
from evomem.app.premise import ReviewOutcome
from evomem.domain.model import LinkDecision, MemoryNode, Stats, iso
from evomem.entrypoints.mcp.answers.core import (
    Answer,
    fit_one,
    full_node,
    head_line,
    link_fields,
    prune,
    review_fields,
)


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
        data["link_decision"] = prune(
            {
                "kind": out.decision.kind,
                "candidates": [
                    prune({"id": c, "score": round(sc, 4), "why": why})
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
    return prune(
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


def review_answer(out: ReviewOutcome) -> Answer:
    node = out.node
    if out.replaced_by is not None:
        text = f"reviewed {node.id}: replaced by {out.replaced_by.id} (v{out.replaced_by.version}), now in force"
    elif out.changed:
        text = f"reviewed {node.id}: confirmed still valid; needs_review cleared"
    else:
        text = f"{node.id} was not flagged needs_review; nothing changed"
    data = prune(
        {
            "id": node.id,
            "status": str(node.status),
            "changed": out.changed,
            "cleared": review_fields(out.cleared),
            "replaced_by": out.replaced_by.id if out.replaced_by else None,
        }
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
    data = prune(
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
    data = prune(
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
