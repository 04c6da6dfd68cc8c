"""Moving a memory between stores: export to JSONL, import from it, migrate from one store to another.

    export_jsonl(store, out)                 # one record a line, a header first and an end line last
    records = read_jsonl(lines)              # every line checked first: ExportError names the line
    report = import_records(store, records)  # idempotent, ids kept, forks and cycles refused, one transaction
    report = migrate(source, target)         # export_records -> the same checks -> import_records

The file (``evomem-export`` version 1): line 1 is the header (``{"evomem_export": 1, "source":
..., "schema_version": ..., "exported_at": ...}``); then one record a line, each an object with one
key naming its kind: ``node`` (every field of a ``MemoryNode``: id, text, chain, link and its
provenance, extraction, tombstones), ``offer``, ``key`` (an idempotency key's hash), ``change``
(the chain audit), ``audit`` (the write audit), ``vector`` (that a node had a vector, and the model
id: vectors are derived data, the target embeds the text again); the last line is ``{"end":
{"records": N}}``, so a truncated file is told from a whole one.

An import writes whole chains or nothing of a chain: a chain of the file that is not one line of
versions 1..n with one head (a fork, a gap, a cycle) is skipped, and so is a chain some of whose
nodes the target already holds with other content (importing it would fork the target's chain);
a chain the target already holds as it is, is skipped as imported before (so an import can be
run again). Every skip is reported with its reason. Everything accepted is written in one
transaction: a failure writes nothing.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from evomem.app.ports import Archive
from evomem.domain.archive import ChainChange, KeyRecord, Offer, Record, VectorRef
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.errors import InvalidArgument
from evomem.domain.model import ExtractionState, LinkProvenance, MemoryNode, Status, now_ms

FORMAT = 1
KINDS: dict[str, type] = {
    "node": MemoryNode,
    "offer": Offer,
    "key": KeyRecord,
    "change": ChainChange,
    "audit": AuditEntry,
    "vector": VectorRef,
}
_NAMES = {cls: name for name, cls in KINDS.items()}


class ExportError(InvalidArgument):
    """A file that is not a whole, well-formed export: the message names the line."""


@dataclass
class ImportReport:
    """What an import wrote and what it left out, and why."""

    written: Counter[str] = field(default_factory=Counter)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why)
    vectors: Counter[str] = field(default_factory=Counter)  # model id -> nodes that had a vector

    def summary(self) -> str:
        written = ", ".join(f"{self.written[k]} {k}s" for k in KINDS if self.written[k]) or "nothing"
        out = [f"imported {written}"]
        if self.skipped:
            out.append(f"skipped {len(self.skipped)}:")
            out += [f"  {what}: {why}" for what, why in self.skipped]
        for model, n in sorted(self.vectors.items()):
            out.append(f"{n} nodes had vectors of {model or 'an unnamed model'}: the store embeds them again at start")
        return "\n".join(out)


# ---------------------------------------------------------------------------- records <-> JSON


def to_json(record: Record) -> dict[str, Any]:
    """``{"node": {...}}``: the record's kind and its fields, JSON-ready."""
    return {_NAMES[type(record)]: _plain(dataclasses.asdict(record))}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Status | ExtractionState):
        return value.value
    return value


def from_json(obj: Any) -> Record:
    """The record of one line (``ValueError`` saying what is wrong)."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise ValueError("a record is an object with one key naming its kind")
    ((kind, data),) = obj.items()
    cls = KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown record kind {kind!r} (known: {', '.join(KINDS)})")
    if not isinstance(data, dict):
        raise ValueError(f"{kind}: its fields must be an object")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"{kind}: unknown fields {', '.join(sorted(unknown))}")
    try:
        if cls is MemoryNode:
            return _node(data)
        if cls is AuditEntry:
            return AuditEntry(**{**data, "ids": tuple(data.get("ids", ()))})
        return cls(**data)
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"{kind}: {exc}") from None


def _node(data: dict[str, Any]) -> MemoryNode:
    d = dict(data)
    for name in ("tags", "possible_supersedes"):
        d[name] = tuple(d.get(name) or ())
    d["relations"] = {k: tuple(v) for k, v in (d.get("relations") or {}).items()}
    d["status"] = Status(d.get("status", "active"))
    d["extraction_state"] = ExtractionState(d.get("extraction_state", "pending"))
    if d.get("link") is not None:
        d["link"] = LinkProvenance(**{**d["link"], "evidence": tuple(d["link"].get("evidence") or ())})
    node = MemoryNode(**d)
    if not node.id or not node.chain_root or not isinstance(node.raw_text, str) or node.version < 1:
        raise ValueError("a node needs an id, a chain_root, a raw_text and a version of 1 or more")
    return node


# ---------------------------------------------------------------------------- the file


def export_jsonl(store: Archive, out: IO[str], *, source: str, progress: Callable[[int], None] | None = None) -> int:
    """Write every record of ``store`` to ``out``; how many records."""
    header = {"evomem_export": FORMAT, "source": source, "schema_version": store.stats().schema_version}
    out.write(json.dumps({**header, "exported_at": now_ms()}) + "\n")
    n = 0
    for record in store.export_records():
        out.write(json.dumps(to_json(record), ensure_ascii=False) + "\n")
        n += 1
        if progress is not None and n % 1000 == 0:
            progress(n)
    out.write(json.dumps({"end": {"records": n}}) + "\n")
    return n


def read_jsonl(lines: Iterable[str]) -> list[Record]:
    """Every record of an export, each line checked before any is used: ``ExportError`` names the
    first line that is not JSON, not a record, or missing (no end line, or a count that differs)."""
    records: list[Record] = []
    end: int | None = None
    number = 0
    for number, line in enumerate(lines, start=1):
        if end is not None:
            raise ExportError(f"line {number}: there is more after the end line (line {end + 1})")
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExportError(f"line {number}: not JSON ({exc.msg} at column {exc.colno})") from None
        if number == 1:
            if not isinstance(obj, dict) or obj.get("evomem_export") != FORMAT:
                raise ExportError(f"line 1: not an EvoMem export (version {FORMAT}): no evomem_export header")
            continue
        if isinstance(obj, dict) and set(obj) == {"end"}:
            count = obj["end"].get("records") if isinstance(obj["end"], dict) else None
            if count != len(records):
                raise ExportError(f"line {number}: the end line counts {count} records, the file holds {len(records)}")
            end = number - 1
            continue
        try:
            records.append(from_json(obj))
        except ValueError as exc:
            raise ExportError(f"line {number}: {exc}") from None
    if number == 0:
        raise ExportError("the file is empty: not an EvoMem export")
    if end is None:
        raise ExportError(f"the file is truncated: no end line after line {number} (export it again)")
    return records


# ---------------------------------------------------------------------------- import


def _chain_problem(members: list[MemoryNode]) -> str | None:
    """Why ``members`` (one chain_root's nodes in the file) is not one chain, or None."""
    members = sorted(members, key=lambda n: n.version)
    root = members[0].chain_root
    if len({n.namespace for n in members}) != 1:
        return f"chain {root} spans namespaces"
    if [n.version for n in members] != list(range(1, len(members) + 1)):
        return f"chain {root}: versions are not 1..{len(members)} (a gap or a fork)"
    if members[0].id != root or members[0].supersedes is not None:
        return f"chain {root}: its first version is not its root (a cycle)"
    heads = [n.id for n in members if n.superseded_by is None]
    if heads != [members[-1].id]:
        return (
            f"chain {root}: {len(heads)} heads (a fork)" if len(heads) != 1 else f"chain {root}: the head is not last"
        )
    for prev, node in itertools.pairwise(members):
        if node.supersedes != prev.id or prev.superseded_by != node.id:
            return f"chain {root}: version {node.version} does not follow version {prev.version} (a fork or a cycle)"
    return None


def _existing_audit(store: Archive) -> set[tuple[Any, ...]]:
    seen: set[tuple[Any, ...]] = set()
    before: int | None = None
    while True:
        page = store.audit_page(AuditQuery(before_seq=before, limit=500))
        seen |= {dataclasses.astuple(dataclasses.replace(e, seq=0)) for e in page}
        if len(page) < 500:
            return seen
        before = page[-1].seq


def plan(store: Archive, records: list[Record]) -> tuple[list[Record], ImportReport]:
    """What of ``records`` the target ``store`` can take, and the report of the rest."""
    report = ImportReport()
    chains: dict[tuple[str, str], list[MemoryNode]] = defaultdict(list)
    for r in records:
        if isinstance(r, MemoryNode):
            chains[(r.namespace, r.chain_root)].append(r)
        elif isinstance(r, VectorRef):
            report.vectors[r.model] += 1
    accepted: set[str] = set()
    out: list[Record] = []
    # What the target already holds, looked up in pages of 500 ids, not a query per chain.
    held = _get_many(store, [n.id for members in chains.values() for n in members])
    for (_, root), members in chains.items():
        problem = _chain_problem(members)
        if problem is not None:
            report.skipped.append((f"chain {root} ({len(members)} nodes)", problem))
            continue
        there = {n.id: held[n.id] for n in members if n.id in held}
        if not there:
            accepted |= {n.id for n in members}
            out += sorted(members, key=lambda n: n.version)
        elif len(there) == len(members) and all(there[n.id] == n for n in members):
            report.skipped.append((f"chain {root} ({len(members)} nodes)", "already in the store (imported before)"))
        else:
            report.skipped.append(
                (
                    f"chain {root} ({len(members)} nodes)",
                    f"{len(there)} of its nodes are in the store with other content: importing would fork it",
                )
            )
    audit_seen = _existing_audit(store) if any(isinstance(r, AuditEntry) for r in records) else set()
    for r in records:
        if isinstance(r, Offer | KeyRecord | ChainChange) and r.node_id in accepted:
            out.append(r)
        elif isinstance(r, AuditEntry):
            key = dataclasses.astuple(dataclasses.replace(r, seq=0))
            if key not in audit_seen:
                audit_seen.add(key)
                out.append(dataclasses.replace(r, seq=0))
    for r in out:
        report.written[_NAMES[type(r)]] += 1
    return out, report


def _get_many(store: Archive, ids: list[str]) -> dict[str, MemoryNode]:
    found: dict[str, MemoryNode] = {}
    for start in range(0, len(ids), 500):
        found.update(store.get_many(ids[start : start + 500]))
    return found


def import_records(store: Archive, records: list[Record]) -> ImportReport:
    """Check ``records`` against ``store`` (``plan``) and write what passes, in one transaction."""
    accepted, report = plan(store, records)
    if accepted:
        store.import_records(accepted)
    return report


def migrate(source: Archive, target: Archive, *, progress: Callable[[int, int], None] | None = None) -> ImportReport:
    """Every record of ``source`` into ``target`` (``import_records``); ``progress(done, total)``
    while the records are read and written."""
    records: list[Record] = []
    for record in _counted(source.export_records(), progress):
        records.append(record)
    report = import_records(target, records)
    if progress is not None:
        progress(len(records), len(records))
    return report


def _counted(records: Iterator[Record], progress: Callable[[int, int], None] | None) -> Iterator[Record]:
    for i, r in enumerate(records, start=1):
        if progress is not None and i % 1000 == 0:
            progress(i, 0)
        yield r
