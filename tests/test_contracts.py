"""Contract tests of the storage engines: the ``Store`` port on ``SQLiteStore``, on
``MemoryStore`` (``tests/memory_store.py``, written from ``evomem.app.ports`` alone: the port is
complete) and on ``PostgresStore`` (a real PostgreSQL 17 with pgvector, ``postgres_server.py``),
and the node records both storage ports share (``Records``) on those three and on the
``Storage`` wirings, ``LocalStorage(SQLiteStore)`` and ``GrpcStorage`` over a real storage
service on port 0 (``contract_support``).

Every test also checks that what the port returned is exactly what the store behind it holds
(``backing``): for the gRPC wiring that proves the conversion loses nothing. Errors must arrive
as the *same* domain exception class in every wiring, never as ``grpc.RpcError``.

The ``Storage`` port's own operations are in ``test_contracts_storage.py``, the ``MemoryService``
story on each wiring in ``test_contracts_service.py``, the extractor and linker contracts in
``test_contracts_models.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from contract_support import (
    AGENT,
    EXTRACTION,
    LEDGER,
    STORAGES,
    STORES,
    UNKNOWN_ID,
    Labeller,
    Wiring,
    node_view,
    note,
    open_wiring,
    postgres_store,
    raises_exactly,
)
from memory_store import MemoryStore
from memory_store import sketch as fusion_sketch

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.ports import Records, Storage, Store
from evomem.domain.errors import (
    Conflict,
    CycleError,
    EvoMemError,
    Forgotten,
    NamespaceMismatch,
    NotFound,
    Purged,
)
from evomem.domain.model import (
    ID_PATTERN,
    ExtractionState,
    LinkProvenance,
    MemoryNode,
    NewNote,
    Status,
)
from evomem.domain.remember import link_sketch


@pytest.fixture(params=STORES)
def wiring(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Wiring]:
    """The ``Store`` port: ``SQLiteStore``, ``MemoryStore`` and ``PostgresStore``."""
    with open_wiring(request.param, tmp_path) as w:
        yield w


@pytest.fixture
def store(wiring: Wiring) -> Store:
    return wiring.port


@pytest.fixture(params=STORES + STORAGES)
def records(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Wiring]:
    """What ``Store`` and ``Storage`` share: the two stores, and the two storage wirings."""
    with open_wiring(request.param, tmp_path) as w:
        yield w


# ============================================================================ Store contract
# (``records`` tests run on the Storage wirings too; ``wiring`` and ``store`` tests on the stores only)


def test_every_wiring_implements_its_port(records: Wiring) -> None:
    assert isinstance(records.port, Records)
    assert isinstance(records.port, Store) is (records.kind in STORES)
    assert isinstance(records.port, Storage) is (records.kind in STORAGES)


def test_writes_in_one_millisecond_keep_their_order(wiring: Wiring, monkeypatch: pytest.MonkeyPatch) -> None:
    """Notes written within one millisecond get increasing created_at and ids in write order (the
    premise check reads 'later' from created_at, recency from ids); an imported id far ahead of
    the clock is not followed."""
    import memory_store

    from evomem.adapters.postgres import store as pg_store
    from evomem.adapters.sqlite import store as sqlite_store
    from evomem.domain.model import FOLLOW_MS, id_ms

    frozen = 1_800_000_000_000
    for module in (sqlite_store, pg_store, memory_store):
        monkeypatch.setattr(module, "now_ms", lambda: frozen)
    nodes = [wiring.insert(note(f"Standup moves to room {k}.")) for k in range(5)]
    created = [n.created_at for n in nodes]
    assert created == [frozen + k for k in range(5)]
    assert [n.id for n in nodes] == sorted(n.id for n in nodes)
    assert [id_ms(n.id) for n in nodes] == created
    assert FOLLOW_MS >= 5


def test_insert_get_round_trip_of_every_field(records: Wiring) -> None:
    wiring, store = records, records.port
    # Relations name nodes that exist, in the note's namespace (storage checks, as remember does).
    r1, r2, r3 = (wiring.insert(note(f"Related note {i}", namespace="team-a")).id for i in range(3))
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
    node = wiring.insert(full)
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
    bare = wiring.insert(NewNote(raw_text="A bare note"))
    assert (bare.scope, bare.session, bare.author, bare.tags, bare.relations) == (None, None, None, (), {})
    assert (bare.extraction_state, bare.extractor, bare.extraction_attempts) == (ExtractionState.PENDING, "", 0)
    assert bare.extraction_error is None
    assert store.get(bare.id) == bare == wiring.backing.get(bare.id)

    # Empty strings: the store keeps them as given; storage's door applies remember's rules,
    # for which an empty scope, session or author is no value (a gRPC caller stores what an
    # MCP caller can, no more).
    empty = wiring.insert(NewNote(raw_text="Empty labels", scope="", session="", author=""))
    expected = (None, None, None) if wiring.kind == "grpc" else ("", "", "")
    assert (empty.scope, empty.session, empty.author) == expected
    assert store.get(empty.id) == wiring.backing.get(empty.id)


def test_link_provenance_round_trips(records: Wiring) -> None:
    wiring, store = records, records.port
    v1 = wiring.insert(note("The ledger uses Postgres"))
    prov = LinkProvenance(
        method="heuristic",
        confidence=0.571,
        by="heuristic/1",
        evidence=("change cue: 'moved'", "shared words: ledger, postgres"),
    )
    v2 = wiring.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=prov)
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
    v3 = wiring.insert(note("Moved the ledger to DuckDB"), supersedes=v2.id, link=LinkProvenance(method="agent"))
    assert v3.link is not None and v3.link.by is None and v3.link.evidence == () and v3.link.confidence == 1.0
    # Superseding without provenance links the chain but records no link.
    v4 = wiring.insert(note("The ledger uses SQLite again"), supersedes=v3.id)
    assert (v4.supersedes, v4.version, v4.link) == (v3.id, 4, None)
    for n in (v1, v2, v3, v4):
        assert store.get(n.id) == wiring.backing.get(n.id)


def test_supersede_links_after_the_head_and_retargets(records: Wiring) -> None:
    wiring, store = records, records.port
    v1 = wiring.insert(note("The ledger uses Postgres"))
    v2 = wiring.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=AGENT)
    assert (v2.supersedes, v2.chain_root, v2.version, v2.status) == (v1.id, v1.id, 2, Status.ACTIVE)
    # v1 is no longer the head: naming it re-targets to the head v2.
    v3 = wiring.insert(note("Moved the ledger to DuckDB"), supersedes=v1.id, link=AGENT)
    assert (v3.supersedes, v3.chain_root, v3.version) == (v2.id, v1.id, 3)
    assert v3.link is not None and v3.link.requested_id == v1.id
    old1, old2 = store.get(v1.id), store.get(v2.id)
    assert old1 is not None and old2 is not None
    assert (old1.status, old1.superseded_by) == (Status.SUPERSEDED, v2.id)
    assert (old2.status, old2.superseded_by) == (Status.SUPERSEDED, v3.id)
    assert wiring.backing.check_invariants() == []


def test_link_attaches_a_whole_chain_after_the_head(records: Wiring) -> None:
    wiring, store = records, records.port
    a1 = wiring.insert(note("Deploys go through Jenkins"))
    a2 = wiring.insert(note("Deploys go through ArgoCD"), supersedes=a1.id, link=AGENT)
    b1 = wiring.insert(note("Deploys go through Flux"))
    b2 = wiring.insert(note("Deploys go through Flux v2"), supersedes=b1.id, link=AGENT)
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


def test_errors_are_the_same_domain_classes(records: Wiring) -> None:
    wiring, store = records, records.port
    a = wiring.insert(note("Team A keeps its ledger in Postgres", namespace="team-a"))
    b = wiring.insert(note("Team B keeps its ledger in MySQL", namespace="team-b"))
    before = wiring.backing.stats()

    # NotFound: unknown supersedes target, unknown node to link, unknown target, unknown forget.
    err = raises_exactly(NotFound, lambda: wiring.insert(note("x"), supersedes=UNKNOWN_ID, link=AGENT))
    assert UNKNOWN_ID in err.message
    raises_exactly(NotFound, lambda: store.link(UNKNOWN_ID, a.id, AGENT))
    raises_exactly(NotFound, lambda: store.link(a.id, UNKNOWN_ID, AGENT))
    raises_exactly(NotFound, lambda: store.forget(UNKNOWN_ID))
    raises_exactly(NotFound, lambda: store.forget(UNKNOWN_ID, purge=True))

    # NamespaceMismatch: supersede or link across namespaces.
    err = raises_exactly(NamespaceMismatch, lambda: wiring.insert(note("y", namespace="team-b"), supersedes=a.id))
    assert "team-a" in err.message
    raises_exactly(NamespaceMismatch, lambda: store.link(b.id, a.id, AGENT))

    # A failed write leaves nothing behind.
    assert wiring.backing.stats() == before

    # Forgotten: the head of a chain was forgotten.
    c = wiring.insert(note("Team A moves its ledger to SQLite", namespace="team-a"))
    store.forget(a.id)
    raises_exactly(Forgotten, lambda: wiring.insert(note("z", namespace="team-a"), supersedes=a.id, link=AGENT))
    raises_exactly(Forgotten, lambda: store.link(c.id, a.id, AGENT))

    # Purged: supersede, link or forget a purged node.
    store.forget(b.id, purge=True)
    raises_exactly(Purged, lambda: wiring.insert(note("w", namespace="team-b"), supersedes=b.id, link=AGENT))
    raises_exactly(Purged, lambda: store.link(b.id, a.id, AGENT))
    raises_exactly(Purged, lambda: store.forget(b.id))
    raises_exactly(Purged, lambda: store.forget(b.id, purge=True))
    assert wiring.backing.check_invariants() == []


def test_superseding_a_forgotten_version_that_is_not_the_head_retargets(records: Wiring) -> None:
    wiring, store = records, records.port
    v1 = wiring.insert(note("The ledger uses Postgres"))
    v2 = wiring.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=AGENT)
    store.forget(v1.id)
    v3 = wiring.insert(note("Moved the ledger to DuckDB"), supersedes=v1.id, link=AGENT)
    assert (v3.supersedes, v3.version) == (v2.id, 3)


def test_reads_of_unknown_ids(records: Wiring) -> None:
    store = records.port
    assert store.get(UNKNOWN_ID) is None
    assert store.get("not-an-id") is None
    assert store.get("") is None
    assert store.heads([]) == {}
    assert store.heads([UNKNOWN_ID]) == {}
    assert store.chain(UNKNOWN_ID, 5) == []


def test_store_reads_of_unknown_ids(store: Store) -> None:
    assert store.get_many([]) == {}
    assert store.get_many([UNKNOWN_ID]) == {}
    assert store.search([], namespace="default", limit=10) == []


def _ledger_chain(wiring: Wiring) -> tuple[MemoryNode, MemoryNode, MemoryNode, MemoryNode]:
    v1 = wiring.insert(note("The ledger uses Postgres"))
    v2 = wiring.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=AGENT)
    v3 = wiring.insert(note("Moved the ledger to DuckDB"), supersedes=v2.id, link=AGENT)
    return v1, v2, v3, wiring.insert(note("Payments retry three times"))


def test_get_many(wiring: Wiring) -> None:
    store, backing = wiring.port, wiring.backing
    v1, _, v3, other = _ledger_chain(wiring)
    many = store.get_many([v3.id, UNKNOWN_ID, v1.id, v1.id, other.id])
    assert set(many) == {v1.id, v3.id, other.id}
    assert many == backing.get_many([v1.id, v3.id, other.id])
    assert all(many[k].id == k for k in many)


def test_link_sketches_are_the_nodes_as_far_as_a_linker_reads_them(wiring: Wiring) -> None:
    """``link_sketches``: the ``LINK_FIELDS`` of the nodes that exist, the other fields at their defaults."""
    store = wiring.port
    v1, _, v3, _ = _ledger_chain(wiring)
    rich = wiring.insert(
        note("Billing retries twice", scope="billing", tags=("billing", "retries"), scope_source="explicit")
    )
    assert store.link_sketches([]) == {}
    sketches = store.link_sketches([v3.id, UNKNOWN_ID, v1.id, v1.id, rich.id])
    full = store.get_many([v1.id, v3.id, rich.id])
    assert sketches == {i: link_sketch(n) for i, n in full.items()}
    assert sketches[rich.id].scope == "billing" and sketches[rich.id].tags == ()
    assert sketches[v3.id].supersedes and sketches[v1.id].status is Status.SUPERSEDED


def test_sketches_are_the_nodes_as_far_as_fusing_reads_them(wiring: Wiring) -> None:
    """``sketches``: ``SKETCH_COLUMNS`` of the nodes that exist (purged ones included), no text,
    the other fields at their defaults: what ``app.recall.hybrid`` reads of the nearest notes."""
    store = wiring.port
    v1, _, v3, other = _ledger_chain(wiring)
    scoped = wiring.insert(note("Billing retries twice", scope="billing", tags=("billing",)))
    gone = wiring.insert(note("The cache is Redis"))
    store.forget(gone.id, purge=True)
    assert store.sketches([]) == {}
    sketches = store.sketches([v3.id, UNKNOWN_ID, v1.id, v1.id, scoped.id, gone.id])
    full = store.get_many([v1.id, v3.id, scoped.id, gone.id])
    assert sketches == {i: fusion_sketch(n) for i, n in full.items()}
    assert sketches[v3.id].chain_root == v1.id and sketches[v1.id].status is Status.SUPERSEDED
    assert sketches[scoped.id].scope == "billing" and not sketches[scoped.id].raw_text and not sketches[scoped.id].tags
    assert sketches[gone.id].purged and sketches[gone.id].status is Status.FORGOTTEN
    assert other.id not in sketches


def test_heads_and_chain(records: Wiring) -> None:
    store, backing = records.port, records.backing
    v1, v2, v3, other = _ledger_chain(records)
    heads = store.heads([v1.id, other.id, v2.id, UNKNOWN_ID])
    assert {k: n.id for k, n in heads.items()} == {v1.id: v3.id, other.id: other.id}
    assert heads == backing.heads([v1.id, other.id])

    assert [n.id for n in store.chain(v3.id, 5)] == [v3.id, v2.id, v1.id]
    assert [n.id for n in store.chain(v3.id, 1)] == [v3.id, v2.id]
    assert [n.id for n in store.chain(v3.id, 0)] == [v3.id]
    assert [n.id for n in store.chain(v3.id, -3)] == [v3.id]
    assert [n.id for n in store.chain(v2.id, 5)] == [v2.id, v1.id]  # from v2 backwards only
    assert store.chain(v3.id, 5) == backing.chain(v3.id, 5)


def test_search(wiring: Wiring) -> None:
    store, backing = wiring.port, wiring.backing
    for i in range(8):
        wiring.insert(note(f"Filler {i}: the search service caches results in Redis for {i} minutes."))
    pg = wiring.insert(note("We picked Postgres for the ledger", tags=("ledger",)))
    sq = wiring.insert(note("We moved the ledger from Postgres to SQLite"), supersedes=pg.id, link=AGENT)
    gone = wiring.insert(note("The ledger archive lives in S3"))
    store.forget(gone.id)
    elsewhere = wiring.insert(note("Team B ledger is in MySQL", namespace="team-b"))

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


def test_forget_and_purge(records: Wiring) -> None:
    wiring, store, backing = records, records.port, records.backing
    ref = wiring.insert(note("A note the first version relates to"))
    v1 = wiring.insert(note("The ledger uses Postgres", tags=("ledger",), session="s", relations={"x": (ref.id,)}))
    v2 = wiring.insert(note("Moved the ledger to SQLite"), supersedes=v1.id, link=AGENT)

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
    assert wiring.found(["postgres"]) == []

    # Purging a forgotten node still changes it.
    purged2, changed = store.forget(v2.id, purge=True)
    assert changed is True and purged2.purged_at is not None and purged2.raw_text == ""
    assert backing.check_invariants() == []


def test_set_extraction_accepts_a_result_only_for_a_pending_job(records: Wiring) -> None:
    wiring, store, backing = records, records.port, records.backing
    n = wiring.insert(note(LEDGER))
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
    assert wiring.found(["overkill"])[0] == n.id

    # A failed job stays failed: marking it failed again updates the error, a result is refused.
    f = wiring.insert(note(LEDGER + " Failed once."))
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
    other = wiring.insert(note("Another note"))
    no_msg = store.set_extraction(other.id, None, ExtractionState.FAILED)
    assert no_msg is not None and no_msg.extraction_error is None
    blank = store.set_extraction(other.id, None, ExtractionState.FAILED, "")
    assert blank is not None and blank.extraction_error == ""

    # Gone or purged: None, in both wirings.
    assert store.set_extraction(UNKNOWN_ID, EXTRACTION, ExtractionState.DONE) is None
    store.forget(other.id, purge=True)
    assert store.set_extraction(other.id, EXTRACTION, ExtractionState.DONE) is None


def test_pending_extractions(records: Wiring) -> None:
    wiring, store = records, records.port
    a = wiring.insert(note("first pending: " + LEDGER))
    wiring.insert(note("already extracted: " + LEDGER, extraction=EXTRACTION))
    c = wiring.insert(note("second pending"))
    d = wiring.insert(note("third pending"))
    e = wiring.insert(note("failed one"))
    store.set_extraction(e.id, None, ExtractionState.FAILED, "boom")
    store.forget(d.id, purge=True)
    assert store.pending_extractions() == [a.id, c.id]
    assert store.pending_extractions(1) == [a.id]
    assert store.pending_extractions(0) == []
    store.set_extraction(a.id, EXTRACTION, ExtractionState.DONE)
    assert store.pending_extractions(10) == [c.id]


def test_stats(records: Wiring) -> None:
    wiring, store, backing = records, records.port, records.backing
    empty = store.stats()
    assert empty.by_status == {"active": 0, "superseded": 0, "forgotten": 0}
    assert empty.extraction == {"pending": 0, "done": 0, "failed": 0}
    assert (empty.purged, empty.chains, empty.namespaces) == (0, 0, {})
    assert empty.schema_version == backing.schema_version() >= 1

    v1 = wiring.insert(note("The ledger uses Postgres"))
    wiring.insert(note(LEDGER, extraction=EXTRACTION), supersedes=v1.id, link=AGENT)
    wiring.insert(note("Team B uses MySQL", namespace="team-b"))
    gone = wiring.insert(note("Forget me", namespace="team-b"))
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


def test_insert_once_answers_an_earlier_call(wiring: Wiring) -> None:
    """A key used before answers its node (another text: Conflict; purged: Purged); without a
    key, an identical active note of the namespace and scope within the window answers it."""
    store = wiring.port
    first, outcome = store.insert_once(note(LEDGER), idempotency_key="k1")
    assert outcome == "inserted"
    again, outcome = store.insert_once(note(LEDGER), idempotency_key="k1")
    assert (again, outcome) == (first, "replayed")
    assert store.insert_once(note(LEDGER, namespace="team-b"), idempotency_key="k1")[1] == "inserted"
    raises_exactly(Conflict, lambda: store.insert_once(note("Another text"), idempotency_key="k1"))
    store.forget(first.id, purge=True)
    raises_exactly(Purged, lambda: store.insert_once(note(LEDGER), idempotency_key="k1"))

    plain, _ = store.insert_once(note("Deploys go through ArgoCD", scope="infra"), dedupe_window_ms=60_000)
    same, outcome = store.insert_once(note("Deploys go through ArgoCD", scope="infra"), dedupe_window_ms=60_000)
    assert (same.id, outcome) == (plain.id, "duplicate")
    assert store.insert_once(note("Deploys go through ArgoCD"), dedupe_window_ms=60_000)[1] == "inserted"  # scope
    assert store.insert_once(note("Deploys go through ArgoCD", scope="infra"))[1] == "inserted"  # no window
    assert wiring.backing.check_invariants() == []


def test_possible_successors(wiring: Wiring) -> None:
    """The notes that list a candidate in their possible_supersedes: likeliest first, at most
    ``limit``, in the namespace; forgetting or linking one drops it."""
    store = wiring.port
    old = store.insert_once(note("We picked Postgres for the ledger"))[0]
    offers = {"possible_supersedes": (old.id,), "possible_supersedes_why": ("same topic",)}
    low = store.insert_once(note("The ledger might use SQLite", **offers, possible_supersedes_confidence=(0.2,)))[0]
    high = store.insert_once(note("The ledger may use DuckDB", **offers, possible_supersedes_confidence=(0.7,)))[0]
    bare = store.insert_once(note("The ledger could use MySQL", possible_supersedes=(old.id,)))[0]
    found = store.possible_successors([old.id, UNKNOWN_ID], namespace="default")
    assert list(found) == [old.id]
    assert [(s.node.id, s.reason, s.confidence, s.position) for s in found[old.id]] == [
        (high.id, "same topic", 0.7, 0),
        (low.id, "same topic", 0.2, 0),
        (bare.id, None, None, 0),
    ]
    assert [s.node.id for s in store.possible_successors([old.id], namespace="default", limit=1)[old.id]] == [high.id]
    sketches = store.possible_successors([old.id], namespace="default", full=False)[old.id]  # what recall decides on
    want = [(y.node.id, y.reason, y.confidence) for y in found[old.id]]
    assert [(s.node.id, s.reason, s.confidence) for s in sketches] == want
    for sketch, whole in zip(sketches, found[old.id], strict=True):
        kept = ("namespace", "scope", "created_at", "status", "chain_root", "purged_at")
        assert [getattr(sketch.node, f) for f in kept] == [getattr(whole.node, f) for f in kept]
    assert store.possible_successors([old.id], namespace="team-b") == {}
    store.forget(high.id)
    store.link(low.id, old.id, AGENT)  # confirmed: no longer an offer
    assert [s.node.id for s in store.possible_successors([old.id], namespace="default")[old.id]] == [bare.id]


def test_store_ping_and_close(tmp_path: Path) -> None:
    for store in (SQLiteStore(tmp_path / "ping.db"), MemoryStore()):
        store.ping()
        store.close()


def test_postgres_store_ping_and_close() -> None:
    with postgres_store() as store:
        store.ping()


# ---------------------------------------------------------------------------- across stores


def store_transcript(store: Store) -> list[Any]:
    """One scripted session on a store; everything it answered, ids labelled. Search hits are
    kept as sets with their scores left out: the memory store does not rank by BM25."""
    lab = Labeller()
    out: list[Any] = []

    def attempt(fn: Callable[[], Any]) -> Any:
        try:
            value = fn()
        except EvoMemError as exc:
            return ("error", type(exc).__name__, lab(exc.message))
        return ("ok", node_view(value, lab) if isinstance(value, MemoryNode) else lab(value))

    def insert(n: NewNote, supersedes: str | None = None, link: LinkProvenance | None = None) -> MemoryNode:
        return store.insert_once(n, supersedes=supersedes, link=link)[0]

    for i in range(6):
        insert(note(f"Filler {i}: the search service caches results in Redis for {i} minutes."))
    v1 = insert(note("We picked Postgres for the ledger", tags=("ledger",), scope="billing", author="al"))
    v2 = insert(note("We moved the ledger from Postgres to SQLite"), supersedes=v1.id, link=AGENT)
    v3 = insert(note("The ledger moves to DuckDB. " + LEDGER, extraction=EXTRACTION), supersedes=v1.id, link=AGENT)
    x = insert(note("Payments retry three times", relations={"see_also": (v1.id,)}))
    y = insert(note("Payments retry five times"))
    out.append([node_view(n, lab) for n in (v1, v2, v3, x, y)])
    out.append(node_view(store.link(y.id, x.id, LinkProvenance("heuristic", 0.5, "h/1", ("e",))), lab))
    out.append(attempt(lambda: store.link(x.id, y.id, AGENT)))
    out.append(attempt(lambda: insert(note("n", namespace="other"), supersedes=v3.id)))
    out.append(attempt(lambda: insert(note("n"), supersedes=UNKNOWN_ID)))
    out.append(sorted((lab(k), node_view(n, lab)) for k, n in store.get_many([v1.id, v2.id, x.id, UNKNOWN_ID]).items()))
    out.append(sorted((lab(k), node_view(n, lab)) for k, n in store.heads([v1.id, x.id, y.id]).items()))
    out.append([node_view(n, lab) for n in store.chain(v3.id, 1)])
    for terms, active in ((["ledger", "postgres"], False), (["ledger"], True), (["payments", "retry"], False)):
        hits = store.search(terms, namespace="default", limit=5, active_only=active)
        assert hits and all(isinstance(h.score, float) and h.score > 0 for h in hits)
        out.append(sorted((lab(h.node_id), lab(h.chain_root)) for h in hits))
    f = store.forget(v3.id)
    out.append((node_view(f[0], lab), f[1]))
    out.append(attempt(lambda: insert(note("n"), supersedes=v2.id, link=AGENT)))
    p = store.forget(x.id, purge=True)
    out.append((node_view(p[0], lab), p[1]))
    out.append(attempt(lambda: store.forget(x.id)))
    out.append(node_view(store.set_extraction(y.id, None, ExtractionState.FAILED, "e1"), lab))
    out.append(node_view(store.set_extraction(x.id, EXTRACTION, ExtractionState.DONE), lab))
    out.append(lab(store.pending_extractions(3)))
    for ns in (None, "default", "other"):
        s = store.stats(ns)
        out.append((s.by_status, s.purged, s.chains, s.extraction, s.namespaces))  # the schema: each its own
    return out


def test_store_transcripts_are_equal_on_sqlite_and_in_memory(tmp_path: Path) -> None:
    """The memory store answers what the SQLite store answers, error messages included."""
    sqlite = SQLiteStore(tmp_path / "local.db")
    try:
        engine = store_transcript(sqlite)
    finally:
        sqlite.close()
    memory = store_transcript(MemoryStore())
    assert len(engine) == len(memory)
    for i, (a, b) in enumerate(zip(engine, memory, strict=True)):
        assert a == b, f"step {i} differs"
    # The transcript is not vacuous: errors and search hits are in it.
    assert engine[2][:2] == ("error", "CycleError")
    assert engine[4][:2] == ("error", "NotFound")
    assert len(engine[8]) == 3


def test_store_transcripts_are_equal_on_sqlite_and_postgres(tmp_path: Path) -> None:
    """PostgreSQL answers what SQLite answers, error messages included (search hits as sets)."""
    sqlite = SQLiteStore(tmp_path / "local.db")
    try:
        engine = store_transcript(sqlite)
    finally:
        sqlite.close()
    with postgres_store() as pg:
        other = store_transcript(pg)
        assert pg.check_invariants() == []
    assert len(engine) == len(other)
    for i, (a, b) in enumerate(zip(engine, other, strict=True)):
        assert a == b, f"step {i} differs"


def test_a_write_follows_the_newest_id_only_when_it_is_close() -> None:
    from evomem.domain.model import FOLLOW_MS, new_id, write_ms

    now = 1_800_000_000_000
    assert write_ms(now, None) == now
    assert write_ms(now, new_id(now - 5)) == now  # the clock moved on
    assert write_ms(now, new_id(now)) == now + 1  # same millisecond
    assert write_ms(now, new_id(now + FOLLOW_MS)) == now + FOLLOW_MS + 1  # a clock stepped back a little
    assert write_ms(now, new_id(now + FOLLOW_MS + 1)) == now  # an id from a skewed clock is not followed
