"""The heuristic linker, through a ``MemoryService`` built with ``linker=HeuristicLinker()``.

A note that names no ``supersedes`` replaces an active decision when it carries a change cue
and shares enough content vocabulary with it, in the same namespace and a compatible scope.
Every negative case has a positive control, so a test cannot pass because nothing links.
"""

from __future__ import annotations

from contextlib import closing

import pytest

from evomem.adapters.sqlite.driver import sqlite as sqlite3
from evomem.domain import subject
from evomem.domain import text as textrules
from evomem.domain.linkers import vocabulary as vocab
from evomem.domain.linkers.heuristic import HeuristicLinker
from evomem.domain.linkers.vocabulary import content_words
from evomem.domain.model import MemoryNode
from evomem.domain.scope import compatible as scopes_compatible

OLD = "The ledger service stores account balances in Postgres with nightly backups."
NEW = "Moved the ledger account balances from Postgres to SQLite with hourly backups."


@pytest.fixture
def linking(linking_service):
    """The linking service with unrelated notes around, as in a real memory."""
    for text in (
        "Frontend bundles are built with webpack and served from the CDN.",
        "The search service indexes products in OpenSearch every five minutes.",
        "Notifications are sent through a Redis-backed job queue.",
    ):
        linking_service.remember(text)
    return linking_service


def test_a_change_cue_note_links_to_the_active_decision_it_replaces(linking, store):
    old = linking.remember(OLD).node

    out = linking.remember(NEW)

    assert out.node.supersedes == old.id
    assert out.linked_to == old.id
    assert out.node.version == 2 and out.node.chain_root == old.id
    assert linking.get_node(old.id)[0].status == "superseded"
    assert [r[0].head.id for r in linking.recall("ledger balances").results] == [out.node.id]
    assert store.check_invariants() == []


def test_a_heuristic_link_records_its_provenance(linking, store, db_path):
    old = linking.remember(OLD).node

    link = linking.remember(NEW).node.link

    assert link is not None
    assert link.method == "heuristic"
    assert link.by == "heuristic/1"
    mine, theirs = content_words(NEW), content_words(OLD)
    assert link.confidence == round(len(mine & theirs) / min(len(mine), len(theirs)), 3)
    assert 0 < link.confidence < 1
    assert link.requested_id is None
    assert link.created_at > 0
    cue, shared = link.evidence
    assert cue == "change cue: 'Moved'"
    assert shared.startswith("shared words: ")
    words = set(shared.removeprefix("shared words: ").split(", "))
    assert {"ledger", "balances", "postgres", "backups"} <= words
    with closing(sqlite3.connect(db_path)) as conn:
        row = conn.execute(
            "SELECT target_id, method, confidence FROM link_audit WHERE action = 'link' AND target_id = ?", (old.id,)
        ).fetchone()
    assert row == (old.id, "heuristic", link.confidence)


def test_the_linker_never_links_across_namespaces(linking, store):
    elsewhere = linking.remember(OLD, namespace="team-a").node

    out = linking.remember(NEW, namespace="team-b")

    assert out.node.supersedes is None
    assert linking.get_node(elsewhere.id)[0].status == "active"
    # control: the very same note in the same namespace does link
    assert linking.remember(NEW, namespace="team-a").node.supersedes == elsewhere.id
    assert store.check_invariants() == []


def test_the_linker_never_links_across_explicit_different_scopes(linking, store):
    staging = linking.remember("The cluster autoscaler runs on spot instances.", scope="staging").node
    change = "Moved the cluster autoscaler to reserved instances."

    prod = linking.remember(change, scope="production").node

    assert prod.supersedes is None
    assert linking.get_node(staging.id)[0].status == "active"
    # control: the same change in the same scope links
    assert linking.remember(change, scope="staging").node.supersedes == staging.id
    assert store.check_invariants() == []


def test_an_unscoped_change_does_not_replace_a_scoped_decision(linking, store):
    # Unscoped means the default scope: it coexists with the staging decision.
    scoped = linking.remember("The cluster autoscaler runs on spot instances.", scope="staging").node
    out = linking.remember("Moved the cluster autoscaler to reserved instances.")
    assert out.node.supersedes is None
    assert linking.get_node(scoped.id)[0].status == "active"


def test_an_unscoped_change_replaces_a_production_decision(linking, store):
    # Production is the default scope, like unscoped.
    prod = linking.remember("The cluster autoscaler runs on spot instances.", scope="production").node
    out = linking.remember("Moved the cluster autoscaler to reserved instances.")
    assert out.node.supersedes == prod.id


def test_the_linker_does_not_link_without_a_change_cue(linking, store):
    old = linking.remember(OLD).node

    out = linking.remember("The ledger account balances stay in Postgres with nightly backups and replicas.")

    assert out.node.supersedes is None
    assert linking.get_node(old.id)[0].status == "active"
    assert store.stats().by_status["active"] == 5


def test_the_linker_does_not_link_without_shared_vocabulary(linking, store):
    old = linking.remember(OLD).node

    out = linking.remember("Switched the office coffee machine to oat milk.")

    assert out.node.supersedes is None
    assert linking.get_node(old.id)[0].status == "active"


def test_one_shared_word_is_not_enough(linking, store):
    old = linking.remember(OLD).node
    out = linking.remember("Moved the ledger dashboards to Grafana.")  # shares only "ledger"
    assert out.node.supersedes is None
    assert linking.get_node(old.id)[0].status == "active"


def test_the_linker_never_links_to_a_superseded_version(linking, store):
    v1 = linking.remember("Ledger database connections go through pgbouncer pooling on Postgres.").node
    v2 = linking.remember("Ledger data lives in one SQLite file.", supersedes=v1.id).node

    out = linking.remember("Switched pgbouncer pooling to pgcat for Postgres connections.")

    assert out.node.supersedes is None, "only the version in force is a candidate"
    assert linking.get_node(v2.id)[0].status == "active"
    assert store.check_invariants() == []


def test_the_linker_never_links_to_a_forgotten_decision(linking, store):
    old = linking.remember(OLD).node
    linking.forget(old.id)

    out = linking.remember(NEW)

    assert out.node.supersedes is None
    assert linking.get_node(old.id)[0].status == "forgotten"


def test_an_explicit_supersedes_wins_over_the_linker(linking, store):
    old = linking.remember(OLD).node
    other = linking.remember("Ledger exports run as CSV dumps to S3.").node

    out = linking.remember(NEW, supersedes=other.id)

    assert out.node.supersedes == other.id
    assert out.link is not None and out.link.method == "agent"
    assert linking.get_node(old.id)[0].status == "active"


def test_the_linker_picks_the_decision_with_the_most_overlap(linking, store):
    weak = linking.remember("Ledger reports are exported to Postgres nightly for finance.").node
    strong = linking.remember(OLD).node

    out = linking.remember(NEW)

    assert out.node.supersedes == strong.id
    assert linking.get_node(weak.id)[0].status == "active"


def test_without_a_linker_nothing_links_automatically(service, store):
    service.remember(OLD)
    assert service.remember(NEW).node.supersedes is None
    assert store.stats().chains == 2


# ---------------------------------------------------------------------------- the rule itself


def node(text: str, *, scope: str | None = None, status: str = "active", node_id: str = "A" * 26) -> MemoryNode:
    return MemoryNode(id=node_id, raw_text=text, scope=scope, status=status)  # type: ignore[arg-type]


def test_propose_requires_cue_shared_words_and_overlap():
    linker = HeuristicLinker()
    assert linker.propose(NEW, None, [node(OLD)]) is not None
    assert linker.propose(NEW, None, []) is None
    assert linker.propose("The ledger account balances stay in Postgres.", None, [node(OLD)]) is None
    assert linker.propose(NEW, None, [node(OLD, status="superseded")]) is None
    assert linker.propose(NEW, "production", [node(OLD, scope="staging")]) is None
    assert linker.propose(NEW, "staging", [node(OLD, scope="staging")]) is not None
    assert HeuristicLinker(min_shared=10).propose(NEW, None, [node(OLD)]) is None
    assert HeuristicLinker(min_overlap=0.99).propose(NEW, None, [node(OLD)]) is None


def test_content_words_drop_stopwords_cues_and_numbers():
    assert content_words("We moved the ledger to SQLite in 2024") == {"ledger", "sqlite"}


def test_scopes_are_compatible_only_within_one_scope_or_the_default_scope():
    assert scopes_compatible(None, None)
    assert not scopes_compatible("staging", None)
    assert not scopes_compatible(None, "analytics")
    assert scopes_compatible(None, "production")
    assert scopes_compatible("prod", "production")
    assert scopes_compatible("staging", "staging")
    assert not scopes_compatible("staging", "production")


# ----------------------------------------------------------------------------- the shared vocabulary


def test_the_named_differences_are_built_from_the_one_list():
    """Each reader's list is the one list plus a documented difference, never a copy."""
    assert vocab.HEURISTIC_KEEPS <= vocab.STOPWORDS and vocab.QUERY_KEEPS <= vocab.STOPWORDS
    assert vocab.HEURISTIC_DROPS - {"team"} <= vocab.CUE_WORDS
    assert vocab.HEURISTIC_STOPWORDS == (vocab.STOPWORDS - vocab.HEURISTIC_KEEPS) | vocab.HEURISTIC_DROPS
    assert (vocab.STOPWORDS - vocab.QUERY_KEEPS) | {"whose"} == vocab.QUERY_STOPWORDS
    assert set(vocab.CHANGE_PHRASES) >= vocab.HEURISTIC_CUE_SKIPS
    assert subject.CHANGE_CUE is vocab.CHANGE_CUE and subject.STOPWORDS is vocab.STOPWORDS
    assert textrules.QUERY_STOPWORDS is vocab.QUERY_STOPWORDS


@pytest.mark.parametrize(
    ("text", "heuristic", "decision"),
    [
        ("We moved the ledger to SQLite.", "moved", "moved"),  # shared
        ("Updated the ledger backups to hourly.", "Updated", None),  # an edit: the heuristic's only
        ("The new ledger store is SQLite.", "new", None),
        ("The ledger is not Postgres any more.", "not Postgres any more", "any more"),
        ("From here on the ledger runs on SQLite.", None, "From here on"),  # a time marker: the reader's only
        ("Kafka is back for the audit log.", None, "is back"),
        ("Upgraded the ledger from v1.2 to 2.0.", "Upgraded", "from v1.2 to"),
    ],
)
def test_the_two_change_cues_differ_only_as_documented(text: str, heuristic: str | None, decision: str | None):
    h, d = vocab.HEURISTIC_CHANGE_CUE.search(text), vocab.CHANGE_CUE.search(text)
    assert (h.group(0) if h else None) == heuristic
    assert (d.group(0) if d else None) == decision


def test_function_words_the_heuristic_keeps_count_as_content():
    assert content_words("two replicas via Kafka") == {"two", "replicas", "via", "kafka"}
    assert "via" in vocab.STOPWORDS  # the reader drops it from a subject
    assert textrules.query_terms("decided before the migration") == ["decided", "before", "migration"]
