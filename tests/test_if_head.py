"""remember(supersedes=id, if_head=true): optimistic concurrency, in both wirings.

Many writers name the same head at once: with if_head exactly one is stored and every other is
refused with [conflict] naming the head (the winner), nothing of theirs stored; without it every
write is kept, re-targeted to the head of the moment (today's behaviour)."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
import pytest
from mcp import Client
from wirings import WIRINGS, wired

from evomem.adapters.grpc import convert
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService
from evomem.app.storage import LocalStorage
from evomem.domain.errors import Conflict, InvalidArgument, NotHead
from evomem.domain.model import NewNote
from evomem.domain.remember import NoteWrite
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.entrypoints.mcp.server import build_mcp_server
from evomem.v1 import storage_pb2_grpc

ROOT = "We picked Postgres for the ledger because the team knew it well."
WRITERS = 8


def _race(service: MemoryService, root: str, if_head: bool) -> tuple[list[str], list[Exception]]:
    start = threading.Barrier(WRITERS)
    stored: list[str] = []
    refused: list[Exception] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        start.wait()
        try:
            out = service.remember(f"Writer {n} moved the ledger to engine {n}.", supersedes=root, if_head=if_head)
            with lock:
                stored.append(out.node.id)
        except Exception as exc:
            with lock:
                refused.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stored, refused


@pytest.mark.parametrize("wiring", WIRINGS)
def test_concurrent_writers_with_if_head_one_wins_the_others_are_told_the_head(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        root = service.remember(ROOT).node.id
        stored, refused = _race(service, root, if_head=True)
        assert len(stored) == 1, (stored, refused)
        assert len(refused) == WRITERS - 1
        winner = stored[0]
        for exc in refused:
            assert isinstance(exc, Conflict) and exc.code == "conflict"
            assert f"the head is {winner}" in str(exc), str(exc)
        chain = service.storage.chain(winner, 50)
        assert [n.id for n in chain] == [winner, root]  # nothing of the losers was stored


@pytest.mark.parametrize("wiring", WIRINGS)
def test_concurrent_writers_without_if_head_are_all_kept_in_one_chain(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        root = service.remember(ROOT).node.id
        stored, refused = _race(service, root, if_head=False)
        assert refused == [] and len(stored) == WRITERS
        heads = [service.storage.get(i) for i in stored]
        assert sorted(n.version for n in heads if n is not None) == list(range(2, WRITERS + 2))


@pytest.mark.parametrize("wiring", WIRINGS)
def test_if_head_on_the_head_stores_and_on_an_old_version_names_the_head(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        root = service.remember(ROOT).node.id
        second = service.remember("We moved the ledger from Postgres to SQLite.", supersedes=root, if_head=True)
        assert second.node.supersedes == root and second.warnings == []
        with pytest.raises(NotHead if wiring == "embedded" else Conflict) as caught:
            service.remember("We moved the ledger to DuckDB.", supersedes=root, if_head=True)
        assert second.node.id in str(caught.value) and str(caught.value).startswith("[conflict]")
        # the default re-targets, as before
        third = service.remember("We moved the ledger to DuckDB instead.", supersedes=root)
        assert third.node.supersedes == second.node.id


@pytest.mark.parametrize("wiring", WIRINGS)
def test_if_head_without_supersedes_or_not_a_boolean_is_refused(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        with pytest.raises(InvalidArgument, match="if_head needs supersedes"):
            service.remember(ROOT, if_head=True)
        root = service.remember(ROOT).node.id
        with pytest.raises(InvalidArgument, match="if_head must be true or false"):
            service.remember("Ledger on SQLite.", supersedes=root, if_head="yes")


def test_the_storage_service_answers_aborted_with_the_head(tmp_path: Path) -> None:
    """Over the wire: ABORTED, the message starting with [conflict] and naming the head."""
    from concurrent import futures

    backing = SQLiteStore(tmp_path / "m.db")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        service = MemoryService.local(backing)
        root = service.remember(ROOT).node.id
        head = service.remember("Ledger moved to SQLite.", supersedes=root).node.id
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = storage_pb2_grpc.StorageServiceStub(channel)
            write = NoteWrite(NewNote("Ledger moved to DuckDB."), supersedes=root, if_head=True)
            with pytest.raises(grpc.RpcError) as caught:
                stub.RememberNote(convert.write_to_pb(write))
        assert caught.value.code() == grpc.StatusCode.ABORTED
        assert caught.value.details().startswith("[conflict]") and head in caught.value.details()
    finally:
        server.stop(0)
        backing.close()


@pytest.mark.anyio
async def test_the_mcp_tool_answers_a_conflict_error_naming_the_head(service: MemoryService) -> None:
    async with Client(build_mcp_server(lambda: service)) as client:
        root = (await client.call_tool("remember", {"raw_text": ROOT})).structured_content["id"]
        head = (
            await client.call_tool("remember", {"raw_text": "Ledger on SQLite.", "supersedes": root, "if_head": True})
        ).structured_content["id"]
        refused = await client.call_tool(
            "remember", {"raw_text": "Ledger on DuckDB.", "supersedes": root, "if_head": True}
        )
        assert refused.is_error
        text = "".join(getattr(p, "text", "") for p in refused.content)
        assert "[conflict]" in text and head in text


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
