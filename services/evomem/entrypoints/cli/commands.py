"""What each ``evomem-service`` command runs, from the one settings object to a served process.

Library code under the thin entrypoints (``entrypoints/cli/service.py``, ``entrypoints/cli/worker.py``):
settings are read and checked first (a bad value exits 2 with one line naming the variable),
logs are configured, ``evomem.bootstrap`` builds the wiring, and the process serves until
SIGTERM/SIGINT.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from evomem.settings import Settings, SettingsError

log = logging.getLogger("evomem.services")

DESCRIPTIONS = {
    "storage": "gRPC StorageService over the SQLite file (its only writer), with the file's vectors",
    "cronista": "gRPC CronistaService (EVOMEM_CRONISTA_BACKEND=lite|onnx|triton)",
    "linker": "gRPC LinkerService (EVOMEM_LINKER=heuristic|scored|pair|llm)",
    "worker": "Redis Streams consumer that runs extraction jobs",
    "gateway": "MCP over streamable HTTP (gunicorn + uvicorn workers)",
}


def serve_grpc(kind: str, settings: Settings) -> None:
    from evomem.bootstrap.services import BUILDERS
    from evomem.ops.runtime import serve_until_signal

    service = BUILDERS[kind](settings)
    serve_until_signal(service.start, service.stop)


def serve_worker(settings: Settings) -> None:
    """Run the worker until SIGTERM/SIGINT (it finishes the job in hand, then returns)."""
    from evomem.bootstrap.services import build_worker
    from evomem.ops.runtime import install_stop_signals, start_metrics
    from evomem.security.configure import metrics_listen

    metrics = metrics_listen(settings)  # the bind rule, before anything starts
    stop = threading.Event()
    worker = build_worker(settings, stop=stop)
    restore = install_stop_signals(stop, "finishing the current job, then stopping")
    start_metrics(*metrics)
    try:
        worker.run()
    finally:
        restore()


def gateway_command(settings: Settings) -> list[str]:
    """gunicorn with uvicorn workers, serving ``evomem.entrypoints.mcp.gateway:create_app()``.
    Checks the gateway's settings first, so a missing address stops the command at once."""
    from evomem.bootstrap.services import gateway_peers
    from evomem.ops.runtime import GRACE_S
    from evomem.security.configure import build_gate

    gateway_peers(settings)
    host = settings.mcp.host or "127.0.0.1"
    build_gate(settings, host, settings.mcp.port)  # a bad token file, or no auth off loopback, stops here
    return [
        "gunicorn",
        "--worker-class",
        "uvicorn_worker.UvicornWorker",
        "--workers",
        str(settings.gateway.workers),
        "--bind",
        f"{host}:{settings.mcp.port}",
        "--graceful-timeout",
        str(int(GRACE_S)),
        "--access-logfile",
        "-" if settings.gateway.access_log else "/dev/null",
        "evomem.entrypoints.mcp.gateway:create_app()",
    ]


def exec_gateway(settings: Settings) -> None:
    from evomem.ops.runtime import ConfigError

    argv = gateway_command(settings)
    beside = Path(sys.executable).with_name(argv[0])  # the gunicorn of this environment, then PATH's
    program = str(beside) if beside.is_file() else shutil.which(argv[0])
    if program is None:
        raise ConfigError("gunicorn is not installed: install it with pip install 'evomem-mcp[services]'")
    os.execv(program, argv)


COMMANDS: dict[str, Callable[[Settings], None]] = {
    "storage": lambda s: serve_grpc("storage", s),
    "cronista": lambda s: serve_grpc("cronista", s),
    "linker": lambda s: serve_grpc("linker", s),
    "worker": serve_worker,
    "gateway": exec_gateway,
}


def run_command(name: str) -> int:
    """Run ``evomem-service <name>``; the exit status (2: a setting or an extra is missing)."""
    from evomem.ops.runtime import missing_extra

    prog = f"evomem-service {name}"
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    from evomem.ops import logs

    logs.configure(settings.logging.level, settings.log_format("json"))
    try:
        COMMANDS[name](settings)
    except SettingsError as exc:
        log.error("%s", exc)
        return 2
    except ImportError as exc:
        hint = missing_extra(exc)
        if hint is None:
            raise
        print(f"{prog}: {hint}", file=sys.stderr)
        return 2
    return 0
