"""Issue 33 on the PostgreSQL store: if_head under concurrent writers, needs_review along
dependencies (and its clearing), cycles refused, check: the same answers as on SQLite.

Needs PostgreSQL (``tests/postgres_server.py``: Docker, or ``TEST_DATABASE_URL``); skipped without."""

from __future__ import annotations

import pytest
from contract_support import postgres_store
from postgres_server import psycopg_or_skip
from test_dependencies import JWT, _flag, _story
from test_if_head import ROOT, WRITERS, _race

from evomem.app.memory import MemoryService
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import Conflict, CycleError


@pytest.fixture
def service():
    psycopg_or_skip()
    with postgres_store() as store:
        yield MemoryService.local(store, extractor=LiteCronista())


def test_if_head_under_concurrent_writers_one_wins(service: MemoryService) -> None:
    root = service.remember(ROOT).node.id
    stored, refused = _race(service, root, if_head=True)
    assert len(stored) == 1 and len(refused) == WRITERS - 1
    assert all(isinstance(e, Conflict) and f"the head is {stored[0]}" in str(e) for e in refused)


def test_needs_review_follows_dependencies_is_cleared_and_cycles_are_refused(service: MemoryService) -> None:
    ids = _story(service)
    with pytest.raises(CycleError, match="dependency cycle"):
        service.remember(JWT, supersedes=ids["sessions"], relations={"depends_on": [ids["ttl"]]})
    jwt = service.remember(JWT, supersedes=ids["sessions"]).node.id
    assert _flag(service, ids["warmup"]).replaced_by == (jwt,)
    assert _flag(service, ids["ttl"]).via == (ids["cache"],)
    assert _flag(service, ids["other"]) is None
    assert service.review(ids["cache"]).changed and _flag(service, ids["cache"]) is None
    with pytest.raises(CycleError):
        service.supersede(ids["ttl"], jwt)  # TTL depends (through the cache) on the sessions chain


def test_check_answers_as_on_sqlite(service: MemoryService) -> None:
    a = service.remember("We picked Postgres for the ledger because the team knew it well.").node.id
    b = service.remember("We moved the ledger from Postgres to SQLite, Postgres was overkill.", supersedes=a).node.id
    assert service.check("the ledger runs on Postgres").verdict == "superseded"
    assert service.check("the ledger runs on SQLite").verdict == "in_force"
    assert service.check(node_id=a).verdict == "superseded" and service.check(node_id=b).verdict == "in_force"


def test_an_unlink_puts_the_flags_it_raised_away(service: MemoryService) -> None:
    ids = _story(service)
    jwt = service.remember(JWT, supersedes=ids["sessions"]).node.id
    assert _flag(service, ids["ttl"]) is not None
    service.unlink(jwt)
    assert _flag(service, ids["ttl"]) is None and _flag(service, ids["cache"]) is None
