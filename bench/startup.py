"""Start-up: how long an MCP client waits for EvoMem's first tool result, against the floor.

    python -m bench.startup                       # hyperfine, writes bench/results/startup.{md,json}
    python -m bench.startup --runs 30 --label after
    python -m bench.startup client floor          # one timed run (what hyperfine repeats)
    python -m bench.startup client evomem DB

The floor is a minimal server with one no-op tool on the same MCP SDK (``bench/startup_floor.py``).
Each run spawns the server over stdio with the official client (``mcp.Client``), initialises,
calls one tool and exits: ``noop`` on the floor, ``recall`` on EvoMem (a database of 30 notes,
vectors on where the model is installed, the model not yet loaded: the call must not wait
for it). Both commands are measured in the same hyperfine run, so machine load hits both.
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
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
        async with Client(params) as c:
            result = await c.call_tool(tool, args)
            if result.is_error:
                raise SystemExit(f"{tool} failed: {result.content}")

    anyio.run(once)


def seed(db: Path, notes: int = 30) -> None:
    """A small store (vectors embedded), so the timed recall has something to find."""
    from evomem.bootstrap import build_embedded
    from evomem.settings import Settings

    service = build_embedded(Settings(db=str(db)))
    for i in range(notes):
        service.remember(f"Decision {i}: the ledger service {i} stores its entries in SQLite, not Postgres.")
    service.store.close()


def measure(runs: int, warmup: int, label: str, out: Path) -> dict:
    if shutil.which("hyperfine") is None:
        raise SystemExit("hyperfine is not installed (Debian: apt-get install -y hyperfine)")
    with tempfile.TemporaryDirectory(prefix="evomem-startup-") as tmp:
        db = Path(tmp) / "startup.db"
        seed(db)
        export = Path(tmp) / "hyperfine.json"
        py = sys.executable
        cmds = {"floor": f"{py} -m bench.startup client floor", "evomem": f"{py} -m bench.startup client evomem {db}"}
        subprocess.run(
            ["hyperfine", "--warmup", str(warmup), "--runs", str(runs), "--export-json", str(export), "-N",
             "--command-name", "floor", cmds["floor"], "--command-name", "evomem", cmds["evomem"]],
            check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        )  # fmt: skip
        data = json.loads(export.read_text())
    rows = {r["command"]: r for r in data["results"]}
    floor, evo = rows["floor"], rows["evomem"]
    report = {
        "label": label,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": runs,
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg()[0],
        "floor_s": {"mean": floor["mean"], "median": floor["median"], "stddev": floor["stddev"]},
        "evomem_s": {"mean": evo["mean"], "median": evo["median"], "stddev": evo["stddev"]},
        "ratio_median": evo["median"] / floor["median"],
        "ratio_mean": evo["mean"] / floor["mean"],
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / "startup.json"
    previous = json.loads(path.read_text()) if path.is_file() else {}
    previous[label] = report
    path.write_text(json.dumps(previous, indent=2) + "\n")
    write_markdown(previous, out / "startup.md")
    return report


def write_markdown(reports: dict, path: Path) -> None:
    lines = [
        "# Start-up: first tool result over stdio",
        "",
        "Spawn + initialize + one tool call with the official MCP client (`python -m bench.startup`, hyperfine).",
        "Floor: a minimal server with one no-op tool on the same MCP SDK, measured in the same run.",
        "",
        "| run | when | runs | load avg | floor median s | evomem median s | ratio (median) | ratio (mean) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, r in reports.items():
        lines.append(
            f"| {label} | {r['when']} | {r['runs']} | {r['load_avg']:.1f} | {r['floor_s']['median']:.3f} "
            f"| {r['evomem_s']['median']:.3f} | {r['ratio_median']:.2f} | {r['ratio_mean']:.2f} |"
        )
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "client":
        client(argv[1], argv[2] if len(argv) > 2 else None)
        return 0
    p = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--label", default="after", help="the row's name in startup.json (e.g. before, after)")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    r = measure(args.runs, args.warmup, args.label, args.out)
    print(f"floor {r['floor_s']['median']:.3f} s, evomem {r['evomem_s']['median']:.3f} s: {r['ratio_median']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
