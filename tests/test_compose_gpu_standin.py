"""compose.gpu.yaml's service graph, run end to end under Docker with CPU stand-ins (compose.gpu-standin.yaml).

Two parts:

- **Parity** (no Docker): the stand-in file has the same services, environment variable names,
  ports, health checks, commands, volumes' mount points and start-up order as compose.gpu.yaml;
  it differs only where a CPU stand-in must (the triton and llm images, no GPU reservation, the
  CPU mirror of the model repository, an exec /tmp for Triton's Python backend). So the two
  files cannot drift.
- **End to end** (Docker): ``make images`` and ``make standin-images`` build every image from the
  project's own files; the project runs with the Triton stand-in serving the CPU repository
  (the tiny random cronista model and the packaged embedding model, ``make models``) and the
  llama.cpp stand-in serving the tiny GGUF. The ledger story goes through the gateway with the
  cronista on Triton; then Triton is killed while remembers keep coming: every remember
  succeeds, every note is extracted (by lite, recorded on the node and counted), the cronista
  reports degraded, and it is back on Triton once Triton is.

The end-to-end part is skipped only when no Docker daemon is reachable, and not even then under
EVOMEM_REQUIRE_DOCKER=1 (CI).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from compose_support import Compose, build_images, compose_command, docker_unreachable, write_secrets
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from procutil import free_port

from tests.test_cronista import made_of_source_spans
from tests.triton_support import ROOT, cpu_repository, make_tiny_cronista

GPU_FILE = ROOT / "compose.gpu.yaml"
STANDIN_FILE = ROOT / "compose.gpu-standin.yaml"
SERVICES = ("redis", "storage", "cronista", "linker", "worker", "gateway", "triton", "llm")
STANDINS = {"triton": "evomem-triton-cpu", "llm": "evomem-llm-cpu"}
STANDIN_BUILD_S = 3600  # llama-cpp-python compiles from its sdist when pip's cache has no wheel
HEALTHY_S = 300
TRITON = "triton/cronista-minilm-1"
FALLBACK = f"lite/1 (fallback from {TRITON})"
#: The gateway's token in the test project (the compose file mounts tokens.toml as a secret).
TOKEN = "evm_" + secrets.token_urlsafe(24)


def connect(url: str) -> Client:
    """The official client with the gateway's bearer token."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http))


POSTGRES = "We picked Postgres for the ledger because the team knows it well."
SQLITE = "We moved the ledger from Postgres to SQLite, because Postgres was overkill for one writer."


def services(path: Path) -> dict[str, dict[str, Any]]:
    return yaml.safe_load(path.read_text())["services"]


def mount_points(service: dict[str, Any]) -> list[str]:
    """The container side of each volume (``SRC:DST[:MODE]``, SRC possibly ``${VAR:-default}``)."""
    return [re.sub(r"\$\{[^}]*\}", "SRC", str(v)).split(":")[1] for v in service.get("volumes", [])]


# ---------------------------------------------------------------------------- parity (no Docker)


def test_the_standin_runs_the_same_services():
    assert set(services(STANDIN_FILE)) == set(services(GPU_FILE)) == set(SERVICES)


@pytest.mark.parametrize("name", SERVICES)
def test_each_service_has_the_same_variables_ports_health_command_and_order(name):
    gpu, standin = services(GPU_FILE)[name], services(STANDIN_FILE)[name]
    assert set(standin.get("environment") or {}) == set(gpu.get("environment") or {})
    assert standin.get("environment") == gpu.get("environment")  # the same values too
    assert standin.get("expose") == gpu.get("expose")
    assert standin.get("ports") == gpu.get("ports")
    assert standin["healthcheck"] == gpu["healthcheck"]
    assert standin.get("command") == gpu.get("command")
    assert standin.get("depends_on") == gpu.get("depends_on")
    assert mount_points(standin) == mount_points(gpu)


@pytest.mark.parametrize("name", [s for s in SERVICES if s not in STANDINS])
def test_the_evomem_services_and_redis_are_identical(name):
    assert services(STANDIN_FILE)[name] == services(GPU_FILE)[name]


@pytest.mark.parametrize("name", sorted(STANDINS))
def test_the_standins_differ_only_in_image_gpu_and_model_files(name):
    gpu, standin = dict(services(GPU_FILE)[name]), dict(services(STANDIN_FILE)[name])
    assert "gpu" in json.dumps(gpu.pop("deploy"))
    assert "deploy" not in standin, "a stand-in reserves no GPU"
    assert standin.pop("image") == f"${{{name.upper()}_IMAGE:-{STANDINS[name]}:latest}}"
    gpu.pop("image")
    if name == "triton":
        assert standin.pop("volumes") == ["${EVOMEM_MODEL_REPOSITORY:-./models/triton-cpu}:/models:ro"]
        assert gpu.pop("volumes") == ["${EVOMEM_MODEL_REPOSITORY:-./models/triton}:/models:ro"]
        assert standin.pop("tmpfs") == ["/tmp:exec"] and gpu.pop("tmpfs") == ["/tmp"]
    assert standin == gpu


def test_the_standin_images_build_from_the_projects_files():
    makefile = (ROOT / "Makefile").read_text()
    assert "standin-images:" in makefile
    for folder in ("triton-cpu", "llm-cpu"):
        dockerfile = ROOT / "docker" / folder / "Dockerfile"
        assert dockerfile.is_file() and f"docker/{folder}/Dockerfile" in makefile
        assert "FROM python:3.11-slim-bookworm" in dockerfile.read_text()  # docker/base/ builds it offline


# ---------------------------------------------------------------------------- end to end (Docker)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _readable(path: Path) -> None:
    """The services run as uid 10001: the mounted folders must be readable by others."""
    for p in [path, *path.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """The model files the stack mounts: the CPU repository (tiny cronista + embedding), the
    tiny cronista's folder (the cronista's tokenizer and pins) and the tiny GGUF as linker.gguf."""
    pytest.importorskip("onnx")
    base = tmp_path_factory.mktemp("standin-models")
    tiny = make_tiny_cronista(base / "cronista")
    repo = cpu_repository(base, cronista_dir=tiny)
    llm = base / "llm"
    llm.mkdir()
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_tiny_gguf.py"), str(llm / "linker.gguf")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if run.returncode != 0:
        pytest.fail(f"make_tiny_gguf.py failed (is `gguf` installed?): {run.stderr[-1000:]}")
    for path in (repo, tiny, llm):
        _readable(path)
    return {"repository": repo, "cronista": tiny, "llm": llm, "base": base}


def build_standin_images() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    args = ["make", "standin-images"]
    if os.environ.get("EVOMEM_TRITON_VENV"):
        args.append(f"TRITON_VENV={os.environ['EVOMEM_TRITON_VENV']}")
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=STANDIN_BUILD_S, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"`make standin-images` failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}")


@pytest.fixture(scope="module")
def stack(models, tmp_path_factory) -> Iterator[tuple[Compose, str]]:
    reason = docker_unreachable()
    if reason:
        if os.environ.get("EVOMEM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"the stand-in end-to-end tests need Docker: {reason}")
        pytest.skip(f"the stand-in end-to-end tests need Docker: {reason}")
    command = compose_command()
    if command is None:
        pytest.fail("Docker is reachable but Compose is not")
    if os.environ.get("EVOMEM_SKIP_IMAGE_BUILD") != "1":  # images already built by this run's caller
        try:
            build_images()
            build_standin_images()
        except RuntimeError as exc:
            pytest.fail(str(exc))
    # Test-only override: the cronista reads the tiny model's tokenizer and pins (the folder
    # Triton serves the graph of) instead of the packaged model's.
    override = models["base"] / "compose.override.yaml"
    override.write_text(
        yaml.safe_dump(
            {
                "services": {
                    "cronista": {
                        "environment": {"EVOMEM_CRONISTA_MODEL_DIR": "/models/cronista"},
                        "volumes": [f"{models['cronista']}:/models/cronista:ro"],
                    }
                }
            }
        )
    )
    port = free_port()
    env = {
        "EVOMEM_BIND": "127.0.0.1",
        "EVOMEM_PORT": str(port),
        "EVOMEM_MODEL_REPOSITORY": str(models["repository"]),
        "EVOMEM_LLM_MODELS": str(models["llm"]),
        "EVOMEM_AUTO_SUPERSEDE": "llm",  # the gateway asks the linker, which asks the llm stand-in
        "EVOMEM_TRITON_TIMEOUT_MS": "1000",
        "EVOMEM_SECRETS_DIR": str(write_secrets(models["base"] / "secrets", [("ledger-team", TOKEN, "writer")])),
    }
    unset = [f"-u {k}" for k in sorted(os.environ) if k.startswith("EVOMEM_") and k != "EVOMEM_IMAGE"]
    full = " ".join(["env", *unset, *(f"{k}={v}" for k, v in env.items()), command])
    compose = Compose(full, [STANDIN_FILE, override], f"evomemgpu{secrets.token_hex(4)}")
    try:
        compose.run("up", "-d", timeout=600)
        compose.wait_healthy(SERVICES, timeout=HEALTHY_S)
        yield compose, f"http://127.0.0.1:{port}/mcp"
    finally:
        logs = compose.logs(tail=3000)
        (tmp_path_factory.mktemp("standin-logs") / "compose.log").write_text(logs)
        compose.run("down", "-v", "--remove-orphans", "--timeout", "5", check=False, timeout=300)


async def call_ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool(tool, args)
    text = " ".join(getattr(b, "text", "") for b in result.content)
    assert not result.is_error, f"{tool}({args}) failed: {text}"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def extracted(client: Client, ids: list[str], deadline_s: float) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + deadline_s
    while True:
        nodes = {i: await call_ok(client, "get_node", {"node_id": i, "detail": "full"}) for i in ids}
        states = {i: n["extraction"]["state"] for i, n in nodes.items()}
        if all(s == "done" for s in states.values()):
            return nodes
        assert "failed" not in states.values(), nodes
        assert time.monotonic() < deadline, f"not extracted after {deadline_s} s: {states}"
        await anyio.sleep(0.5)


def cronista_probe(compose: Compose, service: str = "evomem.v1.CronistaService") -> int:
    """The compose health check's own command, run in the cronista container: 0 is SERVING."""
    probe = ["python", "/opt/evomem/bin/evomem-healthcheck", "grpc", "50052", service]
    cid = compose.container_id("cronista")
    return subprocess.run(["docker", "exec", cid, *probe], capture_output=True, timeout=30).returncode


def cronista_fallbacks(compose: Compose) -> float:
    code = (
        "import urllib.request as u; k = open('/run/secrets/evomem_metrics_token').read().strip();"
        "r = u.Request('http://127.0.0.1:9464/metrics', headers={'Authorization': 'Bearer ' + k});"
        "t = u.urlopen(r, timeout=5).read().decode();"
        "print(sum(float(l.rsplit(' ', 1)[1]) for l in t.splitlines()"
        " if l.startswith('evomem_cronista_fallbacks_total{')))"
    )
    cid = compose.container_id("cronista")
    out = subprocess.run(["docker", "exec", cid, "python", "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.strip() or 0)


def triton_successes(compose: Compose, model: str) -> float:
    """Triton's own count of the model's successful inferences (its metrics port, 8002)."""
    code = (
        "import urllib.request as u; t = u.urlopen('http://127.0.0.1:8002/metrics', timeout=5).read().decode();"
        f"print(sum(float(l.rsplit(' ', 1)[1]) for l in t.splitlines()"
        f" if l.startswith('nv_inference_request_success{{') and 'model=\"{model}\"' in l))"
    )
    cid = compose.container_id("triton")
    out = subprocess.run(["docker", "exec", cid, "python3", "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.strip() or 0)


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.timeout(3600)
async def test_ledger_story_with_the_cronista_on_triton(stack) -> None:
    compose, url = stack
    async with connect(url) as client:
        first = await call_ok(client, "remember", {"raw_text": POSTGRES, "tags": ["ledger"]})
        second = await call_ok(client, "remember", {"raw_text": SQLITE, "tags": ["ledger"], "supersedes": first["id"]})
        assert (second["supersedes"], second["version"]) == (first["id"], 2)
        found = await call_ok(client, "recall", {"query": "ledger postgres", "include_history": True, "detail": "full"})
        top = found["results"][0]
        assert top["id"] == second["id"] and top["status"] == "active"
        assert [h["id"] for h in top["history"]] == [first["id"]]
        nodes = await extracted(client, [first["id"], second["id"]], deadline_s=120)
        for node_id, text in ((first["id"], POSTGRES), (second["id"], SQLITE)):
            node = nodes[node_id]
            assert node["extraction"]["extractor"] == TRITON, node["extraction"]
            for field in ("trigger", "change", "alternatives_tried", "consequences"):
                assert made_of_source_spans(node.get(field, ""), text), (field, node.get(field))
    assert cronista_probe(compose) == 0
    # Storage embedded the notes and the query on Triton (EVOMEM_EMBEDDING_BACKEND=triton).
    assert triton_successes(compose, "embedding") >= 3
    assert triton_successes(compose, "cronista") >= 2


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.timeout(3600)
async def test_killing_triton_mid_load_falls_back_to_lite_and_loses_nothing(stack) -> None:
    compose, url = stack
    before = cronista_fallbacks(compose)
    acked: list[tuple[str, str]] = []
    errors: list[str] = []
    stop = anyio.Event()
    marks: dict[str, float] = {}

    async def load(n: int) -> None:
        async with connect(url) as client:
            seq = 0
            while not stop.is_set():
                seq += 1
                text = f"Load {n}-{seq} ({uuid.uuid4().hex[:8]}): we switched the cache to Redis because eviction hurt."
                with anyio.fail_after(60):
                    result = await client.call_tool("remember", {"raw_text": text, "tags": ["load"]})
                if result.is_error:
                    errors.append(" ".join(getattr(b, "text", "") for b in result.content))
                else:
                    acked.append(((result.structured_content or {})["id"], text))
                await anyio.sleep(0.1)

    async def acked_at_least(n: int) -> None:
        with anyio.fail_after(300):  # counted in notes, not seconds: a loaded machine is slower, not wrong
            while len(acked) < n:
                await anyio.sleep(0.2)

    async def chaos() -> None:
        await acked_at_least(5)
        marks["kill"] = time.monotonic()
        await anyio.to_thread.run_sync(lambda: compose.run("kill", "triton", timeout=60))
        await acked_at_least(len(acked) + 5)
        stop.set()

    async with anyio.create_task_group() as tg:
        for n in range(3):
            tg.start_soon(load, n)
        await chaos()

    assert not errors, errors[:3]  # remembers never depend on Triton
    assert len(acked) >= 10
    # The cronista answers through lite and says it is degraded (NOT_SERVING for its service,
    # SERVING for the server as a whole), from its first extraction after the kill: the queue may
    # not have reached one yet when the last remember is acknowledged on a loaded machine.
    deadline = time.monotonic() + 240
    while cronista_fallbacks(compose) <= before:
        assert time.monotonic() < deadline, "no extraction fell back to lite within 240 s of the kill"
        await anyio.sleep(1)
    assert cronista_probe(compose) == 1
    assert cronista_probe(compose, "") == 0
    async with connect(url) as client:
        nodes = await extracted(client, [i for i, _ in acked], deadline_s=240)
        for node_id, text in acked:
            assert nodes[node_id]["raw_text"] == text
        used = [nodes[i]["extraction"]["extractor"] for i, _ in acked]
        assert set(used) <= {TRITON, FALLBACK}, set(used)
        fell_back = used.count(FALLBACK)
        assert fell_back >= 1, "Triton was killed but no note was extracted by the fallback"
        assert cronista_fallbacks(compose) - before >= fell_back
        # Triton back: the cronista's probe sees the model ready, and notes go to Triton again.
        await anyio.to_thread.run_sync(lambda: compose.run("up", "-d", "triton", timeout=300))
        await anyio.to_thread.run_sync(lambda: compose.wait_healthy(["triton"], timeout=HEALTHY_S))
        deadline = time.monotonic() + 60
        while cronista_probe(compose) != 0:
            assert time.monotonic() < deadline, "the cronista still reports degraded with Triton back"
            await anyio.sleep(1)
        late = await call_ok(client, "remember", {"raw_text": SQLITE + " Again.", "tags": ["late"]})
        node = (await extracted(client, [late["id"]], deadline_s=120))[late["id"]]
        assert node["extraction"]["extractor"] == TRITON
