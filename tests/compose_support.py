"""Helpers for the compose end-to-end tests (tests/test_compose_e2e.py).

Everything here drives the real Docker CLI: ``docker`` for the daemon and container health,
``docker compose`` (v2) or ``docker-compose`` (v1) for the project, ``make images`` for the
image. Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "compose.cpu.yaml"
SERVICES = ("redis", "storage", "cronista", "linker", "worker", "gateway")
IMAGE = os.environ.get("EVOMEM_IMAGE", "evomem:latest")

# Deadlines for things that hang, not speed assertions.
DOCKER_PROBE_S = 20
IMAGES_BUILD_S = 1200
HEALTHY_S = 180


def docker_unreachable() -> str | None:
    """Why no Docker daemon can be used here, or None when one answers."""
    if shutil.which("docker") is None:
        return "the docker CLI is not installed"
    try:
        proc = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=DOCKER_PROBE_S,
        )
    except subprocess.TimeoutExpired:
        return f"the Docker daemon did not answer within {DOCKER_PROBE_S} s"
    if proc.returncode != 0 or not proc.stdout.strip():
        return f"no Docker daemon is reachable: {(proc.stderr or proc.stdout).strip()[:300]}"
    return None


def compose_command() -> str | None:
    """``docker compose`` (v2) when the plugin exists, else ``docker-compose`` (v1), else None."""
    try:
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=DOCKER_PROBE_S)
        if probe.returncode == 0:
            return "docker compose"
    except subprocess.TimeoutExpired:  # pragma: no cover - a hung plugin
        pass
    if shutil.which("docker-compose"):
        return "docker-compose"
    return None


def build_images() -> None:
    """``make images``: base images (local stand-ins where no registry answers), wheelhouse, image.

    Raises RuntimeError with the end of the build output when it fails.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    try:
        proc = subprocess.run(
            ["make", "images", f"IMAGE={IMAGE}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=IMAGES_BUILD_S,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"`make images` did not finish within {IMAGES_BUILD_S} s") from exc
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-4000:]
        raise RuntimeError(f"`make images` failed (exit {proc.returncode}); these tests need the image:\n{tail}")


@dataclass
class Compose:
    """One compose project, run through the same command line pytest-docker uses
    (``command`` may start with ``env ... NAME=VALUE``)."""

    command: str
    files: Sequence[Path]
    project: str

    def argv(self, *args: str) -> list[str]:
        out = self.command.split()
        for f in self.files:
            out += ["-f", str(f)]
        return [*out, "-p", self.project, *args]

    def run(
        self, *args: str, timeout: float = 120, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self.argv(*args),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(self.argv(*args))} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc

    def containers(self) -> dict[str, dict[str, Any]]:
        """``service -> docker inspect`` for the project's containers (one fast docker call, by label)."""
        ids = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={self.project}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
        if not ids:
            return {}
        proc = subprocess.run(["docker", "inspect", *ids], capture_output=True, text=True, timeout=30, check=True)
        return {c["Config"]["Labels"].get("com.docker.compose.service", c["Name"]): c for c in json.loads(proc.stdout)}

    def container_id(self, service: str) -> str:
        found = self.containers().get(service)
        if found is None:
            raise RuntimeError(f"no container for service {service!r}")
        return str(found["Id"])

    def health(self, services: Iterable[str] = SERVICES) -> dict[str, str]:
        """``service -> health`` (healthy, starting, unhealthy, or the state when not running)."""
        containers = self.containers()
        out: dict[str, str] = {}
        for service in services:
            state: dict[str, Any] = containers.get(service, {}).get("State", {})
            health = (state.get("Health") or {}).get("Status")
            out[service] = health if state.get("Running") and health else str(state.get("Status", "missing"))
        return out

    def redis_cli(self, *args: str) -> str:
        """A redis-cli command in the project's redis container (``docker exec``)."""
        proc = subprocess.run(
            ["docker", "exec", self.container_id("redis"), "redis-cli", *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return proc.stdout

    def wait_healthy(self, services: Iterable[str] = SERVICES, timeout: float = HEALTHY_S) -> dict[str, str]:
        services = tuple(services)
        deadline = time.monotonic() + timeout
        while True:
            health = self.health(services)
            if all(h == "healthy" for h in health.values()):
                return health
            if time.monotonic() > deadline:
                raise AssertionError(f"not healthy after {timeout:.0f} s: {health}\n{self.logs(tail=60)}")
            time.sleep(1)

    def logs(self, tail: int = 200) -> str:
        try:
            proc = self.run("logs", "--no-color", f"--tail={tail}", timeout=60, check=False)
        except subprocess.TimeoutExpired:  # pragma: no cover
            return "(compose logs timed out)"
        return proc.stdout + proc.stderr


def write_secrets(folder: Path, tokens: Sequence[tuple[str, str, str]]) -> Path:
    """tokens.toml (name, token, role; every namespace), grpc-secret and metrics-token, as `make secrets` makes
    them, readable by the image's user: the compose files mount them as secrets."""
    import secrets as random

    from evomem.security.tokens import digest

    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(
        f'[[tokens]]\nname = "{name}"\nsha256 = "{digest(token)}"\nrole = "{role}"\nnamespaces = ["*"]\n\n'
        for name, token, role in tokens
    )
    (folder / "tokens.toml").write_text(text)
    (folder / "grpc-secret").write_text(random.token_urlsafe(32) + "\n")
    (folder / "metrics-token").write_text(random.token_urlsafe(32) + "\n")
    for f in folder.iterdir():
        f.chmod(0o644)
    folder.chmod(0o755)
    return folder
