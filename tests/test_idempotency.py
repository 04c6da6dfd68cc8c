"""remember at most once: idempotency keys, the dedupe window, and both wirings.

A retry with the same key and text answers the first node and stores nothing; the key with
another text is a ``[conflict]``. Without a key, an identical active note of the same
namespace and scope stored moments ago is answered (``duplicate_of``), never copied. The
store decides under its write lock, so concurrent retries agree, and the gateway's path
(GrpcStorage over a real storage server, the Redis queue) keeps the property.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from mcp import Client
from redis_server import RedisServer

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.adapters.redis_queue import STREAM, RedisQueue
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.storage import LocalStorage
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import Conflict, Purged
from evomem.domain.model import InsertOutcome
from evomem.entrypoints.grpc.server import create_server
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.entrypoints.mcp.server import build_mcp_server
from evomem.v1 import storage_pb2_grpc

NOTE = "We picked Postgres for the ledger because we need transactions."


def count(store: SQLiteStore) -> int:
    return sum(store.stats().by_status.values())


# ---------------------------------------------------------------------------- keys


def test_a_retry_with_the_same_key_returns_the_first_node_and_stores_nothing(service, store) -> None:
    first = service.remember(NOTE, idempotency_key="task-42/note-1")
    again = service.remember(NOTE, idempotency_key="task-42/note-1")
    assert first.outcome is InsertOutcome.INSERTED and again.outcome is InsertOutcome.REPLAYED
    assert again.node.id == first.node.id and again.duplicate_of is None
    assert any("idempotency_key already used" in w for w in again.warnings)
    assert count(store) == 1


def test_the_same_key_with_another_text_is_a_conflict(service, store) -> None:
    service.remember(NOTE, idempotency_key="k1")
    with pytest.raises(Conflict, match="idempotency_key was already used for another text"):
        service.remember("We picked SQLite for the ledger.", idempotency_key="k1")
    assert count(store) == 1


def test_keys_belong_to_a_namespace(service, store) -> None:
    a = service.remember(NOTE, idempotency_key="k", namespace="team-a")
    b = service.remember(NOTE, idempotency_key="k", namespace="team-b")
    assert a.node.id != b.node.id and count(store) == 2


def test_a_new_key_stores_a_new_note_even_for_the_same_text(service, store) -> None:
    a = service.remember(NOTE, idempotency_key="k1")
    b = service.remember(NOTE, idempotency_key="k2")
    assert a.node.id != b.node.id and count(store) == 2


def test_the_key_itself_is_not_stored(service, store, db_path: Path) -> None:
    service.remember(NOTE, idempotency_key="customer-4711-private-key-name")
    store.checkpoint()
    assert b"customer-4711-private-key-name" not in db_path.read_bytes()


def test_a_retry_after_a_purge_is_refused_not_stored_again(service, store) -> None:
    first = service.remember(NOTE, idempotency_key="k")
    service.forget(first.node.id, purge=True)
    with pytest.raises(Purged, match="was purged"):
        service.remember(NOTE, idempotency_key="k")
    assert count(store) == 1


@pytest.mark.parametrize("bad", ["", "   "])
def test_an_empty_key_means_no_key(service, bad: str) -> None:
    assert service.remember(NOTE, idempotency_key=bad).outcome is InsertOutcome.INSERTED


@pytest.mark.parametrize("bad", [7, "a\nb", "x" * 201, "bad\x00key"])
def test_a_malformed_key_is_refused(service, store, bad: object) -> None:
    with pytest.raises(Exception, match="idempotency_key"):
        service.remember(NOTE, idempotency_key=bad)
    assert count(store) == 0


def test_concurrent_retries_with_one_key_store_one_note(db_path: Path) -> None:
    stores = [SQLiteStore(db_path) for _ in range(4)]
    try:
        ids: list[str] = []
        lock = threading.Lock()

        def retry(store: SQLiteStore) -> None:
            svc = MemoryService.local(store, extractor=LiteCronista())
            for _ in range(5):
                node = svc.remember(NOTE, idempotency_key="same").node
                with lock:
                    ids.append(node.id)

        threads = [threading.Thread(target=retry, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(ids) == 20 and len(set(ids)) == 1
        assert count(stores[0]) == 1
    finally:
        for s in stores:
            s.close()


# ---------------------------------------------------------------------------- the dedupe window


def test_an_identical_note_moments_later_returns_the_first_with_duplicate_of(service, store) -> None:
    first = service.remember(NOTE)
    again = service.remember(NOTE)
    assert again.outcome is InsertOutcome.DUPLICATE
    assert again.node.id == first.node.id and again.duplicate_of == first.node.id
    assert count(store) == 1


def test_the_window_is_per_namespace_and_scope(service, store) -> None:
    a = service.remember(NOTE, scope="production")
    b = service.remember(NOTE, scope="staging")
    c = service.remember(NOTE, scope="production", namespace="other")
    assert len({a.node.id, b.node.id, c.node.id}) == 3 and count(store) == 3


def test_a_forgotten_or_superseded_note_is_not_a_duplicate(service, store) -> None:
    first = service.remember(NOTE)
    service.forget(first.node.id)
    second = service.remember(NOTE)
    assert second.node.id != first.node.id and second.duplicate_of is None
    replaced = service.remember("We moved the ledger to SQLite.", supersedes=second.node.id)
    third = service.remember(NOTE)
    assert third.node.id not in (first.node.id, second.node.id, replaced.node.id)
    assert count(store) == 4


def test_after_the_window_an_identical_note_is_stored_again(store) -> None:
    svc = MemoryService.local(store, extractor=LiteCronista(), config=ServiceConfig(dedupe_window_ms=50))
    first = svc.remember(NOTE)
    time.sleep(0.1)
    later = svc.remember(NOTE)
    assert later.node.id != first.node.id and later.duplicate_of is None


def test_a_window_of_zero_turns_the_dedupe_off(store) -> None:
    svc = MemoryService.local(store, extractor=LiteCronista(), config=ServiceConfig(dedupe_window_ms=0))
    assert svc.remember(NOTE).node.id != svc.remember(NOTE).node.id


# ---------------------------------------------------------------------------- over MCP


@pytest.mark.anyio
async def test_the_remember_tool_takes_a_key_and_answers_duplicate_of(service, store) -> None:
    async with Client(build_mcp_server(lambda: service)) as client:
        one = await client.call_tool("remember", {"raw_text": NOTE, "idempotency_key": "k"})
        two = await client.call_tool("remember", {"raw_text": NOTE, "idempotency_key": "k"})
        clash = await client.call_tool("remember", {"raw_text": "Another text.", "idempotency_key": "k"})
        dup = await client.call_tool("remember", {"raw_text": "Retry failed payments three times."})
        dup2 = await client.call_tool("remember", {"raw_text": "Retry failed payments three times."})
    assert one.structured_content["id"] == two.structured_content["id"]
    assert clash.is_error and "[conflict]" in clash.content[0].text
    assert "duplicate_of" not in dup.structured_content  # empty fields are left out
    assert dup2.structured_content["duplicate_of"] == dup.structured_content["id"]
    assert count(store) == 2


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ---------------------------------------------------------------------------- the gateway's path


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.kill()


def test_the_gateway_path_keeps_one_note_per_key_and_one_job(tmp_path: Path, redis_server: RedisServer) -> None:
    backing = SQLiteStore(tmp_path / "storage.db")
    server = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing)), s),
        ("evomem.v1.StorageService",),
    )
    client = redis.Redis.from_url(redis_server.url)
    gateways = [
        MemoryService(
            GrpcStorage(f"127.0.0.1:{server.port}"),
            queue=RedisQueue(redis_server.url),
            config=ServiceConfig(extract_inline=False),
        )
        for _ in range(2)
    ]
    try:
        first = gateways[0].remember(NOTE, idempotency_key="k")
        again = gateways[1].remember(NOTE, idempotency_key="k")  # a retry that lands on another gateway
        dup = gateways[1].remember("Retry failed payments three times.")
        dup2 = gateways[0].remember("Retry failed payments three times.")
        with pytest.raises(Conflict):
            gateways[1].remember("Something else.", idempotency_key="k")
        assert again.node.id == first.node.id and again.outcome is InsertOutcome.REPLAYED
        assert dup2.duplicate_of == dup.node.id
        assert count(backing) == 2
        assert client.xlen(STREAM) == 2, "one extraction job per stored note, none for the retries"
    finally:
        for g in gateways:
            g.close()
        server.stop(0)
        backing.close()
