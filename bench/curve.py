"""The cost curve: recall, remember, database size, peak RSS and start-up from 10k to 10M notes,
next to the floors measured on the same store in the same run (issue 32).

    python -m bench.curve --sizes 10000,100000 --out bench/results/full          # make bench
    python -m bench.curve --sizes 10000,100000,1000000,10000000 --out bench/results/full   # make bench-full

Per size, the store of ``bench.datagen`` (built in batches, a progress bar, bounded memory; reused
when it is already in the work folder, as ``bench.speed`` and ``bench.floors`` reuse it), then:

- the served store, fresh processes per mode, interleaved (``--passes``, 2: each mode's rounds and
  remembers split over that many processes, one per mode in turn, so the load of a shared machine
  falls on every mode alike; their times pooled) (``words``: ``--vectors off``; ``hybrid``: vectors on,
  where the store has vectors, words on FTS5; ``default``: what a user gets, vectors on with the word
  index and the vector search at ``auto`` (Tantivy from 10,000 notes, the HNSW graph from 20,000
  vectors), where the store has vectors; ``tantivy``: words only with ``EVOMEM_WORD_INDEX=tantivy``,
  where the package is installed, up to ``--tantivy-served-up-to``). The HNSW graph is built once per
  size on a copy (timed, with the vector search alone on it) and put beside every vector mode's copy,
  the default's Tantivy index beside its copy (timed) before its process starts, as ``bench.speed``
  does: build times, not start-up. Then start-up (open the store and answer a first
  recall; the hybrid one includes loading the model and the vectors' bits), then recall (k=5) and
  remember p50/p95 in-core, and the process's peak RSS (``getrusage``). Remembers write into a copy of the store up to
  ``--copy-up-to`` notes, into the store itself above it (a few dozen notes added to millions);
- the floors, on the same file: the raw FTS5 bm25 query (k=50, recall's fan-out) and a bare FTS5
  insert (``bench.speed``), Tantivy over the same text (k=50, ``--tantivy-up-to``), the vector search
  alone (``VectorIndex.search``, k=20, the query embedded beforehand) and usearch HNSW (k=20, with its
  recall@10 against the exact cosine top 10; ``--usearch-up-to``: its build took 16 minutes at 1M);
- the database file size (with its WAL), and how long building it took when this run built it.

Vectors are written up to ``--vectors-up-to`` notes (``datagen.add_vectors``: real embeddings of 512
notes plus noise; the speed of a search does not depend on the values). Writes NAME.json, NAME.md and
one log-log plot NAME.png (ms against notes, floors dashed). Nothing is asserted; one run on a shared
machine, run with ``nice``: read medians and slopes, not single numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import datagen
from bench.speed import QUERIES, fts_floor, fts_insert_floor, new_notes, vectors_available
from bench.stats import summary

#: mode -> (--vectors, EVOMEM_WORD_INDEX): words only on the FTS5 table, hybrid (on FTS5), words only on
#: Tantivy, and the product's defaults (vectors on, word index auto, vector search auto)
MODES = {"words": ("off", "fts5"), "hybrid": ("on", "fts5"), "tantivy": ("off", "tantivy"), "default": ("on", "auto")}
#: the modes whose indexes (Tantivy's, the HNSW graph) are built beside the copy before its process opens it
PREBUILT = ("default",)


def _files(db: Path) -> list[Path]:
    return [Path(str(db) + s) for s in ("", "-wal", "-shm")]


def _drop(db: Path) -> None:
    for p in _files(db):
        p.unlink(missing_ok=True)
    shutil.rmtree(Path(str(db) + ".words"), ignore_errors=True)  # a Tantivy word index beside it
    shutil.rmtree(Path(str(db) + ".hnsw"), ignore_errors=True)  # the HNSW graphs beside it


def _bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in _files(db)[:2] if p.exists())


# ---------------------------------------------------------------------------- the served store (child)


def prebuild(db: Path, rounds: int, what: str) -> dict[str, Any]:
    """In a fresh process: what the default settings build beside ``db`` before a server answers with
    it, timed: ``words`` (``bench.speed``'s ``words_built``: the Tantivy index from
    ``EVOMEM_TANTIVY_FROM`` notes) or ``graph`` (``graphs_built``: the HNSW graph from
    ``EVOMEM_HNSW_FROM`` vectors, then the vector search alone as the default settings search, k=20,
    the query embedded beforehand: the graph's floor, next to the scan's of ``vector_floors``)."""
    from bench.speed import graphs_built, words_built

    out: dict[str, Any] = {}
    t = time.perf_counter()
    if what == "words":
        words_built(db)
        out["word_index_build_s"] = round(time.perf_counter() - t, 1)
        return out
    graphs_built(db)
    out["graph_build_s"] = round(time.perf_counter() - t, 1)
    if vectors_available():
        from evomem.adapters.models.embedding import OnnxEmbedder
        from evomem.adapters.vectors.index import VectorIndex
        from evomem.settings import Settings

        embedder = OnnxEmbedder(threads=1)
        embedder.load()
        queries = embedder.encode(QUERIES)
        vs = Settings().vectors
        index = VectorIndex(db, model=embedder.name, vector_search=vs.search, hnsw_from=vs.hnsw_from)
        try:
            index.search(queries[0], "default", k=20)  # loads the saved graph: start-up, not a query's cost
            out["graph"] = index.wait_for_graph("default")
            times = []
            for _ in range(rounds):
                for q in queries:
                    t = time.perf_counter()
                    index.search(q, "default", k=20)
                    times.append((time.perf_counter() - t) * 1000)
        finally:
            index.close()
        out["vector_search_k20"] = summary(times)
    return out


def serve(db: Path, vectors: str, rounds: int, remembers: int, seed: int, word_index: str = "fts5") -> dict[str, Any]:
    """In a fresh process: open the store as the embedded server does, answer a first recall, then
    time recall and remember; peak RSS of this process at the end."""
    started = time.perf_counter()
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    imported = time.perf_counter()
    service = build_embedded(Settings(db=str(db), vectors=vectors, word_index=word_index))
    opened = time.perf_counter()
    if service.vectors is not None:
        service.vectors.load_model()  # a hybrid recall needs the model: its loading is start-up
    first = service.recall(QUERIES[0], k=5)
    answered = time.perf_counter()
    # EVOMEM_VECTOR_SEARCH=auto: the first recall started the namespace's HNSW graph (a load, or a build
    # on a first run); the timed calls are those of the server once it has it, as with Tantivy.
    index = getattr(service.vectors, "index", None)
    if index is not None and hasattr(index, "wait_for_graph"):
        index.wait_for_graph("default")
    out: dict[str, Any] = {
        "graph_wait_ms": round((time.perf_counter() - answered) * 1000, 1),
        "import_ms": round((imported - started) * 1000, 1),
        "open_ms": round((opened - imported) * 1000, 1),
        "startup_ms": round((answered - imported) * 1000, 1),  # open + model + first recall
        "first_recall_notes": list(first.notes) if hasattr(first, "notes") else [],
        "vectors": service.vectors is not None,
    }
    recall, remember = [], []
    for _ in range(rounds):
        for q in QUERIES:
            t = time.perf_counter()
            service.recall(q, k=5)
            recall.append((time.perf_counter() - t) * 1000)
    for text in new_notes(remembers, seed):
        t = time.perf_counter()
        service.remember(text)
        remember.append((time.perf_counter() - t) * 1000)
    service.close()
    out["recall_ms"], out["remember_ms"] = recall, remember  # raw: the passes of a mode are pooled
    out["peak_rss_mib"] = round(peak_rss_kib() / 1024, 1)
    return out


def peak_rss_kib() -> int:
    """This process's peak resident set (``VmHWM``; ``getrusage``'s ``ru_maxrss`` would carry over the
    parent's peak across fork and exec, so a child started by a big parent would report the parent's)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def prebuilt(db: Path, what: str, rounds: int) -> dict[str, Any]:
    """``prebuild`` in a fresh process (a graph's build is the size of the store in memory)."""
    cmd = [sys.executable, "-m", "bench.curve", "prebuild", str(db), "--what", what, "--rounds", str(rounds)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"building the {what} beside {db} failed:\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = round(time.perf_counter() - t, 1)
    return out


def served(db: Path, mode: str, rounds: int, remembers: int, seed: int, first: bool = True) -> dict[str, Any]:
    """One fresh process serving ``db`` in ``mode``, with the raw times (``recall_ms``, ``remember_ms``);
    ``first``: the mode's first pass over this copy (the default's word index is built before it)."""
    vectors, words = MODES[mode]
    built: dict[str, Any] | None = None
    if mode in PREBUILT and first:  # the default's word index built before the timed process, as bench.speed does
        built = prebuilt(db, "words", rounds)
    cmd = [sys.executable, "-m", "bench.curve", "serve", str(db), "--vectors", vectors, "--word-index", words]
    cmd += ["--rounds", str(rounds), "--remembers", str(remembers), "--seed", str(seed)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} on {db} failed:\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = round(time.perf_counter() - t, 1)
    if built is not None:
        out["built"] = built
    return out


def pooled(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A mode's passes as one row: the times of every pass pooled (their p50 and p95), start-up and
    what was built from the first process (a cold open of the copy, as one process per mode gave),
    the highest peak RSS, the processes' seconds summed."""
    out = {k: v for k, v in parts[0].items() if k not in ("recall_ms", "remember_ms")}
    for op in ("recall", "remember"):
        times = [x for p in parts for x in p[f"{op}_ms"]]
        out[op] = summary(times)
    out["peak_rss_mib"] = max(p["peak_rss_mib"] for p in parts)
    out["process_s"] = round(sum(p["process_s"] for p in parts), 1)
    out["passes"] = len(parts)
    return out


def share(total: int, parts: int, i: int) -> int:
    """Part ``i`` of ``total`` split into ``parts`` nearly equal whole parts."""
    return total // parts + (1 if i < total % parts else 0)


def tantivy_available() -> bool:
    try:
        import tantivy  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------- floors


def tantivy_floor(db: Path, rounds: int) -> dict[str, Any]:
    """Tantivy (BM25, block-max WAND) over the notes' raw text, recall's queries, k=50."""
    import tempfile

    import tantivy

    from evomem.domain.text import query_terms

    queries = [" OR ".join(query_terms(q)) for q in QUERIES]
    with tempfile.TemporaryDirectory(dir=db.parent) as tmp:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("text", tokenizer_name="en_stem")
        index = tantivy.Index(builder.build(), path=tmp)
        t = time.perf_counter()
        writer = index.writer(heap_size=256_000_000)
        conn = sqlite3.connect(db)
        for (text,) in conn.execute("SELECT raw_text FROM nodes WHERE status != 'forgotten'"):
            writer.add_document(tantivy.Document(text=text))
        conn.close()
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        build_s = time.perf_counter() - t
        searcher = index.searcher()
        parsed = [index.parse_query(q, ["text"]) for q in queries]
        times = []
        for _ in range(rounds):
            for q in parsed:
                t = time.perf_counter()
                searcher.search(q, 50)
                times.append((time.perf_counter() - t) * 1000)
    return {"recall_k50": summary(times), "build_s": round(build_s, 1)}


def vector_floors(db: Path, rounds: int, usearch: bool) -> dict[str, Any]:
    """EvoMem's vector search alone (k=20, recall's fan-out at k=5) and, when ``usearch``, usearch's
    HNSW over the same stored vectors with both recall@10 against the exact cosine top 10."""
    from bench import floors

    if usearch:
        m = floors.meaning(db, rounds)
        return {
            "evomem_k20": m["evomem_k20"], "usearch_k20": m["usearch_k20"], "usearch_build_s": m["usearch_build_s"],
            "evomem_recall_at_10": m["evomem_recall_at_10"], "usearch_recall_at_10": m["usearch_recall_at_10"],
        }  # fmt: skip
    from evomem.adapters.models.embedding import OnnxEmbedder
    from evomem.adapters.vectors.index import VectorIndex

    embedder = OnnxEmbedder(threads=1)
    embedder.load()
    queries = embedder.encode(QUERIES)
    index = VectorIndex(db, model=embedder.name)
    try:
        index.search(queries[0], "default", k=20)  # loads the bits: start-up, not a query's cost
        times = []
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                index.search(q, "default", k=20)
                times.append((time.perf_counter() - t) * 1000)
    finally:
        index.close()
    return {"evomem_k20": summary(times)}


# ---------------------------------------------------------------------------- one size


def ensure_store(n: int, workdir: Path, vectors: bool, progress: bool) -> dict[str, Any]:
    """The datagen store of ``n`` notes (built unless already there), with vectors when ``vectors``."""
    base = workdir / f"speed-{n}.db"
    ready = workdir / f"speed-{n}.db.vectors"
    out: dict[str, Any] = {}
    if not base.exists():
        t = time.perf_counter()
        datagen.build(base, n, seed=1, progress=progress)
        out["build_s"] = round(time.perf_counter() - t, 1)
        ready.unlink(missing_ok=True)
    if vectors and not ready.exists():
        t = time.perf_counter()
        datagen.add_vectors(base, seed=1, progress=progress)
        out["vectors_s"] = round(time.perf_counter() - t, 1)
        ready.touch()
    out["has_vectors"] = ready.exists()
    return out


def run_size(n: int, workdir: Path, args: argparse.Namespace, save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """One size, stage by stage; ``save`` gets the size's row after each stage (a 10M run that runs
    out of time keeps what it measured)."""
    big = n > args.small
    rounds, remembers = (args.big_rounds, args.big_remembers) if big else (args.rounds, args.remembers)
    base = workdir / f"speed-{n}.db"
    want_vectors = vectors_available() and n <= args.vectors_up_to
    size: dict[str, Any] = {"notes": n, "rounds": rounds, "remembers": remembers}
    size["load"] = ensure_store(n, workdir, want_vectors, not args.no_progress)
    hybrid = size["load"]["has_vectors"] and vectors_available()
    size["db_bytes"] = _bytes(base)
    size["db_bytes_per_note"] = round(size["db_bytes"] / n, 1)
    copy = n <= args.copy_up_to
    size["remembers_into"] = "a copy" if copy else "the store itself"
    say = lambda what: print(f"[{n:,}] {what} ...", file=sys.stderr, flush=True)  # noqa: E731
    size["served"] = {}
    floors: dict[str, Any] = {}
    size["floors"] = floors
    # Tantivy last: its index (and the log triggers it adds to the file) stays beside a store served in place
    tantivy = tantivy_available() and n <= args.tantivy_served_up_to
    modes = ["words", *(["hybrid", "default"] if hybrid else []), *(["tantivy"] if tantivy else [])]
    graph = workdir / f"curve-{n}-graph.db"  # the HNSW graph (vector search auto), built once per size
    if hybrid and copy:  # on a copy of the store, its folder then put beside each vector mode's copy
        say("HNSW graph")
        shutil.copyfile(base, graph)
        try:
            size["graph"] = prebuilt(graph, "graph", rounds)
        finally:
            for p in _files(graph):
                p.unlink(missing_ok=True)
        if "vector_search_k20" in size["graph"]:
            floors["graph_k20"] = size["graph"]["vector_search_k20"]
        save(size)
    # Interleaved: every mode's copy made first, then ``--passes`` rounds of one process per mode, in
    # turn, so that the machine's load falls on every mode alike; a store served in place (above
    # ``--copy-up-to``) gets one pass, since the Tantivy mode adds its log triggers to that very file.
    passes = max(1, min(args.passes if copy else 1, rounds))
    dbs: dict[str, Path] = {}
    parts: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    try:
        for mode in modes:
            db = workdir / f"curve-{n}-{mode}.db" if copy else base
            if copy:
                shutil.copyfile(base, db)
                if MODES[mode][0] == "on" and Path(str(graph) + ".hnsw").exists():
                    shutil.copytree(Path(str(graph) + ".hnsw"), Path(str(db) + ".hnsw"))
            dbs[mode] = db
        for i in range(passes):
            for mode in modes:
                say(f"served, {mode}" + (f", pass {i + 1} of {passes}" if passes > 1 else ""))
                seed = n + 10 + list(MODES).index(mode) + 1000 * i
                if not copy:  # notes an earlier run wrote into this store: write other texts, not copies of them
                    conn = sqlite3.connect(base)
                    seed += conn.execute("SELECT max(rowid) FROM nodes").fetchone()[0] - n
                    conn.close()
                part = served(
                    dbs[mode], mode, share(rounds, passes, i), share(remembers, passes, i), seed=seed, first=i == 0
                )
                parts[mode].append(part)
                size["served"][mode] = pooled(parts[mode])
                save(size)
    finally:
        if copy:
            for db in dbs.values():
                _drop(db)
    size["passes"] = passes
    shutil.rmtree(Path(str(graph) + ".hnsw"), ignore_errors=True)
    say("raw FTS5 floor")
    floors["fts5_recall_k50"] = summary(fts_floor(base, QUERIES, rounds))
    floor_db = workdir / f"curve-{n}-insert-floor.db"  # a bare FTS5 table, as bench.speed's insert floor
    _drop(floor_db)
    try:
        floors["fts5_insert"] = summary(fts_insert_floor(floor_db, new_notes(remembers, n + 2)))
    finally:
        _drop(floor_db)
    save(size)
    if hybrid:
        say("vector floors")
        floors["vectors"] = vector_floors(base, rounds, usearch=n <= args.usearch_up_to)
        save(size)
    if n <= args.tantivy_up_to:
        say("Tantivy floor")
        floors["tantivy"] = tantivy_floor(base, rounds)
        save(size)
    print(json.dumps(size), file=sys.stderr, flush=True)
    return size


# ---------------------------------------------------------------------------- report


def _ms(s: dict[str, Any] | None, key: str = "p50_ms") -> str:
    return f"{s[key]:.2f}" if s else "—"


def _passes_line(report: dict[str, Any]) -> str:
    """How the served modes ran, per size (``passes`` is absent from rows measured before interleaving)."""
    passes = {s["notes"]: s.get("passes", 1) for s in report["sizes"]}
    if all(p == 1 for p in passes.values()):
        return "Each served mode ran in one fresh process, one mode after another."
    said = ", ".join(f"{n:,}: {p}" for n, p in passes.items())
    return (
        "The served modes of a size ran interleaved, their rounds and remembers split over fresh processes "
        f"taken one per mode in turn, times pooled (processes per mode, by size: {said}; 1: one after another)."
    )


def _pp(x: dict[str, Any] | None, missing: str = "—") -> str:
    """A summary's p50 / p95 cell; ``missing`` where there is none."""
    return f"{x['p50_ms']:.2f} / {x['p95_ms']:.2f} ms" if x else missing


def _on_tantivy(t: dict[str, Any] | None) -> str:
    """The words-on-Tantivy cell: recall and remember p50."""
    return f"{t['recall']['p50_ms']:.2f} / {t['remember']['p50_ms']:.2f} ms" if t else "—"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Machine: {report['machine']}. {report['date']}. Run with `nice -n 10` on a shared 2-core machine "
        "(other jobs were running): read medians and slopes, not single numbers. " + _passes_line(report),
        "",
        "| notes | recall p50 / p95, words | recall p50 / p95, hybrid | remember p50 / p95, words | "
        "remember p50 / p95, hybrid | recall / remember p50, words on Tantivy | "
        "start-up (open + first recall) words / hybrid | peak RSS words / hybrid | database |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in report["sizes"]:
        w, h = s["served"].get("words"), s["served"].get("hybrid")
        if w is None:
            continue

        def pair(x: dict[str, Any] | None, op: str) -> str:
            return _pp(x[op] if x else None, "— (no vectors)")

        tv = _on_tantivy(s["served"].get("tantivy"))
        start = f"{w['startup_ms'] / 1000:.2f} s / " + (f"{h['startup_ms'] / 1000:.2f} s" if h else "—")
        rss = f"{w['peak_rss_mib']:.0f} / " + (f"{h['peak_rss_mib']:.0f} MiB" if h else "— MiB")
        lines.append(
            f"| {s['notes']:,} | {pair(w, 'recall')} | {pair(h, 'recall')} | {pair(w, 'remember')} | "
            f"{pair(h, 'remember')} | {tv} | {start} | {rss} | {s['db_bytes'] / 1e6:,.0f} MB "
            f"({s['db_bytes_per_note']:.0f} B/note) |"
        )
    lines += [
        "",
        "Floors on the same store, same run (p50 / p95):",
        "",
        "| notes | raw FTS5 bm25 (k=50) | Tantivy (k=50) | raw FTS5 insert | EvoMem vector search alone (k=20) | "
        "usearch HNSW i8 (k=20) | recall@10 EvoMem / usearch |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s in report["sizes"]:
        f = s["floors"]
        t = f.get("tantivy", {}).get("recall_k50")
        v = f.get("vectors", {})
        ev, us = v.get("evomem_k20"), v.get("usearch_k20")
        r10 = f"{v['evomem_recall_at_10']:.3f} / {v['usearch_recall_at_10']:.3f}" if "usearch_recall_at_10" in v else ""
        lines.append(
            f"| {s['notes']:,} | {_pp(f.get('fts5_recall_k50'))} | {_pp(t)} | {_pp(f.get('fts5_insert'))} | "
            f"{_pp(ev)} | {_pp(us)} | {r10} |"
        )
    lines += [
        "",
        "The product's defaults (`default`: vectors on, `EVOMEM_WORD_INDEX=auto`, `EVOMEM_VECTOR_SEARCH=auto`), "
        "next to words only on Tantivy and the top-k engines alone (p50 / p95):",
        "",
        "| notes | recall, default | remember, default | recall / remember p50, words on Tantivy | "
        "default / words on Tantivy, recall p50 | Tantivy (k=50) + vector search as the default searches (k=20) | "
        "default recall / those two | start-up, peak RSS default | Tantivy index, HNSW graph built in |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in report["sizes"]:
        d, t = s["served"].get("default"), s["served"].get("tantivy")
        if d is None:
            continue
        f = s["floors"]
        tf, gf = f.get("tantivy", {}).get("recall_k50"), f.get("graph_k20")
        tv = _on_tantivy(t)
        vs_words = f"{d['recall']['p50_ms'] / t['recall']['p50_ms']:.2f}×" if t else "—"
        engines = f"{tf['p50_ms']:.2f} + {gf['p50_ms']:.2f} ms" if tf and gf else "—"
        vs_floor = f"{d['recall']['p50_ms'] / (tf['p50_ms'] + gf['p50_ms']):.2f}×" if tf and gf else "—"
        built = d.get("built", {}).get("word_index_build_s")
        graph_s = s.get("graph", {}).get("graph_build_s")
        lines.append(
            f"| {s['notes']:,} | {_pp(d['recall'])} | {_pp(d['remember'])} | {tv} | {vs_words} | {engines} | "
            f"{vs_floor} | {d['startup_ms'] / 1000:.2f} s, {d['peak_rss_mib']:.0f} MiB | "
            f"{'—' if built is None else f'{built:.0f} s'}, {'—' if graph_s is None else f'{graph_s:.0f} s'} |"
        )
    lines += ["", "| notes | built in | vectors written in | remembers went into | rounds × queries, remembers |"]
    lines.append("|---:|---:|---:|---|---:|")
    for s in report["sizes"]:
        ld = s["load"]
        rate = f"{s['notes'] / ld['build_s']:,.0f} notes/s" if ld.get("build_s") else "under 0.1 s"
        b = f"{ld['build_s']:.0f} s ({rate})" if "build_s" in ld else "earlier run"
        v = f"{ld['vectors_s']:.0f} s" if "vectors_s" in ld else ("earlier run" if ld["has_vectors"] else "none")
        lines.append(
            f"| {s['notes']:,} | {b} | {v} | {s['remembers_into']} | {s['rounds']} × {len(QUERIES)}, {s['remembers']} |"
        )
    lines += [
        "",
        "words: `--vectors off` (BM25 only); hybrid: BM25 + vectors (the default where the model is installed), "
        "only at the sizes whose store has vectors; words on Tantivy: `--vectors off` with `EVOMEM_WORD_INDEX=tantivy` "
        "(its index built from the file when the process opens it, a first run's cost outside the timings), up to "
        "`--tantivy-served-up-to`. Start-up is measured in a fresh process after the imports: "
        "open the store (`build_embedded`), load the embedding model (hybrid), answer the first recall (hybrid: "
        "reads every vector's bits into memory). Peak RSS is that process's, after all its calls. "
        "default: what a user gets, vectors on with the word index and the vector search left at `auto` (Tantivy "
        "from `EVOMEM_TANTIVY_FROM` notes, the HNSW graph from `EVOMEM_HNSW_FROM` vectors); its Tantivy index is "
        "built beside its copy before its process starts, and the graph once per size on a copy of the store, its "
        "folder then put beside every vector mode's copy (hybrid's too): their build times are the last column, "
        "not start-up. The vector search as the default searches is timed on that graph's copy.",
    ]
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = report["sizes"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [1.6, 1]})

    def line(
        target: Any, get: Any, label: str, style: str, color: str, rows: list[dict[str, Any]] | None = None
    ) -> None:
        pts = [(s["notes"], get(s)) for s in rows or sizes]
        pts = [(x, y) for x, y in pts if y is not None]
        if pts:
            target.plot([x for x, _ in pts], [y for _, y in pts], style, color=color, label=label, marker="o", ms=4)

    def sv(mode: str, op: str) -> Any:
        return lambda s: s["served"][mode][op]["p50_ms"] if mode in s["served"] else None

    def fl(*keys: str) -> Any:
        def get(s: dict[str, Any]) -> Any:
            x: Any = s["floors"]
            for k in keys:
                if not isinstance(x, dict) or k not in x:
                    return None
                x = x[k]
            return x["p50_ms"]

        return get

    line(ax, sv("words", "recall"), "recall, words", "-", "tab:blue")
    line(ax, sv("hybrid", "recall"), "recall, hybrid", "-", "tab:purple")
    line(ax, sv("words", "remember"), "remember, words", "-", "tab:orange")
    line(ax, sv("hybrid", "remember"), "remember, hybrid", "-", "tab:red")
    line(ax, sv("tantivy", "recall"), "recall, words on Tantivy", "-.", "tab:green")
    line(ax, sv("tantivy", "remember"), "remember, words on Tantivy", "-.", "tab:olive")
    line(ax, sv("default", "recall"), "recall, default (auto indexes)", "-", "black")
    line(ax, sv("default", "remember"), "remember, default (auto indexes)", "-", "tab:brown")
    line(ax, fl("fts5_recall_k50"), "floor: raw FTS5 bm25 k=50", "--", "tab:blue")
    line(ax, fl("tantivy", "recall_k50"), "floor: Tantivy k=50", "--", "tab:green")
    line(ax, fl("fts5_insert"), "floor: raw FTS5 insert", "--", "tab:orange")
    line(ax, fl("vectors", "evomem_k20"), "floor: vector search alone k=20", "--", "tab:purple")
    line(ax, fl("vectors", "usearch_k20"), "floor: usearch HNSW k=20", "--", "tab:gray")
    line(ax, fl("graph_k20"), "floor: vector search as the default searches k=20", "--", "black")
    ax.set_title("p50 latency (ms) against notes in the store")
    line(ax2, lambda s: s["served"].get("words", {}).get("startup_ms"), "start-up, words (ms)", "-", "tab:blue")
    line(ax2, lambda s: s["served"].get("hybrid", {}).get("startup_ms"), "start-up, hybrid (ms)", "-", "tab:purple")
    line(ax2, lambda s: s["served"].get("words", {}).get("peak_rss_mib"), "peak RSS, words (MiB)", ":", "tab:blue")
    line(ax2, lambda s: s["served"].get("hybrid", {}).get("peak_rss_mib"), "peak RSS, hybrid (MiB)", ":", "tab:purple")
    line(ax2, lambda s: s["served"].get("default", {}).get("startup_ms"), "start-up, default (ms)", "-", "black")
    line(ax2, lambda s: s["served"].get("default", {}).get("peak_rss_mib"), "peak RSS, default (MiB)", ":", "black")
    line(ax2, lambda s: s["db_bytes"] / 2**20, "database file (MiB)", "-.", "black")
    ax2.set_title("start-up (ms), peak RSS and database size (MiB)")
    for a in (ax, ax2):
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("notes in the store")
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7.5, loc="best")
    fig.suptitle(f"EvoMem cost curve ({report['date']}; floors dashed; shared 2-core machine)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["serve"]:
        sp = argparse.ArgumentParser(prog="python -m bench.curve serve")
        sp.add_argument("db", type=Path)
        sp.add_argument("--vectors", choices=("on", "off"), default="off")
        sp.add_argument("--rounds", type=int, default=10)
        sp.add_argument("--remembers", type=int, default=100)
        sp.add_argument("--seed", type=int, default=11)
        sp.add_argument("--word-index", choices=("fts5", "tantivy", "auto"), default="fts5")
        a = sp.parse_args(argv[1:])
        print(json.dumps(serve(a.db, a.vectors, a.rounds, a.remembers, a.seed, a.word_index)))
        return 0
    if argv[:1] == ["prebuild"]:
        bp = argparse.ArgumentParser(prog="python -m bench.curve prebuild")
        bp.add_argument("db", type=Path)
        bp.add_argument("--rounds", type=int, default=10)
        bp.add_argument("--what", choices=("words", "graph"), default="graph")
        a = bp.parse_args(argv[1:])
        print(json.dumps(prebuild(a.db, a.rounds, a.what)))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--out", type=Path, default=Path("bench/results/full"))
    p.add_argument("--name", default="cost_curve", help="OUT/NAME.json, .md, .png")
    p.add_argument("--workdir", type=Path, default=None, help="where stores are built (default: OUT/tmp)")
    p.add_argument("--rounds", type=int, default=10, help="passes over the query set, up to --small notes")
    p.add_argument("--remembers", type=int, default=100, help="remember calls per mode, up to --small notes")
    p.add_argument("--small", type=int, default=100_000, help="above this many notes, the --big-* counts")
    p.add_argument(
        "--passes",
        type=int,
        default=2,
        help="the served modes run interleaved: each mode's rounds and remembers split over this many processes, "
        "one per mode in turn (stores up to --copy-up-to; 1: one process per mode, one after another)",
    )
    p.add_argument("--big-rounds", type=int, default=3)
    p.add_argument("--big-remembers", type=int, default=30)
    p.add_argument("--vectors-up-to", type=int, default=1_000_000, help="stores above this size get no vectors")
    p.add_argument("--usearch-up-to", type=int, default=100_000, help="usearch HNSW floor up to this size")
    p.add_argument("--tantivy-up-to", type=int, default=10_000_000, help="Tantivy floor up to this size")
    p.add_argument(
        "--tantivy-served-up-to",
        type=int,
        default=1_000_000,
        help="the store served with EVOMEM_WORD_INDEX=tantivy (its index built at open) up to this size",
    )
    p.add_argument("--copy-up-to", type=int, default=1_000_000, help="remembers go into a copy up to this size")
    p.add_argument(
        "--keep", action="store_true", help="keep the sizes of an earlier OUT/NAME.json that this run does not measure"
    )
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    workdir = args.workdir or args.out / "tmp"
    workdir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    from evomem.adapters.sqlite.driver import sqlite as store_sqlite

    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"SQLite {store_sqlite.sqlite_version} ({store_sqlite.__name__})",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "sizes": [],
    }
    sizes = [int(x) for x in args.sizes.split(",") if x]
    earlier = args.out / f"{args.name}.json"
    if args.keep and earlier.exists():  # e.g. the 10M row measured after the others, in its own run
        kept = [s for s in json.loads(earlier.read_text())["sizes"] if s["notes"] not in sizes]
        report["sizes"] = kept
        if kept:
            names = ", ".join(f"{s['notes']:,}" for s in kept)
            report["date"] += f"; sizes {names} from an earlier run ({json.loads(earlier.read_text())['date']})"
    done = list(report["sizes"])

    def save(size: dict[str, Any]) -> None:  # after every stage: a long run (10M) keeps what it measured
        report["sizes"] = sorted([*done, size], key=lambda s: s["notes"])
        (args.out / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n")
        (args.out / f"{args.name}.md").write_text(markdown(report))
        plot(report, args.out / f"{args.name}.png")

    for n in sizes:
        size = run_size(n, workdir, args, save)
        save(size)
        done.append(size)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
