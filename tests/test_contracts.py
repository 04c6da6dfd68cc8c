"""Contract tests: one suite per port, run against the in-process adapter and against the
gRPC client talking to a real server on port 0. This is the proof that the two wirings
(embedded and multi-service) behave the same.

- ``store``: ``SQLiteStore`` on a file, or ``GrpcStore`` -> ``StorageServicer(SQLiteStore(file))``.
- ``extractor``: ``LiteCronista``, or ``GrpcExtractor`` -> ``CronistaServicer(LiteCronista())``.
- ``linker``: ``HeuristicLinker``, or ``GrpcLinker`` -> ``LinkerServicer(HeuristicLinker())``.

Every store test also checks that what the port returned is exactly what the SQLite file
holds (``backing``): for the gRPC wiring that proves the conversion loses nothing. Errors
must arrive as the *same* domain exception class in both wirings, never as ``grpc.RpcError``.
Finally the whole ``MemoryService`` runs one story and a sample of bad inputs on each
wiring, and the outcomes (ids aside) must be identical.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from evomem.adapters.grpc.clients import GrpcExtractor, GrpcLinker, GrpcStore
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.ports import Extractor, Linker, Store
from evomem.domain import cronista
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import (
    Conflict,
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
from evomem.domain.linkers.scored import ScoredLinker
from evomem.domain.model import (
    ID_PATTERN,
    Extraction,
    ExtractionState,
    LinkDecision,
    LinkKind,
    LinkProposal,
    LinkProvenance,
    MemoryNode,
    NewNote,
    Status,
    new_id,
)
from evomem.entrypoints.grpc.server import RunningServer, create_server
from evomem.entrypoints.grpc.servicers import CronistaServicer, LinkerServicer, StorageServicer
from evomem.v1 import cronista_pb2_grpc, linker_pb2_grpc, storage_pb2_grpc

UNKNOWN_ID = new_id(0)  # well-formed, never stored
AGENT = LinkProvenance(method="agent", confidence=1.0, by="alice")
# The note EXTRACTION was taken from: storage accepts an extraction only when every field is a
# span of the note's text (MemoryService.check_note), so notes stored with it use this text.
LEDGER = "We moved the ledger to SQLite because Postgres was overkill; we tried DuckDB, so backups are a file copy."
EXTRACTION = Extraction(
    trigger="because Postgres was overkill",
    change="moved the ledger to SQLite",
    alternatives_tried="tried DuckDB",
    consequences="backups are a file copy",
    summary="Moved the ledger to SQLite.",
    extractor="test/1",
)


# ============================================================================ wirings


def _serve(register: Callable[[Any], None], name: str) -> RunningServer:
    running = create_server("127.0.0.1:0", register, (name,))
    running.set_serving(True)
    return running


@dataclass
class StoreWiring:
    kind: str
    store: Store  # what the test talks to: the port
    backing: SQLiteStore  # the SQLite file behind it, read directly


@pytest.fixture(params=["sqlite", "grpc"])
def wiring(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreWiring]:
    backing = SQLiteStore(tmp_path / "contract.db")
    if request.param == "sqlite":
        yield StoreWiring("sqlite", backing, backing)
        backing.close()
        return
    running = _serve(
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(backing), s),
        "evomem.v1.StorageService",
    )
    client = GrpcStore(f"127.0.0.1:{running.port}")
    yield StoreWiring("grpc", client, backing)
    client.close()
    running.stop(0)
    backing.close()


@pytest.fixture
def store(wiring: StoreWiring) -> Store:
    return wiring.store


@pytest.fixture(params=["lite", "grpc"])
def extractor(request: pytest.FixtureRequest) -> Iterator[Extractor]:
    if request.param == "lite":
        yield LiteCronista()
        return
    running = _serve(
        lambda s: cronista_pb2_grpc.add_CronistaServiceServicer_to_server(CronistaServicer(LiteCronista()), s),
        "evomem.v1.CronistaService",
    )
    client = GrpcExtractor(f"127.0.0.1:{running.port}")
    yield client
    client.close()
    running.stop(0)


def _linker_service(inner: Any) -> Iterator[GrpcLinker]:
    """``inner`` behind a real linker service on loopback, and a client to it."""
    running = _serve(
        lambda s: linker_pb2_grpc.add_LinkerServiceServicer_to_server(LinkerServicer(inner), s),
        "evomem.v1.LinkerService",
    )
    client = GrpcLinker(f"127.0.0.1:{running.port}")
    yield client
    client.close()
    running.stop(0)


@pytest.fixture(params=["heuristic", "grpc"])
def linker(request: pytest.FixtureRequest) -> Iterator[Linker]:
    if request.param == "heuristic":
        yield HeuristicLinker()
        return
    yield from _linker_service(HeuristicLinker())


def raises_exactly(cls: type[EvoMemError], fn: Callable[[], object]) -> EvoMemError:
    """``fn()`` raises exactly ``cls`` (not a parent, not a subclass, not grpc.RpcError)."""
    with pytest.raises(EvoMemError) as info:
        fn()
    assert type(info.value) is cls, f"expected {cls.__name__}, got {type(info.value).__name__}: {info.value}"
    assert info.value.code == cls.code
    assert str(info.value).startswith(f"[{cls.code}] ")
    # The message is the store's own, not a wrapped gRPC status ("[code] [code] ..." or "StatusCode...").
    assert not info.value.message.startswith("[")
    assert "StatusCode" not in info.value.message
    return info.value


def note(text: str, **kw: Any) -> NewNote:
    return NewNote(raw_text=text, **kw)


# ============================================================================ Store contract


def test_both_wirings_implement_the_port(store: Store) -> None:
    assert isinstance(store, Store)


def test_insert_get_round_trip_of_every_field(wiring: StoreWiring) -> None:
    store = wiring.store
    # Relations name nodes that exist, in the note's namespace (storage checks, as remember does).
    r1, r2, r3 = (store.insert(note(f"Related note {i}", namespace="team-a")).id for i in range(3))
    full = NewNote(
        raw_text=LEDGER + " Ünïcode ✓ 台帳",
        namespace="team-a",
        scope="billing",
        tags=("ledger", "db", "v2.1"),  # labels, as remember accepts them (storage checks)
        session="sess-42",
        author="alice",
        relations={"caused_by": (r1,), "see_also": (), "related": (r2, r3)},
        extraction=EXTRACTION,
    )
    node = store.insert(full)
    assert ID_PATTERN.match(node.id)
    assert (node.raw_text, node.namespace, node.scope, node.tags) == (
        full.raw_text,
        "team-a",
        "billing",
        ("ledger", "db", "v2.1"),
    )
    assert (node.session, node.author, node.relations) == ("sess-42", "alice", full.relations)
    assert (node.trigger, node.change, node.alternatives_tried, node.consequences, node.summary) == (
        EXTRACTION.trigger,
        EXTRACTION.change,
        EXTRACTION.alternatives_tried,
        EXTRACTION.consequences,
        EXTRACTION.summary,
    )
    assert (node.extractor, node.extraction_state, node.extraction_attempts) == ("test/1", ExtractionState.DONE, 1)
    assert (node.status, node.version, node.chain_root, node.supersedes, node.superseded_by) == (
        Status.ACTIVE,
        1,
        node.id,
        None,
        None,
    )
    assert node.link is None and node.forgotten_at is None and node.purged_at is None
    assert node.created_at > 0
    assert store.get(node.id) == node == wiring.backing.get(node.id)

    # Optional fields left out stay None / empty, they do not become "" or 0.
    bare = store.insert(NewNote(raw_text="A bare note"))
    assert (bare.scope, bare.session, bare.author, bare.tags, bare.relations) == (None, None, None, (), {})
    assert (bare.extraction_state, bare.extractor, bare.extraction_attempts) == (ExtractionState.PENDING, "", 0)
    assert bare.extraction_error is None
    assert store.get(bare.id) == bare == wiring.backing.get(bare.id)

    # Empty strings: the store keeps them as given; storage's door applies remember's rules,
    # for which an empty scope, session or author is no value (a gRPC caller stores what an
    # MCP caller can, no more).
    empty = store.insert(NewNote(raw_text="Empty labels", scope="", session="", author=""))
    expected = (None, None, None) if wiring.kind == "grpc" else ("", "", "")
    assert (empty.scope, empty.session, empty.author) == expected
    assert store.get(empty.id) == wiring.backing.get(empty.id)


def test_link_provenance_round_trips(wiring: StoreWiring) -> None:
    store = wiring.store
    v1 = store.insert(note("The ledger uses Postgres"))
    prov = LinkProvenance(
        method="heuristic",
        confidence=0.571,
        by="heuristic/1",
        evidence=("change cue: 'moved'", "shared words: ledger, postgres"),
    )
    v2 = store.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=prov)
    assert v2.link is not None
    assert (v2.link.method, v2.link.confidence, v2.link.by, v2.link.evidence) == (
        "heuristic",
        0.571,
        "heuristic/1",
        prov.evidence,
    )
    assert v2.link.requested_id is None  # named the head itself
    assert v2.link.created_at == v2.created_at
    # A link without an author keeps by=None.
    v3 = store.insert(note("Moved the ledger to DuckDB"), supersedes=v2.id, link=LinkProvenance(method="agent"))
    assert v3.link is not None and v3.link.by is None and v3.link.evidence == () and v3.link.confidence == 1.0
    # Superseding without provenance links the chain but records no link.
    v4 = store.insert(note("The ledger uses SQLite again"), supersedes=v3.id)
    assert (v4.supersedes, v4.version, v4.link) == (v3.id, 4, None)
    for n in (v1, v2, v3, v4):
        assert store.get(n.id) == wiring.backing.get(n.id)


def test_supersede_links_after_the_head_and_retargets(wiring: StoreWiring) -> None:
    store = wiring.store
    v1 = store.insert(note("The ledger uses Postgres"))
    v2 = store.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=AGENT)
    assert (v2.supersedes, v2.chain_root, v2.version, v2.status) == (v1.id, v1.id, 2, Status.ACTIVE)
    # v1 is no longer the head: naming it re-targets to the head v2.
    v3 = store.insert(note("Moved the ledger to DuckDB"), supersedes=v1.id, link=AGENT)
    assert (v3.supersedes, v3.chain_root, v3.version) == (v2.id, v1.id, 3)
    assert v3.link is not None and v3.link.requested_id == v1.id
    old1, old2 = store.get(v1.id), store.get(v2.id)
    assert old1 is not None and old2 is not None
    assert (old1.status, old1.superseded_by) == (Status.SUPERSEDED, v2.id)
    assert (old2.status, old2.superseded_by) == (Status.SUPERSEDED, v3.id)
    assert wiring.backing.check_invariants() == []


def test_link_attaches_a_whole_chain_after_the_head(wiring: StoreWiring) -> None:
    store = wiring.store
    a1 = store.insert(note("Deploys go through Jenkins"))
    a2 = store.insert(note("Deploys go through ArgoCD"), supersedes=a1.id, link=AGENT)
    b1 = store.insert(note("Deploys go through Flux"))
    b2 = store.insert(note("Deploys go through Flux v2"), supersedes=b1.id, link=AGENT)
    prov = LinkProvenance(method="agent", confidence=0.9, by="bob", evidence=("manual",))
    linked = store.link(b2.id, a1.id, prov)  # a1 is not the head: attaches after a2
    assert linked.id == b2.id
    assert (linked.chain_root, linked.version, linked.supersedes) == (a1.id, 4, b1.id)
    root_b = store.get(b1.id)
    assert root_b is not None
    assert (root_b.chain_root, root_b.version, root_b.supersedes) == (a1.id, 3, a2.id)
    assert root_b.link is not None
    assert (root_b.link.method, root_b.link.by, root_b.link.confidence, root_b.link.evidence) == (
        "agent",
        "bob",
        0.9,
        ("manual",),
    )
    assert root_b.link.requested_id == a1.id
    assert store.heads([a1.id]) == {a1.id: store.get(b2.id)}
    assert store.heads([b1.id]) == {}  # b1 is no longer a chain root
    assert [n.id for n in store.chain(b2.id, 10)] == [b2.id, b1.id, a2.id, a1.id]
    assert wiring.backing.check_invariants() == []

    # Linking two nodes of the same chain would make a cycle: same error in both wirings.
    err = raises_exactly(CycleError, lambda: store.link(a2.id, b2.id, AGENT))
    assert a2.id in err.message
    raises_exactly(CycleError, lambda: store.link(b2.id, a1.id, AGENT))
    assert wiring.backing.check_invariants() == []


def test_errors_are_the_same_domain_classes(wiring: StoreWiring) -> None:
    store = wiring.store
    a = store.insert(note("Team A keeps its ledger in Postgres", namespace="team-a"))
    b = store.insert(note("Team B keeps its ledger in MySQL", namespace="team-b"))
    before = wiring.backing.stats()

    # NotFound: unknown supersedes target, unknown node to link, unknown target, unknown forget.
    err = raises_exactly(NotFound, lambda: store.insert(note("x"), supersedes=UNKNOWN_ID, link=AGENT))
    assert UNKNOWN_ID in err.message
    raises_exactly(NotFound, lambda: store.link(UNKNOWN_ID, a.id, AGENT))
    raises_exactly(NotFound, lambda: store.link(a.id, UNKNOWN_ID, AGENT))
    raises_exactly(NotFound, lambda: store.forget(UNKNOWN_ID))
    raises_exactly(NotFound, lambda: store.forget(UNKNOWN_ID, purge=True))

    # NamespaceMismatch: supersede or link across namespaces.
    err = raises_exactly(NamespaceMismatch, lambda: store.insert(note("y", namespace="team-b"), supersedes=a.id))
    assert "team-a" in err.message
    raises_exactly(NamespaceMismatch, lambda: store.link(b.id, a.id, AGENT))

    # A failed write leaves nothing behind.
    assert wiring.backing.stats() == before

    # Forgotten: the head of a chain was forgotten.
    c = store.insert(note("Team A moves its ledger to SQLite", namespace="team-a"))
    store.forget(a.id)
    raises_exactly(Forgotten, lambda: store.insert(note("z", namespace="team-a"), supersedes=a.id, link=AGENT))
    raises_exactly(Forgotten, lambda: store.link(c.id, a.id, AGENT))

    # Purged: supersede, link or forget a purged node.
    store.forget(b.id, purge=True)
    raises_exactly(Purged, lambda: store.insert(note("w", namespace="team-b"), supersedes=b.id, link=AGENT))
    raises_exactly(Purged, lambda: store.link(b.id, a.id, AGENT))
    raises_exactly(Purged, lambda: store.forget(b.id))
    raises_exactly(Purged, lambda: store.forget(b.id, purge=True))
    assert wiring.backing.check_invariants() == []


def test_superseding_a_forgotten_version_that_is_not_the_head_retargets(store: Store) -> None:
    v1 = store.insert(note("The ledger uses Postgres"))
    v2 = store.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=AGENT)
    store.forget(v1.id)
    v3 = store.insert(note("Moved the ledger to DuckDB"), supersedes=v1.id, link=AGENT)
    assert (v3.supersedes, v3.version) == (v2.id, 3)


def test_reads_of_unknown_ids(store: Store) -> None:
    assert store.get(UNKNOWN_ID) is None
    assert store.get("not-an-id") is None
    assert store.get("") is None
    assert store.get_many([]) == {}
    assert store.get_many([UNKNOWN_ID]) == {}
    assert store.heads([]) == {}
    assert store.heads([UNKNOWN_ID]) == {}
    assert store.chain(UNKNOWN_ID, 5) == []
    assert store.search([], namespace="default", limit=10) == []


def test_get_many_heads_and_chain(wiring: StoreWiring) -> None:
    store, backing = wiring.store, wiring.backing
    v1 = store.insert(note("The ledger uses Postgres"))
    v2 = store.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=AGENT)
    v3 = store.insert(note("Moved the ledger to DuckDB"), supersedes=v2.id, link=AGENT)
    other = store.insert(note("Payments retry three times"))

    many = store.get_many([v3.id, UNKNOWN_ID, v1.id, v1.id, other.id])
    assert set(many) == {v1.id, v3.id, other.id}
    assert many == backing.get_many([v1.id, v3.id, other.id])
    assert all(many[k].id == k for k in many)

    heads = store.heads([v1.id, other.id, v2.id, UNKNOWN_ID])
    assert {k: n.id for k, n in heads.items()} == {v1.id: v3.id, other.id: other.id}
    assert heads == backing.heads([v1.id, other.id])

    assert [n.id for n in store.chain(v3.id, 5)] == [v3.id, v2.id, v1.id]
    assert [n.id for n in store.chain(v3.id, 1)] == [v3.id, v2.id]
    assert [n.id for n in store.chain(v3.id, 0)] == [v3.id]
    assert [n.id for n in store.chain(v3.id, -3)] == [v3.id]
    assert [n.id for n in store.chain(v2.id, 5)] == [v2.id, v1.id]  # from v2 backwards only
    assert store.chain(v3.id, 5) == backing.chain(v3.id, 5)


def test_search(wiring: StoreWiring) -> None:
    store, backing = wiring.store, wiring.backing
    for i in range(8):
        store.insert(note(f"Filler {i}: the search service caches results in Redis for {i} minutes."))
    pg = store.insert(note("We picked Postgres for the ledger", tags=("ledger",)))
    sq = store.insert(note("We moved the ledger from Postgres to SQLite"), supersedes=pg.id, link=AGENT)
    gone = store.insert(note("The ledger archive lives in S3"))
    store.forget(gone.id)
    elsewhere = store.insert(note("Team B ledger is in MySQL", namespace="team-b"))

    hits = store.search(["ledger", "postgres"], namespace="default", limit=10)
    assert hits == backing.search(["ledger", "postgres"], namespace="default", limit=10)
    assert {h.node_id for h in hits} == {pg.id, sq.id}  # forgotten and other-namespace excluded
    assert all(h.chain_root == pg.id for h in hits)
    assert hits[0].score >= hits[1].score
    assert all(isinstance(h.score, float) and h.score > 0 for h in hits)

    active = store.search(["ledger", "postgres"], namespace="default", limit=10, active_only=True)
    assert [h.node_id for h in active] == [sq.id]
    assert len(store.search(["redis"], namespace="default", limit=3)) == 3
    assert [h.node_id for h in store.search(["ledger"], namespace="team-b", limit=10)] == [elsewhere.id]
    # FTS5 syntax in terms is just words.
    assert store.search(['"ledger', "AND", "NEAR(x"], namespace="default", limit=10) == backing.search(
        ['"ledger', "AND", "NEAR(x"], namespace="default", limit=10
    )
    assert store.search(["nothingmatches"], namespace="default", limit=10) == []


def test_forget_and_purge(wiring: StoreWiring) -> None:
    store, backing = wiring.store, wiring.backing
    ref = store.insert(note("A note the first version relates to"))
    v1 = store.insert(note("The ledger uses Postgres", tags=("ledger",), session="s", relations={"x": (ref.id,)}))
    v2 = store.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=AGENT)

    node, changed = store.forget(v2.id)
    assert changed is True
    assert (node.id, node.status, node.purged_at) == (v2.id, Status.FORGOTTEN, None)
    assert node.forgotten_at is not None and node.raw_text == "Moved the ledger to SQLite"
    node_again, changed_again = store.forget(v2.id)
    assert changed_again is False and node_again == node

    purged, changed = store.forget(v1.id, purge=True)
    assert changed is True
    assert purged.purged_at is not None and purged.forgotten_at is not None
    assert (purged.raw_text, purged.tags, purged.relations, purged.session) == ("", (), {}, None)
    assert purged.status == Status.FORGOTTEN  # was superseded; forgetting marks it forgotten
    assert (purged.superseded_by, purged.chain_root) == (v2.id, v1.id)  # the chain survives
    assert store.get(v1.id) == purged == backing.get(v1.id)
    assert store.search(["postgres"], namespace="default", limit=10) == []

    # Purging a forgotten node still changes it.
    purged2, changed = store.forget(v2.id, purge=True)
    assert changed is True and purged2.purged_at is not None and purged2.raw_text == ""
    assert backing.check_invariants() == []


def test_set_extraction_accepts_a_result_only_for_a_pending_job(wiring: StoreWiring) -> None:
    store, backing = wiring.store, wiring.backing
    n = store.insert(note(LEDGER))
    assert n.extraction_state == ExtractionState.PENDING

    done = store.set_extraction(n.id, EXTRACTION, ExtractionState.DONE)
    assert done is not None
    assert (done.extraction_state, done.extraction_error, done.extractor, done.change, done.extraction_attempts) == (
        ExtractionState.DONE,
        None,
        "test/1",
        EXTRACTION.change,
        1,
    )
    # A second result for a finished job (a late duplicate, or another note's fields) is refused:
    # nothing overwrites a finished extraction.
    with pytest.raises(Conflict, match="not pending"):
        store.set_extraction(n.id, replace(EXTRACTION, change="moved the ledger to DuckDB"), ExtractionState.DONE)
    with pytest.raises(Conflict, match="not pending"):
        store.set_extraction(n.id, None, ExtractionState.FAILED, "late failure")
    assert store.get(n.id) == done == backing.get(n.id)
    assert store.search(["overkill"], namespace="default", limit=5)[0].node_id == n.id

    # A failed job stays failed: marking it failed again updates the error, a result is refused.
    f = store.insert(note(LEDGER + " Failed once."))
    failed = store.set_extraction(f.id, None, ExtractionState.FAILED, "model timed out")
    assert failed is not None
    assert (failed.extraction_state, failed.extraction_error, failed.extraction_attempts, failed.change) == (
        ExtractionState.FAILED,
        "model timed out",
        1,
        "",
    )
    again = store.set_extraction(f.id, None, ExtractionState.FAILED, "gave up")
    assert again is not None and (again.extraction_error, again.extraction_attempts) == ("gave up", 2)
    with pytest.raises(Conflict, match="not pending"):
        store.set_extraction(f.id, EXTRACTION, ExtractionState.DONE)

    # An error without a message, and an empty-string message, are kept apart.
    other = store.insert(note("Another note"))
    no_msg = store.set_extraction(other.id, None, ExtractionState.FAILED)
    assert no_msg is not None and no_msg.extraction_error is None
    blank = store.set_extraction(other.id, None, ExtractionState.FAILED, "")
    assert blank is not None and blank.extraction_error == ""

    # Gone or purged: None, in both wirings.
    assert store.set_extraction(UNKNOWN_ID, EXTRACTION, ExtractionState.DONE) is None
    store.forget(other.id, purge=True)
    assert store.set_extraction(other.id, EXTRACTION, ExtractionState.DONE) is None


def test_pending_extractions(store: Store) -> None:
    a = store.insert(note("first pending: " + LEDGER))
    store.insert(note("already extracted: " + LEDGER, extraction=EXTRACTION))
    c = store.insert(note("second pending"))
    d = store.insert(note("third pending"))
    e = store.insert(note("failed one"))
    store.set_extraction(e.id, None, ExtractionState.FAILED, "boom")
    store.forget(d.id, purge=True)
    assert store.pending_extractions() == [a.id, c.id]
    assert store.pending_extractions(1) == [a.id]
    assert store.pending_extractions(0) == []
    store.set_extraction(a.id, EXTRACTION, ExtractionState.DONE)
    assert store.pending_extractions(10) == [c.id]


def test_stats(wiring: StoreWiring) -> None:
    store, backing = wiring.store, wiring.backing
    empty = store.stats()
    assert empty.by_status == {"active": 0, "superseded": 0, "forgotten": 0}
    assert empty.extraction == {"pending": 0, "done": 0, "failed": 0}
    assert (empty.purged, empty.chains, empty.namespaces) == (0, 0, {})
    assert empty.schema_version == backing.schema_version() >= 1

    v1 = store.insert(note("The ledger uses Postgres"))
    store.insert(note(LEDGER, extraction=EXTRACTION), supersedes=v1.id, link=AGENT)
    store.insert(note("Team B uses MySQL", namespace="team-b"))
    gone = store.insert(note("Forget me", namespace="team-b"))
    store.forget(gone.id, purge=True)

    stats = store.stats()
    assert stats == backing.stats()
    assert stats.by_status == {"active": 2, "superseded": 1, "forgotten": 1}
    assert stats.extraction == {"pending": 3, "done": 1, "failed": 0}
    assert (stats.purged, stats.chains) == (1, 3)
    assert stats.namespaces == {"default": 2, "team-b": 2}
    assert list(stats.namespaces) == ["default", "team-b"]
    assert stats.db_bytes > 0

    team_b = store.stats("team-b")
    assert team_b == backing.stats("team-b")
    assert team_b.by_status == {"active": 1, "superseded": 0, "forgotten": 1}
    assert (team_b.purged, team_b.chains, team_b.namespaces) == (1, 2, {"team-b": 2})
    assert store.stats("") == backing.stats(None)  # "" means every namespace, as in SQLite
    assert store.stats("nobody").namespaces == {}


# ---------------------------------------------------------------------------- across wirings


_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


class Labeller:
    """Replaces ids by labels in order of first appearance, so two runs compare."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return _ULID.sub(lambda m: self.labels.setdefault(m.group(0), f"#{len(self.labels)}"), value)
        if isinstance(value, (list, tuple)):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {self(k): self(v) for k, v in value.items()}
        return value


def node_view(n: MemoryNode | None, lab: Labeller) -> Any:
    """Everything about a node except its timestamps."""
    if n is None:
        return None
    link = None
    if n.link is not None:
        link = (n.link.method, n.link.confidence, n.link.by, n.link.evidence, n.link.requested_id)
    return lab(
        {
            "id": n.id,
            "raw_text": n.raw_text,
            "namespace": n.namespace,
            "scope": n.scope,
            "fields": [n.trigger, n.change, n.alternatives_tried, n.consequences, n.summary],
            "tags": n.tags,
            "session": n.session,
            "author": n.author,
            "relations": n.relations,
            "status": str(n.status),
            "supersedes": n.supersedes,
            "superseded_by": n.superseded_by,
            "chain_root": n.chain_root,
            "version": n.version,
            "link": link,
            "extraction": [str(n.extraction_state), n.extractor, n.extraction_error, n.extraction_attempts],
            "forgotten": n.forgotten_at is not None,
            "purged": n.purged_at is not None,
        }
    )


def store_transcript(store: Store) -> list[Any]:
    """One scripted session on a store; everything it answered, ids labelled."""
    lab = Labeller()
    out: list[Any] = []

    def attempt(fn: Callable[[], Any]) -> Any:
        try:
            value = fn()
        except EvoMemError as exc:
            return ("error", type(exc).__name__, lab(exc.message))
        return ("ok", node_view(value, lab) if isinstance(value, MemoryNode) else lab(value))

    for i in range(6):
        store.insert(note(f"Filler {i}: the search service caches results in Redis for {i} minutes."))
    v1 = store.insert(note("We picked Postgres for the ledger", tags=("ledger",), scope="billing", author="al"))
    v2 = store.insert(note("We moved the ledger from Postgres to SQLite"), supersedes=v1.id, link=AGENT)
    v3 = store.insert(
        note("The ledger moves to DuckDB. " + LEDGER, extraction=EXTRACTION), supersedes=v1.id, link=AGENT
    )
    x = store.insert(note("Payments retry three times", relations={"see_also": (v1.id,)}))
    y = store.insert(note("Payments retry five times"))
    out.append([node_view(n, lab) for n in (v1, v2, v3, x, y)])
    out.append(node_view(store.link(y.id, x.id, LinkProvenance("heuristic", 0.5, "h/1", ("e",))), lab))
    out.append(attempt(lambda: store.link(x.id, y.id, AGENT)))
    out.append(attempt(lambda: store.insert(note("n", namespace="other"), supersedes=v3.id)))
    out.append(attempt(lambda: store.insert(note("n"), supersedes=UNKNOWN_ID)))
    out.append(sorted((lab(k), node_view(n, lab)) for k, n in store.get_many([v1.id, v2.id, x.id, UNKNOWN_ID]).items()))
    out.append(sorted((lab(k), node_view(n, lab)) for k, n in store.heads([v1.id, x.id, y.id]).items()))
    out.append([node_view(n, lab) for n in store.chain(v3.id, 1)])
    for terms, active in ((["ledger", "postgres"], False), (["ledger"], True), (["payments", "retry"], False)):
        hits = store.search(terms, namespace="default", limit=5, active_only=active)
        out.append([(lab(h.node_id), lab(h.chain_root), h.score) for h in hits])
    f = store.forget(v3.id)
    out.append((node_view(f[0], lab), f[1]))
    out.append(attempt(lambda: store.insert(note("n"), supersedes=v2.id, link=AGENT)))
    p = store.forget(x.id, purge=True)
    out.append((node_view(p[0], lab), p[1]))
    out.append(attempt(lambda: store.forget(x.id)))
    out.append(node_view(store.set_extraction(y.id, None, ExtractionState.FAILED, "e1"), lab))
    out.append(node_view(store.set_extraction(x.id, EXTRACTION, ExtractionState.DONE), lab))
    out.append(lab(store.pending_extractions(3)))
    for ns in (None, "default", "other"):
        s = store.stats(ns)
        out.append((s.by_status, s.purged, s.chains, s.extraction, s.namespaces, s.schema_version))
    return out


def test_store_transcripts_are_equal_across_wirings(tmp_path: Path) -> None:
    local = SQLiteStore(tmp_path / "local.db")
    backing = SQLiteStore(tmp_path / "served.db")
    running = _serve(
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(backing), s),
        "evomem.v1.StorageService",
    )
    client = GrpcStore(f"127.0.0.1:{running.port}")
    try:
        embedded = store_transcript(local)
        remote = store_transcript(client)
    finally:
        client.close()
        running.stop(0)
        backing.close()
        local.close()
    assert len(embedded) == len(remote)
    for i, (a, b) in enumerate(zip(embedded, remote, strict=True)):
        assert a == b, f"step {i} differs"
    # The transcript is not vacuous: errors and search scores are in it.
    assert embedded[2][:2] == ("error", "CycleError")
    assert embedded[4][:2] == ("error", "NotFound")
    assert embedded[8] and all(score > 0 for _, _, score in embedded[8])


# ============================================================================ Extractor contract


NOTES = [
    "We moved the ledger from Postgres to SQLite because Postgres was overkill for one writer. "
    "We tried DuckDB first but it could not handle concurrent writes. As a result, backups are now a file copy.",
    "Decided to retry failed payments three times with exponential backoff, since the gateway times out under load.",
    "Switched CI from Jenkins to GitHub Actions; Jenkins kept failing. Builds are now 40% faster.",
    "Ünïcode: the 台帳 service uses SQLite — no more Postgres ✓.",
    "plain words with no cues at all",
    "",
    "   \n\n  ",
    "Line one.\nLine two because reasons.\n\nLine three, which means something.",
    ("We replaced the cache because the cache was too slow. " * 400).strip(),
]


def test_extractor_implements_the_port(extractor: Extractor) -> None:
    assert isinstance(extractor, Extractor)
    assert isinstance(extractor.name, str) and extractor.name


@pytest.mark.parametrize("text", NOTES, ids=[f"note{i}" for i in range(len(NOTES))])
def test_extractor_gives_the_same_extraction(extractor: Extractor, text: str) -> None:
    got = extractor.extract(text)
    assert isinstance(got, Extraction)
    assert got == cronista.extract(text)
    assert got.extractor == LiteCronista.name


def test_extraction_is_not_trivial() -> None:
    """Guard for the test above: the reference fills several fields for the first note."""
    ex = cronista.extract(NOTES[0])
    assert ex.change and ex.trigger and ex.alternatives_tried and ex.consequences and ex.summary


# ============================================================================ Linker contract


def _node(text: str, *, scope: str | None = None, status: Status = Status.ACTIVE, **kw: Any) -> MemoryNode:
    nid = new_id()
    return MemoryNode(id=nid, raw_text=text, scope=scope, status=status, chain_root=nid, **kw)


PG = _node("We picked Postgres for the ledger", tags=("ledger",), author="al", relations={"x": ("A",)})
PAY = _node("Retry failed payments three times with exponential backoff", scope="production")
CACHE = _node("The search cache lives in Redis", status=Status.SUPERSEDED, superseded_by=new_id())
PG_SCOPED = _node("We picked Postgres for the ledger service database", scope="billing")
PG_OPS = _node("We picked Postgres for the ledger service database", scope="ops")

LINK_CASES: list[tuple[str, str, str | None, list[MemoryNode]]] = [
    ("moved", "We moved the ledger from Postgres to SQLite", None, [PAY, PG]),
    # A scoped note never replaces a default-scope decision, even one ranked first.
    (
        "scoped-skips-default",
        "We moved the ledger service database from Postgres to SQLite",
        "billing",
        [PG, PG_SCOPED],
    ),
    ("scope-picks", "We moved the ledger service database from Postgres to SQLite", "billing", [PG_OPS, PG_SCOPED]),
    ("switched", "We switched failed payments retries from exponential backoff to a fixed delay", None, [PG, PAY]),
    ("no-cue", "We picked Postgres for the ledger", None, [PG]),
    ("no-candidates", "We moved the ledger from Postgres to SQLite", None, []),
    ("scope-mismatch", "We switched failed payments retries from exponential backoff", "billing", [PAY]),
    ("not-active", "We moved the search cache from Redis to Memcached", None, [CACHE]),
    ("no-overlap", "We moved the office to Lisbon", None, [PG, PAY]),
]


def test_linker_implements_the_port(linker: Linker) -> None:
    assert isinstance(linker, Linker)
    assert isinstance(linker.name, str) and linker.name


@pytest.mark.parametrize(("case", "text", "scope", "candidates"), LINK_CASES, ids=[c[0] for c in LINK_CASES])
def test_linker_gives_the_same_proposal(
    linker: Linker, case: str, text: str, scope: str | None, candidates: list[MemoryNode]
) -> None:
    expected = HeuristicLinker().propose(text, scope, candidates)
    got = linker.propose(text, scope, candidates)
    assert got == expected
    targets = {"moved": PG, "scoped-skips-default": PG_SCOPED, "scope-picks": PG_SCOPED, "switched": PAY}
    if case in targets:
        assert isinstance(got, LinkProposal)
        assert got.target_id == targets[case].id
        assert got.method == "heuristic" and got.by == HeuristicLinker.name and 0 < got.confidence <= 1
        assert got.evidence
    else:
        assert got is None


@pytest.fixture(params=["scored", "grpc"])
def scored_linker(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The scored linker in-process, and the same linker behind a real linker service."""
    if request.param == "scored":
        yield ScoredLinker()
        return
    yield from _linker_service(ScoredLinker())


LEDGER_AUTH = _node("Decision: the ledger uses Auth0 as its auth provider.")
LEDGER_DB = _node("We picked Postgres for the ledger database because it has managed backups.")
DECIDE_CASES: list[tuple[str, str, str]] = [
    ("link", "We moved the ledger database from Postgres to SQLite.", "link"),
    ("abstain", "From here on the ledger runs on Zorblax.", "abstain"),  # which aspect, nothing says
    ("none", "Ledger Postgres backups took four minutes.", "none"),
]


@pytest.mark.parametrize(("case", "text", "kind"), DECIDE_CASES, ids=[c[0] for c in DECIDE_CASES])
def test_linker_gives_the_same_decision(scored_linker: Any, case: str, text: str, kind: str) -> None:
    """link / abstain (with its candidates) / none cross the linker service unchanged."""
    candidates = [LEDGER_AUTH, LEDGER_DB]
    expected = ScoredLinker().decide(text, None, candidates)
    got = scored_linker.decide(text, None, candidates)
    assert got == expected
    assert got.kind == kind
    if kind == "link":
        assert got.proposal is not None and got.proposal.target_id == LEDGER_DB.id
    if kind == "abstain":
        assert {c for c, _ in got.candidates} == {LEDGER_AUTH.id, LEDGER_DB.id} and got.proposal is None


def test_every_link_kind_maps_to_the_proto_enum_and_back() -> None:
    """LinkKind and linker.proto's LinkDecisionKind name the same three answers; an unknown
    wire value (UNSPECIFIED) and an unknown kind are errors, never a silent "none"."""
    from evomem.adapters.grpc import convert
    from evomem.v1 import linker_pb2

    wire = {v for k, v in linker_pb2.LinkDecisionKind.items() if k != "LINK_DECISION_KIND_UNSPECIFIED"}
    seen = set()
    for kind in LinkKind:
        proposal = LinkProposal("01J0", 0.9, "scored", ("e",), "scored/1") if kind is LinkKind.LINK else None
        decision = LinkDecision(kind=kind, proposal=proposal, candidates=(("01J0", 0.5),), reason="r")
        msg = convert.decision_to_pb(decision, "scored/1")
        seen.add(msg.kind)
        assert convert.decision_from_pb(msg) == decision
    assert seen == wire
    with pytest.raises(ValueError, match="unknown link decision kind"):
        convert.decision_from_pb(linker_pb2.DecideLinkResponse())
    assert LinkDecision(kind="abstain").kind is LinkKind.ABSTAIN  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="LinkKind"):
        LinkDecision(kind="maybe")  # type: ignore[arg-type]


def test_an_abstention_over_the_linker_service_becomes_possible_supersedes(tmp_path: Path) -> None:
    """The gateway's wiring (storage and a scored linker service over gRPC): the linker's
    abstention reaches remember's response and the stored node, as in the embedded server."""
    db = SQLiteStore(tmp_path / "gw.db")
    storage = _serve(
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(db), s),
        "evomem.v1.StorageService",
    )
    gstore, history = GrpcStore(f"127.0.0.1:{storage.port}"), GrpcStore(f"127.0.0.1:{storage.port}")
    linking = _serve(
        lambda s: linker_pb2_grpc.add_LinkerServiceServicer_to_server(
            LinkerServicer(ScoredLinker(lookup=history.get_many)), s
        ),
        "evomem.v1.LinkerService",
    )
    glinker = GrpcLinker(f"127.0.0.1:{linking.port}")
    try:
        svc = MemoryService(gstore, extractor=LiteCronista(), linker=glinker)
        auth = svc.remember(LEDGER_AUTH.raw_text).node
        dbn = svc.remember(LEDGER_DB.raw_text).node
        unsure = svc.remember("From here on the ledger runs on Zorblax.")
        assert unsure.decision is not None and unsure.decision.kind == "abstain"
        assert unsure.linked_to is None and set(unsure.node.possible_supersedes) == {auth.id, dbn.id}
        assert set(db.get(unsure.node.id).possible_supersedes) == {auth.id, dbn.id}  # type: ignore[union-attr]
        sure = svc.remember("We moved the ledger database from Postgres to SQLite.")
        assert sure.linked_to == dbn.id and sure.link is not None and sure.link.method == "scored"
    finally:
        glinker.close()
        gstore.close()
        history.close()
        linking.stop(0)
        storage.stop(0)
        db.close()


def test_an_inferred_scope_reaches_the_pair_linker_over_the_linker_service() -> None:
    """DecideLink carries whether the note's scope was inferred: the pair linker behind a real
    linker service lists the default decision for a note whose scope is a guess, as in-process,
    and rules it out when the caller gave that scope."""
    from evomem.domain.linkers.pair import PairLinker

    inner = PairLinker(None)
    old = MemoryNode(id="N1", raw_text="The analytics-etl repo runs a mypy pre-commit hook on every commit.")
    text = "analytics-etl pre-commit: no mypy hook now; type checking runs only in CI."
    remote = _linker_service(inner)
    client = next(remote)
    try:
        assert client.reads_inferred_scopes
        for inferred in (True, False):
            here = inner.decide(text, "tests", [old], scope_inferred=inferred)
            there = client.decide(text, "tests", [old], scope_inferred=inferred)
            assert (there.kind, there.candidates) == (here.kind, here.candidates)
            assert (old.id in [c for c, _ in there.candidates]) is inferred
    finally:
        next(remote, None)  # the generator closes the client and stops the server


# ============================================================================ MemoryService contract


@dataclass
class ServiceWiring:
    kind: str
    service: MemoryService
    pending: MemoryService  # same store, no extractor: notes stay pending (the gateway's shape)
    worker: MemoryService  # same store, extractor only: runs pending extractions (the worker's shape)


@pytest.fixture(params=["embedded", "services"])
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
        db = SQLiteStore(self.tmp_path / f"{self.kind}.db")
        self._close.append(db.close)
        if self.kind == "embedded":
            store: Store = db
            extractor: Extractor = LiteCronista()
            linker: Linker = HeuristicLinker()
        else:
            servers = [
                _serve(
                    lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(db), s),
                    "evomem.v1.StorageService",
                ),
                _serve(
                    lambda s: cronista_pb2_grpc.add_CronistaServiceServicer_to_server(
                        CronistaServicer(LiteCronista()), s
                    ),
                    "evomem.v1.CronistaService",
                ),
                _serve(
                    lambda s: linker_pb2_grpc.add_LinkerServiceServicer_to_server(LinkerServicer(HeuristicLinker()), s),
                    "evomem.v1.LinkerService",
                ),
            ]
            for running in servers:
                self._close.insert(0, lambda r=running: r.stop(0))
            gstore = GrpcStore(f"127.0.0.1:{servers[0].port}")
            gextractor = GrpcExtractor(f"127.0.0.1:{servers[1].port}")
            glinker = GrpcLinker(f"127.0.0.1:{servers[2].port}")
            self._close[:0] = [gstore.close, gextractor.close, glinker.close]
            store, extractor, linker = gstore, gextractor, glinker
        return ServiceWiring(
            self.kind,
            MemoryService(store, extractor=extractor, linker=linker, config=config),
            MemoryService(store, extractor=None, config=config),
            MemoryService(store, extractor=extractor, config=config),
        )

    def __exit__(self, *exc: object) -> None:
        for close in self._close:
            close()


def service_story(w: ServiceWiring) -> list[Any]:
    """The ledger story and a sample of bad inputs; every outcome, ids labelled, times dropped."""
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
            return (
                value.query,
                value.terms,
                [
                    (
                        node_view(r.head, lab),
                        r.score,
                        [(lab(m.node_id), m.version, m.score, m.is_head, m.fields, m.terms) for m in r.matches],
                        [node_view(h, lab) for h in hist],
                    )
                    for r, hist in value.results
                ],
                value.notes,
            )
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


def test_service_story_is_the_same_in_both_wirings(tmp_path: Path) -> None:
    with build_service_wiring("embedded", tmp_path) as embedded:
        a = service_story(embedded)
    with build_service_wiring("services", tmp_path) as services:
        b = service_story(services)
    assert [e[0] for e in a] == [e[0] for e in b]
    for x, y in zip(a, b, strict=True):
        assert x == y, f"step {x[0]!r} differs between the wirings"
