"""Chain semantics, end to end through ``MemoryService`` on a real SQLite file.

A decision is a chain of versions. Superseding never deletes; recall answers with the
head (the version in force); forgetting the head retracts the decision.
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from evomem.adapters.sqlite.driver import sqlite as sqlite3
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import CycleError, Forgotten, InvalidArgument, NamespaceMismatch, Purged
from evomem.entrypoints.mcp.answers import recall_answer

V1 = "We picked Postgres for the ledger."
V2 = "We moved the ledger from Postgres to SQLite, Postgres was overkill."


def recall_full(out):
    """recall's structured content with every field (detail=full), as a dict."""
    return recall_answer(out, detail="full", note_chars=10**6, scoped=False).data


def fill(service: MemoryService, n: int = 12) -> None:
    """Unrelated notes, so BM25 has a corpus to weigh terms against (tiny corpora score ~0)."""
    for i in range(n):
        service.remember(f"Filler {i}: the search service caches results in Redis for {i} minutes.")


def chain_rows(db_path: Path, root: str) -> list[tuple[str, int, str | None, str | None, str]]:
    """(id, version, supersedes, superseded_by, status) of a chain, read straight from the file."""
    with closing(sqlite3.connect(db_path)) as conn:
        return conn.execute(
            "SELECT id, version, supersedes, superseded_by, status FROM nodes WHERE chain_root = ? ORDER BY version",
            (root,),
        ).fetchall()


def build_chain(service: MemoryService, n: int, topic: str = "ledger") -> list[str]:
    ids = [service.remember(f"Version 1: the {topic} uses engine number one.").node.id]
    for v in range(2, n + 1):
        out = service.remember(
            f"Moved the {topic} to engine number {v} because engine {v - 1} was too slow.", supersedes=ids[-1]
        )
        ids.append(out.node.id)
    return ids


# ---------------------------------------------------------------------------- supersede


def test_supersede_keeps_the_old_version_readable_and_marks_it_superseded(service, store):
    old = service.remember(V1).node
    new = service.remember(V2, supersedes=old.id).node

    node, head, _ = service.get_node(old.id)
    assert node.raw_text == V1
    assert node.status == "superseded"
    assert node.superseded_by == new.id
    assert head is not None and head.id == new.id
    assert new.supersedes == old.id
    assert new.status == "active"
    assert store.stats().by_status == {"active": 1, "superseded": 1, "forgotten": 0}
    assert store.check_invariants() == []


def test_superseding_an_already_superseded_node_retargets_to_the_current_head(service, store, db_path):
    v1 = service.remember(V1).node
    v2 = service.remember(V2, supersedes=v1.id).node

    out = service.remember("The ledger now runs on SQLite in WAL mode.", supersedes=v1.id)

    assert out.node.supersedes == v2.id, "linked after the head, not after the id that was named"
    assert out.node.version == 3
    assert out.link is not None and out.link.requested_id == v1.id
    assert any(v1.id in w and v2.id in w for w in out.warnings), out.warnings
    with closing(sqlite3.connect(db_path)) as conn:
        (detail,) = conn.execute(
            "SELECT detail FROM link_audit WHERE node_id = ? AND action = 'link'", (out.node.id,)
        ).fetchone()
    assert "re-targeted" in detail
    assert store.check_invariants() == []


def test_superseding_the_head_directly_records_no_requested_id_and_no_warning(service, store):
    v1 = service.remember(V1).node
    out = service.remember(V2, supersedes=v1.id)
    assert out.link is not None and out.link.method == "agent" and out.link.requested_id is None
    assert out.warnings == []
    assert store.check_invariants() == []


def test_versions_count_from_one_and_share_the_chain_root(service, store, db_path):
    ids = build_chain(service, 5)

    rows = chain_rows(db_path, ids[0])
    assert [r[0] for r in rows] == ids
    assert [r[1] for r in rows] == [1, 2, 3, 4, 5]
    assert [r[2] for r in rows] == [None, *ids[:-1]]
    assert [r[3] for r in rows] == [*ids[1:], None]
    assert [r[4] for r in rows] == ["superseded"] * 4 + ["active"]
    for node_id in ids:
        assert service.get_node(node_id)[0].chain_root == ids[0]
    assert store.check_invariants() == []


# ---------------------------------------------------------------------------- recall


def test_recall_answers_with_the_head_even_when_the_old_version_matches_best(service, store):
    fill(service)
    v1 = service.remember(V1).node
    v2 = service.remember(V2, supersedes=v1.id).node

    result = recall_full(service.recall("ledger postgres"))

    top = result["results"][0]
    assert top["id"] == v2.id
    assert top["status"] == "active"
    assert top["raw_text"] == V2
    assert top["matched"]["node_id"] == v1.id
    assert top["matched"]["version"] == 1
    assert top["matched"]["is_current"] is False
    assert set(top["matched"]["terms"]) == {"ledger", "postgres"}
    assert store.check_invariants() == []


def test_hits_on_several_versions_merge_into_one_result(service, store):
    fill(service)
    ids = build_chain(service, 4)

    result = recall_full(service.recall("ledger engine", k=10))

    ledger_hits = [r for r in result["results"] if r["chain_root"] == ids[0]]
    assert len(ledger_hits) == 1
    hit = ledger_hits[0]
    assert hit["id"] == ids[-1]
    matched = {hit["matched"]["node_id"], *(m["node_id"] for m in hit.get("also_matched", []))}
    assert matched == set(ids)
    assert sum(m["is_current"] for m in [hit["matched"], *hit.get("also_matched", [])]) == 1
    assert store.check_invariants() == []


def test_include_history_lists_earlier_versions_newest_first_up_to_the_depth(service, store):
    fill(service)
    ids = build_chain(service, 5)

    result = recall_full(service.recall("ledger engine", include_history=True, history_depth=3))

    hit = next(r for r in result["results"] if r["chain_root"] == ids[0])
    assert [step["id"] for step in hit["history"]] == [ids[3], ids[2], ids[1]]
    assert [step["version"] for step in hit["history"]] == [4, 3, 2]
    successors = [ids[4], ids[3], ids[2]]
    for step, successor_id in zip(hit["history"], successors, strict=True):
        successor = service.get_node(successor_id)[0]
        assert step.get("replaced_by") == successor_id
        assert step["superseded_by"] == successor_id
        assert step["status"] == "superseded"
        assert step.get("why_replaced") == successor.trigger
        assert step.get("why_replaced") and "too slow" in step.get("why_replaced")
        assert step.get("what_changed") == successor.change
        assert step.get("what_changed") and "Moved the ledger" in step.get("what_changed")
        assert step.get("replaced_by_method") == "agent"
    assert store.check_invariants() == []


def test_include_history_with_depth_zero_or_without_history_returns_no_steps(service, store):
    fill(service)
    ids = build_chain(service, 3)
    for kwargs in ({"include_history": True, "history_depth": 0}, {"include_history": False}):
        result = recall_full(service.recall("ledger engine", **kwargs))
        hit = next(r for r in result["results"] if r["chain_root"] == ids[0])
        assert hit.get("history", []) == []


def test_the_full_history_stops_at_version_one(service, store):
    fill(service)
    ids = build_chain(service, 3)
    result = recall_full(service.recall("ledger engine", include_history=True, history_depth=50))
    hit = next(r for r in result["results"] if r["chain_root"] == ids[0])
    assert [step["version"] for step in hit["history"]] == [2, 1]


# ---------------------------------------------------------------------------- forget


def test_soft_forget_drops_a_note_from_recall_but_get_node_still_returns_it(service, store):
    fill(service)
    note = service.remember("Deploys freeze on Fridays after the zanzibar incident.").node
    assert [r[0].head.id for r in service.recall("zanzibar").results] == [note.id]

    out = service.forget(note.id)

    assert out.changed and not out.purged
    assert service.recall("zanzibar").results == []
    node, _, _ = service.get_node(note.id)
    assert node.status == "forgotten"
    assert node.raw_text == "Deploys freeze on Fridays after the zanzibar incident."
    assert node.forgotten_at is not None
    assert service.forget(note.id).changed is False, "forgetting twice changes nothing"
    assert store.check_invariants() == []


def test_forgetting_the_head_hides_the_whole_chain_and_does_not_resurrect_the_previous_version(service, store):
    fill(service)
    v1 = service.remember(V1).node
    v2 = service.remember(V2, supersedes=v1.id).node

    out = service.forget(v2.id)

    assert out.chain_head is not None and out.chain_head.id == v2.id
    recalled = service.recall("ledger postgres")
    assert recalled.results == []
    assert any("hidden" in n for n in recalled.notes), recalled.notes
    old = service.get_node(v1.id)[0]
    assert old.status == "superseded", "the replaced decision does not come back into force"
    assert old.superseded_by == v2.id
    assert store.check_invariants() == []


def test_forgetting_an_old_version_keeps_the_chain_in_force(service, store):
    fill(service)
    v1 = service.remember(V1).node
    v2 = service.remember(V2, supersedes=v1.id).node

    service.forget(v1.id)

    result = recall_full(service.recall("ledger postgres"))
    assert [r["id"] for r in result["results"]] == [v2.id]
    matched = {
        result["results"][0]["matched"]["node_id"],
        *(m["node_id"] for m in result["results"][0].get("also_matched", [])),
    }
    assert v1.id not in matched, "a forgotten version no longer matches"
    assert store.check_invariants() == []


def test_remembering_after_an_old_version_of_a_chain_whose_head_is_forgotten_continues_the_chain(service, store):
    fill(service)
    v1 = service.remember(V1).node
    v2 = service.remember(V2, supersedes=v1.id).node
    service.forget(v2.id)

    v3 = service.remember("We went back to Postgres for the ledger: we need replicas.", supersedes=v1.id).node

    assert v3.supersedes == v2.id
    assert v3.version == 3
    assert v3.chain_root == v1.id
    assert v3.status == "active"
    assert service.get_node(v2.id)[0].status == "forgotten", "the forgotten version stays forgotten"
    assert [r[0].head.id for r in service.recall("ledger postgres").results] == [v3.id]
    assert store.check_invariants() == []


def test_superseding_a_forgotten_head_by_its_own_id_is_refused(service, store):
    v1 = service.remember(V1).node
    service.forget(v1.id)
    with pytest.raises(Forgotten):
        service.remember(V2, supersedes=v1.id)
    assert store.stats().by_status["active"] == 0
    assert store.check_invariants() == []


def test_superseding_a_purged_node_is_refused(service, store):
    v1 = service.remember(V1).node
    v2 = service.remember(V2, supersedes=v1.id).node
    service.forget(v1.id, purge=True)
    with pytest.raises(Purged):
        service.remember("Ledger on DuckDB now.", supersedes=v1.id)
    assert service.get_node(v2.id)[0].status == "active"
    assert store.check_invariants() == []


# ---------------------------------------------------------------------------- supersede tool


def test_supersede_links_an_existing_standalone_note_and_reroots_it(service, store):
    old = service.remember(V1).node
    standalone = service.remember("The ledger lives in SQLite now.").node
    assert standalone.chain_root == standalone.id and standalone.version == 1

    linked = service.supersede(standalone.id, old.id)

    assert linked.id == standalone.id
    assert linked.supersedes == old.id
    assert linked.chain_root == old.id
    assert linked.version == 2
    assert linked.link is not None and linked.link.method == "agent"
    assert service.get_node(old.id)[0].superseded_by == standalone.id
    assert service.get_node(old.id)[0].status == "superseded"
    assert store.stats().chains == 1
    assert store.check_invariants() == []


def test_supersede_moves_the_whole_chain_that_starts_at_the_node(service, store, db_path):
    target = build_chain(service, 2, topic="billing")
    mine = build_chain(service, 3, topic="invoices")

    service.supersede(mine[0], target[0])  # target[0] is superseded: re-targeted to target[1]

    rows = chain_rows(db_path, target[0])
    assert [r[0] for r in rows] == [*target, *mine]
    assert [r[1] for r in rows] == [1, 2, 3, 4, 5]
    assert [r[4] for r in rows] == ["superseded"] * 4 + ["active"]
    assert chain_rows(db_path, mine[0]) == []
    assert service.get_node(mine[0])[0].link.requested_id == target[0]
    assert store.check_invariants() == []


def test_supersede_refuses_a_node_that_already_supersedes_another(service, store):
    a = build_chain(service, 2, topic="billing")
    b = service.remember("Search uses OpenSearch.").node
    with pytest.raises(InvalidArgument):
        service.supersede(a[1], b.id)
    assert store.check_invariants() == []


def test_a_cycle_attempt_raises_cycle_error(service, store, db_path):
    old = service.remember(V1).node
    new = service.remember(V2, supersedes=old.id).node
    before = chain_rows(db_path, old.id)

    with pytest.raises(CycleError):
        service.supersede(old.id, new.id)
    with pytest.raises(CycleError):
        service.supersede(old.id, old.id)

    assert chain_rows(db_path, old.id) == before, "a refused link changes nothing"
    assert store.check_invariants() == []


def test_supersedes_across_namespaces_raises_namespace_mismatch(service, store):
    a = service.remember(V1, namespace="team-a").node
    b = service.remember("The ledger is on SQLite.", namespace="team-b").node

    with pytest.raises(NamespaceMismatch):
        service.remember(V2, namespace="team-b", supersedes=a.id)
    with pytest.raises(NamespaceMismatch):
        service.supersede(b.id, a.id)

    assert service.get_node(a.id)[0].status == "active"
    assert service.get_node(b.id)[0].status == "active"
    assert store.stats().by_status["active"] == 2
    assert store.check_invariants() == []


# ---------------------------------------------------------------------------- filters


def test_scope_filter_returns_only_chains_in_force_in_that_scope(service, store):
    fill(service)
    staging = service.remember("Cluster autoscaler runs on spot instances.", scope="staging").node
    prod = service.remember("Cluster autoscaler runs on reserved instances.", scope="production").node
    unscoped = service.remember("Cluster autoscaler logs go to Loki.").node

    def ids(**kw):
        return {r[0].head.id for r in service.recall("cluster autoscaler", k=10, **kw).results}

    assert ids() == {staging.id, prod.id, unscoped.id}
    # A scope's own decisions first, then the default scope's (unscoped and production),
    # which stay in force there until that scope decides otherwise.
    staging_hits = service.recall("cluster autoscaler", k=10, scope="staging").results
    assert staging_hits[0][0].head.id == staging.id
    assert {r[0].head.id for r in staging_hits} == {staging.id, prod.id, unscoped.id}
    assert [r[0].scope_match for r in staging_hits] == ["exact", "default", "default"]
    # production and unscoped are the same, default scope; staging is not returned there
    assert ids(scope="production") == {prod.id, unscoped.id}
    assert ids(scope="eu-west") == {prod.id, unscoped.id}
    analytics = service.remember("Cluster autoscaler runs on a dedicated pool.", scope="analytics").node
    assert analytics.id not in ids(scope="staging")
    assert store.check_invariants() == []


def test_tag_filter_requires_every_tag_on_the_version_in_force(service, store):
    fill(service)
    both = service.remember("Payments retry with exponential backoff.", tags=["payments", "retries"]).node
    one = service.remember("Payments webhooks retry three times.", tags=["payments"]).node
    old = service.remember("Checkout retries payments twice.", tags=["retries"]).node
    head = service.remember("Checkout retries payments five times.", supersedes=old.id).node  # untagged

    def ids(tags):
        return {r[0].head.id for r in service.recall("payments retry", k=10, tags=tags).results}

    assert ids(["payments"]) == {both.id, one.id}
    assert ids(["payments", "retries"]) == {both.id}
    assert ids(["retries"]) == {both.id}, "the old version's tag does not select its chain"
    assert head.id in ids(None)
    assert store.check_invariants() == []


# ---------------------------------------------------------------------------- property test

VOCAB = ("ledger", "billing", "search", "queue", "cache")


class ChainMachine(RuleBasedStateMachine):
    """Random remember / supersede / forget / purge sequences against a shadow model.

    The model keeps each chain as a list of ids (oldest first) plus the forgotten and purged
    sets; after every step the database must agree with it exactly.
    """

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="evomem-chains-"))
        self.store = SQLiteStore(self.dir / "m.db")
        # This machine models chains, not retries: an identical text is a distinct note here (the
        # dedupe window, which would return the earlier note, has its own tests in test_idempotency.py).
        self.service = MemoryService.local(
            self.store, extractor=LiteCronista(), config=ServiceConfig(dedupe_window_ms=0)
        )
        self.chains: dict[str, list[str]] = {}  # root -> ids, oldest first
        self.chain_of: dict[str, str] = {}  # id -> root
        self.words: dict[str, str] = {}  # id -> the vocabulary word in its text
        self.forgotten: set[str] = set()
        self.purged: set[str] = set()

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers

    def _pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(sorted(self.chain_of)))

    def _is_head(self, node_id: str) -> bool:
        return self.chains[self.chain_of[node_id]][-1] == node_id

    def _expect(self, errors: tuple[type[Exception], ...], fn) -> object | None:
        """Run ``fn``; it must raise one of ``errors`` when there are any, and succeed otherwise."""
        if errors:
            with pytest.raises(errors):
                fn()
            return None
        return fn()

    # -- rules

    @rule(word=st.sampled_from(VOCAB), n=st.integers(0, 9))
    def remember(self, word: str, n: int) -> None:
        node = self.service.remember(f"The {word} service uses option {n}.").node
        self.chains[node.id] = [node.id]
        self.chain_of[node.id] = node.id
        self.words[node.id] = word

    @rule(data=st.data(), n=st.integers(0, 9))
    def remember_superseding(self, data: st.DataObject, n: int) -> None:
        if not self.chain_of:
            return
        target = self._pick(data)
        word = self.words[target]
        errors: tuple[type[Exception], ...] = ()
        if target in self.purged:
            errors += (Purged,)
        if self._is_head(target) and target in self.forgotten:
            errors += (Forgotten,)
        root = self.chain_of[target]
        head_before = self.chains[root][-1]
        out = self._expect(
            errors, lambda: self.service.remember(f"Moved the {word} service to option {n}.", supersedes=target)
        )
        if out is None:
            return
        node = out.node
        assert node.supersedes == head_before
        assert node.chain_root == root
        assert node.version == len(self.chains[root]) + 1
        assert (out.link.requested_id if out.link else None) == (target if target != head_before else None)
        self.chains[root].append(node.id)
        self.chain_of[node.id] = root
        self.words[node.id] = word

    @rule(data=st.data())
    def supersede(self, data: st.DataObject) -> None:
        if not self.chain_of:
            return
        a, b = self._pick(data), self._pick(data)
        errors: tuple[type[Exception], ...] = ()
        if a == b or self.chain_of[a] == self.chain_of[b]:
            errors += (CycleError,)
        if self.chains[self.chain_of[a]][0] != a:
            errors += (InvalidArgument,)
        if a in self.purged or b in self.purged:
            errors += (Purged,)
        if self._is_head(b) and b in self.forgotten:
            errors += (Forgotten,)
        node = self._expect(errors, lambda: self.service.supersede(a, b))
        if node is None:
            return
        moved = self.chains.pop(self.chain_of[a])
        root = self.chain_of[b]
        assert node.supersedes == self.chains[root][-1]
        self.chains[root].extend(moved)
        for node_id in moved:
            self.chain_of[node_id] = root

    @rule(data=st.data(), purge=st.sampled_from([False, False, True]))  # mostly soft forgets
    def forget(self, data: st.DataObject, purge: bool) -> None:
        if not self.chain_of:
            return
        target = self._pick(data)
        errors = (Purged,) if target in self.purged else ()
        out = self._expect(errors, lambda: self.service.forget(target, purge=purge))
        if out is None:
            return
        assert out.changed == (purge or target not in self.forgotten)
        self.forgotten.add(target)
        if purge:
            self.purged.add(target)
            with pytest.raises(Purged):
                self.service.get_node(target)

    @rule(word=st.sampled_from(VOCAB))
    def recall(self, word: str) -> None:
        results = self.service.recall(word, k=100).results
        got = [entry.head.id for entry, _ in results]
        for entry, _ in results:
            head = entry.head
            assert head.superseded_by is None and self._is_head(head.id)
            assert head.status == "active" and head.id not in self.forgotten
            for match in entry.matches:
                assert self.chain_of[match.node_id] == self.chain_of[head.id]
                assert match.node_id not in self.forgotten
        assert len(got) == len(set(got)), "one result per chain"
        expected = {
            ids[-1]
            for ids in self.chains.values()
            if ids[-1] not in self.forgotten and any(self.words[i] == word and i not in self.forgotten for i in ids)
        }
        assert set(got) == expected

    # -- invariants, checked after every step

    @invariant()
    def database_agrees_with_the_model(self) -> None:
        assert self.store.check_invariants() == []
        nodes = self.store.get_many(self.chain_of)
        assert len(nodes) == len(self.chain_of), "no node is ever deleted"
        assert self.store.stats().chains == len(self.chains)
        heads = self.store.heads(self.chains)
        for root, ids in self.chains.items():
            assert heads[root].id == ids[-1], "exactly one head per chain, the newest version"
            for version, node_id in enumerate(ids, start=1):
                node = nodes[node_id]
                assert node.chain_root == root
                assert node.version == version
                assert node.supersedes == (ids[version - 2] if version > 1 else None)
                assert node.superseded_by == (ids[version] if version < len(ids) else None)
                if node_id in self.forgotten:
                    assert node.status == "forgotten"
                elif version < len(ids):
                    assert node.status == "superseded"
                else:
                    assert node.status == "active"
                assert node.purged == (node_id in self.purged)
                if node.purged:
                    assert node.raw_text == "" and node.status == "forgotten"
        for node in nodes.values():
            if node.status == "active":
                assert node.superseded_by is None, "every active node is a head"


TestChainMachine = ChainMachine.TestCase
TestChainMachine.settings = settings(
    max_examples=50,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
