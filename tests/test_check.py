"""check: is a premise still true? In both wirings, through the service and the MCP tool.

Each kind of answer: in_force, superseded (what replaced it, when, why, who), contradicted,
unknown; a statement about another scope answered for that scope; check(node_id) in force or not;
bad input (neither argument, both, an unknown id, another namespace's id) refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from wirings import WIRINGS, wired

from evomem.app.memory import MemoryService
from evomem.domain.errors import InvalidArgument, NamespaceMismatch, NotFound
from evomem.entrypoints.mcp.server import build_mcp_server

POSTGRES = "We picked Postgres for the ledger because the team knew it well."
SQLITE = "We moved the ledger from Postgres to SQLite, because Postgres was overkill for our load."
SEARCH = "The billing service search engine is Meilisearch."
STAGING = "In staging, the ledger runs on DuckDB."
NOISE = "Reminder: the coffee machine on floor 3 is descaled on Mondays."


def _memory(service: MemoryService) -> dict[str, str]:
    ids = {"postgres": service.remember(POSTGRES, author="ana").node.id}
    ids["sqlite"] = service.remember(SQLITE, supersedes=ids["postgres"], author="bo").node.id
    ids["search"] = service.remember(SEARCH).node.id
    ids["staging"] = service.remember(STAGING, scope="staging").node.id
    ids["noise"] = service.remember(NOISE).node.id
    return ids


@pytest.mark.parametrize("wiring", WIRINGS)
def test_each_kind_of_answer(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _memory(service)
        held = service.check("the ledger runs on SQLite")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [ids["sqlite"]]
        assert held.confidence >= 0.8
        old = service.check("The ledger runs on Postgres.")
        assert old.verdict == "superseded" and [n.id for n in old.in_force] == [ids["sqlite"]]
        assert [n.id for n in old.named] == [ids["postgres"]]
        (change,) = old.changes
        assert (change.older.id, change.newer.id, change.who) == (ids["postgres"], ids["sqlite"], "bo")
        assert "overkill" in change.newer.trigger and change.at > 0
        other = service.check("the ledger runs on MySQL")
        assert other.verdict == "contradicted" and [n.id for n in other.in_force] == [ids["sqlite"]]
        assert other.confidence < held.confidence
        # no option the reader knows, but the words of a note in force say it
        words = service.check("the coffee machine on floor 3 is descaled on Mondays")
        assert words.verdict == "in_force" and [n.id for n in words.in_force] == [ids["noise"]]
        for unknown in ("the office plants are watered on Fridays", "the mobile app is written in Kotlin"):
            out = service.check(unknown)
            assert out.verdict == "unknown" and out.in_force == [] and out.confidence <= 0.3, (unknown, out)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_statement_about_another_scope_is_answered_for_that_scope(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _memory(service)
        staging = service.check("In staging, the ledger runs on DuckDB.")
        assert staging.verdict == "in_force" and staging.scope == "staging"
        assert [n.id for n in staging.in_force] == [ids["staging"]]
        assert service.check("the ledger runs on DuckDB", scope="staging").verdict == "in_force"
        # the default scope's decision holds in production: DuckDB is not what it says
        assert service.check("the ledger runs on DuckDB").verdict == "contradicted"
        # a scope with no decision of its own: the default scope's holds there
        assert service.check("the ledger runs on SQLite", scope="eu-west").verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_check_by_node_id_says_in_force_or_what_replaced_it(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _memory(service)
        assert service.check(node_id=ids["sqlite"]).verdict == "in_force"
        duck = service.remember("We moved the ledger from SQLite to DuckDB.", supersedes=ids["sqlite"], author="cy")
        out = service.check(node_id=ids["postgres"])
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [duck.node.id]
        assert [(c.older.id, c.newer.id, c.who) for c in out.changes] == [
            (ids["postgres"], ids["sqlite"], "bo"),
            (ids["sqlite"], duck.node.id, "cy"),
        ]
        service.forget(duck.node.id)
        assert service.check(node_id=ids["sqlite"]).verdict == "retracted"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_bad_input_is_refused_clearly(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _memory(service)
        theirs = service.remember("Team B's ledger runs on Oracle.", namespace="b").node.id
        with pytest.raises(InvalidArgument, match="check needs exactly one of statement"):
            service.check()
        with pytest.raises(InvalidArgument, match="check needs exactly one of statement"):
            service.check("the ledger runs on SQLite", node_id=ids["sqlite"])
        with pytest.raises(NotFound, match="no node with id 01J9ZK3V8W5Q6R7S8T9V0W1X2Y"):
            service.check(node_id="01J9ZK3V8W5Q6R7S8T9V0W1X2Y")
        with pytest.raises(InvalidArgument, match="not a valid node id"):
            service.check(node_id="ledger")
        with pytest.raises(NamespaceMismatch, match="is in namespace 'b', not 'default'"):
            service.check(node_id=theirs, namespace="default")
        with pytest.raises(InvalidArgument, match="statement is empty"):
            service.check("   ")


def test_the_gateway_rules_reader_may_check_other_namespaces_ids_are_unknown(tmp_path: Path) -> None:
    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.app.access import GuardedService, Principal
    from evomem.domain.errors import Forbidden

    store = SQLiteStore(tmp_path / "m.db")
    try:
        service = MemoryService.local(store)
        ids = _memory(service)
        theirs = service.remember("Team B's ledger runs on Oracle.", namespace="b").node.id
        reader = GuardedService(service, Principal("rita", "reader", ("default",)), store)
        assert reader.check("the ledger runs on Postgres").verdict == "superseded"
        assert reader.check(node_id=ids["postgres"]).verdict == "superseded"
        with pytest.raises(NotFound, match="no node with id"):
            reader.check(node_id=theirs)
        with pytest.raises(Forbidden, match="namespace 'b'"):
            reader.check("the ledger runs on Oracle", namespace="b")
    finally:
        store.close()


@pytest.mark.anyio
async def test_the_mcp_tool_answers_the_verdict_its_evidence_and_the_change(service: MemoryService) -> None:
    ids = _memory(service)
    async with Client(build_mcp_server(lambda: service)) as client:
        result = await client.call_tool("check", {"statement": "the ledger runs on Postgres"})
        assert not result.is_error
        data = result.structured_content
        assert data["verdict"] == "superseded" and data["in_force"] == [ids["sqlite"]]
        assert data["changes"][0]["replaced"] == ids["postgres"] and data["changes"][0]["by"] == ids["sqlite"]
        text = "".join(getattr(p, "text", "") for p in result.content)
        assert text.startswith("superseded") and ids["sqlite"] in text
        refused = await client.call_tool("check", {})
        assert refused.is_error and "[invalid_argument]" in "".join(getattr(p, "text", "") for p in refused.content)
        by_id = await client.call_tool("check", {"node_id": ids["sqlite"]})
        assert by_id.structured_content["verdict"] == "in_force"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_premise_without_a_product_name_is_read_by_the_words_of_the_versions(tmp_path: Path, wiring: str) -> None:
    """Values the subject reader has no option for (a time, a size): the words that tell the
    chain's versions apart decide, more cautiously."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Team Heron daily standup: 09:45.").node.id
        now = service.remember("Heron standup 10:30, Ines is in Toronto and can't make the morning.", supersedes=first)
        old = service.check("The Heron standup is at 09:45.")
        assert old.verdict == "superseded" and [n.id for n in old.in_force] == [now.node.id]
        assert 0.5 <= old.confidence < 0.95
        held = service.check("The Heron standup is at 10:30.")
        assert held.verdict == "in_force" and held.confidence < 0.95


@pytest.mark.parametrize("wiring", WIRINGS)
def test_chains_tied_to_a_statement_by_its_option_alone_do_not_flag_it(tmp_path: Path, wiring: str) -> None:
    """Two decisions on other things than the statement's subject ("payroll exports", "payroll
    stock counts") that chose its option, one since replaced: nothing says which the statement is
    about, so neither flags it (tying such chains by the option alone flagged true premises as
    often as it caught replaced ones on the development sets)."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Payroll exports are signed off by Northwind Audit.").node.id
        service.remember("From March, Halvorsen & Co sign off the payroll exports.", supersedes=first)
        service.remember("We picked Northwind Audit for the payroll stock counts.")
        out = service.check("The payroll review uses Northwind Audit.")
        assert out.verdict == "unknown", out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_lowercase_option_is_read_after_the_statements_verb(tmp_path: Path, wiring: str) -> None:
    """A statement "... uses fortnightly" has no name to read as the option, so what follows the verb is, and its
    words tell the versions apart, though the version in force holds more of the statement."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Retro cadence: fortnightly.").node.id
        now = service.remember("The team retro on Fridays is now weekly; the whole team agreed.", supersedes=first)
        old = service.check("The team retro on Fridays uses fortnightly.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        assert old.option == "fortnightly"
        held = service.check("The team retro on Fridays uses weekly.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now.node.id], held


@pytest.mark.parametrize("wiring", WIRINGS)
def test_an_option_every_version_names_does_not_say_which_holds(tmp_path: Path, wiring: str) -> None:
    """The version in force names the old option only to say why it left ("Snyk seats cost ..."):
    words every version holds tell nothing, so a tie on the rest is no answer, never in force."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Dependency scanning in CI: Snyk on every PR.").node.id
        service.remember(
            "PR dependency check is OSV-Scanner plus Dependabot alerts. Snyk seats were $40k.", supersedes=first
        )
        out = service.check("The dependency scanning uses Snyk.")
        assert out.verdict != "in_force", out


def test_the_option_a_statement_names_in_lowercase_is_what_follows_its_verb() -> None:
    from evomem.domain.premise import complement

    assert complement("The volunteer DBS renewal uses every three years.") == "every three years"
    assert complement("the ledger runs on the self-hosted cluster") == "self-hosted cluster"
    assert complement("Pepper's vet appointment, 3pm") is None  # no verb that says what is used


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_value_the_version_in_force_changed_from_is_superseded(tmp_path: Path, wiring: str) -> None:
    """The version in force names the old value only as what it changes from ("from 2 weeks to
    3 weeks"): the old value is caught, the new one holds."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Delivery sprint length: 2 weeks, planning on Mondays.").node.id
        now = service.remember(
            "Eng all-hands: sprint length changes from 2 weeks to 3 weeks starting next quarter.",
            supersedes=first,
        ).node.id
        old = service.check("The delivery sprint length uses 2 weeks.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        assert [n.id for n in old.in_force] == [now]
        held = service.check("The delivery sprint length uses 3 weeks.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_revert_that_names_its_option_again_holds_it(tmp_path: Path, wiring: str) -> None:
    """A version leaves only what the version it replaced named: "GreenCut rehired" after Pine &
    Petal, or "Ward 7 has 28 beds" after 26, holds its option though its clause reads as a report."""
    with wired(wiring, tmp_path / "m.db") as service:
        a = service.remember("Landscaper: GreenCut, fortnightly visits.").node.id
        b = service.remember("New landscaper: Pine & Petal.", supersedes=a).node.id
        service.remember("Pine & Petal fired, GreenCut rehired.", supersedes=b)
        out = service.check("The landscaper uses GreenCut.")
        assert out.verdict == "in_force", out
        c = service.remember("Ward 7 beds: 28.").node.id
        d = service.remember("Ward 7 back down to 26 beds - bay C closed for works.", supersedes=c).node.id
        service.remember("Bay C reopened - Ward 7 has 28 beds.", supersedes=d)
        assert service.check("The ward 7 beds uses 28.").verdict not in ("superseded", "contradicted")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_decision_that_says_less_than_the_statement_does_not_contradict_it(tmp_path: Path, wiring: str) -> None:
    """ "Maria lives in Lyon" names another option than "Maria's employer uses Initech", on a subject the
    statement's contains: as often another aspect of Maria as the same one, so no contradiction; a
    decision on the statement's own subject still contradicts it."""
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember("Maria lives in Lyon.")
        out = service.check("The maria employer uses Initech.")
        assert out.verdict not in ("contradicted", "superseded"), out
        service.remember("Maria's employer is Globex.")
        assert service.check("The maria employer uses Initech.").verdict == "contradicted"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_quantity_in_words_tells_the_versions_apart(tmp_path: Path, wiring: str) -> None:
    """ "three weeks" against "four weeks": the number words are the value, though "three" is a
    stopword elsewhere."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Library board: the standard loan period is three weeks, renewable twice.").node.id
        now = service.remember(
            "New loan rules: loan period now four weeks instead of three weeks, renewals cut to one.", supersedes=first
        ).node.id
        old = service.check("The library loan period uses three weeks.")
        assert old.verdict == "superseded" and [n.id for n in old.named] == [first], old
        held = service.check("The library loan period uses four weeks.")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [now], held


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_chain_that_left_the_option_answers_a_topic_in_other_words(tmp_path: Path, wiring: str) -> None:
    """ "The gym yoga instructor uses Dev." shares only "yoga" with "Yoga: Dev teaches." and its
    successor: one chain that named Dev and left it, and nothing in force that names Dev and a word of
    the topic, say it was replaced. A note in force that names Dev and the topic ("yoga") keeps it from
    being flagged; one about something else ("pilates") does not (helper premise12)."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Yoga: Dev teaches.").node.id
        now = service.remember("Yoga now with Mei.", supersedes=first).node.id
        old = service.check("The gym yoga instructor uses Dev.")
        assert old.verdict == "superseded" and [n.id for n in old.in_force] == [now], old
        assert old.confidence < 0.9
        service.remember("Dev runs the Saturday pilates class.")
        assert service.check("The gym yoga instructor uses Dev.").verdict == "superseded"
        service.remember("Dev covers the Saturday yoga class.")
        assert service.check("The gym yoga instructor uses Dev.").verdict not in ("superseded", "contradicted")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_from_x_in_a_note_that_changes_nothing_leaves_nothing(tmp_path: Path, wiring: str) -> None:
    """ "takes freelance gigs from Hollow Pine Studio" names the studio after "from", but says no
    change: it does not replace the studio, so a statement that names it is not flagged."""
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember("Quorra still takes freelance gigs from Hollow Pine Studio.")
        out = service.check("Quorra's back at Hollow Pine Studio.")
        assert out.verdict not in ("superseded", "contradicted"), out
        first = service.remember("Build runner: we use Jenkins for every repo.").node.id
        service.remember("Moved CI from Jenkins to Buildkite this sprint.", supersedes=first)
        assert service.check("The build runner uses Jenkins.").verdict == "superseded"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_later_decision_that_includes_a_scope_replaces_its_own_decision(tmp_path: Path, wiring: str) -> None:
    """A scope's own decision holds there over the default scope's, until a later decision of the
    default scope says it covers the scope too ("all depots including the UK"); one that leaves
    the scope out ("UK untouched") does not."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Tarrow Freight: all depots fuel on Shell Fleet cards.").node.id
        uk = service.remember("UK depots use Allstar One cards for the motorway coverage.", scope="uk-depots").node.id
        second = service.remember(
            "Procurement: continental depots switch from Shell Fleet to DKV cards. UK untouched for now.",
            supersedes=first,
        ).node.id
        held = service.check("UK depots use Allstar One cards.", scope="uk-depots")
        assert held.verdict == "in_force" and [n.id for n in held.in_force] == [uk], held
        now = service.remember(
            "Group procurement: one fuel card, all depots including the UK move to Radius Velocity cards.",
            supersedes=second,
        ).node.id
        out = service.check("UK depots use Allstar One cards.", scope="uk-depots")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out
        assert [n.id for n in out.named] == [uk] and out.confidence < 0.9


def test_covers_reads_an_explicit_inclusion_of_the_scope() -> None:
    from evomem.domain.premise import covers

    assert covers("Board: open visiting across all sites, including the north site, from July.", "north-site")
    assert covers("All sites, including the children's hospital, switch to the SR template.", "childrens-hospital")
    assert not covers("Key rotation: 90 days for every account outside PCI.", "pci")
    assert not covers("All standard tenants move to 14 days; the HIPAA tenant is not included.", "hipaa-tenant")
    assert not covers("Visiting 08:00-21:00 on the main site.", "north-site")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_later_note_that_says_it_left_the_option_flags_it_without_a_link(tmp_path: Path, wiring: str) -> None:
    """No link given (the default server): a later note in force that says it left the option in
    a report ("Backblaze B2 cost too much") still flags it, though it names no change cue; only a
    bare "from X" needs one (see test_from_x_in_a_note_that_changes_nothing_leaves_nothing)."""
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember("From here on the reporting pipeline runs on Backblaze B2.")
        # written back to back, often in one millisecond: the store gives the second a later created_at
        # (``model.write_ms``; before it, check answered unknown in about 1 run in 6)
        now = service.remember("Reporting pipeline runs on GCS; Backblaze B2 cost too much.").node.id
        out = service.check("The reporting pipeline runs on Backblaze B2.")
        assert out.verdict == "superseded" and now in [n.id for n in out.in_force], out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_chain_whose_versions_share_the_statements_subject_answers_it_as_one_decision(
    tmp_path: Path, wiring: str
) -> None:
    """ "The hq plant care contractor uses Greenleaf." neither equals nor contains the subject of
    the version in force ("Indoor greenery care moves to Verdant Co") nor of the one that chose
    Greenleaf ("Office plants are watered by ..."), and the head names Greenleaf too (what it left),
    so neither the subject reading nor the words answer. The chain's versions together hold half
    the statement's subject, one chose the option and the head left it: superseded, less sure. A
    head that chose the option again keeps it from being flagged."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Office plants are watered by Greenleaf every Tuesday.").node.id
        now = service.remember(
            "Indoor greenery care moves to Verdant Co from May; Greenleaf contract not renewed.", supersedes=first
        ).node.id
        out = service.check("The hq plant care contractor uses Greenleaf.")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out
        assert [n.id for n in out.named] == [first] and out.confidence < 0.9
        service.remember("Verdant Co let go; Greenleaf is back on the office plants.", supersedes=now)
        back = service.check("The hq plant care contractor uses Greenleaf.")
        assert back.verdict not in ("superseded", "contradicted"), back
        # a statement whose subject the chain holds less than half of is not read by it
        far = service.check("The hq lobby signage print contractor uses Greenleaf.")
        assert far.verdict not in ("superseded", "contradicted"), far


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_decision_that_says_more_than_the_statement_does_not_contradict_it(tmp_path: Path, wiring: str) -> None:
    """ "Build artefacts and nightly database dumps both go to Wasabi" names another option than
    "the database dumps storage uses Hetzner Storage Box", on a subject that holds the statement's
    and more: as often another aspect as the same one, so no contradiction; the words of a later
    note that chose Hetzner (unlinked) say it holds. A subject that differs only by a kind
    ("@database": "the ledger" against "the ledger runs on MySQL") still contradicts."""
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember("Object storage: build artefacts and nightly database dumps both go to Wasabi (eu-central).")
        service.remember("Nightly database dumps move to Hetzner Storage Box for cost, artefacts stay.")
        out = service.check("The database dumps storage uses Hetzner Storage Box.")
        assert out.verdict not in ("contradicted", "superseded"), out
        service.remember("We moved the ledger from Postgres to SQLite.")
        assert service.check("the ledger runs on MySQL").verdict == "contradicted"


_POLICY = (
    "Records Decision RD-{n}: {title}\n\nStatus: Approved by the records board.\n\n1. Context\n"
    "We hold customer files in three systems. The auditor asked for one written rule per record type. "
    "{aside}Support says reactivation requests after two years are rare. About 38% of accounts have not "
    "logged in for a year; most peers in the sector act after 12 to 18 months, and our own data shows "
    "that almost every account that comes back does so within the first 14 months. Keeping profiles "
    "beyond that mostly adds breach exposure: the phishing incident in January touched 9,000 dormant "
    "profiles, and each of them had to be notified by hand.\n\n2. Options\n"
    "- A: Keep everything indefinitely.\n- B: Delete after a fixed period, with warning emails.\n"
    "- C: Anonymise after a fixed period.\n\n3. Decision\n{decision}\n\n4. Consequences\n"
    "- The nightly sweeper job implements the rule; owned by the identity team.\n"
    "- The privacy notice is updated with the new rule, and the help centre article links to it.\n"
    "- Marketing cannot re-engage accounts older than the threshold.\n"
    "- Backups age out within 35 days, so erased data leaves them within five weeks.\n- Reviewed every year.\n"
)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_document_that_dropped_the_options_words_does_not_flag_a_note_in_force_that_holds_them(
    tmp_path: Path, wiring: str
) -> None:
    """A long record that once named "ten years" in passing, replaced by one that does not, holds
    more of the statement's words than the short note in force that says it: a document holds any
    words, so the two readings disagree and the answer is unknown, never a flag."""
    first = _POLICY.format(
        n=4,
        title="Retention of dormant accounts",
        aside="Finance keeps invoices for ten years, but invoice retention sits in the finance system. ",
        decision="Option B: dormant accounts are deleted after 24 months of inactivity.",
    )
    second = _POLICY.format(
        n=11,
        title="Dormant account anonymisation window",
        aside="",
        decision="Option C: dormant accounts are anonymised after 14 months of inactivity.",
    )
    assert len(first) > 1200 and len(second) > 1200
    with wired(wiring, tmp_path / "m.db") as service:
        old = service.remember(first).node.id
        service.remember(second, supersedes=old)
        service.remember("Invoices are retained for ten years in the finance system.")
        out = service.check("The finance invoice retention uses ten years.")
        assert out.verdict not in ("superseded", "contradicted"), out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_name_before_the_statements_verb_says_what_it_is_about_not_which_version(tmp_path: Path, wiring: str) -> None:
    """ "k8s" or "3rd" before the verb names the thing, not the option: the values after the verb
    tell the versions apart ("40" left for "60"). A chain that lacks such a name another chain
    holds is about something else ("the 3rd floor" kitchen keeps what the office left)."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Cluster autoscaler max nodes for the general node group: 40.").node.id
        now = service.remember("Bumping the general node group max from 40 to 60 ahead of the sale.", supersedes=first)
        old = service.check("The k8s general max nodes uses 40.")
        assert old.verdict == "superseded" and [n.id for n in old.in_force] == [now.node.id], old
        assert service.check("The k8s general max nodes uses 60.").verdict == "in_force"
        beans = service.remember("Office coffee beans from Square Mile.").node.id
        service.remember("Switching beans to Origin from next order.", supersedes=beans)
        service.remember("Kitchen on 3rd floor still uses Square Mile (their own budget).")
        out = service.check("The office 3rd floor coffee beans uses Square Mile.")
        assert out.verdict not in ("superseded", "contradicted"), out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_dotted_version_is_one_value(tmp_path: Path, wiring: str) -> None:
    """ "v1.0" is not held by "v1.1.0" though its numbers are, and the dot inside "0.4.4." ends no
    clause: the version a statement names tells the chain's versions apart whole."""
    with wired(wiring, tmp_path / "m.db") as service:
        a = service.remember("tinyfmt latest release: v0.9").node.id
        b = service.remember("tinyfmt v1.0 released!", supersedes=a).node.id
        c = service.remember("tinyfmt latest release: v1.0.1", supersedes=b).node.id
        now = service.remember("tinyfmt latest release: v1.1.0", supersedes=c).node.id
        for old in ("v1.0", "v1.0.1"):
            out = service.check(f"The repo tinyfmt latest release uses {old}.")
            assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out
        assert service.check("The repo tinyfmt latest release uses v1.1.0.").verdict == "in_force"
        pin = service.remember("Pin for the lint tool in pre-commit: ruff 0.4.4.").node.id
        service.remember("pre-commit autoupdate merged: ruff 0.6.9, black untouched.", supersedes=pin)
        assert service.check("The oss ruff version uses 0.4.4.").verdict == "superseded"
    from evomem.domain.premise import complement

    assert complement("The oss ruff version uses 0.4.4.") == "0.4.4"
    assert complement("The mortgage rate uses 4.29%.") == "4.29%"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_words_of_a_statements_subject_no_decision_uses_do_not_keep_it_from_its_chain(
    tmp_path: Path, wiring: str
) -> None:
    """ "dog" and "owner" are the statement's own labels: no note says them. The chain whose
    versions hold the rest of its subject ("Biscuit"), one of which chose its option, replaced it."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Biscuit the beagle belongs to Ann Moreau.").node.id
        now = service.remember("Ann gave Biscuit to her nephew Luc Moreau.", supersedes=first).node.id
        service.remember("Biscuit's vet: Dr. Okoro.")
        out = service.check("The dog biscuit owner uses Ann Moreau.")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_statement_whose_subject_says_more_by_a_word_notes_use_is_another_aspect(tmp_path: Path, wiring: str) -> None:
    """ "the second car" holds "car" and a word more that another note uses: the chain about her car,
    which left the Yaris, says nothing of her second car, so it flags nothing; a label no note uses
    ("the family car") still lets that chain answer."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Yuki's car: Toyota Yaris.").node.id
        service.remember("Yuki's car: Toyota Corolla.", supersedes=first)
        service.remember("Yuki kept the Toyota Yaris as a second car for her partner.")
        out = service.check("The yuki second car uses Toyota Yaris.")
        assert out.verdict not in ("superseded", "contradicted"), out
        assert service.check("The yuki family car uses Toyota Yaris.").verdict == "superseded"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_plural_in_oes_or_ies_is_the_word_it_is_a_plural_of(tmp_path: Path, wiring: str) -> None:
    """ "tomatoes" is "tomato": the note in force on the watering holds as much of the statement as
    the chain about the feed, whose first version named "2" and "every watering", so the words do
    not read the statement as replaced."""
    with wired(wiring, tmp_path / "m.db") as service:
        service.remember("watering schedule for tomatoes: every 2 days")
        feed = service.remember("Greenhouse tomato feed: 2 ml/L every watering.").node.id
        service.remember("tomatoes: 4 ml/L weekly, skip feed on the other waterings", supersedes=feed)
        out = service.check("The greenhouse tomato watering uses every 2 days.")
        assert out.verdict not in ("superseded", "contradicted"), out
    from evomem.domain.premise_words import words_of

    assert words_of("tomatoes, policies") == words_of("tomato, policy")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_names_before_a_verb_say_the_topic_only_in_one_phrase(tmp_path: Path, wiring: str) -> None:
    """ "ok going forward just answer in English, I keep pasting ... into Jira": the words before
    its last verb are a clause of their own, not a topic phrase, so "English" still tells the
    versions apart (the version in force holds "Jira", not "English")."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("antworte mir bitte immer auf Deutsch, auch wenn ich auf Englisch frage").node.id
        mid = "ok going forward just answer in English, I keep pasting your replies into Jira and translating them"
        second = service.remember(mid, supersedes=first).node.id
        service.remember(
            "Antworten bitte wieder auf Deutsch - die Jira-Tickets schreibe ich inzwischen selbst.", supersedes=second
        )
        out = service.check(mid)
        assert out.verdict == "superseded", out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_leaving_verb_in_any_inflection_and_an_accented_name_are_read(tmp_path: Path, wiring: str) -> None:
    """ "billing moves off Paddle" leaves Paddle as "moved off" does (it is not the option the note
    chooses), and "Raúl" is "raul" when a statement writes it without its accent."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Invoices go through Paddle.").node.id
        now = service.remember(
            "Finance sync 17 Jan: billing moves off Paddle; Chargebee handles all customer invoicing from Feb 1.",
            supersedes=first,
        ).node.id
        out = service.check("The brightloop billing provider uses Paddle.")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out
        city = service.remember("Raúl lives in Valencia.").node.id
        moved = service.remember("Raúl moved to Barcelona for Glovo.", supersedes=city).node.id
        out = service.check("The raul city uses Valencia.")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [moved], out
        assert service.check("The raul city uses Barcelona.").verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_version_the_version_in_force_names_besides_its_own_is_not_what_it_uses(tmp_path: Path, wiring: str) -> None:
    """The version in force chooses 7.2 and names 8.0, which the version before chose, only to reject
    it ("Do not install 8.0"): the statement of 8.0 is replaced. A version no other version chose
    (mypy's, pinned beside ruff's) is not read so."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Point of sale: every store runs Tillpoint 7.2.").node.id
        upgrade = "Upgrading the Tillpoint client to 8.0 in all stores this weekend, replaces 7.2."
        second = service.remember(upgrade, supersedes=first).node.id
        now = service.remember(
            "Rolling back to Tillpoint 7.2 everywhere until the vendor ships a patch. Do not install 8.0.",
            supersedes=second,
        ).node.id
        out = service.check(upgrade)
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out
        # the version in force, checked as written: the version it rejects is not what it asserts
        rollback = "Rolling back to Tillpoint 7.2 everywhere until the vendor ships a patch. Do not install 8.0."
        assert service.check(rollback).verdict == "in_force"
        pins = service.remember("Lint pins for the api repo: ruff 0.4.4, mypy 1.11.2.").node.id
        service.remember("Lint pins for the api repo bumped: ruff 0.6.9, mypy 1.11.2.", supersedes=pins)
        out = service.check("Lint pins for the api repo: mypy 1.11.2.")
        assert out.verdict not in ("superseded", "contradicted"), out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_value_the_version_in_force_calls_old_is_left_though_two_versions_back(tmp_path: Path, wiring: str) -> None:
    """ "Short of the old 21" says in so many words that 21 is left, though the version it replaced
    said 14: a statement of 21 is replaced, and one of 18 is in force."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Library loans run for 21 days on adult cards.").node.id
        second = service.remember("From March, adult loans are cut to 14 days to speed up holds.", supersedes=first)
        now = service.remember(
            "Update: adult loan period is 18 days. Short of the old 21, long enough for a holiday read.",
            supersedes=second.node.id,
        ).node.id
        out = service.check("The library adult loan period uses 21 days.")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out
        assert service.check("The library adult loan period uses 18 days.").verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_not_the_value_an_earlier_version_chose_leaves_it(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Office days for the data team: 4 a week.").node.id
        second = service.remember("Office days for the data team drop to 2 a week over the summer.", supersedes=first)
        now = service.remember(
            "Office days for the data team: 3 a week from September. Not the 4 we had before the summer, but fair.",
            supersedes=second.node.id,
        ).node.id
        out = service.check("The data team office days uses 4 a week.")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_the_option_the_version_in_force_turned_from_is_replaced_whatever_it_says_of_it(
    tmp_path: Path, wiring: str
) -> None:
    """The version in force chose Sentry again and names GlitchTip, which the version it replaced
    chose, in a report ("the GlitchTip box died"), not as what it left in so many words: GlitchTip
    is replaced all the same, and Sentry holds."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Shop error tracking: Sentry, DSN in the env.").node.id
        second = service.remember("Shop error tracking moves to GlitchTip on our own box.", supersedes=first)
        now = service.remember(
            "The GlitchTip box died twice this quarter. Going back to Sentry for shop error tracking.",
            supersedes=second.node.id,
        ).node.id
        out = service.check("The shop error tracking uses GlitchTip.")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out
        assert [n.id for n in out.named] == [second.node.id]
        assert service.check("The shop error tracking uses Sentry.").verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_chain_read_as_one_decision_left_the_option_its_head_turned_from(tmp_path: Path, wiring: str) -> None:
    """The head ("going back to Wavetrack") says nothing of the statement's subject, which its
    versions hold together; it names Pulsebox, which the version it replaced chose, in a report
    ("Pulsebox couldn't finish the installs"): its words read Pulsebox in force, what it chose says
    it left it."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Telematics: all 22 vehicles run Wavetrack units; logins in the vault.").node.id
        second = service.remember(
            "We're switching telematics to Pulsebox - cheaper per unit and it has driver scoring. "
            "Installs across the fleet over April.",
            supersedes=first,
        )
        now = service.remember(
            "Decision: we're going back to Wavetrack. Pulsebox couldn't finish the installs and lost trips. "
            "Pulsebox units come out next week.",
            supersedes=second.node.id,
        ).node.id
        out = service.check("The fleet telematics vendor uses Pulsebox.")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_version_that_goes_back_to_the_name_every_version_holds_says_it(tmp_path: Path, wiring: str) -> None:
    """Every version names Wavetrack ("Wavetrack contract ends 30 April"), so its name alone does not
    tell them apart; the version in force goes back and holds it as its own, and no earlier version
    holds the whole statement: Wavetrack is in force, not read as replaced by the share of other words."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Telematics: all 22 vehicles run Wavetrack units; logins in the vault.").node.id
        second = service.remember(
            "We're switching telematics to Pulsebox - cheaper per unit and it has driver scoring. "
            "Installs across the fleet over April, Wavetrack contract ends 30 April.",
            supersedes=first,
        )
        service.remember(
            "Decision: we're going back to Wavetrack. Pulsebox couldn't finish the installs and lost trips. "
            "Pulsebox units come out next week.",
            supersedes=second.node.id,
        )
        assert service.check("The fleet telematics vendor uses Wavetrack.").verdict == "in_force"
        assert service.check("The fleet telematics vendor uses Pulsebox.").verdict == "superseded"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_an_option_the_version_in_force_names_as_what_holds_the_subject_is_not_left(
    tmp_path: Path, wiring: str
) -> None:
    """The version in force names Fiona Lee "as secretary", the statement's subject: whatever it is
    read to choose besides ("moving to Leeds"), it does not say she was left."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(
            "Club officers elected at the AGM: Chair - Martin Hewitt; Secretary - Ollie Grant; Membership - Fiona Lee."
        ).node.id
        service.remember(
            "Ollie has resigned as secretary (moving to Leeds for work). Committee co-opted Fiona Lee as secretary "
            "until the AGM.",
            supersedes=first,
        )
        out = service.check("The club secretary uses Fiona Lee.")
        assert out.verdict not in ("superseded", "contradicted"), out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_version_that_goes_back_leaves_what_it_shares_with_the_version_it_replaced_alone(
    tmp_path: Path, wiring: str
) -> None:
    """ "Back to 2 weeks -- too many handovers with 5 days": the version in force goes back to what
    came before the version it replaced; 5 days, which it shares with that version alone, is what it
    left. 2 weeks holds, and so does a version in force checked as written (it goes back too, and names
    what it left: "after Vask's exit")."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Support rota length: 2 weeks.").node.id
        second = service.remember(
            "Retro outcome: rota shortens to 5 days, fortnight-long ones burn people out.", supersedes=first
        )
        back = "rota back to 2 weeks -- too many handovers with 5 days"
        now = service.remember(back, supersedes=second.node.id).node.id
        out = service.check("The support rota length uses 5 days.")
        assert out.verdict == "superseded" and [n.id for n in out.in_force] == [now], out
        assert service.check("The support rota length uses 2 weeks.").verdict == "in_force"
        assert service.check(back).verdict == "in_force"
        first = service.remember("Gym induction length: 45 minutes.").node.id
        second = service.remember("Gym inductions shorten to 30 minutes, members get bored.", supersedes=first)
        service.remember(
            "Returning to 45 minutes for inductions: too rushed with 30 minutes", supersedes=second.node.id
        )
        assert service.check("The gym induction length uses 30 minutes.").verdict == "superseded"
        first = service.remember("Halvard Ltd CEO: Lidia Krast.").node.id
        second = service.remember("Tomas Vask replaces Lidia Krast as Halvard Ltd CEO.", supersedes=first)
        back = "Lidia Krast is back as Halvard Ltd CEO after Vask's exit."
        service.remember(back, supersedes=second.node.id)
        assert service.check(back).verdict == "in_force"


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_name_the_version_in_force_says_is_back_is_in_force(tmp_path: Path, wiring: str) -> None:
    """ "Kit's back as MC." chooses Kit again (a sentence-initial word before "'s back" is a sure name, and
    in a choice slot): the statement that Kit holds the post is not read as replaced because the
    version before it named Kit as away."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("MC: Kit").node.id
        second = service.remember("Noor MCs for a month while Kit's away.", supersedes=first).node.id
        service.remember("Kit's back as MC.", supersedes=second)
        out = service.check("The quiz night mc uses Kit.")
        assert out.verdict not in ("superseded", "contradicted"), out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_the_option_kept_beside_the_subject_is_not_left_for_a_name_chosen_elsewhere(
    tmp_path: Path, wiring: str
) -> None:
    """The version in force names Ravi where it restates the rota ("rota Mon/Tue Ravi"); what the reader
    reads as its choice (the Lindqvist kids) stands in a sentence about something else: it did not turn
    from Ravi, so the statement that Ravi holds is not flagged."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember("Bakery opening rota 6:00: Mon/Tue/Wed Ravi.").node.id
        service.remember(
            "New season plan: opening rota Mon/Tue Ravi (his evening class moved); Ines walks the dog on "
            "Sundays with the Lindqvist kids if it's dry.",
            supersedes=first,
        )
        out = service.check("The bakery opening rota uses Ravi.")
        assert out.verdict not in ("superseded", "contradicted"), out


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_record_that_replaces_one_part_and_keeps_the_option_for_the_topic_did_not_leave_it(
    tmp_path: Path, wiring: str
) -> None:
    """The version in force chose NS1 for the zones and says Fastly still fronts the sites in a sentence
    about the CDN (the statement's topic); NS1 stands in a sentence about none of it: the chain read as one
    decision does not say Fastly was left."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(
            "Web edge: all public sites are served through Fastly; zone records stay with the registrar."
        ).node.id
        service.remember(
            "Edge update: authoritative zones move to NS1 as primary provider. The CDN part is unchanged: "
            "Fastly continues to front all public sites.",
            supersedes=first,
        )
        out = service.check("The site cdn uses Fastly.")
        assert out.verdict not in ("superseded", "contradicted"), out


POLICY_V2 = """EXP-7: Revised expense approval limits
Northwind Bakeries Ltd | Finance Policy
Status: Effective 2024-04-01
Owner: Financial Controller

1. Purpose
To raise approval limits in line with inflation and the growth of the shop network since the last review.

2. Relationship to existing policy
This policy replaces the approval limits of EXP-2. The mileage section of EXP-2 is not affected and
continues to apply as written, as do its sections on receipts and audit.

3. Findings
Over the last year a third of all expense reports went to the regional director, who approved nearly all
of them without comment. Median time to approval was nine days, against two days for reports within
the line manager limit. Suppliers of shop fittings have begun to charge late-payment fees.

4. New approval limits
4.1 Line managers approve up to EUR 5,000 per report.
4.2 Reports between EUR 5,000 and EUR 20,000 also need the regional director.
4.3 Anything above EUR 20,000 needs the finance director.

5. Controls
The expense system flags any employee whose approved reports exceed EUR 15,000 in a rolling quarter.
Internal audit samples one report in fifteen during the first year.

6. Effective date
Reports submitted on or after 2024-04-01 follow the new limits; reports already in workflow keep their routing.
"""


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_version_that_says_the_statements_part_holds_unchanged_did_not_replace_it(
    tmp_path: Path, wiring: str
) -> None:
    """A policy that replaces the approval limits says the mileage section "is not affected and continues
    to apply", the only sentence that speaks of mileage: the mileage rate the first version named is not
    read as replaced; the approval limit still is. A short note ("beer unchanged") keeps nothing so."""
    with wired(wiring, tmp_path / "m.db") as service:
        first = service.remember(
            "Expense policy EXP-2: line managers approve up to EUR 2,000. Mileage is paid at 0.30 EUR per km."
        ).node.id
        service.remember(POLICY_V2, supersedes=first)
        out = service.check("The expense mileage uses 0.30 EUR per km.")
        assert out.verdict not in ("superseded", "contradicted"), out
        assert service.check("The expense approval limit uses EUR 2,000.").verdict == "superseded"
        bar = service.remember("Happy hour: cocktails $9, beer $4.").node.id
        service.remember("Happy hour: cocktails $10, beer unchanged.", supersedes=bar)
        assert service.check("The happy hour cocktail price uses $9.").verdict == "superseded"
