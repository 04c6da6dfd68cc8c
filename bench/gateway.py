"""The multi-service wiring against the embedded server, in one run.

    python -m bench.gateway --throughput --label before|after --out bench/results   # make bench-gateway

Throughput under ``wrk`` on a 100k-note store: the gateway's no-op floor (the same HTTP front,
``bench/gateway_floor.py``), gateway and embedded ``recall`` and ``remember``, 8 and 32 clients,
local processes (``bench/gateway_load.py``). Each label is kept, so a before and an after run
land side by side in one table in gateway.md.

    python -m bench.gateway --gateway-url http://127.0.0.1:8765/mcp --token evm_... --out bench/results

Measures, through the official MCP client over streamable HTTP:
- remember acknowledged (p50/p95) through the gateway and through the embedded server;
- the time from remember until extraction is done (gateway: the worker's round trip,
  observed by polling get_node; embedded: 0 by construction, extraction is inline);
- recall p50/p95 through both;
- gateway throughput (calls/s) with 8 and 32 concurrent MCP clients, each doing a mix of
  remember and recall, next to the embedded server under the same load.

The gateway must be running (``make images secrets && docker-compose -f compose.cpu.yaml up -d``;
every call needs a token: ``--token``, e.g. a writer made with ``evomem-admin token create``);
the embedded server is started here on a temporary database.

gateway.md also shows the recorded run of recall through the gateway before and after
``RecallNodes`` (``recall_paths`` in gateway.json: one storage call per step against one
``RecallNodes`` call). The step-by-step path is gone from the product, so that run is kept as
it was measured and not repeated.
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

from bench.gateway_client import client, healthy
from bench.speed import _wait_health
from bench.stats import pct

QUERIES = ["ledger database", "billing queue", "search engine catalog", "payments hosting", "cache for sessions"]


def _note(i: int, rng: random.Random) -> str:
    comp = rng.choice(["ledger", "billing", "search", "auth", "payments", "catalog", "reporting"])
    opt = rng.choice(["Postgres", "SQLite", "Kafka", "Redis", "Go", "Rust", "Kubernetes"])
    return f"We moved the {comp} service to {opt} (gateway bench note {i}, {rng.random():.6f})."


#: The gateway's bearer token (--token): compose.cpu.yaml's gateway needs one for every call.
TOKEN: str | None = None


def _client(url: str, token: str | None = None) -> Any:
    """The official client, with ``Authorization: Bearer <token>`` (default: TOKEN) when one is set."""
    return client(url, token or TOKEN)


def _stats(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values), 2), "p95_ms": round(pct(values, 95), 2), "n": len(values)}


async def latency(url: str, n: int, poll_extraction: bool) -> dict[str, Any]:

    rng = random.Random(7)
    remember, recall, extract = [], [], []
    async with _client(url) as client:
        for i in range(n):
            t = time.perf_counter()
            r = await client.call_tool("remember", {"raw_text": _note(i, rng)})
            remember.append((time.perf_counter() - t) * 1000)
            node_id = r.structured_content["id"]
            if poll_extraction:
                while True:
                    got = await client.call_tool("get_node", {"node_id": node_id, "detail": "full"})
                    state = got.structured_content["extraction"]["state"]
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

    done = 0
    errors = 0
    stop_at = time.perf_counter() + seconds

    async def one(idx: int) -> None:
        nonlocal done, errors
        rng = random.Random(idx)
        async with _client(url) as client:
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


def _healthy(url: str) -> bool:
    return healthy(url)


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
    p.add_argument(
        "--token", default=None, help="bearer token for the gateway (compose: a writer in secrets/tokens.toml)"
    )
    p.add_argument("--throughput", action="store_true", help="only the wrk run: floor, gateway, embedded (local)")
    p.add_argument("--label", default="after", help="--throughput: before or after (kept side by side)")
    p.add_argument("--notes", type=int, default=100_000, help="--throughput: notes in the store")
    p.add_argument("--workdir", type=Path, default=None, help="--throughput: where the store is built (OUT/tmp)")
    p.add_argument("--vectors", choices=("auto", "off"), default="auto", help="--throughput: off = BM25 only")
    args = p.parse_args(argv)
    global TOKEN
    TOKEN = args.token

    if args.throughput:
        from bench import gateway_load

        previous = args.out / "gateway.json"
        report = json.loads(previous.read_text()) if previous.exists() else {}
        workdir = args.workdir or args.out / "tmp"
        result = gateway_load.run(workdir, args.notes, args.seconds, args.label, args.vectors == "off")
        result["machine"] = f"{platform.machine()}, {platform.platform()}"
        result["date"] = time.ctime()
        result["commit"] = _commit()
        report.setdefault("throughput", {})[args.label] = result
        return write(report, args.out)

    report = {"machine": f"{platform.machine()}, {platform.platform()}", "date": time.ctime()}
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
    previous = args.out / "gateway.json"
    kept = json.loads(previous.read_text()) if previous.exists() else {}
    report |= {k: kept[k] for k in ("recall_paths", "throughput") if k in kept}  # the local and recorded runs stay
    return write(report, args.out)


def _commit() -> str:
    """The tree measured: short commit, and whether product code had uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "services"], capture_output=True, text=True).stdout
    return f"commit {head}" + (" + uncommitted changes" if dirty.strip() else "")


def write(report: dict[str, Any], out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    (out / "gateway.json").write_text(json.dumps(report, indent=2))
    md = markdown(report)
    (out / "gateway.md").write_text(md)
    print(md)
    return 0


def markdown_recall_paths(r: dict[str, Any]) -> str:
    """The recorded run of recall before and after ``RecallNodes`` (no longer measured here)."""
    before, after = r["steps"], r["recall_nodes"]
    rows = [
        f"# Recall through the gateway: one storage round trip\n\n{r['date']}, {r['machine']}. Local processes: "
        f"redis-server, evomem-service storage (vectors {r['vectors']}, {r['notes']} notes), two gateways "
        f"(gunicorn, {r['gateway_workers']} uvicorn workers each) over the same storage. MCP client, "
        "recall(k=5, include_history=true); throughput is recall only. The two paths run one after the "
        f"other; 1-minute load average at the start and after each: {r.get('load_average_1m', '?')} "
        f"on {r.get('cores', '?')} cores.",
        "",
        "| measure | before: one storage call per step | after: one RecallNodes call |",
        "|---|---:|---:|",
        _latency_row("recall", before["latency"], after["latency"]),
    ]
    for c in (8, 32):
        label = f"recall throughput, {c} concurrent MCP clients"
        rows.append(_throughput_row(label, before[f"throughput_{c}"], after[f"throughput_{c}"]))
    return "\n".join(rows) + "\n"


def _latency_row(label: str, left: dict[str, Any], right: dict[str, Any]) -> str:
    ms = [f"{x['p50_ms']} / {x['p95_ms']} ms" for x in (left, right)]
    return f"| {label} p50 / p95 | {ms[0]} | {ms[1]} |"


def _throughput_row(label: str, left: dict[str, Any], right: dict[str, Any]) -> str:
    rates = [f"{x['calls_per_s']} calls/s ({x['errors']} errors)" for x in (left, right)]
    return f"| {label} | {rates[0]} | {rates[1]} |"


SERVER_NAMES = {"floor": "floor (no-op tool)", "gateway": "gateway", "embedded": "embedded"}


def markdown_throughput(t: dict[str, Any]) -> str:
    """One table: every (server, tool, clients) row of each label side by side."""
    labels = [x for x in ("before", "after") if x in t] + [x for x in t if x not in ("before", "after")]
    first = t[labels[0]]
    head = (
        f"# Throughput under wrk: the no-op floor, the gateway and the embedded server\n\n"
        f"Local processes on {first['cores']} cores, a {first['notes']:,}-note store (`bench.datagen`, as the "
        "speed suite builds it; every note has a vector): redis-server, evomem-service storage, evomem-service gateway "
        f"(`{first['gateway_command']}`), the floor (the same gunicorn command serving "
        "`bench.gateway_floor:create_app()`: the same HTTP front, bearer-token check, rate-limit middleware, "
        "Host/Origin checks, strict arguments and per-call log line, with one no-op tool) and the embedded "
        "server (`evomem-mcp --transport http`, one process) on a copy of the store; all with the same token "
        "file. `wrk` posts stateless JSON-RPC `tools/call` requests as the official client sends them "
        "(protocol 2026-07-28, no session; `bench/wrk_mcp.lua`), one connection per client, "
        f"{first['seconds']:g} s per row; `recall(k=5)` cycles six queries (their embeddings are then "
        "cached: the vector half costs its index scan), `remember` writes a new note each call (default "
        "settings: `possible_supersedes` offered, so each remember also searches for candidates; no "
        "extraction worker runs, jobs only queue). The official MCP client checked each server once "
        "before the load. Percentiles are wrk's, from one run. `load` is `uptime`'s 1-minute load average "
        "just before the row: the machine is shared with other work (see the load column), so "
        "read the floor and the ratios beside each other, not alone. With 32 clients each waiting for its "
        "answer, the mean latency is 32 / throughput (Little's law): p99 ≤ 100 ms needs well over 320 "
        "calls/s.\n"
    )
    for label in labels:
        head += f"\n- **{label}**: {t[label]['date']}"
        if t[label].get("commit"):
            head += f", {t[label]['commit']}"
        head += f"; vectors {t[label]['vectors']}; gateway workers: {t[label]['gateway_workers']}."
    rows = [
        "\n",
        "| server | tool | clients | "
        + " | ".join(f"{x}: calls/s | {x}: p50 / p95 / p99 ms | {x}: errors | {x}: load" for x in labels)
        + " |",
    ]
    rows.append("|---|---|---:|" + "---:|---:|---:|---:|" * len(labels))
    keyed = {label: {(r["server"], r["tool"], r["clients"]): r for r in t[label]["rows"]} for label in labels}
    order = [(r["server"], r["tool"], r["clients"]) for r in t[labels[0]]["rows"]]
    order = sorted(order, key=lambda k: (k[2], order.index(k)))
    for key in order:
        cells = []
        for label in labels:
            r = keyed[label].get(key)
            if r is None:
                cells.append("– | – | – | –")
                continue
            load = r["uptime"].split("load average:")[-1].split(",")[0].strip()
            cells.append(f"{r['calls_per_s']} | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} / {r['p99_ms']:.1f} | "
                         f"{r['failed'] + r['socket_errors']} | {load}")  # fmt: skip
        rows.append(f"| {SERVER_NAMES[key[0]]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    rows.append("")
    rows.append(ratios(t, labels))
    return head + "\n".join(rows) + "\n"


def ratios(t: dict[str, Any], labels: list[str]) -> str:
    """At 32 clients: gateway recall over the floor and over the embedded server, remember p99."""
    out = ["| at 32 clients | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    lines: dict[str, list[str]] = {"gateway recall / floor": [], "gateway recall / embedded recall": [],
                                   "gateway recall p99": [], "gateway remember p99": []}  # fmt: skip
    for label in labels:
        k = {(r["server"], r["tool"]): r for r in t[label]["rows"] if r["clients"] == 32}
        gw, floor, emb, rem = (
            k[("gateway", "recall")],
            k[("floor", "noop")],
            k[("embedded", "recall")],
            k[("gateway", "remember")],
        )
        lines["gateway recall / floor"].append(f"{gw['calls_per_s'] / floor['calls_per_s']:.2f} (goal ≥ 0.5)")
        lines["gateway recall / embedded recall"].append(f"{gw['calls_per_s'] / emb['calls_per_s']:.2f} (goal ≥ 2)")
        lines["gateway recall p99"].append(f"{gw['p99_ms']:.1f} ms (goal ≤ 100)")
        lines["gateway remember p99"].append(f"{rem['p99_ms']:.1f} ms (goal ≤ 50)")
        for key, row in (("floor noop", floor), ("gateway recall", gw), ("embedded recall", emb),
                         ("gateway remember", rem), ("embedded remember", k[("embedded", "remember")])):  # fmt: skip
            lines.setdefault(f"CPU ms per call, {key}", []).append(_cpu_per_call(row))
    out += [f"| {name} | " + " | ".join(v) + " |" for name, v in lines.items()]
    return "\n".join(out) + (
        "\n\nCPU ms per call: the CPU time the servers' processes used during the row (from /proc), "
        "per answered call, by process; it does not depend on how busy the machine was as much as "
        "calls/s does."
    )


def _cpu_per_call(row: dict[str, Any]) -> str:
    cpu = row.get("cpu_s") or {}
    if not row.get("requests"):
        return "–"
    parts = [f"{name} {1000 * sec / row['requests']:.1f}" for name, sec in sorted(cpu.items(), key=lambda x: -x[1])]
    return ", ".join(parts) or "–"


def markdown(r: dict[str, Any]) -> str:
    """The wrk run (before and after) first, then the compose run, then the recall paths."""
    parts = [markdown_throughput(r["throughput"])] if "throughput" in r else []
    if "gateway" in r:
        g, e = r["gateway"], r["embedded"]
        gl, el = g["latency"], e["latency"]
        rows = [
            "| measure | gateway (compose.cpu.yaml) | embedded (evomem-mcp --transport http) |",
            "|---|---:|---:|",
            _latency_row("remember acknowledged", gl["remember"], el["remember"]),
            f"| remember → extraction done p50 / p95 | {gl['remember_to_extracted']['p50_ms']} / "
            f"{gl['remember_to_extracted']['p95_ms']} ms | inline (same call) |",
            _latency_row("recall", gl["recall"], el["recall"]),
        ]
        for c in (8, 32):
            label = f"throughput, {c} concurrent MCP clients (remember+recall mix)"
            rows.append(_throughput_row(label, g[f"throughput_{c}"], e[f"throughput_{c}"]))
        head = f"# Gateway against the embedded server (compose.cpu.yaml)\n\n{r['date']}. Machine: {r['machine']}\n\n"
        parts.append(head + "\n".join(rows) + "\n")
    if "recall_paths" in r:
        parts.append(markdown_recall_paths(r["recall_paths"]))
    return "\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
