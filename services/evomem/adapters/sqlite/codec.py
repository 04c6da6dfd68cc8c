"""A node's fields, mapped once: SQL columns and the row codec derived from ``MemoryNode``.

    NODE_COLUMNS                      # "id", "raw_text", ..., "link_method", ..., in dataclass order
    node_to_row(node)                 # a tuple, one value per column, for INSERT
    row_to_node(row)                  # a MemoryNode from a row read with NODE_SQL
    row_to_sketch(row)                # a MemoryNode with SKETCH_COLUMNS only (deciding a recall hint)
    row_to_link_sketch(row)           # a MemoryNode with LINK_COLUMNS only (a linker's candidate)
    link_to_columns(link)             # {"link_method": ..., ...}: the link's columns (all None for None)

Every column comes from ``dataclasses.fields(MemoryNode)``; how a value is stored follows its
declared type (``field_kinds``), so adding a plain field to the dataclass needs no edit here:

- ``str``, ``int``, ``float`` and their ``| None``: stored as they are.
- an enum (``Status``, ``ExtractionState``): its value.
- ``tuple[str, ...]``: a JSON list.
- ``dict[str, tuple[str, ...]]`` (relations): a JSON object of lists.
- a nested dataclass (``link: LinkProvenance | None``): flattened into one column per field of
  it, prefixed with the field's name (``link_method``, ``link_evidence``, ...); a NULL in its
  first column is ``None``, a NULL elsewhere is that field's default.

The protobuf converters (``adapters/grpc/convert.py``) read the same ``field_kinds`` (``adapters/fields.py``). The MCP
view (``entrypoints/mcp/answers/``) is written by hand, as the public schema; the parity test
(``tests/test_node_mapping.py``) fails when the dataclass, the proto message, the SQL table
and the view disagree.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from evomem.adapters.fields import ENUM, NUMBERS, RECORD, RELATIONS, STRINGS, FieldKind, field_kinds
from evomem.domain.model import LinkProvenance, MemoryNode, Status
from evomem.domain.remember import LINK_FIELDS

# ---------------------------------------------------------------------------- SQL


def _encoder(kind: FieldKind) -> Callable[[Any], Any]:
    if kind.shape == ENUM:
        return lambda v: None if v is None else v.value
    if kind.shape in (STRINGS, NUMBERS):
        return lambda v: None if v is None else json.dumps(list(v))
    if kind.shape == RELATIONS:
        return lambda v: None if v is None else json.dumps({k: list(ids) for k, ids in v.items()})
    return lambda v: v


def _decoder(kind: FieldKind) -> Callable[[Any], Any]:
    def missing(v: Any) -> Any:  # NULL in a column: None, or the default of a non-optional field
        return None if kind.optional or kind.default is dataclasses.MISSING else kind.default

    if kind.shape == ENUM:
        return lambda v: missing(v) if v is None else kind.type(v)
    if kind.shape in (STRINGS, NUMBERS):
        return lambda v: missing(v) if v is None else tuple(json.loads(v))
    if kind.shape == RELATIONS:
        return lambda v: missing(v) if v is None else {k: tuple(ids) for k, ids in json.loads(v).items()}
    return lambda v: missing(v) if v is None else v


@dataclasses.dataclass(frozen=True, slots=True)
class _Column:
    name: str
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


def _record_columns(kind: FieldKind) -> tuple[_Column, ...]:
    return tuple(_Column(f"{kind.name}_{sub.name}", _encoder(sub), _decoder(sub)) for sub in field_kinds(kind.type))


_NODE_FIELDS = field_kinds(MemoryNode)
_RECORDS = {k.name: _record_columns(k) for k in _NODE_FIELDS if k.shape == RECORD}
_PLAIN = {k.name: _Column(k.name, _encoder(k), _decoder(k)) for k in _NODE_FIELDS if k.shape != RECORD}

#: The ``nodes`` table's columns for a node, in dataclass field order.
NODE_COLUMNS: tuple[str, ...] = tuple(
    c for k in _NODE_FIELDS for c in ([col.name for col in _RECORDS[k.name]] if k.name in _RECORDS else [k.name])
)
#: The column list for SELECT and INSERT.
NODE_SQL = ", ".join(NODE_COLUMNS)


def _record_to_columns(name: str, value: Any) -> list[Any]:
    cols = _RECORDS[name]
    if value is None:
        return [None] * len(cols)
    return [col.encode(getattr(value, col.name[len(name) + 1 :])) for col in cols]


def node_to_row(node: MemoryNode) -> tuple[Any, ...]:
    """One value per ``NODE_COLUMNS`` entry."""
    out: list[Any] = []
    for kind in _NODE_FIELDS:
        value = getattr(node, kind.name)
        if kind.name in _RECORDS:
            out.extend(_record_to_columns(kind.name, value))
        else:
            out.append(_PLAIN[kind.name].encode(value))
    return tuple(out)


_Plan = list[tuple[str, Any, list[tuple[str, int, Callable[[Any], Any], FieldKind]]]]


def _decode_plan() -> _Plan:
    """For each node field: its name, the record type (None for a plain column) and its
    columns' (attribute, position in ``NODE_COLUMNS``, decoder, kind), read by position."""
    at = {name: i for i, name in enumerate(NODE_COLUMNS)}
    plan: _Plan = []
    for kind in _NODE_FIELDS:
        if kind.name in _RECORDS:
            prefix = len(kind.name) + 1
            subs = {k.name: k for k in field_kinds(kind.type)}
            cols = [(c.name[prefix:], at[c.name], c.decode, subs[c.name[prefix:]]) for c in _RECORDS[kind.name]]
            plan.append((kind.name, kind.type, cols))
        else:
            col = _PLAIN[kind.name]
            plan.append((kind.name, None, [(kind.name, at[col.name], col.decode, kind)]))
    return plan


_PLAN = _decode_plan()


def _compile_row_to_node(plan: _Plan) -> Callable[[Any, int], MemoryNode]:
    """``row_to_node`` as one generated function: ``MemoryNode(id=row[o + 0], ...)``, each
    column's decoder called where it does something, and skipped where its answer is known
    without a call: a plain value that may be NULL is itself, a NULL with a default is that
    default, an enum's value is looked up among its members, an empty JSON list or object is
    an empty tuple or dict. The same values as the decoders give (``tests/test_node_mapping``),
    about twice as fast as a loop over the plan (recall reads ~100 nodes, remember ~25)."""
    env: dict[str, Any] = {"MemoryNode": MemoryNode}

    def read(kind: FieldKind, key: str, i: int, decode: Callable[[Any], Any]) -> str:
        cell = f"row[o + {i}]"
        env["d_" + key] = decode
        if kind.shape == ENUM:
            env["m_" + key] = {m.value: m for m in kind.type}
            return f"(m if (m := m_{key}.get({cell})) is not None else d_{key}({cell}))"
        if kind.shape in (STRINGS, NUMBERS):
            return f"(() if (v := {cell}) == '[]' else d_{key}(v))"
        if kind.shape == RELATIONS:
            return f"({{}} if (v := {cell}) == '{{}}' else d_{key}(v))"
        if kind.optional or kind.default is dataclasses.MISSING:
            return cell  # a plain value: a NULL is None
        return f"(v if (v := {cell}) is not None else d_{key}(v))"

    lines = ["def row_to_node(row, offset=0):", "    o = offset", "    return MemoryNode("]
    for name, record, cols in plan:
        if record is None:
            _, i, decode, kind = cols[0]
            lines.append(f"        {name}={read(kind, name, i, decode)},")
            continue
        env["r_" + name] = record
        args = ", ".join(f"{attr}={read(kind, f'{name}_{attr}', i, decode)}" for attr, i, decode, kind in cols)
        lines.append(f"        {name}=None if row[o + {cols[0][1]}] is None else r_{name}({args}),")
    lines.append("    )")
    exec(compile("\n".join(lines), "<row_to_node>", "exec"), env)  # our own field names only
    return env["row_to_node"]  # type: ignore[no-any-return]


_ROW_TO_NODE = _compile_row_to_node(_PLAN)


def row_to_node(row: Any, offset: int = 0) -> MemoryNode:
    """A node from a row whose columns ``offset`` onwards are ``NODE_COLUMNS`` in order (``SELECT
    {NODE_SQL}``), read by position: by name, a ``sqlite3.Row`` lookup per column cost as much as
    decoding them (recall reads ~100 nodes). The decoders of ``_PLAN``, compiled into one
    function (``_compile_row_to_node``)."""
    return _ROW_TO_NODE(row, offset)


def link_to_columns(link: LinkProvenance | None) -> dict[str, Any]:
    """The ``link_*`` columns of a node for ``link`` (every one None when ``link`` is None)."""
    return dict(zip((c.name for c in _RECORDS["link"]), _record_to_columns("link", link), strict=True))


#: What deciding a "may be replaced by" hint reads of a note (``domain.recall.attach_successors``):
#: a sketch, no text, no JSON to decode. The hints shown are read in full afterwards.
SKETCH_COLUMNS = ("id", "namespace", "scope", "created_at", "status", "chain_root", "purged_at")
SKETCH_SQL = ", ".join(SKETCH_COLUMNS)
_STATUS = {s.value: s for s in Status}


def row_to_sketch(row: Any, offset: int = 0) -> MemoryNode:
    """A node with only ``SKETCH_COLUMNS`` (from ``offset`` on, in that order) read; its text is ""."""
    o = offset
    return MemoryNode(
        id=row[o],
        raw_text="",
        namespace=row[o + 1],
        scope=row[o + 2],
        created_at=row[o + 3],
        status=_STATUS[row[o + 4]],
        chain_root=row[o + 5],
        purged_at=row[o + 6],
    )


#: What a linker reads of a candidate (``domain.remember.LINK_FIELDS``: plain columns of the same names).
LINK_COLUMNS = LINK_FIELDS
LINK_SQL = ", ".join(LINK_COLUMNS)


def row_to_link_sketch(row: Any, offset: int = 0) -> MemoryNode:
    """A link sketch (``domain.remember.link_sketch``) from a row of ``LINK_COLUMNS`` (from ``offset`` on)."""
    o = offset
    return MemoryNode(
        id=row[o],
        raw_text=row[o + 1],
        namespace=row[o + 2],
        scope=row[o + 3],
        scope_source=row[o + 4],
        created_at=row[o + 5],
        status=_STATUS[row[o + 6]],
        supersedes=row[o + 7],
        chain_root=row[o + 8],
    )
