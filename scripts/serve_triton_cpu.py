"""Serve a Triton model repository on the CPU with the tritonserver that nvidia-pytriton bundles.

    <triton venv>/bin/python scripts/serve_triton_cpu.py --model-repository models/triton-cpu \\
        [--grpc-port 8001] [--http-port 8000] [--metrics-port 8002] [--workdir DIR]

nvidia-pytriton 0.7.0 ships Triton 2.51's ``tritonserver`` with only the Python backend, and
one Python-backend stub per Python version. This script lays out a backend directory with the
stub of the Python that runs it (so the stub's libpython matches the venv's standard library:
make the venv from /usr/bin/python3.11 on Debian, see docs/SERVICES.md), puts the venv's
site-packages on the stub's path (numpy<2 and onnxruntime, which the models import), and
``exec``s tritonserver: the process that runs this script *is* the server afterwards, so
SIGTERM stops it and its stubs cleanly (no orphaned tritonserver, as a PyTriton parent leaves).

The Makefile's ``triton-venv`` target builds the environment (nvidia-pytriton, numpy<2,
onnxruntime); the stand-in image (docker/triton-cpu/Dockerfile) runs this as its command.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import site
import sys
import sysconfig
import tempfile
from pathlib import Path


def dist_dir() -> Path:
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("serve_triton_cpu: nvidia-pytriton is not installed in this Python (make triton-venv)")
    return Path(next(iter(spec.submodule_search_locations))) / "tritonserver"


def backend_dir(dist: Path, workdir: Path) -> Path:
    """``<workdir>/backends/python`` with the stub for this Python version."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    stub = dist / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        sys.exit(f"serve_triton_cpu: nvidia-pytriton has no Python-backend stub for Python {version}")
    target = workdir / "backends" / "python"
    target.mkdir(parents=True, exist_ok=True)
    for item in (dist / "backends" / "python").iterdir():
        if item.is_file():
            shutil.copy2(item, target / item.name)
    shutil.copy2(stub, target / "triton_python_backend_stub")
    return workdir / "backends"


def ready_models(repository: Path) -> tuple[list[str], list[str]]:
    """The models of ``repository`` with a version folder holding files, and those without."""
    ready, empty = [], []
    for config in sorted(repository.glob("*/config.pbtxt")):
        versions = [v for v in config.parent.iterdir() if v.is_dir() and v.name.isdigit() and any(v.iterdir())]
        (ready if versions else empty).append(config.parent.name)
    return ready, empty


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-repository", required=True, type=Path)
    parser.add_argument("--grpc-port", type=int, default=8001)
    parser.add_argument("--http-port", type=int, default=8000)
    parser.add_argument("--metrics-port", type=int, default=8002)
    parser.add_argument("--workdir", type=Path, help="where the backend directory is laid out (default: a temp dir)")
    parser.add_argument("--log-verbose", type=int, default=0)
    args = parser.parse_args(argv)

    dist = dist_dir()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="evomem-triton-"))
    backends = backend_dir(dist, workdir)
    env = dict(os.environ)
    libs = dist.parent.parent / "nvidia_pytriton.libs"
    # This Python's own libpython first: the stub links libpython3.X, and under pyenv the
    # system's (Debian 3.11.2) would be found instead, against pyenv's standard library.
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    own = libdir if (Path(libdir) / sysconfig.get_config_var("LDLIBRARY")).is_file() else None
    env["LD_LIBRARY_PATH"] = ":".join(p for p in (own, env.get("LD_LIBRARY_PATH"), str(libs)) if p)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    paths = [*site.getsitepackages(), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = ":".join(p for p in paths if p)
    server = dist / "bin" / "tritonserver"
    ready, empty = ready_models(args.model_repository)
    if empty:
        print(f"serve_triton_cpu: not loading {', '.join(empty)} (no model files: make models)", file=sys.stderr)
    argv_server = [
        str(server),
        f"--model-repository={args.model_repository.resolve()}",
        f"--backend-directory={backends}",
        f"--cache-directory={workdir / 'caches'}",
        f"--grpc-port={args.grpc_port}",
        f"--http-port={args.http_port}",
        f"--metrics-port={args.metrics_port}",
        "--allow-metrics=true",
        "--allow-gpu-metrics=false",
        "--strict-readiness=true",
        f"--log-verbose={args.log_verbose}",
        # Load what `make models` put in place; a model without files is named above, not fatal.
        "--model-control-mode=explicit",
        *(f"--load-model={name}" for name in ready),
    ]
    sys.stdout.flush()
    os.execve(str(server), argv_server, env)


if __name__ == "__main__":
    main()
