"""Start-up: how long an MCP client waits for EvoMem's first tool result, against the floor.

    python -m bench.startup                       # hyperfine, writes bench/results/startup.{md,json}
    python -m bench.startup --runs 30 --label after
    python -m bench.startup --baseline /path/to/main/services --label change   # A/B in the same runs
    python -m bench.startup client floor          # one timed run (what hyperfine repeats)
    python -m bench.startup client evomem DB
    python -m bench.startup work floor            # the server's work to its first answer, no client
    python -m bench.startup work evomem DB

The floor is a minimal server with one no-op tool on the same MCP SDK (``bench/startup_floor.py``).
Each run spawns the server over stdio with the official client (``mcp.Client``), initialises,
calls one tool and exits: ``noop`` on the floor, ``recall`` on EvoMem (a database of 30 notes,
vectors on where the model is installed, the model not yet loaded: the call must not wait
for it). Both commands are measured in the same hyperfine run, so machine load hits both.
Both run from cached bytecode, as an installed wheel does (pip compiles it at install): the
environment's ``PYTHONDONTWRITEBYTECODE`` is dropped and the bytecode goes to a temporary
``PYTHONPYCACHEPREFIX``, written by the warm-up runs; without it every EvoMem module (an
editable checkout has no ``.pyc``) would be compiled from source at each start, the floor's not.
Warm-up runs are left out of every figure.
Needs ``hyperfine`` (Debian: ``apt-get install -y hyperfine``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The client appends "<kind> <seconds from spawn to the first tool result>" to this file.
FIRST_RESULT_LOG = "BENCH_STARTUP_FIRST_RESULT_LOG"
RESULTS = ROOT / "bench" / "results"


def client(kind: str, db: str | None = None) -> None:
    """Spawn the server, call its first tool, check the answer; exit non-zero if it failed."""
    import anyio
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    if kind == "floor":
        params = StdioServerParameters(command=sys.executable, args=["-m", "bench.startup_floor"], env=env, cwd=ROOT)
        tool, args = "noop", {}
    else:
        evomem = str(Path(sys.executable).with_name("evomem-mcp"))
        env["EVOMEM_LOG_LEVEL"] = "WARNING"
        params = StdioServerParameters(command=evomem, args=["--db", str(db)], env=env)
        tool, args = "recall", {"query": "which database does the ledger use", "k": 5}

    async def once() -> None:
        started = time.perf_counter()
        async with Client(params) as c:
            result = await c.call_tool(tool, args)
            first = time.perf_counter() - started
            if result.is_error:
                raise SystemExit(f"{tool} failed: {result.content}")
        log = os.environ.get(FIRST_RESULT_LOG)
        if log:  # spawn -> first tool result, without the client's own start and the server's exit
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{kind} {first:.6f}\n")

    anyio.run(once)


def work(kind: str, db: str | None = None) -> None:
    """The server's own work up to its first answer, in one process, without the client and the
    pipes: imports, settings, the store, the tools, one call (``recall`` on EvoMem, as
    ``evomem-mcp`` wires it, the model held back; ``noop`` on the floor) and ``tools/list``.
    hyperfine's user CPU of this is the least load-sensitive figure of what EvoMem adds."""
    import threading

    import anyio

    if kind == "floor":
        from bench.startup_floor import server

        call: tuple[str, dict] = ("noop", {})
    else:
        from evomem.app.background import start_background
        from evomem.bootstrap import embedded as bootstrap
        from evomem.entrypoints.cli import mcp as cli
        from evomem.entrypoints.mcp.server import build_mcp_server
        from evomem.ops import logs

        settings = cli.settings_from_args(["--db", str(db)])
        logs.configure("WARNING", "text")
        service = bootstrap.build_embedded(settings)
        info = bootstrap.server_info(settings, service)
        server = build_mcp_server(lambda: service, server_info=info, hybrid=service.vectors is not None)  # type: ignore[assignment]
        start_background(service, after=threading.Event(), after_s=600)
        call = ("recall", {"query": "which database does the ledger use", "k": 5})
    import mcp.server.stdio  # noqa: F401  # what serving stdio imports

    async def once() -> None:
        result = await server.call_tool(*call)
        assert result is not None
        await server.list_tools()

    anyio.run(once)
    os._exit(0)  # as evomem-mcp leaves; the floor's teardown is not its start


def seed(db: Path, notes: int = 30) -> None:
    """A small store (vectors embedded), so the timed recall has something to find."""
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    service = build_embedded(Settings(db=str(db)))
    for i in range(notes):
        service.remember(f"Decision {i}: the ledger service {i} stores its entries in SQLite, not Postgres.")
    service.close()


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def measure(runs: int, warmup: int, label: str, out: Path, rounds: int = 5, baseline: str | None = None) -> dict:
    """``rounds`` hyperfine runs of ``runs / rounds`` each, the order of the commands rotating,
    so that a change of machine load between them does not favour one. ``baseline``: the
    ``PYTHONPATH`` of another EvoMem tree (e.g. main's ``services``), measured in the same runs
    as a third command and written as its own row (``<label>: baseline``) against the same floor."""
    if shutil.which("hyperfine") is None:
        raise SystemExit("hyperfine is not installed (Debian: apt-get install -y hyperfine)")
    names = ["floor", "evomem"] + (["baseline"] if baseline else [])
    times: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    first: dict[str, list[float]] = {n: [] for n in names}
    per_round = max(2, runs // rounds)
    with tempfile.TemporaryDirectory(prefix="evomem-startup-") as tmp:
        db = Path(tmp) / "startup.db"
        seed(db)
        export = Path(tmp) / "hyperfine.json"
        first_log = Path(tmp) / "first.log"
        py = sys.executable
        cmds = {"floor": f"{py} -m bench.startup client floor", "evomem": f"{py} -m bench.startup client evomem {db}"}
        if baseline:
            cmds["baseline"] = f"env PYTHONPATH={baseline} {py} -m bench.startup client baseline {db}"
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            if r % 2:
                order.reverse()
            argv = ["hyperfine", "--warmup", str(warmup), "--runs", str(per_round), "--export-json", str(export), "-N"]
            for name in order:
                argv += ["--command-name", name, cmds[name]]
            env = {**os.environ, FIRST_RESULT_LOG: str(first_log), "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache")}
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # steady state: an installed wheel has its bytecode
            first_log.write_text("")
            subprocess.run(argv, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, env=env)
            for row in json.loads(export.read_text())["results"]:
                times[row["command"]] += row["times"]
                cpu[row["command"]].append(row["user"] + row["system"])
            seen: dict[str, int] = {}
            for line in first_log.read_text().splitlines():
                name, seconds = line.split()
                seen[name] = seen.get(name, 0) + 1
                if seen[name] > warmup:  # each command's warm-up runs come first; they are not counted
                    first[name].append(float(seconds))
    reports = {label: _report(label, "evomem", times, cpu, first, rounds)}
    if baseline:
        reports[f"{label}: baseline"] = _report(f"{label}: baseline", "baseline", times, cpu, first, rounds)
        reports[f"{label}: baseline"]["baseline_pythonpath"] = baseline
    return _write(reports, out)


def _report(label: str, name: str, times: dict, cpu: dict, first: dict, rounds: int) -> dict:
    report: dict = {
        "label": label,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": len(times["floor"]),
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg()[0],
        "bytecode": "cached",
    }
    for kind, key in (("floor", "floor"), (name, "evomem")):
        xs = times[kind]
        report[f"{key}_s"] = {"median": _median(xs), "mean": sum(xs) / len(xs), "min": min(xs), "max": max(xs)}
        report[f"{key}_cpu_s"] = sum(cpu[kind]) / len(cpu[kind])
        report[f"{key}_first_s"] = _median(first[kind])
    report["ratio_first"] = report["evomem_first_s"] / report["floor_first_s"]
    report["ratio_median"] = report["evomem_s"]["median"] / report["floor_s"]["median"]
    report["ratio_min"] = report["evomem_s"]["min"] / report["floor_s"]["min"]
    report["ratio_cpu"] = report["evomem_cpu_s"] / report["floor_cpu_s"]
    return report


def _write(reports: dict, out: Path) -> dict:
    """Add ``reports`` to ``out``/startup.json and rewrite startup.md; the first report is returned."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "startup.json"
    previous = json.loads(path.read_text()) if path.is_file() else {}
    previous.update(reports)
    path.write_text(json.dumps(previous, indent=2) + "\n")
    write_markdown(previous, out / "startup.md")
    return next(iter(reports.values()))


def write_markdown(reports: dict, path: Path) -> None:
    lines = [
        "# Start-up: first tool result over stdio",
        "",
        "Spawn + initialize + one tool call with the official MCP client (`python -m bench.startup`, hyperfine in",
        "rounds of alternating order). Floor: a minimal server with one no-op tool on the same MCP SDK, in the same",
        "run. Wall time is what a client waits; CPU (user + system of client and server) is less sensitive to the",
        "load of a shared machine.",
        "",
        "First result: spawn to the first tool result, timed inside the client (without the client's own start",
        "and the server's exit), median. Run: the whole client process as hyperfine times it, median and fastest.",
        "",
        "Bytecode: `cached` (the servers' `.pyc` written by the warm-up runs, as an installed wheel has them) or",
        "`compiled` (the first two rows: this environment's `PYTHONDONTWRITEBYTECODE=1` made every EvoMem module",
        "compile from source at each start, which the floor, a single small file, hardly paid).",
        "",
        "| run | when | runs | load avg | bytecode | first result: floor / evomem s | × floor | run: floor / evomem s "
        "| × floor (median) | × floor (fastest) | CPU: floor / evomem s | × floor (CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in reports.items():
        first = (
            f"{r['floor_first_s']:.2f} / {r['evomem_first_s']:.2f} | {r['ratio_first']:.2f}"
            if "ratio_first" in r
            else "— | —"
        )
        lines.append(
            f"| {label} | {r['when']} | {r['runs']} | {r['load_avg']:.1f} | {r.get('bytecode', 'compiled')} | {first} "
            f"| {r['floor_s']['median']:.2f} / {r['evomem_s']['median']:.2f} | {r['ratio_median']:.2f} "
            f"| {r['ratio_min']:.2f} | {r['floor_cpu_s']:.2f} / {r['evomem_cpu_s']:.2f} | {r['ratio_cpu']:.2f} |"
        )
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "client":
        client(argv[1], argv[2] if len(argv) > 2 else None)
        return 0
    if argv and argv[0] == "work":
        work(argv[1], argv[2] if len(argv) > 2 else None)
        return 0
    p = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=1, help="warm-up runs per round")
    p.add_argument("--rounds", type=int, default=5, help="hyperfine runs, the commands' order alternating")
    p.add_argument("--label", default="after", help="the row's name in startup.json (e.g. before, after)")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--baseline", help="PYTHONPATH of another EvoMem tree, measured in the same runs (a row of its own)")
    args = p.parse_args(argv)
    r = measure(args.runs, args.warmup, args.label, args.out, args.rounds, args.baseline)
    print(
        f"first result: floor {r['floor_first_s']:.3f} s, evomem {r['evomem_first_s']:.3f} s: {r['ratio_first']:.2f}x; "
        f"run: floor {r['floor_s']['median']:.3f} s, evomem {r['evomem_s']['median']:.3f} s: {r['ratio_median']:.2f}x "
        f"(fastest {r['ratio_min']:.2f}x, CPU {r['ratio_cpu']:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
