"""What the contract suites share (``test_contracts*.py``): the wirings of the storage ports, the
notes they store, and the helpers that compare what two wirings answered.

Five wirings of the node records (``Records``: what ``Store`` and ``Storage`` share):

- ``sqlite``: ``SQLiteStore`` on a file; ``memory``: ``MemoryStore`` (``tests/memory_store.py``),
  the ``Store`` port written from ``evomem.app.ports`` alone; ``postgres``: ``PostgresStore`` on
  a database of its own in a real PostgreSQL 17 with pgvector (``tests/postgres_server.py``);
- ``local``: ``LocalStorage(SQLiteStore)``, the ``Storage`` port in process; ``grpc``:
  ``GrpcStorage`` talking to ``StorageServicer(LocalStorage(SQLiteStore))`` on a loopback port.

Each wiring's ``backing`` is the store behind it, read directly: for ``grpc`` that proves the
conversion loses nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from memory_store import MemoryStore

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.notes import NoteRules
from evomem.app.ports import Store
from evomem.app.storage import LocalStorage
from evomem.domain.errors import EvoMemError
from evomem.domain.model import Extraction, LinkProvenance, MemoryNode, NewNote, new_id
from evomem.domain.recall import RecallQuery
from evomem.domain.remember import NoteWrite
from evomem.entrypoints.grpc.server import RunningServer, create_server
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.v1 import storage_pb2_grpc

UNKNOWN_ID = new_id(0)  # well-formed, never stored
AGENT = LinkProvenance(method="agent", confidence=1.0, by="alice")
# The note EXTRACTION was taken from: storage accepts an extraction only when every field is a
# span of the note's text (NoteRules.check_note), so notes stored with it use this text.
LEDGER = "We moved the ledger to SQLite because Postgres was overkill; we tried DuckDB, so backups are a file copy."
EXTRACTION = Extraction(
    trigger="because Postgres was overkill",
    change="moved the ledger to SQLite",
    alternatives_tried="tried DuckDB",
    consequences="backups are a file copy",
    summary="Moved the ledger to SQLite.",
    extractor="test/1",
)
# the Store port; "tantivy": SQLiteStore with EVOMEM_WORD_INDEX=tantivy (its word index beside the file)
STORES = ("sqlite", "tantivy", "memory", "postgres")
STORAGES = ("local", "grpc")  # the Storage port


def serve(register: Callable[[Any], None], name: str) -> RunningServer:
    running = create_server("127.0.0.1:0", register, (name,))
    running.set_serving(True)
    return running


def serve_storage(storage: LocalStorage, rules: NoteRules | None = None) -> RunningServer:
    """The storage service over ``storage`` on a loopback port."""
    return serve(
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(storage, rules), s),
        "evomem.v1.StorageService",
    )


@dataclass
class Wiring:
    kind: str
    port: Any  # what the test talks to: a Store (sqlite, memory) or a Storage (local, grpc)
    backing: Any  # the store behind it, read directly (SQLiteStore, MemoryStore, PostgresStore)

    def insert(self, note: NewNote, *, supersedes: str | None = None, link: LinkProvenance | None = None) -> MemoryNode:
        """A note written once: ``Store.insert_once``, or ``Storage.remember_note``."""
        if isinstance(self.port, Store):
            return self.port.insert_once(note, supersedes=supersedes, link=link)[0]
        return self.port.remember_note(NoteWrite(note, supersedes=supersedes, link=link)).node

    def found(self, terms: Sequence[str], namespace: str = "default") -> list[str]:
        """What a search by words finds: the Store's hits, or the heads Storage recalls."""
        if isinstance(self.port, Store):
            return [h.node_id for h in self.port.search(terms, namespace=namespace, limit=10)]
        query = RecallQuery(terms=tuple(terms), text=" ".join(terms), namespace=namespace, k=10, limit=50)
        return [r.head.id for r, _ in self.port.recall_nodes(query).results]


@contextmanager
def open_wiring(kind: str, tmp_path: Path) -> Iterator[Wiring]:
    """One wiring (``STORES`` or ``STORAGES``) on a new store."""
    if kind == "memory":
        memory = MemoryStore()
        yield Wiring(kind, memory, memory)
        return
    if kind == "postgres":
        with postgres_store() as pg:
            yield Wiring(kind, pg, pg)
        return
    backing = SQLiteStore(tmp_path / f"contract-{kind}.db", word_index="tantivy" if kind == "tantivy" else "fts5")
    try:
        if kind in ("sqlite", "tantivy"):
            yield Wiring(kind, backing, backing)
        elif kind == "local":
            yield Wiring(kind, LocalStorage(backing), backing)
        else:
            running = serve_storage(LocalStorage(backing))
            client = GrpcStorage(f"127.0.0.1:{running.port}")
            try:
                yield Wiring(kind, client, backing)
            finally:
                client.close()
                running.stop(0)
    finally:
        backing.close()


@contextmanager
def postgres_store() -> Iterator[Any]:
    """A ``PostgresStore`` on a new database of the session's PostgreSQL, dropped afterwards."""
    from postgres_server import PostgresServer

    from evomem.adapters.postgres.store import PostgresStore

    server = PostgresServer.shared()
    url = server.fresh_database()
    store = PostgresStore(url)
    try:
        yield store
    finally:
        store.close()
        server.drop(url)


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


# ---------------------------------------------------------------------------- comparing two wirings


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
