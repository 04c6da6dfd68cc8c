"""Speed against the floor: remember and recall latency in-core, over MCP stdio and over MCP HTTP,
next to the raw FTS5 bm25 query on the same data, measured in the same run; and the same store
loaded into PostgreSQL 17 + pgvector (``--postgres``, ``bench/postgres.py``), in-core, next to its
own floors (a raw tsvector query, a raw pgvector HNSW query, a bare indexed insert).

    python -m bench.speed --sizes 10000,100000 --out bench/results
    python -m bench.speed --sizes 100000 --paths in_core,in_core_hybrid --postgres on \
        --only-with-postgres --name speed_postgres     # make bench-postgres-speed: both engines in-core

For each store size: p50/p95 of remember and recall per path, the FTS5 floor, the ratio of
each recall path to the floor, peak RSS of the server process, and database bytes per note.
In-core, recall is measured twice: the ten ``QUERIES`` repeated (``recall``: with vectors, their
embeddings come from the cache after the first round) and as many queries asked once
(``recall_fresh``: embedded at each call, as a remember's note always is), with remember's p50
and p95 over each (``remember_vs_recall_*``, ``remember_vs_recall_fresh_*``: issue 32's ratios,
like for like in the second). Nothing here is asserted; the machine is shared and noisy, so read
medians and ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from bench import datagen
from bench.stats import summary
from evomem.adapters.sqlite.driver import sqlite as store_sqlite
from evomem.adapters.sqlite.search import BM25_SQL, fts_query
from evomem.domain.text import query_terms

QUERIES = [
    "what database does the ledger use",
    "billing queue kafka",
    "which cache for sessions",
    "search engine for the catalog",
    "why did we leave Postgres",
    "monitoring stack prometheus datadog",
    "hosting for payments kubernetes",
    'ledger "postgres" NEAR( OR *',
    "ci for the webhooks service",
    "language of the fraud service rust",
]

# The SQLite paths (``--paths``); PostgreSQL runs the in-core ones among them (pg_in_core, pg_in_core_hybrid).
PATHS = ("in_core", "in_core_hybrid", "mcp_stdio", "mcp_http")


def new_notes(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    comps, aspects = datagen.COMPONENTS, list(datagen.ASPECTS)
    out = []
    for i in range(count):
        comp, aspect = rng.choice(comps), rng.choice(aspects)
        opts = datagen.ASPECTS[aspect]
        out.append(f"We moved the {comp} {aspect} from {rng.choice(opts)} to {rng.choice(opts)}, bench note {i}.")
    return out


FRESH_FORMS = (
    "what {aspect} does the {comp} use",
    "which {aspect} for the {comp}",
    "why did the {comp} leave {option}",
    "{comp} {aspect} {option}",
    "is the {comp} still on {option}",
)


def fresh_queries(count: int, seed: int) -> list[str]:
    """``count`` different queries, none of them in ``QUERIES``: a recall of each is embedded like
    a remember's note (the repeated ``QUERIES`` come from the embedding cache after their first
    round), so remember and this recall are compared like for like. 5,220 exist."""
    if count > 5000:
        raise ValueError(f"at most 5,000 fresh queries, not {count}")
    rng = random.Random(seed)
    seen, out = set(QUERIES), []
    while len(out) < count:
        aspect = rng.choice(list(datagen.ASPECTS))
        query = rng.choice(FRESH_FORMS).format(
            comp=rng.choice(datagen.COMPONENTS), aspect=aspect, option=rng.choice(datagen.ASPECTS[aspect])
        )
        if query not in seen:
            seen.add(query)
            out.append(query)
    return out


# ---------------------------------------------------------------------------- paths


def fts_floor(db: Path, queries: list[str], rounds: int) -> list[float]:
    """The raw FTS5 query EvoMem builds on, with the same weights and the same k fan-out."""
    conn = sqlite3.connect(db)
    times = []
    sql = f"SELECT rowid, {BM25_SQL} AS r FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY r LIMIT 50"
    for _ in range(rounds):
        for q in queries:
            match = fts_query(query_terms(q))
            t = time.perf_counter()
            conn.execute(sql, (match,)).fetchall()
            times.append((time.perf_counter() - t) * 1000)
    conn.close()
    return times


def fts_insert_floor(db: Path, notes: list[str]) -> list[float]:
    """The write floor: one autocommitted insert into a bare FTS5 table in the same kind of file."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS floor_fts USING fts5(t, tokenize='porter unicode61')")
    times = []
    for text in notes:
        t = time.perf_counter()
        conn.execute("INSERT INTO floor_fts(t) VALUES (?)", (text,))
        times.append((time.perf_counter() - t) * 1000)
    conn.close()
    return times


def vector_floor(db: Path, queries: list[str], rounds: int) -> dict[str, list[float]]:
    """What hybrid recall adds, alone: embedding the query, and the vector search (binary
    scan of the namespace + int8 rescoring) for the same fan-out recall uses at k=5."""
    from evomem.adapters.models.embedding import OnnxEmbedder
    from evomem.adapters.vectors.index import VectorIndex

    embedder = OnnxEmbedder()
    embedder.load()
    index = VectorIndex(db, model=embedder.name)
    embed, knn = [], []
    try:
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                vec = embedder.encode([q])[0]
                embed.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                index.search(vec, "default", k=20)
                knn.append((time.perf_counter() - t) * 1000)
    finally:
        index.close()
    return {"embed_query": embed, "vector_search": knn}


def words_built(db: Path) -> None:
    """The word index the default settings give ``db`` built beside it, before a path opens it: a
    fresh copy of a store has no Tantivy index, and ``auto`` would build it in the background
    while the timed calls run on FTS5. The timings are then those of the index a server answers
    with once built (as before the build moved to the background, when the open built it)."""
    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.settings import Settings

    store = Settings().store
    opened = SQLiteStore(db, word_index=store.word_index, tantivy_from=store.tantivy_from)
    try:
        opened.wait_for_word_index()
    finally:
        opened.close()


def graphs_built(db: Path) -> None:
    """The HNSW graph the default settings give ``db``'s namespace built and saved beside it
    (``<db>.hnsw``), before a path opens it, as ``words_built`` does for the word index: otherwise
    ``EVOMEM_VECTOR_SEARCH=auto`` builds it in the background while the timed calls run (on the
    scan). The timings are those of a server that has its graph."""
    if not vectors_available():
        return
    # Closed before the index opens the file: ``with sqlite3.connect`` only commits, and a stdlib
    # connection left open beside sqlean's on the same file releases their POSIX locks when it
    # closes later (two SQLite libraries in one process), which showed as "disk I/O error" and
    # "database disk image is malformed" (speed22).
    with contextlib.closing(sqlite3.connect(db)) as conn:  # a store without vectors gets no vector tables
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vec_items'").fetchone() is None:
            return
    import numpy as np

    from evomem.adapters.vectors.index import VectorIndex
    from evomem.settings import Settings

    vs = Settings().vectors
    index = VectorIndex(db, vector_search=vs.search, hnsw_from=vs.hnsw_from)
    try:
        for namespace in index.stats()["namespaces"]:
            index.search(np.ones(index.dim, np.float32), namespace, 1)  # starts the build where auto wants one
            index.wait_for_graph(namespace)
    finally:
        index.close()  # saves the graphs


def in_core(
    db: Path, queries: list[str], notes: list[str], rounds: int, vectors: str = "off"
) -> dict[str, list[float]]:
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    service = build_embedded(Settings(db=str(db), vectors=vectors))
    if service.vectors is not None:
        service.recall(queries[0], k=5)  # loads the model: start-up, not a query's cost
    recall, fresh, remember = [], [], []
    for _ in range(rounds):
        for q in queries:
            t = time.perf_counter()
            service.recall(q, k=5)
            recall.append((time.perf_counter() - t) * 1000)
    # Each asked once: with vectors its embedding is not in the cache, as a remember's note never is.
    for q in fresh_queries(rounds * len(queries), seed=1):
        t = time.perf_counter()
        service.recall(q, k=5)
        fresh.append((time.perf_counter() - t) * 1000)
    for text in notes:
        t = time.perf_counter()
        service.remember(text)
        remember.append((time.perf_counter() - t) * 1000)
    service.close()
    return {"recall": recall, "recall_fresh": fresh, "remember": remember}


async def _drive(client: Any, queries: list[str], notes: list[str], rounds: int) -> dict[str, list[float]]:
    recall, remember = [], []

    async def timed(call: Callable[[], Awaitable[Any]], into: list[float]) -> None:
        t = time.perf_counter()
        r = await call()
        into.append((time.perf_counter() - t) * 1000)
        if r.is_error:
            raise RuntimeError(str(r.content))

    for q in queries[:2]:  # warm-up
        await client.call_tool("recall", {"query": q})
    for _ in range(rounds):
        for q in queries:
            await timed(lambda q=q: client.call_tool("recall", {"query": q, "k": 5}), recall)
    for text in notes:
        await timed(lambda text=text: client.call_tool("remember", {"raw_text": text}), remember)
    return {"recall": recall, "remember": remember}


def _peak_rss_kib(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    m = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(m.group(1)) if m else None


def _server_cmd(db: Path) -> list[str]:
    """The server as users run it: hybrid recall where the model is installed (``--vectors auto``)."""
    exe = Path(sys.executable).with_name("evomem-mcp")
    return [str(exe), "--db", str(db), "--log-level", "WARNING"]


def over_stdio(
    db: Path, queries: list[str], notes: list[str], rounds: int
) -> tuple[dict[str, list[float]], int | None]:
    from mcp import Client, StdioServerParameters

    result: dict[str, Any] = {}

    async def run() -> None:
        cmd = _server_cmd(db)
        params = StdioServerParameters(command=cmd[0], args=cmd[1:])
        async with Client(params) as client:
            result["times"] = await _drive(client, queries, notes, rounds)
            result["rss"] = _find_server_rss(str(db))

    anyio.run(run)
    return result["times"], result.get("rss")


def _find_server_rss(db: str) -> int | None:
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "evomem-mcp" in cmdline and db in cmdline:
            return _peak_rss_kib(int(proc.name))
    return None


def over_http(db: Path, queries: list[str], notes: list[str], rounds: int) -> tuple[dict[str, list[float]], int | None]:
    from mcp import Client

    proc = subprocess.Popen([*_server_cmd(db), "--transport", "http", "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        url = None
        deadline = time.time() + 60
        assert proc.stderr is not None
        while time.time() < deadline and url is None:
            line = proc.stderr.readline()
            m = re.search(r"(http://\S+/mcp)", line)
            if m:
                url = m.group(1)
        if url is None:
            raise RuntimeError("HTTP server did not report its URL")
        _wait_health(url.replace("/mcp", "/healthz"))
        result: dict[str, Any] = {}

        async def run() -> None:
            async with Client(url) as client:
                result["times"] = await _drive(client, queries, notes, rounds)

        anyio.run(run)
        return result["times"], _peak_rss_kib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wait_health(url: str) -> None:
    import urllib.request

    for _ in range(200):
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} never answered")


# ---------------------------------------------------------------------------- run


def vectors_available() -> bool:
    from evomem.bootstrap.vectors import vectors_problem

    return vectors_problem() is None


def run_postgres(
    pg: Any, n: int, base: Path, rounds: int, notes_per_path: int, hybrid: bool, which: tuple[str, ...] = PATHS
) -> dict[str, Any]:
    """The SQLite store of this size, loaded into PostgreSQL, measured in-core next to its floors
    (``pg_in_core`` and ``pg_in_core_hybrid``, where ``which`` has SQLite's in-core paths)."""
    from bench import postgres

    url, _ = pg.database(f"speed_{n}", fresh=True)
    print(f"[{n:,}] postgres: loading ...", file=sys.stderr, flush=True)
    out: dict[str, Any] = {"load": postgres.load(base, url)}
    out["tsvector_floor"] = {
        "recall": summary(postgres.tsvector_floor(url, QUERIES, rounds)),
        "remember": summary(postgres.insert_floor(url, new_notes(notes_per_path, n + 3))),
    }
    if hybrid:
        out["pgvector_floor"] = {k: summary(v) for k, v in postgres.pgvector_floor(url, QUERIES, rounds).items()}
    paths: dict[str, Any] = {}
    modes = [("pg_in_core", "off")] if "in_core" in which else []
    modes += [("pg_in_core_hybrid", "on")] if hybrid and "in_core_hybrid" in which else []
    for i, (name, vectors) in enumerate(modes):
        times = postgres.in_core(url, QUERIES, new_notes(notes_per_path, n + 10 + i), rounds, vectors=vectors)
        entry = {"recall": summary(times["recall"]), "remember": summary(times["remember"])}
        for op in ("recall", "remember"):
            floor = out["tsvector_floor"][op]["p50_ms"]
            entry[f"{op}_vs_floor_p50"] = round(entry[op]["p50_ms"] / max(1e-9, floor), 2)
        paths[name] = entry
    out["paths"] = paths
    return out


def run_size(
    n: int, workdir: Path, rounds: int, notes_per_path: int, pg: Any = None, which: tuple[str, ...] = PATHS
) -> dict[str, Any]:
    base = workdir / f"speed-{n}.db"
    ready = workdir / f"speed-{n}.db.vectors"  # the vectors were written (a build can be interrupted)
    if not base.exists():
        datagen.build(base, n, seed=1)
        ready.unlink(missing_ok=True)
    if vectors_available() and not ready.exists():
        datagen.add_vectors(base, seed=1)
        ready.touch()
    size = base.stat().st_size
    out: dict[str, Any] = {"notes": n, "db_bytes": size, "db_bytes_per_note": round(size / n, 1)}
    floor = fts_floor(base, QUERIES, rounds)
    floor_db = workdir / f"speed-{n}-floor.db"
    shutil.copyfile(base, floor_db)
    out["fts5_floor"] = {
        "recall": summary(floor),
        "remember": summary(fts_insert_floor(floor_db, new_notes(notes_per_path, n + 2))),
    }
    for suffix in ("", "-wal", "-shm"):
        Path(str(floor_db) + suffix).unlink(missing_ok=True)
    hybrid = vectors_available()
    if hybrid:
        vf = vector_floor(base, QUERIES, rounds)
        out["vector_floor"] = {k: summary(v) for k, v in vf.items()}
    paths: dict[str, Any] = {}
    runs: list[tuple[str, Callable[..., Any]]] = [("in_core", in_core)]
    if hybrid:
        runs.append(("in_core_hybrid", lambda *a: in_core(*a, vectors="on")))
    runs += [("mcp_stdio", over_stdio), ("mcp_http", over_http)]
    for name, fn in [(name, fn) for name, fn in runs if name in which]:
        db = workdir / f"speed-{n}-{name}.db"
        shutil.copyfile(base, db)
        words_built(db)
        graphs_built(db)
        print(f"[{n:,}] {name} ...", file=sys.stderr, flush=True)
        rss = None
        if name.startswith("in_core"):
            times = fn(db, QUERIES, new_notes(notes_per_path, n), rounds)
        else:
            times, rss = fn(db, QUERIES, new_notes(notes_per_path, n + 1), rounds)
        entry = {"recall": summary(times["recall"]), "remember": summary(times["remember"])}
        entry["remember_vs_floor_p50"] = round(
            entry["remember"]["p50_ms"] / max(1e-9, out["fts5_floor"]["remember"]["p50_ms"]), 2
        )
        entry["recall_vs_floor_p50"] = round(
            entry["recall"]["p50_ms"] / max(1e-9, out["fts5_floor"]["recall"]["p50_ms"]), 2
        )
        if "recall_fresh" in times:  # in-core: remember against recall, a repeated query and a fresh one
            entry["recall_fresh"] = summary(times["recall_fresh"])
            entry.update(remember_vs_recall(entry))
        if rss is not None:
            entry["server_peak_rss_mib"] = round(rss / 1024, 1)
        paths[name] = entry
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        for folder in (".words", ".hnsw"):
            shutil.rmtree(str(db) + folder, ignore_errors=True)
    if sys.platform == "linux":
        import resource

        out["bench_process_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["paths"] = paths
    if pg is not None:
        out["postgres"] = run_postgres(pg, n, base, rounds, notes_per_path, hybrid, which)
    return out


def remember_vs_recall(entry: dict[str, Any]) -> dict[str, float]:
    """Issue 32's ratios: remember's p50 and p95 over recall's, with the repeated queries (their
    embedding cached) and with fresh ones (embedded at each call, like a remember's note)."""
    out = {}
    for name, recall in (("recall", entry["recall"]), ("recall_fresh", entry["recall_fresh"])):
        for q in ("p50", "p95"):
            out[f"remember_vs_{name}_{q}"] = round(entry["remember"][f"{q}_ms"] / max(1e-9, recall[f"{q}_ms"]), 2)
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Machine: {report['machine']}",
        "",
        "| notes | path | recall p50 | recall p95 | × floor | remember p50 | remember p95 | × floor | peak RSS |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in report["sizes"]:
        floor = size["fts5_floor"]["recall"]
        wfloor = size["fts5_floor"]["remember"]
        lines.append(
            f"| {size['notes']:,} | raw FTS5 (bm25 query / insert) | {floor['p50_ms']:.2f} ms | "
            f"{floor['p95_ms']:.2f} ms | 1.00 | {wfloor['p50_ms']:.2f} ms | {wfloor['p95_ms']:.2f} ms | 1.00 | |"
        )
        vf = size.get("vector_floor")
        if vf:
            lines.append(
                f"| {size['notes']:,} | vectors alone (embed query + search) | "
                f"{vf['embed_query']['p50_ms']:.2f} + {vf['vector_search']['p50_ms']:.2f} ms | "
                f"{vf['embed_query']['p95_ms']:.2f} + {vf['vector_search']['p95_ms']:.2f} ms | | | | | |"
            )
        for name, p in size["paths"].items():
            rss = f"{p['server_peak_rss_mib']} MiB" if "server_peak_rss_mib" in p else ""
            lines.append(
                f"| {size['notes']:,} | {name} | {p['recall']['p50_ms']:.2f} ms | {p['recall']['p95_ms']:.2f} ms | "
                f"{p['recall_vs_floor_p50']:.2f} | {p['remember']['p50_ms']:.2f} ms | "
                f"{p['remember']['p95_ms']:.2f} ms | {p['remember_vs_floor_p50']:.2f} | {rss} |"
            )
        pgs = size.get("postgres")
        if pgs:
            tf, wf = pgs["tsvector_floor"]["recall"], pgs["tsvector_floor"]["remember"]
            lines.append(
                f"| {size['notes']:,} | PostgreSQL: raw tsvector (query / insert) | {tf['p50_ms']:.2f} ms | "
                f"{tf['p95_ms']:.2f} ms | 1.00 | {wf['p50_ms']:.2f} ms | {wf['p95_ms']:.2f} ms | 1.00 | |"
            )
            vf = pgs.get("pgvector_floor")
            if vf:
                lines.append(
                    f"| {size['notes']:,} | PostgreSQL: raw pgvector HNSW (k=20) | "
                    f"{vf['vector_search']['p50_ms']:.2f} ms | {vf['vector_search']['p95_ms']:.2f} ms | | | | | |"
                )
            for name, p in pgs["paths"].items():
                lines.append(
                    f"| {size['notes']:,} | {name} | {p['recall']['p50_ms']:.2f} ms | {p['recall']['p95_ms']:.2f} ms | "
                    f"{p['recall_vs_floor_p50']:.2f} | {p['remember']['p50_ms']:.2f} ms | "
                    f"{p['remember']['p95_ms']:.2f} ms | {p['remember_vs_floor_p50']:.2f} | |"
                )
    if any("postgres" in size for size in report["sizes"]):
        lines += ["", *_postgres_notes(report)]
    lines.append("")
    lines.append(
        "in_core is BM25 only (`--vectors off`); in_core_hybrid, mcp_stdio and mcp_http run hybrid recall "
        "(BM25 + vectors, the default where the model is installed). × floor is against raw FTS5 either way."
    )
    fresh = [(size["notes"], name, p) for size in report["sizes"] for name, p in size["paths"].items()]
    fresh = [row for row in fresh if "recall_fresh" in row[2]]
    if fresh:
        lines += [
            "",
            "In-core remember against recall (issue 32): a repeated query's embedding comes from the cache, a fresh "
            "query is embedded at each call like a remember's note.",
            "",
            "| notes | path | recall p50 / p95 | fresh recall p50 / p95 | remember ÷ recall p50 / p95 | "
            "remember ÷ fresh recall p50 / p95 |",
            "|---:|---|---:|---:|---:|---:|",
        ]
        for n, name, p in fresh:
            r, f = p["recall"], p["recall_fresh"]
            lines.append(
                f"| {n:,} | {name} | {r['p50_ms']:.2f} / {r['p95_ms']:.2f} ms | "
                f"{f['p50_ms']:.2f} / {f['p95_ms']:.2f} ms | "
                f"{p['remember_vs_recall_p50']:.2f} / {p['remember_vs_recall_p95']:.2f} | "
                f"{p['remember_vs_recall_fresh_p50']:.2f} / {p['remember_vs_recall_fresh_p95']:.2f} |"
            )
    lines.append("")
    lines.append("| notes | database bytes per note |")
    lines.append("|---:|---:|")
    for size in report["sizes"]:
        lines.append(f"| {size['notes']:,} | {size['db_bytes_per_note']} |")
    return "\n".join(lines) + "\n"


LOAD_STEPS = (("records_s", "records"), ("vectors_s", "vectors"), ("hnsw_index_s", "HNSW index"))


def _postgres_notes(report: dict[str, Any]) -> list[str]:
    loads = []
    for size in report["sizes"]:
        took = size.get("postgres", {}).get("load", {})
        parts = [f"{label} {took[key]} s" for key, label in LOAD_STEPS if key in took]
        if parts:
            loads.append(f"{size['notes']:,} notes: {', '.join(parts)}")
    return [
        "pg_* rows: the same store loaded into PostgreSQL 17 + pgvector 0.8 in a container (PostgreSQL's defaults: "
        "fsync and synchronous_commit on; SQLite runs in WAL with synchronous=NORMAL: each engine as it ships), "
        "the embedded wiring over it (`--database-url`); × floor is against PostgreSQL's own floors: the raw "
        "tsvector query (`ts_rank` over the GIN index, the same terms, weights and fan-out of 50) and one "
        "autocommitted insert into a bare table with a generated tsvector and a GIN index. The raw pgvector row "
        "is the HNSW query alone (k=20, recall's fan-out at k=5, the query embedded beforehand), next to SQLite's "
        "vector search.",
        "",
        "Loading PostgreSQL (records through `app.transfer.migrate`, `evomem-admin migrate`'s path; vectors "
        "by COPY; the HNSW index built after them): " + ("; ".join(loads) or "not measured") + ".",
    ]


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [s["notes"] for s in report["sizes"]]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, op in zip(axes, ("recall", "remember"), strict=True):
        ax.plot(sizes, [s["fts5_floor"][op]["p50_ms"] for s in report["sizes"]], "k--o", label="raw FTS5 floor")
        for name in ("in_core", "in_core_hybrid", "mcp_stdio", "mcp_http"):
            if all(name in s["paths"] for s in report["sizes"]):
                ax.plot(sizes, [s["paths"][name][op]["p50_ms"] for s in report["sizes"]], "-o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("notes in store")
        ax.set_ylabel(f"{op} p50 (ms)")
        ax.set_title(f"{op} latency vs store size")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    p.add_argument("--out", type=Path, default=Path("bench/results"))
    p.add_argument("--rounds", type=int, default=20, help="passes over the query set per path")
    p.add_argument("--remembers", type=int, default=200, help="remember calls per path")
    p.add_argument("--workdir", type=Path, default=None, help="where stores are built (default: OUT/tmp)")
    p.add_argument(
        "--postgres", choices=("auto", "on", "off"), default="auto", help="also PostgreSQL (auto: when Docker runs)"
    )
    p.add_argument("--database-url", default=None, help="a PostgreSQL server of your own instead of a container")
    p.add_argument(
        "--only-with-postgres",
        action="store_true",
        help="when PostgreSQL cannot be benchmarked here, say why and exit 0 without running anything",
    )
    p.add_argument("--paths", default=",".join(PATHS), help=f"SQLite paths to run (of {', '.join(PATHS)})")
    p.add_argument("--name", default="speed", help="results file names: OUT/NAME.json, .md, .png")
    args = p.parse_args(argv)
    which = tuple(x for x in args.paths.split(",") if x)
    if unknown := set(which) - set(PATHS):
        p.error(f"unknown paths {', '.join(sorted(unknown))} (known: {', '.join(PATHS)})")
    from contextlib import nullcontext

    from bench import postgres

    problem = None if args.database_url else postgres.available()
    if args.only_with_postgres and (problem or args.postgres == "off"):
        print(f"{args.name}: skipped, PostgreSQL cannot be benchmarked here: {problem or '--postgres off'}")
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    workdir = args.workdir or args.out / "tmp"
    workdir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}, SQLite {store_sqlite.sqlite_version} ({store_sqlite.__name__}), "
        f"{platform.platform()}",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "rounds": args.rounds,
        "remembers": args.remembers,
    }
    if args.postgres == "on" and problem:
        raise SystemExit(f"--postgres on: {problem}")
    if args.postgres == "auto" and problem:
        print(f"PostgreSQL rows left out: {problem}", file=sys.stderr)
    wanted = args.postgres != "off" and problem is None
    with postgres.BenchPostgres(args.database_url) if wanted else nullcontext() as pg:
        report["sizes"] = [run_size(n, workdir, args.rounds, args.remembers, pg, which) for n in sizes]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(report, indent=2))
    (args.out / f"{args.name}.md").write_text(markdown(report))
    if len(sizes) > 1:
        plot(report, args.out / f"{args.name}.png")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
