"""A real Triton server on the CPU for the tests: PyTriton's tritonserver serving a model repository.

    venv = triton_venv()                          # its own environment (numpy<2), made if missing
    repo = cpu_repository(tmp_dir)                # models/triton-cpu + the model files (make models)
    server = TritonServer(repo, workdir, venv).start()   # on free loopback ports, waits until ready
    server.grpc_url                               # 127.0.0.1:<port>, for tritonclient
    server.kill()                                 # SIGKILL the server and its stubs (an outage)
    server.stop()

The environment is ``EVOMEM_TRITON_VENV`` or ``<repo>/.triton-venv`` (``make triton-venv``
makes the same one). When it is missing, it is created here from
models/triton-cpu/requirements.txt with ``EVOMEM_TRITON_PYTHON`` (default /usr/bin/python3.11
when it exists, else this Python): about 370 MB from PyPI the first time, seconds from pip's
cache. When that is impossible the tests that need it are skipped, or fail under
``EVOMEM_REQUIRE_TRITON=1`` (so CI cannot pass them silently).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bench.procs import free_ports

ROOT = Path(__file__).resolve().parents[1]
CPU_REPOSITORY = ROOT / "models" / "triton-cpu"
GPU_REPOSITORY = ROOT / "models" / "triton"
REQUIREMENTS = CPU_REPOSITORY / "requirements.txt"
SERVE = ROOT / "scripts" / "serve_triton_cpu.py"
MAKE_MODELS = ROOT / "scripts" / "make_models.py"
START_TIMEOUT_S = 120.0


def _fail_or_skip(message: str) -> None:
    if os.environ.get("EVOMEM_REQUIRE_TRITON") == "1":
        pytest.fail(message)
    pytest.skip(message)


def triton_venv() -> Path:
    """The stand-in's environment (its python), created from requirements.txt when missing."""
    venv = Path(os.environ.get("EVOMEM_TRITON_VENV") or ROOT / ".triton-venv")
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if python.is_file() and (stamp.is_file() or _has_pytriton(python)):
        return python
    base = os.environ.get("EVOMEM_TRITON_PYTHON") or (
        "/usr/bin/python3.11" if Path("/usr/bin/python3.11").is_file() else sys.executable
    )
    try:
        subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)],
            check=True,
            capture_output=True,
            timeout=1200,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        _fail_or_skip(f"could not make the Triton venv {venv} ({exc}): {detail.decode(errors='replace')[-500:]}")
    stamp.touch()
    return python


def _has_pytriton(python: Path) -> bool:
    probe = subprocess.run([str(python), "-c", "import pytriton"], capture_output=True, timeout=60)
    return probe.returncode == 0


def make_tiny_cronista(out: Path) -> Path:
    """The tiny random-weights cronista (scripts/make_tiny_cronista.py) written to ``out``."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_tiny_cronista.py"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return out


def cpu_repository(directory: Path, *, cronista_dir: Path | None = None, models: str = "embedding,cronista") -> Path:
    """A copy of models/triton-cpu (configs, the shared model.py) filled by scripts/make_models.py."""
    repo = Path(directory) / "triton-cpu"
    shutil.copytree(CPU_REPOSITORY, repo, ignore=shutil.ignore_patterns("[0-9]*", "__pycache__"), dirs_exist_ok=True)
    cmd = [sys.executable, str(MAKE_MODELS), "--out", str(repo), "--cpu", "--models", models]
    if cronista_dir is not None:
        cmd += ["--cronista-dir", str(cronista_dir), "--require", "cronista"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"make_models failed:\n{proc.stdout}\n{proc.stderr}")
    return repo


class TritonServer:
    """scripts/serve_triton_cpu.py (which execs tritonserver) on free loopback ports."""

    def __init__(self, repository: Path, workdir: Path, python: Path) -> None:
        self.repository = Path(repository)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.python = python
        self.grpc_port, self.http_port, self.metrics_port = free_ports(3)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.workdir / "tritonserver.log"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/v2/health/ready", timeout=1) as resp:
                return resp.status == 200
        except OSError:
            return False

    def start(self) -> TritonServer:
        cmd = [
            str(self.python),
            str(SERVE),
            "--model-repository",
            str(self.repository),
            "--grpc-port",
            str(self.grpc_port),
            "--http-port",
            str(self.http_port),
            "--metrics-port",
            str(self.metrics_port),
            "--workdir",
            str(self.workdir / "server"),
        ]
        with open(self.log_path, "ab") as log:
            # Its own process group: kill() takes the server's Python stubs down with it.
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tritonserver exited with {self.proc.returncode}:\n{self.log_tail()}")
            if self.ready():
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"tritonserver not ready within {START_TIMEOUT_S}s:\n{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def kill(self) -> None:
        """An outage: SIGKILL the server's process group (the server and its model stubs)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=40)
        self.kill()
