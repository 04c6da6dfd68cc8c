"""What an operator reads: /metrics, /livez, /readyz, and one log line per tool call.

- the embedded server (``evomem-mcp --transport http``, a real process, the official MCP client):
  /metrics counts tool calls by tool and outcome with latency histograms and shows notes by
  status, the extraction backlog and the model's load state; /livez and /readyz answer; every
  log line is JSON (uvicorn's too), one INFO line per call names the tool, the outcome, the
  latency and the ids, and never the note text;
- the gateway app (``gateway.create_app()`` under uvicorn, over a real storage gRPC server):
  the same /metrics, and /readyz turns 503 when storage goes away;
- ``readiness`` and the call wrapper (``evomem.entrypoints.mcp.telemetry``) directly, for the cases a real
  process cannot be made to show on demand (a model that is still loading, a failing database).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from procutil import free_ports, stop_process

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService
from evomem.entrypoints.mcp import telemetry
from evomem.entrypoints.mcp.http_app import readiness
from evomem.entrypoints.mcp.server import build_mcp_server

EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))
SECRET_NOTE = "We picked Postgres for the ledger; the vault phrase is zebra-quartz-41"
URL_LINE = re.compile(r"at (http://127\.0\.0\.1:(\d+)/mcp)")
DEADLINE_S = 60  # a deadline for a hung process, not a speed assertion


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sample(page: str, name: str, **labels: str) -> float | None:
    """The value of one Prometheus sample on a text page (labels in any order), or None."""
    for line in page.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, rest = head.partition("{")
        if metric != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if got == labels:
            return float(value)
    return None


@pytest.fixture
def http_server(tmp_path: Path, server_env: dict[str, str]) -> Iterator[dict[str, Any]]:
    env = {**server_env, "EVOMEM_LOG_LEVEL": "INFO", "EVOMEM_LOG_FORMAT": "json"}
    errlog = tmp_path / "stderr.log"
    with errlog.open("w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [EVOMEM_MCP, "--db", str(tmp_path / "ops.db"), "--transport", "http", "--port", "0"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + DEADLINE_S
            while (match := URL_LINE.search(errlog.read_text(encoding="utf-8"))) is None:
                assert proc.poll() is None, errlog.read_text(encoding="utf-8")
                assert time.monotonic() < deadline, "the server never printed its URL"
                time.sleep(0.1)
            yield {"url": match.group(1), "base": match.group(1).removesuffix("/mcp"), "errlog": errlog}
        finally:
            stop_process(proc)


def test_embedded_http_metrics_probes_and_call_logs(http_server: dict[str, Any]) -> None:
    base = http_server["base"]
    assert get(base + "/livez") == (200, '{"status":"ok"}')
    assert get(base + "/healthz")[0] == 200
    status, body = get(base + "/readyz")
    assert status == 200, body
    ready = json.loads(body)
    assert ready["status"] == "ready" and ready["database"] == "ok"
    assert ready["model"] in ("not_loaded", "loading", "loaded", "off")

    async def calls() -> str:
        async with Client(http_server["url"]) as client:
            first = await client.call_tool("remember", {"raw_text": SECRET_NOTE})
            assert not first.is_error, first.content
            found = await client.call_tool("recall", {"query": "ledger database"})
            assert not found.is_error
            missing = await client.call_tool("get_node", {"node_id": "01J9ZK3V8W5Q6R7S8T9V0W1X2Y"})
            assert missing.is_error
            return str((first.structured_content or {})["id"])

    node_id = anyio.run(calls)
    status, page = get(base + "/metrics")
    assert status == 200
    assert sample(page, "evomem_tool_calls_total", tool="remember", outcome="ok") == 1.0
    assert sample(page, "evomem_tool_calls_total", tool="recall", outcome="ok") == 1.0
    assert sample(page, "evomem_tool_calls_total", tool="get_node", outcome="not_found") == 1.0
    assert sample(page, "evomem_tool_latency_seconds_count", tool="remember") == 1.0
    assert sample(page, "evomem_tool_latency_seconds_bucket", tool="recall", le="+Inf") == 1.0
    assert sample(page, "evomem_notes", status="active") == 1.0
    assert sample(page, "evomem_notes", status="superseded") == 0.0
    assert sample(page, "evomem_extraction_backlog") == 0.0  # extraction is inline here
    states = {s: sample(page, "evomem_embedding_model_state", state=s) for s in telemetry.MODEL_STATES}
    assert sum(v or 0 for v in states.values()) == 1.0  # exactly one current state

    logged = http_server["errlog"].read_text(encoding="utf-8")
    assert "zebra-quartz-41" not in logged  # never the note text
    records = [json.loads(line) for line in logged.splitlines() if line.startswith("{")]
    assert any(r["logger"].startswith("uvicorn") for r in records), "uvicorn's lines are not JSON"
    plain = [line for line in logged.splitlines() if "uvicorn" in line and not line.startswith("{")]
    assert not plain, plain
    calls_logged = [r for r in records if r["logger"] == "evomem.calls"]
    by_tool = {r["tool"]: r for r in calls_logged}
    assert set(by_tool) == {"remember", "recall", "get_node"}
    assert by_tool["remember"]["outcome"] == "ok" and by_tool["remember"]["ids"] == [node_id]
    assert by_tool["remember"]["severity"] == "INFO"
    assert by_tool["get_node"]["outcome"] == "not_found"
    assert by_tool["get_node"]["ids"] == ["01J9ZK3V8W5Q6R7S8T9V0W1X2Y"]
    assert node_id in by_tool["recall"]["ids"]
    assert all(isinstance(r["latency_ms"], float | int) for r in calls_logged)


# ---------------------------------------------------------------------------- the gateway


@pytest.fixture
def gateway_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    import uvicorn

    from evomem.app.storage import LocalStorage
    from evomem.entrypoints.grpc.server import create_server
    from evomem.entrypoints.grpc.servicers import StorageServicer
    from evomem.entrypoints.mcp import gateway
    from evomem.v1 import storage_pb2_grpc

    store = SQLiteStore(tmp_path / "served.db")
    running = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(store)), s),
        ("evomem.v1.StorageService",),
    )
    running.set_serving(True)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    for name in list(os.environ):
        if name.startswith("EVOMEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVOMEM_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("EVOMEM_STORAGE_ADDR", f"127.0.0.1:{running.port}")
    redis_port, port = free_ports(2)
    monkeypatch.setenv("EVOMEM_REDIS_URL", f"redis://127.0.0.1:{redis_port}/0")  # down: extraction waits
    monkeypatch.setenv("EVOMEM_VECTORS", "off")
    app = gateway.create_app()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + DEADLINE_S
    while get_or_none(base + "/livez") is None:
        assert time.monotonic() < deadline, "the gateway never answered /livez"
        time.sleep(0.1)
    try:
        yield {"base": base, "storage": running}
    finally:
        server.should_exit = True
        thread.join(10)
        running.stop(0)
        store.close()
        root.handlers[:] = handlers
        root.setLevel(level)


def get_or_none(url: str) -> tuple[int, str] | None:
    try:
        return get(url)
    except OSError:
        return None


def test_gateway_metrics_and_readyz_follow_storage(gateway_url: dict[str, Any]) -> None:
    base = gateway_url["base"]
    status, body = get(base + "/readyz")
    assert status == 200, body

    async def calls() -> None:
        async with Client(base + "/mcp") as client:
            out = await client.call_tool("remember", {"raw_text": "The gateway decided on gRPC for storage"})
            assert not out.is_error, out.content

    anyio.run(calls)
    status, page = get(base + "/metrics")
    assert status == 200
    assert (sample(page, "evomem_tool_calls_total", tool="remember", outcome="ok") or 0) >= 1.0
    assert sample(page, "evomem_notes", status="active") == 1.0
    assert sample(page, "evomem_extraction_backlog") == 1.0  # queued for the worker, which is not running
    assert sample(page, "evomem_embedding_model_state", state="off") == 1.0

    gateway_url["storage"].stop(0)  # storage goes away: the gateway is alive but not ready
    assert get(base + "/livez")[0] == 200
    status, body = get(base + "/readyz")
    assert status == 503, body
    assert json.loads(body)["database"].startswith("error")
    status, page = get(base + "/metrics")
    assert status == 200 and sample(page, "evomem_store_up") == 0.0


# ---------------------------------------------------------------------------- units


class _Storage:
    def __init__(self, state: str | None) -> None:
        self.state = state

    def model_state(self) -> str:
        return self.state or "off"


class _Service:
    """Only what ``readiness`` reads: stats() and storage's model state (a fake: a model cannot
    be held mid-load)."""

    def __init__(self, state: str | None, fail: bool = False) -> None:
        self.storage = _Storage(state)
        self.fail = fail

    def stats(self) -> None:
        if self.fail:
            raise OSError("disk I/O error")


@pytest.mark.parametrize(
    ("state", "required", "fail", "ready"),
    [
        ("loading", False, False, True),  # vectors auto: BM25 answers while the model loads
        ("loading", True, False, False),  # vectors on: not ready until it has loaded
        ("failed", True, False, False),
        ("loaded", True, False, True),
        (None, True, False, False),  # vectors required and none
        ("loaded", False, True, False),  # the database does not answer
    ],
)
def test_readiness(state: str | None, required: bool, fail: bool, ready: bool) -> None:
    got, detail = readiness(_Service(state, fail), model_required=required)
    assert got is ready, detail
    assert detail["model"] == (state or "off")


def test_one_wrapper_logs_every_tool_and_keeps_the_schemas(
    service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    async def run() -> tuple[set[str], dict[str, Any]]:
        async with Client(build_mcp_server(lambda: service)) as client:
            listed = await client.list_tools()
            out = await client.call_tool("remember", {"raw_text": SECRET_NOTE})
            await client.call_tool("stats", {})
            await client.call_tool("forget", {"node_id": "not-an-id"})
            schemas = {t.name: t.input_schema for t in listed.tools}
            return set(schemas), {"id": (out.structured_content or {})["id"], "schemas": schemas}

    with caplog.at_level(logging.INFO, logger="evomem.calls"):
        names, got = anyio.run(run)
    assert {"remember", "recall", "get_node", "forget", "stats", "supersede", "unlink"} <= names
    assert "raw_text" in got["schemas"]["remember"]["properties"]  # the wrapper keeps the signature
    lines = [r for r in caplog.records if r.name == "evomem.calls"]
    assert [(r.tool, r.outcome) for r in lines] == [("remember", "ok"), ("stats", "ok"), ("forget", "invalid_id")]  # type: ignore[attr-defined]
    assert lines[0].ids == [got["id"]]  # type: ignore[attr-defined]
    assert all("zebra" not in r.getMessage() for r in lines)
    assert telemetry.FIRST_CALL.is_set()


def test_ids_come_from_arguments_and_results_only() -> None:
    result = {"id": "A", "raw_text": "secret", "results": [{"node": {"id": "B", "raw_text": "x"}}, {"id": "C"}]}
    assert telemetry.ids_of({"node_id": "Z", "raw_text": "secret"}, result) == ["Z", "A", "B", "C"]
    assert telemetry.outcome_of(ValueError("[not_found] node_id: no node")) == "not_found"
    assert telemetry.outcome_of(RuntimeError("boom")) == "internal"
