"""The official MCP client (``mcp.Client``) against EvoMem over its real transports.

- stdio: ``evomem-mcp --db PATH`` spawned as a subprocess, as an MCP client launches it;
- streamable HTTP: ``evomem-mcp --transport http --port 0``, the URL parsed from stderr;
- in-process: ``Client(build_mcp_server(...))`` for the shape of the structured content.

Nothing here asserts wall-clock time: speed is measured in benchmarks, never asserted.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from evomem import __version__
from evomem.app.memory import MemoryService
from evomem.entrypoints.mcp.server import build_mcp_server

pytestmark = pytest.mark.anyio

TOOLS = {"remember", "recall", "get_node", "forget", "supersede", "unlink", "stats", "check", "review"}
POSTGRES = "We picked Postgres for the ledger"
SQLITE = "We moved the ledger from Postgres to SQLite, Postgres was overkill"
URL_LINE = re.compile(r"at (http://127\.0\.0\.1:(\d+)/mcp)")
EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))
START_DEADLINE_S = 60  # generous: a deadline for a hung process, not a speed assertion


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call_ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool}({args}) failed: {result.content}"
    assert isinstance(result.structured_content, dict), f"{tool} returned no structured content"
    return result.structured_content


async def run_story(client: Client) -> None:
    """Postgres, then SQLite replacing it: recall answers SQLite, history shows Postgres superseded."""
    first = await call_ok(client, "remember", {"raw_text": POSTGRES})
    assert first["status"] == "active"
    assert first["version"] == 1

    second = await call_ok(client, "remember", {"raw_text": SQLITE, "supersedes": first["id"]})
    assert second["status"] == "active"
    assert second["supersedes"] == first["id"]
    assert second["version"] == 2
    assert second["chain_root"] == first["id"]
    assert second["link"]["method"] == "agent"

    found = await call_ok(client, "recall", {"query": "ledger postgres", "include_history": True, "detail": "full"})
    assert found["count"] >= 1
    top = found["results"][0]
    assert top["id"] == second["id"]
    assert top["raw_text"] == SQLITE
    assert top["status"] == "active"
    # The obsolete version is never answered as a result, only shown as history.
    assert all(hit["status"] == "active" for hit in found["results"])
    assert first["id"] not in {hit["id"] for hit in found["results"]}

    history = top["history"]
    assert [step["id"] for step in history] == [first["id"]]
    old = history[0]
    assert old["raw_text"] == POSTGRES
    assert old["status"] == "superseded"
    assert old["superseded_by"] == second["id"]
    assert old["replaced_by"] == second["id"]
    assert old["replaced_by_method"] == "agent"
    assert "overkill" in f"{old['why_replaced']} {old['what_changed']}"

    # Brief (the default): the text renders the decision and its history; the structured content
    # has the ids and versions, and no note text (nothing travels twice).
    result = await client.call_tool("recall", {"query": "ledger postgres", "include_history": True})
    text = result.content[0].text
    assert text.splitlines()[0].startswith(f"{second['id']} active v2, ")
    assert SQLITE in text and POSTGRES in text
    assert f"└ {first['id']} superseded v1" in text
    brief = result.structured_content
    assert brief["results"][0] == {"id": second["id"], "version": 2, "history": [{"id": first["id"], "version": 1}]}
    assert SQLITE not in json.dumps(brief) and POSTGRES not in json.dumps(brief)


# ---------------------------------------------------------------------------- stdio


def stdio_params(db: Path, env: dict[str, str], *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=EVOMEM_MCP, args=["--db", str(db), *extra], env=env)


async def test_stdio_story(tmp_path: Path, server_env: dict[str, str]) -> None:
    async with Client(stdio_params(tmp_path / "e.db", server_env)) as client:
        await run_story(client)
        stats = await call_ok(client, "stats", {})
        assert stats["nodes"] == 2
        assert stats["by_status"]["active"] == 1
        assert stats["by_status"]["superseded"] == 1
        assert stats["chains"] == 1
    assert (tmp_path / "e.db").exists()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_handshake_then_stats(tmp_path: Path, server_env: dict[str, str], mode: str) -> None:
    """Both handshake eras (server/discover and the legacy initialize) complete, then stats answers."""
    async with Client(stdio_params(tmp_path / "e.db", server_env), mode=mode) as client:  # type: ignore[arg-type]
        assert client.server_info is not None
        assert client.server_info.name == "evomem"
        assert client.server_info.version == __version__
        assert client.instructions and "supersedes" in client.instructions
        stats = await call_ok(client, "stats", {})
        assert stats["nodes"] == 0
        assert stats["schema_version"] >= 1
        assert stats["server"]["version"] == __version__
        assert stats["server"]["wiring"] == "embedded"


async def test_stdio_logs_go_to_stderr(tmp_path: Path, server_env: dict[str, str]) -> None:
    """At INFO the server logs; every log line lands on stderr and the protocol still works on stdout."""
    env = {**server_env, "EVOMEM_LOG_LEVEL": "INFO"}
    errlog = tmp_path / "stderr.log"
    with errlog.open("w+", encoding="utf-8") as err:
        async with Client(stdio_client(stdio_params(tmp_path / "e.db", env), errlog=err)) as client:
            await call_ok(client, "remember", {"raw_text": POSTGRES})
            bad = await client.call_tool("remember", {"raw_text": "   "})
            assert bad.is_error
    logged = errlog.read_text(encoding="utf-8")
    assert f"evomem {__version__}: db=" in logged  # the start-up line
    assert "empty_note" in logged  # the failed call is logged (stderr), not printed on stdout


class RawStdio:
    """evomem-mcp on pipes, spoken to line by line; a thread collects what stdout carries."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stdout: list[bytes] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout.append(line)
            self.lines.put(line)

    def send(self, payload: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(payload).encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        message = json.loads(self.lines.get(timeout=START_DEADLINE_S))
        assert isinstance(message, dict)
        return message

    def close(self) -> tuple[int, bytes]:
        """End of input: the server exits. Returns (exit status, stderr)."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=START_DEADLINE_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode, self.proc.stderr.read()


def test_stdio_stdout_carries_only_protocol(tmp_path: Path, server_env: dict[str, str]) -> None:
    """Raw JSON-RPC over the pipes, logging at DEBUG: every line on stdout is a JSON-RPC message.

    Also sends a JSON line whose string holds a lone surrogate escape (\\ud800: valid JSON syntax,
    but not text, so not UTF-8): it never reaches a tool, and the server keeps serving.
    """
    raw = RawStdio([EVOMEM_MCP, "--db", str(tmp_path / "e.db")], {**server_env, "EVOMEM_LOG_LEVEL": "DEBUG"})
    try:
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "0"},
                },
            }
        )
        init = raw.receive()
        assert init["id"] == 1
        assert init["result"]["serverInfo"]["name"] == "evomem"
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # json.dumps writes the lone surrogate as the escape \ud800.
        bad_args = {"raw_text": "bad \ud800 text"}
        raw.send(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", "arguments": bad_args}}
        )
        raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "stats", "arguments": {}}})
        answers = {}
        while 3 not in answers:
            message = raw.receive()
            answers[message.get("id")] = message
        if 2 in answers:  # if the SDK ever answers the bad line, it must be an error
            assert "error" in answers[2] or answers[2]["result"]["isError"]
        assert answers[3]["result"]["structuredContent"]["nodes"] == 0  # nothing stored

        good_args = {"raw_text": POSTGRES}
        raw.send(
            {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "remember", "arguments": good_args}}
        )
        stored = raw.receive()
        assert stored["id"] == 4
        assert not stored["result"].get("isError")
        assert stored["result"]["structuredContent"]["status"] == "active"
    finally:
        status, stderr = raw.close()
    assert status == 0, stderr.decode(errors="replace")
    for line in raw.stdout:  # any log line on stdout would fail here
        assert json.loads(line)["jsonrpc"] == "2.0", line
    assert b"DEBUG" in stderr
    assert b"INFO evomem: evomem" in stderr  # the logs went to stderr


# ---------------------------------------------------------------------------- streamable HTTP


class HttpServer:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, port: int, stderr: Path) -> None:
        self.proc, self.url, self.port, self.stderr = proc, url, port, stderr


def _wait_for_url(proc: subprocess.Popen[bytes], stderr: Path) -> tuple[str, int]:
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        match = URL_LINE.search(stderr.read_text(encoding="utf-8", errors="replace"))
        if match:
            return match.group(1), int(match.group(2))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"evomem-mcp printed no URL (exit {proc.poll()}):\n{stderr.read_text()}")


def _wait_healthy(proc: subprocess.Popen[bytes], port: int, stderr: Path) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
                assert resp.status == 200
                assert json.loads(resp.read()) == {"status": "ok"}
                return
        except (urllib.error.URLError, ConnectionError):
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    raise AssertionError(f"/healthz never answered (exit {proc.poll()}):\n{stderr.read_text()}")


@pytest.fixture
def http_server(tmp_path: Path, server_env: dict[str, str]) -> Iterator[HttpServer]:
    stderr = tmp_path / "http-stderr.log"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [
                EVOMEM_MCP,
                *("--db", str(tmp_path / "e.db")),
                *("--transport", "http", "--host", "127.0.0.1", "--port", "0"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=server_env,
        )
    try:
        url, port = _wait_for_url(proc, stderr)
        _wait_healthy(proc, port, stderr)
        yield HttpServer(proc, url, port, stderr)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_http_story(http_server: HttpServer) -> None:
    assert http_server.port != 0
    async with Client(http_server.url) as client:
        await run_story(client)
    # A second, independent connection sees the same memory.
    async with Client(http_server.url) as client:
        stats = await call_ok(client, "stats", {})
        assert stats["nodes"] == 2
        assert stats["chains"] == 1


async def test_http_list_tools_and_clean_shutdown(http_server: HttpServer) -> None:
    async with Client(http_server.url) as client:
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
    http_server.proc.terminate()
    http_server.proc.wait(timeout=30)
    log = http_server.stderr.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, log
    assert http_server.proc.returncode in (0, -15), log


# ---------------------------------------------------------------------------- tool listing


async def test_list_tools_exact_and_documented(service: MemoryService) -> None:
    async with Client(build_mcp_server(lambda: service)) as client:
        listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 40, name
        assert tool.input_schema.get("type") == "object", name
        assert tool.output_schema and tool.output_schema.get("type") == "object", name
        for param, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{name}.{param} has no description"

    remember = set(tools["remember"].input_schema["properties"])
    assert {"raw_text", "tags", "session", "relations", "supersedes", "scope"} <= remember
    assert tools["remember"].input_schema.get("required") == ["raw_text"]
    recall = set(tools["recall"].input_schema["properties"])
    assert {"query", "k", "include_history", "history_depth", "scope"} <= recall
    assert tools["recall"].input_schema.get("required") == ["query"]
    k = tools["recall"].input_schema["properties"]["k"]
    assert (k.get("minimum"), k.get("maximum"), k.get("default")) == (1, 100, 5)
    assert set(tools["get_node"].input_schema["properties"]) >= {"node_id", "include_history", "history_depth"}
    assert set(tools["forget"].input_schema["properties"]) >= {"node_id", "purge"}
    assert set(tools["supersede"].input_schema["properties"]) >= {"node_id", "supersedes"}
    # Output schemas name the fields the agent relies on.
    assert {"id", "status", "version", "link", "supersedes", "possible_supersedes"} <= set(
        tools["remember"].output_schema["properties"]
    )
    assert {"results", "notes"} <= set(tools["recall"].output_schema["properties"])
    for name in ("remember", "recall", "get_node", "supersede", "unlink"):
        detail = tools[name].input_schema["properties"]["detail"]
        assert (detail["enum"], detail["default"]) == (["brief", "full"], "brief"), name
    assert tools["get_node"].input_schema["properties"]["offset"]["minimum"] == 0
    # Strict: an argument the schema does not name is refused, not ignored.
    assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())
    # Hints: recall/get_node/stats are read-only, forget is destructive.
    for name in ("recall", "get_node", "stats"):
        assert tools[name].annotations and tools[name].annotations.read_only_hint, name
    assert tools["forget"].annotations and tools["forget"].annotations.destructive_hint


# ---------------------------------------------------------------------------- in-process structured content


def _is_iso(value: str | None) -> bool:
    if not value:
        return False
    datetime.fromisoformat(value.replace("Z", "+00:00"))
    return True


async def test_in_process_structured_content(service: MemoryService) -> None:
    async with Client(build_mcp_server(lambda: service)) as client:
        first = await call_ok(
            client,
            "remember",
            {"raw_text": POSTGRES, "scope": "Production", "tags": ["ledger", "db"], "session": "s-1", "detail": "full"},
        )
        assert len(first["id"]) == 26
        assert first["status"] == "active"
        assert first["scope"] == "production"  # labels are normalised to lowercase
        assert first["namespace"] == "default"
        assert _is_iso(first["created_at"])
        assert "link" not in first and "supersedes" not in first  # empty fields are dropped
        assert first["extraction"]["state"] == "done"
        assert first["tags"] == ["ledger", "db"]
        assert first["session"] == "s-1"
        assert first["raw_text"] == POSTGRES
        assert first["latency_ms"] >= 0
        assert "node" not in first  # nothing twice

        second = await call_ok(
            client,
            "remember",
            {"raw_text": SQLITE, "supersedes": first["id"], "scope": "production", "author": "ana"},
        )
        link = second["link"]
        assert link["method"] == "agent"
        assert link["confidence"] == 1.0
        assert link["by"] == "ana"
        assert _is_iso(link["created_at"])
        assert second["supersedes"] == first["id"]

        got = await call_ok(client, "get_node", {"node_id": first["id"], "include_history": True, "detail": "full"})
        assert got["status"] == "superseded"
        assert got["superseded_by"] == second["id"]
        assert got["in_force"] is False
        assert got["current_head"]["id"] == second["id"]
        assert got["current_head"]["status"] == "active"

        head = await call_ok(
            client, "get_node", {"node_id": second["id"].lower(), "include_history": True, "detail": "full"}
        )
        assert head["in_force"] is True
        assert "current_head" not in head
        assert [s["id"] for s in head["history"]] == [first["id"]]
        assert _is_iso(head["history"][0]["replaced_at"])

        found = await call_ok(client, "recall", {"query": "postgres", "scope": "production", "detail": "full"})
        assert found["results"][0]["id"] == second["id"]
        assert found["results"][0]["rank"] == 1
        matched = found["results"][0]["matched"]
        assert matched["node_id"] in {first["id"], second["id"]}
        assert "postgres" in matched["terms"]
        assert found["terms"] == ["postgres"]
        # staging has no decision of its own: the production one is in force there, as a default
        in_staging = await call_ok(client, "recall", {"query": "postgres", "scope": "staging"})
        assert [r["scope_match"] for r in in_staging["results"]] == ["default"]

        third = await call_ok(client, "remember", {"raw_text": "Retry payments three times before failing"})
        linked = await call_ok(client, "supersede", {"node_id": third["id"], "supersedes": first["id"]})
        assert linked["supersedes"] == second["id"]  # re-targeted to the head
        assert linked["link"]["requested_id"] == first["id"]
        assert linked["version"] == 3

        forgotten = await client.call_tool("forget", {"node_id": third["id"]})
        forgot = forgotten.structured_content
        assert forgot["status"] == "forgotten"
        assert forgot["changed"] is True
        assert forgot["chain_in_force"] is False
        assert forgotten.content[0].text.startswith(f"{third['id']} forgotten: dropped from recall")

        stats = await call_ok(client, "stats", {})
        assert stats["nodes"] == 3
        assert stats["by_status"] == {"active": 0, "superseded": 2, "forgotten": 1}
        assert stats["namespaces"] == {"default": 3}
        assert stats["db_bytes"] > 0
        assert stats["server"]["version"] == __version__


# ---------------------------------------------------------------------------- the command line


def test_help_and_version() -> None:
    helped = subprocess.run([EVOMEM_MCP, "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0
    for flag in ("--db", "--transport", "--host", "--port", "--auto-supersede", "--max-note-bytes", "--log-level"):
        assert flag in helped.stdout, flag
    assert "EVOMEM_" in helped.stdout

    version = subprocess.run([EVOMEM_MCP, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0
    assert version.stdout.strip() == f"evomem-mcp {__version__}"
