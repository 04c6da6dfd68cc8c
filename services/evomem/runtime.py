"""Process plumbing shared by every EvoMem command: the config error, signals, Prometheus.

Library code: entrypoints call it, nothing here knows which service it runs in.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

from evomem.settings import SettingsError

log = logging.getLogger("evomem.runtime")

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
    """``pip install 'evomem[services]'`` when ``exc`` is a missing optional dependency, else None."""
    root = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(root)
    if extra is None:
        return None
    return f"{root} is not installed: install it with pip install 'evomem[{extra}]'"


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


def wait_for_signal(on_stop: Callable[[], None]) -> None:
    """Block until SIGTERM/SIGINT, then run ``on_stop`` (graceful drain)."""
    stop = threading.Event()
    restore = install_stop_signals(stop)
    try:
        stop.wait()
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


def start_metrics(port: int, host: str = "127.0.0.1") -> None:
    """Serve ``/metrics`` on ``host:port`` (0: off; loopback unless EVOMEM_METRICS_HOST says otherwise)."""
    if port:
        from prometheus_client import start_http_server

        start_http_server(port, addr=host)
        log.info("metrics on %s:%d/metrics", host, port)
