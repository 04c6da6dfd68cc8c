"""The team-shared memory over HTTP: tokens, roles, namespaces, attribution, audit (issue 14).

A real ``evomem-mcp --transport http --auth-file`` process on loopback, the official MCP
client with an ``Authorization`` header, two tenants (team-a, team-b) and a shared namespace.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from evomem.security.tokens import digest

EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))
URL_LINE = re.compile(r"at (http://127\.0\.0\.1:(\d+)/mcp)")
START_DEADLINE_S = 60

TOKENS = {
    "alice": ("tok-alice-" + "a" * 30, "writer", ["team-a", "shared"]),
    "bob": ("tok-bob-" + "b" * 30, "writer", ["team-b", "shared"]),
    "rita": ("tok-rita-" + "r" * 30, "reader", ["team-a"]),
    "root": ("tok-root-" + "z" * 30, "admin", ["*"]),
}
UNKNOWN_ID = "01J9ZK3V8W5Q6R7S8T9V0W1X2Y"
INSECURE = ("--host", "0.0.0.0", "--port", "0", "--insecure-no-auth")
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
JSON_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


Tokens = dict[str, tuple[str, str, list[str]]]


def token_file(path: Path, tokens: Tokens, rates: dict[str, float] | None = None) -> Path:
    lines = []
    for name, (token, role, spaces) in tokens.items():
        lines += ["[[tokens]]", f"name = {json.dumps(name)}", f'sha256 = "{digest(token)}"', f'role = "{role}"']
        lines.append("namespaces = " + json.dumps(spaces))
        if rates and name in rates:
            lines.append(f"rate = {rates[name]}")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, port: int, stderr: Path) -> None:
        self.proc, self.url, self.port, self.stderr = proc, url, port, stderr

    def log(self) -> str:
        return self.stderr.read_text(encoding="utf-8", errors="replace")


def start_server(tmp_path: Path, env: dict[str, str], *args: str) -> Server:
    stderr = tmp_path / f"stderr-{time.monotonic_ns()}.log"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [EVOMEM_MCP, "--db", str(tmp_path / "team.db"), "--transport", "http", "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        match = URL_LINE.search(stderr.read_text(encoding="utf-8", errors="replace"))
        if match:
            server = Server(proc, match.group(1), int(match.group(2)), stderr)
            while time.monotonic() < deadline:
                try:
                    if httpx2.get(f"http://127.0.0.1:{server.port}/healthz", timeout=2).status_code == 200:
                        return server
                except httpx2.TransportError:
                    time.sleep(0.05)
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"evomem-mcp did not start (exit {proc.poll()}):\n{stderr.read_text()}")


def stop(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    out["EVOMEM_LOG_LEVEL"] = "WARNING"
    return out


@pytest.fixture
def auth_file(tmp_path: Path) -> Path:
    return token_file(tmp_path / "tokens.toml", TOKENS)


@pytest.fixture
def server(tmp_path: Path, env: dict[str, str], auth_file: Path) -> Iterator[Server]:
    s = start_server(tmp_path, env, "--auth-file", str(auth_file))
    yield s
    stop(s)


@asynccontextmanager
async def connect(server: Server, who: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {TOKENS[who][0]}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):
        yield client


async def ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, (tool, args, result.content)
    assert result.structured_content is not None
    return result.structured_content


async def err(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, (tool, args, result.structured_content)
    text = result.content[0].text  # type: ignore[union-attr]
    return text.removeprefix(f"Error executing tool {tool}: ")


# ---------------------------------------------------------------------------- 401 and metadata


def test_no_token_is_401_with_the_resource_metadata(server: Server) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    resp = httpx2.post(server.url, json=body, headers=headers)
    assert resp.status_code == 401
    challenge = resp.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge).group(1)  # type: ignore[union-attr]
    assert metadata_url == f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource/mcp"
    meta = httpx2.get(metadata_url).json()
    assert meta["resource"] == server.url
    assert meta["authorization_servers"]
    # A wrong token is refused the same way; a right one lists the tools, audit among them.
    wrong = httpx2.post(server.url, json=body, headers={**headers, "Authorization": "Bearer nope"})
    assert wrong.status_code == 401


@pytest.mark.anyio
async def test_tools_listed_with_a_token_include_audit(server: Server) -> None:
    async with connect(server, "rita") as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == {
        "remember",
        "recall",
        "get_node",
        "forget",
        "supersede",
        "unlink",
        "check",
        "review",
        "stats",
        "audit",
    }


# ---------------------------------------------------------------------------- two tenants, one shared namespace


@pytest.mark.anyio
async def test_isolation_roles_and_unknown_ids(server: Server) -> None:
    async with connect(server, "alice") as alice, connect(server, "bob") as bob, connect(server, "rita") as rita:
        # Writes: each tenant in its own namespace (the default: its first) and in the shared one.
        a1 = (await ok(alice, "remember", {"raw_text": "team-a ledger runs on Postgres"}))["id"]
        a2 = (await ok(alice, "remember", {"raw_text": "team-a uses CBOR", "namespace": "shared"}))["id"]
        b1 = (await ok(bob, "remember", {"raw_text": "team-b ledger runs on MySQL"}))["id"]
        b2 = (await ok(bob, "remember", {"raw_text": "team-b ledger uses CBOR too", "namespace": "shared"}))["id"]
        assert (await ok(alice, "get_node", {"node_id": a1, "detail": "full"}))["namespace"] == "team-a"
        assert (await ok(bob, "get_node", {"node_id": b1, "detail": "full"}))["namespace"] == "team-b"

        # recall / stats on a namespace outside the token: forbidden.
        for client, foreign in ((alice, "team-b"), (bob, "team-a"), (rita, "shared")):
            assert (await err(client, "recall", {"query": "ledger", "namespace": foreign})).startswith("[forbidden]")
            assert (await err(client, "stats", {"namespace": foreign})).startswith("[forbidden]")
            assert (await err(client, "remember", {"raw_text": "x", "namespace": foreign})).startswith("[forbidden]")

        # recall by default and on the shared namespace: never a node of the other tenant.
        cross = 0
        for client, own, other in ((alice, {a1}, {b1}), (bob, {b1}, {a1})):
            got = {r["id"] for r in (await ok(client, "recall", {"query": "ledger", "k": 20}))["results"]}
            assert got == own
            cross += len(got & other)
            found = await ok(client, "recall", {"query": "CBOR", "namespace": "shared"})
            shared = {r["id"] for r in found["results"]}
            assert shared == {a2, b2}
        assert cross == 0

        # ids of another namespace answer exactly like unknown ids, for every tool that takes one.
        calls = [
            ("get_node", lambda i: {"node_id": i}),
            ("forget", lambda i: {"node_id": i}),
            ("unlink", lambda i: {"node_id": i}),
            ("supersede", lambda i: {"node_id": i, "supersedes": a2}),
            ("supersede", lambda i: {"node_id": b2, "supersedes": i}),
            ("remember", lambda i: {"raw_text": "next", "supersedes": i}),
            ("remember", lambda i: {"raw_text": "see", "relations": {"caused_by": [i]}}),
        ]
        for tool, args in calls:
            hidden = await err(bob, tool, args(a1))
            unknown = await err(bob, tool, args(UNKNOWN_ID))
            assert hidden.startswith("[not_found]"), (tool, hidden)
            assert hidden.replace(a1, "<id>") == unknown.replace(UNKNOWN_ID, "<id>"), (tool, hidden, unknown)
        # ...and nothing of alice's changed.
        node = await ok(alice, "get_node", {"node_id": a1, "detail": "full"})
        assert node["status"] == "active" and node.get("superseded_by") is None

        # reader: reads only; the error names the role needed.
        assert (await ok(rita, "get_node", {"node_id": a1, "detail": "full"}))["id"] == a1
        assert {r["id"] for r in (await ok(rita, "recall", {"query": "ledger"}))["results"]} == {a1}
        for tool, args in (
            ("remember", {"raw_text": "rita was here"}),
            ("forget", {"node_id": a1}),
            ("supersede", {"node_id": a1, "supersedes": a1}),
            ("unlink", {"node_id": a1}),
            ("audit", {}),
        ):
            message = await err(rita, tool, args)
            assert message.startswith("[forbidden]"), message
            assert ("admin" if tool == "audit" else "writer") in message
        # writer: no purge, no audit.
        assert "admin" in await err(alice, "forget", {"node_id": a1, "purge": True})
        assert (await err(alice, "audit", {})).startswith("[forbidden]")

        # A writer's own chain works end to end: supersede, unlink, forget.
        a3 = (await ok(alice, "remember", {"raw_text": "team-a ledger moved to SQLite"}))["id"]
        assert (await ok(alice, "supersede", {"node_id": a3, "supersedes": a1}))["supersedes"] == a1
        assert (await ok(alice, "unlink", {"node_id": a3}))["restored_head"] == a1
        assert (await ok(alice, "forget", {"node_id": a3}))["changed"] is True

        # stats: counted on the caller's namespace, no paths for a non-admin.
        stats = await ok(rita, "stats", {})
        assert stats["namespace"] == "team-a"
        assert set(stats["namespaces"]) == {"team-a"}
        assert "db" not in json.dumps(stats.get("server", {}))
        assert "team.db" not in json.dumps(stats)


@pytest.mark.anyio
async def test_attribution_and_audit(server: Server) -> None:
    async with connect(server, "alice") as alice, connect(server, "root") as root:
        forged = await ok(alice, "remember", {"raw_text": "we pick Redis", "author": "someone-else"})
        assert any("authenticated identity" in w for w in forged.get("warnings", []))
        node = await ok(alice, "get_node", {"node_id": forged["id"], "detail": "full"})
        assert node["author"] == "alice"
        nxt = await ok(alice, "remember", {"raw_text": "we pick Valkey", "supersedes": forged["id"], "author": "eve"})
        node2 = await ok(alice, "get_node", {"node_id": nxt["id"], "detail": "full"})
        assert node2["author"] == "alice"
        assert node2["link"]["by"] == "alice"

        behalf = await ok(root, "remember", {"raw_text": "carol decided X", "namespace": "team-a", "author": "carol"})
        assert (await ok(root, "get_node", {"node_id": behalf["id"], "detail": "full"}))["author"] == "carol (via root)"
        await ok(root, "forget", {"node_id": behalf["id"], "purge": True})
        await err(alice, "remember", {"raw_text": "x", "namespace": "team-b"})

        page = await ok(root, "audit", {"limit": 50})
        entries = page["entries"]
        assert [e["tool"] for e in entries][:2] == ["remember", "purge"][::-1] or entries[0]["tool"] == "remember"
        by_tool = [(e["identity"], e["tool"], e["outcome"]) for e in entries]
        assert ("alice", "remember", "forbidden") in by_tool
        assert ("root", "purge", "ok") in by_tool
        assert by_tool.count(("alice", "remember", "ok")) == 2
        purge = next(e for e in entries if e["tool"] == "purge")
        assert purge["ids"] == [behalf["id"]]
        assert "carol decided" not in json.dumps(page)
        made = next(e for e in entries if e["tool"] == "remember" and e["identity"] == "root")
        assert made["on_behalf_of"] == "carol" and made["namespace"] == "team-a"
        # Paging: by namespace, and with the cursor.
        only_a = (await ok(root, "audit", {"namespace": "team-a"}))["entries"]
        assert only_a and all(e["namespace"] == "team-a" for e in only_a)
        first = await ok(root, "audit", {"limit": 1})
        second = await ok(root, "audit", {"limit": 1, "before": first["next_before"]})
        assert second["entries"][0]["seq"] < first["entries"][0]["seq"]
        future = (await ok(root, "audit", {"since": "2999-01-01T00:00:00Z"}))["entries"]
        assert future == []


# ---------------------------------------------------------------------------- safe by default


def test_non_loopback_without_auth_refuses_to_start(tmp_path: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        [EVOMEM_MCP, "--db", str(tmp_path / "x.db"), "--transport", "http", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert b"without authentication" in done.stderr


def test_insecure_no_auth_starts_with_a_warning(tmp_path: Path, env: dict[str, str]) -> None:
    env = {**env, "EVOMEM_LOG_LEVEL": "INFO"}
    stderr = tmp_path / "insecure.log"
    with stderr.open("wb") as err_:
        proc = subprocess.Popen(
            [EVOMEM_MCP, "--db", str(tmp_path / "x.db"), "--transport", "http", *INSECURE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err_,
            env=env,
        )
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline and "MCP server" not in stderr.read_text():
            assert proc.poll() is None, stderr.read_text()
            time.sleep(0.05)
        assert "INSECURE" in stderr.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_bad_token_file_stops_the_start(tmp_path: Path, env: dict[str, str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[tokens]]\nname = "x"\nsha256 = "abc"\nrole = "writer"\nnamespaces = ["a"]\n')
    done = subprocess.run(
        [EVOMEM_MCP, "--db", str(tmp_path / "x.db"), "--transport", "http", "--port", "0", "--auth-file", str(bad)],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert b"sha256 must be the 64-character hex digest" in done.stderr


@pytest.mark.anyio
async def test_sighup_rereads_the_token_file(tmp_path: Path, env: dict[str, str], auth_file: Path) -> None:
    server = start_server(tmp_path, env, "--auth-file", str(auth_file))
    try:

        def status(token: str) -> int:
            headers = {**JSON_HEADERS, "Authorization": f"Bearer {token}"}
            return httpx2.post(server.url, json=INIT, headers=headers).status_code

        assert status(TOKENS["alice"][0]) == 200
        assert status("tok-new-" + "n" * 30) == 401
        token_file(auth_file, {"newbie": ("tok-new-" + "n" * 30, "reader", ["team-a"])})
        server.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and status("tok-new-" + "n" * 30) != 200:
            time.sleep(0.1)
        assert status("tok-new-" + "n" * 30) == 200
        assert status(TOKENS["alice"][0]) == 401  # rotated out
        # A broken file keeps the tokens in force.
        auth_file.write_text("not toml [[[")
        server.proc.send_signal(signal.SIGHUP)
        time.sleep(1)
        assert status("tok-new-" + "n" * 30) == 200
        assert server.proc.poll() is None
    finally:
        stop(server)
