"""How a dataclass's fields are shaped, read once from their declared types: what the SQLite codec
(``adapters/sqlite/codec.py``) and the protobuf converters (``adapters/grpc/convert.py``) both map.

    field_kinds(MemoryNode)   # (FieldKind(name, type, optional, shape, default), ...) in field order

A shape is ``scalar`` (str, int, float, bool), ``enum`` (its value), ``strings`` / ``numbers``
(tuples), ``string_list``, ``relations`` (``dict[str, tuple[str, ...]]``) or ``record`` (a nested
dataclass); ``X | None`` is ``optional``. A type with no shape is a ``TypeError`` naming it.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from enum import Enum
from typing import Any

SCALAR, ENUM, STRINGS, NUMBERS, STRING_LIST, RELATIONS, RECORD = (
    "scalar",
    "enum",
    "strings",
    "numbers",
    "string_list",
    "relations",
    "record",
)


@dataclasses.dataclass(frozen=True, slots=True)
class FieldKind:
    """One dataclass field: its name, its type without ``| None``, and how it is shaped."""

    name: str
    type: Any
    optional: bool
    shape: str  # SCALAR, ENUM, STRINGS (a tuple), NUMBERS (a tuple of floats), STRING_LIST, RELATIONS or RECORD
    default: Any  # the dataclass default (dataclasses.MISSING when there is none)


def _shape(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        if args == (str, ...):
            return STRINGS
        if args == (float, ...):
            return NUMBERS
    elif origin is list:
        if typing.get_args(tp) == (str,):
            return STRING_LIST
    elif origin is dict:
        if typing.get_args(tp) == (str, tuple[str, ...]):
            return RELATIONS
    elif isinstance(tp, type) and issubclass(tp, Enum):
        return ENUM
    elif dataclasses.is_dataclass(tp):
        return RECORD
    elif tp in (str, int, float, bool):
        return SCALAR
    raise TypeError(f"no codec for fields of type {tp!r}: add one in evomem.adapters.fields")


@functools.cache
def field_kinds(cls: type) -> tuple[FieldKind, ...]:
    """The fields of dataclass ``cls``, in declaration order, with how each is shaped."""
    hints = typing.get_type_hints(cls)
    out: list[FieldKind] = []
    for f in dataclasses.fields(cls):
        tp, optional = hints[f.name], False
        if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                raise TypeError(f"{cls.__name__}.{f.name}: only `X | None` unions have a codec")
            tp, optional = args[0], True
        default: Any = f.default
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        out.append(FieldKind(f.name, tp, optional, _shape(tp), default))
    return tuple(out)
