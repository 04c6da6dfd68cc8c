"""The MCP gateway: the same MCP tools as the embedded server, wired to the services.

gunicorn (uvicorn workers) serves ``create_app()``. Streamable HTTP runs *stateless*, so
any worker can answer any request: MCP sessions do not pin a client to one process.

Environment: EVOMEM_STORAGE_ADDR (required), EVOMEM_REDIS_URL (required),
EVOMEM_LINKER_ADDR (required when EVOMEM_AUTO_SUPERSEDE is not off), EVOMEM_NAMESPACE,
EVOMEM_MAX_NOTE_BYTES, EVOMEM_AUTHOR, EVOMEM_VECTORS (hybrid recall through storage:
auto, the default, uses storage's vectors when it has them; on; off: BM25 only).
"""

from __future__ import annotations

import os
from typing import Any

from evomem.entrypoints.services import ConfigError, env, env_int, vectors_mode


def create_app() -> Any:
    from evomem import logs
    from evomem.bootstrap import build_gateway
    from evomem.entrypoints.http import build_http_app
    from evomem.entrypoints.mcp_tools import build_mcp_server

    logs.configure(os.environ.get("EVOMEM_LOG_LEVEL", "INFO"), os.environ.get("EVOMEM_LOG_FORMAT", "json"))
    auto = os.environ.get("EVOMEM_AUTO_SUPERSEDE", "off")
    linker_addr = os.environ.get("EVOMEM_LINKER_ADDR") or None
    if auto != "off" and not linker_addr:
        raise ConfigError("EVOMEM_AUTO_SUPERSEDE is on: set EVOMEM_LINKER_ADDR to the linker service")
    vectors = vectors_mode()
    service = build_gateway(
        storage_addr=env("EVOMEM_STORAGE_ADDR"),
        redis_url=env("EVOMEM_REDIS_URL"),
        linker_addr=linker_addr if auto != "off" else None,
        namespace=os.environ.get("EVOMEM_NAMESPACE", "default"),
        max_note_bytes=env_int("EVOMEM_MAX_NOTE_BYTES", 0) or None,
        author=os.environ.get("EVOMEM_AUTHOR") or None,
        vectors=vectors,
    )
    info = {"wiring": "gateway", "storage": env("EVOMEM_STORAGE_ADDR"), "auto_supersede": auto, "vectors": vectors}
    server = build_mcp_server(lambda: service, server_info=info)
    return build_http_app(server, host=os.environ.get("EVOMEM_HOST", "0.0.0.0"), stateless=True)
