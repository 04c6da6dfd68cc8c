"""The in-house argument checker (``evomem.entrypoints.mcp.arguments``) agrees with ``jsonschema``.

Every published input schema (the embedded tools and, with auth on, the admin's ``audit``),
checked with a seeded mix of valid and hostile arguments: the same violations (keyword and
path), in the same order, as ``jsonschema``'s Draft 2020-12 validator, which the server no
longer imports on its way to the first answer.
"""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator

from evomem.entrypoints.mcp import arguments
from evomem.entrypoints.mcp.server import build_mcp_server

VALUES: list[Any] = [
    "x", "", "true", "5", 0, 1, -1, 5, 100, 101, 2.0, 2.5, -0.5, 2**70, 1e308, True, False, None,
    [], ["a"], ["a", 1], [None], {}, {"caused_by": ["a"]}, {"caused_by": "a"}, {"a": [1]}, "a" * 300,
    "brief", "full", "everything",
]  # fmt: skip


def schemas() -> dict[str, dict[str, Any]]:
    tools = anyio.run(build_mcp_server(lambda: None).list_tools)
    return {t.name: t.input_schema for t in tools}


def calls(schema: dict[str, Any], rng: random.Random, n: int) -> list[dict[str, Any]]:
    names = [*schema.get("properties", {}), "unknown_argument"]
    out: list[dict[str, Any]] = [{}]
    for _ in range(n):
        picked = rng.sample(names, rng.randint(1, min(4, len(names))))
        out.append({name: rng.choice(VALUES) for name in picked})
    return out


def keyed(errors: Any) -> list[tuple[str, tuple[Any, ...]]]:
    return [(e.validator, tuple(e.absolute_path)) for e in errors]


@pytest.mark.parametrize("tool", sorted(schemas()))
def test_the_checker_finds_what_jsonschema_finds(tool: str) -> None:
    schema = schemas()[tool]
    assert arguments.simple(schema), f"{tool}'s schema uses a keyword the checker leaves to jsonschema"
    reference = Draft202012Validator(schema)
    checker = arguments.Checker(schema)
    rng = random.Random(f"arguments-{tool}")
    for args in calls(schema, rng, 400):
        assert keyed(checker.iter_errors(args)) == keyed(reference.iter_errors(args)), args


def test_a_schema_with_other_keywords_goes_to_jsonschema() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[0-9A-Z]{26}$"}}}
    assert not arguments.simple(schema)
    errors = list(arguments.Checker(schema).iter_errors({"id": "nope"}))
    assert [e.validator for e in errors] == ["pattern"]
