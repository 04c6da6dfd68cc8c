"""A throwaway real PostgreSQL 17 with pgvector for tests: one container per test session.

    server = PostgresServer.shared()       # started once, stopped when the session ends
    url = server.fresh_database()          # a new, migrated database: postgresql://...
    server.restart()                       # the same port and data, for the fault tests
    server.admin_url(db)                   # the superuser's URL (the store's own is the same user,
                                           # its connections SET ROLE evomem_app)

The image is ``pgvector/pgvector:pg17`` (``POSTGRES_IMAGE`` overrides): pulled when a registry
answers, else built here from Debian 13 packages (``docker/base/build-postgres-image.sh``,
about 2 minutes the first time, seconds from its cache). ``TEST_DATABASE_URL`` names a
server of your own instead (its user must be able to create databases and roles and the
``vector`` extension). Without Docker and without that URL the tests that need PostgreSQL are
skipped, or fail when ``EVOMEM_REQUIRE_POSTGRES=1`` or ``EVOMEM_REQUIRE_DOCKER=1`` (CI).

Each test gets a database of its own, copied from a template that holds the migrations
(``CREATE DATABASE ... TEMPLATE``: a few tens of milliseconds), and dropped after it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from procutil import free_port

ROOT = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("POSTGRES_IMAGE", "pgvector/pgvector:pg17")
PASSWORD = "evomem-test"
TEMPLATE = "evomem_template"
START_TIMEOUT_S = 60.0
# Durability is not under test here (the fault tests restart the server cleanly or kill it
# knowing what was committed): no fsync makes the per-test databases cheap on a slow disk.
SERVER_FLAGS = ("-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=300")


def _required() -> bool:
    return os.environ.get("EVOMEM_REQUIRE_POSTGRES") == "1" or os.environ.get("EVOMEM_REQUIRE_DOCKER") == "1"


def unavailable(message: str) -> None:
    """Skip, or fail when CI requires PostgreSQL."""
    if _required():
        pytest.fail(message)
    pytest.skip(message)


def psycopg_or_skip() -> None:
    try:
        import pgvector  # noqa: F401
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        unavailable(f"the postgres extra is not installed ({exc}): pip install -e '.[postgres]'")


def docker_ok() -> str | None:
    """Why Docker cannot run the server here (None: it can)."""
    if shutil.which("docker") is None:
        return "docker is not installed"
    probe = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return f"the Docker daemon does not answer: {probe.stderr.strip()[:200]}"
    return None


def ensure_image() -> None:
    """The PostgreSQL image: present, pulled, or built from Debian packages."""
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode == 0:
        return
    if subprocess.run(["docker", "pull", "-q", IMAGE], capture_output=True, timeout=300).returncode == 0:
        return
    build = subprocess.run(
        ["bash", str(ROOT / "docker/base/build-postgres-image.sh")],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "POSTGRES_IMAGE": IMAGE},
    )
    if build.returncode != 0:
        unavailable(f"could not build {IMAGE}: {build.stderr.strip()[-800:]}")


class PostgresServer:
    """One PostgreSQL server: a container of ours, or the server at TEST_DATABASE_URL."""

    _shared: PostgresServer | None = None
    _shared_lock = threading.Lock()

    def __init__(self, base_url: str | None = None) -> None:
        self.external = base_url
        self.port = 0
        self.name = f"evomem-test-pg-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.container: str | None = None
        self._template_ready = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def shared(cls) -> PostgresServer:
        """The session's server, started on first use (skips or fails when there can be none)."""
        psycopg_or_skip()
        with cls._shared_lock:
            if cls._shared is None:
                external = os.environ.get("TEST_DATABASE_URL")
                server = cls(external)
                if external is None:
                    problem = docker_ok()
                    if problem is not None:
                        unavailable(f"PostgreSQL tests need Docker or TEST_DATABASE_URL: {problem}")
                    ensure_image()
                    server.start()
                    atexit.register(server.remove)
                server.wait()
                cls._shared = server
            return cls._shared

    def start(self) -> PostgresServer:
        self.port = self.port or free_port()
        run = subprocess.run(
            [
                "docker",
                "run",
                "-d",
                "--name",
                self.name,
                "-e",
                f"POSTGRES_PASSWORD={PASSWORD}",
                "-p",
                f"127.0.0.1:{self.port}:5432",
                IMAGE,
                *SERVER_FLAGS,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if run.returncode != 0:
            unavailable(f"docker run {IMAGE} failed: {run.stderr.strip()[:400]}")
        self.container = run.stdout.strip()
        return self

    def wait(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until the server accepts a query (a container also restarts once while it initialises)."""
        import psycopg

        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                with psycopg.connect(self.admin_url("postgres"), connect_timeout=2, autocommit=True) as conn:
                    conn.execute("SELECT 1")
                    return
            except psycopg.Error as exc:
                last = exc
                time.sleep(0.2)
        raise RuntimeError(f"PostgreSQL did not answer in {timeout_s:.0f}s: {last}; {self.logs()}")

    def restart(self, *, wait: bool = True) -> None:
        """Restart the server in place (``docker restart``: a fast shutdown, then a start on the
        same port with the same data volume): every connection dropped."""
        if self.external is not None:
            pytest.skip("restarting an external PostgreSQL is not the tests' business")
        subprocess.run(["docker", "restart", "-t", "10", self.name], capture_output=True, timeout=120)
        if wait:
            self.wait()

    def stop(self) -> None:
        """Stop the container (kept: ``start_again`` brings the same server back)."""
        subprocess.run(["docker", "stop", "-t", "10", self.name], capture_output=True, timeout=60)

    def start_again(self) -> None:
        subprocess.run(["docker", "start", self.name], capture_output=True, timeout=60)
        self.wait()

    def pause(self) -> None:
        """Stop answering (``pg_ctl stop`` would end the container): the fault tests' outage."""
        subprocess.run(["docker", "pause", self.name], capture_output=True, timeout=60)

    def unpause(self) -> None:
        subprocess.run(["docker", "unpause", self.name], capture_output=True, timeout=60)

    def remove(self) -> None:
        """The container and its data volume."""
        if self.container:
            subprocess.run(["docker", "rm", "-f", "-v", self.name], capture_output=True, timeout=60)
            self.container = None

    def logs(self) -> str:
        if not self.container:
            return ""
        out = subprocess.run(["docker", "logs", "--tail", "30", self.name], capture_output=True, text=True)
        return (out.stdout + out.stderr)[-2000:]

    # ------------------------------------------------------------------ databases

    def admin_url(self, database: str) -> str:
        if self.external is not None:
            from urllib.parse import urlsplit

            return urlsplit(self.external)._replace(path=f"/{database}").geturl()
        return f"postgresql://postgres:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def url(self, database: str) -> str:
        """What a store is given: the same user (its connections then SET ROLE evomem_app)."""
        return self.admin_url(database)

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url("postgres"), autocommit=True) as conn:
            conn.execute(sql)

    def _template(self) -> None:
        """The migrated template every test database is copied from (made once per session)."""
        with self._lock:
            if self._template_ready:
                return
            from evomem.adapters.postgres.store import PostgresStore

            self._admin(f"DROP DATABASE IF EXISTS {TEMPLATE}")
            self._admin(f"CREATE DATABASE {TEMPLATE}")
            PostgresStore(self.url(TEMPLATE)).close()
            self._template_ready = True

    def fresh_database(self, *, migrated: bool = True) -> str:
        """A new database (migrated, or empty), dropped at the end of the session at the latest."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        if migrated:
            self._template()
            self._admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
        else:
            self._admin(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop the database of ``url`` (its connections are ended first)."""
        name = url.rsplit("/", 1)[-1]
        with contextlib.suppress(Exception):  # the server is down (a fault test): the session's end removes it all
            self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
