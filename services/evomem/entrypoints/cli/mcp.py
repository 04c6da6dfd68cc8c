"""``evomem-mcp``: the embedded default, one local process. Parse, build, serve.

evomem-mcp --db ~/.evomem/evomem.db                      # stdio (MCP clients launch this)
evomem-mcp --db ~/.evomem/evomem.db --transport http     # streamable HTTP on 127.0.0.1:8765/mcp
evomem-mcp --database-url postgresql://…/evomem           # the team's PostgreSQL instead of the file
"""

from __future__ import annotations

import argparse
import logging
import sys

from evomem import __version__
from evomem.domain.errors import Unavailable
from evomem.settings import Settings, SettingsError, add_flags, env_only_epilog, from_flags

log = logging.getLogger("evomem")
FLAGS = (
    "db",
    "database_url",
    "transport",
    "host",
    "port",
    "auto_supersede",
    "linker_model",
    "linker_base_url",
    "linker_timeout_s",
)
FLAGS += ("vectors", "namespace", "author", "max_note_bytes", "log_level", "log_format")
FLAGS += ("auth_file", "resource_url", "allowed_hosts", "allowed_origins")  # HTTP only (issue 14)
SWITCHES = ("insecure_no_auth",)  # flags without a value
#: Settings of the embedded server read from the environment only (no flag); --help lists them.
ENV_ONLY = ("EVOMEM_LINKER_API_KEY", "EVOMEM_LINKER_STRUCTURED", "EVOMEM_EMBEDDING_MODEL_DIR", "EVOMEM_SQLITE_DRIVER")
ENV_ONLY += ("EVOMEM_WORD_INDEX", "EVOMEM_TANTIVY_FROM")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="evomem-mcp",
        description="EvoMem MCP server: agent memory that keeps decisions as a history.",
        epilog=env_only_epilog(ENV_ONLY),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_flags(p, FLAGS)
    help_ = "HTTP: allow a non-loopback --host without --auth-file (EVOMEM_INSECURE_NO_AUTH; warns at every start)"
    p.add_argument("--insecure-no-auth", dest="insecure_no_auth", action="store_true", default=None, help=help_)
    p.add_argument("--version", action="version", version=f"evomem-mcp {__version__}")
    return p


def settings_from_args(argv: list[str] | None = None) -> Settings:
    return from_flags(parser().parse_args(argv), FLAGS + SWITCHES)


def main(argv: list[str] | None = None) -> int:
    try:
        settings = settings_from_args(argv)
        from evomem.bootstrap import embedded as bootstrap
        from evomem.ops import logs  # loaded on a real start only: --help and bad flags answer fast

        logs.configure(settings.logging.level, settings.log_format("text"))
        service = bootstrap.build_embedded(settings)
    except SettingsError as exc:
        print(f"evomem-mcp: {exc}", file=sys.stderr)
        return 2
    except Unavailable as exc:  # --vectors on without the model or sqlite-vec: the message says what to install
        print(f"evomem-mcp: {exc.message}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bad path, a read-only directory, a corrupt file: say what to do
        log.error("cannot open the memory database %s: %s. Choose a writable path with --db or EVOMEM_DB.",
                  settings.db_path(), exc)  # fmt: skip
        return 1
    info = bootstrap.server_info(settings, service)
    log.info("evomem %s: %s", __version__, " ".join(f"{k}={v}" for k, v in info.items() if k != "wiring"))
    if settings.mcp.transport == "stdio":
        from evomem.entrypoints.mcp import stdio  # strict UTF-8, parse errors answered

        return stdio.serve_embedded(bootstrap.embedded_mcp_server(settings, service), service)
    from evomem.bootstrap.http import embedded_http_front
    from evomem.entrypoints.mcp import http  # tokens, Host/Origin lists, the port bound first

    return http.serve_embedded(settings, service, lambda: embedded_http_front(settings, service))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
