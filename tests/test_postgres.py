"""What only the PostgreSQL store has to show, on a real PostgreSQL 17 with pgvector
(``postgres_server.py``): row-level security per namespace, the chain invariants held by the
database under concurrent superseders on two storage replicas, vectors by HNSW with iterative
scans, purge, named migrations, and a database that restarts or cannot be reached.

The store's behaviour shared with SQLite is the store contract (``test_contracts.py``, wiring
``postgres``).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from contract_support import AGENT, serve_storage
from postgres_server import PostgresServer

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.app.storage import LocalStorage
from evomem.domain.errors import Conflict, Unavailable
from evomem.domain.model import InsertOutcome, NewNote
from evomem.domain.remember import NoteWrite

EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))


@pytest.fixture(scope="module")
def server() -> PostgresServer:
    return PostgresServer.shared()


@pytest.fixture
def url(server: PostgresServer) -> Iterator[str]:
    u = server.fresh_database()
    yield u
    server.drop(u)


@pytest.fixture
def store(url: str) -> Iterator[Any]:
    from evomem.adapters.postgres.store import PostgresStore

    s = PostgresStore(url)
    yield s
    s.close()


def admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


# ---------------------------------------------------------------------------- row-level security


def test_a_query_that_forgets_its_namespace_filter_still_reads_only_its_namespace(store: Any) -> None:
    a = store.insert(NewNote("Team A keeps its ledger in Postgres", namespace="team-a"))
    b = store.insert(NewNote("Team B keeps its ledger in MySQL", namespace="team-b"))
    # No WHERE namespace = ...: the policy does it.
    with store.db.transaction("team-a") as conn:
        assert [r[0] for r in conn.execute("SELECT id FROM nodes")] == [a.id]
        assert conn.execute("SELECT count(*) FROM link_audit WHERE node_id = %s", (b.id,)).fetchone()[0] == 0
    with store.db.transaction("team-b") as conn:
        assert [r[0] for r in conn.execute("SELECT id FROM nodes")] == [b.id]
    # The store's search is run in its namespace's transaction too.
    assert [h.node_id for h in store.search(["ledger"], namespace="team-a", limit=10)] == [a.id]


def test_a_transaction_that_sets_no_namespace_sees_nothing_and_writes_nothing(store: Any) -> None:
    import psycopg

    store.insert(NewNote("A note", namespace="team-a"))
    with store.db.pool.connection() as conn:  # a pooled connection (the app role), no SET LOCAL
        assert conn.execute("SELECT count(*) FROM nodes").fetchone()[0] == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("INSERT INTO write_audit (namespace, at, identity, role, tool, outcome) "
                         "VALUES ('team-a', 0, 'x', 'admin', 'remember', 'ok')")  # fmt: skip
        conn.rollback()
    with store.db.transaction("team-b") as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(
            "INSERT INTO write_audit (namespace, at, identity, role, tool, outcome) "
            "VALUES ('team-a', 0, 'x', 'admin', 'remember', 'ok')"
        )


def test_the_store_runs_as_a_role_that_owns_nothing(store: Any) -> None:
    import psycopg

    with store.db.transaction() as conn:
        who, owner = conn.execute(
            "SELECT current_user, pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'nodes'"
        ).fetchone()
        assert who == "evomem_app" and owner != who
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("ALTER TABLE nodes DISABLE ROW LEVEL SECURITY")
    with store.db.transaction() as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("DROP INDEX nodes_one_head")


# ---------------------------------------------------------------------------- chains, by the database


def test_the_database_refuses_a_second_head_whatever_the_code_does(store: Any, url: str) -> None:
    import psycopg

    root = store.insert(NewNote("The ledger uses Postgres"))
    with admin(url) as conn, pytest.raises(psycopg.errors.UniqueViolation, match="nodes_one_head"):
        conn.execute(
            "INSERT INTO nodes (id, namespace, raw_text, created_at, status, chain_root, version, extraction_state) "
            "VALUES ('01ZZZZZZZZZZZZZZZZZZZZZZZZ', 'default', 'fork', 0, 'active', %s, 2, 'pending')",
            (root.id,),
        )
    assert store.check_invariants() == []


def test_32_concurrent_superseders_on_two_storage_replicas_fork_nothing(url: str) -> None:
    """Two storage services over one database (two replicas), 32 writers superseding the same
    root at once: one chain of 33 versions, one head, every writer re-targeted to the head."""
    from evomem.adapters.postgres.store import PostgresStore

    stores = [PostgresStore(url, pool_size=16), PostgresStore(url, pool_size=16)]
    servers = [serve_storage(LocalStorage(s)) for s in stores]
    clients = [GrpcStorage(f"127.0.0.1:{r.port}") for r in servers]
    try:
        root = clients[0].remember_note(NoteWrite(NewNote("The ledger uses Postgres"))).node
        start = threading.Barrier(32)

        def supersede(i: int) -> str:
            start.wait()
            note = NewNote(f"Writer {i} moved the ledger to engine {i}")
            return clients[i % 2].remember_note(NoteWrite(note, supersedes=root.id, link=AGENT)).node.id

        with ThreadPoolExecutor(32) as pool:
            ids = list(pool.map(supersede, range(32)))
        chain = stores[0].chain(stores[0].heads([root.id])[root.id].id, 100)
        assert [n.version for n in chain] == list(range(33, 0, -1))
        assert {n.id for n in chain} == {*ids, root.id}
        assert sum(1 for n in chain if n.is_head) == 1
        assert stores[1].check_invariants() == []
    finally:
        for c in clients:
            c.close()
        for r in servers:
            r.stop(0)
        for s in stores:
            s.close()


def test_concurrent_retries_under_one_idempotency_key_store_one_note(store: Any) -> None:
    note = NewNote("We moved payments to a queue")
    start = threading.Barrier(16)

    def remember(_: int) -> tuple[str, InsertOutcome]:
        start.wait()
        node, outcome = store.insert_once(note, idempotency_key="retry-1")
        return node.id, outcome

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(remember, range(16)))
    assert len({i for i, _ in answers}) == 1
    assert sorted(o.value for _, o in answers) == ["inserted"] + ["replayed"] * 15
    assert store.stats().namespaces == {"default": 1}


# ---------------------------------------------------------------------------- vectors


def test_hnsw_with_iterative_scans_returns_k_hits_in_a_small_namespace(store: Any) -> None:
    """A namespace with 1% of the vectors: a plain HNSW scan filtered afterwards finds a few of
    its rows at most; the iterative scan goes on until it has k, and they are the exact k nearest."""
    import numpy as np

    from evomem.adapters.postgres.vectors import PgVectorIndex

    rng = np.random.default_rng(7)
    big = [store.insert(NewNote(f"big {i}", namespace="big")).id for i in range(1500)]
    small = [store.insert(NewNote(f"small {i}", namespace="small")).id for i in range(15)]
    index = PgVectorIndex(store.db, model="test-model")
    vectors = {i: rng.normal(size=384).astype(np.float32) for i in big + small}
    index.add_many((i, "big" if i in set(big) else "small", v) for i, v in vectors.items())
    query = rng.normal(size=384).astype(np.float32)
    hits = index.search(query, "small", k=10)
    assert len(hits) == 10 and {h[0] for h in hits} <= set(small)

    def cosine(v: Any) -> float:
        return float(v @ query / np.linalg.norm(v) / np.linalg.norm(query))

    exact = sorted(small, key=lambda i: -cosine(vectors[i]))[:10]
    assert [h[0] for h in hits] == exact  # halfvec rounding does not reorder these
    assert [round(1 - d, 2) for _, d in hits] == [round(cosine(vectors[i]), 2) for i in exact]
    # Another model's vectors are never compared; a purge deletes the node's vector with its text.
    assert PgVectorIndex(store.db, model="other").search(query, "small", k=10) == []
    store.forget(exact[0], purge=True)
    assert exact[0] not in [h[0] for h in index.search(query, "small", k=10)]
    assert index.nodes_without_vectors(10) == []  # a purged node is not embedded again


# ---------------------------------------------------------------------------- purge


def test_a_purge_leaves_no_row_version_with_the_text(store: Any, url: str) -> None:
    secret = "the staging password is hunter2-" + "x" * 40
    node = store.insert(NewNote(f"Oops: {secret}"))
    store.insert(NewNote("Another note, kept"))
    purged, _ = store.forget(node.id, purge=True)
    assert purged.raw_text == "" and purged.file_erased_at is not None  # vacuumed in the call
    assert store.stats().purges_file_pending == 0
    with admin(url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        pages = conn.execute("SELECT pg_relation_size('nodes') / current_setting('block_size')::int").fetchone()[0]
        found = conn.execute(
            "SELECT count(*) FROM generate_series(0, %s - 1) AS p, "
            "heap_page_items(get_raw_page('nodes', p::int)) AS t "
            "WHERE position(convert_to('hunter2', 'UTF8') IN coalesce(t.t_data, ''::bytea)) > 0",
            (pages,),
        ).fetchone()[0]
        assert found == 0  # no live or dead row version holds it
        rows = conn.execute("SELECT count(*) FROM nodes WHERE raw_text LIKE '%hunter2%'").fetchone()[0]
        assert rows == 0


def test_a_purge_waits_for_an_older_transaction_then_vacuums(store: Any, url: str) -> None:
    node = store.insert(NewNote("A secret to purge"))
    with admin(url) as reader:
        reader.autocommit = False
        reader.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        assert reader.execute("SELECT raw_text FROM nodes WHERE id = %s", (node.id,)).fetchone()[0]
        purged, _ = store.forget(node.id, purge=True)
        assert purged.file_erased_at is None  # the reader's snapshot still sees the old version
        assert store.stats().purges_file_pending == 1
        reader.rollback()
    deadline = time.monotonic() + 20
    while store.get(node.id).file_erased_at is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert store.get(node.id).file_erased_at is not None  # the background task vacuumed it


# ---------------------------------------------------------------------------- migrations


def test_migrations_are_named_recorded_and_applied_once(server: PostgresServer) -> None:
    from evomem.adapters.postgres import schema
    from evomem.adapters.postgres.store import PostgresStore

    url = server.fresh_database(migrated=False)
    try:
        with ThreadPoolExecutor(2) as pool:  # two replicas starting on a new database
            stores = list(pool.map(lambda _: PostgresStore(url), range(2)))
        for s in stores:
            s.close()
        with admin(url) as conn:
            rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
        assert rows == [(i, name) for i, (name, _) in enumerate(schema.MIGRATIONS, start=1)]
        s = PostgresStore(url, migrate=False)
        assert s.stats().schema_version == schema.SCHEMA_VERSION
        s.close()
    finally:
        server.drop(url)


def test_a_database_without_the_migrations_is_refused_when_migrating_is_off(server: PostgresServer) -> None:
    from evomem.adapters.postgres.store import PostgresStore

    url = server.fresh_database(migrated=False)
    try:
        with pytest.raises(Unavailable, match=r"lacks migrations 0001_nodes_chains_search.*evomem-admin migrate"):
            PostgresStore(url, migrate=False)
    finally:
        server.drop(url)


# ---------------------------------------------------------------------------- faults


def test_a_restart_during_a_stream_of_remembers_loses_and_doubles_nothing(server: PostgresServer, url: str) -> None:
    """Remembers with idempotency keys, retried until acknowledged, while PostgreSQL restarts
    (and stays down a few seconds): every acknowledged note is there once; while it is down the
    store says UNAVAILABLE, and it recovers by itself."""
    from evomem.adapters.postgres.store import PostgresStore

    store = PostgresStore(url, wait_s=1.0)
    acked: dict[str, str] = {}
    outages: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set() or i < 40:
            key = f"k-{i}"
            while True:
                try:
                    node, _ = store.insert_once(NewNote(f"Note number {i} of the stream"), idempotency_key=key)
                    acked[key] = node.id
                    break
                except (Unavailable, Conflict) as exc:
                    outages.append(exc.message)
                    time.sleep(0.05)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(acked) < 10:
            time.sleep(0.02)
        server.restart()
        while len(acked) < 20:
            time.sleep(0.02)
        server.stop()
        time.sleep(3)
        server.start_again()
    finally:
        stop.set()
        thread.join(timeout=60)
    try:
        assert outages and all("cannot be reached" in m or "retry" in m for m in outages)
        with admin(url) as conn:
            rows = conn.execute("SELECT id FROM nodes").fetchall()
        assert len(rows) == len(acked) >= 40  # 0 lost, 0 duplicates
        assert {r[0] for r in rows} == set(acked.values())
        store.ping()  # recovered by itself
    finally:
        store.close()


def run_mcp(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVOMEM_MCP, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://u:p@db/x", "must start with postgresql://"),
        ("postgresql://u:p@db:99999/x", "malformed"),
        ("postgresql:///nohost", "names no host"),
        ("postgresql://evomem:s3cret@127.0.0.1:9/evomem", "cannot be reached"),
    ],
)
def test_a_bad_or_unreachable_database_url_is_one_line_and_status_2(url: str, says: str) -> None:
    pytest.importorskip("psycopg")
    result = run_mcp(["--database-url", url, "--vectors", "off"])
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0] and "EVOMEM_DATABASE_URL" in lines[0], result.stderr
    assert "s3cret" not in result.stderr  # the password never shows


# ---------------------------------------------------------------------------- the embedded wiring


def test_the_embedded_server_over_postgres_remembers_and_recalls_by_meaning(url: str) -> None:
    """``--database-url``: the embedded wiring over PostgreSQL, hybrid recall with pgvector."""
    from evomem.bootstrap.embedded import build_embedded
    from evomem.bootstrap.vectors import model_problem
    from evomem.settings import Settings

    if model_problem() is not None:
        pytest.skip(f"the embedding model cannot run here: {model_problem()}")
    service = build_embedded(Settings(database_url=url, vectors="on"))
    try:
        old = service.remember("We keep the bookkeeping records in Postgres", author="alice")
        new = service.remember("We moved the bookkeeping records to SQLite", supersedes=old.node.id)
        service.remember("The office plants are watered on Fridays")
        assert not old.warnings and new.linked_to == old.node.id
        found = service.recall("where does the ledger live")  # no word in common: by meaning
        heads = [r.head.id for r, _ in found.results]
        assert heads and heads[0] == new.node.id
        assert "vector" in found.results[0][0].best.via
        assert service.stats().namespaces == {"default": 3}
    finally:
        service.close()
