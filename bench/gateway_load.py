"""Gateway throughput against its no-op floor and the embedded server, under wrk, in one run.

    python -m bench.gateway --throughput --label before|after --out bench/results

Local processes, no images: a real ``redis-server``, ``evomem-service storage`` over a store of
``--notes`` notes (100k by default, built as ``bench.speed`` builds its stores, vectors on when
the model is installed), ``evomem-service gateway`` (its own gunicorn command and workers), the
floor (the same gunicorn command serving ``bench.gateway_floor:create_app()``: the same HTTP
front and auth with one no-op tool) and the embedded server (``evomem-mcp --transport http``)
on a copy of the same store. Every server takes the same token file.

``wrk`` (Debian's; ``bench/wrk_mcp.lua``) posts stateless JSON-RPC ``tools/call`` requests as
the official client sends them (protocol 2026-07-28: no session), each connection one client:
the floor's ``noop``, then ``recall`` and ``remember`` through the gateway and the embedded
server, with 8 and 32 connections. Before the load, the official MCP client checks each server
once (a remember, a recall that finds it, the floor's noop). ``uptime`` is read before each
run: the machine is shared, so the load beside this benchmark is part of the result.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
LUA = Path(__file__).with_name("wrk_mcp.lua")
TOKEN = "evm_bench_" + "t" * 32  # a throwaway identity for a throwaway store
CLIENTS = (8, 32)
#: (server, tool) in the order each client count runs them.
RUNS = (("floor", "noop"), ("gateway", "recall"), ("embedded", "recall"), ("gateway", "remember"),
        ("embedded", "remember"))  # fmt: skip


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its live descendants, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def store(workdir: Path, notes: int) -> tuple[Path, bool]:
    """The built store (cached in ``workdir``) and whether its notes have vectors."""
    from bench import datagen
    from bench.speed import vectors_available

    base = workdir / f"gateway-{notes}.db"
    ready = workdir / f"gateway-{notes}.db.vectors"
    if not base.exists():
        datagen.build(base, notes, seed=1)
        ready.unlink(missing_ok=True)
    vectors = vectors_available()
    if vectors and not ready.exists():
        datagen.add_vectors(base, seed=1)
        ready.touch()
    return base, vectors


def token_file(path: Path) -> Path:
    from evomem.security.tokens import digest

    path.write_text(
        f'[[tokens]]\nname = "bench"\nsha256 = "{digest(TOKEN)}"\nrole = "writer"\nnamespaces = ["default"]\n'
    )
    return path


def wrk(url: str, tool: str, clients: int, seconds: float) -> dict[str, Any]:
    env = {**os.environ, "WRK_TOOL": tool, "WRK_TOKEN": TOKEN}
    argv = ["wrk", "-t", str(min(2, clients)), "-c", str(clients), "-d", f"{seconds:g}s", "--timeout", "10s",
            "-s", str(LUA), url]  # fmt: skip
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    line = [x for x in out.splitlines() if x.startswith("{")][-1]
    return json.loads(line)  # type: ignore[no-any-return]


async def check(url: str, tool: str) -> None:
    """The official client, once: the answer is right, not just fast."""
    from bench.gateway_client import client

    async with client(url, TOKEN) as session:
        if tool == "noop":
            r = await session.call_tool("noop", {"query": "ledger"})
            assert not r.is_error and r.structured_content == {"ok": True}, r
            return
        made = await session.call_tool(
            "remember", {"raw_text": "The bench check note: the zephyr service runs on Nomad."}
        )
        assert not made.is_error, made
        found = await session.call_tool("recall", {"query": "zephyr service Nomad", "k": 5})
        assert not found.is_error, found
        ids = [h["id"] for h in found.structured_content["results"]]  # type: ignore[index]
        assert made.structured_content["id"] in ids, (made.structured_content, ids)  # type: ignore[index]


@contextlib.contextmanager
def stack(
    workdir: Path, notes: int, label: str, vectors_off: bool = False
) -> Iterator[tuple[dict[str, str], dict[str, Any], dict[str, Any]]]:
    """Start redis, storage, the gateway, the floor and the embedded server over copies of the
    store; yield their MCP URLs, their processes and what describes them; stop them all."""
    from bench.gateway_client import healthy
    from bench.procs import free_ports, wait_until
    from evomem.adapters.grpc.clients import GrpcStorage
    from evomem.domain.recall import RecallQuery
    from evomem.entrypoints.cli.commands import gateway_command
    from evomem.settings import Settings

    workdir.mkdir(parents=True, exist_ok=True)
    base, vectors = store(workdir, notes)
    vectors = vectors and not vectors_off  # --vectors off: every server BM25 only, the same file
    tmp = workdir / f"run-{label}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for name in ("storage", "embedded"):
        shutil.copyfile(base, tmp / f"{name}.db")
    tokens = token_file(tmp / "tokens.toml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "services"), str(ROOT), env.get("PYTHONPATH", "")])
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env |= {"EVOMEM_VECTORS": "on" if vectors else "off", "EVOMEM_AUTH_FILE": str(tokens)}
    names = ("redis", "storage", "gateway", "floor", "embedded")
    ports = dict(zip(names, free_ports(len(names)), strict=True))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    bin_dir = Path(sys.executable).parent

    def start(name: str, argv: list[str], extra: dict[str, str]) -> None:
        log = (tmp / f"{name}.log").open("wb")
        procs[name] = subprocess.Popen(argv, env={**env, **extra}, cwd=ROOT, stdout=log, stderr=log)

    try:
        start("redis", ["redis-server", "--port", str(ports["redis"]), "--save", "", "--appendonly", "no",
                        "--dir", str(tmp)], {})  # fmt: skip
        redis_url = f"redis://127.0.0.1:{ports['redis']}/0"
        storage_addr = f"127.0.0.1:{ports['storage']}"
        start("storage", [str(bin_dir / "evomem-service"), "storage"],
              {"EVOMEM_DB": str(tmp / "storage.db"), "EVOMEM_GRPC_PORT": str(ports["storage"])})  # fmt: skip
        gw = {"EVOMEM_STORAGE_ADDR": storage_addr, "EVOMEM_REDIS_URL": redis_url, "EVOMEM_HOST": "127.0.0.1"}
        start("gateway", [str(bin_dir / "evomem-service"), "gateway"], {**gw, "EVOMEM_PORT": str(ports["gateway"])})
        floor_env = {**gw, "EVOMEM_PORT": str(ports["floor"])}
        argv = gateway_command(Settings.from_env(env={**env, **floor_env}))
        argv[0] = str(bin_dir / argv[0])
        argv[-1] = "bench.gateway_floor:create_app()"
        start("floor", argv, floor_env)
        start("embedded", [str(bin_dir / "evomem-mcp"), "--transport", "http", "--port", str(ports["embedded"]),
                           "--db", str(tmp / "embedded.db"), "--auth-file", str(tokens)], {})  # fmt: skip
        if vectors:
            probe = GrpcStorage(storage_addr, timeout_s=5, vectors=True)
            ask = RecallQuery(("ledger",), "ledger", "default", k=1, limit=50, vector_limit=20, vectors_required=True)

            def has_vectors() -> bool:  # storage answers by meaning once its model has loaded
                return probe.recall_nodes(ask).vector_problem is None

            wait_until("storage with vectors", has_vectors, procs["storage"], timeout_s=300, interval_s=0.3)
            probe.close()
        urls = {name: f"http://127.0.0.1:{ports[name]}/mcp" for name in ("gateway", "floor", "embedded")}
        for name, url in urls.items():
            wait_until(name, lambda url=url: healthy(url.replace("/mcp", "/healthz")), procs[name],
                       timeout_s=300, interval_s=0.3)  # fmt: skip
        shown = gateway_command(Settings.from_env(env={**env, **gw, "EVOMEM_PORT": "8765"}))
        about = {"notes": notes, "vectors": "on" if vectors else "off", "cores": os.cpu_count(),
                 "gateway_workers": Settings.from_env(env=env).gateway.workers,
                 "gateway_command": " ".join([Path(shown[0]).name, *shown[1:]])}  # fmt: skip
        yield urls, procs, about
    finally:
        for proc in reversed(procs.values()):
            proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def run(workdir: Path, notes: int, seconds: float, label: str, vectors_off: bool = False) -> dict[str, Any]:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk (make bench-gateway does)")
    with stack(workdir, notes, label, vectors_off) as (urls, procs, about):
        for name, url in urls.items():
            anyio.run(check, url, "noop" if name == "floor" else "recall")
        out: dict[str, Any] = {"label": label, "seconds": seconds, **about}
        print(f"[{label}] warm-up ...", file=sys.stderr, flush=True)
        for server, tool in RUNS:  # connections, caches, the embedded server's model
            wrk(urls[server], tool, 8, 3)
        pids = {name: procs[name].pid for name in ("gateway", "floor", "embedded", "storage", "redis")}
        rows = []
        for clients in CLIENTS:
            for server, tool in RUNS:
                load = uptime()
                print(f"[{label}] {server} {tool} x{clients}: {load}", file=sys.stderr, flush=True)
                before = {k: _proc_cpu(p) for k, p in pids.items()}
                res = wrk(urls[server], tool, clients, seconds)
                cpu = {k: round(_proc_cpu(p) - before[k], 1) for k, p in pids.items()}
                rows.append({"server": server, "tool": tool, "clients": clients, "uptime": load,
                             "cpu_s": {k: v for k, v in cpu.items() if v >= 0.5}, **res})  # fmt: skip
                print(f"    {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
        out["rows"] = rows
        out["uptime_after"] = uptime()
        return out
