"""Moving a memory: ``evomem-admin export``, ``import``, ``migrate``, ``backup`` and ``restore``
between SQLite files and a real PostgreSQL 17 (``postgres_server.py``).

An export of a live store imported into a fresh one of either kind gives the same stats and the
same recall answers, every node as it was (ids, chains, links and their provenance, tombstones);
an import runs again without writing twice, refuses forks and cycles and says why; a corrupt or
truncated file names its line and writes nothing.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_support import postgres_store

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app import transfer
from evomem.app.memory import MemoryService
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.cronista import LiteCronista
from evomem.domain.linkers.heuristic import HeuristicLinker

EVOMEM_ADMIN = str(Path(sys.executable).with_name("evomem-admin"))
QUERIES = ("ledger postgres", "deploys", "payments retry", "queue kafka")


def fill(store: Any) -> MemoryService:
    """A store with chains, links (agent and linker), an unlink, a forgotten note, a purge,
    idempotency keys, offers and audit rows."""
    svc = MemoryService.local(store, extractor=LiteCronista(), linker=HeuristicLinker())
    old = svc.remember("We picked Postgres for the ledger", tags=["ledger"], author="alice", idempotency_key="k1")
    svc.remember("We moved the ledger from Postgres to SQLite, Postgres was overkill")
    a = svc.remember("Deploys go through Jenkins", scope="infra").node
    b = svc.remember("Deploys go through ArgoCD now", scope="infra").node
    svc.supersede(b.id, a.id, author="bob")
    svc.remember("Payments retry three times", namespace="team-b")
    p2 = svc.remember("Payments retry five times", namespace="team-b").node
    svc.unlink(p2.id, author="carol") if p2.supersedes else None
    gone = svc.remember("We use Kafka for the queue because Redis lost messages").node
    svc.forget(gone.id)
    secret = svc.remember("The staging password is hunter2").node
    svc.forget(secret.id, purge=True)
    store.append_audit(AuditEntry(1, "alice", "writer", "remember", "default", (old.node.id,), "ok"))
    store.append_audit(AuditEntry(2, "bob", "admin", "purge", None, (secret.id,), "ok", on_behalf_of="x"))
    return svc


def recall_answers(store: Any) -> dict[str, set[str]]:
    svc = MemoryService.local(store)
    out = {}
    for q in QUERIES:
        for ns in ("default", "team-b"):
            out[f"{ns}:{q}"] = {r.head.id for r, _ in svc.recall(q, k=10, namespace=ns).results}
    return out


def shape(store: Any) -> tuple[Any, ...]:
    s = store.stats()
    return (s.by_status, s.purged, s.chains, s.extraction, s.namespaces)


def total(store: Any) -> int:
    return sum(store.stats().namespaces.values())


def everything(store: Any) -> list[Any]:
    return sorted((transfer.to_json(r) for r in store.export_records()), key=lambda r: json.dumps(r, sort_keys=True))


@pytest.fixture
def source(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "source.db")
    fill(s)
    yield s
    s.close()


def round_trip(source: Any, target: Any) -> transfer.ImportReport:
    buf = io.StringIO()
    transfer.export_jsonl(source, buf, source="test")
    return transfer.import_records(target, transfer.read_jsonl(io.StringIO(buf.getvalue())))


def assert_same(source: Any, target: Any) -> None:
    assert shape(target) == shape(source)
    assert recall_answers(target) == recall_answers(source)
    src = [r for r in everything(source) if "vector" not in r]
    assert [r for r in everything(target) if "vector" not in r] == src  # every node, key, change, audit row
    assert target.check_invariants() == []


def test_sqlite_to_sqlite_keeps_everything(source: SQLiteStore, tmp_path: Path) -> None:
    target = SQLiteStore(tmp_path / "target.db")
    try:
        report = round_trip(source, target)
        assert not report.skipped and report.written["node"] == total(source) >= 8
        assert_same(source, target)
        again = round_trip(source, target)  # idempotent
        assert not again.written["node"] and all("already in the store" in why for _, why in again.skipped)
        assert len(target.audit_page(AuditQuery())) == 2  # the audit rows are not written twice
        assert_same(source, target)
    finally:
        target.close()


def test_sqlite_to_postgres_and_back(source: SQLiteStore, tmp_path: Path) -> None:
    with postgres_store() as pg:
        report = round_trip(source, pg)
        assert not report.skipped
        assert shape(pg) == shape(source)
        assert [r for r in everything(pg) if "vector" not in r] == [r for r in everything(source) if "vector" not in r]
        # Recall by words: PostgreSQL ranks with ts_rank, not BM25; the chains it answers are the same.
        assert recall_answers(pg) == recall_answers(source)
        back = SQLiteStore(tmp_path / "back.db")
        try:
            assert not round_trip(pg, back).skipped
            assert_same(source, back)
        finally:
            back.close()


def export_lines(store: Any) -> list[str]:
    buf = io.StringIO()
    transfer.export_jsonl(store, buf, source="test")
    return buf.getvalue().splitlines(keepends=True)


def test_forks_and_cycles_are_refused_and_reported(source: SQLiteStore, tmp_path: Path) -> None:
    lines = export_lines(source)
    nodes = [json.loads(line)["node"] for line in lines if line.startswith('{"node"')]
    chained = next(n for n in nodes if n["version"] == 2)
    fork = dict(chained, id="01ZZZZZZZZZZZZZZZZZZZZZZZZ", superseded_by=None)  # a second version 2: two heads
    loop = dict(nodes[-1], supersedes=nodes[-1]["id"])  # a node that supersedes itself
    body = [line for line in lines[1:-1] if json.loads(line).get("node", {}).get("id") != nodes[-1]["id"]]
    records = [*body, json.dumps({"node": fork}) + "\n", json.dumps({"node": loop}) + "\n"]
    text = [lines[0], *records, json.dumps({"end": {"records": len(records)}}) + "\n"]
    target = SQLiteStore(tmp_path / "target.db")
    try:
        report = transfer.import_records(target, transfer.read_jsonl(text))
        reasons = " | ".join(why for _, why in report.skipped)
        assert "fork" in reasons and "cycle" in reasons, report.summary()
        assert target.get(chained["id"]) is None and target.get(nodes[-1]["id"]) is None
        assert target.check_invariants() == []
        assert report.written["node"] == total(source) - 3  # the forked chain (2 nodes) and the looping one left out
    finally:
        target.close()


@pytest.mark.parametrize("damage", ["bad json", "unknown kind", "missing field", "truncated", "count"])
def test_a_corrupt_or_truncated_file_names_the_line_and_writes_nothing(
    source: SQLiteStore, tmp_path: Path, damage: str
) -> None:
    lines = export_lines(source)
    if damage == "bad json":
        lines[4] = lines[4][:20] + "\n"
        says = "line 5: not JSON"
    elif damage == "unknown kind":
        lines[3] = json.dumps({"nodes": {}}) + "\n"
        says = "line 4: unknown record kind 'nodes'"
    elif damage == "missing field":
        lines[2] = json.dumps({"node": {"id": "x"}}) + "\n"
        says = "line 3: node:"
    elif damage == "truncated":
        lines = lines[:7]
        says = "truncated: no end line after line 7"
    else:
        lines[-1] = json.dumps({"end": {"records": 3}}) + "\n"
        says = f"line {len(lines)}: the end line counts 3 records"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(lines), encoding="utf-8")
    target = tmp_path / "target.db"
    result = subprocess.run(
        [EVOMEM_ADMIN, "import", str(bad), "--to", f"sqlite://{target}"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and says in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    if target.exists():
        check = SQLiteStore(target)
        assert check.stats().namespaces == {}
        check.close()


def admin(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVOMEM_ADMIN, *args], capture_output=True, text=True, timeout=300, env=env)


def test_the_commands_export_import_and_migrate(source: SQLiteStore, tmp_path: Path) -> None:
    out = tmp_path / "export.jsonl"
    done = admin("export", "--from", f"sqlite://{source.path}", "--out", str(out))
    assert done.returncode == 0 and "exported" in done.stderr, done.stderr
    copy = tmp_path / "copy.db"
    done = admin("import", str(out), "--to", f"sqlite://{copy}")
    assert done.returncode == 0 and f"imported {total(source)} nodes" in done.stdout, done.stdout + done.stderr
    done = admin("import", str(out), "--to", f"sqlite://{copy}")
    assert "already in the store" in done.stdout
    with postgres_store() as pg:
        url = pg.db.url
        done = admin("migrate", "--from", f"sqlite://{source.path}", "--to", url)
        assert done.returncode == 0 and "stats of both stores agree" in done.stderr, done.stdout + done.stderr
        assert "records" in done.stderr  # the progress line
        assert shape(pg) == shape(source)
        assert admin("migrate", "--to", url).stdout.startswith("schema version")
    # A store that cannot be opened: one line, status 2.
    done = admin("export", "--from", "postgresql://u:secret@127.0.0.1:9/x")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "secret" not in done.stderr


def test_sqlite_backup_while_the_store_is_open_and_restore(source: SQLiteStore, tmp_path: Path) -> None:
    svc = MemoryService.local(source)
    svc.remember("Written while the backup runs")  # the store is open and writing: the online API copies it
    backup = tmp_path / "backup.db"
    assert admin("backup", "--from", f"sqlite://{source.path}", "--out", str(backup)).returncode == 0
    restored = tmp_path / "restored.db"
    assert admin("restore", str(backup), "--to", f"sqlite://{restored}").returncode == 0
    again = admin("restore", str(backup), "--to", f"sqlite://{restored}")
    assert again.returncode == 2 and "--force" in again.stderr
    check = SQLiteStore(restored)
    try:
        assert shape(check) == shape(source) and recall_answers(check) == recall_answers(source)
    finally:
        check.close()


def test_postgres_backup_and_restore_with_pg_dump(source: SQLiteStore, tmp_path: Path) -> None:
    """``pg_dump``/``pg_restore`` 17 from the server's image (the host may have older client tools)."""
    from postgres_server import PostgresServer

    server = PostgresServer.shared()
    if server.container is None:
        pytest.skip("an external PostgreSQL: its client tools are the operator's")
    shims = {}
    for tool in ("pg_dump", "pg_restore"):
        shim = tmp_path / tool
        shim.write_text(
            "#!/bin/bash\n# the container's client, the URL pointed at its own port\n"
            'args=(); for a in "$@"; do args+=("${a//127.0.0.1:'
            + str(server.port)
            + '/127.0.0.1:5432}"); done\n'
            + (
                'out=""; keep=(); for a in "${args[@]}"; do case "$a" in --file=*) out="${a#--file=}";; '
                '*) keep+=("$a");; esac; done\n'
                f'docker exec {server.name} pg_dump "${{keep[@]}}" > "$out"\n'
                if tool == "pg_dump"
                else f"n=${{#args[@]}}; docker exec -i {server.name} pg_restore "
                '"${args[@]:0:n-1}" < "${args[n-1]}"\n'
            ),
            encoding="utf-8",
        )
        shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
        shims[tool] = str(shim)
    with postgres_store() as pg:
        round_trip(source, pg)
        dump = tmp_path / "evomem.dump"
        done = admin("backup", "--from", pg.db.url, "--out", str(dump), "--pg-dump", shims["pg_dump"])
        assert done.returncode == 0 and dump.stat().st_size > 0, done.stderr
        with postgres_store() as fresh:
            url = fresh.db.url
            done = admin("restore", str(dump), "--to", url, "--pg-restore", shims["pg_restore"])
            assert done.returncode == 0, done.stderr
            assert shape(fresh) == shape(pg) and recall_answers(fresh) == recall_answers(pg)
    assert os.path.exists(dump)
