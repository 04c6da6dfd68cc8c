"""The team stack, end to end: compose.cpu.yaml + compose.team.yaml on a real Docker daemon.

PostgreSQL 17 with pgvector, two storage replicas that hold no state, the gateway with its tokens
(as today), redis, the cronista and the worker, started under a project name of their own and a
free port; the test talks to the gateway only as an agent would (the official MCP client over
streamable HTTP, a bearer token).

- the ledger story through both replicas: supersedes, recall resolving to the version in force,
  history, extraction by the worker;
- restarts under load: PostgreSQL restarted, then one storage replica, while remembers with
  idempotency keys keep coming and are retried until acknowledged: every acknowledged note is
  found, none twice; the failures in between are clear tool errors, nothing hangs.

Skipped (with the reason) only when no Docker daemon is reachable, and not even then under
EVOMEM_REQUIRE_DOCKER=1 (CI). The EvoMem image is ``make images``' (``EVOMEM_IMAGE`` names
another already built); the PostgreSQL image is pulled or built from Debian packages.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from compose_support import ROOT, Compose, build_images, compose_command, docker_unreachable, write_secrets
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from procutil import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(1800)]

FILES = [ROOT / "compose.cpu.yaml", ROOT / "compose.team.yaml"]
TEAM = ("redis", "postgres", "storage", "cronista", "linker", "worker", "gateway")
TOKEN = "evm_" + secrets.token_urlsafe(24)
CALL_DEADLINE_S = 60
LOAD_CLIENTS = 3


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Team:
    compose: Compose
    url: str

    def containers(self, service: str) -> list[str]:
        out = subprocess.run(
            ["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project={self.compose.project}",
             "--filter", f"label=com.docker.compose.service={service}"],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        return sorted(out.stdout.split())

    def healthy(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while True:
            states = {}
            for service in TEAM:
                for cid in self.containers(service) or ["-"]:
                    if cid == "-":
                        states[service] = "missing"
                        continue
                    fmt = "{{if .State.Health}}{{.State.Health.Status}}{{else}}x{{end}}"
                    got = subprocess.run(
                        ["docker", "inspect", "-f", fmt, cid], capture_output=True, text=True, timeout=30
                    )
                    states[f"{service}/{cid[:6]}"] = got.stdout.strip()
            if all(s == "healthy" for s in states.values()) and len(self.containers("storage")) == 2:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"not healthy after {timeout:.0f} s: {states}\n{self.compose.logs(60)[-6000:]}")
            time.sleep(2)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    reason = docker_unreachable()
    if reason:
        if os.environ.get("EVOMEM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"the team stack needs Docker: {reason}")
        pytest.skip(f"the team stack needs Docker: {reason}")
    command = compose_command()
    if command is None:
        pytest.fail("Docker is reachable but Compose is not")
    image = os.environ.get("EVOMEM_IMAGE")
    if not image:
        build_images()
    pg = os.environ.get("POSTGRES_IMAGE", "pgvector/pgvector:pg17")
    if subprocess.run(["docker", "image", "inspect", pg], capture_output=True).returncode != 0:
        subprocess.run(["bash", str(ROOT / "docker/base/build-postgres-image.sh")], check=True, timeout=1200)
    folder = write_secrets(tmp_path_factory.mktemp("team-secrets"), [("ledger-team", TOKEN, "admin")])
    (folder / "db-password").write_text(secrets.token_urlsafe(24) + "\n")
    (folder / "db-password").chmod(0o644)
    port = free_port()
    env = {
        "EVOMEM_BIND": "127.0.0.1",
        "EVOMEM_PORT": str(port),
        "EVOMEM_SECRETS_DIR": str(folder),
        "EVOMEM_VECTORS": "off",  # two replicas need no model each on a 2-core machine; words are enough here
        **({"EVOMEM_IMAGE": image} if image else {}),
    }
    unset = [f"-u {k}" for k in sorted(os.environ) if k.startswith("EVOMEM_")]
    full = " ".join(["env", *unset, *[f"{k}={v}" for k, v in env.items()], command])
    compose = Compose(full, FILES, f"evomemteam{secrets.token_hex(3)}")
    try:
        compose.run("up", "-d", timeout=600)
        stack = Team(compose, f"http://127.0.0.1:{port}/mcp")
        stack.healthy()
        yield stack
    finally:
        logs = compose.logs(tail=3000)
        (tmp_path_factory.mktemp("team") / "compose.log").write_text(logs)
        compose.run("down", "-v", "--remove-orphans", "--timeout", "5", check=False, timeout=300)


def connect(url: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http))


async def call_ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(CALL_DEADLINE_S):
        result = await client.call_tool(tool, args)
    text = " ".join(getattr(b, "text", "") for b in result.content)
    assert not result.is_error, f"{tool}({args}) failed: {text}"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_ledger_story_on_postgres_through_two_replicas(team: Team) -> None:
    async with connect(team.url) as client:
        first = await call_ok(
            client, "remember", {"raw_text": "We picked Postgres for the ledger.", "tags": ["ledger"]}
        )
        second = await call_ok(
            client,
            "remember",
            {"raw_text": "We moved the ledger to SQLite: Postgres was overkill.", "supersedes": first["id"]},
        )
        assert (second["supersedes"], second["version"]) == (first["id"], 2)
        found = await call_ok(client, "recall", {"query": "ledger postgres", "include_history": True})
        top = found["results"][0]
        assert top["id"] == second["id"] and [h["id"] for h in top["history"]] == [first["id"]]
        deadline = time.monotonic() + 120
        while (await call_ok(client, "get_node", {"node_id": second["id"], "detail": "full"}))["extraction"][
            "state"
        ] != "done":
            assert time.monotonic() < deadline, "the worker did not extract the note"
            await anyio.sleep(0.5)
        stats = await call_ok(client, "stats", {})
        assert stats["schema_version"] >= 3  # PostgreSQL's migrations (SQLite's file would say 7)


@dataclass
class Acked:
    key: str
    text: str
    node_id: str


async def remember_until_acked(
    url: str, loop_no: int, stop: anyio.Event, acked: list[Acked], errors: list[str]
) -> None:
    """One note after another, each with its own idempotency key, retried (same key, same text)
    until acknowledged; a hang fails the test."""
    seq = 0
    client_cm: Any = None
    client: Any = None
    while not stop.is_set():
        seq += 1
        key, text = (
            f"load-{loop_no}-{seq}",
            f"Load note {loop_no}-{seq} ({uuid.uuid4().hex}): the cache moved to Redis.",
        )
        while True:
            try:
                if client is None:
                    client_cm = connect(url)
                    client = await client_cm.__aenter__()
                with anyio.fail_after(CALL_DEADLINE_S):
                    result = await client.call_tool("remember", {"raw_text": text, "idempotency_key": key})
                if not result.is_error:
                    acked.append(Acked(key, text, result.structured_content["id"]))
                    break
                errors.append(" ".join(getattr(b, "text", "") for b in result.content))
            except TimeoutError:
                raise
            except Exception as exc:  # the transport: reconnect
                errors.append(f"{type(exc).__name__}: {exc}")
                client = None
            await anyio.sleep(0.3)
        await anyio.sleep(0.05)
    if client_cm is not None and client is not None:
        await client_cm.__aexit__(None, None, None)


async def test_postgres_and_a_storage_replica_restart_under_load(team: Team) -> None:
    acked: list[Acked] = []
    errors: list[str] = []
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        for i in range(LOAD_CLIENTS):
            tg.start_soon(remember_until_acked, team.url, i, stop, acked, errors)
        while len(acked) < 15:
            await anyio.sleep(0.2)
        (pg,) = team.containers("postgres")
        await anyio.to_thread.run_sync(lambda: subprocess.run(["docker", "restart", pg], check=True, timeout=120))
        before = len(acked)
        while len(acked) < before + 15:
            await anyio.sleep(0.2)
        replica = team.containers("storage")[0]
        await anyio.to_thread.run_sync(lambda: subprocess.run(["docker", "restart", replica], check=True, timeout=120))
        before = len(acked)
        while len(acked) < before + 15:
            await anyio.sleep(0.2)
        stop.set()
    async with connect(team.url) as client:
        for a in acked:
            node = await call_ok(client, "get_node", {"node_id": a.node_id, "detail": "full"})
            assert node["raw_text"] == a.text, f"{a.key}: acknowledged, not found as written"
        load = await call_ok(client, "recall", {"query": "cache moved redis load note", "k": 50})
        assert load["results"]
    ids = [a.node_id for a in acked]
    assert len(set(ids)) == len(ids), "two acknowledgements answered one node"
    # Every note once: the store holds as many load notes as were acknowledged (retries replayed).
    psql = subprocess.run(
        ["docker", "exec", team.containers("postgres")[0], "psql", "-U", "evomem", "-d", "evomem", "-tAc",
         "SELECT count(*) FROM nodes WHERE raw_text LIKE 'Load note %'"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    found = int(psql.stdout.strip())
    print(json.dumps({"acknowledged": len(acked), "found": found, "errors_retried": len(errors)}))
    assert found == len(acked)
    assert all("[unavailable]" in e or "Error" in e or "connect" in e.lower() for e in errors), errors[:5]
    assert Path(ROOT / "compose.team.yaml").exists()
