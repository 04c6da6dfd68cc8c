"""The team gateway's own parts (issue 14): the gRPC shared secret, the audit log through
storage, the gateway app with tokens, rate limits counted in Redis.

Real parts: a storage gRPC server on loopback over a real SQLite file, a real redis-server,
the gateway's ASGI app (``create_app``) served by uvicorn, the official MCP client.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import grpc
import httpx2
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from procutil import free_port
from redis_server import RedisServer
from test_team_auth import INIT, JSON_HEADERS, TOKENS, token_file

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.access import Principal
from evomem.app.storage import LocalStorage
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.errors import EvoMemError
from evomem.entrypoints.grpc.server import RunningServer, create_server
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.ops.runtime import ConfigError
from evomem.security.configure import grpc_listen_secret
from evomem.security.ratelimit import RateLimiter, build_limiter
from evomem.settings import Settings
from evomem.v1 import storage_pb2_grpc

SECRET = "grpc-shared-secret-for-tests"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def backing(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "storage.db")
    yield store
    store.close()


@pytest.fixture
def storage(backing: SQLiteStore) -> Iterator[RunningServer]:
    running = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing)), s),
        ("evomem.v1.StorageService",),
        secret=SECRET,
    )
    running.set_serving(True)
    yield running
    running.stop(0)


# ---------------------------------------------------------------------------- the gRPC secret


def test_storage_refuses_calls_without_the_secret(storage: RunningServer) -> None:
    addr = f"127.0.0.1:{storage.port}"
    for secret in (None, "wrong", SECRET + "x", ""):
        client = GrpcStorage(addr, secret=secret, timeout_s=5)
        with pytest.raises(EvoMemError) as caught:
            client.stats()
        assert "unauthenticated" in str(caught.value).lower()
        client.close()
    good = GrpcStorage(addr, secret=SECRET, timeout_s=5)
    assert good.stats().by_status["active"] == 0
    good.close()
    # Health stays open: probes carry no metadata.
    with grpc.insecure_channel(addr) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_audit_entries_go_through_storage(storage: RunningServer, backing: SQLiteStore) -> None:
    client = GrpcStorage(f"127.0.0.1:{storage.port}", secret=SECRET, timeout_s=5)
    for n in range(5):
        client.append_audit(
            AuditEntry(
                at=1000 + n, identity="alice", role="writer", tool="remember", namespace="a" if n % 2 else "b",
                ids=(f"ID{n}",), outcome="ok",
            )
        )  # fmt: skip
    page = client.audit_page(AuditQuery(limit=2))
    assert [e.ids for e in page] == [("ID4",), ("ID3",)]
    assert page[0].seq > page[1].seq > 0
    older = client.audit_page(AuditQuery(limit=10, before_seq=page[1].seq))
    assert [e.ids[0] for e in older] == ["ID2", "ID1", "ID0"]
    only_a = client.audit_page(AuditQuery(namespace="a", since_ms=1002, limit=10))
    assert [e.ids[0] for e in only_a] == ["ID3"]
    assert backing.audit_page(AuditQuery(limit=10)) == client.audit_page(AuditQuery(limit=10))
    client.close()


def test_grpc_services_bind_loopback_and_refuse_exposure_without_a_secret(caplog: pytest.LogCaptureFixture) -> None:
    assert Settings().grpc.host == "127.0.0.1"
    assert Settings().mcp.host is None and Settings().metrics.host == "127.0.0.1"
    assert grpc_listen_secret(Settings()) is None  # loopback: allowed without a secret
    with pytest.raises(ConfigError, match="without EVOMEM_GRPC_SECRET"):
        grpc_listen_secret(Settings(grpc_host="0.0.0.0"))
    with caplog.at_level(logging.WARNING, logger="evomem.bootstrap"):
        assert grpc_listen_secret(Settings(grpc_host="0.0.0.0", grpc_insecure=True)) is None
    assert "INSECURE" in caplog.text
    assert grpc_listen_secret(Settings(grpc_host="0.0.0.0", grpc_secret="s")) == "s"


# ---------------------------------------------------------------------------- the gateway app


class Served:
    def __init__(self, app: Any, port: int) -> None:
        import uvicorn

        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    return
            except httpx2.TransportError:
                time.sleep(0.05)
        raise AssertionError("the gateway app did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    server = RedisServer(tmp_path / "redis").start()
    yield server.url
    server.stop()


@contextmanager
def serve_gateway(
    storage: RunningServer, redis_url: str, auth_file: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    """The real gateway app (``create_app``) over ``storage`` and Redis, tokens from ``auth_file``."""
    from evomem.entrypoints.mcp import gateway as gateway_module

    for var in [v for v in __import__("os").environ if v.startswith("EVOMEM_")]:
        monkeypatch.delenv(var)
    port = free_port()
    env = {
        "EVOMEM_STORAGE_ADDR": f"127.0.0.1:{storage.port}",
        "EVOMEM_REDIS_URL": redis_url,
        "EVOMEM_AUTH_FILE": str(auth_file),
        "EVOMEM_GRPC_SECRET": SECRET,
        "EVOMEM_PORT": str(port),
        "EVOMEM_VECTORS": "off",
        "EVOMEM_LOG_LEVEL": "WARNING",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    served = Served(gateway_module.create_app(), port)
    try:
        yield served
    finally:
        served.stop()
        root.handlers[:], root.level = handlers, level


@pytest.fixture
def gateway(
    storage: RunningServer, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    auth_file = token_file(tmp_path / "tokens.toml", TOKENS, rates={"rita": 3})
    with serve_gateway(storage, redis_url, auth_file, monkeypatch) as served:
        yield served


def _client(url: str, who: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS[who][0]}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


@pytest.mark.anyio
async def test_gateway_enforces_tokens_namespaces_and_audits_through_storage(
    gateway: Served, backing: SQLiteStore
) -> None:
    assert httpx2.post(gateway.url, json=INIT, headers=JSON_HEADERS).status_code == 401
    async with _client(gateway.url, "alice") as alice, _client(gateway.url, "bob") as bob:
        made = await alice.call_tool("remember", {"raw_text": "team-a ledger runs on Postgres", "author": "mallory"})
        assert not made.is_error, made.content
        node_id = made.structured_content["id"]  # type: ignore[index]
        assert backing.get(node_id).author == "alice"  # type: ignore[union-attr]
        assert backing.get(node_id).namespace == "team-a"  # type: ignore[union-attr]
        hidden = await bob.call_tool("get_node", {"node_id": node_id})
        unknown = await bob.call_tool("get_node", {"node_id": "01J9ZK3V8W5Q6R7S8T9V0W1X2Y"})
        assert hidden.is_error and unknown.is_error
        assert hidden.content[0].text.replace(node_id, "X") == unknown.content[0].text.replace(  # type: ignore[union-attr]
            "01J9ZK3V8W5Q6R7S8T9V0W1X2Y", "X"
        )
        refused = await bob.call_tool("recall", {"query": "ledger", "namespace": "team-a"})
        assert refused.is_error and "[forbidden]" in refused.content[0].text  # type: ignore[union-attr]
        stats = await bob.call_tool("stats", {})
        assert "storage" not in stats.structured_content["server"]  # type: ignore[index]
    async with _client(gateway.url, "root") as root:
        stats = await root.call_tool("stats", {})
        assert stats.structured_content["server"]["storage"].startswith("127.0.0.1:")  # type: ignore[index]
        page = await root.call_tool("audit", {"namespace": "team-a"})
        entries = page.structured_content["entries"]  # type: ignore[index]
        assert [(e["identity"], e["tool"], e["outcome"], e["ids"]) for e in entries] == [
            ("alice", "remember", "ok", [node_id])
        ]
    # Recorded in storage's own file.
    assert [e.identity for e in backing.audit_page(AuditQuery(limit=10))] == ["alice"]


def test_gateway_rate_limit_answers_429_with_retry_after(gateway: Served) -> None:
    headers = {**JSON_HEADERS, "Authorization": f"Bearer {TOKENS['rita'][0]}"}
    codes: list[int] = []
    retry: list[str] = []
    with httpx2.Client(timeout=10) as http:
        for _ in range(12):
            resp = http.post(gateway.url, json=INIT, headers=headers)
            codes.append(resp.status_code)
            if resp.status_code == 429:
                retry.append(resp.headers["retry-after"])
        # alice has no rate: never limited.
        alice = {**JSON_HEADERS, "Authorization": f"Bearer {TOKENS['alice'][0]}"}
        assert {http.post(gateway.url, json=INIT, headers=alice).status_code for _ in range(12)} == {200}
    assert codes[:3] == [200, 200, 200]
    assert 429 in codes
    assert retry and all(int(r) >= 1 for r in retry)


@pytest.mark.anyio
async def test_rate_limits_are_shared_through_redis(redis_url: str) -> None:
    """Two limiters (two gunicorn workers, or two replicas) on one Redis share each bucket."""
    one, two = build_limiter(redis_url), build_limiter(redis_url)
    assert isinstance(one, RateLimiter) and one.where == "redis"
    ana = Principal("ana", "reader", ("a",), rate=4)
    allowed = 0
    for n in range(10):
        if await (one if n % 2 else two).retry_after(ana) is None:
            allowed += 1
    assert allowed == 4  # the burst of one bucket, not 4 per worker
    other = Principal("ben", "reader", ("a",), rate=4)
    assert await one.retry_after(other) is None  # buckets are per identity
    # Tokens come back at the rate (4/s): one is there again well within 3 s, even on a busy machine.
    deadline = time.monotonic() + 3.0
    while await two.retry_after(ana) is not None:
        assert time.monotonic() < deadline, "no token came back within 3 s at 4 per second"
        await asyncio.sleep(0.25)


@dataclass
class TeamGateway:
    """A running team gateway (``conftest.team_gateway``)."""

    served: Served
    storage: RunningServer
    backing: SQLiteStore

    @property
    def url(self) -> str:
        return self.served.url

    @staticmethod
    def token(who: str) -> str:
        return TOKENS[who][0]

    @property
    def db(self) -> Path:
        return Path(self.backing.path)


@contextmanager
def team_gateway_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TeamGateway]:
    """Storage (gRPC, loopback, the shared secret) over a SQLite file, Redis, and the gateway app."""
    backing = SQLiteStore(tmp_path / "storage.db")
    running = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(backing)), s),
        ("evomem.v1.StorageService",),
        secret=SECRET,
    )
    running.set_serving(True)
    redis = RedisServer(tmp_path / "redis").start()
    try:
        with serve_gateway(running, redis.url, token_file(tmp_path / "tokens.toml", TOKENS), monkeypatch) as served:
            yield TeamGateway(served, running, backing)
    finally:
        redis.stop()
        running.stop(0)
        backing.close()


@pytest.mark.anyio
async def test_gateway_check_is_a_read_review_a_write_and_if_head_a_conflict(
    gateway: Served, backing: SQLiteStore
) -> None:
    """Issue 33 through the team gateway (HTTP, tokens, storage over gRPC): a reader checks, a
    reader may not review, a writer reviews (audited), and if_head answers [conflict]."""
    async with _client(gateway.url, "alice") as alice:
        old = (await alice.call_tool("remember", {"raw_text": "The ledger runs on Postgres."})).structured_content
        built = await alice.call_tool(
            "remember", {"raw_text": "Ledger reports are Postgres views.", "relations": {"depends_on": [old["id"]]}}
        )
        new = await alice.call_tool(
            "remember",
            {"raw_text": "We moved the ledger from Postgres to SQLite.", "supersedes": old["id"], "if_head": True},
        )
        assert not new.is_error, new.content
        late = await alice.call_tool(
            "remember", {"raw_text": "We moved the ledger to DuckDB.", "supersedes": old["id"], "if_head": True}
        )
        assert late.is_error and "[conflict]" in late.content[0].text  # type: ignore[union-attr]
        assert new.structured_content["id"] in late.content[0].text  # type: ignore[union-attr,index]
    built_id = built.structured_content["id"]  # type: ignore[index]
    assert backing.get(built_id).needs_review is not None  # type: ignore[union-attr]
    async with _client(gateway.url, "rita") as rita:
        checked = await rita.call_tool("check", {"statement": "the ledger runs on Postgres"})
        assert checked.structured_content["verdict"] == "superseded", checked.content  # type: ignore[index]
        await anyio.sleep(1.1)  # rita may make 3 calls a second here
        refused = await rita.call_tool("review", {"node_id": built_id})
        assert refused.is_error and "[forbidden]" in refused.content[0].text  # type: ignore[union-attr]
    async with _client(gateway.url, "alice") as alice:
        done = await alice.call_tool("review", {"node_id": built_id})
        assert done.structured_content["changed"] is True  # type: ignore[index]
    assert backing.get(built_id).needs_review is None  # type: ignore[union-attr]
    tools = [(e.identity, e.tool, e.outcome) for e in backing.audit_page(AuditQuery(limit=20))]
    assert ("alice", "review", "ok") in tools and ("rita", "review", "forbidden") in tools
