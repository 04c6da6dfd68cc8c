"""``forget(purge=True)`` removes the text for good: from the row, the FTS index and the file.

The byte-level checks read the database file and its WAL as raw bytes: the secret must
be nowhere on disk after the purge, while it demonstrably was before it.
"""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import closing
from pathlib import Path

import pytest

from evomem.adapters.sqlite.driver import sqlite as sqlite3
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService
from evomem.domain.errors import Purged
from evomem.entrypoints.mcp.answers import forget_answer, get_node_answer, recall_answer


def disk_files(db_path: Path) -> dict[str, bytes]:
    """The database file and, when present, its WAL, as raw bytes."""
    out = {db_path.name: db_path.read_bytes()}
    wal = db_path.with_name(db_path.name + "-wal")
    if wal.exists():
        out[wal.name] = wal.read_bytes()
    return out


def where_on_disk(db_path: Path, needles: list[bytes]) -> list[str]:
    return [
        f"{needle!r} in {name}" for name, data in disk_files(db_path).items() for needle in needles if needle in data
    ]


def fill(service, n: int) -> list[str]:
    return [
        service.remember(f"Filler {i}: workers retry failed jobs with backoff {uuid.uuid4().hex[:8]}.").node.id
        for i in range(n)
    ]


@pytest.fixture
def secret() -> dict[str, str]:
    token = uuid.uuid4().hex
    # A unique word too, so the porter-stemmed FTS token is easy to look for.
    word = "zq" + uuid.uuid4().hex[:10].translate(str.maketrans("0123456789", "ghijklmnop"))
    return {"key": f"sk-live-{token}", "hex": token, "word": word}


def secret_needles(secret: dict[str, str]) -> list[bytes]:
    return [
        secret["key"].encode(),
        secret["hex"].encode(),  # the FTS token of the key (lowercase)
        secret["hex"][:16].encode(),  # any fragment of it
        secret["word"].encode(),
        secret["word"].lower().encode(),
    ]


def store_secret(service, secret: dict[str, str], **kwargs) -> str:
    text = (
        f"Switched the payment gateway key to {secret['key']} because the old one leaked. "
        f"Codename {secret['word']}. As a result, rotate it again in May."
    )
    return service.remember(text, tags=[secret["word"]], session=f"session-{secret['word']}", **kwargs).node.id


@pytest.mark.parametrize("checkpoint_first", [False, True], ids=["in-wal", "checkpointed"])
def test_purge_removes_the_secret_from_the_database_file_and_the_wal(service, store, db_path, secret, checkpoint_first):
    fill(service, 40)
    node_id = store_secret(service, secret)
    fill(service, 40)
    if checkpoint_first:  # the secret already lives in the main file, not only in the WAL
        assert store.checkpoint()
    assert store.search([secret["hex"]], namespace="default", limit=5), "the secret was indexed"
    assert where_on_disk(db_path, secret_needles(secret)), "sanity: the secret is on disk before the purge"

    out = service.forget(node_id, purge=True)

    assert out.purged
    assert where_on_disk(db_path, secret_needles(secret)) == []
    assert store.check_invariants() == []


def test_purge_removes_a_large_note_that_spilled_onto_overflow_pages(service, store, db_path, secret):
    fill(service, 10)
    big = f"Decision log {secret['key']}. " + " ".join(f"paragraph {i} {secret['word']}" for i in range(1500))
    node_id = service.remember(big).node.id
    store.checkpoint()
    assert where_on_disk(db_path, secret_needles(secret))

    service.forget(node_id, purge=True)

    assert where_on_disk(db_path, secret_needles(secret)) == []


def test_purged_text_is_gone_after_the_store_is_closed_and_reopened(service, store, db_path, secret):
    node_id = store_secret(service, secret)
    fill(service, 5)
    service.forget(node_id, purge=True)
    store.close()

    assert where_on_disk(db_path, secret_needles(secret)) == []
    reopened = SQLiteStore(db_path)
    try:
        node = reopened.get(node_id)
        assert node is not None and node.purged and node.raw_text == ""
    finally:
        reopened.close()


def test_full_text_search_for_the_secret_finds_nothing_after_purge(service, store, secret):
    fill(service, 10)
    node_id = store_secret(service, secret)
    for term in (secret["hex"], secret["word"]):
        assert [h.node_id for h in store.search([term], namespace="default", limit=5)] == [node_id]

    service.forget(node_id, purge=True)

    for term in (secret["hex"], secret["word"], "sk", "live", "gateway"):
        assert store.search([term], namespace="default", limit=5) == []
    assert service.recall(secret["key"]).results == []
    with closing(sqlite3.connect(store.path)) as conn:  # straight at the index, bypassing the join
        rows = conn.execute("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ?", (f'"{secret["hex"]}"',)).fetchall()
        assert rows == []


def test_the_fts_index_stays_consistent_with_the_table_after_purges(service, store, secret):
    ids = fill(service, 20)
    for node_id in ids[::3]:
        service.forget(node_id, purge=True)
    with closing(sqlite3.connect(store.path)) as conn:
        conn.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES ('integrity-check', 1)")  # raises if corrupt
    assert len(store.search(["workers"], namespace="default", limit=100)) == len(ids) - len(ids[::3])


def test_get_node_of_a_purged_node_raises_purged(service, store, secret):
    node_id = store_secret(service, secret)
    service.forget(node_id, purge=True)

    with pytest.raises(Purged):
        service.get_node(node_id)
    with pytest.raises(Purged):
        service.forget(node_id, purge=True)
    with pytest.raises(Purged):
        service.forget(node_id)


def test_purge_blanks_every_text_field_but_keeps_the_tombstone(service, store, secret):
    node_id = store_secret(service, secret, scope="payments")
    before = store.get(node_id)
    assert before is not None and before.change and before.summary and before.tags

    service.forget(node_id, purge=True)

    node = store.get(node_id)
    assert node is not None
    assert node.purged and node.status == "forgotten"
    assert (node.raw_text, node.trigger, node.change, node.alternatives_tried, node.consequences, node.summary) == (
        "",
        "",
        "",
        "",
        "",
        "",
    )
    assert node.tags == () and node.session is None and node.relations == {}
    assert (node.id, node.chain_root, node.version, node.created_at) == (
        before.id,
        before.chain_root,
        before.version,
        before.created_at,
    )


def test_purging_a_middle_version_keeps_the_chain_linked(service, store, secret):
    v1 = service.remember("The ledger uses Postgres.").node
    v2 = store_secret(service, secret, supersedes=v1.id)
    v3 = service.remember("Moved the ledger to SQLite because Postgres was overkill.", supersedes=v2).node

    service.forget(v2, purge=True)

    assert store.check_invariants() == []
    head = service.get_node(v3.id)[0]
    assert head.status == "active" and head.supersedes == v2 and head.version == 3
    first = service.get_node(v1.id)[0]
    assert first.superseded_by == v2
    tomb = store.get(v2)
    assert tomb is not None and tomb.supersedes == v1.id and tomb.superseded_by == v3.id

    recalled = service.recall("ledger postgres", include_history=True)
    hit = recall_answer(recalled, detail="full", note_chars=10**6, scoped=False).data["results"][0]
    assert hit["id"] == v3.id
    assert [step["id"] for step in hit["history"]] == [v2, v1.id]
    tombstone = hit["history"][0]
    assert tombstone["purged"] is True
    assert "raw_text" not in tombstone and tombstone["status"] == "forgotten"
    assert tombstone["replaced_by"] == v3.id
    assert hit["history"][1]["raw_text"] == "The ledger uses Postgres."
    assert "why_replaced" not in hit["history"][1], "the purged successor's reason is gone too"

    node, head, past = service.get_node(v3.id, include_history=True)
    history = get_node_answer(node, head, past, detail="full", note_chars=10**6).data["history"]
    assert [step.get("purged", False) for step in history] == [True, False]


def test_a_purged_chain_can_still_be_continued_from_a_live_version(service, store, secret):
    v1 = service.remember("The ledger uses Postgres.").node
    v2 = store_secret(service, secret, supersedes=v1.id)
    service.forget(v2, purge=True)  # the head is purged: the chain no longer answers recall

    assert service.recall("ledger").results == []
    v3 = service.remember("The ledger uses SQLite now.", supersedes=v1.id).node

    assert v3.supersedes == v2 and v3.version == 3
    assert [r[0].head.id for r in service.recall("ledger").results] == [v3.id]
    assert store.check_invariants() == []


def test_a_purge_waits_for_a_short_concurrent_reader_and_still_clears_the_wal(service, store, db_path, secret):
    fill(service, 20)
    node_id = store_secret(service, secret)
    fill(service, 5)
    reader = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    assert reader.execute("SELECT COUNT(*) FROM nodes").fetchone()[0] == 26  # holds a snapshot with the secret
    release = threading.Timer(0.3, lambda: reader.execute("COMMIT"))
    release.start()
    try:
        started = time.monotonic()
        service.forget(node_id, purge=True)
        waited = time.monotonic() - started
    finally:
        release.join()
        reader.close()

    assert waited >= 0.2, "the checkpoint waited for the reader (busy_timeout)"
    assert where_on_disk(db_path, secret_needles(secret)) == []


def test_a_purge_blocked_by_a_long_reader_is_completed_by_the_next_checkpoint(db_path, secret):
    """A reader that outlasts busy_timeout pins the old WAL frames; the text leaves the disk
    at the next checkpoint (documented: purged from the file "after a checkpoint")."""
    store = SQLiteStore(db_path, busy_timeout_ms=200)
    try:
        service = MemoryService.local(store)
        fill(service, 10)
        node_id = store_secret(service, secret)
        reader = sqlite3.connect(db_path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM nodes").fetchone()
        service.forget(node_id, purge=True)
        assert store.search([secret["hex"]], namespace="default", limit=5) == [], "gone from the index at once"
        reader.execute("COMMIT")
        reader.close()

        assert store.checkpoint() is True
        assert where_on_disk(db_path, secret_needles(secret)) == []
    finally:
        store.close()


# ---------------------------------------------------------------------------- purge under a reader (issue 12)


def every_file(db_path: Path) -> dict[str, bytes]:
    """The database file, its WAL and its shared-memory index, as raw bytes, when present."""
    out = {}
    for suffix in ("", "-wal", "-shm"):
        path = db_path.with_name(db_path.name + suffix)
        if path.exists():
            out[path.name] = path.read_bytes()
    return out


def found_in_files(db_path: Path, needles: list[bytes]) -> list[str]:
    return [f"{n!r} in {name}" for name, data in every_file(db_path).items() for n in needles if n in data]


def wait_for(predicate, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def hold_snapshot(db_path: Path) -> sqlite3.Connection:
    """A second connection that holds a read snapshot (as a second process or a backup would)."""
    reader = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    assert reader.execute("SELECT COUNT(*) FROM nodes").fetchone()[0] > 0
    return reader


@pytest.mark.parametrize("checkpoint_first", [False, True], ids=["in-wal", "checkpointed"])
def test_a_purge_under_a_reader_answers_honestly_and_finishes_when_the_reader_closes(db_path, secret, checkpoint_first):
    store = SQLiteStore(db_path, busy_timeout_ms=300, purge_retry_s=0.1)  # type: ignore[arg-type]
    try:
        service = MemoryService.local(store)
        fill(service, 20)
        node_id = store_secret(service, secret)
        fill(service, 5)
        if checkpoint_first:
            assert store.checkpoint()
        needles = secret_needles(secret)
        assert found_in_files(db_path, needles), "the secret is on disk before the purge"
        reader = hold_snapshot(db_path)
        try:
            out = service.forget(node_id, purge=True)
            # The first answer is honest: gone from the table and the index, not from the file.
            assert out.purged and out.file_erased is False
            assert out.erased == {"table": True, "fts": True, "vectors": True, "caches": True, "file": False}
            assert out.file_reason and "snapshot" in out.file_reason
            view = forget_answer(out)
            assert view.data["file_erased"] is False and view.data["file_erase_reason"] == out.file_reason
            assert "not yet from the file" in view.text
            assert out.node.file_erased_at is None
            assert store.search([secret["hex"]], namespace="default", limit=5) == []
            assert store.stats().purges_file_pending == 1 and store.stats().last_file_erased_at is None
            time.sleep(0.5)  # the background task retries meanwhile, and keeps failing while the reader holds on
            assert store.get(node_id).file_erased_at is None
        finally:
            reader.execute("COMMIT")
            reader.close()
        # The reader is gone: the background task finishes the checkpoint and records when.
        assert wait_for(lambda: store.get(node_id).file_erased_at is not None), "the purge never reached the file"
        node = store.get(node_id)
        assert node.file_erased_at >= node.purged_at
        assert found_in_files(db_path, needles) == []
        stats = store.stats()
        assert stats.purges_file_pending == 0 and stats.last_file_erased_at == node.file_erased_at
        # More writes do not bring anything back.
        fill(service, 5)
        assert found_in_files(db_path, needles) == []
    finally:
        store.close()
    assert found_in_files(db_path, needles) == []


def test_a_purge_left_unfinished_at_exit_is_finished_at_the_next_start(db_path, secret):
    store = SQLiteStore(db_path, busy_timeout_ms=300, purge_retry_s=0.1)  # type: ignore[arg-type]
    service = MemoryService.local(store)
    fill(service, 10)
    node_id = store_secret(service, secret)
    store.checkpoint()
    reader = hold_snapshot(db_path)
    try:
        assert service.forget(node_id, purge=True).file_erased is False
        store.close()  # a clean stop while the reader still holds its snapshot
    finally:
        reader.execute("COMMIT")
        reader.close()
    reopened = SQLiteStore(db_path, purge_retry_s=0.1)  # type: ignore[arg-type]
    try:
        assert wait_for(lambda: reopened.get(node_id).file_erased_at is not None)
        assert found_in_files(db_path, secret_needles(secret)) == []
        assert reopened.stats().purges_file_pending == 0
    finally:
        reopened.close()


def test_a_purge_without_readers_reports_the_file_erased_at_once(service, store, db_path, secret):
    node_id = store_secret(service, secret)
    out = service.forget(node_id, purge=True)
    assert out.file_erased is True and out.file_reason is None
    assert out.node.file_erased_at is not None and out.node.file_erased_at >= out.node.purged_at
    assert forget_answer(out).data["file_erased"] is True
    assert found_in_files(db_path, secret_needles(secret)) == []


def test_a_purge_erases_the_author_and_every_free_text_field(service, store, db_path, secret):
    author = "author-" + uuid.uuid4().hex  # free text that occurs nowhere else
    v1 = service.remember("We picked Postgres for the ledger.", author=author)
    node_id = store_secret(service, secret, author=author, supersedes=v1.node.id)  # an agent link, by the author
    assert store.get(node_id).link.by == author
    service.forget(node_id, purge=True)
    service.forget(v1.node.id, purge=True)
    for nid in (node_id, v1.node.id):
        node = store.get(nid)
        assert (node.author, node.session, node.scope_evidence) == (None, None, None)
        assert node.link is None or (node.link.by is None and node.link.evidence == ())
    assert all(r["by"] is None for r in store.link_audit(node_id) if r["node_id"] == node_id)
    store.checkpoint()
    assert found_in_files(db_path, [author.encode(), *secret_needles(secret)]) == []


def test_a_purge_evicts_the_text_from_the_embedding_cache(store, secret):
    pytest.importorskip("sqlite_vec")
    from evomem.adapters.models.embedding import HashingEmbedder
    from evomem.adapters.vectors.index import VectorIndex
    from evomem.adapters.vectors.semantic import SemanticIndex

    embedder = HashingEmbedder()
    vectors = SemanticIndex(embedder, VectorIndex(store.path, model=embedder.name))
    try:
        service = MemoryService.local(store, vectors=vectors)
        node_id = store_secret(service, secret)
        assert any(secret["key"] in key for key in vectors._cache), "the embedding cache keys the note's text"
        out = service.forget(node_id, purge=True)
        assert out.erased["caches"] and out.erased["vectors"]
        assert not any(secret["key"] in key for key in vectors._cache)
        assert vectors.nearest(secret["key"], namespace="default", limit=5) == []
    finally:
        vectors.close()


def test_the_gateway_gets_the_same_honest_answer_and_storage_finishes_the_purge(db_path, secret):
    """Through storage's gRPC API (the gateway's path): the answer and the tombstone agree."""
    from evomem.adapters.grpc.clients import GrpcStorage
    from evomem.app.storage import LocalStorage
    from evomem.entrypoints.grpc.server import create_server
    from evomem.entrypoints.grpc.servicers import StorageServicer
    from evomem.v1 import storage_pb2_grpc

    backing = SQLiteStore(db_path, busy_timeout_ms=300, purge_retry_s=0.1)  # type: ignore[arg-type]
    server = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing)), s),
        ("evomem.v1.StorageService",),
    )
    gateway = MemoryService(GrpcStorage(f"127.0.0.1:{server.port}"))
    try:
        fill(MemoryService.local(backing), 10)
        node_id = store_secret(gateway, secret)
        backing.checkpoint()
        reader = hold_snapshot(db_path)
        try:
            out = gateway.forget(node_id, purge=True)
            assert out.file_erased is False and out.file_reason
            assert gateway.stats().purges_file_pending == 1
        finally:
            reader.execute("COMMIT")
            reader.close()
        assert wait_for(lambda: gateway.storage.get(node_id).file_erased_at is not None)
        assert found_in_files(db_path, secret_needles(secret)) == []
        assert gateway.stats().purges_file_pending == 0 and gateway.stats().last_file_erased_at is not None
    finally:
        gateway.close()
        server.stop(0)
        backing.close()
