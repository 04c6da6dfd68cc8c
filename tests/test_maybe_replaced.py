"""Recall shows, beside a hit, the newer notes that may replace it (``maybe_replaced_by``).

When a linker abstains, ``remember`` stores the new note unlinked with ``possible_supersedes``;
if nobody confirms, a later recall whose words match the old decision better would answer the
old decision alone. Here the hit stays (nothing is hidden or re-ranked on a guess) and carries
the newer note, marked unconfirmed:

- through the official MCP client, in the text and the structured content (brief and full);
- ``supersede`` makes the hit resolve to the new note (no maybe line); forget and purge take
  the successor away (a purge leaves its text nowhere: answer, database file, WAL);
- likeliest first: the linker's confidence in each offer, at its weakest step along a chain, so
  newer distant guesses do not crowd out the version that replaces the hit;
- never across namespaces or into a scope that could not replace the hit;
- the same answer through a real storage server on loopback (``RecallNodes`` carries the
  successors, as ``Store.possible_successors`` finds them);
- a file of the previous schema gets the side table filled from its ``possible_supersedes``;
- the answer stays within the size budget, and the benchmark's judge sees the successors.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import closing
from pathlib import Path
from typing import Any

import grpc
import pytest
from mcp import Client

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.adapters.sqlite import schema as sqlite_schema
from evomem.adapters.sqlite.driver import sqlite as sqlite3
from evomem.adapters.sqlite.schema import MIGRATIONS
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.storage import LocalStorage
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import InvalidArgument
from evomem.domain.model import LinkDecision, NewNote
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.entrypoints.mcp.answers import recall_answer
from evomem.entrypoints.mcp.server import build_mcp_server
from evomem.v1 import storage_pb2_grpc

OLD = "We keep the invoices in Postgres because the accountants query them with psql."
NEW = "Invoices moved to SQLite; one file is enough for our volume."
OTHER = "Deploys go out on Tuesdays after the standup."
QUERY = "accountants psql"  # the words of OLD only


class OfferingLinker:
    """A linker that always abstains, listing every candidate it is shown (deterministic; the
    real linkers abstain on their own data), with a reason per candidate, as the pair linker."""

    name = "offering/test"
    abstains = True

    def __init__(self, top: int = 3) -> None:
        self.top = top

    def prepare(self, text: str) -> None:
        pass

    def wants_candidates(self, text: str) -> bool:
        return True

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Any,
        similarities: Any = None,
        scope_inferred: bool = False,
        earlier: Any = None,
    ) -> LinkDecision:
        listed = tuple((c.id, 0.5) for c in candidates[: self.top])
        return LinkDecision(kind="abstain", candidates=listed, reason="unsure", why=("p=0.50, test",) * len(listed))

    def propose(self, text: str, scope: str | None, candidates: Any) -> None:  # pragma: no cover
        return None


def service_on(store: Any, top: int = 3) -> MemoryService:
    return MemoryService.local(store, extractor=LiteCronista(), linker=OfferingLinker(top), config=ServiceConfig())


@pytest.fixture
def svc(store: SQLiteStore) -> MemoryService:
    return service_on(store)


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def call(client: Client, tool: str, args: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    return result


def story(svc: MemoryService) -> tuple[str, str]:
    old = svc.remember(OLD).node
    new = svc.remember(NEW).node
    assert new.supersedes is None and new.possible_supersedes == (old.id,)
    return old.id, new.id


def on_disk(db_path: Path, needle: bytes) -> list[str]:
    found = []
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        if path.exists() and needle in path.read_bytes():
            found.append(path.name)
    return found


# ---------------------------------------------------------------------------- through MCP


def test_recall_shows_the_unconfirmed_successor_then_supersede_forget_and_purge(
    svc: MemoryService, store: SQLiteStore, db_path: Path
) -> None:
    async def go() -> None:
        async with Client(build_mcp_server(lambda: svc)) as client:
            old = (await call(client, "remember", {"raw_text": OLD})).structured_content["id"]
            new = (await call(client, "remember", {"raw_text": NEW})).structured_content
            assert new["possible_supersedes"] == [old]
            new_id = new["id"]

            brief = await call(client, "recall", {"query": QUERY})
            hits = brief.structured_content["results"]
            assert [h["id"] for h in hits] == [old]  # the old decision is the hit, and stays
            (maybe,) = hits[0]["maybe_replaced_by"]
            assert maybe == {"id": new_id}  # brief, as a brief hit: the id to act on; the rest is in the text
            assert NEW not in json.dumps(brief.structured_content)  # brief: the text is in the text
            lines = text_of(brief).splitlines()
            line = next(x for x in lines if x.startswith("  may be replaced by"))
            assert line.startswith(f"  may be replaced by {new_id} (")
            assert "unconfirmed)" in line and line.endswith(": " + NEW)
            assert text_of(brief).count(NEW) == 1

            full = await call(client, "recall", {"query": QUERY, "detail": "full"})
            (maybe,) = full.structured_content["results"][0]["maybe_replaced_by"]
            assert maybe["id"] == new_id and maybe["raw_text"] == NEW and maybe["status"] == "active"
            assert maybe["reason"] == "p=0.50, test" and maybe["created_at"]
            assert NEW not in text_of(full)  # full: the text is in the structured content, once
            assert any(x.startswith(f"  may be replaced by {new_id}") for x in text_of(full).splitlines())

            linked = await call(client, "supersede", {"node_id": new_id, "supersedes": old})
            assert linked.structured_content["supersedes"] == old
            after = await call(client, "recall", {"query": QUERY})
            assert [h["id"] for h in after.structured_content["results"]] == [new_id]  # resolves to B
            assert "maybe_replaced_by" not in after.structured_content["results"][0]
            assert "may be replaced by" not in text_of(after)
            assert store._conn().execute("SELECT COUNT(*) FROM offers").fetchone()[0] == 0

    asyncio.run(go())


@pytest.mark.parametrize("purge", [False, True])
def test_forgetting_or_purging_the_successor_takes_it_away(
    svc: MemoryService, store: SQLiteStore, db_path: Path, purge: bool
) -> None:
    old, new = story(svc)
    assert recall_answer(svc.recall(QUERY), detail="brief", note_chars=2000, scoped=False).text.count(NEW) == 1
    svc.forget(new, purge=purge)
    for detail in ("brief", "full"):
        answer = recall_answer(svc.recall(QUERY), detail=detail, note_chars=2000, scoped=False)
        assert [h["id"] for h in answer.data["results"]] == [old]
        assert "maybe_replaced_by" not in answer.data["results"][0] and "may be replaced" not in answer.text
        assert new not in answer.text + json.dumps(answer.data)
    assert store.possible_successors([old], namespace="default") == {}
    if purge:
        store.checkpoint()
        assert on_disk(db_path, NEW.encode()) == []
        assert on_disk(db_path, b"Invoices moved") == []
        assert store._conn().execute("SELECT COUNT(*) FROM offers WHERE node_id = ?", (new,)).fetchone()[0] == 0


def test_forgetting_the_old_decision_drops_its_offers(svc: MemoryService, store: SQLiteStore) -> None:
    old, _ = story(svc)
    svc.forget(old)
    assert store._conn().execute("SELECT COUNT(*) FROM offers").fetchone()[0] == 0


def test_unlink_after_a_confirmation_shows_no_stale_offer(svc: MemoryService) -> None:
    old, new = story(svc)
    svc.supersede(new, old)
    svc.unlink(new)  # the confirmation was wrong: both are heads again, and no guess is left
    results = svc.recall(QUERY).results
    assert [r.head.id for r, _ in results] == [old] and results[0][0].maybe_replaced_by == []


def test_a_successor_that_is_also_a_hit_is_referenced_not_repeated(svc: MemoryService) -> None:
    old, new = story(svc)
    out = svc.recall("invoices")  # both notes match
    assert {r.head.id for r, _ in out.results} == {old, new}
    for detail in ("brief", "full"):
        answer = recall_answer(out, detail=detail, note_chars=2000, scoped=False)
        if detail == "brief":
            assert (answer.text + json.dumps(answer.data, ensure_ascii=False)).count(NEW) == 1
        hit = next(h for h in answer.data["results"] if h["id"] == old)
        rank = next(i for i, h in enumerate(answer.data["results"], start=1) if h["id"] == new)
        assert hit["maybe_replaced_by"] == [{"id": new, "result": rank}]
        where = "above" if rank == 1 else "below"
        assert f"  may be replaced by {new}: result {rank} {where} (unconfirmed)" in answer.text


def test_at_most_two_newest_first(svc: MemoryService) -> None:
    old = svc.remember(OLD).node.id
    later = []
    for n in range(3):
        time.sleep(0.005)  # created_at is in ms: versions a few ms apart, as real ones are
        later.append(svc.remember(f"Invoices, take {n}: we now keep them in store number {n}.").node.id)
    (entry, _), *_ = svc.recall(QUERY).results
    assert entry.head.id == old
    assert [y.node.id for y in entry.maybe_replaced_by] == [later[2], later[1]]


class GuessingLinker:
    """Abstains on every note, listing the candidates it is shown with the confidence given for
    that note's text (``guesses``): what the pair linker does with its probabilities."""

    name = "guessing/test"
    abstains = True

    def __init__(self, guesses: dict[str, float]) -> None:
        self.guesses = guesses

    def prepare(self, text: str) -> None:
        pass

    def wants_candidates(self, text: str) -> bool:
        return True

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Any,
        similarities: Any = None,
        scope_inferred: bool = False,
        earlier: Any = None,
    ) -> LinkDecision:
        listed = tuple((c.id, self.guesses[text]) for c in candidates[:3])
        why = tuple(f"p={p:.2f}" for _, p in listed)
        return LinkDecision(kind="abstain", candidates=listed, reason="unsure", why=why)

    def propose(self, text: str, scope: str | None, candidates: Any) -> None:  # pragma: no cover
        return None


GUESS_1 = "Invoices: the accountants asked for the quarterly close report by the 5th."
GUESS_2 = "Invoices are printed for the accountants on Fridays."


def test_the_likeliest_successor_comes_before_newer_distant_guesses(store: SQLiteStore, storage: str) -> None:
    """A newer note that replaces nothing may still list an old decision (a distant guess, low
    confidence). The version that replaces it (its linker's sure guess) is shown first, not
    crowded out by the newer guesses, embedded and through a real storage server."""
    guesses = {OLD: 0.5, NEW: 0.9, GUESS_1: 0.2, GUESS_2: 0.3}
    svc = MemoryService.local(store, extractor=LiteCronista(), linker=GuessingLinker(guesses), config=ServiceConfig())
    old = svc.remember(OLD).node.id
    ids = []
    for text in (NEW, GUESS_1, GUESS_2):
        time.sleep(0.005)  # created_at is in ms: notes a few ms apart, as real ones are
        ids.append(svc.remember(text).node.id)
    new, guess_1, guess_2 = ids
    (entry, _), *_ = svc.recall(QUERY).results
    assert entry.head.id == old
    assert [(y.node.id, y.confidence) for y in entry.maybe_replaced_by] == [(new, 0.9), (guess_2, 0.3)]
    assert [y.node.id for y in store.possible_successors([old], namespace="default")[old]] == [new, guess_2, guess_1]
    remote = GrpcStorage(storage)
    try:
        linker = GuessingLinker(guesses)
        gateway = MemoryService(remote, extractor=LiteCronista(), linker=linker, config=ServiceConfig())
        (over, _), *_ = gateway.recall(QUERY).results
        assert [y.node.id for y in over.maybe_replaced_by] == [new, guess_2]
        assert over.maybe_replaced_by == entry.maybe_replaced_by  # the successors cross the wire whole
    finally:
        remote.close()


def test_a_sure_offer_reached_through_an_unsure_one_counts_as_unsure(store: SQLiteStore) -> None:
    """v2 may replace v1 (sure), v3 may replace v2 (unsure), X may replace v1 (fairly sure), and
    X is the newest: v3 is reached at its weakest step, so v2 and X come before it."""
    svc = MemoryService.local(store, extractor=LiteCronista())
    v1 = svc.remember(OLD).node
    v2 = store.insert(NewNote(raw_text=NEW, possible_supersedes=(v1.id,), possible_supersedes_confidence=(0.9,)))
    time.sleep(0.005)
    v3 = store.insert(
        NewNote(
            raw_text="Invoices are in DuckDB now: the analysts wanted columnar scans.",
            possible_supersedes=(v2.id,),
            possible_supersedes_confidence=(0.4,),
        )
    )
    time.sleep(0.005)
    x = store.insert(NewNote(raw_text=GUESS_1, possible_supersedes=(v1.id,), possible_supersedes_confidence=(0.6,)))
    (entry, _), *_ = svc.recall(QUERY).results
    assert entry.head.id == v1.id
    assert [(y.node.id, y.confidence) for y in entry.maybe_replaced_by] == [(v2.id, 0.9), (x.id, 0.6)]
    (entry, _), *_ = svc.recall(QUERY, k=1).results
    assert v3.id not in [y.node.id for y in entry.maybe_replaced_by]


@pytest.mark.parametrize(
    ("confidence", "problem"),
    [((1.5,), "from 0 to 1"), ((-0.1,), "from 0 to 1"), ((0.5, 0.5), "at most one"), ((float("nan"),), "from 0 to 1")],
)
def test_an_offer_confidence_out_of_range_is_refused(svc: MemoryService, confidence: Any, problem: str) -> None:
    old = svc.remember(OLD).node.id
    with pytest.raises(InvalidArgument, match=problem):
        svc.rules.check_note(
            NewNote(raw_text=NEW, possible_supersedes=(old,), possible_supersedes_confidence=confidence)
        )


def test_offers_are_followed_along_a_chain_of_versions(store: SQLiteStore) -> None:
    """v2 lists v1, v3 lists v2 (each linker abstained on its own predecessor, nobody confirmed):
    a recall matching v1 alone shows v3 first, reached through v2, then v2."""
    svc = MemoryService.local(store, extractor=LiteCronista())
    v1 = svc.remember(OLD).node
    v2 = store.insert(NewNote(raw_text=NEW, possible_supersedes=(v1.id,), possible_supersedes_why=("p=0.61",)))
    time.sleep(0.005)  # "newest first" reads created_at (ms): versions a few ms apart, as real ones are
    v3 = store.insert(
        NewNote(
            raw_text="Invoices are in DuckDB now: the analysts wanted columnar scans.",
            possible_supersedes=(v2.id,),
            possible_supersedes_why=("p=0.58",),
        )
    )
    (entry, _), *_ = svc.recall(QUERY).results
    assert entry.head.id == v1.id
    assert [y.node.id for y in entry.maybe_replaced_by] == [v3.id, v2.id]
    assert entry.maybe_replaced_by[0].reason == f"may replace {v2.id}, listed here"
    assert entry.maybe_replaced_by[1].reason == "p=0.61"
    svc.supersede(v3.id, v2.id)  # confirmed: v3 replaces v2, which still only may replace v1
    (entry, _), *_ = svc.recall(QUERY).results
    assert entry.head.id == v1.id
    # v1's offer now leads to v2's chain, whose version in force is v3: shown once, with v2's reason
    assert [(y.node.id, y.reason) for y in entry.maybe_replaced_by] == [(v3.id, "p=0.61")]


def test_another_namespace_or_an_incompatible_scope_is_never_shown(svc: MemoryService, store: SQLiteStore) -> None:
    old = svc.remember(OLD).node.id
    # Forged straight into the store: the linker only ever lists same-namespace, compatible candidates.
    store.insert(NewNote(raw_text="Elsewhere invoices live in DuckDB.", namespace="other", possible_supersedes=(old,)))
    store.insert(NewNote(raw_text="In staging invoices live in DuckDB.", scope="staging", possible_supersedes=(old,)))
    prod = store.insert(NewNote(raw_text="Invoices now live in MySQL.", scope="production", possible_supersedes=(old,)))
    (entry, _), *_ = svc.recall(QUERY).results
    assert [y.node.id for y in entry.maybe_replaced_by] == [prod.id]  # production is the default scope
    (entry, _), *_ = svc.recall(QUERY, scope="staging").results  # the staging note is no successor of a default one
    assert [y.node.id for y in entry.maybe_replaced_by] == [prod.id]
    assert svc.recall(QUERY, namespace="other").results == []


# ---------------------------------------------------------------------------- through gRPC storage


@pytest.fixture
def storage(store: SQLiteStore) -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(store)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0)


def test_the_gateway_path_answers_the_same_as_in_process(store: SQLiteStore, storage: str) -> None:
    remote = GrpcStorage(storage)
    try:
        gateway = MemoryService(remote, extractor=LiteCronista(), linker=OfferingLinker(), config=ServiceConfig())
        old, new = story(gateway)  # RememberNote carries the linker's reasons
        embedded = service_on(store)
        for query in (QUERY, "invoices"):
            for detail in ("brief", "full"):
                here = recall_answer(embedded.recall(query), detail=detail, note_chars=2000, scoped=False)
                there = recall_answer(gateway.recall(query), detail=detail, note_chars=2000, scoped=False)
                here.data.pop("latency_ms", None)
                there.data.pop("latency_ms", None)
                assert there == here, (query, detail)
        hit = recall_answer(gateway.recall(QUERY), detail="full", note_chars=2000, scoped=False).data["results"][0]
        assert hit["maybe_replaced_by"][0]["id"] == new and hit["maybe_replaced_by"][0]["reason"] == "p=0.50, test"
        # The store's possible successors, as they cross the wire with the recall (RecallNodes).
        offered = store.possible_successors([old, new], namespace="default")
        assert list(offered) == [old] and [y.node.id for y in offered[old]] == [new]
        (entry, _), *_ = gateway.recall(QUERY).results
        assert [(y.node, y.reason, y.confidence) for y in entry.maybe_replaced_by] == [
            (y.node, y.reason, y.confidence) for y in offered[old]
        ]
        assert gateway.recall(QUERY, namespace="other").results == []
    finally:
        remote.close()


# ---------------------------------------------------------------------------- the side table


def test_a_file_of_the_previous_schema_gets_its_offers_from_possible_supersedes(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        m.setattr(sqlite_schema, "MIGRATIONS", MIGRATIONS[:5])
        SQLiteStore(db_path).close()
    # What the previous version wrote: a note, one that lists it, one forgotten that listed it too.
    old, new, gone, other = (
        "01JA0000000000000000000001",
        "01JA0000000000000000000002",
        "01JA0000000000000000000003",
        "01JA0000000000000000000004",
    )
    with closing(sqlite3.connect(db_path)) as conn:
        for node_id, text, status, ns, possible in (
            (old, OLD, "active", "default", "[]"),
            (new, NEW, "active", "default", json.dumps([old])),
            (gone, "Invoices went to a spreadsheet.", "forgotten", "default", json.dumps([old])),
            (other, "Invoices elsewhere.", "active", "other", json.dumps([old])),
        ):
            conn.execute(
                "INSERT INTO nodes (id, namespace, raw_text, created_at, status, chain_root, version, "
                "extraction_state, possible_supersedes) VALUES (?, ?, ?, ?, ?, ?, 1, 'pending', ?)",
                (node_id, ns, text, int(node_id[-1]), status, node_id, possible),
            )
        conn.commit()
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'offers'").fetchone() is None
    upgraded = SQLiteStore(db_path)
    try:
        assert upgraded.schema_version() == len(MIGRATIONS)
        rows = (
            upgraded._conn()
            .execute("SELECT candidate_id, node_id, namespace, reason FROM offers ORDER BY 2")
            .fetchall()
        )
        # kept as they were (reasons were never stored before); nothing for the forgotten note
        assert [tuple(r) for r in rows] == [(old, new, "default", None), (old, other, "other", None)]
        assert upgraded.get(new).possible_supersedes == (old,)  # type: ignore[union-attr]
        (entry, _), *_ = service_on(upgraded).recall(QUERY).results
        assert entry.head.id == old and [y.node.id for y in entry.maybe_replaced_by] == [new]
    finally:
        upgraded.close()


def test_offers_of_the_previous_schema_keep_their_order_without_a_confidence(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offers stored before ``0007_offer_position``: where each note listed the candidate comes
    from its ``possible_supersedes`` order, and no confidence (they rank after any offer with one)."""
    with monkeypatch.context() as m:
        m.setattr(sqlite_schema, "MIGRATIONS", MIGRATIONS[:6])
        SQLiteStore(db_path).close()
    a, b, c = "01JA0000000000000000000001", "01JA0000000000000000000002", "01JA0000000000000000000003"
    with closing(sqlite3.connect(db_path)) as conn:
        for node_id, text, possible in ((a, OLD, "[]"), (b, OTHER, "[]"), (c, NEW, json.dumps([b, a]))):
            conn.execute(
                "INSERT INTO nodes (id, namespace, raw_text, created_at, status, chain_root, version, "
                "extraction_state, possible_supersedes) VALUES (?, 'default', ?, ?, 'active', ?, 1, 'pending', ?)",
                (node_id, text, int(node_id[-1]), node_id, possible),
            )
            for cand in json.loads(possible):  # as 0006_offers filled it, with no order
                conn.execute(
                    "INSERT INTO offers(candidate_id, node_id, namespace) VALUES (?, ?, 'default')", (cand, node_id)
                )
        conn.commit()
    upgraded = SQLiteStore(db_path)
    try:
        rows = upgraded._conn().execute("SELECT candidate_id, position, confidence FROM offers ORDER BY 2").fetchall()
        assert [tuple(r) for r in rows] == [(b, 0, None), (a, 1, None)]
        found = upgraded.possible_successors([a, b], namespace="default")
        assert [(y.node.id, y.position, y.confidence) for y in found[a]] == [(c, 1, None)]
        assert [(y.node.id, y.position, y.confidence) for y in found[b]] == [(c, 0, None)]
    finally:
        upgraded.close()


def test_the_reverse_lookup_uses_the_primary_key(store: SQLiteStore) -> None:
    plan = " ".join(
        str(r[-1])
        for r in store._conn().execute(
            "EXPLAIN QUERY PLAN SELECT node_id FROM offers WHERE candidate_id IN (?, ?) AND namespace = ?",
            ("A", "B", "default"),
        )
    )
    assert "USING PRIMARY KEY" in plan and "SCAN offers" not in plan, plan


# ---------------------------------------------------------------------------- size and the benchmark


def test_an_answer_with_successors_stays_within_the_recall_budget(store: SQLiteStore) -> None:
    """recall(k=5): at most 1.5 x the notes' text + 100 characters per item, where the items are
    the hits and the successors shown beside them (their text is returned notes' text). The
    notes are as short as bench.answers' (~80 characters), where the overhead weighs most."""
    svc = MemoryService.local(store, extractor=LiteCronista())
    for topic in ["invoices", "payroll", "reports", "exports", "backups"]:
        old = svc.remember(
            f"We keep the {topic} in Postgres because the accountants query them with psql at month-end "
            "and the auditors read a replica."
        ).node
        store.insert(  # what remember stores when the linker abstains on its predecessor
            NewNote(
                raw_text=f"The {topic} moved to SQLite: one file is enough for our volume, and a backup is "
                "a plain file copy now.",
                possible_supersedes=(old.id,),
                possible_supersedes_why=("p=0.61, cosine 0.72",),
            )
        )
    out = svc.recall("accountants psql postgres", k=5)
    shown = [y for r, _ in out.results for y in r.maybe_replaced_by]
    assert len(out.results) == 5 and len(shown) == 5 and all(y.result is None for y in shown)
    notes = sum(len(r.head.raw_text) for r, _ in out.results) + sum(len(y.node.raw_text) for y in shown)
    for detail in ("brief", "full"):
        answer = recall_answer(out, detail=detail, note_chars=2000, scoped=False)
        returned = len(answer.text) + len(json.dumps(answer.data, ensure_ascii=False, separators=(",", ":")))
        budget = 1.5 * notes + 100 * (len(out.results) + len(shown))
        if detail == "brief":  # the target is recall's default answer, as in tests/test_answers.py
            assert returned <= budget, (returned, budget)


def test_the_benchmark_judge_sees_the_successors_but_the_hits_stay_hits(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import memories

    monkeypatch.setitem(memories.BENCH_LINKERS, "offering-test", lambda service: OfferingLinker())
    monkeypatch.setenv("EVOMEM_HINT_MIN_P", "0")  # this linker's confidences are no calibrated probabilities
    scenario = {
        "set": "t",
        "index": 0,
        "notes": [
            {"i": 0, "text": OLD, "scope": None, "supersedes": None, "valid_at_question": False},
            {"i": 1, "text": NEW, "scope": None, "supersedes": 0, "valid_at_question": True},
        ],
        "questions": [{"id": "q0", "text": QUERY}],
    }

    async def go() -> memories.ScenarioRun:
        async with memories.EvoMemMemory(linker="offering-test", vectors="off", statuses=False) as mem:
            return await mem.run(scenario)

    run = asyncio.run(go())
    assert run.abstentions == {1: [0]}
    assert run.returned["q0"] == [0] and len(run.via["q0"]) == 1  # the hit-rate metrics see the hit only
    assert run.successors["q0"] == [1]
    assert [(it.text, it.status) for it in run.items["q0"]] == [(OLD, "active"), (NEW, "active")]
    assert run.items["q0"][1].date
