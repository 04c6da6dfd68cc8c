"""Scopes (explicit, inferred, default) and undoing a wrong link."""

from __future__ import annotations

import pytest

from evomem.app.memory import MemoryService
from evomem.domain.errors import InvalidArgument
from evomem.domain.model import LinkDecision
from evomem.domain.scope import compatible, infer_note_scope, infer_scope, may_list

# One named case per scope family: (family, note, expected evidence).
FAMILIES = [
    ("staging", "In staging, the mobile backend uses Redis as its caching layer.", "In staging"),
    ("production", "In production we run the ledger on Postgres.", "In production"),
    ("analytics", "For the analytics replica, the admin dashboard moved to Postmark.", "For the analytics replica"),
    ("eu", "In the EU region, the webhook relay keeps AWS Secrets Manager.", "In the EU region"),
    ("us", "In the US region we keep the CDN on Fastly.", "In the US region"),
    ("apac", "For APAC we serve images from Singapore.", "For APAC"),
    ("mobile", "For the mobile app, object storage is Azure Blob.", "For the mobile app"),
    ("web", "In the web app we use Sentry for errors.", "In the web app"),
    ("tests", "In the test suite we switched the cache to Hazelcast.", "In the test suite"),
    ("load-test", "In the load-test environment the datastore is MySQL.", "In the load-test environment"),
    ("dev", "For local development, the exporter keeps SOPS for secrets.", "For local development"),
    ("qa", "In QA we run nightly data resets.", "In QA"),
    ("on-prem", "For the on-prem install we switched the secret store to Vault.", "For the on-prem install"),
    ("sandbox", "In the sandbox, payments go to the Stripe test account.", "In the sandbox"),
]


@pytest.mark.parametrize(("family", "text", "evidence"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_scope_is_inferred_per_family(family, text, evidence):
    got = infer_scope(text)
    assert got is not None
    assert got.scope == family
    assert got.evidence == evidence


@pytest.mark.parametrize(
    "text",
    [
        "We picked Varnish for the mobile backend caching layer.",
        "Mobile backend cache is KeyDB as of this sprint.",
        "The analytics exporter uses Postgres.",
        "The test runner service moved to Go.",
        "We moved the ledger from Postgres to SQLite.",
        # the CI as what is decided, not where: "for the CI" names the aspect
        "Switched the reporting pipeline to GitLab CI for the CI; Buildkite cost too much.",
    ],
)
def test_component_names_are_not_scopes(text):
    assert infer_scope(text) is None


def test_ci_as_a_place_is_the_tests_scope():
    got = infer_scope("In CI, the ledger tests run on SQLite.")
    assert got is not None and got.scope == "tests" and got.evidence == "In CI"


RECORD = """# ADR 12: Queue for order events

## Context
Load tests in staging showed the synchronous calls time out under peak traffic. {filler}

## Decision
{decision}

## Consequences
The on-call rota for the broker moves to the platform team.
"""


def test_a_long_record_is_scoped_by_its_decision_not_by_its_background(tmp_path) -> None:
    """A long document's context names a place in passing ("Load tests in staging"): the
    decision applies everywhere, so remember stores it unscoped. The same record whose
    decision is for staging is scoped; a short note is read whole, as before."""
    from evomem.adapters.sqlite.store import SQLiteStore

    filler = "The order, billing and shipping services call each other over HTTP. " * 20
    everywhere = RECORD.format(filler=filler, decision="Order events go through RabbitMQ with quorum queues.")
    staging = RECORD.format(filler=filler, decision="In staging, order events go through RabbitMQ first.")
    assert infer_scope(everywhere) is not None  # the whole text names staging in passing
    assert infer_note_scope(everywhere) is None
    got = infer_note_scope(staging)
    assert got is not None and got.scope == "staging" and got.evidence == "In staging"
    assert infer_note_scope("In staging, the cache is Redis.") == infer_scope("In staging, the cache is Redis.")
    svc = MemoryService.local(SQLiteStore(tmp_path / "s.db"))
    assert svc.remember(everywhere).node.scope is None
    stored = svc.remember(staging).node
    assert (stored.scope, stored.scope_source) == ("staging", "inferred")


def test_default_scope_is_unscoped_or_production():
    assert compatible(None, "production")
    assert compatible("prod", None)
    assert not compatible("staging", None)
    assert not compatible("eu", "analytics")


def test_remember_records_an_inferred_scope_and_where_it_came_from(service: MemoryService):
    node = service.remember("In staging, the ledger runs on SQLite.").node
    assert (node.scope, node.scope_source, node.scope_evidence) == ("staging", "inferred", "In staging")
    explicit = service.remember("The ledger runs on SQLite.", scope="eu-west").node
    assert (explicit.scope, explicit.scope_source, explicit.scope_evidence) == ("eu-west", "explicit", None)
    plain = service.remember("The ledger runs on SQLite.").node
    assert (plain.scope, plain.scope_source) == (None, None)


def test_an_explicit_scope_wins_over_the_text(service: MemoryService):
    node = service.remember("In staging, the ledger runs on SQLite.", scope="analytics").node
    assert (node.scope, node.scope_source) == ("analytics", "explicit")


def test_a_guessed_scope_never_rules_a_candidate_out():
    """Scopes callers gave never meet; a difference that rests on an inferred scope, on either
    side, leaves the candidate listable (compatible still decides what may be linked)."""
    assert not may_list("staging", None, a_inferred=False, b_inferred=False)
    assert not may_list("staging", "eu", a_inferred=False, b_inferred=False)
    assert may_list("staging", None, a_inferred=True, b_inferred=False)
    assert may_list(None, "tests", a_inferred=False, b_inferred=True)
    assert may_list("staging", "eu", a_inferred=False, b_inferred=True)
    assert may_list(None, "production", a_inferred=False, b_inferred=False)  # compatible
    assert not compatible("staging", None)  # still never linked by the server


def test_a_note_of_another_scope_is_not_offered_the_default_decision_inferred_or_given(tmp_path):
    """The embedded default (auto-supersede off, offers on), real SQLite: a note whose scope was
    guessed from its words ("only in CI") is not offered the unscoped decision, since it does not
    say it replaces the default scope's decision (issue 30: offers respect scope); the same note
    with that scope given explicitly is not either (scopes callers gave never meet)."""
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    text = "analytics-etl pre-commit: no mypy hook now; type checking runs only in CI."
    for given, offered in ((None, False), ("tests", False)):
        service = build_embedded(Settings(db=str(tmp_path / f"{given}.db"), vectors="off"))
        try:
            old = service.remember("The analytics-etl repo runs a mypy pre-commit hook on every commit.").node
            out = service.remember(text, scope=given)
            assert out.node.scope == "tests"
            assert out.node.scope_source == ("inferred" if given is None else "explicit")
            assert (old.id in out.node.possible_supersedes) is offered
            assert out.node.supersedes is None and service.get_node(old.id)[0].status == "active"
        finally:
            service.close()


def test_a_staging_note_never_replaces_the_default_decision(linking_service: MemoryService):
    prod = linking_service.remember("We picked Postgres for the ledger database.").node
    staging = linking_service.remember("In staging we switched the ledger database from Postgres to SQLite.").node
    assert staging.scope == "staging"
    assert staging.supersedes is None
    assert linking_service.get_node(prod.id)[0].status == "active"
    # and within one scope the same wording links
    again = linking_service.remember("In staging we moved the ledger database from SQLite to DuckDB.").node
    assert again.supersedes == staging.id


def test_recall_in_a_scope_answers_its_own_decision_first_then_the_default(service: MemoryService):
    default = service.remember("The ledger database is Postgres.").node
    staging = service.remember("In staging, the ledger database is SQLite.").node
    other = service.remember("For the analytics replica, the ledger database is DuckDB.").node
    results = service.recall("ledger database", scope="staging", k=10).results
    assert [r[0].head.id for r in results] == [staging.id, default.id]
    assert other.id not in {r[0].head.id for r in results}


# ---------------------------------------------------------------------------- unlink


def test_unlink_restores_the_previous_head_and_keeps_an_audit_record(linking_service: MemoryService, store):
    old = linking_service.remember("We picked Postgres for the ledger.").node
    wrong = linking_service.remember("We moved the ledger from Postgres to SQLite.").node
    assert wrong.supersedes == old.id and wrong.link.method == "heuristic"
    node, restored = linking_service.unlink(wrong.id, author="reviewer")
    assert restored.id == old.id and restored.status == "active" and restored.superseded_by is None
    assert node.supersedes is None and node.version == 1 and node.chain_root == node.id and node.link is None
    assert node.status == "active"
    assert store.check_invariants() == []
    audit = store.link_audit(wrong.id)
    assert [a["action"] for a in audit] == ["link", "unlink"]
    assert audit[-1]["by"] == "reviewer" and "heuristic" in audit[-1]["detail"]
    # both decisions answer recall again
    heads = {r[0].head.id for r in linking_service.recall("ledger postgres sqlite").results}
    assert heads == {old.id, wrong.id}


def test_unlink_in_the_middle_of_a_chain_moves_the_later_versions_along(service: MemoryService, store):
    a = service.remember("Queue is RabbitMQ.").node
    b = service.remember("Queue moved to Kafka.", supersedes=a.id).node
    c = service.remember("Queue moved to Redis Streams.", supersedes=b.id).node
    _node, restored = service.unlink(b.id)
    assert restored.id == a.id and restored.status == "active"
    moved = service.get_node(c.id)[0]
    assert (moved.chain_root, moved.version, moved.supersedes) == (b.id, 2, b.id)
    assert store.check_invariants() == []


def test_unlink_of_a_note_that_supersedes_nothing_is_a_clear_error(service: MemoryService):
    a = service.remember("Queue is RabbitMQ.").node
    with pytest.raises(InvalidArgument, match="supersedes nothing"):
        service.unlink(a.id)


def test_unlink_keeps_a_forgotten_predecessor_forgotten(service: MemoryService):
    a = service.remember("Queue is RabbitMQ.").node
    b = service.remember("Queue moved to Kafka.", supersedes=a.id).node
    service.forget(a.id)
    _, restored = service.unlink(b.id)
    assert restored.status == "forgotten"


# ---------------------------------------------------------------------------- abstention


class AbstainingLinker:
    """Stands in for a linker that is unsure (a unit-test fake: the real linkers abstain on their own data)."""

    name = "abstainer/test"
    abstains = True

    def prepare(self, text):
        pass

    def wants_candidates(self, text):
        return True

    def decide(self, text, scope, candidates, similarities=None, scope_inferred=False, earlier=None):
        return LinkDecision(kind="abstain", candidates=tuple((c.id, 0.5) for c in candidates[:2]), reason="unsure")

    def propose(self, text, scope, candidates):  # pragma: no cover - decide is preferred
        return None


def test_an_abstaining_linker_marks_possible_supersedes_and_one_call_confirms(store):
    from evomem.domain.cronista import LiteCronista

    svc = MemoryService.local(store, extractor=LiteCronista(), linker=AbstainingLinker())
    old = svc.remember("We picked Postgres for the ledger.").node
    out = svc.remember("We moved the ledger from Postgres to SQLite.")
    assert out.node.supersedes is None
    assert out.decision is not None and out.decision.kind == "abstain"
    assert out.node.possible_supersedes == (old.id,)
    assert any("possible_supersedes" in w for w in out.warnings)
    assert svc.get_node(old.id)[0].status == "active"  # nothing hidden while unsure
    linked = svc.supersede(out.node.id, old.id)
    assert linked.supersedes == old.id and linked.possible_supersedes == ()
