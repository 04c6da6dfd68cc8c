"""Per-thread connections to one EvoMem SQLite file, all opened the same way.

    conns = Connections(path, row_factory=driver.sqlite.Row)   # ":memory:", a "file:" URI or a path
    conns.get()                                                 # this thread's connection
    with conns.write() as conn: ...                             # BEGIN IMMEDIATE .. COMMIT / ROLLBACK
    conns.close()

The store (``store``) and the vector index (``evomem.adapters.vectors.index``) share the file,
so they open it alike, here: the library of ``driver`` (one SQLite library per process), a busy
timeout, WAL (switched with a busy retry, below) and ``synchronous = NORMAL`` for files,
``foreign_keys`` and ``secure_delete`` on, and sqlite-vec loaded where it can be.

``:memory:`` becomes a private database file in a temporary folder (in RAM, on ``/dev/shm``, where
there is one), opened like any file and deleted at ``close``. It was a shared-cache in-memory
database, and there a reader and a writer on two threads (the deferred vector write, a search on the
pool thread) meet on table locks, which answer SQLITE_LOCKED at once, without the busy handler:
"database table is locked" reached a caller's ``supersede`` in the linker's training replays.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from evomem.adapters.sqlite import driver

BUSY_TIMEOUT_MS = 15_000
T = TypeVar("T")
#: Values one ``IN (...)`` list holds at most (SQLite limits the placeholders of one statement).
IN_CHUNK = 500
_RAM_DIR = "/dev/shm"  # where a ":memory:" database's scratch file goes, when the folder exists


def in_chunks(values: Sequence[T]) -> Iterator[tuple[Sequence[T], str]]:
    """``values`` ``IN_CHUNK`` at a time, each chunk with its placeholders ("?,?,?") for an ``IN (...)``."""
    for start in range(0, len(values), IN_CHUNK):
        chunk = values[start : start + IN_CHUNK]
        yield chunk, ",".join("?" * len(chunk))


def enable_wal(conn: Any, busy_timeout_ms: int) -> None:
    """Switch the file to WAL, retrying while another connection holds the lock it needs.

    Fix: on a fresh file, ``PRAGMA journal_mode = WAL`` needs an exclusive lock, and when
    another process holds one (it is switching the mode or running the migrations) SQLite
    answers SQLITE_BUSY at once, without calling the busy handler. Two processes opening a
    new file together then failed with "database is locked" (tests/test_migrations.py). We
    retry with a short backoff, for at most ``busy_timeout_ms``, as the busy handler would.
    """
    deadline = time.monotonic() + busy_timeout_ms / 1000
    delay = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except driver.sqlite.OperationalError as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)
            if not busy or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


class Connections:
    """One connection per thread to ``path``, opened with EvoMem's pragmas. Thread-safe."""

    def __init__(
        self,
        path: str,
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        row_factory: Callable[..., Any] | None = None,
        what: str = "database",
    ) -> None:
        self.uri = False
        self._scratch: str | None = None  # the temporary folder of a ":memory:" database
        if path == ":memory:":
            self._scratch = tempfile.mkdtemp(prefix="evomem-memory-", dir=_RAM_DIR if os.path.isdir(_RAM_DIR) else None)
            path = os.path.join(self._scratch, "memory.db")
            # removed at close, or when this object is collected, or at exit, whichever comes first
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._scratch, True)
        elif path.startswith("file:"):
            self.uri = True
        else:
            path = str(Path(path).expanduser())
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # nothing outlives the process: a ":memory:" scratch file or an in-memory URI of the caller's
        self.memory = self._scratch is not None or (self.uri and "mode=memory" in path)
        self._in_ram_uri = self.uri and "mode=memory" in path
        self.busy_timeout_ms = busy_timeout_ms
        self.row_factory = row_factory
        self.what = what
        self.vec_loaded = False
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False
        self._keepalive = self.get()  # in-memory databases live as long as one connection does

    def get(self) -> Any:
        """This thread's connection, opened on first use."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise RuntimeError(f"{self.what} is closed")
        conn = driver.sqlite.connect(
            self.path,
            uri=self.uri,
            timeout=self.busy_timeout_ms / 1000,
            isolation_level=None,  # callers issue BEGIN/COMMIT themselves
            check_same_thread=False,
        )
        if self.row_factory is not None:
            conn.row_factory = self.row_factory
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            if not self._in_ram_uri:
                enable_wal(conn, self.busy_timeout_ms)
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA secure_delete = ON")
            # sqlite-vec in every connection where it can load: the vector index's tables live
            # in the store's file, and a purge must clear a node's vector in its transaction.
            self.vec_loaded = driver.load_vec(conn)
        except BaseException:
            conn.close()
            raise
        self._local.conn = conn
        with self._lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def write(self) -> Iterator[Any]:
        """A write transaction that holds the write lock from its first statement."""
        conn = self.get()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    def checkpoint(self, timeout_ms: int | None = None) -> bool:
        """Copy the WAL into the database file and truncate it. False if a reader or a writer
        blocked it. A TRUNCATE checkpoint waits for them with the busy handler: ``timeout_ms``
        bounds that wait (the connection's busy timeout otherwise), restored afterwards."""
        if self._in_ram_uri:
            return True
        conn = self.get()
        if timeout_ms is not None:
            conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
        try:
            busy, log, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except driver.sqlite.OperationalError:  # "database is locked": blocked, like busy = 1
            return False
        finally:
            if timeout_ms is not None:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        # TRUNCATE that finishes leaves an empty WAL: (0, 0, 0). busy = 1, or frames left
        # uncopied, mean a reader's snapshot or a writer kept it from finishing.
        return busy == 0 and log in (0, -1) and done in (0, -1)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._all = self._all, []
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
        self._local = threading.local()
        if self._scratch is not None:
            self._cleanup()
