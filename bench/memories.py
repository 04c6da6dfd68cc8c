"""The memories compared by the quality benchmark, each driven through its real interface.

- ``flat``: every note, no dates. Plain BM25 (``bench.bm25``, pure Python) over the
  scenario's notes; returns the top-k texts.
- ``flat-dates``: the same, each returned note shown with its date (the fair baseline).
- ``evomem-agent``: EvoMem through its MCP tools; the agent passes
  ``remember(supersedes=<id of the previous version>)`` for every note that replaces one.
- ``evomem-auto:<linker>``: EvoMem through its MCP tools with automatic links
  (``--auto-supersede <linker>``); no ``supersedes`` is ever passed. When the linker abstains
  (``link_decision.kind == "abstain"``), the note's ``possible_supersedes`` are recorded.
- ``evomem-auto:<linker>+confirm``: the same, and the agent confirms an abstention with one
  ``supersede`` call when the note's true predecessor is among ``possible_supersedes`` (what an
  agent that reads the warning does; it never links a candidate that is not the true one).
- A hit's ``maybe_replaced_by`` (the newer notes that may replace it: a linker listed the hit
  in their ``possible_supersedes`` and nobody confirmed) reaches the judge too, after the hits, as
  ``Item(text, status="active", date=created_at)``: the agent sees them beside the hit. They are
  kept out of ``ScenarioRun.returned`` and ``via`` (the hit-rate metrics are about the hits) and
  listed in ``ScenarioRun.successors``; one that is itself a hit is referenced, not repeated.
- Every EvoMem hit reaches the judge with the date EvoMem's answer shows for it (``created_at``,
  in the text's head line and the structured content), as ``flat-dates`` shows its notes' dates:
  the judge gives each memory what an agent reading its answer would see.
- a ``+bm25`` suffix: the same EvoMem with ``vectors="off"`` (BM25-only recall and link
  candidates); without a suffix EvoMem runs with its default (``vectors="auto"``: BM25 + vector
  hybrid recall when the embeddings extra is installed).
- an ``@postgres`` suffix (``bench.quality --postgres``): the same EvoMem over PostgreSQL 17 +
  pgvector (``--database-url``, a fresh database per scenario): text search ranked by
  ``ts_rank`` instead of FTS5's BM25, vectors by HNSW; ``evomem-agent@postgres`` and
  ``evomem-agent+bm25@postgres`` set the links as ``evomem-agent`` does, so their ODR measures the
  ranking alone.
- ``oracle``: perfect links. The same BM25 as ``flat``, every hit resolved through the gold
  chains to the version in force and marked active (obsolete versions are never shown).

EvoMem runs behind the official MCP client connected in-process
(``mcp.Client(build_mcp_server(...))``): one MCP session per memory, and behind it a fresh
in-memory SQLite database per scenario (see ``EvoMemMemory.session`` for why not one namespace per
scenario in a shared database). The service is wired by ``evomem.bootstrap.embedded.build_embedded``, exactly as
``evomem-mcp --auto-supersede <linker>`` wires it; a linker name is anything
``evomem.settings.AUTO_SUPERSEDE`` accepts, so a linker added there is benchmarked by name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp import Client

from bench.bm25 import BM25
from bench.judge import Item
from bench.timing import Timings, instrument
from evomem.bootstrap.embedded import build_embedded
from evomem.entrypoints.mcp.server import build_mcp_server
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
    # note -> the notes the linker listed as possible_supersedes when it abstained (None: not in this scenario)
    abstentions: dict[int, list[int | None]] = field(default_factory=dict)
    confirmed: list[tuple[int, int]] = field(default_factory=list)  # abstentions the agent confirmed (in edges too)
    via: dict[str, list[list[str]]] = field(default_factory=dict)  # question id -> per item, searches that found it
    # question id -> the notes shown beside the hits as maybe_replaced_by (unconfirmed successors),
    # judged after the hits (``items`` ends with them) but never counted in ``returned``
    successors: dict[str, list[int | None]] = field(default_factory=dict)
    remembers: int = 0  # remember calls made for the scenario's notes
    # ms per remember that called the automatic linker (None: the memory has no linker): candidate
    # search and decision, and the decision alone
    linker_ms: list[float] | None = None
    linker_decide_ms: list[float] | None = None
    note_embed_ms: list[float] | None = None  # the note's own vector, computed before the linker
    # remembers on which ``--auto-supersede llm`` (the LLM behind this linker) would ask the LLM:
    # the linker was called and abstained, or said none to a note with a change cue
    llm_gate: int = 0
    link_evidence: dict[int, list[str]] = field(default_factory=dict)  # new note -> its link's evidence
    llm_calls: int | None = None  # calls the llm linker made to its model (None: not the llm linker)
    llm_ms: list[float] = field(default_factory=list)  # the time of each of those calls


VECTORS = ("auto", "on", "off")


def scope_label(scope: str) -> str:
    """A scenario's scope as a valid scope label: written by other authors, a scope may hold
    spaces or capitals ("service-desk admins"), which remember refuses; lower-cased, and each
    run of other characters becomes "-" (the same mapping for every note, so scopes stay apart)."""
    label = re.sub(r"[^a-z0-9._:/@-]+", "-", scope.strip().lower()).strip("-")
    return label[:64] or "scope"


#: The pair linker's weights file (None: the shipped one, ``shipped_pair_model``); ``bench.quality --pair-model``.
PAIR_MODEL: str | None = None


def _pair_linker(service: Any, cross: bool) -> Any:
    """The pair linker (``evomem.domain.linkers.pair``) as ``--auto-supersede scored`` wires the
    scored one: the service's embedder and the store's ``get_many``."""
    from evomem.adapters.models.onnx_pair import OnnxPairScorer
    from evomem.adapters.models.pair_weights import load_pair_model, shipped_pair_model
    from evomem.domain.linkers.pair import PairLinker

    model = load_pair_model(PAIR_MODEL, verify=False) if PAIR_MODEL else shipped_pair_model()
    scorer = OnnxPairScorer.shared() if cross else None
    return PairLinker(service.vectors, lookup=service.storage.store.get_many, model=model, cross=scorer)


#: The pair linker's cross-encoder (``linker.cross_encoder``; None: the setting's default);
#: ``bench.quality --cross-encoder``.
CROSS_ENCODER: bool | None = None

#: Linkers the benchmark wires itself until ``evomem.settings`` knows them: name -> factory(service).
#: (The pair linker is ``--auto-supersede pair`` now; ``_pair_linker`` serves ``--pair-model``.)
BENCH_LINKERS: dict[str, Any] = {}


def available_linkers() -> list[str]:
    """Linkers that run without outside services (the llm linker needs an endpoint)."""
    return [m for m in AUTO_SUPERSEDE if m not in ("off", "llm")] + [
        m for m in BENCH_LINKERS if m not in AUTO_SUPERSEDE
    ]


def _bench_wired(linker: str | None) -> bool:
    return linker is not None and linker in BENCH_LINKERS and linker not in AUTO_SUPERSEDE


@dataclass(frozen=True)
class LLMEndpoint:
    """What ``--auto-supersede llm`` needs: a model at an OpenAI-compatible endpoint."""

    model: str
    base_url: str
    timeout_s: float = 30


def has_vectors_setting() -> bool:
    """Whether this evomem has the ``vectors`` setting (hybrid BM25 + vector recall)."""
    try:
        from evomem.settings import env_names
    except ImportError:  # an evomem from before the one settings model
        return any(f.name == "vectors" for f in dataclasses.fields(Settings))
    return "EVOMEM_VECTORS" in env_names()


def memory_label(linker: str | None, *, vectors: str = "auto", confirm: bool = False, engine: str = "sqlite") -> str:
    """``evomem-agent``, ``evomem-auto:scored+confirm``, ``evomem-agent+bm25``, ``evomem-agent@postgres``..."""
    name = "evomem-agent" if linker is None else f"evomem-auto:{linker}"
    if confirm:
        name += "+confirm"
    return name + {"auto": "", "on": "+hybrid", "off": "+bm25"}[vectors] + ("" if engine == "sqlite" else f"@{engine}")


#: The PostgreSQL server of a run (``bench.postgres.BenchPostgres``; ``bench.quality --postgres``).
POSTGRES: Any = None


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
    """EvoMem through the MCP tools, in-process. ``linker`` None: the agent sets the links.

    ``vectors``: EvoMem's ``vectors`` setting (``auto``, ``on``: BM25 + vector hybrid recall,
    ``off``: BM25 only). ``confirm_abstentions``: when the linker abstains and the note's true
    predecessor is among ``possible_supersedes``, call ``supersede`` with it (one call, as an
    agent would). ``sets``: the scenario sets this memory runs on (None: all).
    """

    kind = "evomem"

    def __init__(
        self,
        *,
        linker: str | None = None,
        scope_field: bool = True,
        label: str | None = None,
        statuses: bool = True,
        vectors: str = "auto",
        confirm_abstentions: bool = False,
        sets: Sequence[str] | None = None,
        llm: LLMEndpoint | None = None,
        engine: str = "sqlite",
    ) -> None:
        if engine == "postgres" and POSTGRES is None:
            raise BenchError("@postgres memories need a PostgreSQL server: bench.quality --postgres")
        self.engine = engine
        if linker == "llm" and llm is None:
            raise BenchError("the llm linker needs an endpoint: --llm-model M --llm-base-url URL")
        if linker is not None and linker != "llm" and linker not in available_linkers():
            raise BenchError(f"unknown linker {linker!r}; available: {', '.join(available_linkers()) or 'none'}")
        self.llm = llm
        if vectors not in VECTORS:
            raise BenchError(f"vectors must be one of {', '.join(VECTORS)}, got {vectors!r}")
        if vectors != "auto" and not has_vectors_setting():
            raise BenchError(f"this evomem has no vectors setting, so vectors={vectors!r} cannot be benchmarked")
        if confirm_abstentions and linker is None:
            raise BenchError("confirm_abstentions needs an automatic linker")
        self.linker = linker
        self.scope_field = scope_field
        self.statuses = statuses  # read every still-valid note back with get_node (off for very large sets)
        self.vectors = vectors
        self.confirm = confirm_abstentions
        self.sets = None if sets is None else frozenset(sets)
        self.name = label or memory_label(linker, vectors=vectors, confirm=confirm_abstentions, engine=engine)
        self._client: Client | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._current: _CurrentService | None = None
        self._embedder: Any = None
        # the last scenario's service, kept when its session ends for its timings (``add_timings``)
        self._last_service: Any = None
        self._timings: Timings | None = None  # the last scenario's linker cost (bench.timing)

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
        """A fresh database behind the MCP server, for one scenario: a file in a temporary
        folder, as ``evomem-mcp --db`` runs (an in-memory database shares one cache between
        connections, which serialises the two halves of the hybrid search), removed after.

        One database per scenario, not one namespace per scenario in a shared database: FTS5's
        bm25 statistics are table-wide, so in a shared database the ranking (of recall and of the
        linker's candidates) in one namespace would depend on which other scenarios were loaded.
        When it ends, ``add_timings`` can still read the linker's timings (``bench.timing``).
        """
        assert self._current is not None, "use the memory inside 'async with'"
        folder = tempfile.mkdtemp(prefix="evomem-bench-")
        url = None
        if self.engine == "postgres":  # a database of its own: ts_rank has no corpus statistics, but the same rule
            url = POSTGRES.migrated(f"q_{abs(hash(folder)) % 10**12}")
        settings = self.settings(db=f"{folder}/evomem.db", database_url=url)
        service = build_embedded(settings)
        self._share_embedder(service)
        if _bench_wired(self.linker):
            service.linker = BENCH_LINKERS[self.linker](service)
        elif self.linker == "pair" and PAIR_MODEL:  # bench.quality --pair-model: other weights
            service.linker = _pair_linker(service, settings.linker.cross_encoder)
        self._timings = instrument(service)  # the linker's cost per remember, measured from outside
        self._current.service = service
        self._last_service = service
        try:
            yield self
        finally:
            self._current.service = None
            with contextlib.suppress(Exception):
                service.close()  # type: ignore[attr-defined]
            shutil.rmtree(folder, ignore_errors=True)
            if url is not None:
                with contextlib.suppress(Exception):
                    POSTGRES.drop(url)

    def _share_embedder(self, service: Any) -> None:
        """One loaded embedding model per memory, not one per scenario (loading it takes ~1 s, a
        scenario's notes ~0.2 s). The model is stateless, so sharing it changes no result; each
        scenario keeps its own vector index, in its own database."""
        semantic = getattr(service, "vectors", None)
        embedder = getattr(semantic, "embedder", None)
        if embedder is None:
            return
        if self._embedder is None or getattr(self._embedder, "name", None) != getattr(embedder, "name", None):
            self._embedder = embedder
        else:
            semantic.embedder = self._embedder  # type: ignore[union-attr]

    def settings(self, db: str = ":memory:", database_url: str | None = None) -> Settings:
        linker = "off" if _bench_wired(self.linker) else self.linker
        kw: dict[str, Any] = {"db": db, "auto_supersede": linker or "off"}
        if database_url is not None:
            kw["database_url"] = database_url
        if CROSS_ENCODER is not None:
            kw["linker_cross_encoder"] = CROSS_ENCODER
        if has_vectors_setting():
            kw["vectors"] = self.vectors
        if self.linker == "llm" and self.llm is not None:
            llm = self.llm
            kw.update(linker_model=llm.model, linker_base_url=llm.base_url, linker_timeout_s=llm.timeout_s)
        return Settings(**kw)

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
            run = await self._run(scenario, ns, k)
        self.add_timings(run)
        return run

    def add_timings(self, run: ScenarioRun) -> None:
        """The last scenario's linker time per remember into ``run`` (``bench.timing``): candidate
        search and decision of every remember that called the linker (a remember with no candidate
        never calls it), the decision alone, the note's own embedding, and the llm linker's model calls."""
        timings = self._timings
        if self.linker is None or timings is None:
            return
        run.linker_ms = list(timings.linker_ms)
        run.linker_decide_ms = list(timings.decide_ms)
        run.note_embed_ms = list(timings.embed_ms)
        run.llm_calls = len(timings.llm_ms) if timings.llm else None
        run.llm_ms = list(timings.llm_ms)

    @staticmethod
    def _source(scenario: Mapping[str, Any], back: Mapping[str, int], node: Mapping[str, Any]) -> str | None:
        """The scenario note a returned node is (by its id): answers cut a long note's text."""
        i = back.get(node.get("id", ""))
        return None if i is None else scenario["notes"][i]["text"]

    def _linker_calls(self) -> int:
        return len(self._timings.linker_ms) if self._timings is not None else 0

    async def _run(self, scenario: Mapping[str, Any], ns: str, k: int) -> ScenarioRun:
        ids: dict[int, str] = {}
        back: dict[str, int] = {}
        edges: list[tuple[int, int]] = []
        methods: dict[int, str] = {}
        abstentions: dict[int, list[int | None]] = {}
        confirmed: list[tuple[int, int]] = []
        llm_gate = 0
        notes: Any = scenario["notes"]
        if len(notes) > 1000:  # the external sets: one scenario of thousands of notes
            from tqdm import tqdm

            notes = tqdm(notes, desc=f"{self.name} remember", unit="note", leave=False, file=sys.stderr)
        for note in notes:
            args: dict[str, Any] = {"raw_text": note["text"], "namespace": ns}
            if self.scope_field and note["scope"]:
                args["scope"] = scope_label(note["scope"])
            if self.linker is None and note["supersedes"] is not None:
                args["supersedes"] = ids[note["supersedes"]]
            calls = self._linker_calls()
            out = await self.call("remember", args)
            opened = _opens_llm_gate(out.get("link_decision") or {}, note["text"], self.linker)
            if self.linker is not None and self._linker_calls() > calls and opened:
                llm_gate += 1
            ids[note["i"]] = out["id"]
            back[out["id"]] = note["i"]
            if out.get("supersedes"):
                edges.append((note["i"], back[out["supersedes"]]))
                methods[note["i"]] = (out.get("link") or {}).get("method", "?")
            decision = out.get("link_decision") or {}
            if decision.get("kind") == "abstain":
                listed = out.get("possible_supersedes") or [c.get("id") for c in decision.get("candidates", [])]
                abstentions[note["i"]] = [back.get(c) for c in listed if isinstance(c, str)]
                gold = note["supersedes"]
                if self.confirm and gold is not None and gold in abstentions[note["i"]]:
                    done = await self.call("supersede", {"node_id": out["id"], "supersedes": ids[gold]})
                    edges.append((note["i"], back[done["supersedes"]]))
                    confirmed.append(edges[-1])
                    methods[note["i"]] = "agent-confirmed"
        run = ScenarioRun(
            items={},
            edges=edges,
            link_methods=methods,
            statuses={} if self.statuses else None,
            abstentions=abstentions,
            confirmed=confirmed,
            remembers=len(ids),
            llm_gate=llm_gate,
        )
        for q in scenario["questions"]:
            out = await self.call("recall", {"query": q["text"], "k": k, "namespace": ns, "detail": "full"})
            hits = out["results"]
            run.items[q["id"]] = [
                Item(h["raw_text"], h["status"], h.get("created_at"), source=self._source(scenario, back, h))
                for h in hits
            ]
            run.returned[q["id"]] = [back.get(h["id"]) for h in hits]
            run.via[q["id"]] = [list((h.get("matched") or {}).get("via") or ["bm25"]) for h in hits]
            # The newer notes shown beside a hit (maybe_replaced_by): the agent sees them too, after
            # the hits; one that is itself a hit is only referenced there ("result"), not repeated.
            shown = [y for h in hits for y in h.get("maybe_replaced_by") or () if "raw_text" in y]
            run.items[q["id"]] += [
                Item(y["raw_text"], status="active", date=y.get("created_at"), source=self._source(scenario, back, y))
                for y in shown
            ]
            run.successors[q["id"]] = [back.get(y["id"]) for y in shown]
        for note in scenario["notes"] if self.statuses else ():
            if note["valid_at_question"]:
                got = await self.call("get_node", {"node_id": ids[note["i"]]})
                run.statuses[note["i"]] = got["status"]  # type: ignore[index]
        return run


def _opens_llm_gate(decision: Mapping[str, Any], text: str, linker: str | None = "scored") -> bool:
    """Whether a cascade with this linker in front would ask the LLM after its decision: behind
    the pair linker (``--auto-supersede llm``) ``pair_unsure`` (it abstained); behind the scored
    one ``unsure_or_cued`` (an abstention, or none for a cued note)."""
    from evomem.domain.linkers.cascade import pair_unsure, unsure_or_cued
    from evomem.domain.model import LinkDecision

    kind = decision.get("kind")
    gate = pair_unsure if linker in ("pair", "llm") else unsure_or_cued
    return kind in ("link", "abstain", "none") and gate(LinkDecision(kind=kind), text, None, [])


def can_abstain(linker: str) -> bool:
    """Whether the linker can abstain (``Linker.abstains``: the heuristic never does)."""
    from evomem.bootstrap.linkers import linker_for

    if linker == "llm" or _bench_wired(linker):  # the LLM behind the pair linker
        return True
    built = linker_for(linker)
    return built is not None and built.abstains


#: The set on which every EvoMem memory also runs with ``vectors="off"`` (hybrid against BM25 alone).
PARA_SET = "para"


def build_memories(
    names: Sequence[str] | None = None,
    *,
    linkers: Sequence[str] = ("heuristic",),
    scope_field: bool = True,
    sets: Sequence[str] | None = None,
    confirm: bool = True,
    llm: LLMEndpoint | None = None,
) -> list[Any]:
    """The memories of one run, in report order. ``names`` filters them (``evomem-auto`` = every linker).

    ``confirm``: add ``evomem-auto:<linker>+confirm`` for every linker that can abstain. When
    ``sets`` includes the paraphrase set (and evomem has the ``vectors`` setting), every EvoMem
    memory gets a ``+bm25`` twin that runs on that set only. ``llm``: the endpoint for the
    ``llm`` linker (needed when ``linkers`` has it).
    """
    bm25_twins = (sets is None or PARA_SET in sets) and has_vectors_setting()

    def evomem(linker: str | None) -> list[Any]:
        kw: dict[str, Any] = {"linker": linker, "scope_field": scope_field, "llm": llm}
        out: list[Any] = [EvoMemMemory(**kw)]
        if confirm and linker is not None and can_abstain(linker):
            out.append(EvoMemMemory(**kw, confirm_abstentions=True))
        if bm25_twins:  # with PostgreSQL beside it, on every set: BM25 against ts_rank, words alone
            twin_sets = None if (POSTGRES is not None and linker is None) else (PARA_SET,)
            out.append(EvoMemMemory(**kw, vectors="off", sets=twin_sets))
        return out

    all_memories: list[Any] = [FlatMemory(dates=False), FlatMemory(dates=True), *evomem(None)]
    if POSTGRES is not None:  # the agent's links on PostgreSQL: the same memory, its engine's ranking
        all_memories.append(EvoMemMemory(scope_field=scope_field, engine="postgres"))
        if has_vectors_setting():
            all_memories.append(EvoMemMemory(scope_field=scope_field, vectors="off", engine="postgres"))
    for lk in linkers:
        all_memories += evomem(lk)
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
