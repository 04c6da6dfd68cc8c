"""The two wirings of one service, for the tests of issue 33 (if_head, dependencies, check, review):
``embedded`` (``MemoryService.local`` over a SQLite file) and ``grpc`` (``MemoryService`` over
``GrpcStorage``, talking to a real storage server on loopback: ``StorageServicer(LocalStorage(
SQLiteStore))``). Both run the same extractor (the lite cronista, inline)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService
from evomem.app.storage import LocalStorage
from evomem.domain.cronista import LiteCronista
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.v1 import storage_pb2_grpc

WIRINGS = ("embedded", "grpc")


@contextmanager
def wired(kind: str, path: Path) -> Iterator[MemoryService]:
    """A service of wiring ``kind`` over a new SQLite file at ``path``."""
    backing = SQLiteStore(path)
    if kind == "embedded":
        service = MemoryService.local(backing, extractor=LiteCronista())
        try:
            yield service
        finally:
            service.close()
        return
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    service = MemoryService(GrpcStorage(f"127.0.0.1:{port}"), extractor=LiteCronista())
    try:
        yield service
    finally:
        service.close()
        server.stop(0)
        backing.close()
