"""The development scenarios' note texts (``lab/devdata/dev-*.jsonl``), for the tests that compare the
pair linker's readings and features on real notes (``conftest.scenarios`` reads them once per run)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

DEVDATA = Path(__file__).resolve().parents[1] / "devdata"


@functools.cache
def scenario_texts() -> tuple[tuple[str, ...], ...]:
    """Each development scenario's note texts, in order, file by file."""
    out = []
    for path in sorted(DEVDATA.glob("dev-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(tuple(n["text"] for n in json.loads(line)["notes"]))
    return tuple(out)
