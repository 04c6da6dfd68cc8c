"""Shared fixtures: real SQLite files on disk, the real service, the real MCP server."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.domain.cronista import LiteCronista
from evomem.domain.linkers.heuristic import HeuristicLinker

ROOT = Path(__file__).resolve().parents[1]
EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "evomem.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(db_path)
    yield s
    s.close()


@pytest.fixture
def service(store: SQLiteStore) -> MemoryService:
    return MemoryService.local(store, extractor=LiteCronista(), config=ServiceConfig(max_note_bytes=64 * 1024))


@pytest.fixture
def linking_service(store: SQLiteStore) -> MemoryService:
    return MemoryService.local(store, extractor=LiteCronista(), linker=HeuristicLinker())


@pytest.fixture
def server_env(tmp_path: Path) -> dict[str, str]:
    """Environment for a spawned evomem-mcp: no inherited EVOMEM_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    env["EVOMEM_LOG_LEVEL"] = "WARNING"
    return env


@pytest.fixture
def team_gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """The team gateway's app (uvicorn, loopback) over a storage gRPC server on a real SQLite
    file and a real Redis, with the tokens of ``test_team_auth.TOKENS``. Yields a
    ``test_team_gateway.TeamGateway``: ``url``, ``token(who)``, ``storage`` (to stop it), ``backing``."""
    from test_team_gateway import team_gateway_stack

    with team_gateway_stack(tmp_path, monkeypatch) as stack:
        yield stack
