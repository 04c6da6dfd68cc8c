"""The edges a hostile or broken client found (issue 34), one test each: every door answers what
the protocol defines, the process lives on, and no answer names a host, a port or a path.

Real parts: ``evomem-mcp`` processes (stdio and HTTP), the team gateway's app over a storage gRPC
server on loopback and a real Redis.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from test_mcp_transports import HttpServer, http_server  # noqa: F401 (fixture)
from test_protocol_fuzz import INIT
from test_team_gateway import TeamGateway

from evomem.entrypoints.mcp import limits

EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
ADDRESS = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b|\blocalhost:\d+|:\d{4,5}\b|/tmp/|/home/|Traceback")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _stdio(tmp_path: Path, env: dict[str, str], lines: list[bytes], answers: int) -> tuple[int | None, list[Any]]:
    """Send ``lines`` after the handshake to a real ``evomem-mcp``, read ``answers`` answers
    (besides initialize's), then close stdin: (the exit status, the answers)."""
    proc = subprocess.Popen(
        [EVOMEM_MCP, "--db", str(tmp_path / "s.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**env, "EVOMEM_VECTORS": "off"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    proc.stdin.write(b"".join(line + b"\n" for line in [json.dumps(INIT).encode(), initialized, *lines]))
    proc.stdin.flush()
    # The transport answers a malformed line at once, the SDK answers initialize when it gets to
    # it: the initialize answer is told apart by its id, not by its place.
    got = [json.loads(proc.stdout.readline()) for _ in range(answers + 1)]
    got = [a for a in got if a.get("id") != INIT["id"]]
    proc.stdin.close()
    return proc.wait(timeout=60), got


def test_a_line_nested_thousands_deep_is_answered_and_the_next_request_served(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    deep = b"[" * 5000 + b"]" * 5000
    deep_request = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": "X"}}).encode()
    deep_request = deep_request.replace(b'"X"', b"[" * 400 + b"]" * 400)
    code, answers = _stdio(
        tmp_path, server_env, [deep, deep_request, b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}'], 3
    )
    assert code == 0
    by_id = {json.dumps(a.get("id")): a for a in answers}
    errors = [a for a in answers if a.get("id") is None]
    assert [e["error"]["code"] for e in errors] == [limits.INVALID_REQUEST] * 2
    assert all(f"more than {limits.MAX_DEPTH} levels" in e["error"]["message"] for e in errors)
    assert by_id["3"]["result"] == {}  # served after both


def test_an_id_that_is_no_id_is_an_invalid_request_on_every_door(
    tmp_path: Path,
    server_env: dict[str, str],
    http_server: HttpServer,  # noqa: F811
    team_gateway: TeamGateway,
) -> None:
    bodies = [
        json.dumps({"jsonrpc": "2.0", "id": odd, "method": "tools/list"}).encode()
        for odd in ({"a": 1}, [1], 1.5, True, None)
    ]
    code, answers = _stdio(tmp_path, server_env, bodies, len(bodies))
    assert code == 0
    refused = [a for a in answers if a.get("id") is None]
    assert len(refused) == len(bodies)  # each answered, none dropped as a notification
    assert {a["error"]["code"] for a in refused} == {limits.INVALID_REQUEST}
    assert all("id must be a string or an integer" in a["error"]["message"] for a in refused)

    gateway = (team_gateway.url, {"Authorization": f"Bearer {team_gateway.token('alice')}"})
    for url, headers in ((http_server.url, {}), gateway):
        with httpx2.Client(headers={**HEADERS, **headers}, timeout=30) as http:
            for body in bodies:
                resp = http.post(url, content=body)
                assert resp.status_code == 400, (url, body, resp.status_code)  # was 202: accepted, never answered
                error = resp.json()["error"]
                assert error["code"] == limits.INVALID_REQUEST and "id must be" in error["message"]


def test_get_on_the_stateless_gateway_is_405_at_once(team_gateway: TeamGateway) -> None:
    started = time.monotonic()
    headers = {"Authorization": f"Bearer {team_gateway.token('alice')}", "Accept": "text/event-stream"}
    resp = httpx2.get(team_gateway.url, headers=headers, timeout=30)
    assert resp.status_code == 405 and resp.headers["allow"] == "POST"
    assert time.monotonic() - started < 5  # it hung until the client gave up
    assert "POST only" in resp.json()["error"]["message"]
    # Without a token, the caller learns nothing else: 401.
    assert httpx2.get(team_gateway.url, headers={"Accept": "text/event-stream"}, timeout=30).status_code == 401


@pytest.mark.anyio
async def test_errors_through_the_gateway_carry_a_reference_not_the_storage_address(
    team_gateway: TeamGateway, caplog: pytest.LogCaptureFixture
) -> None:
    storage = team_gateway.storage
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {team_gateway.token('alice')}"}, timeout=60)
    async with Client(streamable_http_client(team_gateway.url, http_client=http)) as client:
        stats = await client.call_tool("stats", {})
        assert "storage" not in stats.structured_content["server"]  # type: ignore[index]
        storage.stop(0)  # storage goes away under the gateway
        with caplog.at_level(logging.ERROR):
            answers = [
                await client.call_tool("stats", {}),
                await client.call_tool("recall", {"query": "ledger"}),
                await client.call_tool("remember", {"raw_text": "We moved the ledger to SQLite."}),
            ]
    for answer in answers:
        text = answer.content[0].text  # type: ignore[union-attr]
        assert answer.is_error and "[unavailable] the storage service is unavailable" in text, text
        assert not ADDRESS.search(text), text
        ref = re.search(r"\(ref ([0-9a-f]{8})\)", text)
        assert ref, text
        # The operator finds the address under the reference the caller was given.
        logged = [r.getMessage() for r in caplog.records if ref.group(1) in r.getMessage()]
        assert logged and f"127.0.0.1:{storage.port}" in logged[0], logged


def test_the_embedded_server_without_auth_shows_no_peer_address(tmp_path: Path, server_env: dict[str, str]) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "stats", "arguments": {}}}
    code, answers = _stdio(tmp_path, server_env, [json.dumps(call).encode()], 1)
    server = next(a for a in answers if a.get("id") == 2)["result"]["structuredContent"]["server"]
    assert code == 0 and server["db"] == "s.db" and not ADDRESS.search(json.dumps(server))
