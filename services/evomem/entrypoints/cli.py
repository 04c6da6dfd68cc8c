"""``evomem-mcp``: the embedded default, one local process.

evomem-mcp --db ~/.evomem/evomem.db                      # stdio (MCP clients launch this)
evomem-mcp --db ~/.evomem/evomem.db --transport http     # streamable HTTP on 127.0.0.1:8765/mcp
"""

from __future__ import annotations

import argparse
import logging
import sys

from evomem import __version__
from evomem.settings import Settings, SettingsError, add_flags, from_flags

log = logging.getLogger("evomem")
FLAGS = ("db", "transport", "host", "port", "auto_supersede", "linker_model", "linker_base_url", "linker_timeout_s")
FLAGS += ("vectors", "namespace", "author", "max_note_bytes", "log_level", "log_format")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evomem-mcp", description="EvoMem MCP server: decisions as history.")
    add_flags(p, FLAGS)
    p.add_argument("--version", action="version", version=f"evomem-mcp {__version__}")
    return p


def settings_from_args(argv: list[str] | None = None) -> Settings:
    return from_flags(parser().parse_args(argv), FLAGS)


def main(argv: list[str] | None = None) -> int:
    try:
        settings = settings_from_args(argv)
        from evomem import bootstrap, logs  # loaded on a real start only: --help and bad flags answer fast
        from evomem.entrypoints.mcp_tools import build_mcp_server

        logs.configure(settings.logging.level, settings.log_format("text"))
        service = bootstrap.build_embedded(settings)
    except SettingsError as exc:
        print(f"evomem-mcp: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bad path, a read-only directory, a corrupt file: say what to do
        log.error("cannot open the memory database %s: %s. Choose a writable path with --db or EVOMEM_DB.",
                  settings.db_path(), exc)  # fmt: skip
        return 1
    info = bootstrap.server_info(settings, service)
    log.info("evomem %s: %s", __version__, " ".join(f"{k}={v}" for k, v in info.items() if k != "wiring"))
    server = build_mcp_server(
        lambda: service,
        server_info=info,
        hybrid=service.vectors is not None,
        note_chars=settings.mcp.answer_note_chars,
    )
    sock = None
    if settings.mcp.transport != "stdio":
        from evomem.entrypoints.http import PortInUse, bind

        try:  # before anything starts in the background: a busy port is one line, then exit 1
            sock = bind(settings.mcp.host or "127.0.0.1", settings.mcp.port)
        except PortInUse as exc:
            print(f"evomem-mcp: {exc.strerror}", file=sys.stderr)
            service.store.close()
            return 1
    bootstrap.start_background(service)  # the model loads, and old notes are embedded, off the handshake
    try:
        if settings.mcp.transport == "stdio":
            from evomem.entrypoints.stdio import run_stdio  # strict UTF-8, parse errors answered

            run_stdio(server)
        else:
            from evomem.entrypoints.http import serve_http

            serve_http(
                server,
                settings.mcp.host or "127.0.0.1",
                settings.mcp.port,
                settings.db_path(),  # the operator's console: the full path
                settings.logging.level,
                max_note_bytes=settings.memory.max_note_bytes,
                sock=sock,
            )
    except KeyboardInterrupt:
        pass
    finally:
        service.store.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
