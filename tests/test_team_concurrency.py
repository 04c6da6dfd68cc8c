"""32 agents writing at once through the authorizing facade (issue 14): 4 namespaces, 8 agents
superseding the same head. No lost write, no forked chain, every author is its caller, and the
audit log has every write. Real SQLite file, real threads."""

from __future__ import annotations

import threading
from pathlib import Path

from evomem.access import GuardedService, Principal
from evomem.adapters.sqlite_store import SQLiteStore
from evomem.domain.audit import AuditQuery
from evomem.domain.cronista import LiteCronista
from evomem.service import MemoryService

AGENTS, NAMESPACES, SUPERSEDERS, NOTES = 32, 4, 8, 5


def test_thirty_two_writers_lose_nothing_and_sign_everything(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "team.db")
    service = MemoryService(store, extractor=LiteCronista())
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
