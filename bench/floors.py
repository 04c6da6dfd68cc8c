"""Real top-k engines beside EvoMem's searches, on the same store and queries, in one run.

    python -m bench.floors --sizes 100000 --out bench/results          # make bench
    python -m bench.floors --sizes 100000,1000000 --out bench/results/full   # make bench-full

Words: Tantivy (PyPI ``tantivy``: BM25 with block-max WAND) over the notes' text (English stemmer,
one field: the raw text), against ``SQLiteStore.search`` (FTS5 BM25 with MaxScore passes, seven
weighted columns) for recall's queries (k=50, what recall asks for k=5) and for the linker's
candidate queries (the decision part of bench.speed's new notes, k=20 active decisions).
Meaning: usearch (PyPI ``usearch``: HNSW, cosine, int8) over the stored vectors, against
``VectorIndex.search`` (binary scan + int8 rescoring), k=20, with recall@10 of both against the
exact cosine top 10 over the same stored vectors. Query vectors are embedded once, before timing.
Writes ``floors.json`` and ``floors.md``. Nothing is asserted; one run on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import datagen
from bench.speed import QUERIES, new_notes, vectors_available
from bench.stats import pct


def timed(fn: Callable[[Any], Any], items: list[Any], rounds: int) -> dict[str, float]:
    times = []
    for _ in range(rounds):
        for x in items:
            t = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(pct(times, 50), 3), "p95_ms": round(pct(times, 95), 3)}


def words(db: Path, rounds: int) -> dict[str, Any]:
    import tantivy

    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.domain.linkers.decision_text import search_text
    from evomem.domain.text import query_terms

    recall_q = [query_terms(q) for q in QUERIES]
    cand_q = [query_terms(search_text(t)) for t in new_notes(50, 7)]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("text", tokenizer_name="en_stem")
        builder.add_text_field("status", tokenizer_name="raw")
        schema = builder.build()
        index = tantivy.Index(schema, path=tmp)
        t = time.perf_counter()
        writer = index.writer(heap_size=256_000_000)
        conn = sqlite3.connect(db)
        for node_id, text, status in conn.execute("SELECT id, raw_text, status FROM nodes WHERE status != 'forgotten'"):
            writer.add_document(tantivy.Document(id=node_id, text=text, status=status))
        writer.commit()
        writer.wait_merging_threads()
        conn.close()
        index.reload()
        out["tantivy_build_s"] = round(time.perf_counter() - t, 1)
        out["tantivy_bytes"] = sum(p.stat().st_size for p in Path(tmp).iterdir() if p.is_file())
        searcher = index.searcher()

        def tantivy_search(terms: list[str], k: int, active: bool = False) -> Any:
            q = " OR ".join(terms)
            query = index.parse_query(f"({q}) AND status:active" if active else q, ["text"])
            return searcher.search(query, k).hits

        out["tantivy_recall_k50"] = timed(lambda q: tantivy_search(q, 50), recall_q, rounds)
        out["tantivy_candidates_k20"] = timed(lambda q: tantivy_search(q, 20, True), cand_q, 2)
    store = SQLiteStore(db)
    try:
        out["evomem_recall_k50"] = timed(lambda q: store.search(q, namespace="default", limit=50), recall_q, rounds)
        out["evomem_candidates_k20"] = timed(
            lambda q: store.search(q, namespace="default", limit=20, active_only=True), cand_q, 2
        )
    finally:
        store.close()
    return out


def meaning(db: Path, rounds: int) -> dict[str, Any]:
    import numpy as np

    from evomem.adapters.models.embedding import OnnxEmbedder
    from evomem.adapters.vectors.index import VectorIndex
    from evomem.adapters.vectors.quantize import decode_items

    embedder = OnnxEmbedder(threads=1)
    embedder.load()  # before usearch is imported: onnxruntime loaded after it crashed the process
    from usearch.index import Index

    queries = [np.asarray(v, dtype=np.float32) for v in embedder.encode(QUERIES)]
    conn = sqlite3.connect(db)
    ids, blobs = [], []
    for node_id, blob in conn.execute("SELECT node_id, vector FROM vec_items WHERE namespace = 'default'"):
        ids.append(node_id)
        blobs.append(blob)
    conn.close()
    mat = decode_items(blobs, "int8", 384)
    del blobs
    out: dict[str, Any] = {"vectors": len(ids)}
    units = [q / np.linalg.norm(q) for q in queries]
    exact = [set(np.argsort(-(mat @ u))[:10].tolist()) for u in units]
    out["exact_scan_k20"] = timed(lambda u: np.argpartition(-(mat @ u), 20)[:20], units, rounds)
    t = time.perf_counter()
    index = Index(ndim=384, metric="cos", dtype="i8")
    index.add(np.arange(len(ids), dtype=np.uint64), mat, threads=2)
    out["usearch_build_s"] = round(time.perf_counter() - t, 1)
    out["usearch_k20"] = timed(lambda u: index.search(u, 20), units, rounds)
    got = [set(index.search(u, 10).keys.tolist()) for u in units]
    out["usearch_recall_at_10"] = round(sum(len(g & e) for g, e in zip(got, exact, strict=True)) / (10 * len(units)), 3)
    ours = VectorIndex(db, model=embedder.name)
    try:
        ours.search(queries[0], "default", k=20)  # loads its bits cache: start-up, not a query's cost
        out["evomem_k20"] = timed(lambda q: ours.search(q, "default", k=20), queries, rounds)
        position = {node_id: i for i, node_id in enumerate(ids)}
        mine = [{position[i] for i, _ in ours.search(q, "default", k=10)} for q in queries]
        hits = sum(len(m & e) for m, e in zip(mine, exact, strict=True))
        out["evomem_recall_at_10"] = round(hits / (10 * len(queries)), 3)
    finally:
        ours.close()
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Machine: {report['machine']}. {report['date']}. p50 / p95 per query, k as EvoMem asks (recall k=5 asks "
        "BM25 for 50 and the vectors for 20; the linker's candidate search asks for 20 active decisions).",
        "",
        "| notes | search | EvoMem | top-k engine | EvoMem / engine (p50) | recall@10 (exact cosine = 1) |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for size in report["sizes"]:
        n, w = size["notes"], size["words"]
        for what, ours, theirs in (
            ("words: recall's BM25 (k=50)", "evomem_recall_k50", "tantivy_recall_k50"),
            ("words: remember's candidates (k=20, active)", "evomem_candidates_k20", "tantivy_candidates_k20"),
        ):
            a, b = w[ours], w[theirs]
            lines.append(
                f"| {n:,} | {what} | {a['p50_ms']:.2f} / {a['p95_ms']:.2f} ms | Tantivy {b['p50_ms']:.2f} / "
                f"{b['p95_ms']:.2f} ms | {a['p50_ms'] / max(b['p50_ms'], 1e-6):.1f}× | |"
            )
        m = size.get("meaning")
        if m:
            a, b, x = m["evomem_k20"], m["usearch_k20"], m["exact_scan_k20"]
            lines.append(
                f"| {n:,} | meaning: nearest (k=20) | {a['p50_ms']:.2f} / {a['p95_ms']:.2f} ms | usearch HNSW i8 "
                f"{b['p50_ms']:.2f} / {b['p95_ms']:.2f} ms (numpy exact scan {x['p50_ms']:.2f}) | "
                f"{a['p50_ms'] / max(b['p50_ms'], 1e-6):.1f}× | EvoMem {m['evomem_recall_at_10']:.3f}, "
                f"usearch {m['usearch_recall_at_10']:.3f} |"
            )
    lines += ["", "| notes | Tantivy index build / bytes | usearch build |", "|---:|---:|---:|"]
    for size in report["sizes"]:
        w, m = size["words"], size.get("meaning") or {}
        lines.append(
            f"| {size['notes']:,} | {w['tantivy_build_s']} s / {w['tantivy_bytes'] / 1e6:.0f} MB | "
            f"{m.get('usearch_build_s', '')} s |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import os
    import platform

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100000")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--out", type=Path, default=Path("bench/results"))
    p.add_argument("--workdir", type=Path, default=None, help="where stores are built (default: OUT/tmp)")
    args = p.parse_args(argv)
    workdir = args.workdir or args.out / "tmp"
    workdir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "sizes": [],
    }
    for n in (int(s) for s in args.sizes.split(",") if s):
        base = workdir / f"speed-{n}.db"
        ready = workdir / f"speed-{n}.db.vectors"
        if not base.exists():
            datagen.build(base, n, seed=1)
            ready.unlink(missing_ok=True)
        hybrid = vectors_available()
        if hybrid and not ready.exists():
            datagen.add_vectors(base, seed=1)
            ready.touch()
        copy = workdir / f"floors-{n}.db"
        shutil.copyfile(base, copy)
        try:
            print(f"[{n:,}] words ...", file=sys.stderr, flush=True)
            size: dict[str, Any] = {"notes": n, "words": words(copy, args.rounds)}
            if hybrid:
                print(f"[{n:,}] meaning ...", file=sys.stderr, flush=True)
                size["meaning"] = meaning(copy, args.rounds)
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(str(copy) + suffix).unlink(missing_ok=True)
        report["sizes"].append(size)
        print(json.dumps(size), file=sys.stderr, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "floors.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "floors.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
