"""Which SQLite library opens EvoMem's files, and loading sqlite-vec into it.

    from evomem.adapters.sqlite import driver
    driver.select_driver(None)                           # the composition root, once, before any file
    conn = driver.sqlite.connect(path)                   # a sqlite3-compatible module, read at call time
    vec_loaded = driver.load_vec(conn)                   # True when sqlite-vec is now usable

One library for every connection to one file, in one process. The store (nodes, FTS5) and
the vector index (sqlite-vec) share the file, so they must open it with the same SQLite:
two copies of SQLite in one process each keep their own POSIX locks, and closing a
connection in one silently drops the other's locks (a corrupted file under concurrency).

The choice, made once per process (``select_driver``, called by the composition root with the
``store.sqlite_driver`` setting, ``EVOMEM_SQLITE_DRIVER``; or, in a process that never calls
it, the default, the first time a connection needs it):

1. ``sqlean`` (the ``sqlean.py`` wheel, a default dependency): a drop-in ``sqlite3`` with
   its own SQLite 3.50, FTS5 and extension loading. Python's own ``sqlite3`` in pyenv and
   python.org builds cannot load extensions, so this is what makes vectors possible there.
2. Python's own ``sqlite3`` otherwise (always present; vectors only where it can load
   extensions, e.g. Debian's python3).

``select_driver("sqlite3")`` forces the standard library's module (to check the fallback).
Once a library is in use, choosing another is an error, never a silent switch. Code here reads
``driver.sqlite`` when it runs, never at import, so the choice holds everywhere. Anything that
opens an EvoMem file beside a running store (tests, tools) should use ``sqlite`` from here
rather than ``sqlite3``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from types import ModuleType
from typing import Any

DRIVERS = ("sqlean", "sqlite3")
VECTORS_HINT = (
    "install evomem-mcp with its default dependencies: pip install 'evomem-mcp' "
    "(a lite install leaves them out; the same as: pip install sqlean.py sqlite-vec numpy)"
)

_chosen: ModuleType | None = None


def select_driver(name: str | None = None) -> ModuleType:
    """Choose the SQLite library of this process: ``name`` (one of ``DRIVERS``), or None for
    the one in use, else the default (``sqlean`` when installed, else ``sqlite3``). Call it
    before any file is opened: once a library is in use, naming another raises ``RuntimeError``
    (one library per process, see above). Returns the module."""
    global _chosen
    if name is not None and name not in DRIVERS:
        raise ValueError(f"SQLite driver must be one of {', '.join(DRIVERS)}, got {name!r}")
    if _chosen is None:
        _chosen = importlib.import_module(name) if name else _default()
    elif name and _chosen.__name__ != name:
        raise RuntimeError(
            f"this process already opens its SQLite files with {_chosen.__name__}; it cannot switch to "
            f"{name} (one SQLite library per process): choose the driver before any file is opened"
        )
    return _chosen


def _default() -> ModuleType:
    try:
        return importlib.import_module("sqlean")
    except ImportError:
        return importlib.import_module("sqlite3")


def __getattr__(name: str) -> ModuleType:
    """``driver.sqlite``: the sqlite3-compatible module every EvoMem connection uses in this
    process (the default, chosen now, when ``select_driver`` was never called)."""
    if name == "sqlite":
        return _chosen if _chosen is not None else select_driver(None)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def can_load_extensions() -> bool:
    probe = select_driver(None).connect(":memory:")
    try:
        return hasattr(probe, "enable_load_extension")
    finally:
        probe.close()


@functools.cache
def vec_path() -> str | None:
    """sqlite-vec's loadable extension (``sqlite_vec.loadable_path()``), found without importing
    the package: its ``__init__`` imports numpy, about 0.15 s of a server's start."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.normpath(os.path.join(next(iter(spec.submodule_search_locations)), "vec0"))


@functools.cache
def vec_problem() -> str | None:
    """Why sqlite-vec cannot be loaded here (None when it can). Cached: checked once (the library
    it is checked with is then in use, so it cannot change)."""
    if not can_load_extensions():
        return f"Python's {select_driver(None).__name__} here cannot load SQLite extensions; " + VECTORS_HINT
    path = vec_path()
    if path is None:
        return "sqlite-vec is not installed; " + VECTORS_HINT
    probe = select_driver(None).connect(":memory:")
    try:
        probe.enable_load_extension(True)
        probe.load_extension(path)
    except Exception as exc:  # a wheel for another platform, a broken install
        return f"sqlite-vec did not load ({exc}); " + VECTORS_HINT
    finally:
        probe.close()
    return None


def load_vec(conn: Any) -> bool:
    """Load sqlite-vec into ``conn`` when this process can. False (and nothing done) otherwise."""
    path = vec_path()
    if path is None or vec_problem() is not None:
        return False
    conn.enable_load_extension(True)
    try:
        conn.load_extension(path)
    finally:
        conn.enable_load_extension(False)
    return True
