"""``evomem-mcp --transport http``: the embedded server over streamable HTTP, served by uvicorn.

The command (``evomem.entrypoints.cli.mcp``) calls ``serve_embedded`` with the composition
root's builder of the HTTP front (``evomem.bootstrap.http.embedded_http_front``: the gate, the
socket bound first, the MCP server, the app of ``http_app``); it is served until Ctrl-C. This
module never imports the composition root, nor does the composition root import it.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from typing import Any

from evomem.entrypoints.mcp.http_app import PortInUse


def serve_http(app: Any, sock: socket.socket, log_level: str) -> None:
    """Serve the ASGI ``app`` on the bound ``sock`` with uvicorn until Ctrl-C."""
    import uvicorn

    # log_config=None: uvicorn's loggers go through the root handler evomem.ops.logs set up
    # (text or JSON), instead of uvicorn's own plain-text handlers.
    config = uvicorn.Config(app, log_level=log_level.lower(), lifespan="on", log_config=None)
    uvicorn.Server(config).run(sockets=[sock])


def banner(url: str, db: str, auth: bool) -> str:
    """What ``evomem-mcp --transport http`` prints on stderr once it listens."""
    on = "on (send Authorization: Bearer <token>)" if auth else "off"
    return (
        f"EvoMem MCP server (streamable HTTP) at {url}\n  database: {db}\n  authentication: {on}\n"
        f"  Claude Code:  claude mcp add --transport http evomem {url}\n"
        f"  other clients: point an MCP client at {url}\n"
        "  (stdio clients launch `evomem-mcp --db PATH` themselves; see README)\n  Ctrl-C to stop."
    )


def serve_embedded(settings: Any, service: Any, build_front: Callable[[], Any]) -> int:
    """``evomem-mcp --transport http``: the HTTP front of the embedded ``service``, built by
    ``build_front`` (the composition root's ``evomem.bootstrap.http.embedded_http_front``, which
    the command passes: the gate, the port bound before anything else starts, the MCP server and
    its app), served until Ctrl-C, the model loading in the background from the start. A busy
    port is one line and exit 1; settings that cannot serve (a non-loopback host without
    ``--auth-file``) one line and exit 2. Returns the exit status."""
    from evomem.entrypoints.mcp.running import run_embedded
    from evomem.settings import SettingsError

    try:
        front = build_front()
    except PortInUse as exc:  # a busy port: one line, then exit 1
        service.close()
        print(f"evomem-mcp: {exc.strerror}", file=sys.stderr)
        return 1
    except SettingsError as exc:  # e.g. a non-loopback host without --auth-file
        service.close()
        print(f"evomem-mcp: {exc}", file=sys.stderr)
        return 2

    def serve() -> None:
        print(banner(front.url, settings.db_path(), front.gate is not None), file=sys.stderr, flush=True)
        serve_http(front.app, front.sock, settings.logging.level)

    return run_embedded(service, serve)
