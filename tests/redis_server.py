"""A throwaway real ``redis-server`` for tests: its own port, no persistence, its own dir.

    server = RedisServer(tmp_path).start()
    server.url            # redis://127.0.0.1:<port>/0
    server.stop()         # SIGTERM, as an orchestrator would; start() again reuses the port
    server.kill()         # SIGKILL

Without a ``redis-server`` binary the tests that need one are skipped, or fail when
``EVOMEM_REQUIRE_REDIS=1`` (CI sets it, so a missing binary cannot pass silently).
Install it with ``apt-get install -y redis-server``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis
from procutil import free_port, stop_process

START_TIMEOUT_S = 15.0


def redis_server_binary() -> str:
    """The path of ``redis-server``, or skip (fail under EVOMEM_REQUIRE_REDIS=1) without one."""
    path = shutil.which("redis-server")
    if path is None:
        message = "redis-server is not installed (apt-get install -y redis-server)"
        if os.environ.get("EVOMEM_REQUIRE_REDIS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


class RedisServer:
    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.binary = redis_server_binary()
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self._fixed_port = port is not None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.workdir / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> RedisServer:
        """Start (or restart, on the same port) and return once it answers PING."""
        for _ in range(5):
            if self._spawn():
                return self
            if self._fixed_port or self.proc is None or self.proc.poll() is None:
                break
            self.port = free_port()  # lost a race for the port: pick another one
        raise RuntimeError(f"redis-server did not start on port {self.port}; see {self.log_path}")

    def _spawn(self) -> bool:
        assert not self.running, "already running"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "no",
                    "--dir",
                    str(self.workdir),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.2, socket_timeout=0.5)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    return False
                try:
                    if client.ping():
                        return True
                except redis.RedisError:
                    time.sleep(0.02)
        finally:
            client.close()
        self.kill()
        return False

    def stop(self) -> None:
        """SIGTERM and wait (redis exits cleanly; nothing is saved)."""
        if self.running:
            assert self.proc is not None
            stop_process(self.proc)

    def kill(self) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.kill()
