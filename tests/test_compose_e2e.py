"""The multi-service deployment, end to end: compose.cpu.yaml on a real Docker daemon.

The session builds the image (``make images``), starts the whole project
(redis, storage, cronista, linker, worker, gateway) with ``up -d`` under a unique project
name and a free host port, and talks to the gateway only as an agent would: with the
official MCP client over streamable HTTP. pytest-docker runs ``up``/``down -v``.

- the ledger story: supersedes, recall resolving to the version in force, history, and the
  worker's extraction reaching ``done``;
- restarts under load: storage restarted and the worker killed while remembers keep
  coming; every acknowledged note survives and is extracted, failures are clear tool
  errors, nothing hangs;
- every service reports healthy, and the deployment's shape (one data volume, bound to
  localhost, non-root).

Skipped (with the reason) only when no Docker daemon is reachable, and not even then under
EVOMEM_REQUIRE_DOCKER=1 (for CI). Docker without Compose, or an image that does not build,
fails: that is a broken set-up, not a missing one.
"""

from __future__ import annotations

import importlib.util
import os
import re
import secrets
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from compose_support import (
    COMPOSE_FILE,
    ROOT,
    SERVICES,
    Compose,
    build_images,
    compose_command,
    docker_unreachable,
    write_secrets,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from procutil import free_port

# The first test also pays for the session set-up: `make images` (minutes on a machine that
# must first build the stand-in base images) and `up` with every health check passing.
pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(1800)]

POSTGRES = "We picked Postgres for the ledger because the team knows it well."
SQLITE = "We moved the ledger from Postgres to SQLite, because Postgres was overkill for one writer."
CALL_DEADLINE_S = 60  # a remember that takes longer than this is a hang (gRPC deadline is 10 s)
EXTRACTION_DEADLINE_S = 240  # worker killed: its jobs are reclaimed after the 30 s visibility timeout
LOAD_CLIENTS = 4
# How EvoMem's MCP tools report a failure (tests/test_bad_input.py): the stable code first.
# A dependency that is down is "[unavailable]", within the gRPC deadline.
UNAVAILABLE = re.compile(r"^Error executing tool remember: \[unavailable\] \S")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# ---------------------------------------------------------------------------- pytest-docker set-up


#: The gateway's tokens in the test project (compose.cpu.yaml mounts them as a secret).
WRITER_TOKEN = "evm_" + secrets.token_urlsafe(24)
ADMIN_TOKEN = "evm_" + secrets.token_urlsafe(24)


@pytest.fixture(scope="session")
def secrets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tokens.toml and grpc-secret, as `make secrets` makes them (readable by the image's user)."""
    entries = [("ledger-team", WRITER_TOKEN, "writer"), ("ops", ADMIN_TOKEN, "admin")]
    return write_secrets(tmp_path_factory.mktemp("secrets"), entries)


@pytest.fixture(scope="session")
def compose_env(secrets_dir: Path) -> dict[str, str]:
    """The variables compose.cpu.yaml reads, fixed for the test project."""
    return {
        "EVOMEM_BIND": "127.0.0.1",
        "EVOMEM_PORT": str(free_port()),
        "EVOMEM_AUTO_SUPERSEDE": "off",
        "EVOMEM_LOG_LEVEL": "INFO",
        "EVOMEM_SECRETS_DIR": str(secrets_dir),
    }


def connect(url: str, token: str = WRITER_TOKEN) -> Client:
    """The official client with the gateway's bearer token."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http))


@pytest.fixture(scope="session")
def docker_compose_command(compose_env: dict[str, str]) -> str:
    """``docker compose`` or ``docker-compose``, run under ``env``: the project sees the test's
    settings and none of the caller's other EVOMEM_* variables, and this process's environment
    is left alone (other tests in the session read it)."""
    reason = docker_unreachable()
    if reason:
        message = f"compose end-to-end tests need Docker: {reason}"
        if os.environ.get("EVOMEM_REQUIRE_DOCKER") == "1":  # CI: a missing daemon must not pass silently
            pytest.fail(message)
        pytest.skip(message)
    command = compose_command()
    if command is None:
        pytest.fail("Docker is reachable but Compose is not: install the compose plugin or docker-compose >= 1.27")
    unset = [f"-u {k}" for k in sorted(os.environ) if k.startswith("EVOMEM_") and k != "EVOMEM_IMAGE"]
    assign = [f"{k}={v}" for k, v in compose_env.items()]
    return " ".join(["env", *unset, *assign, command])


@pytest.fixture(scope="session")
def docker_compose_file() -> str:
    return str(COMPOSE_FILE)


@pytest.fixture(scope="session")
def docker_compose_project_name() -> str:
    # Compose v1 keeps only [a-z0-9_-] of a project name.
    return f"evomem{secrets.token_hex(4)}"


@pytest.fixture(scope="session")
def docker_setup(docker_compose_command: str, docker_compose_project_name: str) -> Iterator[list[str]]:
    """Build the image first (``make images``), then pytest-docker runs ``up -d``.

    The teardown is a safety net for a failed ``up`` (pytest-docker then skips its own
    ``down``): whatever of the project still runs is logged and removed with its volumes.
    """
    try:
        build_images()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield ["up -d"]
    compose = Compose(docker_compose_command, [COMPOSE_FILE], docker_compose_project_name)
    if compose.run("ps", "-q", check=False).stdout.strip():
        print(f"\n--- compose logs (project left running) ---\n{compose.logs(tail=100)[-8000:]}")
        compose.run("down", "-v", "--remove-orphans", "--timeout", "5", check=False)


@pytest.fixture(scope="session")
def docker_cleanup() -> list[str]:
    return ["down -v --remove-orphans --timeout 5"]


@dataclass
class Stack:
    compose: Compose
    url: str
    port: int


@pytest.fixture(scope="session")
def stack(
    docker_services: Any,
    docker_compose_command: str,
    docker_compose_project_name: str,
    compose_env: dict[str, str],
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    compose = Compose(docker_compose_command, [COMPOSE_FILE], docker_compose_project_name)
    compose.wait_healthy()
    port = int(compose_env["EVOMEM_PORT"])
    yield Stack(compose, f"http://127.0.0.1:{port}/mcp", port)
    # Before `down -v`: keep the logs, and show their end when something failed.
    logs = compose.logs(tail=5000)
    path = tmp_path_factory.mktemp("compose") / "compose.log"
    path.write_text(logs)
    if request.session.testsfailed:
        print(f"\n--- compose logs (full: {path}) ---\n{logs[-8000:]}")


# ---------------------------------------------------------------------------- MCP helpers


async def call_ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    if tool in ("remember", "recall", "get_node", "supersede", "unlink"):
        args = {"detail": "full", **args}  # every field, text included
    with anyio.fail_after(CALL_DEADLINE_S):
        result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool}({args}) failed: {error_text(result)}"
    assert isinstance(result.structured_content, dict), f"{tool} returned no structured content"
    return result.structured_content


def error_text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content).strip()


async def wait_extracted(client: Client, node_ids: list[str], deadline_s: float) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + deadline_s
    while True:
        nodes = {nid: await call_ok(client, "get_node", {"node_id": nid}) for nid in node_ids}
        states = {nid: n["extraction"]["state"] for nid, n in nodes.items()}
        if all(s == "done" for s in states.values()):
            return nodes
        assert "failed" not in states.values(), f"extraction failed: {nodes}"
        assert time.monotonic() < deadline, f"not extracted after {deadline_s} s: {states}"
        await anyio.sleep(0.5)


# ---------------------------------------------------------------------------- (a) the ledger story


async def test_ledger_story_through_the_gateway(stack: Stack) -> None:
    # Without a token the gateway answers 401 and names its protected-resource metadata.
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    refused = httpx2.post(stack.url, json=init, headers=headers, timeout=30)
    assert refused.status_code == 401
    assert "resource_metadata=" in refused.headers["www-authenticate"]
    wrong = httpx2.post(stack.url, json=init, headers={**headers, "Authorization": "Bearer nope"}, timeout=30)
    assert wrong.status_code == 401
    async with connect(stack.url) as client:
        first = await call_ok(client, "remember", {"raw_text": POSTGRES, "tags": ["ledger"]})
        assert first["status"] == "active"
        assert first["extraction"]["state"] == "pending"  # queued for the worker, not inline

        second = await call_ok(client, "remember", {"raw_text": SQLITE, "tags": ["ledger"], "supersedes": first["id"]})
        assert second["status"] == "active"
        assert second["supersedes"] == first["id"]
        assert second["version"] == 2
        assert second["link"]["method"] == "agent"

        found = await call_ok(client, "recall", {"query": "ledger postgres", "include_history": True})
        top = found["results"][0]
        assert top["id"] == second["id"], "recall must answer the version in force"
        assert top["status"] == "active"
        assert first["id"] not in {hit["id"] for hit in found["results"]}
        history = top["history"]
        assert [step["id"] for step in history] == [first["id"]]
        assert history[0]["status"] == "superseded"
        assert history[0]["superseded_by"] == second["id"]
        assert history[0]["replaced_by_method"] == "agent"

        # The worker (Redis stream -> cronista -> storage) extracts both notes.
        nodes = await wait_extracted(client, [first["id"], second["id"]], deadline_s=90)
        assert nodes[second["id"]]["extraction"]["extractor"].startswith("lite")
        assert "SQLite" in nodes[second["id"]]["change"]

        # With extraction done, the history says why the old version was replaced.
        found = await call_ok(client, "recall", {"query": "ledger postgres", "include_history": True})
        old = found["results"][0]["history"][0]
        assert "overkill" in f"{old['why_replaced']} {old['what_changed']}"

        stats = await call_ok(client, "stats", {})
        assert stats["server"]["wiring"] == "gateway"
        assert "storage" not in stats["server"]  # no internal addresses for a non-admin
        assert (await client.call_tool("audit", {})).is_error  # the audit log is the admin's

    # Every write is in storage's audit log, signed by the token's identity.
    async with connect(stack.url, ADMIN_TOKEN) as admin:
        page = await call_ok(admin, "audit", {"limit": 10})
        mine = [(e["identity"], e["tool"], e["outcome"], e["ids"][0]) for e in page["entries"][::-1]]
        assert mine[:2] == [
            ("ledger-team", "remember", "ok", first["id"]),
            ("ledger-team", "remember", "ok", second["id"]),
        ]
        node = await call_ok(admin, "get_node", {"node_id": second["id"], "detail": "full"})
        assert node["author"] == "ledger-team"


# ---------------------------------------------------------------------------- (b) restarts under load


@dataclass
class Outcome:
    kind: str  # ack | error | transport | hang
    text: str
    started: float
    ended: float
    node_id: str = ""
    detail: str = ""


async def remember_loop(url: str, loop_no: int, stop: anyio.Event, outcomes: list[Outcome]) -> None:
    """Remember notes one after another until ``stop``; record every outcome; reconnect on transport errors."""
    seq = 0
    while not stop.is_set():
        try:
            async with connect(url) as client:
                while not stop.is_set():
                    seq += 1
                    text = (
                        f"Load note {loop_no}-{seq} ({uuid.uuid4().hex}): we switched the cache "
                        f"from memcached to Redis because eviction was unpredictable."
                    )
                    started = time.monotonic()
                    try:
                        with anyio.fail_after(CALL_DEADLINE_S):
                            result = await client.call_tool("remember", {"raw_text": text, "tags": ["load"]})
                    except TimeoutError:
                        outcomes.append(Outcome("hang", text, started, time.monotonic()))
                        raise
                    ended = time.monotonic()
                    if result.is_error:
                        outcomes.append(Outcome("error", text, started, ended, detail=error_text(result)))
                    else:
                        node_id = (result.structured_content or {}).get("id", "")
                        outcomes.append(Outcome("ack", text, started, ended, node_id=node_id))
                    await anyio.sleep(0.05)
        except Exception as exc:  # transport failure (or a hang): record it and reconnect
            if not outcomes or outcomes[-1].kind != "hang":
                now = time.monotonic()
                outcomes.append(Outcome("transport", "", now, now, detail=f"{type(exc).__name__}: {exc}"))
            await anyio.sleep(0.5)


async def test_restarts_under_load_lose_nothing(stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    compose = stack.compose
    outcomes: list[Outcome] = []
    stop = anyio.Event()
    marks: dict[str, float] = {}

    def jobs_in_hand() -> int:
        """Jobs delivered to a worker and not acknowledged (the consumer group's pending list)."""
        out = compose.redis_cli("XPENDING", "evomem:extract", "workers").split()
        return int(out[0]) if out else 0

    def wait_jobs_in_hand(timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while (n := jobs_in_hand()) == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        return n

    async def chaos() -> None:
        await anyio.sleep(3)
        # 1. Storage restarts: remembers wait for it (up to the gRPC deadline) or fail clearly.
        marks["storage_restart"] = time.monotonic()
        await anyio.to_thread.run_sync(lambda: compose.run("restart", "storage", timeout=120))
        marks["storage_restarted"] = time.monotonic()
        await anyio.to_thread.run_sync(lambda: compose.wait_healthy(["storage"]))
        marks["storage_healthy"] = time.monotonic()
        await anyio.sleep(2)
        # 2. The worker is killed with jobs in hand. The cronista is stopped first, so the
        #    worker holds jobs it cannot finish (it retries them); the kill orphans them in the
        #    group's pending list, and the restarted worker must take them over.
        await anyio.to_thread.run_sync(lambda: compose.run("stop", "cronista", timeout=60))
        in_hand.append(await anyio.to_thread.run_sync(wait_jobs_in_hand))
        marks["worker_kill"] = time.monotonic()
        await anyio.to_thread.run_sync(lambda: compose.run("kill", "worker", timeout=60))
        await anyio.sleep(1)
        # `up` starts the cronista again too (the worker depends on it being healthy).
        await anyio.to_thread.run_sync(lambda: compose.run("up", "-d", "worker", timeout=180))
        marks["worker_up"] = time.monotonic()
        await anyio.sleep(3)
        stop.set()

    in_hand: list[int] = []
    async with anyio.create_task_group() as tg:
        for n in range(LOAD_CLIENTS):
            tg.start_soon(remember_loop, stack.url, n, stop, outcomes)
        await chaos()

    acked = [o for o in outcomes if o.kind == "ack"]
    errors = [o for o in outcomes if o.kind == "error"]
    transport = [o for o in outcomes if o.kind == "transport"]
    hangs = [o for o in outcomes if o.kind == "hang"]
    slowest = max((o.ended - o.started for o in outcomes if o.kind in ("ack", "error")), default=0.0)
    summary = (
        f"load: {len(acked)} acknowledged, {len(errors)} tool errors, {len(transport)} transport errors, "
        f"{len(hangs)} hangs; slowest call {slowest:.1f} s; `restart storage` took "
        f"{marks['storage_restarted'] - marks['storage_restart']:.1f} s, healthy after "
        f"{marks['storage_healthy'] - marks['storage_restart']:.1f} s; {in_hand[0]} job(s) in the killed worker's hands"
    )
    with capsys.disabled():
        print(f"\n{summary}")
        for o in errors[:3]:
            print(f"  tool error: {o.detail[:200]}")

    assert not hangs, f"{len(hangs)} remember(s) hung for {CALL_DEADLINE_S} s: {summary}"
    assert not transport, f"failures must be tool errors, not transport errors: {[o.detail for o in transport][:5]}"
    for o in errors:
        assert UNAVAILABLE.match(o.detail), f"unclear tool error: {o.detail!r}"
    assert all(o.node_id for o in acked)
    assert any(o.started > marks["storage_healthy"] for o in acked), "no remember succeeded after the restart"
    assert any(o.started > marks["worker_up"] for o in acked), "no remember succeeded after the worker came back"

    async with connect(stack.url) as client:
        # Every acknowledged note is there, with the text that was sent.
        for o in acked:
            got = await call_ok(client, "get_node", {"node_id": o.node_id})
            assert got["raw_text"] == o.text, o.node_id

        # And every note is eventually extracted: the killed worker's jobs are reclaimed,
        # notes whose job could not be queued are swept from storage.
        deadline = time.monotonic() + EXTRACTION_DEADLINE_S
        while True:
            stats = await call_ok(client, "stats", {})
            if stats["extraction"]["pending"] == 0:
                break
            assert time.monotonic() < deadline, f"still pending after {EXTRACTION_DEADLINE_S} s: {stats['extraction']}"
            await anyio.sleep(1)
        assert stats["extraction"]["failed"] == 0, stats["extraction"]
        # Every job was acknowledged (the killed worker's were reclaimed), none dead-lettered.
        assert in_hand[0] > 0, "the worker was killed with no job in hand: the test proved less than it should"
        while (left := await anyio.to_thread.run_sync(jobs_in_hand)) != 0:  # a duplicate may be finishing
            assert time.monotonic() < deadline, f"{left} job(s) never acknowledged"
            await anyio.sleep(1)
        assert compose.redis_cli("XLEN", "evomem:extract:dead").strip() == "0"
        assert stats["nodes"] >= len(acked)
        for o in acked:
            node = await call_ok(client, "get_node", {"node_id": o.node_id})
            assert node["extraction"]["state"] == "done", node["extraction"]


# ---------------------------------------------------------------------------- (c) health and shape


async def test_every_service_healthy_and_shape(stack: Stack) -> None:
    compose = stack.compose
    await anyio.to_thread.run_sync(compose.wait_healthy)
    # A wide "terminal", or Compose v1 wraps the table's cells over several lines.
    ps = (await anyio.to_thread.run_sync(lambda: compose.run("ps", env={"COLUMNS": "500"}))).stdout
    for service in SERVICES:
        lines = [line for line in ps.splitlines() if re.search(rf"[_-]{service}[_-]\d+\s", line)]
        assert lines, f"{service} missing from `ps`:\n{ps}"
        assert all("(healthy)" in line for line in lines), f"{service} not healthy in `ps`:\n{ps}"

    info = await anyio.to_thread.run_sync(compose.containers)
    assert sorted(info) == sorted(SERVICES), sorted(info)
    # The database volume is mounted on storage and nowhere else.
    with_data = [s for s, i in info.items() if any(m.get("Name", "").endswith("_evomem-data") for m in i["Mounts"])]
    assert with_data == ["storage"], with_data
    # Only the gateway is published, on localhost, on the chosen port.
    published = {s: i["HostConfig"]["PortBindings"] for s, i in info.items() if i["HostConfig"]["PortBindings"]}
    assert list(published) == ["gateway"], published
    assert published["gateway"]["8765/tcp"] == [{"HostIp": "127.0.0.1", "HostPort": str(stack.port)}]
    # EvoMem processes run as the image's non-root user, on a read-only root file system.
    for s in ("storage", "cronista", "linker", "worker", "gateway"):
        assert info[s]["Config"]["User"] == "10001", (s, info[s]["Config"]["User"])
        assert info[s]["HostConfig"]["ReadonlyRootfs"] is True, s


# ---------------------------------------------------------------------------- the probe itself (no Docker)


def load_healthcheck() -> Any:
    spec = importlib.util.spec_from_file_location("evomem_healthcheck", ROOT / "docker" / "healthcheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def probe(hc: Any, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = hc.main(list(argv))
    return code, capsys.readouterr().out.strip()


def test_probe_grpc_health(capsys: pytest.CaptureFixture[str]) -> None:
    """The hand-written HTTP/2 Check against a real grpcio server with the health service."""
    from evomem.entrypoints.grpc.server import create_server

    hc = load_healthcheck()
    server = create_server("127.0.0.1:0", lambda s: None, ("evomem.v1.StorageService",), metrics=False)
    port = str(server.port)
    try:
        assert probe(hc, capsys, "grpc", port, "evomem.v1.StorageService") == (
            1,
            f"grpc health {port}/evomem.v1.StorageService: NOT_SERVING",
        )
        server.set_serving(True)
        assert probe(hc, capsys, "grpc", port, "evomem.v1.StorageService") == (0, "ok")
        assert probe(hc, capsys, "grpc", port) == (0, "ok")
        code, out = probe(hc, capsys, "grpc", port, "no.such.Service")
        assert code == 1 and "NOT_FOUND" in out, out
    finally:
        server.stop(0)
    code, out = probe(hc, capsys, "grpc", port)
    assert code == 1 and "ConnectionRefused" in out, out
    assert probe(hc, capsys, "bogus")[0] == 2


def test_probe_worker_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker probe speaks RESP: healthy once the worker's consumer group exists."""
    from redis_server import RedisServer

    from evomem.adapters.redis_queue import GROUP, STREAM, connect

    hc = load_healthcheck()
    assert (hc.STREAM, hc.GROUP) == (STREAM, GROUP), "docker/healthcheck.py must name the worker's stream and group"
    monkeypatch.delenv("EVOMEM_METRICS_PORT", raising=False)
    monkeypatch.setenv("EVOMEM_REDIS_URL", "redis://127.0.0.1:1/0")
    code, out = probe(hc, capsys, "worker")
    assert code == 1 and "ConnectionRefused" in out, out
    with RedisServer(tmp_path) as server:
        monkeypatch.setenv("EVOMEM_REDIS_URL", server.url)
        code, out = probe(hc, capsys, "worker")
        assert code == 1 and "no such key" in out, out
        client = connect(server.url)
        client.xgroup_create(STREAM, "someone-else", id="0", mkstream=True)
        code, out = probe(hc, capsys, "worker")
        assert code == 1 and "no consumer group 'workers'" in out, out
        client.xgroup_create(STREAM, GROUP, id="0")
        assert probe(hc, capsys, "worker") == (0, "ok")
        client.close()
