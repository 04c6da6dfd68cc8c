"""The tools' published output schemas (``OUTPUT``): the fields a program relies on; the others are open."""

from __future__ import annotations

from typing import Any

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
    "check": _object(["verdict", "confidence"], "", verdict=_S, confidence=_N, in_force=_STRS),
    "review": _object(["id", "changed"], "", id=_S, changed=_B),
    "stats": _object(["nodes"], "", nodes=_I, by_status=_OBJ, chains=_I),
}
