"""The MCP gateway: the same MCP tools as the embedded server, wired to the services.

gunicorn (uvicorn workers, ``evomem-service gateway``) serves ``create_app()``. Streamable
HTTP runs *stateless*, so any worker can answer any request: MCP sessions do not pin a
client to one process. Each POST is answered with one JSON body: no tool sends notifications
mid-call, so no per-request event stream is set up. The wiring is the composition root's
(``evomem.bootstrap.services.gateway_app``; its HTTP front, ``evomem.bootstrap.http.http_front``,
is the embedded server's too). Settings: ``evomem.settings`` (docs/SERVICES.md lists the gateway's).
"""

from __future__ import annotations

from typing import Any


def create_app() -> Any:
    """The gateway's ASGI app, wired from the environment's settings."""
    from evomem.bootstrap.services import gateway_app
    from evomem.settings import Settings

    return gateway_app(Settings.from_env())
