"""A ":memory:" database behaves like a file under threads: a reader and a writer on two threads wait
for each other (the busy handler) instead of failing with "database table is locked", which a
shared-cache in-memory database answered at once (the deferred vector write against a search)."""

from __future__ import annotations

import os
import threading

from evomem.adapters.sqlite import driver
from evomem.adapters.sqlite.conn import Connections


def test_a_reader_and_writers_on_other_threads_never_see_a_locked_table() -> None:
    db = Connections(":memory:")
    with db.write() as conn:
        conn.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, v TEXT)")
        conn.executemany("INSERT INTO t (v) VALUES (?)", [(str(i),) for i in range(2000)])
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                cur = db.get().execute("SELECT v FROM t")
                for _ in range(50):  # a statement left open while the writers commit
                    cur.fetchone()
                cur.close()
        except BaseException as exc:
            errors.append(exc)

    def write(k: int) -> None:
        try:
            for i in range(100):
                with db.write() as conn:
                    conn.execute("INSERT INTO t (v) VALUES (?)", (f"w{k}-{i}",))
        except BaseException as exc:
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(k,)) for k in range(2)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    reader.join()
    assert not errors, errors
    assert db.get().execute("SELECT count(*) FROM t").fetchone()[0] == 2200
    db.close()


def test_a_memory_database_leaves_nothing_behind_when_closed() -> None:
    db = Connections(":memory:")
    folder = os.path.dirname(db.path)
    assert os.path.exists(db.path)
    db.get().execute("CREATE TABLE t (i INTEGER)")
    db.close()
    assert not os.path.exists(folder)


def test_two_memory_databases_are_private() -> None:
    a, b = Connections(":memory:"), Connections(":memory:")
    a.get().execute("CREATE TABLE only_in_a (i INTEGER)")
    names = {r[0] for r in b.get().execute("SELECT name FROM sqlite_master")}
    assert "only_in_a" not in names
    assert driver.sqlite is not None
    a.close()
    b.close()
