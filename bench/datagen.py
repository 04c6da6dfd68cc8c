"""Synthetic stores for the speed suite: N notes of decisions, with chains, from a seed.

Notes are written straight into the real schema (``SQLiteStore`` creates it) in large
transactions, so a 1M-note store builds in minutes instead of hours of ``remember`` calls.
About 30% of notes supersede an earlier decision on the same topic. The extracted fields
come from the generator's own parts (the change clause and the reason clause), as the lite
cronista would produce them.

    python -m bench.datagen --n 100000 --out /tmp/speed-100k.db
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evomem.adapters.sqlite import term_bounds
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.model import new_id

COMPONENTS = [
    "ledger", "billing", "search", "auth", "checkout", "inventory", "notifications", "payments", "reporting",
    "analytics", "catalog", "shipping", "gateway", "scheduler", "profile", "audit", "export", "import",
    "pricing", "recommendations", "sessions", "uploads", "webhooks", "metrics", "logging", "cache", "queue",
    "mailer", "invoices", "ratings", "fraud", "onboarding", "permissions", "feature-flags", "cdn", "backups",
]  # fmt: skip
ASPECTS = {
    "database": ["Postgres", "SQLite", "MySQL", "DynamoDB", "MongoDB", "CockroachDB", "Cassandra"],
    "queue": ["RabbitMQ", "Kafka", "Redis Streams", "SQS", "NATS", "Pulsar"],
    "cache": ["Redis", "Memcached", "Varnish", "an in-process LRU"],
    "language": ["Go", "Rust", "Python", "Kotlin", "TypeScript", "Elixir"],
    "hosting": ["Kubernetes", "ECS", "Nomad", "bare metal", "Cloud Run", "Lambda"],
    "ci": ["GitHub Actions", "GitLab CI", "Jenkins", "Buildkite", "CircleCI"],
    "search engine": ["Elasticsearch", "OpenSearch", "Meilisearch", "Typesense", "SQLite FTS5"],
    "monitoring": ["Prometheus", "Datadog", "Grafana Cloud", "New Relic"],
}
REASONS = [
    "{old} was overkill", "{old} kept timing out under load", "the licence costs were too high",
    "the team already knows {new}", "{old} could not scale past the last peak", "compliance asked for it",
    "operations wanted fewer moving parts", "{new} halves the p95 latency", "we hit too many incidents",
    "{old} was too expensive to run", "the vendor dropped support", "it simplifies local development",
]  # fmt: skip
FIRST = ["We picked {new} for the {comp} {aspect}", "The {comp} {aspect} will be {new}",
         "Decision: {comp} uses {new} as its {aspect}"]  # fmt: skip
CHANGE = ["We moved the {comp} {aspect} from {old} to {new}", "The {comp} {aspect} now runs on {new}",
          "Switched {comp} from {old} to {new} for the {aspect}", "We went back to {new} for the {comp} {aspect}",
          "{comp} {aspect}: replaced {old} with {new}"]  # fmt: skip


REPLACE_SHARE = 0.3
#: Topics a replacement may pick from: the most recent ones. Bounds the generator's memory (a 10M-note
#: store has ~7M topics); below ``TOPIC_WINDOW / (1 - REPLACE_SHARE)`` notes the window never fills and
#: the notes are those the generator wrote before it had one.
TOPIC_WINDOW = 200_000


def notes(n: int, seed: int, *, window: int = TOPIC_WINDOW) -> Iterator[dict[str, object]]:
    """Yield ``n`` notes; a note with ``replaces`` replaces the head of its ``topic``. Memory is bounded
    by ``window`` topics: a note's ``evicted`` is the topic that left the window (never picked again)."""
    rng = random.Random(seed)
    current: dict[tuple[str, str, int], str] = {}
    seen: list[tuple[str, str, int]] = []  # a ring of the last ``window`` topics
    oldest = 0
    shards: dict[tuple[str, str], int] = {}
    aspects = list(ASPECTS)
    for _ in range(n):
        evicted = None
        if seen and rng.random() < REPLACE_SHARE:
            topic = rng.choice(seen)
        else:
            comp, aspect = rng.choice(COMPONENTS), rng.choice(aspects)
            shard = shards.get((comp, aspect), -1) + 1
            shards[(comp, aspect)] = shard
            topic = (comp, aspect, shard)
            if len(seen) < window:
                seen.append(topic)
            else:
                evicted, seen[oldest] = seen[oldest], topic
                oldest = (oldest + 1) % window
                current.pop(evicted, None)
        comp, aspect, shard = topic
        options = ASPECTS[aspect]
        old = current.get(topic)
        new = rng.choice([o for o in options if o != old])
        label = comp if shard == 0 else f"{comp}-{shard}"
        fields = {"comp": label, "aspect": aspect, "old": old or "", "new": new}
        reason = rng.choice(REASONS).format(**fields) if old else ""
        change = rng.choice(CHANGE if old else FIRST).format(**fields)
        raw = f"{change}, {reason}." if reason else f"{change}."
        yield {
            "topic": topic, "raw": raw, "change": change, "trigger": reason, "replaces": old is not None,
            "evicted": evicted,
        }  # fmt: skip
        current[topic] = new


INSERT_NODE = (
    "INSERT INTO nodes (id, namespace, raw_text, trigger, change, summary, tags, created_at, status, "
    "superseded_by, supersedes, chain_root, version, link_method, link_confidence, link_by, "
    "link_created_at, extraction_state, extractor, extraction_attempts) "
    "VALUES (?, 'default', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'done', 'lite/1', 1)"
)


def build(
    path: Path, n: int, seed: int = 1, *, progress: bool = True, batch: int = 50_000, window: int = TOPIC_WINDOW
) -> Path:
    """Create a store of ``n`` notes at ``path`` (replacing any file there); returns ``path``.

    The schema is the product's (``SQLiteStore`` creates it, every migration). The load is a bulk
    import into it: rows in ``batch``-note transactions, with the secondary indexes of ``nodes`` and
    the FTS and term-bound insert triggers set aside and put back afterwards from their own SQL in
    ``sqlite_master`` (so the file holds exactly the schema the store created), the FTS index built once
    at the end (``rebuild``, then ``optimize``, then the term bounds from it: ``term_bounds.rebuild``);
    unique indexes re-created over the loaded rows check the chains.
    Memory is bounded (one batch, ``TOPIC_WINDOW`` topics). Built under a temporary name and renamed
    when complete, so an interrupted build never leaves a store that looks finished.
    """
    building = path.with_name(path.name + ".building")
    for p in (path, building):
        for suffix in ("", "-wal", "-shm"):
            Path(str(p) + suffix).unlink(missing_ok=True)
    store = SQLiteStore(building)
    conn = store._conn()
    conn.execute("PRAGMA secure_delete = OFF")  # nothing is deleted while building
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA foreign_keys = OFF")  # the chains are checked by the unique indexes, rebuilt below
    conn.execute("PRAGMA cache_size = -262144")  # 256 MiB
    set_aside = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'nodes' AND sql IS NOT NULL "
        "AND (type = 'index' OR (type = 'trigger' AND name IN ('nodes_fts_insert', 'term_bounds_insert'))) "
        "ORDER BY rowid"
    ).fetchall()
    for kind, name, _ in set_aside:
        conn.execute(f'DROP {kind.upper()} "{name}"')
    heads: dict[tuple[str, str, int], tuple[str, str, int]] = {}  # topic -> (id, chain_root, version)
    tags: dict[str, str] = {}  # a component's tags column, as json.dumps writes it

    def tag(comp: str) -> str:
        return tags.setdefault(comp, json.dumps([comp]))

    bar = _bar(n, f"build {n:,} notes", progress)
    t0 = time.perf_counter()
    ms = 1_700_000_000_000
    rows: dict[str, list[object]] = {}  # this batch, by id (mutable: a later note may retire one)
    retire: list[tuple[str, str]] = []  # (successor, predecessor) for predecessors already written

    def flush() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("UPDATE nodes SET superseded_by = ?, status = 'superseded' WHERE id = ?", retire)
        conn.executemany(INSERT_NODE, list(rows.values()))
        conn.execute("COMMIT")
        bar.update(len(rows))
        rows.clear()
        retire.clear()

    for i, note in enumerate(notes(n, seed, window=window)):
        ms += 1000
        node_id = new_id(ms)
        topic = note["topic"]
        if note["evicted"] is not None:
            heads.pop(note["evicted"], None)  # type: ignore[call-overload]
        prev = heads.get(topic) if note["replaces"] else None  # type: ignore[call-overload]
        if prev:
            chain_root, version = prev[1], prev[2] + 1
            if prev[0] in rows:
                rows[prev[0]][7:9] = ["superseded", node_id]
            else:
                retire.append((node_id, prev[0]))
            link = ("agent", 1.0, "datagen", ms)
        else:
            chain_root, version = node_id, 1
            link = (None, None, None, None)
        summary = str(note["raw"])
        rows[node_id] = [
            node_id, note["raw"], note["trigger"], note["change"], summary, tags.get(topic[0]) or tag(topic[0]), ms,  # type: ignore[index]
            "active", None, prev[0] if prev else None, chain_root, version, *link,
        ]  # fmt: skip
        heads[topic] = (node_id, chain_root, version)  # type: ignore[index]
        if len(rows) >= batch or i == n - 1:
            flush()
    bar.close()
    loaded = time.perf_counter() - t0
    steps = _bar(len(set_aside) + 2, "indexes and FTS", progress, unit="step")
    conn.execute("BEGIN IMMEDIATE")
    for _, _, sql in set_aside:
        conn.execute(sql)
        steps.update(1)
    conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('rebuild')")
    steps.update(1)
    conn.execute("COMMIT")
    conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('optimize')")
    conn.execute("BEGIN IMMEDIATE")
    term_bounds.rebuild(conn)  # every term's largest contribution, from the index (the trigger was set aside)
    conn.execute("COMMIT")
    steps.update(1)
    steps.close()
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    problems = store.check_invariants() if n <= 200_000 else []
    store.close()
    if problems:
        raise RuntimeError(f"generated store is inconsistent: {problems[:3]}")
    for suffix in ("-wal", "-shm"):
        Path(str(building) + suffix).unlink(missing_ok=True)
    building.rename(path)
    took = time.perf_counter() - t0
    print(f"built {n:,} notes in {took:.1f} s (rows {loaded:.1f} s, indexes and FTS {took - loaded:.1f} s) -> {path}",
          file=sys.stderr)  # fmt: skip
    return path


def add_vectors(
    path: Path, seed: int = 1, *, pool: int = 512, progress: bool = True, batch: int = 20_000, embedder: Any = None
) -> int:
    """Give every note of a built store a vector in the store's own file, as hybrid recall keeps them.

    Embedding 1M notes with the real model would take hours on 2 cores, and the speed of a
    vector search does not depend on the values (the binary scan reads every vector of the
    namespace; rescoring reads a fixed ``k * oversample``). So ``pool`` notes are embedded
    with the real model, and every note gets one of those vectors plus Gaussian noise
    (cosine ~0.8 to its source): realistic clusters, right dimension and model name. Recall
    *quality* is measured elsewhere (bench.quality), with every vector real.
    ``embedder``: the model whose vectors these are (default: the shipped MiniLM).
    Returns how many vectors were written; 0 when the model or sqlite-vec is missing.
    """
    import numpy as np

    from evomem.adapters.models.embedding import OnnxEmbedder
    from evomem.adapters.vectors.index import VectorIndex
    from evomem.bootstrap.vectors import vectors_problem

    if vectors_problem() is not None:
        print(f"no vectors for {path}: {vectors_problem()}", file=sys.stderr)
        return 0
    embedder = OnnxEmbedder() if embedder is None else embedder
    index = VectorIndex(path, model=embedder.name, dim=embedder.dim)
    t0 = time.perf_counter()
    try:
        conn = index._conn()
        conn.execute("PRAGMA synchronous = OFF")
        sample = [r[0] for r in conn.execute("SELECT raw_text FROM nodes ORDER BY id LIMIT ?", (pool,))]
        base = np.asarray(embedder.encode(sample), dtype=np.float32)
        rng = np.random.default_rng(seed)
        total = conn.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]
        bar = _bar(total, "vectors", progress)
        done, last = 0, ""
        while True:
            rows = conn.execute(
                "SELECT id, namespace FROM nodes WHERE id > ? ORDER BY id LIMIT ?", (last, batch)
            ).fetchall()
            if not rows:
                break
            vecs = base[rng.integers(0, len(base), len(rows))] + rng.normal(0, 0.04, (len(rows), base.shape[1]))
            index.add_many((r[0], r[1], v) for r, v in zip(rows, vecs.astype(np.float32), strict=True))
            done += len(rows)
            last = rows[-1][0]
            bar.update(len(rows))
        bar.close()
        index.checkpoint()
    finally:
        index.close()
    print(f"wrote {done:,} vectors in {time.perf_counter() - t0:.1f} s -> {path}", file=sys.stderr)
    return done


def _bar(total: int, desc: str, enabled: bool, unit: str = "note"):  # type: ignore[no-untyped-def]
    try:
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr)
    except ImportError:  # pragma: no cover - tqdm is in the bench extra

        class _Null:
            def update(self, _: int) -> None: ...
            def close(self) -> None: ...

        return _Null()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--vectors", action="store_true", help="also write vectors (see add_vectors)")
    args = p.parse_args(argv)
    build(args.out, args.n, args.seed)
    if args.vectors:
        add_vectors(args.out, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
