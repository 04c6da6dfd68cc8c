"""Processes that the benchmarks and the tests start: a free port, stopping a process, and a
llama.cpp server (``python -m llama_cpp.server``) serving one GGUF model.

    model = make_tiny_model(tmp_dir)               # scripts/make_tiny_gguf.py, ~1.8 MB, random weights
    server = LlamaServer(model, workdir).start()   # on a free loopback port
    server.base_url                                # http://127.0.0.1:<port>/v1
    server.stop()

The server needs ``llama-cpp-python[server]`` (``make test`` installs it); the tiny model needs
the ``gguf`` package. The tiny model's answers are meaningless: it measures the protocol, never
quality.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MAKE_TINY_GGUF = ROOT / "scripts" / "make_tiny_gguf.py"
START_TIMEOUT_S = 60.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports on 127.0.0.1 that nothing listens on right now.

    All ``n`` sockets stay bound until every port is known: asked one at a time, the kernel may
    hand out a port it just released again, and one server then gets the same port twice.
    """
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(n):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


def wait_until(
    what: str,
    ready: Callable[[], Any],
    proc: subprocess.Popen[bytes] | None = None,
    *,
    timeout_s: float = 180.0,
    interval_s: float = 0.2,
) -> None:
    """Poll ``ready()`` until it is true (an exception counts as not yet); fail when ``proc``
    exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            if ready():
                return
        except Exception:  # not up yet
            pass
        time.sleep(interval_s)
    raise RuntimeError(f"{what} did not come up in {timeout_s:.0f} s")


def stop_process(proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 10) -> None:
    """SIGTERM, wait, and SIGKILL if it does not exit in time."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def make_tiny_model(directory: Path, seed: int = 0) -> Path:
    """Write the tiny random-weights GGUF with the project's script (needs the ``gguf`` package)."""
    out = Path(directory) / f"tiny-{seed}.gguf"
    proc = subprocess.run(
        [sys.executable, str(MAKE_TINY_GGUF), str(out), "--seed", str(seed)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{MAKE_TINY_GGUF.name} failed (is `gguf` installed? pip install gguf):\n{proc.stderr[-2000:]}"
        )
    return out


class LlamaServer:
    """``python -m llama_cpp.server`` on loopback, serving one model."""

    def __init__(self, model: Path, workdir: Path, *, n_ctx: int = 4096, threads: int = 2) -> None:
        self.model = Path(model)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.n_ctx = n_ctx
        self.threads = threads
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.workdir / "llama-server.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--model_alias",
            "tiny",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
        ]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {START_TIMEOUT_S}s:\n{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            stop_process(self.proc)
        self.proc = None
