"""The memories compared by the quality benchmark, each driven through its real interface.

- ``flat``: every note, no dates. Plain BM25 (``bench.bm25``, pure Python) over the
  scenario's notes; returns the top-k texts.
- ``flat-dates``: the same, each returned note shown with its date (the fair baseline).
- ``evomem-agent``: EvoMem through its MCP tools; the agent passes
  ``remember(supersedes=<id of the previous version>)`` for every note that replaces one.
- ``evomem-auto:<linker>``: EvoMem through its MCP tools with automatic links
  (``--auto-supersede <linker>``); no ``supersedes`` is ever passed.
- ``oracle``: perfect links. The same BM25 as ``flat``, every hit resolved through the gold
  chains to the version in force and marked active (obsolete versions are never shown).

EvoMem runs behind the official MCP client connected in-process
(``mcp.Client(build_mcp_server(...))``): one MCP session per memory, and behind it a fresh
in-memory SQLite database per scenario (see ``EvoMemMemory.session`` for why not one namespace per
scenario in a shared database). The service is wired by ``evomem.bootstrap.build_embedded``, exactly as
``evomem-mcp --auto-supersede <linker>`` wires it; a linker name is anything
``evomem.settings.AUTO_SUPERSEDE`` accepts, so a linker added there is benchmarked by name.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp import Client

from bench.bm25 import BM25
from bench.judge import Item
from evomem.bootstrap import build_embedded
from evomem.entrypoints.mcp_tools import build_mcp_server
from evomem.settings import AUTO_SUPERSEDE, Settings

K = 5


class BenchError(RuntimeError):
    pass


@dataclass
class ScenarioRun:
    """What one memory did with one scenario."""

    items: dict[str, list[Item]]  # question id -> what the memory returned
    returned: dict[str, list[int | None]] = field(default_factory=dict)  # question id -> note index per item
    edges: list[tuple[int, int]] | None = None  # (new note, note it superseded), as the memory linked them
    link_methods: dict[int, str] = field(default_factory=dict)  # new note -> link method
    statuses: dict[int, str] | None = None  # note -> final status (None: the memory has no status)


def available_linkers() -> list[str]:
    """Linkers that run without outside services (the llm linker needs an endpoint)."""
    return [m for m in AUTO_SUPERSEDE if m not in ("off", "llm")]


def _index(scenario: Mapping[str, Any]) -> dict[str, int]:
    return {n["text"]: n["i"] for n in scenario["notes"]}


class FlatMemory:
    """BM25 over all the notes; with ``dates`` each item shows the note's date."""

    def __init__(self, *, dates: bool) -> None:
        self.dates = dates
        self.name = "flat-dates" if dates else "flat"
        self.kind = "flat"

    async def __aenter__(self) -> FlatMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def run(self, scenario: Mapping[str, Any], k: int = K) -> ScenarioRun:
        notes = scenario["notes"]
        bm25 = BM25([n["text"] for n in notes])
        out = ScenarioRun(items={})
        for q in scenario["questions"]:
            top = bm25.top(q["text"], k)
            out.items[q["id"]] = [Item(notes[i]["text"], date=notes[i]["date"] if self.dates else None) for i, _ in top]
            out.returned[q["id"]] = [i for i, _ in top]
        return out


class OracleMemory:
    """Perfect links: BM25 hits resolved through the gold chains to the version in force."""

    name = "oracle"
    kind = "oracle"

    async def __aenter__(self) -> OracleMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def run(self, scenario: Mapping[str, Any], k: int = K) -> ScenarioRun:
        notes = scenario["notes"]
        successor = {n["supersedes"]: n["i"] for n in notes if n["supersedes"] is not None}

        def head(i: int) -> int:
            while i in successor:
                i = successor[i]
            return i

        bm25 = BM25([n["text"] for n in notes])
        edges = [(n["i"], n["supersedes"]) for n in notes if n["supersedes"] is not None]
        statuses = {n["i"]: ("superseded" if n["i"] in successor else "active") for n in notes}
        out = ScenarioRun(items={}, edges=edges, statuses=statuses)
        for q in scenario["questions"]:
            heads: list[int] = []
            for i, _ in bm25.top(q["text"], len(notes)):
                h = head(i)
                if h not in heads:
                    heads.append(h)
                if len(heads) == k:
                    break
            out.items[q["id"]] = [Item(notes[h]["text"], status="active") for h in heads]
            out.returned[q["id"]] = heads
        return out


class _CurrentService:
    """Stands for the scenario's service: one MCP session per memory, a fresh database per scenario."""

    def __init__(self) -> None:
        self.service: Any = None

    def __getattr__(self, name: str) -> Any:
        if self.service is None:
            raise BenchError("no scenario is open (call tools inside memory.session())")
        return getattr(self.service, name)


class EvoMemMemory:
    """EvoMem through the MCP tools, in-process. ``linker`` None: the agent sets the links."""

    kind = "evomem"

    def __init__(
        self, *, linker: str | None = None, scope_field: bool = True, label: str | None = None, statuses: bool = True
    ) -> None:
        if linker is not None and linker not in available_linkers():
            raise BenchError(f"unknown linker {linker!r}; available: {', '.join(available_linkers()) or 'none'}")
        self.linker = linker
        self.scope_field = scope_field
        self.statuses = statuses  # read every still-valid note back with get_node (off for very large sets)
        self.name = label or ("evomem-agent" if linker is None else f"evomem-auto:{linker}")
        self._client: Client | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._current: _CurrentService | None = None

    async def __aenter__(self) -> EvoMemMemory:
        self._current = _CurrentService()
        self._stack = contextlib.AsyncExitStack()
        current = self._current
        self._client = await self._stack.enter_async_context(
            Client(build_mcp_server(lambda: current), read_timeout_seconds=60)  # type: ignore[arg-type, return-value]
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._stack is not None:
            await self._stack.aclose()
        self._stack = None
        self._client = None

    @contextlib.contextmanager
    def session(self) -> Iterator[EvoMemMemory]:
        """A fresh database (in memory) behind the MCP server, for one scenario.

        One database per scenario, not one namespace per scenario in a shared database: FTS5's
        bm25 statistics are table-wide, so in a shared database the ranking (of recall and of the
        linker's candidates) in one namespace would depend on which other scenarios were loaded.
        """
        assert self._current is not None, "use the memory inside 'async with'"
        service = build_embedded(Settings(db=":memory:", auto_supersede=self.linker or "off"))
        self._current.service = service
        try:
            yield self
        finally:
            self._current.service = None
            with contextlib.suppress(Exception):
                service.store.close()  # type: ignore[attr-defined]

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        assert self._client is not None, "use the memory inside 'async with'"
        result = await self._client.call_tool(tool, args)
        if result.is_error or result.structured_content is None:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            raise BenchError(f"{self.name}: {tool} failed: {text or 'no structured content'}")
        return result.structured_content

    async def run(self, scenario: Mapping[str, Any], k: int = K) -> ScenarioRun:
        ns = f"{scenario['set']}{scenario['index']}"
        with self.session():
            return await self._run(scenario, ns, k)

    async def _run(self, scenario: Mapping[str, Any], ns: str, k: int) -> ScenarioRun:
        ids: dict[int, str] = {}
        back: dict[str, int] = {}
        edges: list[tuple[int, int]] = []
        methods: dict[int, str] = {}
        notes: Any = scenario["notes"]
        if len(notes) > 1000:  # the external sets: one scenario of thousands of notes
            from tqdm import tqdm

            notes = tqdm(notes, desc=f"{self.name} remember", unit="note", leave=False, file=sys.stderr)
        for note in notes:
            args: dict[str, Any] = {"raw_text": note["text"], "namespace": ns}
            if self.scope_field and note["scope"]:
                args["scope"] = note["scope"]
            if self.linker is None and note["supersedes"] is not None:
                args["supersedes"] = ids[note["supersedes"]]
            out = await self.call("remember", args)
            ids[note["i"]] = out["id"]
            back[out["id"]] = note["i"]
            if out.get("supersedes"):
                edges.append((note["i"], back[out["supersedes"]]))
                methods[note["i"]] = (out.get("link") or {}).get("method", "?")
        run = ScenarioRun(items={}, edges=edges, link_methods=methods, statuses={} if self.statuses else None)
        for q in scenario["questions"]:
            out = await self.call("recall", {"query": q["text"], "k": k, "namespace": ns})
            hits = out["results"]
            run.items[q["id"]] = [Item(h["node"]["raw_text"], status=h["node"]["status"]) for h in hits]
            run.returned[q["id"]] = [back.get(h["node"]["id"]) for h in hits]
        for note in scenario["notes"] if self.statuses else ():
            if note["valid_at_question"]:
                got = await self.call("get_node", {"node_id": ids[note["i"]]})
                run.statuses[note["i"]] = got["node"]["status"]  # type: ignore[index]
        return run


def build_memories(
    names: Sequence[str] | None = None, *, linkers: Sequence[str] = ("heuristic",), scope_field: bool = True
) -> list[Any]:
    """The memories of one run, in report order. ``names`` filters them (``evomem-auto`` = every linker)."""
    all_memories: list[Any] = [FlatMemory(dates=False), FlatMemory(dates=True), EvoMemMemory(scope_field=scope_field)]
    all_memories += [EvoMemMemory(linker=lk, scope_field=scope_field) for lk in linkers]
    all_memories.append(OracleMemory())
    if not names:
        return all_memories
    wanted = set(names)
    unknown = wanted - {m.name for m in all_memories} - {"evomem-auto"}
    if unknown:
        raise BenchError(f"unknown memory {sorted(unknown)}; known: {', '.join(m.name for m in all_memories)}")
    return [
        m for m in all_memories if m.name in wanted or ("evomem-auto" in wanted and m.name.startswith("evomem-auto"))
    ]
