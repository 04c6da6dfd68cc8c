"""CPU per call through the gateway, the embedded server and in-core, one client, one call at a time.

    python -m bench.gateway_cpu --notes 100000 --calls 200 --out bench/results

The same local processes as ``bench.gateway --throughput`` (``gateway_load.stack``: redis, storage,
the gunicorn gateway, the no-op floor, the embedded server over copies of one store), driven by
one keep-alive HTTP connection posting the stateless JSON-RPC ``tools/call`` that ``wrk`` posts.
For each (server, tool): the CPU its processes used (from /proc) per answered call, and the wall
p50, with no concurrency, so what it shows is per-call work (serialization, set-up, validation,
round trips), not contention. The in-core rows run ``MemoryService`` in this process on a copy
of the same store, in the same run. Writes ``gateway_cpu.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from bench.gateway_load import TOKEN, _proc_cpu, stack
from bench.stats import pct

QUERIES = ["what database does the ledger use", "billing queue kafka", "which cache for sessions",
           "search engine for the catalog", "hosting for payments kubernetes"]  # fmt: skip
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def arguments(tool: str, n: int) -> dict[str, Any]:
    if tool == "remember":
        return {"raw_text": f"We moved the ledger service to Nomad (cpu bench note {n}, {time.time_ns()})."}
    return {"query": QUERIES[n % len(QUERIES)], "k": 5} if tool == "recall" else {"query": "ledger"}


def drive(url: str, tool: str, calls: int, pids: dict[str, int]) -> dict[str, Any]:
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool,
               "Authorization": f"Bearer {TOKEN}"}  # fmt: skip

    def call(n: int) -> None:
        body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments(tool, n), "_meta": META}}  # fmt: skip
        conn.request("POST", u.path, json.dumps(body), headers)
        r = conn.getresponse()
        data = r.read()
        if r.status != 200 or b'"isError":true' in data:
            raise RuntimeError(f"{tool}: {r.status} {data[:300]!r}")

    for n in range(10):  # warm-up: connections, caches
        call(n)
    before = {k: _proc_cpu(p) for k, p in pids.items()}
    wall = []
    for n in range(calls):
        t = time.perf_counter()
        call(1000 + n)
        wall.append((time.perf_counter() - t) * 1000)
    cpu = {k: round((_proc_cpu(p) - before[k]) * 1000 / calls, 2) for k, p in pids.items()}
    conn.close()
    return {"p50_ms": round(pct(wall, 50), 2), "cpu_ms_per_call": {k: v for k, v in cpu.items() if v >= 0.05}}


def in_core(db: Path, calls: int) -> dict[str, Any]:
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    service = build_embedded(Settings(db=str(db)))
    out: dict[str, Any] = {}
    try:
        service.recall(QUERIES[0], k=5)
        service.remember("We picked Postgres for the warm-up ledger database")
        for tool in ("recall", "remember"):
            wall = []
            cpu0 = time.process_time()
            for n in range(calls):
                t = time.perf_counter()
                if tool == "recall":
                    service.recall(**arguments(tool, n))
                else:
                    service.remember(**arguments(tool, n))
                wall.append((time.perf_counter() - t) * 1000)
            out[tool] = {
                "p50_ms": round(pct(wall, 50), 2),
                "cpu_ms_per_call": {"in_core": round((time.process_time() - cpu0) * 1000 / calls, 2)},
            }
    finally:
        service.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--notes", type=int, default=100_000)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--out", type=Path, default=Path("bench/results"))
    p.add_argument("--workdir", type=Path, default=Path("bench/results/tmp"))
    p.add_argument("--label", default="after")
    args = p.parse_args(argv)
    rows: dict[str, Any] = {}
    with stack(args.workdir, args.notes, f"cpu-{args.label}") as (urls, procs, about):
        pids = {name: procs[name].pid for name in ("gateway", "floor", "embedded", "storage", "redis")}
        for server, tool in (("floor", "noop"), ("gateway", "recall"), ("embedded", "recall"),
                             ("gateway", "remember"), ("embedded", "remember")):  # fmt: skip
            rows[f"{server} {tool}"] = drive(urls[server], tool, args.calls, pids)
            print(f"{server} {tool}: {rows[f'{server} {tool}']}", file=sys.stderr, flush=True)
    base = args.workdir / f"gateway-{args.notes}.db"
    copy = args.workdir / f"gateway-{args.notes}-in-core.db"
    shutil.copyfile(base, copy)
    try:
        for tool, row in in_core(copy, args.calls).items():
            rows[f"in-core {tool}"] = row
            print(f"in-core {tool}: {row}", file=sys.stderr, flush=True)
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(copy) + suffix).unlink(missing_ok=True)
    result = {"label": args.label, "date": time.ctime(), "calls": args.calls, **about, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "gateway_cpu.json"
    kept = json.loads(path.read_text()) if path.exists() else {}
    kept[args.label] = result
    path.write_text(json.dumps(kept, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
