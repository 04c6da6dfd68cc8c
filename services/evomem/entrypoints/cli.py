"""``evomem-mcp``: the embedded default, one local process.

evomem-mcp --db ~/.evomem/evomem.db                      # stdio (MCP clients launch this)
evomem-mcp --db ~/.evomem/evomem.db --transport http     # streamable HTTP on 127.0.0.1:8765/mcp
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading

from evomem import __version__
from evomem.domain.errors import Unavailable
from evomem.settings import Settings, SettingsError, add_flags, env_only_epilog, from_flags

log = logging.getLogger("evomem")
#: Over stdio the model starts loading after the first tool call is answered, or after this long.
MODEL_AFTER_S = 3.0
FLAGS = ("db", "transport", "host", "port", "auto_supersede", "linker_model", "linker_base_url", "linker_timeout_s")
FLAGS += ("vectors", "namespace", "author", "max_note_bytes", "log_level", "log_format")
FLAGS += ("auth_file", "resource_url", "allowed_hosts", "allowed_origins")  # HTTP only (issue 14)
SWITCHES = ("insecure_no_auth",)  # flags without a value


#: Settings of the embedded server read from the environment only (no flag); --help lists them.
ENV_ONLY = ("EVOMEM_LINKER_API_KEY", "EVOMEM_LINKER_STRUCTURED", "EVOMEM_EMBEDDING_MODEL_DIR", "EVOMEM_SQLITE_DRIVER")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="evomem-mcp",
        description="EvoMem MCP server: agent memory that keeps decisions as a history.",
        epilog=env_only_epilog(ENV_ONLY),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_flags(p, FLAGS)
    p.add_argument(
        "--insecure-no-auth",
        dest="insecure_no_auth",
        action="store_true",
        default=None,
        help="HTTP: allow a non-loopback --host without --auth-file (EVOMEM_INSECURE_NO_AUTH; warns at every start)",
    )
    p.add_argument("--version", action="version", version=f"evomem-mcp {__version__}")
    return p


def settings_from_args(argv: list[str] | None = None) -> Settings:
    return from_flags(parser().parse_args(argv), FLAGS + SWITCHES)


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
    except Unavailable as exc:  # --vectors on without the model or sqlite-vec: the message says what to install
        print(f"evomem-mcp: {exc.message}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bad path, a read-only directory, a corrupt file: say what to do
        log.error("cannot open the memory database %s: %s. Choose a writable path with --db or EVOMEM_DB.",
                  settings.db_path(), exc)  # fmt: skip
        return 1
    info = bootstrap.server_info(settings, service)
    log.info("evomem %s: %s", __version__, " ".join(f"{k}={v}" for k, v in info.items() if k != "wiring"))
    stdio = settings.mcp.transport == "stdio"
    gate, sock, app, host = None, None, {}, settings.mcp.host or "127.0.0.1"
    if not stdio:  # tokens, rate limits, Host/Origin lists; the port bound before anything else starts
        from evomem.entrypoints.http import PortInUse

        try:
            gate, sock, app = bootstrap.build_http_front(settings, host)
        except PortInUse as exc:  # a busy port: one line, then exit 1
            service.store.close()
            print(f"evomem-mcp: {exc.strerror}", file=sys.stderr)
            return 1
        except SettingsError as exc:
            service.store.close()
            print(f"evomem-mcp: {exc}", file=sys.stderr)
            return 2
    hybrid, chars = service.vectors is not None, settings.mcp.answer_note_chars
    server = build_mcp_server(lambda: service, server_info=info, gate=gate, hybrid=hybrid, note_chars=chars)
    # The model loads, and old notes are embedded, off the handshake: over stdio once the first
    # tool call is answered (or after a few seconds). Until it has loaded, recall answers by words.
    from evomem import telemetry

    stop = threading.Event()
    after = telemetry.FIRST_CALL if stdio else None
    background = bootstrap.start_background(service, stop=stop, after=after, after_s=MODEL_AFTER_S)
    status = 0
    try:
        if stdio:
            from evomem.entrypoints.stdio import run_stdio  # strict UTF-8, parse errors answered

            run_stdio(server)
        else:
            from evomem.entrypoints.http import serve_http

            serve_http(
                server, host, settings.mcp.port, settings.db_path(), settings.logging.level,
                max_note_bytes=settings.memory.max_note_bytes, sock=sock, service=lambda: service,
                model_required=settings.vectors.mode == "on", **app,
            )  # fmt: skip
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # the port is taken, the address is not this machine's
        log.error("%s", exc)
        status = 1
    finally:
        stop.set()  # the backfill stops after its batch; the next start goes on
        service.store.close()
    from evomem.runtime import exit_process

    return exit_process(status, background)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
