"""Which SQLite library opens EvoMem's files, and loading sqlite-vec into it.

    from evomem.adapters.sqlite.driver import sqlite     # a sqlite3-compatible module
    conn = sqlite.connect(path)
    vec_loaded = load_vec(conn)                          # True when sqlite-vec is now usable

One library for every connection to one file, in one process. The store (nodes, FTS5) and
the vector index (sqlite-vec) share the file, so they must open it with the same SQLite:
two copies of SQLite in one process each keep their own POSIX locks, and closing a
connection in one silently drops the other's locks (a corrupted file under concurrency).

The choice, made once at import:

1. ``sqlean`` (the ``sqlean.py`` wheel, a default dependency): a drop-in ``sqlite3`` with
   its own SQLite 3.50, FTS5 and extension loading. Python's own ``sqlite3`` in pyenv and
   python.org builds cannot load extensions, so this is what makes vectors possible there.
2. Python's own ``sqlite3`` otherwise (always present; vectors only where it can load
   extensions, e.g. Debian's python3).

``EVOMEM_SQLITE_DRIVER=sqlite3`` forces the standard library's module (to check the fallback).
Anything that opens an EvoMem file beside a running store (tests, tools) should import
``sqlite`` from here rather than ``sqlite3``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from types import ModuleType
from typing import Any

ENV_DRIVER = "EVOMEM_SQLITE_DRIVER"
VECTORS_HINT = (
    "install evomem-mcp with its default dependencies: pip install 'evomem-mcp' "
    "(a lite install leaves them out; the same as: pip install sqlean.py sqlite-vec numpy)"
)


def _pick() -> ModuleType:
    from evomem.settings import read_sqlite_driver  # picked at import: before any settings object

    wanted = read_sqlite_driver()
    if wanted:
        return importlib.import_module(wanted)
    try:
        return importlib.import_module("sqlean")
    except ImportError:
        return importlib.import_module("sqlite3")


#: The sqlite3-compatible module every EvoMem connection uses in this process.
sqlite: ModuleType = _pick()


def can_load_extensions() -> bool:
    probe = sqlite.connect(":memory:")
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
    """Why sqlite-vec cannot be loaded here (None when it can). Cached: checked once."""
    if not can_load_extensions():
        return f"Python's {sqlite.__name__} here cannot load SQLite extensions; " + VECTORS_HINT
    path = vec_path()
    if path is None:
        return "sqlite-vec is not installed; " + VECTORS_HINT
    probe = sqlite.connect(":memory:")
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
