"""The Tantivy index's folder beside the store's file (``<db>.words``): what is in it and who holds it.

    stale(conns)        # why ``auto`` must build the index before it can answer (None: it need not)
    lock_folder(folder) # this process's exclusive hold on the folder (``IndexBusy`` if another has it)

``tantivy_index.TantivyWords`` takes the folder's lock before it reads, clears or builds anything
in it, and holds it until it closes: a second process (or store) opening the file while the first
builds its index finds it held and searches FTS5 instead of wiping the first one's files. The lock
(``fcntl.flock`` on ``LOCK_FILE``) goes with the process: a crash leaves nothing held.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from typing import IO, TYPE_CHECKING, Any

import tantivy

from evomem.adapters.sqlite.words_log import has_log, index_folder, log_covers, log_position

if TYPE_CHECKING:
    from evomem.adapters.sqlite.conn import Connections

#: The index's layout (schema and analyser): an index of another format is rebuilt.
FORMAT = 1
META = 1  # the ``meta`` term of the one meta document
#: ``auto`` builds an index at least this many log entries behind in the background (``stale``).
BEHIND_FROM = 20_000
LOCK_FILE = ".evomem-lock"


class IndexBusy(RuntimeError):
    """Another process (or store) holds the index's folder or its writer."""


class BuildStopped(RuntimeError):
    """The ``stop`` event was set while the index was being built or caught up (the store closes)."""


def lock_folder(folder: str) -> IO[str] | None:
    """An exclusive hold on ``folder`` (made if missing), kept while the returned file is open;
    ``IndexBusy`` when another process or store holds it. None where ``fcntl`` is missing."""
    try:
        import fcntl
    except ImportError:  # not POSIX: Tantivy's own writer lock is the only guard
        return None
    os.makedirs(folder, exist_ok=True)
    held = open(os.path.join(folder, LOCK_FILE), "a+")  # noqa: SIM115 (held open until the index closes)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        held.close()
        raise IndexBusy(f"{folder} is held by another process") from None
    return held


def read_meta(index: Any) -> tuple[int, int] | None:
    """(watermark, format) of the index's last commit; None without a meta document."""
    index.reload()
    searcher = index.searcher()
    hits = searcher.search(tantivy.Query.term_query(index.schema, "meta", META), 1).hits
    if not hits:
        return None
    doc = searcher.doc(hits[0][1])
    return int(doc["watermark"][0]), int(doc["format"][0])


def clear_folder(folder: str) -> None:
    """Everything in ``folder`` but ``LOCK_FILE`` deleted, the folder kept (made if missing)."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name == LOCK_FILE:
            continue
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


def stale(db: Connections) -> str | None:
    """Why the index beside the store cannot answer at once (missing, unreadable, of another
    format, not matching the log, or ``BEHIND_FROM`` log entries or more behind it: a build or a
    long catch-up), or None when it can be opened and caught up quickly. Reads only: the writer
    is not taken."""
    folder = index_folder(db)
    if folder is None:
        return None  # in RAM: built at open (a store in RAM is rebuilt at every open anyway)
    if not (os.path.isdir(folder) and tantivy.Index.exists(folder)):
        return "no index yet"
    conn = db.get()
    if not has_log(conn):
        return "no words log yet"
    try:
        meta = read_meta(tantivy.Index.open(folder))  # its integer fields: no analyser needed
    except (OSError, ValueError, RuntimeError) as exc:
        return f"the index is unreadable ({exc})"
    if meta is None or meta[1] != FORMAT or not log_covers(conn, meta[0]):
        return "the index must be rebuilt"
    behind = log_position(conn) - meta[0]
    return f"the index is {behind:,} writes behind" if behind >= BEHIND_FROM else None
