"""The vector index's in-process cache of binary vectors (``vectors.bits.Bits``).

The shortlist a cached scan returns must be the one a ``vec0`` scan returns (the ``want``
nearest by Hamming distance; at the cut-off distance the smaller rowids), and the cache must
follow every committed change to the file: made by this object, by another ``VectorIndex``
on the same file, by another process, or by plain SQL on ``vec_items``/``vec_scan`` (the
store's purge, code from before the change log). Skipped without sqlite-vec.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from evomem.adapters.sqlite.driver import load_vec, sqlite
from evomem.adapters.sqlite.purge import purge_vector
from evomem.adapters.vectors import index as vector_index
from evomem.adapters.vectors.bits import Bits
from evomem.adapters.vectors.index import VectorIndex
from evomem.adapters.vectors.quantize import quantize_int8
from tests.test_vector_index import _MISSING  # the same skip: sqlite-vec or a driver that loads it

ROOT = Path(__file__).resolve().parents[1]
DIM = 384


pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


def unit_rows(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def bits_of(v: np.ndarray) -> bytes:
    return np.packbits(v > 0, bitorder="little").tobytes()


def reference(ix: VectorIndex, namespace: str) -> tuple[np.ndarray, np.ndarray]:
    """Every (rowid, bits) of the namespace, as ``vec0`` holds them (read through vec0 itself)."""
    rows = ix._conn().execute("SELECT rowid, embedding FROM vec_scan WHERE namespace = ?", (namespace,)).fetchall()
    rowids = np.array([r for r, _ in rows], dtype=np.int64)
    bits = np.frombuffer(b"".join(b for _, b in rows), np.uint8).reshape(len(rows), DIM // 8)
    return rowids, np.unpackbits(bits, axis=1)


def brute_shortlist(ref: tuple[np.ndarray, np.ndarray], q: np.ndarray, want: int) -> list[int]:
    """The reference shortlist: sorted by (Hamming distance, rowid)."""
    rowids, bits = ref
    dist = (bits != np.unpackbits(np.frombuffer(bits_of(q), np.uint8))).sum(axis=1)
    return rowids[np.lexsort((rowids, dist))[:want]].tolist()


def vec0_distances(ix: VectorIndex, q: np.ndarray, namespace: str, want: int) -> list[float]:
    rows = ix._conn().execute(
        "SELECT distance FROM vec_scan WHERE embedding MATCH vec_bit(?) AND k = ? AND namespace = ? ORDER BY distance",
        (bits_of(q), want, namespace),
    )
    return [r[0] for r in rows]


def hamming(ix: VectorIndex, q: np.ndarray, rowids: list[int]) -> list[float]:
    rows = (
        ix._conn()
        .execute(
            "SELECT s.embedding FROM json_each(?) AS j CROSS JOIN vec_scan AS s ON s.rowid = j.value",
            (json.dumps(rowids),),
        )
        .fetchall()
    )
    qb = np.unpackbits(np.frombuffer(bits_of(q), np.uint8))
    return sorted(float((np.unpackbits(np.frombuffer(b, np.uint8)) != qb).sum()) for (b,) in rows)


def cached_ids(ix: VectorIndex, namespace: str) -> set[int]:
    b = ix._bits[namespace]
    return set(b.rowids[: b.n][b.live[: b.n]].tolist())


@pytest.mark.parametrize("small", [False, True], ids=["thresholds", "tiny-thresholds"])
def test_cached_scan_equals_the_vec0_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small: bool) -> None:
    """Random data in three namespaces, with updates, moves and removals between the searches
    (dead slots, the unsorted tail, rebuilds): the same shortlist and the same results."""
    if small:  # rebuild often: after a few dead slots, a short tail, no spare slots
        for name in ("SPARE", "TAIL", "DEAD"):
            monkeypatch.setattr(Bits, name, 4)
    path = tmp_path / "v.db"
    x = unit_rows(3000, seed=1)
    ns = ["alpha", "beta", "gamma"]
    cached = VectorIndex(path, chunk_size=64)
    plain = VectorIndex(path, cache=False)
    cached.add_many((f"n{i}", ns[i % 3], x[i]) for i in range(2400))
    rng = np.random.default_rng(2)
    queries = [*x[rng.choice(2400, 8)], *unit_rows(8, seed=3)]
    compared = 0
    for round_ in range(4):
        for namespace in ns:
            ref = reference(cached, namespace)
            for q in queries:
                for k in (1, 5, 20, 200):
                    want = k * cached.oversample
                    got = cached._shortlist(cached._conn(), q, namespace, want)
                    # The nearest by (Hamming, rowid), and the very distances vec0 finds: the same
                    # vectors below the cut-off distance, as many at it (vec0 picks other ties).
                    assert sorted(got) == sorted(brute_shortlist(ref, q, want))
                    assert hamming(cached, q, got) == vec0_distances(cached, q, namespace, want)
                    if k in (5, 20) and set(got) == set(plain._shortlist(plain._conn(), q, namespace, want)):
                        compared += 1  # the same shortlist: the same rescored answer
                        assert cached.search(q, namespace, k) == plain.search(q, namespace, k)
        # Change the data between rounds: new notes, re-embedded notes, moved notes, removed notes.
        lo = 2400 + round_ * 150
        cached.add_many((f"n{i}", ns[i % 3], x[i]) for i in range(lo, lo + 150))
        for i in rng.choice(lo, 60, replace=False):
            cached.add(f"n{i}", ns[int(rng.integers(3))], x[int(rng.integers(3000))])
        for i in rng.choice(lo, 40, replace=False):
            cached.remove(f"n{i}")
    assert compared >= 100
    for namespace in ns:
        cached.search(queries[0], namespace, 1)  # catches up with the last round's changes
        assert len(cached_ids(cached, namespace)) == cached.count(namespace)
        assert cached._bits[namespace].rebuilds > 0
    cached.close()
    plain.close()


def test_a_namespace_larger_than_the_shortlist_and_one_smaller(tmp_path: Path) -> None:
    with VectorIndex(tmp_path / "v.db") as ix:
        x = unit_rows(30, seed=4)
        ix.add_many((f"n{i}", "small", x[i]) for i in range(30))
        assert sorted(ix._shortlist(ix._conn(), x[0], "small", 400)) == sorted(cached_ids(ix, "small"))
        assert ix.search(x[0], "nobody", 5) == []
        assert ix._shortlist(ix._conn(), x[0], "nobody", 40) == []


def test_writes_by_another_index_object_are_seen_by_the_next_search(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    x = unit_rows(400, seed=5)
    reader, writer = VectorIndex(path), VectorIndex(path)
    writer.add_many((f"n{i}", "ns", x[i]) for i in range(300))
    assert reader.search(x[7], "ns", 1)[0][0] == "n7"  # loads the namespace
    writer.add("new", "ns", x[350])
    assert reader.search(x[350], "ns", 1)[0][0] == "new"
    writer.add("n7", "ns", x[351])  # re-embedded
    assert reader.search(x[351], "ns", 1)[0][0] == "n7"
    assert "n7" not in [h[0] for h in reader.search(x[7], "ns", 3)]
    writer.add("n8", "other", x[8])  # moved
    assert "n8" not in [h[0] for h in reader.search(x[8], "ns", 10)]
    assert reader.search(x[8], "other", 1)[0][0] == "n8"
    assert writer.remove("new")
    assert "new" not in [h[0] for h in reader.search(x[350], "ns", 50)]
    assert len(cached_ids(reader, "ns")) == reader.count("ns") == 299
    reader.close()
    writer.close()


def test_catch_up_reads_the_changes_ahead_and_the_search_answers_the_same(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    x = unit_rows(400, seed=6)
    reader, writer = VectorIndex(path), VectorIndex(path)
    writer.add_many((f"n{i}", "ns", x[i]) for i in range(300))
    reader.catch_up("ns")  # the first one loads the namespace
    assert len(cached_ids(reader, "ns")) == 300
    (n7,) = reader._conn().execute("SELECT rowid FROM vec_items WHERE node_id = 'n7'").fetchone()
    writer.add("new", "ns", x[350])
    assert writer.remove("n7")
    (new,) = reader._conn().execute("SELECT rowid FROM vec_items WHERE node_id = 'new'").fetchone()
    reader.catch_up("ns")  # what the search would read first, read now
    assert new in cached_ids(reader, "ns") and n7 not in cached_ids(reader, "ns")
    seen = reader._bits["ns"].seen
    assert reader.search(x[350], "ns", 1)[0][0] == "new"
    assert reader._bits["ns"].seen == seen  # the search found nothing left to read
    assert [h[0] for h in reader.search(x[9], "ns", 5)] == [h[0] for h in writer.search(x[9], "ns", 5)]
    reader.close()
    writer.close()


WRITER = """
import json, sys
import numpy as np
from evomem.adapters.vectors.index import VectorIndex
path, adds, removes = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
with VectorIndex(path) as ix:
    ix.add_many((node, "ns", np.asarray(v, dtype=np.float32)) for node, v in adds)
    for node in removes:
        assert ix.remove(node)
"""


def test_writes_by_another_process_are_seen_by_the_next_search(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    x = unit_rows(200, seed=6)
    with VectorIndex(path) as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(100))
        assert ix.search(x[3], "ns", 1)[0][0] == "n3"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "services"), str(ROOT)])}
        adds = [("p150", x[150].tolist()), ("p151", x[151].tolist())]
        subprocess.run(
            [sys.executable, "-c", WRITER, str(path), json.dumps(adds), json.dumps(["n3"])],
            check=True,
            env=env,
            timeout=120,
        )
        assert ix.search(x[150], "ns", 1)[0][0] == "p150"
        assert ix.search(x[151], "ns", 1)[0][0] == "p151"
        assert "n3" not in [h[0] for h in ix.search(x[3], "ns", 100)]
        assert len(cached_ids(ix, "ns")) == 101
        assert ix.stats()["cached"] == {"ns": 101}


def test_plain_sql_writes_are_logged_by_the_triggers(tmp_path: Path) -> None:
    """``SQLiteStore``'s purge (and code from before the log) write the tables directly."""
    path = tmp_path / "v.db"
    x = unit_rows(50, seed=7)
    with VectorIndex(path) as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(50))
        assert ix.search(x[9], "ns", 1)[0][0] == "n9"
        conn = sqlite.connect(str(path), isolation_level=None)
        load_vec(conn)
        rowid = conn.execute("SELECT rowid FROM vec_items WHERE node_id = 'n9'").fetchone()[0]
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM vec_scan WHERE rowid = ?", (rowid,))
        conn.execute("DELETE FROM vec_items WHERE rowid = ?", (rowid,))
        conn.execute("COMMIT")
        assert "n9" not in [h[0] for h in ix.search(x[9], "ns", 50)]
        conn.close()


def test_a_purged_vector_leaves_the_cache_and_the_log_holds_no_vector_bytes(tmp_path: Path) -> None:
    from evomem.adapters.sqlite.store import SQLiteStore

    store = SQLiteStore(tmp_path / "evomem.db")
    x = unit_rows(40, seed=8)
    with VectorIndex(store.path) as ix:
        ix.add_many((f"n{i}", "ns", x[i]) for i in range(40))
        ix.search(x[0], "ns", 1)
        secret = x[0] * -1.0
        ix.add("secret", "ns", secret)
        assert ix.search(secret, "ns", 1)[0][0] == "secret"
        with store._write() as conn:  # the store's purge, in its own transaction
            purge_vector(conn, "secret", vec_loaded=store.vec_loaded)
        assert "secret" not in [h[0] for h in ix.search(secret, "ns", 41)]
        b = ix._bits["ns"]
        needle = np.frombuffer(bits_of(secret), b.dtype)
        assert not (b.words[:, : b.n] == needle[:, None]).all(axis=0).any()  # its bits are zeroed too
        columns = [r[1] for r in ix._conn().execute("PRAGMA table_info(vec_log)")]
        assert columns == ["seq", "item", "namespace"]
    store.close()


OLD_SCHEMA = [  # vec_* as the index wrote them before the change log (schema 1)
    "CREATE TABLE vec_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE vec_items ( rowid INTEGER PRIMARY KEY, node_id TEXT NOT NULL UNIQUE,"
    " namespace TEXT NOT NULL, vector BLOB NOT NULL)",
    "CREATE INDEX vec_items_namespace ON vec_items(namespace)",
    "CREATE VIRTUAL TABLE vec_scan USING vec0(namespace TEXT PARTITION KEY, embedding bit[384])",
    "INSERT INTO vec_meta VALUES ('schema', '1'), ('dim', '384'), ('scan', 'binary'), ('rescore', 'int8')",
]


def _old_add(conn: object, node: str, namespace: str, v: np.ndarray) -> None:
    cur = conn.execute(  # type: ignore[attr-defined]
        "INSERT INTO vec_items(node_id, namespace, vector) VALUES (?, ?, ?)",
        (node, namespace, quantize_int8(v).tobytes()),
    )
    conn.execute(  # type: ignore[attr-defined]
        "INSERT INTO vec_scan(rowid, namespace, embedding) VALUES (?, ?, vec_bit(?))",
        (cur.lastrowid, namespace, bits_of(v)),
    )


def test_a_file_from_before_the_log_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    x = unit_rows(60, seed=9)
    conn = sqlite.connect(str(path), isolation_level=None)
    load_vec(conn)
    for stmt in OLD_SCHEMA:
        conn.execute(stmt)
    for i in range(50):
        _old_add(conn, f"n{i}", "ns", x[i])
    with VectorIndex(path, model="m") as ix:
        meta = dict(ix._conn().execute("SELECT key, value FROM vec_meta"))
        assert meta["log"] == "1" and meta["log_floor"] == "0" and meta["schema"] == "1"
        assert ix.search(x[4], "ns", 1)[0][0] == "n4"
        _old_add(conn, "late", "ns", x[55])  # an old writer after the migration: the triggers log it
        assert ix.search(x[55], "ns", 1)[0][0] == "late"
        ix.add("new", "ns", x[56])
        assert ix.search(x[56], "ns", 1)[0][0] == "new"
    with VectorIndex(path) as ix:  # opening it again changes nothing
        assert ix.count() == 52 and ix.search(x[4], "ns", 1)[0][0] == "n4"
    conn.close()


def test_a_cache_behind_the_compacted_log_reloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_index, "LOG_KEEP", 20)
    path = tmp_path / "v.db"
    x = unit_rows(400, seed=10)
    reader, writer = VectorIndex(path), VectorIndex(path)
    writer.add_many((f"n{i}", "ns", x[i]) for i in range(100))
    reader.search(x[0], "ns", 1)
    for i in range(100, 200):
        writer.add(f"n{i}", "ns", x[i])
    for i in range(0, 100, 2):
        writer.remove(f"n{i}")
    conn = reader._conn()
    floor = int(conn.execute("SELECT value FROM vec_meta WHERE key = 'log_floor'").fetchone()[0])
    assert floor > reader._bits["ns"].seen  # the entries it has not seen are gone
    assert conn.execute("SELECT COUNT(*) FROM vec_log").fetchone()[0] <= 40
    assert reader.search(x[150], "ns", 1)[0][0] == "n150"
    assert "n2" not in [h[0] for h in reader.search(x[2], "ns", 100)]
    assert len(cached_ids(reader, "ns")) == reader.count("ns") == 150
    reader.close()
    writer.close()


def test_a_reused_rowid_is_not_confused(tmp_path: Path) -> None:
    """vec_items gives a new row the largest rowid + 1: removing the last row frees its rowid."""
    x = unit_rows(20, seed=11)
    with VectorIndex(tmp_path / "v.db") as ix:
        ix.add_many((f"n{i}", "a", x[i]) for i in range(10))
        ix.search(x[0], "a", 1)
        ix.search(x[0], "b", 1)
        last = ix._conn().execute("SELECT MAX(rowid) FROM vec_items").fetchone()[0]
        ix.remove("n9")
        ix.add("other", "b", x[15])
        assert ix._conn().execute("SELECT rowid FROM vec_items WHERE node_id = 'other'").fetchone()[0] == last
        assert "n9" not in [h[0] for h in ix.search(x[9], "a", 10)]
        assert all(h[0] != "other" for h in ix.search(x[15], "a", 10))
        assert ix.search(x[15], "b", 1)[0][0] == "other"
        assert cached_ids(ix, "a") == set(range(1, last))


def test_concurrent_writes_and_searches_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    x = unit_rows(600, seed=12)
    ix = VectorIndex(path)
    other = VectorIndex(path)  # a second object on the same file writes too
    ix.add_many((f"n{i}", "ns", x[i]) for i in range(200))
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(t: int, target: VectorIndex) -> None:
        try:
            for i in range(200 + t, 600, 4):
                target.add(f"n{i}", "ns", x[i])
                if i < 400 and i % 3 == 0:  # only the first 200, which no writer adds again
                    target.remove(f"n{i - 200}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def searcher(t: int) -> None:
        try:
            rng = np.random.default_rng(t)
            while not stop.is_set():
                hits = ix.search(x[int(rng.integers(600))], "ns", 10)
                assert len(hits) == 10
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    writers = [threading.Thread(target=writer, args=(t, ix if t % 2 else other)) for t in range(4)]
    searchers = [threading.Thread(target=searcher, args=(t,)) for t in range(3)]
    for t in writers + searchers:
        t.start()
    for t in writers:
        t.join(120)
    stop.set()
    for t in searchers:
        t.join(60)
    assert not errors, errors
    removed = {f"n{i - 200}" for i in range(200, 400) if i % 3 == 0}
    assert ix.count("ns") == 600 - len(removed)
    for i in range(600):
        top = ix.search(x[i], "ns", 1)[0][0]
        assert (top == f"n{i}") == (f"n{i}" not in removed)
    assert len(cached_ids(ix, "ns")) == ix.count("ns")
    ix.close()
    other.close()


def test_reading_the_chunk_tables_equals_reading_through_vec0(tmp_path: Path) -> None:
    """The first load reads ``vec0``'s shadow tables; it must equal what ``vec0`` itself returns
    (partly filled chunks, deleted slots, several namespaces), and fall back to it."""
    x = unit_rows(500, seed=13)
    with VectorIndex(tmp_path / "v.db", chunk_size=32) as ix:
        ix.add_many((f"n{i}", f"ns{i % 3}", x[i]) for i in range(500))
        for i in range(0, 500, 7):
            ix.remove(f"n{i}")
        conn = ix._conn()
        for namespace in ("ns0", "ns1", "ns2", "none"):
            assert ix._chunk_rows(conn, namespace) is not None or namespace == "none"
            fast = ix._load_bits(conn, namespace)
            ref_rows = conn.execute(
                "SELECT rowid, embedding FROM vec_scan WHERE namespace = ? ORDER BY rowid", (namespace,)
            ).fetchall()
            assert fast[0].tolist() == [r for r, _ in ref_rows]
            assert fast[1] == b"".join(b for _, b in ref_rows)
            assert len(fast[0]) == ix.count(namespace)
        fast = ix._load_bits(conn, "ns1")
        ix._chunk_rows = lambda conn, namespace: None  # type: ignore[method-assign]
        slow = ix._load_bits(conn, "ns1")
        assert slow[0].tolist() == fast[0].tolist() and slow[1] == fast[1]
        assert ix.search(x[1], "ns1", 1)[0][0] == "n1"
