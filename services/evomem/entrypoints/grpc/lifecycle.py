"""A gRPC service process: built by the composition root, started and stopped here."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evomem.ops.runtime import GRACE_S, start_metrics
from evomem.security.configure import metrics_listen
from evomem.settings import Settings

if TYPE_CHECKING:
    from evomem.entrypoints.grpc.server import RunningServer

log = logging.getLogger("evomem.bootstrap")

GRPC_PORTS = {"storage": 50051, "cronista": 50052, "linker": 50053}


@dataclass
class GrpcService:
    """One gRPC service process, built but not yet listening. ``start`` binds
    EVOMEM_GRPC_HOST:EVOMEM_GRPC_PORT (default: the service's port), starts the metrics
    endpoint, warms up, reports SERVING and starts ``background``; ``stop`` drains and closes."""

    settings: Settings
    kind: str  # storage | cronista | linker
    name: str  # the gRPC service name its health reports
    register: Callable[[Any], None]
    description: str
    warm: Callable[[], None] | None = None  # once, before SERVING
    probe: Callable[[], None] | None = None  # every 5 s: raising turns health NOT_SERVING
    # every probe_interval_s: a reason (str) turns the service's own name NOT_SERVING while ""
    # stays SERVING (degraded: it answers through a fallback); None: SERVING
    degraded: Callable[[], str | None] | None = None
    probe_interval_s: float = 5.0
    background: Callable[[threading.Event], list[threading.Thread]] | None = None
    # what the server demands of its callers (the secret, mutual TLS), decided at start
    listen_peer: Callable[[], dict[str, Any]] | None = None
    close: list[Callable[[], None]] = field(default_factory=list)
    running: RunningServer | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> RunningServer:
        from evomem.entrypoints.grpc.server import create_server

        port = self.settings.grpc.port if self.settings.grpc.port is not None else GRPC_PORTS[self.kind]
        try:
            peer = self.listen_peer() if self.listen_peer is not None else {}
            metrics = metrics_listen(self.settings)  # the bind rule, before anything listens
            running = create_server(f"{self.settings.grpc.host}:{port}", self.register, (self.name,), **peer)
        except BaseException:
            self._close()
            raise
        self.running = running
        start_metrics(*metrics)
        if self.warm is not None:
            self.warm()
        running.set_serving(True)
        if self.probe is not None or self.degraded is not None:
            threading.Thread(target=self._probe, args=(running,), daemon=True, name="health-probe").start()
        if self.background is not None:
            self._threads = self.background(self._stopping)
        log.info("%s serving on port %d, %s", self.kind, running.port, self.description)
        return running

    def _probe(self, running: RunningServer) -> None:
        # Health is the real state: a check that fails turns the service NOT_SERVING.
        while not self._stopping.wait(self.probe_interval_s):
            try:
                if self.probe is not None:
                    self.probe()
                reason = self.degraded() if self.degraded is not None else None
                if reason:
                    running.set_degraded(True)
                else:
                    running.set_serving(True)
            except Exception as exc:  # pragma: no cover - exercised by killing the volume
                log.error("%s health check failed: %s", self.kind, exc)
                running.set_serving(False)

    def stop(self) -> None:
        """Drain the server, wait for the background work, close: each step logged with its time,
        so a slow stop says which step was slow."""
        started = time.monotonic()
        self._stopping.set()
        if self.running is not None:
            self.running.stop()
        drained = time.monotonic()
        for thread in self._threads:  # exiting while onnxruntime loads the model would abort
            thread.join(GRACE_S)
        joined = time.monotonic()
        self._close()
        log.info(
            "%s stopped: drained in %.1f s, background work in %.1f s, closed in %.1f s",
            self.kind, drained - started, joined - drained, time.monotonic() - joined,
        )  # fmt: skip

    def _close(self) -> None:
        for close in self.close:
            close()
