"""Running ``evomem-mcp`` (either transport) until the client leaves, then leaving cleanly."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from evomem.app.background import start_background
from evomem.app.memory import MemoryService

log = logging.getLogger("evomem.bootstrap")


def run_embedded(
    service: MemoryService, serve: Callable[[], None], *, after: threading.Event | None = None, after_s: float = 0.0
) -> int:
    """Run ``serve`` (a transport's loop) until the client leaves or Ctrl-C, the model loading
    and earlier notes embedding in the background meanwhile (``start_background``: ``after``,
    ``after_s``); then stop the backfill after its batch, close the store and leave the process
    (``runtime.exit_process``). The exit status: 0, or 1 when serving failed (a port taken)."""
    from evomem.ops.runtime import exit_process

    stop = threading.Event()
    background = start_background(service, stop=stop, after=after, after_s=after_s)
    status = 0
    try:
        serve()
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # the port is taken, the address is not this machine's
        log.error("%s", exc)
        status = 1
    finally:
        stop.set()  # the backfill stops after its batch; the next start goes on
        service.close()
    return exit_process(status, background)
