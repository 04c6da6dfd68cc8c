"""The scored linker: subject + option + change cue (+ embedding), with link / abstain / none.

Unit tests call ``ScoredLinker.decide`` on hand-made candidates (the service already filters
them; the linker checks status and scope again). Service tests go through ``MemoryService``
on SQLite, with the chain lookup wired as ``bootstrap.linker_for("scored")`` wires it.
Every negative case has a positive control beside it, so no test passes because nothing links.
"""

from __future__ import annotations

import itertools

import pytest

from bench.timing import instrument
from evomem.adapters.models.embedding import HashingEmbedder
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService
from evomem.bootstrap.linkers import linker_for
from evomem.domain.cronista import LiteCronista
from evomem.domain.linkers.heuristic import HeuristicLinker
from evomem.domain.linkers.scored import ScoredLinker
from evomem.domain.model import LinkDecision, MemoryNode
from evomem.domain.subject import analyse, lowercase_vocabulary
from evomem.settings import AUTO_SUPERSEDE, Settings

_ids = itertools.count(1)


def node(text: str, *, scope: str | None = None, status: str = "active", supersedes: str | None = None) -> MemoryNode:
    n = next(_ids)
    return MemoryNode(
        id=f"01J{n:023d}",
        raw_text=text,
        scope=scope,
        status=status,  # type: ignore[arg-type]
        created_at=1_700_000_000_000 + n,
        supersedes=supersedes,
    )


def run(text: str, *cands: MemoryNode, scope: str | None = None, linker: ScoredLinker | None = None) -> LinkDecision:
    return (linker or ScoredLinker()).decide(text, scope, list(cands))


def assert_link(decision: LinkDecision, target: MemoryNode) -> None:
    assert decision.kind == "link", decision
    assert decision.proposal is not None
    assert decision.proposal.target_id == target.id


def spans(evidence: tuple[str, ...]) -> dict[str, str]:
    """Evidence items are ``label: span``."""
    out = {}
    for item in evidence:
        label, _, span = item.partition(": ")
        out.setdefault(label, span)
    return out


LEDGER_DB = "We picked Postgres for the ledger database because it has managed backups."
LEDGER_AUTH = "Decision: the ledger uses Auth0 as its auth provider."


# ----------------------------------------------------------------------------- link


def test_link_a_change_from_the_candidates_option():
    old = node(LEDGER_DB)
    d = run("We moved the ledger database from Postgres to SQLite since it needs no extra server.", old)
    assert_link(d, old)


def test_link_a_replacement_that_names_the_old_option_in_a_later_clause():
    old = node(LEDGER_DB)
    assert_link(run("Ledger runs on SQLite; Postgres was overkill.", old), old)
    assert_link(run("The ledger team went with SQLite after Postgres kept timing out.", old), old)
    assert_link(run("Settled: SQLite for the ledger. Postgres was painful to operate.", old), old)


def test_link_an_implicit_change_with_no_change_words_when_one_topic_fits():
    old = node(LEDGER_AUTH)
    other = node("The billing service database is MySQL.")  # another component: no competition
    assert_link(run("From here on the ledger runs on Cognito.", old, other), old)
    assert_link(run("Ledger auth provider is Okta as of this sprint.", old, other), old)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("We picked Prometheus for the ledger metrics stack.", "The ledger monitoring migrated to Datadog this week."),
        ("Ledger wire format: going with JSON.", "Changed the ledger serialization format to Protobuf."),
        ("We picked Auth0 for the ledger auth provider.", "Switched the ledger login provider to Keycloak."),
        ("We picked Postgres for the ledger database.", "The ledger datastore migrated to SQLite this week."),
    ],
)
def test_link_across_paraphrased_aspects(old, new):
    target = node(old)
    assert_link(run(new, target), target)


def test_link_a_revert_to_the_option_the_candidate_replaced():
    old = node("We moved the ledger database from Postgres to SQLite.")
    d = run("We went back to Postgres for the ledger database; SQLite lacked the features we needed.", old)
    assert_link(d, old)
    assert_link(run("Ledger returns to Postgres.", old), old)


def test_link_replacing_x_with_y_and_x_instead():
    old = node("Search api caching layer: going with Redis.")
    assert_link(run("Replacing Redis with Memcached as the search api cache.", old), old)
    assert_link(run("Search api: Redis is no longer the cache, we use Memcached instead.", old), old)


def test_link_picks_the_version_whose_option_the_note_leaves_else_the_newest():
    older = node("We picked Kafka for the ledger message queue.")
    newer = node("The ledger queue migrated to RabbitMQ this week.")  # an earlier link was missed
    assert_link(run("We moved the ledger queue from Kafka to NATS.", older, newer), older)
    assert_link(run("The ledger message queue migrated to NATS this week.", older, newer), newer)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Our CI runs on Jenkins.", "We're switching our CI from Jenkins to GitHub Actions next sprint."),
        ("Infrastructure is provisioned with Pulumi.", "We decided to use Terraform for infrastructure provisioning."),
        (
            "The frontend uses Redux for state management.",
            "Frontend state management: we dropped Redux in favour of Zustand.",
        ),
        ("API gateway: NGINX.", "The API gateway now uses Kong instead of NGINX."),
        (
            "Transactional email for billing goes through SendGrid.",
            "Billing emails are sent through Postmark now, SendGrid kept bouncing.",
        ),
        ("We picked Postgres for the ledger database.", "The ledger database is SQLite, not Postgres."),
    ],
)
def test_link_phrasings_the_benchmark_does_not_use(old, new):
    target = node(old)
    assert_link(run(new, target), target)


def test_names_that_say_what_a_fact_is_about_are_part_of_its_subject():
    berlin = node("The capital of Germany is Berlin.")
    assert run("The capital of Great Britain is London.", berlin).kind == "none"
    assert_link(run("The capital of Germany is Bonn.", berlin), berlin)  # control
    founder = node("Chanel was founded by Coco Chanel.")
    assert run("Dior was founded by Christian Dior.", founder).kind == "none"
    assert_link(run("Chanel was founded by Andy Warhol.", founder), founder)
    government = node("The head of the Scotland government is Nicola Sturgeon.")
    assert run("The head of the Ireland government is Leo Varadkar.", government).kind == "none"


def test_a_version_is_part_of_the_option():
    old = node("The workers run on Python 3.11.")
    d = run("The workers now run on Python 3.12.", old)
    assert_link(d, old)
    assert d.proposal is not None
    assert spans(d.proposal.evidence)["note option"] == "Python 3.12"
    assert run("The workers run on Python 3.11 with more memory now.", old).kind == "none"


# ----------------------------------------------------------------------------- provenance


def test_a_link_records_method_version_confidence_and_evidence_spans():
    old = node(LEDGER_DB)
    new = "We moved the ledger database from Postgres to SQLite."
    d = run(new, old)
    assert_link(d, old)
    p = d.proposal
    assert p is not None
    assert p.method == "scored"
    assert p.by == "scored/1"
    assert 0.6 <= p.confidence <= 0.99
    ev = spans(p.evidence)
    assert ev["note option"] == "SQLite" and ev["note option"] in new
    assert ev["target option"] == "Postgres" and ev["target option"] in old.raw_text
    assert ev["note leaves"] == "Postgres" and ev["note leaves"] in new
    assert ev["change cue"] in new
    for item in p.evidence:
        _label, _, span = item.partition(": ")
        assert span in new or span in old.raw_text, item
    assert {spans((e,))["shared subject"] for e in p.evidence if e.startswith("shared subject")} == {
        "ledger",
        "database",
    }


def test_a_link_is_stored_with_its_provenance_through_the_service(tmp_path):
    store = SQLiteStore(tmp_path / "m.db")
    try:
        svc = MemoryService.local(store, extractor=LiteCronista(), linker=linker_for("scored", store=store))
        timings = instrument(svc)  # counts the linker's calls from outside
        old = svc.remember(LEDGER_DB).node
        out = svc.remember("We moved the ledger database from Postgres to SQLite.")
        assert out.linked_to == old.id
        assert out.decision is not None and out.decision.kind == "link"
        link = store.get(out.node.id).link  # type: ignore[union-attr]
        assert link is not None
        assert (link.method, link.by) == ("scored", "scored/1")
        assert 0.6 <= link.confidence <= 0.99
        assert any(e.startswith("note leaves: Postgres") for e in link.evidence)
        assert store.get(old.id).status == "superseded"  # type: ignore[union-attr]
        assert len(timings.decide_ms) == 2 - 1  # the first note had no candidate: no linker call
    finally:
        store.close()


def test_an_embedder_adds_its_model_and_the_similarity_to_the_provenance():
    linker = ScoredLinker(HashingEmbedder())
    old = node(LEDGER_DB)
    d = run("We moved the ledger database from Postgres to SQLite.", old, linker=linker)
    assert_link(d, old)
    assert d.proposal is not None
    assert d.proposal.by == "scored/1+fake-hashing-384"
    cosine = spans(d.proposal.evidence)["embedding cosine"]
    assert -1.0 <= float(cosine) <= 1.0


# ----------------------------------------------------------------------------- abstain


def test_abstain_when_two_aspects_of_the_component_fit_an_implicit_note():
    """Nothing tells what Zorblax is (not the memory, not its name, not the catalogue)."""
    auth, db = node(LEDGER_AUTH), node(LEDGER_DB)
    d = run("From here on the ledger runs on Zorblax.", auth, db)
    assert d.kind == "abstain", d
    assert {c for c, _ in d.candidates} == {auth.id, db.id}
    assert all(0 < score < 1 for _, score in d.candidates)
    assert d.proposal is None


def test_the_memory_can_tell_which_aspect_an_option_belongs_to():
    """Control for the abstention above: another note says what Zorblax is."""
    auth, db = node(LEDGER_AUTH), node(LEDGER_DB)
    hint = node("We picked Zorblax for the billing service login provider.")
    assert_link(run("From here on the ledger runs on Zorblax.", auth, db, hint), auth)


def test_the_catalogue_tells_which_aspect_a_well_known_product_is():
    """Cognito is a login provider: the note replaces the auth decision, not the database one."""
    auth, db = node(LEDGER_AUTH), node(LEDGER_DB)
    d = run("From here on the ledger runs on Cognito.", auth, db)
    assert_link(d, auth)
    assert d.proposal is not None
    assert "shared subject: Cognito" in d.proposal.evidence
    assert_link(run("From here on the ledger runs on CockroachDB.", auth, db), db)


def test_a_terse_candidate_takes_the_aspect_of_its_option():
    """ "The ledger runs on Auth0" names no aspect; Auth0 is a login provider, so a database
    decision does not replace it and a login-provider decision does."""
    terse_auth, db = node("The ledger runs on Auth0."), node(LEDGER_DB)
    assert_link(run("We moved the ledger login provider to Okta.", terse_auth, db), terse_auth)
    assert run("We moved the ledger database to MySQL.", terse_auth).kind == "none"


def test_a_product_of_several_kinds_does_not_pick_an_aspect():
    """Redis is a cache, a database and a queue: which ledger decision it replaces stays open."""
    cache = node("We picked Memcached for the ledger cache.")
    d = run("From here on the ledger runs on Redis.", cache, node(LEDGER_DB))
    assert d.kind == "abstain", d


def test_the_memory_is_believed_over_the_catalogue():
    """This memory uses Okta as a database (odd, but its own): the note follows the memory."""
    auth, db = node(LEDGER_AUTH), node(LEDGER_DB)
    hint = node("We picked Okta for the audit log database.")
    assert_link(run("From here on the ledger runs on Okta.", auth, db, hint), db)
    assert_link(run("From here on the ledger runs on Okta.", auth, db), auth)  # control: the catalogue


def test_abstain_when_the_candidate_is_less_specific_and_its_option_is_not_named():
    terse = node("Ledger runs on Zorblax; Frobnix was overkill.")  # what Zorblax is, nothing says
    d = run("The ledger database migrated to MySQL this week.", terse)
    assert d.kind == "abstain", d
    assert [c for c, _ in d.candidates] == [terse.id]
    # control: naming the candidate's option makes it a link
    assert_link(run("We moved the ledger database from Zorblax to MySQL.", terse), terse)


def test_a_terse_candidate_inherits_the_subject_of_its_chain():
    first = node(LEDGER_DB, status="superseded")
    terse = node("Ledger runs on SQLite; Postgres was overkill.", supersedes=first.id)
    chain = {first.id: first, terse.id: terse}
    with_history = ScoredLinker(lookup=lambda ids: {i: chain[i] for i in ids if i in chain})
    assert_link(run("The ledger database migrated to MySQL this week.", terse, linker=with_history), terse)


def test_earlier_versions_given_with_the_candidates_decide_as_the_lookup():
    """``decide(..., earlier=)``: the candidates' earlier versions as the caller read them. With no
    lookup, the linker reads a chain of 3 versions from them and decides exactly as through the
    store's lookup (the subject the chain gives a terse candidate, the revert to an option two
    versions back); without either, it reads less."""
    first = node(LEDGER_DB, status="superseded")
    second = node("Ledger moved to MariaDB; Postgres was overkill.", status="superseded", supersedes=first.id)
    third = node("Ledger runs on SQLite; MariaDB was slow.", supersedes=second.id)
    chain = {n.id: n for n in (first, second, third)}
    cands = [node(LEDGER_AUTH), third]
    looked_up = ScoredLinker(lookup=lambda ids: {i: chain[i] for i in ids if i in chain})
    given = ScoredLinker()
    earlier = {first.id: first, second.id: second}
    for text in (
        "The ledger database migrated to MySQL this week.",
        "The ledger database is back on Postgres; SQLite was overkill.",
    ):
        decision = given.decide(text, None, cands, earlier=earlier)
        assert decision == looked_up.decide(text, None, cands)
        assert_link(decision, third)
        assert given.decide(text, None, cands) != decision  # without the chain it reads less
    assert decision.proposal is not None and "goes back to: Postgres" in decision.proposal.evidence


def test_never_link_when_the_note_leaves_an_option_no_candidate_has():
    old = node("We picked ECS for the billing service deployment platform.")
    d = run("Switched the billing service deployment platform to Kubernetes; Nomad was overkill.", old)
    assert d.kind == "abstain", d
    assert_link(run("Switched the billing service deployment platform to Kubernetes; ECS was overkill.", old), old)


def test_an_abstention_is_stored_as_possible_supersedes_through_the_service(tmp_path):
    store = SQLiteStore(tmp_path / "m.db")
    try:
        svc = MemoryService.local(store, extractor=LiteCronista(), linker=ScoredLinker(lookup=store.get_many))
        auth = svc.remember(LEDGER_AUTH).node
        db = svc.remember(LEDGER_DB).node
        out = svc.remember("From here on the ledger runs on Zorblax.")
        assert out.linked_to is None
        assert set(out.node.possible_supersedes) == {auth.id, db.id}
        assert any("possible_supersedes" in w for w in out.warnings)
        assert store.get(auth.id).status == "active" and store.get(db.id).status == "active"  # type: ignore[union-attr]
    finally:
        store.close()


@pytest.mark.parametrize(
    "tentative",
    [
        "Considered switching the ledger database to MySQL, decided against it.",
        "We might move the ledger database to SQLite next quarter.",
        "Should we switch the ledger database to SQLite?",
        "We are evaluating a move of the ledger database to SQLite.",
    ],
)
def test_a_tentative_or_negated_change_is_never_a_link(tentative):
    old = node(LEDGER_DB)
    assert run(tentative, old).kind in ("abstain", "none")
    assert_link(run("We moved the ledger database to SQLite.", old), old)  # control


# ----------------------------------------------------------------------------- none


@pytest.mark.parametrize(
    "restatement",
    [
        "In staging, the mobile backend cache (Redis) had no incidents this month.",
        "In staging, we moved the mobile backend Redis cache to a bigger disk; it stays on Redis.",
        "In staging, the mobile backend caching layer was upgraded to the latest Redis release.",
        "In staging, switched the mobile backend Redis backups to a new bucket.",
        "In staging we switched the mobile backend cache to Redis.",
    ],
)
def test_a_note_restating_the_same_option_never_links(restatement):
    decision = node("In staging, the mobile backend uses Redis as its cache.", scope="staging")
    d = run(restatement, decision, scope="staging")
    assert d.kind == "none", d
    # control: a different option in the same scope replaces it
    assert_link(run("In staging we switched the mobile backend cache to KeyDB.", decision, scope="staging"), decision)


@pytest.mark.parametrize(
    "context",
    [
        "Ledger Postgres backups took 4 minutes last night.",
        "Load test: the ledger on Postgres handled 400 requests per second.",
        "Incident review for the ledger: Postgres latency spiked to 40 ms during the deploy.",
        "Postgres version pinning for the ledger is tracked in the ops wiki.",
        "The ledger database dashboard shows 7 alerts this week.",
    ],
)
def test_a_context_note_never_links_from_or_to(context):
    db = node(LEDGER_DB)
    assert run(context, db).kind == "none"
    ctx = node(context)
    change = "We moved the ledger database from Postgres to SQLite."
    assert run(change, ctx).kind == "none"  # a context note is never the replaced decision
    assert_link(run(change, ctx, db), db)  # control


def test_scope_is_never_crossed_even_if_the_caller_offers_such_candidates():
    staging = node("In staging, the ledger uses SQLite as its database.", scope="staging")
    default = node(LEDGER_DB)
    change = "We moved the ledger database from Postgres to MySQL."
    assert run(change, staging, scope=None).kind == "none"
    assert run("In staging we moved the ledger database from SQLite to MySQL.", default, scope="staging").kind == "none"
    assert_link(run(change, default, scope="production"), default)  # production is the default scope
    assert_link(run("In staging we moved the ledger database from SQLite to MySQL.", staging, scope="staging"), staging)


def test_none_for_another_component_or_another_aspect():
    db = node(LEDGER_DB)
    assert run("We moved the billing service database from Postgres to SQLite.", db).kind == "none"
    assert run("We picked Redis for the ledger cache.", db).kind == "none"
    assert run("Sprint planning moved to Tuesdays.", db).kind == "none"


def test_superseded_and_forgotten_candidates_are_never_targets():
    for status in ("superseded", "forgotten"):
        old = node(LEDGER_DB, status=status)
        assert run("We moved the ledger database from Postgres to SQLite.", old).kind == "none"


def test_works_with_no_embedder_and_no_lookup():
    linker = ScoredLinker()
    assert linker.embedder is None and linker.lookup is None and linker.name == "scored/1"
    old = node(LEDGER_DB)
    assert_link(linker.decide("We moved the ledger database from Postgres to SQLite.", None, [old]), old)
    assert linker.propose("We moved the ledger database from Postgres to SQLite.", None, [old]) is not None
    assert linker.propose("Ledger Postgres backups took 4 minutes.", None, [old]) is None


def test_an_embedder_failure_only_loses_the_feature():
    class Broken:
        name = "broken"

        def encode(self, texts):
            raise RuntimeError("no model")

    old = node(LEDGER_DB)
    assert_link(run("We moved the ledger database from Postgres to SQLite.", old, linker=ScoredLinker(Broken())), old)


# ----------------------------------------------------------------------------- documents


def test_an_explicit_reference_links_documents_and_long_texts_link_nothing_else():
    body = "\n\nAbstract\n========\n\n" + "Some discussion of the proposal. " * 60
    old = node("PEP: 215\nTitle: String Interpolation\n" + body)
    other = node("PEP: 216\nTitle: Docstring Format\n" + body)
    new = (
        "PEP: 292\nTitle: Simpler String Substitutions\n\nThis PEP replaces :pep:`215`, which was too complex.\n" + body
    )
    d = run(new, old, other)
    assert_link(d, old)
    assert d.proposal is not None
    ev = spans(d.proposal.evidence)["explicit reference"]
    assert ev in new and "215" in ev
    mention = "PEP: 293\nTitle: Codec Callbacks\n\nUnlike :pep:`215`, this is about codecs.\n" + body
    assert run(mention, old, other).kind == "none"


# ----------------------------------------------------------------------------- reading notes


def test_options_roles_and_subjects_are_read_from_the_text():
    text = "Switched the ledger to SQLite for the database; Postgres was overkill."
    f = analyse(text, lowercase_vocabulary([text]))
    assert f.option is not None and f.option.text == "SQLite"
    assert [m.text for m in f.prev] == ["Postgres"]
    assert f.subject == {"ledger", "@database"}
    assert f.is_decision and f.change_cue == "Switched"
    for m in f.mentions:
        assert text[m.start : m.end] == m.text
    multi = analyse("Checkout CI: going with GitHub Actions.", frozenset({"checkout"}))
    assert multi.option is not None and multi.option.text == "GitHub Actions"
    lower = analyse("We picked cron for the ledger job scheduler.")
    assert lower.option is not None and lower.option.key == "cron"
    assert lower.subject == {"ledger", "@scheduler"}


# ----------------------------------------------------------------------------- wiring


def test_scored_is_an_auto_supersede_choice_and_builds_a_scored_linker(tmp_path):
    assert "scored" in AUTO_SUPERSEDE
    assert Settings(auto_supersede="scored").linker.auto_supersede == "scored"
    assert isinstance(linker_for("scored"), ScoredLinker)
    assert isinstance(linker_for("heuristic"), HeuristicLinker)
    store = SQLiteStore(tmp_path / "m.db")
    try:
        linker = linker_for("scored", store=store)
        assert isinstance(linker, ScoredLinker) and linker.lookup is not None
    finally:
        store.close()
