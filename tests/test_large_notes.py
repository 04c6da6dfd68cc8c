"""Large notes round-trip through every transport, with the official MCP client's default limits.

Notes of 100 kB, 300 kB, 600 kB and 1 MiB (the default ``--max-note-bytes``) go through
``remember``, ``get_node`` and ``recall`` over:

- stdio: ``evomem-mcp --db PATH`` spawned as an MCP client launches it;
- the embedded streamable HTTP server: ``evomem-mcp --transport http --port 0``;
- the gateway: ``evomem.entrypoints.mcp.gateway.create_app()`` (stateless streamable HTTP, the app
  gunicorn serves) on uvicorn, over a real storage gRPC server on loopback and a real Redis.

The client refuses server-sent events over 1 MiB, so an answer that repeated a 600 kB note, or
echoed a 200 kB query, used to fail after the note was stored. Now answers show a note cut at
``EVOMEM_ANSWER_NOTE_CHARS`` (``truncated``), and ``get_node(full_text=true)`` pages the whole
text back, which must equal what was sent.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.text import DEFAULT_MAX_NOTE_BYTES
from evomem.entrypoints.mcp.answers import ANSWER_MAX_BYTES, DEFAULT_NOTE_CHARS, PAGE_CHARS
from tests.test_grpc_services import storage_server
from tests.test_mcp_transports import HttpServer, http_server, stdio_params  # noqa: F401  (http_server: a fixture)

pytestmark = pytest.mark.anyio

SIZES = (100_000, 300_000, 600_000, DEFAULT_MAX_NOTE_BYTES)
WORDS = "ledger queue cache billing search backup metrics export mailer auth".split()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def big_note(size: int) -> str:
    """``size`` bytes of UTF-8: a marker word, a decision, then numbered words in sentences
    (with a few 2-byte characters, except in the 1 MiB note, which is ASCII up to the limit)."""
    parts = [f"zq{size} We moved the ledger to SQLite because Postgres was overkill."]
    length, i = len(parts[0]), 0
    while length < size:
        word = f" {WORDS[i % len(WORDS)]}{i % 997}" + ("." if i % 40 == 39 else "")
        if size < DEFAULT_MAX_NOTE_BYTES and i % 500 == 7:
            word += " café"
        parts.append(word)
        length += len(word.encode())
        i += 1
    text = "".join(parts)
    while len(text.encode()) > size:
        text = text[:-1]
    return text.rstrip()


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def wire_bytes(result: Any) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


async def call(client: Client, tool: str, args: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool} failed: {text_of(result)[:500]}"
    assert wire_bytes(result) <= ANSWER_MAX_BYTES + 4096, f"{tool}: {wire_bytes(result)} bytes"
    return result


async def full_text(client: Client, node_id: str) -> str:
    pages: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await call(client, "get_node", {"node_id": node_id, "full_text": True, "offset": offset})
        data = page.structured_content
        assert data["offset"] == offset and data["id"] == node_id
        pages.append(text_of(page))
        assert len(pages[-1]) <= PAGE_CHARS
        offset = data.get("next_offset")
    return "".join(pages)


async def round_trip(client: Client) -> None:
    """Every size: stored, read back whole in pages, shown cut, recalled (alone and together)."""
    ids: dict[int, str] = {}
    for size in SIZES:
        note = big_note(size)
        assert len(note.encode()) <= DEFAULT_MAX_NOTE_BYTES
        stored = await call(client, "remember", {"raw_text": note, "tags": ["large"]})
        node_id = stored.structured_content["id"]
        ids[size] = node_id
        assert note[:1000] not in text_of(stored)  # the caller just sent it: not echoed

        got = await call(client, "get_node", {"node_id": node_id})
        assert got.structured_content["truncated"] is True
        assert got.structured_content["text_chars"] == len(note)
        assert note[:DEFAULT_NOTE_CHARS] in text_of(got) and note[: DEFAULT_NOTE_CHARS + 1] not in text_of(got)
        assert await full_text(client, node_id) == note

        full = await call(client, "get_node", {"node_id": node_id, "detail": "full"})
        assert full.structured_content["raw_text"] == note[:DEFAULT_NOTE_CHARS]
        assert note[:200] not in text_of(full)  # full detail: the text travels in the structured content only

        found = await call(client, "recall", {"query": f"zq{size}"})
        hits = found.structured_content["results"]
        assert hits[0]["id"] == node_id and hits[0]["truncated"] is True
    together = await call(client, "recall", {"query": "ledger sqlite postgres", "k": 10, "tags": ["large"]})
    assert {h["id"] for h in together.structured_content["results"]} == set(ids.values())
    full = await call(client, "recall", {"query": "ledger sqlite", "k": 10, "detail": "full", "tags": ["large"]})
    assert len(full.structured_content["results"]) == len(SIZES)
    # A 200 kB query is searched, and not echoed back.
    query = "ledger " + " ".join(f"word{i}" for i in range(25_000))
    assert len(query) > 200_000
    long_query = await call(client, "recall", {"query": query, "detail": "full"})
    assert len(long_query.structured_content["query"]) <= 200
    assert wire_bytes(long_query) < 64 * 1024


# ---------------------------------------------------------------------------- stdio


async def test_large_notes_over_stdio(tmp_path: Path, server_env: dict[str, str]) -> None:
    async with Client(stdio_params(tmp_path / "e.db", server_env), read_timeout_seconds=120) as client:
        await round_trip(client)


# ---------------------------------------------------------------------------- the embedded HTTP server


async def test_large_notes_over_embedded_http(http_server: HttpServer) -> None:  # noqa: F811  (the fixture)
    async with Client(http_server.url, read_timeout_seconds=120) as client:
        await round_trip(client)


# ---------------------------------------------------------------------------- the gateway


@pytest.fixture
def keep_logging() -> Iterator[None]:
    """create_app configures the root logger; put it back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` on uvicorn in a thread, on a free loopback port; yields the MCP URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


async def test_large_notes_through_the_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep_logging: None
) -> None:
    from evomem.entrypoints.mcp import gateway
    from tests.redis_server import RedisServer

    redis = RedisServer(tmp_path / "redis").start()
    store = SQLiteStore(tmp_path / "storage.db")
    storage = storage_server(store)
    storage.set_serving(True)
    try:
        for name in list(os.environ):
            if name.startswith("EVOMEM_"):
                monkeypatch.delenv(name)
        monkeypatch.setenv("EVOMEM_STORAGE_ADDR", f"127.0.0.1:{storage.port}")
        monkeypatch.setenv("EVOMEM_REDIS_URL", redis.url)
        monkeypatch.setenv("EVOMEM_VECTORS", "off")
        monkeypatch.setenv("EVOMEM_LOG_LEVEL", "WARNING")
        async with serving(gateway.create_app()) as url, Client(url, read_timeout_seconds=120) as client:
            await round_trip(client)
            stats = (await call(client, "stats", {})).structured_content
            assert stats["server"]["wiring"] == "gateway"
        # Behind the gateway, storage's file holds every note whole.
        texts = {len(n.raw_text.encode()) for n in store.get_many(list(_ids(store))).values()}
        assert texts == {len(big_note(size).encode()) for size in SIZES}
    finally:
        storage.stop(0)
        store.close()
        redis.kill()


def _ids(store: SQLiteStore) -> list[str]:
    with store._conn() as conn:  # type: ignore[attr-defined]
        return [row[0] for row in conn.execute("SELECT id FROM nodes")]


def test_big_note_sizes() -> None:
    """The helper makes notes of the sizes the tests name (the 1 MiB one exactly at the limit)."""
    sizes = [len(big_note(size).encode()) for size in SIZES]
    assert all(size - 8 <= got <= size for size, got in zip(SIZES, sizes, strict=True)), sizes
    assert "café" in big_note(100_000) and "café" not in big_note(DEFAULT_MAX_NOTE_BYTES)
