"""An approximate vector search (HNSW, usearch) per namespace, beside the binary scan: ``EVOMEM_VECTOR_SEARCH``.

    graphs = Graphs(index._conn, dim=384, model=name, mode="auto", size_from=20_000, folder="<db>.hnsw")
    graphs.nearest(conn, "default", unit, k=20)    # rowids, or None: the scan answers (not built yet)
    graphs.consider("default", 120_000)            # auto: starts the background build from the size on

SQLite stays the truth, as for the bits copy (bits.py): a graph is a derived copy of one
namespace's ``vec_items`` int8 vectors (the rescoring vectors, scaled per vector: cosine does not
see the scale, so usearch's ``i8`` cosine over them is the rescoring's own distance), keyed by
``vec_items`` rowid, and it follows the file through ``vec_log`` exactly as the bits do: before
each search the entries past the graph's position are read and their rowids removed and added
again with their current vector when they are still in the namespace (another process's
writes, a purge, a move to another namespace included). A graph further behind than the log
keeps (compaction), or more than ``REBUILD_GAP`` changes behind, is dropped and built again;
the scan answers meanwhile. One graph per namespace: no namespace can leak into another's
answers (the rescoring reads ``vec_items`` by rowid and namespace again).

Building: on a thread of its own (the scan answers until it is done): the log position first,
then the namespace's rows by rowid in batches (``BATCH``), then the entries logged meanwhile.
Saved beside the file (``<db>.hnsw/<namespace hex>-<position>.usearch`` and a JSON with the
position, the count, the model and the format; written to a temporary name and renamed, the
JSON last, under a lock on the folder that other processes' saves and loads take too) after a
build and at close when it changed, so a restart does not build again. A
saved graph is trusted only as far as it checks: its format, dimension and model, a position the
log still covers, and after catching up from it the namespace's count; anything else (a missing,
stale, corrupt or foreign file) is one warning and a rebuild.

Purge: a removed vector's slot is overwritten at once (usearch reuses freed slots first: by the
rows added in the same catch-up, else by throwaway vectors, added and removed again), so the
removed bytes leave memory; a graph that saw a removal deletes its saved file (saved again at
close), so they leave the disk too.

Fallback: usearch missing, or a graph that fails to build, load or search: one warning, then
the binary scan, as without this setting. Nothing is lost: the graph holds nothing SQLite has not.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evomem.adapters.vectors.log import LOG_STATE, changed_items

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

FORMAT = "1"
MODES = ("auto", "scan", "hnsw")
#: ``auto``: a namespace of at least this many vectors is searched through its graph (settings:
#: ``EVOMEM_HNSW_FROM``; docs/BENCHMARKS.md, profile.md "speed19").
HNSW_FROM = 20_000
#: HNSW settings (usearch): links per node, the candidate lists while building and searching.
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 160
#: A search asks the graph for this many times ``k`` (rescored exactly afterwards).
WANT = 2
#: A graph more than this many changed vectors behind is built again (the scan answers meanwhile).
REBUILD_GAP = 4096
#: Rows read and added per step of a build: a close waits for at most one step (~1 s at 1M vectors).
BATCH = 2_000
#: Keys of the throwaway vectors that overwrite removed slots (never a rowid: SQLite's are < 2**63).
SCRUB_KEY = 2**63
#: The file a save or a load holds in the folder (``_folder_lock``).
LOCK_FILE = ".lock"


@contextlib.contextmanager
def _folder_lock(folder: Path, shared: bool = False) -> Iterator[None]:
    """Across processes, one save at a time per folder (its file, its JSON and the removal of the older
    files as one step) and no save during a load (a JSON and the file it names read together):
    ``fcntl.flock`` on ``LOCK_FILE``, released with the file, so a crash holds nothing. Without
    ``fcntl`` or a writable folder, no lock (a lost race is then one warning and a rebuild)."""
    try:
        import fcntl

        handle = open(folder / LOCK_FILE, "a+b")  # noqa: SIM115 (closed below, which releases the lock)
    except (ImportError, OSError):
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield


def _replay(conn: Any, namespace: str, graph: Graph, items: list[int]) -> None:
    """The logged ``items`` applied to ``graph``: each removed, and added again with its current vector
    when it is still in ``namespace`` (idempotent, as the bits' replay)."""
    rows = conn.execute(
        "SELECT i.rowid, i.vector FROM json_each(?) AS j CROSS JOIN vec_items AS i ON i.rowid = j.value"
        " WHERE i.namespace = ?",
        (json.dumps(items), namespace),
    ).fetchall()
    graph.apply(items, rows)


def usearch_problem() -> str | None:
    """Why no graph can be built here (None when it can). Imports usearch, onnxruntime first."""
    import importlib.util

    try:
        # onnxruntime imported after usearch (2.26, its numkong kernels) kills the process
        # (SIGSEGV, on this project's machine): where it is installed it is imported first, so
        # that the embedding model can load at any time after a graph exists.
        if importlib.util.find_spec("onnxruntime") is not None:
            import onnxruntime  # noqa: F401
        import usearch.index  # noqa: F401
    except Exception as exc:  # an ImportError, or a wheel that does not load on this CPU
        return f"usearch cannot be imported ({exc}); pip install usearch"
    return None


class Graph:
    """One namespace's HNSW graph over its int8 vectors, keyed by rowid. ``lock`` guards every use."""

    def __init__(self, dim: int, index: Any = None) -> None:
        from usearch.index import Index

        self.dim = dim
        self.index = index or Index(
            ndim=dim,
            metric="cos",
            dtype="i8",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )
        self.seen = 0  # the vec_log position it covers
        self.saved = -1  # the position of its file on disk (-1: none, or one it has moved past)
        self.removed = False  # it lost a vector since it was saved (the file must go)
        self.lock = threading.Lock()

    @property
    def size(self) -> int:
        return len(self.index)

    def add(self, keys: np.ndarray, vectors: np.ndarray, threads: int = 1) -> None:
        if len(keys):
            self.index.add(keys, vectors, threads=threads)

    def apply(self, changed: list[int], rows: list[tuple[int, bytes]]) -> None:
        """The ``changed`` rowids now hold ``rows``' vectors, or are gone from the namespace.

        usearch reuses freed slots first, so the added rows overwrite the removed vectors' bytes;
        the slots left over are overwritten by throwaway vectors (added, then removed again), so
        a removed vector leaves memory at once. Adding into a freed slot costs more than an add
        (~4 ms against ~0.4 at 100k vectors, usearch 2.26): the price of a removal either way, as
        the next add would take the slot otherwise."""
        import numpy as np

        gone = [r for r in changed if r in self.index]
        for r in gone:
            self.index.remove(r)
        if rows:
            keys = np.array([r[0] for r in rows], dtype=np.uint64)
            vecs = np.frombuffer(b"".join(r[1] for r in rows), np.int8).reshape(len(rows), self.dim)
            self.index.add(keys, vecs, threads=1)  # usearch's default starts a thread per core per call
        left = len(gone) - len(rows)
        if left > 0:
            scrub = np.arange(SCRUB_KEY, SCRUB_KEY + left, dtype=np.uint64)
            noise = np.random.default_rng(gone).integers(-127, 128, (left, self.dim), dtype=np.int8)
            self.index.add(scrub, noise, threads=1)
            for key in scrub.tolist():
                self.index.remove(key)
        if gone:
            self.removed = True

    def nearest(self, query: np.ndarray, want: int) -> list[int]:
        """The rowids of the ``want`` nearest vectors by cosine (approximate: the graph's recall)."""
        if not len(self.index):
            return []
        self.index.expansion_search = max(EXPANSION_SEARCH, want)
        return self.index.search(query, min(want, len(self.index)), threads=1).keys.tolist()


class Graphs:
    """The graphs of an index's namespaces: built on threads, followed through ``vec_log``, saved in ``folder``."""

    def __init__(
        self,
        connect: Callable[[], Any],
        *,
        dim: int,
        model: str | None,
        mode: str = "auto",
        size_from: int = HNSW_FROM,
        folder: str | None = None,
        threads: int | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"vector search must be one of {', '.join(MODES)}, got {mode!r}")
        if size_from < 0:
            raise ValueError("size_from must be 0 or more")
        self.connect, self.dim, self.model = connect, dim, model
        # A build adds on half the cores (one on this project's 2-core machine): the searches keep the rest.
        self.mode, self.size_from = mode, size_from
        self.threads = threads if threads is not None else max(1, (os.cpu_count() or 1) // 2)
        self.folder = Path(folder) if folder else None
        self._graphs: dict[str, Graph] = {}
        self._building: dict[str, threading.Thread] = {}
        self._failed: set[str] = set()  # namespaces whose graph broke: scanned from then on (one warning)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # usearch (and onnxruntime before it) imported when a namespace first wants a graph, not at
        # start-up: a server that never gets there never pays for the imports.
        self.problem: str | None = None
        self._checked = mode == "scan"
        self.build_s: dict[str, float] = {}  # the last build's (or load's) seconds per namespace, for the benches

    @property
    def off(self) -> bool:
        return self.mode == "scan" or self.problem is not None

    def wanted(self, size: int) -> bool:
        return not self.off and (self.mode == "hnsw" or size >= self.size_from)

    def consider(self, namespace: str, size: int) -> None:
        """The scan answered ``namespace`` (``size`` vectors): start its graph's build if it wants one."""
        if not self.wanted(size) or namespace in self._failed or self._stop.is_set():
            return
        if not self._checked:
            self._checked = True
            self.problem = usearch_problem()
            if self.problem is not None:
                log.warning("vector search: %s; the binary scan answers", self.problem)
                return
        with self._lock:
            if namespace in self._graphs or namespace in self._building:
                return
            thread = threading.Thread(target=self._build, args=(namespace,), name="evomem-hnsw", daemon=True)
            self._building[namespace] = thread
        thread.start()

    def ready(self, namespace: str) -> bool:
        return namespace in self._graphs

    def wait(self, namespace: str, timeout: float | None = None) -> bool:
        """Wait for ``namespace``'s build (tests, benches); True when its graph answers."""
        thread = self._building.get(namespace)
        if thread is not None:
            thread.join(timeout)
        return self.ready(namespace)

    # ------------------------------------------------------------------ search

    def nearest(self, conn: Any, namespace: str, unit: np.ndarray, k: int) -> list[int] | None:
        """The rowids of about the ``WANT * k`` nearest vectors of ``namespace``, after every change
        committed before the call; None when no graph answers (the scan does)."""
        graph = self._graphs.get(namespace)
        if graph is None:
            return None
        from evomem.adapters.vectors.quantize import quantize_int8

        try:
            with graph.lock:
                if not self._catch_up(conn, namespace, graph):
                    return None
                return graph.nearest(quantize_int8(unit), WANT * k)
        except Exception as exc:
            self._broken(namespace, f"its graph failed ({exc})")
            return None

    def catch_up(self, conn: Any, namespace: str) -> bool:
        """``namespace``'s graph brought up to date now; False when it has none (the bits are used)."""
        graph = self._graphs.get(namespace)
        if graph is None:
            return False
        try:
            with graph.lock:
                return self._catch_up(conn, namespace, graph)
        except Exception as exc:
            self._broken(namespace, f"its graph failed ({exc})")
            return False

    def _catch_up(self, conn: Any, namespace: str, graph: Graph) -> bool:
        """Apply the log past ``graph.seen`` (under ``graph.lock``). False, and the graph dropped and
        rebuilt on a thread, when the log no longer covers it or it is ``REBUILD_GAP`` behind."""
        floor, top = conn.execute(LOG_STATE).fetchone()
        top = max(top or 0, floor)
        if graph.seen >= floor and top > graph.seen:
            items = changed_items(conn, namespace, graph.seen)
            if len(items) <= REBUILD_GAP and conn.execute(LOG_STATE).fetchone()[0] <= graph.seen:
                _replay(conn, namespace, graph, items)
                graph.seen = top
                if graph.removed and graph.saved >= 0:
                    self._drop_file(namespace, graph)
                return True
        elif graph.seen >= floor:
            return True
        with self._lock:
            if self._graphs.get(namespace) is graph:
                del self._graphs[namespace]
        log.info("vector search: the graph of %r fell behind the log; rebuilding it (the scan answers)", namespace)
        self.consider(namespace, self.size_from if self.mode == "auto" else 0)
        return False

    def _broken(self, namespace: str, why: str) -> None:
        with self._lock:
            self._graphs.pop(namespace, None)
            first = namespace not in self._failed
            self._failed.add(namespace)
        if first:
            log.warning("vector search: namespace %r: %s; the binary scan answers", namespace, why)

    # ------------------------------------------------------------------ build, load, save

    def _build(self, namespace: str) -> None:
        import time

        t0 = time.perf_counter()
        try:
            conn = self.connect()
            graph = self._load(conn, namespace)
            if graph is None:
                graph = self._fresh(conn, namespace)
            if graph is None:  # stopped
                return
            with graph.lock:
                if not self._catch_up_fully(conn, namespace, graph):
                    return
                if graph.saved != graph.seen:
                    self._save(namespace, graph)
            with self._lock:
                if not self._stop.is_set():
                    self._graphs[namespace] = graph
            self.build_s[namespace] = round(time.perf_counter() - t0, 2)
        except Exception as exc:
            self._broken(namespace, f"its graph could not be built ({exc})")
        finally:
            with self._lock:
                self._building.pop(namespace, None)

    def _catch_up_fully(self, conn: Any, namespace: str, graph: Graph) -> bool:
        """A new or loaded graph brought up to the log (a build can fall far behind on a busy file)."""
        for _ in range(8):
            floor, top = conn.execute(LOG_STATE).fetchone()
            if graph.seen < floor:
                return False
            if max(top or 0, floor) <= graph.seen:
                return True
            _replay(conn, namespace, graph, changed_items(conn, namespace, graph.seen))
            graph.seen = max(top or 0, floor)
        return (conn.execute(LOG_STATE).fetchone()[1] or 0) <= graph.seen

    def _fresh(self, conn: Any, namespace: str) -> Graph | None:
        """A graph of ``namespace`` built from its rows; its position read first (what changes
        meanwhile is applied again from the log). None when the index closes meanwhile."""
        import numpy as np

        graph = Graph(self.dim)
        floor, top = conn.execute(LOG_STATE).fetchone()
        last = -1
        while True:
            if self._stop.is_set():
                return None
            rows = conn.execute(
                "SELECT rowid, vector FROM vec_items WHERE namespace = ? AND rowid > ? ORDER BY rowid LIMIT ?",
                (namespace, last, BATCH),
            ).fetchall()
            if not rows:
                break
            keys = np.array([r[0] for r in rows], dtype=np.uint64)
            vecs = np.frombuffer(b"".join(r[1] for r in rows), np.int8).reshape(len(rows), self.dim)
            graph.add(keys, vecs, self.threads)
            last = rows[-1][0]
        graph.seen = max(top or 0, floor)
        return graph

    def _paths(self, namespace: str) -> tuple[Path, str] | None:
        if self.folder is None:
            return None
        return self.folder / f"{namespace.encode().hex()}.json", namespace.encode().hex()

    def _load(self, conn: Any, namespace: str) -> Graph | None:
        """The saved graph of ``namespace`` if it checks (module docstring); else None, with one warning."""
        paths = self._paths(namespace)
        if paths is None or not paths[0].exists():
            return None
        meta_path, _ = paths
        try:
            with _folder_lock(self.folder, shared=True):  # type: ignore[arg-type]  # no save in between
                meta = json.loads(meta_path.read_text())
                want = {"format": FORMAT, "dim": self.dim, "model": self.model, "namespace": namespace}
                wrong = [k for k, v in want.items() if meta.get(k) != v]
                if wrong:
                    raise ValueError(f"it was made with another {', '.join(wrong)}")
                floor, top = conn.execute(LOG_STATE).fetchone()
                seq = int(meta["seq"])
                if not floor <= seq <= max(top or 0, floor):
                    raise ValueError(f"its log position {seq} is outside the log's ({floor}..{top})")
                file = self.folder / meta["file"]  # type: ignore[operator]
                if file.stat().st_size != meta["bytes"]:
                    raise ValueError("its file has another size than it says")
                from usearch.index import Index

                index = Index(
                    ndim=self.dim,
                    metric="cos",
                    dtype="i8",
                    connectivity=CONNECTIVITY,
                    expansion_add=EXPANSION_ADD,
                    expansion_search=EXPANSION_SEARCH,
                )
                index.load(str(file))
            if index.ndim != self.dim or len(index) != int(meta["count"]):
                raise ValueError("its contents do not match what it says")
            graph = Graph(self.dim, index)
            graph.seen = graph.saved = seq
            with graph.lock:
                if not self._catch_up_fully(conn, namespace, graph):
                    raise ValueError("the log moved past it while it caught up")
            count = conn.execute("SELECT COUNT(*) FROM vec_items WHERE namespace = ?", (namespace,)).fetchone()[0]
            if len(index) != count:
                raise ValueError(f"it holds {len(index):,} vectors where the file has {count:,}")
            return graph
        except Exception as exc:
            log.warning("vector search: the saved graph of %r is not used (%s); building it again", namespace, exc)
            return None

    def _save(self, namespace: str, graph: Graph) -> None:
        """Write ``graph`` (under its lock) beside the file: the graph, then its JSON, each renamed into place."""
        paths = self._paths(namespace)
        if paths is None:
            return
        meta_path, stem = paths
        try:
            self.folder.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
            name = f"{stem}-{graph.seen}.usearch"
            tmp = self.folder / f".{name}.{os.getpid()}.{threading.get_ident()}"  # type: ignore[operator]
            graph.index.save(str(tmp))
            with _folder_lock(self.folder):  # type: ignore[arg-type]  # another process's save waits
                os.replace(tmp, self.folder / name)  # type: ignore[operator]
                meta = {
                    "format": FORMAT,
                    "dim": self.dim,
                    "model": self.model,
                    "namespace": namespace,
                    "seq": graph.seen,
                    "count": len(graph.index),
                    "file": name,
                    "bytes": (self.folder / name).stat().st_size,  # type: ignore[operator]
                }
                tmp_meta = meta_path.with_name(f".{meta_path.name}.{os.getpid()}.{threading.get_ident()}")
                tmp_meta.write_text(json.dumps(meta))
                os.replace(tmp_meta, meta_path)
                for old in self.folder.glob(f"{stem}-*.usearch"):  # type: ignore[union-attr]
                    if old.name != name:
                        old.unlink(missing_ok=True)
            graph.saved, graph.removed = graph.seen, False
        except OSError as exc:
            log.warning(
                "vector search: could not save the graph of %r (%s); it is built again at the next start",
                namespace,
                exc,
            )

    def _drop_file(self, namespace: str, graph: Graph) -> None:
        """The saved graph deleted (it holds vectors removed since): the removed bytes leave the disk
        now; ``close`` saves the graph again. Cheaper than a save, which would hold the graph's
        lock (searches wait) for the whole write."""
        paths = self._paths(namespace)
        if paths is None:
            return
        meta_path, stem = paths
        with _folder_lock(self.folder):  # type: ignore[arg-type]
            meta_path.unlink(missing_ok=True)
            for old in self.folder.glob(f"{stem}-*.usearch"):  # type: ignore[union-attr]
                old.unlink(missing_ok=True)
        graph.saved = -1

    def close(self) -> None:
        """Stop the builds, save the graphs that changed since their file, forget them."""
        self._stop.set()
        for thread in list(self._building.values()):
            thread.join(timeout=30)
        with self._lock:
            graphs, self._graphs = self._graphs, {}
        for namespace, graph in graphs.items():
            with graph.lock:
                with contextlib.suppress(Exception):  # what others wrote, first: their removals too
                    self._catch_up(self.connect(), namespace, graph)
                if graph.saved != graph.seen:
                    self._save(namespace, graph)

    def stats(self) -> dict[str, int]:
        return {ns: g.size for ns, g in sorted(self._graphs.items())}
