"""The multi-service wiring against the embedded server, in one run.

    python -m bench.gateway --gateway-url http://127.0.0.1:8765/mcp --out bench/results

Measures, through the official MCP client over streamable HTTP:
- remember acknowledged (p50/p95) through the gateway and through the embedded server;
- the time from remember until extraction is done (gateway: the worker's round trip,
  observed by polling get_node; embedded: 0 by construction, extraction is inline);
- recall p50/p95 through both;
- gateway throughput (calls/s) with 8 and 32 concurrent MCP clients, each doing a mix of
  remember and recall, next to the embedded server under the same load.

The gateway must be running (``make images && docker-compose -f compose.cpu.yaml up -d``);
the embedded server is started here on a temporary database.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.speed import _wait_health
from bench.stats import pct

QUERIES = ["ledger database", "billing queue", "search engine catalog", "payments hosting", "cache for sessions"]


def _note(i: int, rng: random.Random) -> str:
    comp = rng.choice(["ledger", "billing", "search", "auth", "payments", "catalog", "reporting"])
    opt = rng.choice(["Postgres", "SQLite", "Kafka", "Redis", "Go", "Rust", "Kubernetes"])
    return f"We moved the {comp} service to {opt} (gateway bench note {i}, {rng.random():.6f})."


def _stats(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values), 2), "p95_ms": round(pct(values, 95), 2), "n": len(values)}


async def latency(url: str, n: int, poll_extraction: bool) -> dict[str, Any]:
    from mcp import Client

    rng = random.Random(7)
    remember, recall, extract = [], [], []
    async with Client(url) as client:
        for i in range(n):
            t = time.perf_counter()
            r = await client.call_tool("remember", {"raw_text": _note(i, rng)})
            remember.append((time.perf_counter() - t) * 1000)
            node_id = r.structured_content["id"]
            if poll_extraction:
                while True:
                    got = await client.call_tool("get_node", {"node_id": node_id})
                    state = got.structured_content["node"]["extraction"]["state"]
                    if state != "pending":
                        break
                    await anyio.sleep(0.005)
                extract.append((time.perf_counter() - t) * 1000)
        for _ in range(3):
            for q in QUERIES:
                t = time.perf_counter()
                await client.call_tool("recall", {"query": q, "k": 5})
                recall.append((time.perf_counter() - t) * 1000)
    out = {"remember": _stats(remember), "recall": _stats(recall)}
    if extract:
        out["remember_to_extracted"] = _stats(extract)
    return out


async def throughput(url: str, clients: int, seconds: float) -> dict[str, Any]:
    from mcp import Client

    done = 0
    errors = 0
    stop_at = time.perf_counter() + seconds

    async def one(idx: int) -> None:
        nonlocal done, errors
        rng = random.Random(idx)
        async with Client(url) as client:
            i = 0
            while time.perf_counter() < stop_at:
                if i % 2 == 0:
                    r = await client.call_tool("remember", {"raw_text": _note(idx * 100000 + i, rng)})
                else:
                    r = await client.call_tool("recall", {"query": rng.choice(QUERIES), "k": 5})
                if r.is_error:
                    errors += 1
                else:
                    done += 1
                i += 1

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for c in range(clients):
            tg.start_soon(one, c)
    elapsed = time.perf_counter() - started
    return {"clients": clients, "calls": done, "errors": errors, "seconds": round(elapsed, 1),
            "calls_per_s": round(done / elapsed, 1)}  # fmt: skip


def start_embedded(db: Path) -> tuple[subprocess.Popen[str], str]:
    exe = Path(sys.executable).with_name("evomem-mcp")
    proc = subprocess.Popen(
        [str(exe), "--db", str(db), "--transport", "http", "--port", "0", "--log-level", "WARNING"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for _ in range(200):
        line = proc.stderr.readline()
        if "/mcp" in line:
            url = line.split(" at ")[-1].strip()
            _wait_health(url.replace("/mcp", "/healthz"))
            return proc, url
    proc.kill()
    raise RuntimeError("embedded server did not start")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gateway-url", default="http://127.0.0.1:8765/mcp")
    p.add_argument("--out", type=Path, default=Path("bench/results"))
    p.add_argument("--n", type=int, default=100, help="remembers per latency run")
    p.add_argument("--seconds", type=float, default=15.0, help="duration of each throughput run")
    args = p.parse_args(argv)

    report: dict[str, Any] = {"machine": f"{platform.machine()}, {platform.platform()}", "date": time.ctime()}
    with tempfile.TemporaryDirectory() as tmp:
        proc, embedded_url = start_embedded(Path(tmp) / "bench.db")
        try:
            for name, url, poll in (("gateway", args.gateway_url, True), ("embedded", embedded_url, False)):
                print(f"{name}: latency ...", file=sys.stderr, flush=True)
                report[name] = {"latency": anyio.run(latency, url, args.n, poll)}
                for clients in (8, 32):
                    print(f"{name}: throughput with {clients} clients ...", file=sys.stderr, flush=True)
                    report[name][f"throughput_{clients}"] = anyio.run(throughput, url, clients, args.seconds)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gateway.json").write_text(json.dumps(report, indent=2))
    md = markdown(report)
    (args.out / "gateway.md").write_text(md)
    print(md)
    return 0


def markdown(r: dict[str, Any]) -> str:
    g, e = r["gateway"], r["embedded"]
    gl, el = g["latency"], e["latency"]
    rows = [
        "| measure | gateway (compose.cpu.yaml) | embedded (evomem-mcp --transport http) |",
        "|---|---:|---:|",
        f"| remember acknowledged p50 / p95 | {gl['remember']['p50_ms']} / {gl['remember']['p95_ms']} ms | "
        f"{el['remember']['p50_ms']} / {el['remember']['p95_ms']} ms |",
        f"| remember → extraction done p50 / p95 | {gl['remember_to_extracted']['p50_ms']} / "
        f"{gl['remember_to_extracted']['p95_ms']} ms | inline (same call) |",
        f"| recall p50 / p95 | {gl['recall']['p50_ms']} / {gl['recall']['p95_ms']} ms | "
        f"{el['recall']['p50_ms']} / {el['recall']['p95_ms']} ms |",
    ]
    for c in (8, 32):
        gt, et = g[f"throughput_{c}"], e[f"throughput_{c}"]
        rows.append(
            f"| throughput, {c} concurrent MCP clients (remember+recall mix) | {gt['calls_per_s']} calls/s "
            f"({gt['errors']} errors) | {et['calls_per_s']} calls/s ({et['errors']} errors) |"
        )
    return f"Machine: {r['machine']}\n\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
