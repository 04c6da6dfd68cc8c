"""Process plumbing shared by every EvoMem command: the config error, signals, Prometheus.

Library code: entrypoints call it, nothing here knows which service it runs in.
"""

from __future__ import annotations

import hmac
import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

from evomem.settings import SettingsError

log = logging.getLogger("evomem.ops.runtime")

#: Seconds a stopping service gives in-flight work (gRPC calls, gunicorn requests, loading threads).
GRACE_S = 10.0

#: The package each optional import comes from, for a one-line hint instead of a traceback.
EXTRAS = {
    "grpc": "services",
    "grpc_health": "services",
    "google": "services",
    "redis": "services",
    "gunicorn": "services",
    "uvicorn_worker": "services",
    "prometheus_client": "services",
}


class ConfigError(SettingsError):
    """A service cannot start with these settings (a port it cannot bind, vectors it cannot load)."""


def missing_extra(exc: ImportError) -> str | None:
    """``pip install 'evomem-mcp[services]'`` when ``exc`` is a missing optional dependency, else None."""
    root = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(root)
    if extra is None:
        return None
    return f"{root} is not installed: install it with pip install 'evomem-mcp[{extra}]'"


# ----------------------------------------------------------------------------- signals


def install_stop_signals(stop: threading.Event, doing: str = "shutting down") -> Callable[[], None]:
    """SIGTERM/SIGINT set ``stop``. Returns a function that restores the previous handlers."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def handler(signum: int, _frame: Any) -> None:
        log.info("signal %s: %s", signal.Signals(signum).name, doing)
        stop.set()

    for sig in previous:
        signal.signal(sig, handler)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


#: How often a waiting main thread wakes to run a signal handler that another thread received.
SIGNAL_POLL_S = 0.5


def wait_until_set(stop: threading.Event) -> None:
    """Block the main thread until ``stop`` is set, waking every ``SIGNAL_POLL_S``.

    The kernel may deliver SIGTERM to any thread of the process (gRPC's, onnxruntime's). Python
    then only flags it, and runs the handler when the main thread next executes bytecode: a main
    thread in an unbounded ``Event.wait()`` never does, and the process ignores SIGTERM until it
    is killed. Waking on a short timeout lets the handler run within ``SIGNAL_POLL_S``."""
    while not stop.wait(SIGNAL_POLL_S):
        pass


def serve_until_signal(start: Callable[[], object], on_stop: Callable[[], None]) -> None:
    """Install the SIGTERM/SIGINT handlers, ``start``, block until a signal, then ``on_stop``
    (graceful drain). The handlers come first, so a signal that arrives while the service
    starts (or just after it reports SERVING) is a clean stop, not Python's default exit."""
    stop = threading.Event()
    restore = install_stop_signals(stop)
    try:
        start()
        wait_until_set(stop)
    finally:
        restore()
    on_stop()


# ----------------------------------------------------------------------------- metrics

_METRICS: dict[str, Any] = {}
_METRICS_LOCK = threading.Lock()


def metric(kind: str, name: str, documentation: str, labels: tuple[str, ...] = ()) -> Any:
    """The process's Prometheus ``Counter`` or ``Histogram`` called ``name``, registered once
    (tests build many servers and workers in one process). None without prometheus_client."""
    with _METRICS_LOCK:
        if name not in _METRICS:
            try:
                import prometheus_client
            except ImportError:  # pragma: no cover - the services extra installs it
                _METRICS[name] = None
            else:
                cls = {"counter": prometheus_client.Counter, "histogram": prometheus_client.Histogram}[kind]
                _METRICS[name] = cls(name, documentation, list(labels))
        return _METRICS[name]


def start_metrics(port: int, host: str = "127.0.0.1", token: str | None = None) -> None:
    """Serve ``/metrics`` on ``host:port`` in a daemon thread (0: off). With ``token``, a request
    without ``Authorization: Bearer <token>`` gets 401 (``security.configure.metrics_listen``
    decides whether an address needs one)."""
    if not port:
        return
    import socket
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from prometheus_client import make_wsgi_app

    metrics = make_wsgi_app()
    expected = f"Bearer {token}".encode() if token else None

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if expected is not None:
            given = environ.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")
            if not hmac.compare_digest(given, expected):
                start_response("401 Unauthorized", [("WWW-Authenticate", "Bearer"), ("Content-Type", "text/plain")])
                return [b"401: /metrics needs the bearer token of EVOMEM_METRICS_TOKEN_FILE\n"]
        return metrics(environ, start_response)

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # scrapes are not news
            pass

    server = make_server(host.strip("[]"), port, app, Server, Quiet)
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
    log.info("metrics on %s:%d/metrics%s", host, port, " (bearer token)" if token else "")


def exit_process(status: int, threads: list[threading.Thread]) -> int:
    """``status``, or, while a background thread still runs, exit at once with it: onnxruntime
    may be loading the model in that thread (a client that made one call and left), and a
    normal interpreter exit would then abort in its C++ destructors (SIGABRT, "terminate called
    without an active exception"). The caller has closed what it opened; a vector the backfill
    may have been writing is rolled back by SQLite and redone at the next start."""
    if any(thread.is_alive() for thread in threads):
        logging.shutdown()
        import os
        import sys

        sys.stderr.flush()
        os._exit(status)
    return status
