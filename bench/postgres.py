"""PostgreSQL in the speed bench: the same store loaded into PostgreSQL 17 + pgvector, its floors.

    with BenchPostgres() as pg:                 # a container of its own (or --database-url's server)
        url = pg.database("speed_100000")
        load(sqlite_db, url)                    # the same notes (evomem-admin migrate) and vectors
        tsvector_floor(url, queries, rounds)    # the raw text-search query EvoMem builds on
        pgvector_floor(url, vectors, rounds)    # the raw HNSW query
        insert_floor(url, notes)                # one autocommitted insert into a bare indexed table

The server runs with PostgreSQL's defaults (fsync and synchronous_commit on), in a container on a
volume; SQLite runs in WAL with synchronous=NORMAL: each engine as it ships. The image is
``pgvector/pgvector:pg17`` (``docker/base/build-postgres-image.sh`` builds a stand-in offline).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from evomem.adapters.postgres.search import NORMALIZATION, WEIGHTS
from evomem.domain.text import query_terms

ROOT = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("POSTGRES_IMAGE", "pgvector/pgvector:pg17")
PASSWORD = "evomem-bench"


def available() -> str | None:
    """Why PostgreSQL cannot be benchmarked here (None: it can)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[postgres]')"
    if shutil.which("docker") is None:
        return "docker is not installed"
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "the Docker daemon does not answer"
    return None


class BenchPostgres:
    """A PostgreSQL server for one bench run (a container, removed at the end), or ``url``'s."""

    def __init__(self, url: str | None = None) -> None:
        self.external = url
        self.name = f"evomem-bench-pg-{uuid.uuid4().hex[:6]}"
        self.port = 0

    def __enter__(self) -> BenchPostgres:
        if self.external is None:
            have = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode == 0
            if not have and subprocess.run(["docker", "pull", "-q", IMAGE], capture_output=True).returncode != 0:
                subprocess.run(["bash", str(ROOT / "docker/base/build-postgres-image.sh")], check=True)
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            subprocess.run(
                ["docker", "run", "-d", "--name", self.name, "-e", f"POSTGRES_PASSWORD={PASSWORD}", "-p",
                 f"127.0.0.1:{self.port}:5432", "--shm-size=512m", IMAGE, "-c", "shared_buffers=512MB",
                 "-c", "maintenance_work_mem=512MB", "-c", "max_connections=200"],
                check=True, capture_output=True,
            )  # fmt: skip
        self._wait()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.external is None:
            subprocess.run(["docker", "rm", "-f", "-v", self.name], capture_output=True)

    def url(self, database: str) -> str:
        if self.external is not None:
            from urllib.parse import urlsplit

            return urlsplit(self.external)._replace(path=f"/{database}").geturl()
        return f"postgresql://postgres:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def _wait(self) -> None:
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(self.url("postgres"), connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                    return
            except psycopg.Error:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def migrated(self, name: str) -> str:
        """A new database with EvoMem's migrations, copied from a template made once per run."""
        import psycopg

        from evomem.adapters.postgres.store import PostgresStore

        if not getattr(self, "_template", False):
            url, _ = self.database("evomem_bench_template", fresh=True)
            PostgresStore(url).close()
            self._template = True
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE evomem_bench_template STRATEGY FILE_COPY")
        return self.url(name)

    def drop(self, url: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[-1]} WITH (FORCE)")

    def database(self, name: str, *, fresh: bool = False) -> tuple[str, bool]:
        """The URL of database ``name`` (created when missing) and whether it existed."""
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
            if exists and fresh:
                conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
                exists = False
            if not exists:
                conn.execute(f"CREATE DATABASE {name}")
        return self.url(name), exists


def load(sqlite_db: Path, url: str) -> dict[str, float]:
    """The SQLite store's records into ``url`` (``app.transfer.migrate``: every node, chain and
    audit row), then its vectors (read back from sqlite-vec's int8 rows, so both engines search
    the same vectors), the HNSW index built after them. Seconds each step took."""
    import numpy as np
    import psycopg
    from pgvector import HalfVector
    from pgvector.psycopg import register_vector

    from evomem.adapters.postgres.store import PostgresStore
    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.adapters.vectors.quantize import decode_items
    from evomem.app import transfer

    took: dict[str, float] = {}
    t = time.perf_counter()
    source, target = SQLiteStore(sqlite_db), PostgresStore(url)
    try:
        transfer.migrate(source, target)
    finally:
        source.close()
        target.close()
    took["records_s"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    import sqlite3

    lite = sqlite3.connect(sqlite_db)
    has = lite.execute("SELECT 1 FROM sqlite_master WHERE name = 'vec_items'").fetchone()
    if has is None:
        return took
    model = lite.execute("SELECT value FROM vec_meta WHERE key = 'model'").fetchone()[0]
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.execute("DROP INDEX IF EXISTS vectors_hnsw")
        rows = lite.execute("SELECT namespace, node_id, vector FROM vec_items ORDER BY rowid")
        while batch := rows.fetchmany(5000):
            units = decode_items([b[2] for b in batch], "int8", 384).astype(np.float16)
            with conn.cursor().copy(
                "COPY vectors (namespace, node_id, model, embedding) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "text", "text", "halfvec"])
                for (ns, nid, _), v in zip(batch, units, strict=True):
                    copy.write_row((ns, nid, model, HalfVector(v)))
        conn.commit()
        took["vectors_s"] = round(time.perf_counter() - t, 1)
        t = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute("CREATE INDEX vectors_hnsw ON vectors USING hnsw (embedding halfvec_cosine_ops)")
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    took["hnsw_index_s"] = round(time.perf_counter() - t, 1)
    lite.close()
    return took


def tsvector_floor(url: str, queries: list[str], rounds: int) -> list[float]:
    """The raw text-search query EvoMem's search builds on (``adapters/postgres/search.py``): the
    same OR of the terms, weights and fan-out, without the store's transaction and namespace."""
    import psycopg

    sql = (
        "WITH q AS (SELECT evomem_tsquery_or(plainto_tsquery('english', t)) AS q FROM unnest(%s::text[]) t) "
        f"SELECT n.id, ts_rank('{WEIGHTS}', n.search, q.q, {NORMALIZATION}) AS r FROM q, nodes n "
        "WHERE n.namespace = 'default' AND n.search @@ q.q ORDER BY r DESC LIMIT 50"
    )
    times = []
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(rounds):
            for q in queries:
                terms = [w for w in query_terms(q) if any(c.isalnum() for c in w)]
                t = time.perf_counter()
                conn.execute(sql, (terms,)).fetchall()
                times.append((time.perf_counter() - t) * 1000)
    return times


def pgvector_floor(url: str, queries: list[str], rounds: int) -> dict[str, list[float]]:
    """The raw HNSW query for recall's fan-out (k=20), with the query embedded by the real model."""
    import psycopg
    from pgvector import HalfVector
    from pgvector.psycopg import register_vector

    from evomem.adapters.models.embedding import OnnxEmbedder

    embedder = OnnxEmbedder()
    embedder.load()
    vecs = [HalfVector(embedder.encode([q])[0]) for q in queries]
    times = []
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("SET hnsw.ef_search = 64")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        for _ in range(rounds):
            for v in vecs:
                t = time.perf_counter()
                conn.execute(
                    "SELECT node_id FROM vectors WHERE namespace = 'default' ORDER BY embedding <=> %s LIMIT 20", (v,)
                ).fetchall()
                times.append((time.perf_counter() - t) * 1000)
    return {"vector_search": times}


def insert_floor(url: str, notes: list[str]) -> list[float]:
    """The write floor: one autocommitted insert into a bare table with a generated tsvector and a
    GIN index (what a node row costs PostgreSQL without the chain checks)."""
    import psycopg

    times = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS floor_notes (id bigserial PRIMARY KEY, t text NOT NULL, "
            "s tsvector GENERATED ALWAYS AS (to_tsvector('english', t)) STORED)"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS floor_notes_s ON floor_notes USING gin (s)")
        for text in notes:
            t = time.perf_counter()
            conn.execute("INSERT INTO floor_notes (t) VALUES (%s)", (text,))
            times.append((time.perf_counter() - t) * 1000)
        conn.execute("DROP TABLE floor_notes")
    return times


def in_core(url: str, queries: list[str], notes: list[str], rounds: int, vectors: str = "off") -> dict[str, Any]:
    """``bench.speed.in_core`` over PostgreSQL: the embedded wiring with ``--database-url``."""
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    service = build_embedded(Settings(database_url=url, vectors=vectors))
    if service.vectors is not None:
        service.recall(queries[0], k=5)
    recall, remember = [], []
    for _ in range(rounds):
        for q in queries:
            t = time.perf_counter()
            service.recall(q, k=5)
            recall.append((time.perf_counter() - t) * 1000)
    for text in notes:
        t = time.perf_counter()
        service.remember(text)
        remember.append((time.perf_counter() - t) * 1000)
    service.close()
    print(f"  postgres in_core ({vectors}) done", file=sys.stderr, flush=True)
    return {"recall": recall, "remember": remember}
