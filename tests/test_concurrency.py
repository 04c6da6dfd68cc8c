"""Many writers superseding the same head, on one SQLite file.

Every writer names the *original root* in ``supersedes``; the store must re-target each
write to the head of the moment under its write lock. The result must be one linear
chain: every write kept, versions 1..n with no gap or duplicate, exactly one head.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import tempfile
import threading
from contextlib import closing
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evomem.adapters.sqlite.driver import sqlite as sqlite3
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService

ROOT_TEXT = "The ledger stores balances in Postgres."


def make_root(path: Path, chain: int = 0) -> str:
    """The root of a chain; each chain its own text (an identical note moments later would be
    answered with the first one: the dedupe window)."""
    store = SQLiteStore(path)
    try:
        return MemoryService.local(store).remember(ROOT_TEXT if chain == 0 else f"{ROOT_TEXT} (chain {chain})").node.id
    finally:
        store.close()


def writer(path: str, root_id: str, writer_no: int, ops: int, start: object = None) -> list[str]:
    """One writer with its own store (its own connections): ``ops`` supersedes of the root."""
    store = SQLiteStore(path)
    try:
        service = MemoryService.local(store)
        if start is not None:
            start.wait()  # type: ignore[attr-defined]
        ids = []
        for op in range(ops):
            out = service.remember(f"Writer {writer_no} moved the ledger, step {op}.", supersedes=root_id)
            assert out.node.chain_root == root_id
            ids.append(out.node.id)
        return ids
    finally:
        store.close()


def _process_writer(path: str, root_id: str, writer_no: int, ops: int, start: object, results: object) -> None:
    try:
        results.put((writer_no, writer(path, root_id, writer_no, ops, start)))  # type: ignore[attr-defined]
    except BaseException as exc:  # report, so the parent fails with the cause
        results.put((writer_no, repr(exc)))  # type: ignore[attr-defined]
        raise


def assert_one_linear_chain(path: Path, root_id: str, written: list[str]) -> None:
    """The file holds exactly the root plus every write, as one linear chain."""
    expected = 1 + len(written)
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute(
            "SELECT id, version, supersedes, superseded_by, status, chain_root FROM nodes ORDER BY version"
        ).fetchall()
    assert len(rows) == expected, "no write lost, none duplicated"
    assert {r[0] for r in rows} == {root_id, *written}
    assert [r[1] for r in rows] == list(range(1, expected + 1)), "versions 1..n, contiguous"
    assert {r[5] for r in rows} == {root_id}, "one chain"
    assert rows[0][0] == root_id and rows[0][2] is None
    for prev, cur in itertools.pairwise(rows):
        assert cur[2] == prev[0], "each version supersedes the one before it"
        assert prev[3] == cur[0]
        assert prev[4] == "superseded"
    assert rows[-1][3] is None and rows[-1][4] == "active", "exactly one head, in force"
    assert sum(r[3] is None for r in rows) == 1
    store = SQLiteStore(path)
    try:
        assert store.check_invariants() == []
        assert store.stats().chains == 1
    finally:
        store.close()


def run_threads(path: Path, root_id: str, threads: int, ops: int) -> list[str]:
    start = threading.Barrier(threads)
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def run(no: int) -> None:
        try:
            results[no] = writer(str(path), root_id, no, ops, start)
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=run, args=(no,)) for no in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    assert not errors, errors
    assert sorted(results) == list(range(threads))
    return [i for ids in results.values() for i in ids]


def test_eight_threads_with_their_own_stores_supersede_the_root_into_one_linear_chain(tmp_path):
    path = tmp_path / "threads.db"
    root_id = make_root(path)

    written = run_threads(path, root_id, threads=8, ops=25)

    assert len(written) == 8 * 25
    assert_one_linear_chain(path, root_id, written)


def test_each_writer_sees_its_own_writes_in_increasing_versions(tmp_path):
    path = tmp_path / "order.db"
    root_id = make_root(path)
    written = run_threads(path, root_id, threads=4, ops=10)
    store = SQLiteStore(path)
    try:
        for no in range(4):
            mine = [n for n in store.get_many(written).values() if n.raw_text.startswith(f"Writer {no} ")]
            mine.sort(key=lambda n: int(n.raw_text.rsplit(" ", 1)[1].rstrip(".")))
            versions = [n.version for n in mine]
            assert len(versions) == 10
            assert versions == sorted(versions), "a writer's later write is a later version"
    finally:
        store.close()


def test_four_processes_supersede_the_root_into_one_linear_chain(tmp_path):
    path = tmp_path / "processes.db"
    root_id = make_root(path)
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(4)
    results = ctx.Queue()
    procs = [ctx.Process(target=_process_writer, args=(str(path), root_id, no, 25, start, results)) for no in range(4)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert all(isinstance(v, list) for v in got.values()), got
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]

    written = [i for ids in got.values() for i in ids]
    assert len(written) == 4 * 25
    assert_one_linear_chain(path, root_id, written)


@settings(max_examples=6, deadline=None)
@given(threads=st.integers(2, 6), ops=st.integers(1, 8), chains=st.integers(1, 2))
def test_any_number_of_threaded_writers_keeps_every_chain_linear(threads, ops, chains):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hyp.db"
        roots = [make_root(path, i) for i in range(chains)]
        start = threading.Barrier(threads)
        errors: list[BaseException] = []
        written: dict[str, list[str]] = {r: [] for r in roots}
        lock = threading.Lock()

        def run(no: int) -> None:
            try:
                root = roots[no % chains]
                ids = writer(str(path), root, no, ops, start)
                with lock:
                    written[root].extend(ids)
            except BaseException as exc:
                errors.append(exc)

        pool = [threading.Thread(target=run, args=(no,)) for no in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join(timeout=120)
        assert not errors, errors

        store = SQLiteStore(path)
        try:
            assert store.check_invariants() == []
            assert store.stats().chains == chains
            for root in roots:
                chain = store.chain(store.heads([root])[root].id, 10_000)
                assert [n.version for n in chain] == list(range(len(chain), 0, -1))
                assert {n.id for n in chain} == {root, *written[root]}
                assert sum(n.status == "active" for n in chain) == 1
        finally:
            store.close()
