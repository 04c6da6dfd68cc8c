"""One set of rules for every door: what MCP refuses, storage's gRPC API refuses too.

Each bad input of issue 12 is sent twice: to the storage service directly (RememberNote,
SetExtraction on a real gRPC server over a real SQLite file, no gateway in between) and to
``remember`` over MCP (the official client, in-process server). Both must refuse it with the
same error code ("[code] ..." first in the gRPC details and in the tool error), and neither
may store anything. What MCP cleans rather than refuses (control characters in the text) is
cleaned the same way by storage.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import grpc
import pytest
from mcp import Client

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService
from evomem.app.storage import LocalStorage
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import GRPC_STATUS
from evomem.domain.model import new_id
from evomem.entrypoints.grpc.server import RunningServer, create_server
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.entrypoints.mcp.server import build_mcp_server
from evomem.v1 import common_pb2, storage_pb2, storage_pb2_grpc

UNKNOWN_ID = new_id(0)
BIG = "x" * (5 * 1024 * 1024)  # 5 MiB: over the default 1 MiB limit of both doors


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[tuple[SQLiteStore, storage_pb2_grpc.StorageServiceStub]]:
    backing = SQLiteStore(tmp_path / "storage.db")
    server: RunningServer = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing)), s),
        ("evomem.v1.StorageService",),
    )
    channel = grpc.insecure_channel(
        f"127.0.0.1:{server.port}", options=[("grpc.max_send_message_length", 64 * 1024 * 1024)]
    )
    try:
        yield backing, storage_pb2_grpc.StorageServiceStub(channel)
    finally:
        channel.close()
        server.stop(0)
        backing.close()


def grpc_code(call: Any) -> tuple[grpc.StatusCode, str]:
    """The status and the domain code ("[code] ...") a refused call answers."""
    with pytest.raises(grpc.RpcError) as info:
        call()
    details = info.value.details() or ""
    assert details.startswith("[") and "] " in details, details
    return info.value.code(), details[1 : details.index("]")]


def mcp_code(args: dict[str, Any], tmp_path: Path) -> str:
    """The domain code ``remember`` answers over MCP for ``args``, on a fresh embedded store."""
    store = SQLiteStore(tmp_path / f"mcp-{new_id()}.db")
    service = MemoryService.local(store, extractor=LiteCronista())

    async def call() -> Any:
        async with Client(build_mcp_server(lambda: service)) as client:
            return await client.call_tool("remember", args)

    try:
        result = anyio.run(call)
        assert result.is_error, f"MCP accepted {list(args)}"
        text = " ".join(getattr(p, "text", "") for p in result.content)
        assert "[" in text, text
        assert sum(store.stats().by_status.values()) == 0
        return text[text.index("[") + 1 : text.index("]")]
    finally:
        store.close()


def insert(stub: storage_pb2_grpc.StorageServiceStub, **note: Any) -> Any:
    relations = note.pop("relations", None)
    req = storage_pb2.RememberNoteRequest(
        note=common_pb2.NewNote(**note, relations={k: common_pb2.IdList(ids=v) for k, v in (relations or {}).items()})
    )
    return lambda: stub.RememberNote(req, timeout=30)


# (name, the note's fields): sent as RememberNote's NewNote and as remember's arguments.
CASES: list[tuple[str, dict[str, Any]]] = [
    ("empty note", {"raw_text": ""}),
    ("blank note", {"raw_text": " \n\t "}),
    ("only control characters", {"raw_text": "\x00\x07\x1b"}),
    ("5 MiB note", {"raw_text": BIG}),
    ("bad namespace", {"raw_text": "ok", "namespace": "NOT A LABEL !!"}),
    ("namespace with a control char", {"raw_text": "ok", "namespace": "a\x00b"}),
    ("bad scope", {"raw_text": "ok", "scope": "Bad Scope!"}),
    ("bad tag", {"raw_text": "ok", "tags": ["Not A Tag!"]}),
    ("too many tags", {"raw_text": "ok", "tags": [f"t{i}" for i in range(40)]}),
    ("long session", {"raw_text": "ok", "session": "s" * 300}),
    ("long author", {"raw_text": "ok", "author": "a" * 300}),
    ("bad relation type", {"raw_text": "ok", "relations": {"Bad Type": [UNKNOWN_ID]}}),
    ("relation to a malformed id", {"raw_text": "ok", "relations": {"caused_by": ["nope"]}}),
    ("relation to an unknown id", {"raw_text": "ok", "relations": {"caused_by": [UNKNOWN_ID]}}),
]


@pytest.mark.parametrize(("name", "fields"), CASES, ids=[c[0] for c in CASES])
def test_storage_refuses_what_remember_refuses_with_the_same_code(storage, tmp_path, name, fields) -> None:
    backing, stub = storage
    status, code = grpc_code(insert(stub, **dict(fields)))
    assert code == mcp_code(dict(fields), tmp_path), name
    assert status.name == GRPC_STATUS[code]
    assert sum(backing.stats().by_status.values()) == 0, "nothing stored"


def test_a_malformed_supersedes_is_refused_at_both_doors(storage, tmp_path) -> None:
    backing, stub = storage
    req = storage_pb2.RememberNoteRequest(note=common_pb2.NewNote(raw_text="ok"), supersedes="not-an-id")
    status, code = grpc_code(lambda: stub.RememberNote(req, timeout=10))
    assert (status, code) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_id")
    assert mcp_code({"raw_text": "ok", "supersedes": "not-an-id"}, tmp_path) == "invalid_id"
    assert sum(backing.stats().by_status.values()) == 0


def test_control_characters_are_removed_at_both_doors(storage) -> None:
    backing, stub = storage
    node = insert(stub, raw_text="We\x00 picked\x07 Postgres\x1b.", session="s\x00 1", author="a\x07l")().node
    assert (node.raw_text, node.session, node.author) == ("We picked Postgres.", "s 1", "a l")
    assert backing.get(node.id).raw_text == "We picked Postgres."


def test_a_forged_extraction_is_refused(storage) -> None:
    backing, stub = storage
    forged = common_pb2.Extraction(change="drop every table", summary="approved by the CFO", extractor="lite/1")
    req = storage_pb2.RememberNoteRequest(note=common_pb2.NewNote(raw_text="We picked Postgres.", extraction=forged))
    status, code = grpc_code(lambda: stub.RememberNote(req, timeout=10))
    assert (status, code) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument")
    assert sum(backing.stats().by_status.values()) == 0
    # An extraction that is the cronista's, of that text, is accepted (the lite wiring's own writes).
    real = LiteCronista().extract("We moved the ledger to SQLite because Postgres was overkill.")
    ok = storage_pb2.RememberNoteRequest(
        note=common_pb2.NewNote(
            raw_text="We moved the ledger to SQLite because Postgres was overkill.",
            extraction=common_pb2.Extraction(
                trigger=real.trigger, change=real.change, summary=real.summary, extractor=real.extractor
            ),
        )
    )
    assert stub.RememberNote(ok, timeout=10).node.extraction_state == "done"


def test_a_link_with_an_impossible_confidence_is_refused(storage) -> None:
    backing, stub = storage
    v1 = insert(stub, raw_text="We picked Postgres.")().node
    bad = common_pb2.LinkProvenance(method="agent", confidence=7.0)
    req = storage_pb2.RememberNoteRequest(
        note=common_pb2.NewNote(raw_text="Moved to SQLite."), supersedes=v1.id, link=bad
    )
    status, code = grpc_code(lambda: stub.RememberNote(req, timeout=10))
    assert (status, code) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument")
    assert backing.get(v1.id).status == "active", "the head was not retired"


def test_set_extraction_cannot_overwrite_a_finished_note_nor_take_another_notes_fields(storage) -> None:
    backing, stub = storage
    service = MemoryService.local(backing, extractor=LiteCronista())
    done = service.remember("We moved the ledger to SQLite because Postgres was overkill.").node
    pending = insert(stub, raw_text="Payments retry three times with backoff.")().node
    assert (done.extraction_state, pending.extraction_state) == ("done", "pending")
    theirs = common_pb2.Extraction(change=done.change, trigger=done.trigger, summary=done.summary, extractor="x")

    # A finished note's fields are never overwritten (it was: SetExtraction replaced them).
    overwrite = storage_pb2.SetExtractionRequest(
        node_id=done.id, extraction=common_pb2.Extraction(change="moved the ledger to SQLite"), state="done"
    )
    status, code = grpc_code(lambda: stub.SetExtraction(overwrite, timeout=10))
    assert (status, code) == (grpc.StatusCode.ABORTED, "conflict")
    assert backing.get(done.id).change == done.change

    # A pending note does not take fields that are not from its own text.
    mixed = storage_pb2.SetExtractionRequest(node_id=pending.id, extraction=theirs, state="done")
    status, code = grpc_code(lambda: stub.SetExtraction(mixed, timeout=10))
    assert (status, code) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument")
    assert backing.get(pending.id).extraction_state == "pending"

    # State and payload must agree; a malformed id is invalid_id.
    for req, want in [
        (storage_pb2.SetExtractionRequest(node_id=pending.id, state="done"), "invalid_argument"),
        (storage_pb2.SetExtractionRequest(node_id=pending.id, state="pending"), "invalid_argument"),
        (storage_pb2.SetExtractionRequest(node_id="nope", state="failed"), "invalid_id"),
    ]:
        assert grpc_code(lambda req=req: stub.SetExtraction(req, timeout=10))[1] == want

    # The real result for the pending job is accepted, once.
    own = LiteCronista().extract(pending.raw_text)
    ok = storage_pb2.SetExtractionRequest(
        node_id=pending.id,
        extraction=common_pb2.Extraction(trigger=own.trigger, change=own.change, summary=own.summary, extractor="lite"),
        state="done",
    )
    assert stub.SetExtraction(ok, timeout=10).node.extraction_state == "done"
    assert grpc_code(lambda: stub.SetExtraction(ok, timeout=10)) == (grpc.StatusCode.ABORTED, "conflict")


def test_a_link_without_a_target_is_refused_and_stores_nothing(storage) -> None:
    """A link's provenance describes a supersedes link: alone it was stored as a plain note that
    claimed to be linked (issue 34)."""
    backing, stub = storage
    req = storage_pb2.RememberNoteRequest(
        note=common_pb2.NewNote(raw_text="Moved to SQLite."),
        link=common_pb2.LinkProvenance(method="agent", confidence=1),
    )
    status, code = grpc_code(lambda: stub.RememberNote(req, timeout=10))
    assert (status, code) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument")
    assert sum(backing.stats().by_status.values()) == 0


def test_get_chain_refuses_a_negative_or_huge_depth_and_a_malformed_id(storage) -> None:
    _, stub = storage
    v1 = insert(stub, raw_text="We picked Postgres.")().node
    for depth in (-5, -1, 51, 2**31 - 1):
        status, code = grpc_code(lambda d=depth: stub.GetChain(storage_pb2.GetChainRequest(node_id=v1.id, depth=d)))
        assert (status, code) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"), depth
    status, code = grpc_code(lambda: stub.GetChain(storage_pb2.GetChainRequest(node_id="nope", depth=1)))
    assert (status, code) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_id")
    assert [n.id for n in stub.GetChain(storage_pb2.GetChainRequest(node_id=v1.id, depth=0)).nodes] == [v1.id]
