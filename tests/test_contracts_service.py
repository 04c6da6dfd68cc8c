"""The ``MemoryService`` contract: one story and a sample of bad inputs on each wiring of the
whole service, whose outcomes (ids aside) must be identical.

- ``embedded``: ``MemoryService.local(SQLiteStore)``, the lite cronista and the heuristic linker
  in process;
- ``services``: ``MemoryService(GrpcStorage)`` with ``GrpcExtractor`` and ``GrpcLinker``, each
  talking to a real server on port 0 (storage: ``StorageServicer(LocalStorage(SQLiteStore))``);
- ``tantivy``: ``embedded`` with the store's word index on Tantivy (``EVOMEM_WORD_INDEX=tantivy``);
- ``memory``: ``MemoryService.local(MemoryStore)`` (``tests/memory_store.py``): the ``Store``
  port is all the service needs;
- ``postgres``: ``MemoryService.local(PostgresStore)``, the embedded wiring over a real
  PostgreSQL 17 with pgvector (``tests/postgres_server.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from contract_support import UNKNOWN_ID, Labeller, node_view, postgres_store, serve, serve_storage
from memory_store import MemoryStore

from evomem.adapters.grpc.clients import GrpcExtractor, GrpcLinker, GrpcStorage
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.ports import Extractor, Linker, Store
from evomem.app.storage import LocalStorage
from evomem.domain.audit import AuditQuery
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import (
    CycleError,
    EmptyNote,
    EvoMemError,
    Forgotten,
    InvalidArgument,
    InvalidId,
    NamespaceMismatch,
    NoteTooLarge,
    NotFound,
    Purged,
)
from evomem.domain.linkers.heuristic import HeuristicLinker
from evomem.domain.model import ExtractionState, MemoryNode, Status
from evomem.entrypoints.grpc.servicers import CronistaServicer, LinkerServicer
from evomem.v1 import cronista_pb2_grpc, linker_pb2_grpc


@dataclass
class ServiceWiring:
    kind: str
    service: MemoryService
    pending: MemoryService  # same storage, no extractor: notes stay pending (the gateway's shape)
    worker: MemoryService  # same storage, extractor only: runs pending extractions (the worker's shape)


@pytest.fixture(params=["embedded", "services", "tantivy", "memory", "postgres"])
def service_wiring(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServiceWiring]:
    with build_service_wiring(request.param, tmp_path) as w:
        yield w


class build_service_wiring:
    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self._close: list[Callable[[], None]] = []

    def __enter__(self) -> ServiceWiring:
        config = ServiceConfig(max_note_bytes=4096)
        if self.kind != "services":
            store: Store
            if self.kind == "postgres":
                cm = postgres_store()
                store = cm.__enter__()
                self._close.append(lambda: cm.__exit__(None, None, None))
            else:
                words = "tantivy" if self.kind == "tantivy" else "fts5"
                path = self.tmp_path / f"{self.kind}.db"
                store = MemoryStore() if self.kind == "memory" else SQLiteStore(path, word_index=words)
                self._close.append(store.close)
            return ServiceWiring(
                self.kind,
                MemoryService.local(store, extractor=LiteCronista(), linker=HeuristicLinker(), config=config),
                MemoryService.local(store, extractor=None, config=config),
                MemoryService.local(store, extractor=LiteCronista(), config=config),
            )
        db = SQLiteStore(self.tmp_path / f"{self.kind}.db")
        self._close.append(db.close)
        servers = [
            serve_storage(LocalStorage(db)),
            serve(
                lambda s: cronista_pb2_grpc.add_CronistaServiceServicer_to_server(CronistaServicer(LiteCronista()), s),
                "evomem.v1.CronistaService",
            ),
            serve(
                lambda s: linker_pb2_grpc.add_LinkerServiceServicer_to_server(LinkerServicer(HeuristicLinker()), s),
                "evomem.v1.LinkerService",
            ),
        ]
        for running in servers:
            self._close.insert(0, lambda r=running: r.stop(0))
        storage = GrpcStorage(f"127.0.0.1:{servers[0].port}")
        extractor: Extractor = GrpcExtractor(f"127.0.0.1:{servers[1].port}")
        linker: Linker = GrpcLinker(f"127.0.0.1:{servers[2].port}")
        self._close[:0] = [storage.close, extractor.close, linker.close]
        return ServiceWiring(
            self.kind,
            MemoryService(storage, extractor=extractor, linker=linker, config=config),
            MemoryService(storage, extractor=None, config=config),
            MemoryService(storage, extractor=extractor, config=config),
        )

    def __exit__(self, *exc: object) -> None:
        for close in self._close:
            close()


def service_story(w: ServiceWiring, *, scores: bool = True) -> list[Any]:
    """The ledger story and a sample of bad inputs; every outcome, ids labelled, times dropped.
    With ``scores`` False recall's scores and ranking are left out (the memory store does not rank
    by BM25): its results and their matches are compared as sets."""
    svc = w.service
    lab = Labeller()
    out: list[Any] = []

    def step(name: str, fn: Callable[[], Any]) -> Any:
        try:
            value = fn()
        except EvoMemError as exc:
            out.append((name, "error", exc.code, type(exc).__name__, lab(exc.message)))
            return None
        out.append((name, "ok", view(value)))
        return value

    def view(value: Any) -> Any:
        if isinstance(value, MemoryNode) or value is None:
            return node_view(value, lab)
        if hasattr(value, "linked_to"):  # RememberOutcome
            return (node_view(value.node, lab), lab(value.linked_to), lab(value.warnings))
        if hasattr(value, "terms"):  # RecallOutcome
            results = [
                (
                    node_view(r.head, lab),
                    r.score,
                    [(lab(m.node_id), m.version, m.score, m.is_head, m.fields, m.terms) for m in r.matches],
                    [node_view(h, lab) for h in hist],
                )
                for r, hist in value.results
            ]
            if not scores:  # the same results and matches, in any order
                unranked = [(head, None, [(*m[:2], None, *m[3:]) for m in ms], h) for head, _, ms, h in results]
                results = sorted(((head, s, sorted(ms, key=repr), h) for head, s, ms, h in unranked), key=repr)
            return (value.query, value.terms, results, value.notes)
        if hasattr(value, "chain_head"):  # ForgetOutcome
            return (node_view(value.node, lab), value.changed, value.purged, node_view(value.chain_head, lab))
        if isinstance(value, tuple):  # get_node
            node, head, hist = value
            return (node_view(node, lab), node_view(head, lab), [node_view(h, lab) for h in hist])
        if hasattr(value, "by_status"):  # Stats
            return (value.by_status, value.purged, value.chains, value.extraction, value.namespaces)
        return lab(value)

    for i in range(6):
        svc.remember(f"Filler {i}: the search service caches results in Redis for {i} minutes.")
    v1 = step("v1", lambda: svc.remember("We picked Postgres for the ledger", tags=["ledger"], author="alice"))
    v1_id = v1.node.id
    v2 = step(
        "v2",
        lambda: svc.remember(
            "We moved the ledger from Postgres to SQLite, Postgres was overkill",
            supersedes=v1_id,
            tags=["ledger"],
            session="s-1",
        ),
    )
    v3 = step("v3-retarget", lambda: svc.remember("The ledger moves to DuckDB for analytics", supersedes=v1_id))
    pay = step("payments", lambda: svc.remember("Retry failed payments three times with exponential backoff"))
    auto = step(
        "auto-link",
        lambda: svc.remember("We switched failed payments retries from exponential backoff to a fixed delay"),
    )
    step("recall-ledger", lambda: svc.recall("ledger database postgres", include_history=True, history_depth=5))
    step("get-old", lambda: svc.get_node(v1_id, include_history=True))
    step("forget-auto", lambda: svc.forget(auto.node.id))
    step("recall-payments", lambda: svc.recall("payments retry backoff"))
    argo = step("argo", lambda: svc.remember("Deploys go through ArgoCD", scope="infra"))
    flux = step("flux", lambda: svc.remember("Deploys go through Flux", scope="infra", author="bob"))
    step("supersede", lambda: svc.supersede(flux.node.id, argo.node.id, author="carol"))
    rel = step("relations", lambda: svc.remember("Ledger audits run nightly", relations={"caused_by": [v2.node.id]}))
    step("purge-v1", lambda: svc.forget(v1_id, purge=True))
    pending = step("pending", lambda: w.pending.remember("We chose Kafka because queues were too slow"))
    step("run-extraction", lambda: w.worker.run_extraction(pending.node.id))
    step("run-extraction-again", lambda: w.worker.run_extraction(pending.node.id))
    other = step("other-ns", lambda: svc.remember("Team B keeps its ledger in MySQL", namespace="team-b"))

    # Bad inputs: each must fail with the same code and message in both wirings.
    step("bad-empty", lambda: svc.remember("   "))
    step("bad-too-large", lambda: svc.remember("ledger " * 2000))
    step("bad-id", lambda: svc.remember("x", supersedes="not-an-id"))
    step("bad-unknown", lambda: svc.remember("x", supersedes=UNKNOWN_ID))
    step("bad-purged", lambda: svc.remember("x", supersedes=v1_id))
    step("bad-namespace", lambda: svc.remember("x", supersedes=other.node.id))
    step("bad-relation-ns", lambda: svc.remember("x", relations={"caused_by": [other.node.id]}))
    step("bad-forgotten", lambda: svc.remember("x", supersedes=auto.node.id))
    step("bad-self-cycle", lambda: svc.supersede(flux.node.id, flux.node.id))
    step("bad-chain-cycle", lambda: svc.supersede(argo.node.id, flux.node.id))
    step("bad-already", lambda: svc.supersede(flux.node.id, pay.node.id))
    step("bad-forget-unknown", lambda: svc.forget(UNKNOWN_ID))
    step("bad-forget-purged", lambda: svc.forget(v1_id))
    step("bad-get-purged", lambda: svc.get_node(v1_id))
    step("bad-k", lambda: svc.recall("ledger", k=0))
    step("bad-depth", lambda: svc.get_node(v3.node.id, history_depth=True))
    step("bad-query", lambda: svc.recall(42))
    step("recall-after", lambda: svc.recall("ledger", include_history=True))
    step("get-relations", lambda: svc.get_node(rel.node.id))
    step("stats", lambda: svc.stats())
    step("stats-team-b", lambda: svc.stats("team-b"))
    return out


def _by_name(story: list[Any]) -> dict[str, Any]:
    return {entry[0]: entry[1:] for entry in story}


def test_service_story_outcomes(service_wiring: ServiceWiring) -> None:
    """The story has the outcomes the core promises, in each wiring."""
    s = _by_name(service_story(service_wiring))
    assert all(s[k][0] == "ok" for k in s if not k.startswith("bad-")), {k: v for k, v in s.items() if v[0] != "ok"}

    v3_node, v3_linked_to, v3_warnings = s["v3-retarget"][1]
    assert (v3_node["version"], v3_node["link"][0]) == (3, "agent")
    assert v3_linked_to == s["v2"][1][0]["id"]
    assert v3_warnings and "already superseded" in v3_warnings[0]

    auto_node = s["auto-link"][1][0]
    assert auto_node["link"][0] == "heuristic" and auto_node["supersedes"] == s["payments"][1][0]["id"]
    assert auto_node["link"][2] == HeuristicLinker.name
    assert auto_node["extraction"][:2] == ["done", LiteCronista.name]

    recall_results = s["recall-ledger"][1][2]
    assert recall_results[0][0]["id"] == v3_node["id"]
    assert [h["version"] for h in recall_results[0][3]] == [2, 1]

    assert s["supersede"][1]["version"] == 2 and s["supersede"][1]["link"][:3] == ["agent", 1.0, "carol"]
    assert s["purge-v1"][1][2] is True
    assert s["pending"][1][0]["extraction"][0] == "pending"
    assert s["run-extraction"][1]["extraction"][:2] == ["done", LiteCronista.name]
    assert s["run-extraction-again"][1]["extraction"][3] == 1  # idempotent: not extracted twice

    codes = {k: v[1] for k, v in s.items() if k.startswith("bad-")}
    assert codes == {
        "bad-empty": EmptyNote.code,
        "bad-too-large": NoteTooLarge.code,
        "bad-id": InvalidId.code,
        "bad-unknown": NotFound.code,
        "bad-purged": Purged.code,
        "bad-namespace": NamespaceMismatch.code,
        "bad-relation-ns": NamespaceMismatch.code,
        "bad-forgotten": Forgotten.code,
        "bad-self-cycle": CycleError.code,
        "bad-chain-cycle": CycleError.code,
        "bad-already": InvalidArgument.code,
        "bad-forget-unknown": NotFound.code,
        "bad-forget-purged": Purged.code,
        "bad-get-purged": Purged.code,
        "bad-k": InvalidArgument.code,
        "bad-depth": InvalidArgument.code,
        "bad-query": s["bad-query"][1],  # whatever it is, both wirings must agree (next test)
    }
    assert s["bad-query"][0] == "error"
    stats = s["stats"][1]
    assert stats[0] == {"active": 11, "superseded": 3, "forgotten": 2}
    assert stats[1] == 1 and stats[4] == {"default": 15, "team-b": 1}


@pytest.mark.parametrize(
    ("other", "scores", "what"),
    [
        ("services", True, "the wirings"),
        # every outcome, error and message, but for recall's scores:
        ("tantivy", False, "FTS5 and Tantivy"),  # Tantivy's BM25 is summed per field
        ("memory", False, "SQLite and the memory store"),  # word counts, not BM25
        ("postgres", False, "SQLite and PostgreSQL"),  # ts_rank, not BM25
    ],
)
def test_service_story_is_the_same_on_every_wiring(tmp_path: Path, other: str, scores: bool, what: str) -> None:
    """The whole service on each other wiring (the multi-service one, the store's words in Tantivy,
    the memory store, PostgreSQL) answers as the embedded one over SQLite."""
    with build_service_wiring("embedded", tmp_path) as embedded:
        a = service_story(embedded, scores=scores)
    with build_service_wiring(other, tmp_path) as wiring:
        b = service_story(wiring, scores=scores)
    assert [e[0] for e in a] == [e[0] for e in b]
    for x, y in zip(a, b, strict=True):
        assert x == y, f"step {x[0]!r} differs between {what}"


def test_the_service_runs_end_to_end_over_a_memory_store() -> None:
    """``MemoryService.local(MemoryStore())``: remember (linked by the linker, offered, replayed,
    deduplicated), recall, supersede, unlink, forget, purge, extraction and stats, each as over
    SQLite. The ``Store`` port is complete: the service needs nothing else of an engine."""
    store = MemoryStore()
    svc = MemoryService.local(store, extractor=LiteCronista(), linker=HeuristicLinker())
    old = svc.remember("We picked Postgres for the ledger", tags=["ledger"], author="alice")
    assert old.node.extraction_state == ExtractionState.DONE and old.node.tags == ("ledger",)
    new = svc.remember("We moved the ledger from Postgres to SQLite, Postgres was overkill")
    assert new.linked_to == old.node.id and new.link is not None and new.link.method == "heuristic"
    assert svc.remember("We picked Postgres for the ledger", idempotency_key="k").node.id != old.node.id
    assert svc.remember("We picked Postgres for the ledger", idempotency_key="k").outcome == "replayed"
    assert svc.remember("Deploys go through ArgoCD").duplicate_of is None
    assert svc.remember("Deploys go through ArgoCD").duplicate_of is not None

    found = svc.recall("ledger postgres", include_history=True)
    assert found.results[0][0].head.id == new.node.id
    assert [h.id for h in found.results[0][1]] == [old.node.id]

    node, restored = svc.unlink(new.node.id, author="reviewer")
    assert (node.supersedes, node.version, restored.id, restored.status) == (None, 1, old.node.id, Status.ACTIVE)
    assert [a["action"] for a in store.link_audit(new.node.id)] == ["link", "unlink"]
    linked = svc.supersede(new.node.id, old.node.id, author="carol")
    assert (linked.supersedes, linked.version, linked.link.by) == (old.node.id, 2, "carol")  # type: ignore[union-attr]
    assert svc.get_node(old.node.id)[1].id == new.node.id  # type: ignore[union-attr]

    flux = svc.remember("Deploys go through Flux", scope="infra").node
    gone = svc.forget(flux.id)
    assert (gone.changed, gone.purged, gone.node.status) == (True, False, Status.FORGOTTEN)
    purged = svc.forget(old.node.id, purge=True)
    assert purged.purged and purged.file_erased and purged.node.raw_text == ""
    try:
        svc.get_node(old.node.id)
    except Purged:
        pass
    else:
        raise AssertionError("a purged note is not readable")

    pending = MemoryService.local(store).remember("We chose Kafka because queues were too slow").node
    assert store.pending_extractions() == [pending.id]
    done = svc.run_extraction(pending.id)
    assert done is not None and done.extraction_state == ExtractionState.DONE and done.change

    stats = svc.stats()
    assert stats.by_status == {"active": 4, "superseded": 0, "forgotten": 2}  # the old note was purged
    assert (stats.purged, stats.chains, stats.namespaces) == (1, 5, {"default": 6})
    assert stats.extraction == {"pending": 0, "done": 6, "failed": 0}
    assert store.audit_page(AuditQuery()) == []
    assert store.check_invariants() == []
    svc.close()
    assert store.closed
