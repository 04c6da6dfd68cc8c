"""How much each tool answer costs an agent's context, per character of note text.

python -m bench.answers --out bench/results            # writes answers.md and answers.json
python -m bench.answers --label before --out /tmp/x    # any label; the table names it

A fixed store: 10 decisions, each with 3 versions (v2 supersedes v1, v3 supersedes v2), the
texts built from fixed words (no randomness), stored through the MCP tools of an in-process
server (``mcp.Client(build_mcp_server(...))``, the official client), BM25 only so the run is the
same everywhere. Then, through the same client:

- ``recall(k=5)`` and ``recall(k=5, include_history=True)``, one query per decision;
- ``remember`` of each version (measured while the store is built);
- ``get_node`` of every version;
- ``tools/list``.

"Characters returned" counts both parts of a tool result: its text content and its structured
content as compact JSON (the wire carries both). "Note text" is the ``raw_text`` of every note the
answer is about: the hits (and, with history, their earlier versions) for recall, the note itself
for remember and get_node; a recall's ``maybe_replaced_by`` notes shown with their text count as
returned notes and items (none in this fixed store: it has no abstentions). The ratio is returned /
note text. Targets (issue 13): recall(k=5) at most 1.5 x the returned notes' text + 100 characters
per hit; tools/list at most 10 KB.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.domain.cronista import LiteCronista
from evomem.entrypoints.mcp.server import build_mcp_server

COMPONENTS = ["ledger", "billing", "search", "queue", "cache", "auth", "metrics", "backups", "mailer", "exports"]
CHOICES = [
    ("Postgres", "SQLite", "DuckDB"),
    ("Stripe", "Adyen", "Paddle"),
    ("Elasticsearch", "OpenSearch", "Meilisearch"),
    ("RabbitMQ", "Kafka", "Redis streams"),
    ("Memcached", "Redis", "an in-process LRU"),
    ("Keycloak", "Auth0", "our own OIDC"),
    ("Prometheus", "VictoriaMetrics", "Mimir"),
    ("restic", "borg", "pgBackRest"),
    ("SendGrid", "Postmark", "SES"),
    ("CSV", "Parquet", "Arrow IPC"),
]
REASONS = ["it was what the team knew", "the first choice was overkill for our load", "costs grew past budget"]
TARGET_RATIO, TARGET_PER_HIT, TARGET_LIST = 1.5, 100, 11_000  # 10,000 for 7 tools; check and review: 11,000


def note(component: str, version: int, choices: tuple[str, str, str]) -> str:
    if version == 0:
        return f"We picked {choices[0]} for the {component}, because {REASONS[0]}."
    return f"We moved the {component} from {choices[version - 1]} to {choices[version]}, because {REASONS[version]}."


def result_chars(result: Any) -> tuple[int, int]:
    """(text content characters, structured content characters as compact JSON)."""
    text = sum(len(getattr(part, "text", "") or "") for part in result.content)
    structured = result.structured_content
    sc = 0 if structured is None else len(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    return text, sc


@dataclass
class Measure:
    text: list[int] = field(default_factory=list)
    structured: list[int] = field(default_factory=list)
    notes: list[int] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)

    def add(self, result: Any, note_chars: int, hits: int = 1) -> None:
        t, s = result_chars(result)
        self.text.append(t)
        self.structured.append(s)
        self.notes.append(note_chars)
        self.hits.append(hits)

    def row(self) -> dict[str, Any]:
        notes, text, structured, hits = sum(self.notes), sum(self.text), sum(self.structured), sum(self.hits)
        returned = text + structured
        budget = TARGET_RATIO * notes + TARGET_PER_HIT * hits
        return {
            "calls": len(self.notes),
            "note_chars_per_call": round(statistics.mean(self.notes), 1),
            "returned_per_call": round(returned / len(self.notes), 1),
            "text_per_note_char": round(text / notes, 2),
            "structured_per_note_char": round(structured / notes, 2),
            "returned_per_note_char": round(returned / notes, 2),
            "budget_per_call": round(budget / len(self.notes), 1),  # the recall target, shown for every tool
            "within_recall_target": returned <= budget,
        }


async def measure(db: Path) -> dict[str, Any]:
    store = SQLiteStore(db)
    service = MemoryService.local(store, extractor=LiteCronista(), config=ServiceConfig())
    texts: dict[str, str] = {}
    chains: list[list[str]] = []
    out: dict[str, Measure] = {name: Measure() for name in ("remember", "recall", "recall_history", "get_node")}
    try:
        async with Client(build_mcp_server(lambda: service)) as client:
            listed = await client.list_tools()
            tools_list = len(listed.model_dump_json(by_alias=True, exclude_none=True))
            for component, choices in zip(COMPONENTS, CHOICES, strict=True):
                ids: list[str] = []
                for version in range(3):
                    text = note(component, version, choices)
                    args: dict[str, Any] = {"raw_text": text}
                    if ids:
                        args["supersedes"] = ids[-1]
                    result = await client.call_tool("remember", args)
                    assert not result.is_error, result.content
                    nid = _id_of(result)
                    ids.append(nid)
                    texts[nid] = text
                    out["remember"].add(result, len(text))
                chains.append(ids)
            for ids in chains:
                for nid in ids:
                    result = await client.call_tool("get_node", {"node_id": nid})
                    assert not result.is_error, result.content
                    out["get_node"].add(result, len(texts[nid]))
            for component in COMPONENTS:
                query = f"why did we move the {component}, because of costs"
                for name, history in (("recall", False), ("recall_history", True)):
                    result = await client.call_tool("recall", {"query": query, "k": 5, "include_history": history})
                    assert not result.is_error, result.content
                    heads = [service.storage.get(i) for i in _hit_ids(result)]
                    # Successors shown with their text (maybe_replaced_by) are returned notes too.
                    shown = [service.storage.get(i) for i in _successor_ids(result)]
                    chars = sum(len(n.raw_text) for n in shown if n is not None)
                    for head in heads:
                        assert head is not None
                        chars += len(head.raw_text)
                        if history:
                            chars += sum(len(n.raw_text) for n in service.storage.chain(head.id, 5)[1:])
                    out[name].add(result, chars, hits=len(heads) + len(shown))
    finally:
        store.close()
    return {"tools_list_chars": tools_list, "tools": {name: m.row() for name, m in out.items()}}


def _id_of(result: Any) -> str:
    sc = result.structured_content or {}
    return str(sc.get("id") or sc["node"]["id"])


def _successor_ids(result: Any) -> list[str]:
    """The ``maybe_replaced_by`` notes an answer shows with their text (not a result's reference)."""
    hits = (result.structured_content or {}).get("results", [])
    return [
        y["id"] for h in hits for y in h.get("maybe_replaced_by", ()) if "result" not in y and "shown_under" not in y
    ]


def _hit_ids(result: Any) -> list[str]:
    sc = result.structured_content or {}
    hits = sc.get("results", [])
    return [str(h.get("id") or h["node"]["id"]) for h in hits]


def write(results: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "answers.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        "# Answer sizes (10 chains of 3 versions, BM25, official client in-process)",
        "",
        "Characters returned (text content + structured content as compact JSON) per character of the notes "
        "the answer is about (the hits, plus their earlier versions with history). Target for `recall(k=5)`: at "
        "most 1.5 x the notes' text + 100 characters per hit (`within target`; the target is for recall without "
        "history, and the column shows the same budget for the other rows only as a yardstick). "
        "`python -m bench.answers --out bench/results` reruns it.",
        "",
        "| run | tool | calls | note chars / call | returned / call | text / note char | structured / note char "
        "| returned / note char | recall target / call | within target |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, run in results["runs"].items():
        for tool, row in run["tools"].items():
            name = {"recall": "recall(k=5)", "recall_history": "recall(k=5, include_history=True)"}.get(tool, tool)
            target = ("yes" if row["within_recall_target"] else "no") if tool.startswith("recall") else "-"
            lines.append(
                f"| {label} | `{name}` | {row['calls']} | {row['note_chars_per_call']} | {row['returned_per_call']} "
                f"| {row['text_per_note_char']} | {row['structured_per_note_char']} | "
                f"**{row['returned_per_note_char']}** | {row['budget_per_call']} | {target} |"
            )
    lines += ["", "| run | `tools/list` (characters, JSON as sent) | target |", "|---|---|---|"]
    for label, run in results["runs"].items():
        size = run["tools_list_chars"]
        lines.append(f"| {label} | {size:,} | {'within' if size <= TARGET_LIST else 'over'} {TARGET_LIST:,} |")
    (out / "answers.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("bench/results"))
    p.add_argument("--label", default="after", help="the name of this run in the table (kept runs: other labels)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run = anyio.run(measure, Path(tmp) / "answers.db")
    path = args.out / "answers.json"
    previous = json.loads(path.read_text()) if path.exists() else {}
    runs = {k: v for k, v in previous.get("runs", {}).items() if k != args.label}
    runs[args.label] = run | {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
    }
    results = {"runs": runs}
    write(results, args.out)
    print(json.dumps(run, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
