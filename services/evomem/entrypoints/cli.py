"""``evomem-mcp``: the embedded default, one local process.

evomem-mcp --db ~/.evomem/evomem.db                      # stdio (MCP clients launch this)
evomem-mcp --db ~/.evomem/evomem.db --transport http     # streamable HTTP on 127.0.0.1:8765/mcp
"""

from __future__ import annotations

import argparse
import logging
import sys

from evomem import __version__
from evomem.settings import AUTO_SUPERSEDE, TRANSPORTS, Settings, SettingsError

log = logging.getLogger("evomem")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="evomem-mcp",
        description="EvoMem MCP server: decisions as history; recall answers with the version in force. "
        "Every flag can also be set as EVOMEM_<FLAG> (e.g. EVOMEM_DB, EVOMEM_AUTO_SUPERSEDE).",
    )
    p.add_argument("--db", help="SQLite file (created if missing). Default: ~/.evomem/evomem.db")
    p.add_argument("--transport", choices=TRANSPORTS, help="stdio (default) or http (streamable HTTP)")
    p.add_argument("--host", help="HTTP bind address. Default: 127.0.0.1")
    p.add_argument("--port", type=int, help="HTTP port. Default: 8765 (0 picks a free port)")
    p.add_argument(
        "--auto-supersede",
        choices=AUTO_SUPERSEDE,
        help="Link notes without `supersedes` to the decision they replace. Default: off",
    )
    p.add_argument("--linker-model", help="--auto-supersede llm: the model name at the endpoint")
    p.add_argument(
        "--linker-base-url",
        help="--auto-supersede llm: OpenAI-compatible base URL (e.g. a llama.cpp server, http://localhost:8080/v1); "
        "API key from EVOMEM_LINKER_API_KEY",
    )
    p.add_argument("--linker-timeout-s", type=int, help="--auto-supersede llm: seconds per linker call. Default: 10")
    p.add_argument(
        "--vectors",
        choices=("auto", "on", "off"),
        help="hybrid recall (BM25 + embeddings, offline ONNX model): on, off (BM25 only, lite), "
        "or auto: on when the model and sqlite-vec are installed. Default: auto",
    )
    p.add_argument("--namespace", help="Default namespace for calls that name none. Default: default")
    p.add_argument("--author", help="Default author recorded on notes and links")
    p.add_argument("--max-note-bytes", type=int, help="Largest note accepted, in UTF-8 bytes. Default: 1048576")
    p.add_argument("--log-level", help="DEBUG, INFO, WARNING or ERROR. Default: INFO")
    p.add_argument("--log-format", choices=("text", "json"), help="Log format on stderr. Default: text")
    p.add_argument("--version", action="version", version=f"evomem-mcp {__version__}")
    return p


def settings_from_args(argv: list[str] | None = None) -> Settings:
    args = parser().parse_args(argv)
    return Settings.from_env(
        db=args.db,
        transport=args.transport,
        host=args.host,
        port=args.port,
        auto_supersede=args.auto_supersede,
        vectors=args.vectors,
        linker_model=args.linker_model,
        linker_base_url=args.linker_base_url,
        linker_timeout_s=args.linker_timeout_s,
        namespace=args.namespace,
        author=args.author,
        max_note_bytes=args.max_note_bytes,
        log_level=args.log_level,
        log_format=args.log_format,
    )


def main(argv: list[str] | None = None) -> int:
    try:
        settings = settings_from_args(argv)
    except SettingsError as exc:
        print(f"evomem-mcp: {exc}", file=sys.stderr)
        return 2

    from evomem import logs

    logs.configure(settings.log_level, settings.log_format)

    # Imported here so `--help` and bad flags answer instantly.
    from evomem.bootstrap import build_embedded, start_background
    from evomem.entrypoints.mcp_tools import build_mcp_server

    try:
        service = build_embedded(settings)
    except Exception as exc:  # a bad path, a read-only directory, a corrupt file
        # Say what to do, not only what failed (errno texts such as "File exists" mislead).
        log.error(
            "cannot open the memory database %s: %s. Choose a writable path with --db or EVOMEM_DB.",
            settings.db,
            exc,
        )
        return 1
    vectors = getattr(service.vectors, "name", None) or "off"
    info = {"db": settings.db, "auto_supersede": settings.auto_supersede, "vectors": vectors, "wiring": "embedded"}
    server = build_mcp_server(lambda: service, server_info=info)
    log.info(
        "evomem %s: db=%s auto_supersede=%s vectors=%s", __version__, settings.db, settings.auto_supersede, vectors
    )
    start_background(service)  # the embedding model loads, and old notes are embedded, off the handshake
    try:
        if settings.transport == "stdio":
            server.run("stdio")
        else:
            serve_http(server, settings)
    except KeyboardInterrupt:
        pass
    finally:
        service.store.close()
    return 0


def serve_http(server: object, settings: Settings) -> None:
    import socket

    import uvicorn

    from evomem.entrypoints.http import build_http_app

    app = build_http_app(server, host=settings.host)
    sock = socket.socket(socket.AF_INET6 if ":" in settings.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this. Without it, small JSON responses wait on the
    # peer's delayed ACK (~40 ms per call) when uvicorn serves a pre-bound socket.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((settings.host, settings.port))
    port = sock.getsockname()[1]
    url = f"http://{settings.host}:{port}/mcp"
    print(
        f"EvoMem MCP server (streamable HTTP) at {url}\n"
        f"  database: {settings.db}\n"
        f"  Claude Code:  claude mcp add --transport http evomem {url}\n"
        f"  other clients: point an MCP client at {url}\n"
        "  (stdio clients launch `evomem-mcp --db PATH` themselves; see README)\n"
        "  Ctrl-C to stop.",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(app, log_level=settings.log_level.lower(), lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
