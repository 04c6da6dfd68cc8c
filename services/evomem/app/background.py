"""Work that must not hold up a server's start: load the embedding model, then embed the notes
that have no vector yet."""

from __future__ import annotations

import logging
import threading

from evomem.app.memory import MemoryService
from evomem.app.ports import Vectors

log = logging.getLogger("evomem.bootstrap")


class _Stopped(Exception):
    pass


def start_background(
    target: MemoryService | Vectors | None,  # the embedded service (its vectors), or the vectors
    *,
    stop: threading.Event | None = None,
    after: threading.Event | None = None,
    after_s: float = 0.0,
) -> list[threading.Thread]:
    """Work that must not hold up a server's start: load the embedding model, then embed the
    notes that have no vector yet (written with vectors off, or before a crash).

    ``target``: the embedded ``MemoryService`` (its vectors), or the ``Vectors`` itself (the
    storage service, which has no ``MemoryService``). No vectors (None): nothing starts.
    ``stop``: set it, then join the threads, before the process exits: the backfill stops after
    its current batch (the next start continues it). A process that exits while onnxruntime is
    still loading the model aborts (SIGABRT).

    From here on no call waits for the model (``Vectors.load_in_background``): recall answers
    by BM25 until it has loaded and says so. ``after``/``after_s``: start loading once ``after``
    is set or ``after_s`` seconds have passed, whichever comes first (``evomem-mcp``: after the
    first tool call is answered, so loading the model never competes with it)."""
    vectors = target.vectors if isinstance(target, MemoryService) else target
    if vectors is None:
        return []
    vectors.load_in_background()

    def progress(n: int) -> None:
        if stop is not None and stop.is_set():
            raise _Stopped
        if n % 1024 == 0:
            log.info("embedded %d earlier notes", n)

    def run() -> None:
        if after is not None:
            after.wait(after_s)
        if stop is not None and stop.is_set():
            return
        try:
            vectors.load_model()
            if stop is not None and stop.is_set():
                return
            done = vectors.backfill(progress=progress)
            if done:
                log.info("embedded %d notes that had no vector", done)
        except _Stopped:
            log.info("embedding earlier notes stopped (shutting down); the next start goes on")
        except Exception as exc:  # recall keeps working on BM25; the next start retries
            log.warning("embedding model or backfill failed (BM25 still works): %s", exc)

    thread = threading.Thread(target=run, name="evomem-vectors", daemon=True)
    thread.start()
    return [thread]
