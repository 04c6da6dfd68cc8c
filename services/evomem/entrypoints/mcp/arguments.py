"""Strict checking of tool arguments against the published (compact) input schemas.

``compact_input_schema`` makes the schema a tool publishes (no titles, ``X | None`` as a type
list, no unknown argument); ``Checker`` finds its violations; ``schema_error`` and
``pydantic_error`` turn the first one into the ``field: reason`` an error message carries.

The tools' schemas use a handful of JSON Schema keywords (``type``, ``properties``,
``required``, ``additionalProperties``, ``items``, ``enum``, ``minimum``, ``maximum``,
``maxLength``, ``minLength``); ``violations`` checks those here, with JSON Schema's meaning
(``true`` is not an integer, ``2.0`` is, ``1`` is not ``true``), in a few microseconds and
without importing ``jsonschema`` (about 50 ms of a server's start, before its first answer).
A schema that uses any other keyword is checked by ``jsonschema`` itself (draft 2020-12).

A violation carries what ``jsonschema``'s ``ValidationError`` does that the error text needs
(``validator``, ``validator_value``, ``absolute_path``, ``instance``, ``schema``, ``message``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

#: The keywords checked here; "description", "default" and "title" are annotations.
KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "minimum", "maximum"}
    | {"maxLength", "minLength", "description", "default", "title"}
)


@dataclass(frozen=True)
class Violation:
    validator: str
    validator_value: Any
    instance: Any
    schema: dict[str, Any]
    message: str
    absolute_path: tuple[Any, ...] = field(default=())


def _is(instance: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(instance, str)
    if kind == "boolean":
        return isinstance(instance, bool)
    if kind == "integer":
        if isinstance(instance, bool):
            return False
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    if kind == "number":
        return isinstance(instance, int | float) and not isinstance(instance, bool)
    if kind == "array":
        return isinstance(instance, list)
    if kind == "object":
        return isinstance(instance, dict)
    if kind == "null":
        return instance is None
    raise ValueError(f"unknown JSON type {kind!r}")  # pragma: no cover - simple() refuses it


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def simple(schema: Any) -> bool:
    """Whether ``violations`` can check ``schema`` (only the keywords above, known types)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not set(schema) <= KEYWORDS:
        return False
    types = schema.get("type", [])
    known = {"string", "boolean", "integer", "number", "array", "object", "null"}
    if not set([types] if isinstance(types, str) else types) <= known:
        return False
    subs = list(schema.get("properties", {}).values())
    subs += [schema[k] for k in ("additionalProperties", "items") if k in schema]
    return all(simple(s) for s in subs)


def violations(schema: Any, instance: Any, path: tuple[Any, ...] = ()) -> Iterator[Violation]:
    """Every violation of ``schema`` by ``instance``, in the order ``jsonschema`` finds them."""
    if schema is True:
        return
    if schema is False:
        yield Violation("false", False, instance, {}, "False schema does not allow it", path)
        return
    for keyword, value in schema.items():
        if keyword == "type":
            kinds = [value] if isinstance(value, str) else value
            if not any(_is(instance, k) for k in kinds):
                yield Violation("type", value, instance, schema, f"{instance!r} is not of type {value!r}", path)
        elif keyword == "properties" and isinstance(instance, dict):
            for name, sub in value.items():
                if name in instance:
                    yield from violations(sub, instance[name], (*path, name))
        elif keyword == "required" and isinstance(instance, dict):
            for name in value:
                if name not in instance:
                    yield Violation("required", value, instance, schema, f"{name!r} is a required property", path)
        elif keyword == "additionalProperties" and isinstance(instance, dict):
            extra = [k for k in instance if k not in schema.get("properties", {})]
            if value is False:
                if extra:
                    listed = ", ".join(repr(k) for k in sorted(extra))
                    message = f"Additional properties are not allowed ({listed} unexpected)"
                    yield Violation("additionalProperties", value, instance, schema, message, path)
            else:
                for name in extra:
                    yield from violations(value, instance[name], (*path, name))
        elif keyword == "items" and isinstance(instance, list):
            for i, item in enumerate(instance):
                yield from violations(value, item, (*path, i))
        elif keyword == "enum":
            if not any(_equal(instance, option) for option in value):
                yield Violation("enum", value, instance, schema, f"{instance!r} is not one of {value!r}", path)
        elif keyword == "minimum" and _is(instance, "number") and instance < value:
            message = f"{instance!r} is less than the minimum of {value!r}"
            yield Violation(keyword, value, instance, schema, message, path)
        elif keyword == "maximum" and _is(instance, "number") and instance > value:
            message = f"{instance!r} is greater than the maximum of {value!r}"
            yield Violation(keyword, value, instance, schema, message, path)
        elif keyword == "maxLength" and isinstance(instance, str) and len(instance) > value:
            yield Violation(keyword, value, instance, schema, f"{instance!r} is too long", path)
        elif keyword == "minLength" and isinstance(instance, str) and len(instance) < value:
            yield Violation(keyword, value, instance, schema, f"{instance!r} is too short", path)


class Checker:
    """The violations of one tool's input schema, in ``jsonschema``'s order (``iter_errors``)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._fallback: Any = None
        if not simple(schema):  # a keyword not checked here: the reference implementation
            from jsonschema import Draft202012Validator

            self._fallback = Draft202012Validator(schema)

    def iter_errors(self, instance: Any) -> Iterator[Any]:
        if self._fallback is not None:
            return iter(self._fallback.iter_errors(instance))
        return violations(self.schema, instance)


# ---------------------------------------------------------------------------- published schemas and error texts


def compact_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The published input schema, small and strict: no titles, ``X | None`` as a type list,
    no unknown arguments."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        node = {k: walk(v) for k, v in node.items() if k != "title"}
        options = node.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
            (other,) = [o for o in options if o != {"type": "null"}]
            if isinstance(other.get("type"), str):
                node.pop("anyOf")
                merged = {**other, "type": [other["type"], "null"]}
                node = {**merged, **node}
        if node.get("default", 0) is None:
            node.pop("default")
        return node

    out = walk(schema)
    out["additionalProperties"] = False
    return out


_ARTICLE = {"integer": "an integer", "boolean": "a boolean (true or false)", "string": "a string", "array": "an array"}
_ARTICLE |= {"object": "an object", "number": "a number"}


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def schema_error(error: Any) -> str:
    """``field: reason`` for one schema violation (a ``Violation``, or a ``jsonschema`` error for
    a schema with other keywords), without echoing a long value."""
    path = ".".join(str(p) for p in error.absolute_path)
    kind = error.validator
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        return f"{missing}: is required"
    if kind == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"{', '.join(extra)}: not an argument of this tool (see its input schema)"
    where = path or "arguments"
    if kind == "type":
        want = error.validator_value
        names = want if isinstance(want, list) else [want]
        want = " or ".join(_ARTICLE.get(w, w) for w in names)
        return f"{where}: must be {want}, got {_short(error.instance)}"
    if kind in ("minimum", "maximum"):
        low, high = error.schema.get("minimum"), error.schema.get("maximum")
        span = f"from {low} to {high}" if low is not None and high is not None else f"{kind} {error.validator_value}"
        return f"{where}: must be {span}, got {_short(error.instance)}"
    if kind == "enum":
        return f"{where}: must be one of {', '.join(map(str, error.validator_value))}, got {_short(error.instance)}"
    return f"{where}: {error.message[:200]}"


def first_error(checker: Checker, arguments: dict[str, Any]) -> str | None:
    """``field: reason`` for the first violation of ``arguments`` (an unknown argument first,
    then by path), or None when they are valid."""
    errors = sorted(
        checker.iter_errors(arguments),
        key=lambda e: (e.validator != "additionalProperties", [str(p) for p in e.absolute_path]),
    )
    return schema_error(errors[0]) if errors else None


def pydantic_error(exc: ValidationError) -> str:
    """``field: reason`` for the first error of the SDK's own (pydantic) validation."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "arguments"
    return f"{where}: {first['msg']}"
