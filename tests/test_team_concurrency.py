"""32 agents writing at once (issue 14): 4 namespaces, 8 agents superseding the same head. No
lost write, no forked chain, every author is its caller, and the audit log has every write.

First through the authorizing facade (real SQLite file, real threads), then through the real
gateway over HTTP (the gateway app served by uvicorn, a real storage gRPC server on loopback,
the official MCP client over streamable HTTP, one token per agent)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from test_team_auth import ok, token_file
from test_team_gateway import backing, redis_url, serve_gateway, storage  # noqa: F401  (fixtures)

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.access import GuardedService, Principal
from evomem.app.memory import MemoryService
from evomem.domain.audit import AuditQuery
from evomem.domain.cronista import LiteCronista
from evomem.entrypoints.grpc.server import RunningServer

AGENTS, NAMESPACES, SUPERSEDERS, NOTES = 32, 4, 8, 5


@asynccontextmanager
async def gateway_client(url: str, token: str) -> AsyncIterator[Client]:
    """The official client over streamable HTTP, with this agent's own token."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def test_thirty_two_writers_lose_nothing_and_sign_everything(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "team.db")
    service = MemoryService.local(store, extractor=LiteCronista())
    admin = GuardedService(service, Principal("root", "admin", ("*",)), store)
    head = admin.remember("We picked Postgres for the ledger", namespace="ns0").node.id
    principals = [Principal(f"agent-{i}", "writer", (f"ns{i % NAMESPACES}",)) for i in range(AGENTS)]
    written: dict[str, list[str]] = {p.name: [] for p in principals}
    errors: list[BaseException] = []
    start = threading.Barrier(AGENTS)

    def agent(n: int, principal: Principal) -> None:
        guarded = GuardedService(service, principal, store)
        try:
            start.wait()
            for k in range(NOTES):
                out = guarded.remember(f"note {k} from {principal.name}", author="forged")
                written[principal.name].append(out.node.id)
            if n < SUPERSEDERS * NAMESPACES and n % NAMESPACES == 0:  # 8 agents of ns0, on the same head
                out = guarded.remember(f"{principal.name}: the ledger moves to SQLite", supersedes=head)
                written[principal.name].append(out.node.id)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(n, p)) for n, p in enumerate(principals)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    ids = [i for v in written.values() for i in v]
    assert len(ids) == len(set(ids)) == AGENTS * NOTES + SUPERSEDERS
    nodes = store.get_many(ids)
    assert len(nodes) == len(ids)  # no lost write
    for name, mine in written.items():
        assert {nodes[i].author for i in mine} == {name}  # attribution is the caller, never "forged"
    assert store.check_invariants() == []  # no forked chain
    chain = store.chain(store.heads([head])[head].id, 50)
    assert [n.version for n in chain] == list(range(SUPERSEDERS + 1, 0, -1))  # one line: v9 ... v1
    audited = store.audit_page(AuditQuery(limit=500))
    assert sum(1 for e in audited if e.tool == "remember" and e.outcome == "ok") == len(ids) + 1
    assert {(e.identity, e.ids[0]) for e in audited if e.identity != "root"} == {
        (name, i) for name, mine in written.items() for i in mine
    }
    store.close()


# ---------------------------------------------------------------------------- the same, over HTTP

WRITERS = {f"agent-{i}": (f"tok-agent-{i}-" + "w" * 30, "writer", [f"ns{i % NAMESPACES}"]) for i in range(AGENTS)}
ADMIN = {"root": ("tok-root-" + "z" * 30, "admin", ["*"])}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _audit_log(client: Client) -> list[dict[str, Any]]:
    """Every entry of the audit log, newest first, through the admin's ``audit`` tool."""
    entries: list[dict[str, Any]] = []
    before: int | None = None
    while True:
        args: dict[str, Any] = {"limit": 100} if before is None else {"limit": 100, "before": before}
        page = await ok(client, "audit", args)
        entries += page["entries"]
        before = page["next_before"]
        if before is None:
            return entries


@pytest.mark.anyio
async def test_thirty_two_writers_through_the_gateway_over_http(
    storage: RunningServer,  # noqa: F811  (the fixtures of test_team_gateway)
    backing: SQLiteStore,  # noqa: F811
    redis_url: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real gateway app over HTTP, a real storage gRPC server, the official MCP client: 32
    agents with tokens of their own identities in 4 namespaces write at once, and 8 of them
    supersede the same head at once. Documented behaviour (docs/ARCHITECTURE.md, concurrent
    writers): supersedes of one head serialise and each later one re-targets to the head the one
    before created, so the chain stays one line."""
    auth_file = token_file(tmp_path / "tokens.toml", {**WRITERS, **ADMIN})
    with serve_gateway(storage, redis_url, auth_file, monkeypatch) as gateway:
        async with gateway_client(gateway.url, ADMIN["root"][0]) as root:
            head = (await ok(root, "remember", {"raw_text": "We picked Postgres for the ledger", "namespace": "ns0"}))[
                "id"
            ]
        written: dict[str, list[str]] = {name: [] for name in WRITERS}
        superseding: list[str] = []
        go = anyio.Event()

        async def agent(n: int, name: str) -> None:
            async with gateway_client(gateway.url, WRITERS[name][0]) as client:
                await go.wait()
                for k in range(NOTES):  # no namespace named: the token's first one
                    out = await ok(client, "remember", {"raw_text": f"note {k} from {name}", "author": "forged"})
                    written[name].append(out["id"])
                if n % NAMESPACES == 0 and n < SUPERSEDERS * NAMESPACES:  # 8 agents of ns0, on the same head
                    text = f"{name}: the ledger moves to SQLite"
                    out = await ok(client, "remember", {"raw_text": text, "supersedes": head})
                    written[name].append(out["id"])
                    superseding.append(out["id"])

        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                for n, name in enumerate(WRITERS):
                    tg.start_soon(agent, n, name)
                await anyio.sleep(0.2)
                go.set()
        async with gateway_client(gateway.url, ADMIN["root"][0]) as root:
            audited = await _audit_log(root)

    ids = [i for mine in written.values() for i in mine]
    assert len(superseding) == SUPERSEDERS
    assert len(ids) == len(set(ids)) == AGENTS * NOTES + SUPERSEDERS
    nodes = backing.get_many([*ids, head])
    assert len(nodes) == len(ids) + 1  # no lost write
    for n, (name, mine) in enumerate(written.items()):
        assert {nodes[i].author for i in mine} == {name}  # the caller's identity, never "forged"
        assert {nodes[i].namespace for i in mine} == {f"ns{n % NAMESPACES}"}
    assert backing.check_invariants() == []  # no forked chain anywhere
    successors = [n for n in nodes.values() if n.supersedes == head]
    assert len(successors) == 1  # the contested head has exactly one successor
    chain = backing.chain(backing.heads([head])[head].id, 50)
    assert [n.version for n in chain] == list(range(SUPERSEDERS + 1, 0, -1))  # one line: v9 ... v1
    assert {n.id for n in chain} == {head, *superseding}  # the other seven were linked onto the new heads
    # The audit log shows every write, with its caller; through storage, in storage's own file.
    writes = {(e["identity"], e["ids"][0]) for e in audited if e["tool"] == "remember" and e["outcome"] == "ok"}
    assert writes == {(name, i) for name, mine in written.items() for i in mine} | {("root", head)}
    assert len(audited) == len(ids) + 1
