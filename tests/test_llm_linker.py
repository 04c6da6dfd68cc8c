"""The LLM linker: the protocol against a real llama.cpp server, and every way an answer fails.

The real server (``llama_cpp.server`` with a tiny random-weights GGUF the tests write) proves
the wire protocol and grammar-constrained output; it cannot judge quality, so those tests
assert only that the answer is one of the valid decisions and never names an invented id.
A loopback fake stands in for a server that misbehaves (garbage, wrong ids, HTTP errors,
hanging), which a real one will not do on demand. Every abstention test has a control in
which the same set-up links, so nothing passes just because nothing ever links.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator

import pytest

from evomem.adapters.llm_linker import (
    API_KEY_ENV,
    LLMLinkDecision,
    LLMLinker,
    build_grammar,
)
from evomem.adapters.models.pair_weights import shipped_pair_model
from evomem.app.ports import Linker
from evomem.domain.linkers.cascade import CascadeLinker, pair_unsure, unsure_or_cued
from evomem.domain.linkers.heuristic import HeuristicLinker
from evomem.domain.linkers.pair import PairLinker
from evomem.domain.linkers.scored import ScoredLinker
from evomem.domain.linkers.vocabulary import HEURISTIC_CHANGE_CUE
from evomem.domain.model import LinkDecision, LinkProposal, MemoryNode, Status, new_id
from evomem.domain.scope import compatible as scopes_compatible
from tests.llama_support import (
    FakeChatServer,
    LlamaServer,
    Reply,
    answer_reply,
    chat_reply,
    free_port,
    make_tiny_model,
    require_llama_cpp,
)

OLD_TEXT = "The ledger service stores account balances in Postgres with nightly backups."
NEW_TEXT = "Moved the ledger account balances from Postgres to SQLite with hourly backups."
OTHER_TEXT = "Frontend bundles are built with webpack and served from the CDN."


def ids(decision: LinkDecision) -> tuple[str, ...]:
    return tuple(cid for cid, _ in decision.candidates)


def node(text: str, scope: str | None = None, status: Status = Status.ACTIVE) -> MemoryNode:
    nid = new_id()
    return MemoryNode(id=nid, raw_text=text, scope=scope, status=status, chain_root=nid)


@pytest.fixture
def old() -> MemoryNode:
    return node(OLD_TEXT)


@pytest.fixture
def other() -> MemoryNode:
    return node(OTHER_TEXT)


@pytest.fixture
def fake() -> Iterator[FakeChatServer]:
    server = FakeChatServer().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _no_inherited_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)


def linker_for(server: FakeChatServer | LlamaServer, **kw) -> LLMLinker:
    kw.setdefault("timeout_s", 5.0)
    return LLMLinker(kw.pop("model", "fake-model"), server.base_url, **kw)


def good_answer(target: str, **over) -> Reply:
    answer = {
        "decision": "supersedes",
        "target_id": target,
        "confidence": 0.9,
        "evidence": ["Moved the ledger account balances", "stores account balances in Postgres"],
    }
    answer.update(over)
    return answer_reply(**answer)


# ----------------------------------------------------------------------------- valid answers


def test_a_valid_supersedes_answer_becomes_a_link_with_llm_provenance(fake, old, other):
    fake.reply = good_answer(old.id, evidence=["Moved the ledger account balances", "an invented reason", "Postgres"])

    decision = linker_for(fake).decide(NEW_TEXT, None, [other, old])

    assert decision.kind == "link" and decision.answer == "supersedes"
    p = decision.proposal
    assert p is not None and p.target_id == old.id
    assert p.method == "llm" and p.by == "llm/fake-model"
    assert p.confidence == 0.9
    # Evidence is kept only where it quotes the note or a candidate.
    assert p.evidence == ("Moved the ledger account balances", "Postgres")
    assert decision.latency_ms > 0


def test_propose_plugs_into_the_linker_port(fake, old):
    linker = linker_for(fake)
    assert isinstance(linker, Linker)

    fake.reply = good_answer(old.id)
    proposal = linker.propose(NEW_TEXT, None, [old])
    assert isinstance(proposal, LinkProposal) and proposal.target_id == old.id

    fake.reply = answer_reply(decision="unsure", target_id=old.id, confidence=0.4, evidence=[])
    assert linker.propose(NEW_TEXT, None, [old]) is None  # abstain -> None
    fake.reply = answer_reply(decision="none", target_id=None, confidence=0.8, evidence=[])
    assert linker.propose(NEW_TEXT, None, [old]) is None


def test_none_is_distinct_from_abstain(fake, old, other):
    fake.reply = answer_reply(decision="none", target_id=None, confidence=0.95, evidence=[])
    none = linker_for(fake).decide(NEW_TEXT, None, [old, other])
    assert none.kind == "none" and none.proposal is None and ids(none) == ()

    fake.reply = answer_reply(decision="unsure", target_id=old.id, confidence=0.5, evidence=[])
    unsure = linker_for(fake).decide(NEW_TEXT, None, [old, other])
    assert unsure.kind == "abstain" and ids(unsure) == (old.id,)

    fake.reply = answer_reply(decision="unsure", target_id=None, confidence=0.5, evidence=[])
    vague = linker_for(fake).decide(NEW_TEXT, None, [old, other])
    assert vague.kind == "abstain" and set(ids(vague)) == {old.id, other.id}


def test_a_low_confidence_link_is_an_abstention(fake, old):
    fake.reply = good_answer(old.id, confidence=0.3)
    decision = linker_for(fake, min_confidence=0.5).decide(NEW_TEXT, None, [old])
    assert decision.kind == "abstain" and ids(decision) == (old.id,)

    assert linker_for(fake, min_confidence=0.2).decide(NEW_TEXT, None, [old]).kind == "link"  # control


def test_a_fenced_json_answer_is_accepted(fake, old):
    fake.reply = chat_reply(
        "```json\n"
        + json.dumps({"decision": "supersedes", "target_id": old.id, "confidence": 1, "evidence": []})
        + "\n```"
    )
    assert linker_for(fake).decide(NEW_TEXT, None, [old]).kind == "link"


# ----------------------------------------------------------------------------- the request


def test_the_request_asks_only_about_eligible_candidates(fake):
    superseded = node(
        "The ledger used MySQL for account balances before Postgres.", status=Status.SUPERSEDED, scope="backend"
    )
    elsewhere = node("The ledger account balances in the mobile app are cached in Postgres.", scope="mobile")
    same_scope = node("Backend ledger balances are reconciled nightly in Postgres.", scope="backend")
    backend_too = node(OLD_TEXT, scope="backend")
    fake.reply = answer_reply(decision="none", target_id=None, confidence=0.9, evidence=[])

    linker_for(fake).decide(NEW_TEXT, "backend", [backend_too, superseded, elsewhere, same_scope, backend_too])

    (req,) = fake.requests
    assert req.path == "/v1/chat/completions"
    body = req.body
    assert body["model"] == "fake-model" and body["temperature"] == 0 and body["stream"] is False
    prompt = "\n".join(m["content"] for m in body["messages"])
    assert NEW_TEXT in prompt
    for offered in (same_scope, backend_too):
        assert offered.id in prompt and offered.raw_text in prompt
        assert offered.id in body["grammar"]
    for hidden in (superseded, elsewhere):
        assert hidden.id not in prompt and hidden.raw_text not in prompt
        assert hidden.id not in body["grammar"]
    assert prompt.count(backend_too.id) == 1  # duplicates are offered once
    assert "response_format" not in body


def test_structured_modes_shape_the_request(fake, old):
    fake.reply = answer_reply(decision="none", target_id=None, confidence=0.9, evidence=[])
    linker_for(fake, structured="json_schema").decide(NEW_TEXT, None, [old])
    linker_for(fake, structured="none").decide(NEW_TEXT, None, [old])

    schema_req, plain_req = (r.body for r in fake.requests)
    fmt = schema_req["response_format"]
    assert fmt["type"] == "json_schema" and "grammar" not in schema_req
    schema = fmt["json_schema"]["schema"]
    assert schema["properties"]["target_id"]["anyOf"][0]["enum"] == [old.id]
    assert "grammar" not in plain_req and "response_format" not in plain_req

    with pytest.raises(ValueError):
        LLMLinker("m", fake.base_url, structured="json_object")


def test_the_api_key_comes_from_the_environment(fake, old, monkeypatch):
    from evomem.settings import Settings

    fake.reply = answer_reply(decision="none", target_id=None, confidence=0.9, evidence=[])
    linker_for(fake, api_key=Settings.from_env().api_key()).decide(NEW_TEXT, None, [old])
    monkeypatch.setenv(API_KEY_ENV, "sk-test-123")
    keyed = linker_for(fake, api_key=Settings.from_env().api_key())  # the settings read the key, as bootstrap does
    keyed.decide(NEW_TEXT, None, [old])

    assert "authorization" not in fake.requests[0].headers
    assert fake.requests[1].headers["authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in repr(keyed)


def test_no_eligible_candidates_means_no_request(fake):
    elsewhere = node(OLD_TEXT, scope="mobile")
    gone = node(OLD_TEXT, status=Status.FORGOTTEN)

    decision = linker_for(fake).decide(NEW_TEXT, "backend", [elsewhere, gone])

    assert decision.kind == "none" and fake.requests == []


def test_the_grammar_admits_only_offered_ids():
    grammar = build_grammar(["01ABC", 'we"ird'])
    target_rule = next(line for line in grammar.splitlines() if line.startswith("target ::="))
    assert target_rule == 'target ::= "null" | "\\"01ABC\\"" | "\\"we\\\\\\"ird\\""'


# ----------------------------------------------------------------------------- bad answers: abstain


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("I think the first one is replaced.", id="prose"),
        pytest.param("", id="empty"),
        pytest.param('{"decision": "supersedes", "target_id": "TARGET", "confidence": 0.9', id="truncated"),
        pytest.param('["supersedes", "TARGET"]', id="not-an-object"),
        pytest.param(
            '{"decision": "supersedes", "target_id": "TARGET", "confidence": 0.9, "evidence": ["a\x01b"]}',
            id="raw-control-char",
        ),
        pytest.param(
            '{"decision": "maybe", "target_id": "TARGET", "confidence": 0.9, "evidence": []}', id="unknown-decision"
        ),
        pytest.param(
            '{"decision": "supersedes", "target_id": "TARGET", "confidence": 1.5, "evidence": []}',
            id="confidence-above-1",
        ),
        pytest.param(
            '{"decision": "supersedes", "target_id": "TARGET", "confidence": -0.1, "evidence": []}',
            id="confidence-negative",
        ),
        pytest.param(
            '{"decision": "supersedes", "target_id": "TARGET", "confidence": "0.9", "evidence": []}',
            id="confidence-string",
        ),
        pytest.param(
            '{"decision": "supersedes", "target_id": "TARGET", "confidence": true, "evidence": []}',
            id="confidence-bool",
        ),
        pytest.param(
            '{"decision": "supersedes", "target_id": "TARGET", "confidence": NaN, "evidence": []}', id="confidence-nan"
        ),
        pytest.param('{"decision": "supersedes", "target_id": "TARGET", "evidence": []}', id="no-confidence"),
        pytest.param('{"decision": "supersedes", "target_id": 7, "confidence": 0.9, "evidence": []}', id="numeric-id"),
        pytest.param(
            '{"decision": "supersedes", "target_id": null, "confidence": 0.9, "evidence": []}',
            id="supersedes-without-target",
        ),
        pytest.param(
            '{"decision": "supersedes", "target_id": "TARGET", "confidence": 0.9, "evidence": "Postgres"}',
            id="evidence-not-a-list",
        ),
    ],
)
def test_garbage_answers_abstain(fake, old, other, content):
    fake.reply = chat_reply(content.replace("TARGET", old.id))

    decision = linker_for(fake).decide(NEW_TEXT, None, [old, other])

    assert decision.kind == "abstain", decision
    assert decision.proposal is None
    assert set(ids(decision)) == {old.id, other.id}
    assert not math.isnan(decision.latency_ms)


def test_an_unknown_id_abstains(fake, old):
    fake.reply = good_answer(new_id())
    decision = linker_for(fake).decide(NEW_TEXT, None, [old])
    assert decision.kind == "abstain" and "unknown target_id" in decision.reason

    fake.reply = good_answer(old.id)
    assert linker_for(fake).decide(NEW_TEXT, None, [old]).kind == "link"  # control


def test_an_id_in_an_incompatible_scope_abstains(fake):
    mine = node(OLD_TEXT, scope="backend")
    theirs = node("The mobile ledger account balances are kept in Postgres.", scope="mobile")
    fake.reply = good_answer(theirs.id)

    decision = linker_for(fake).decide(NEW_TEXT, "backend", [mine, theirs])

    assert decision.kind == "abstain" and "incompatible scope" in decision.reason
    assert ids(decision) == (mine.id,)


def test_an_id_of_a_superseded_candidate_abstains(fake, old):
    stale = node("The ledger used MySQL before.", status=Status.SUPERSEDED)
    fake.reply = good_answer(stale.id)
    assert linker_for(fake).decide(NEW_TEXT, None, [old, stale]).kind == "abstain"


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(Reply(status=500, body=b'{"error": "json_schema not supported"}'), id="http-500"),
        pytest.param(Reply(status=401, body=b'{"error": "bad key"}'), id="http-401"),
        pytest.param(Reply(status=200, body=b"<html>gateway</html>", content_type="text/html"), id="html"),
        pytest.param(Reply(status=200, body=b'{"object": "chat.completion"}'), id="no-choices"),
        pytest.param(Reply(status=200, body=b'{"choices": []}'), id="empty-choices"),
        pytest.param(Reply(status=200, body=b'{"choices": [{"message": {"content": null}}]}'), id="null-content"),
    ],
)
def test_http_errors_and_non_chat_bodies_abstain(fake, old, reply):
    fake.reply = reply
    decision = linker_for(fake).decide(NEW_TEXT, None, [old])
    assert decision.kind == "abstain" and ids(decision) == (old.id,)


def test_a_server_that_never_answers_makes_it_abstain_on_time(fake, old):
    fake.reply = Reply(hang=True)
    started = time.monotonic()

    decision = linker_for(fake, timeout_s=0.3).decide(NEW_TEXT, None, [old])

    assert decision.kind == "abstain" and "timed out" in decision.reason
    assert time.monotonic() - started < 2.0


def test_a_trickling_server_cannot_hold_it_past_the_deadline(fake, old):
    body = good_answer(old.id).body
    fake.reply = Reply(body=body, drip_s=0.05)  # each byte arrives in time, the whole never does
    started = time.monotonic()

    decision = linker_for(fake, connect_timeout_s=0.2, read_timeout_s=0.3).decide(NEW_TEXT, None, [old])

    assert decision.kind == "abstain" and "timed out" in decision.reason
    assert time.monotonic() - started < 1.5


def test_a_refused_connection_abstains(old):
    linker = LLMLinker("m", f"http://127.0.0.1:{free_port()}/v1", timeout_s=1.0)
    decision = linker.decide(NEW_TEXT, None, [old])
    assert decision.kind == "abstain" and decision.reason.startswith("transport:")


# ----------------------------------------------------------------------------- the cascade


def test_the_cascade_asks_the_llm_only_for_a_change_cue_with_candidates(fake, old):
    fake.reply = good_answer(old.id)
    cascade = CascadeLinker(HeuristicLinker(), linker_for(fake))
    assert isinstance(cascade, Linker) and cascade.abstains  # the LLM behind it can abstain
    assert not HeuristicLinker().abstains and ScoredLinker().abstains

    quiet = cascade.decide("The ledger account balances live in Postgres with nightly backups.", None, [old])
    assert quiet.kind == "none" and fake.requests == []

    empty = cascade.decide(NEW_TEXT, None, [])
    assert empty.kind == "none" and fake.requests == []

    cued = cascade.decide(NEW_TEXT, None, [old])
    assert cued.kind == "link" and cued.proposal.method == "llm" and len(fake.requests) == 1  # one call


def test_the_llm_abstention_stands_over_the_cheap_guess(fake, old, other):
    fake.reply = Reply(status=500, body=b"boom")
    cascade = CascadeLinker(HeuristicLinker(), linker_for(fake))
    assert HeuristicLinker().propose(NEW_TEXT, None, [other, old]) is not None  # the cheap one would link

    decision = cascade.decide(NEW_TEXT, None, [other, old])

    assert decision.kind == "abstain" and decision.proposal is None
    assert ids(decision)[0] == old.id  # the cheap guess is listed first
    assert cascade.propose(NEW_TEXT, None, [other, old]) is None


def test_the_cascade_can_trust_a_confident_cheap_link(fake, old):
    cascade = CascadeLinker(HeuristicLinker(), linker_for(fake), trust_cheap_at=0.5)
    decision = cascade.decide(NEW_TEXT, None, [old])
    assert decision.kind == "link" and decision.proposal.method == "heuristic" and fake.requests == []


SCORED_AUTH = "Decision: the ledger uses Auth0 as its auth provider."
SCORED_DB = "We picked Postgres for the ledger database because it has managed backups."


def test_behind_the_scored_linker_the_llm_is_asked_only_when_it_is_unsure(fake):
    auth, db = node(SCORED_AUTH), node(SCORED_DB)
    cascade = CascadeLinker(ScoredLinker(), linker_for(fake), unsure_or_cued)

    # The scored linker is sure (the note leaves Postgres): its link stands, no LLM call.
    sure = cascade.decide("We moved the ledger database from Postgres to SQLite.", None, [auth, db])
    assert sure.kind == "link" and sure.proposal.method == "scored" and fake.requests == []

    # A context note with no change cue: none, no LLM call.
    quiet = cascade.decide("Ledger Postgres backups took four minutes.", None, [auth, db])
    assert quiet.kind == "none" and fake.requests == []

    # Nothing says what Zorblax is, so the scored linker abstains: the LLM decides.
    fake.reply = good_answer(auth.id, evidence=["From here on the ledger runs on Zorblax."])
    unsure = cascade.decide("From here on the ledger runs on Zorblax.", None, [auth, db])
    assert ScoredLinker().decide("From here on the ledger runs on Zorblax.", None, [auth, db]).kind == "abstain"
    assert unsure.kind == "link" and unsure.proposal.method == "llm" and unsure.proposal.target_id == auth.id
    assert len(fake.requests) == 1


def test_behind_the_pair_linker_the_llm_is_asked_whenever_it_is_unsure_cue_word_or_not(fake):
    """--auto-supersede llm: the pair linker in front. Its link stands (no LLM call);
    a note it abstains on goes to the LLM even without a change cue."""
    auth, db = node(SCORED_AUTH), node(SCORED_DB)
    adr = node("ADR 7: " + SCORED_DB)
    # the LLM reads what the pair linker offers: here from p 0.05 (the shipped cut-off offers this
    # terse note nothing, so the LLM would not be asked)
    pair = PairLinker(model=shipped_pair_model(), offer_at=0.05)
    cascade = CascadeLinker(pair, linker_for(fake), pair_unsure)
    named = "ADR 9: This record supersedes ADR 7. The ledger database moves to SQLite."
    sure = cascade.decide(named, None, [auth, adr])
    assert sure.kind == "link" and sure.proposal.method == "pair" and fake.requests == []
    text = "The ledger database: Zorblax."
    assert HEURISTIC_CHANGE_CUE.search(text) is None
    cheap = pair.decide(text, None, [auth, db])
    assert cheap.kind == "abstain", cheap
    fake.reply = good_answer(db.id, evidence=["The ledger database: Zorblax."])
    asked = cascade.decide(text, None, [auth, db])
    assert asked.kind == "link" and asked.proposal.method == "llm" and asked.proposal.target_id == db.id
    assert len(fake.requests) == 1
    # the scored linker's gate would not have asked on a none without a cue; the pair gate asks on abstain only
    assert not pair_unsure(
        PairLinker(model=shipped_pair_model()).decide("Lunch is at noon.", None, []), "Lunch is at noon.", None, [auth]
    )


def test_behind_the_scored_linker_a_change_it_cannot_read_goes_to_the_llm(fake):
    """A replacement worded with other names ("bookkeeping entries", "persistence layer"):
    the scored linker finds no candidate on the same subject, but the note says it changed."""
    db = node(SCORED_DB)
    cascade = CascadeLinker(ScoredLinker(), linker_for(fake), unsure_or_cued)
    text = "The bookkeeping entries moved to SQLite as their persistence layer."
    assert ScoredLinker().decide(text, None, [db]).kind == "none"
    fake.reply = answer_reply(decision="none", target_id=None, confidence=0.8, evidence=[])
    decision = cascade.decide(text, None, [db])
    assert decision.kind == "none" and len(fake.requests) == 1


def test_the_service_records_an_llm_link(store, fake):
    from evomem.app.memory import MemoryService
    from evomem.domain.cronista import LiteCronista

    service = MemoryService.local(store, extractor=LiteCronista(), linker=None)
    first = service.remember(OLD_TEXT).node
    fake.reply = good_answer(first.id)
    service.linker = linker_for(fake)

    out = service.remember(NEW_TEXT)

    assert out.linked_to == first.id
    assert out.link.method == "llm" and out.link.by == "llm/fake-model" and out.link.confidence == 0.9
    assert "Moved the ledger account balances" in out.link.evidence

    fake.reply = Reply(hang=True)
    service.linker = linker_for(fake, timeout_s=0.2)
    again = service.remember("Moved the ledger account balances back to Postgres.")
    assert again.linked_to is None and again.decision.kind == "abstain"  # a timeout never links
    assert out.node.id in again.node.possible_supersedes


# ----------------------------------------------------------------------------- a real llama.cpp server


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    require_llama_cpp()
    workdir = tmp_path_factory.mktemp("llama")
    server = LlamaServer(make_tiny_model(workdir), workdir).start()
    yield server
    server.stop()


NOTES = [
    NEW_TEXT,
    "Switched the CDN for frontend bundles to a self-hosted nginx.",
    "We no longer back up balances nightly; backups are hourly now.",
]


def test_real_server_grammar_round_trip(llama_server, old, other):
    third = node("Account balances are exported to the warehouse every night.", scope="production")
    candidates = [old, other, third, node("Old scoped note about mobile balances.", scope="mobile")]
    offered = {c.id for c in candidates if scopes_compatible(None, c.scope)}
    assert len(offered) == 3
    linker = linker_for(llama_server, model="tiny", timeout_s=30.0)

    for text in NOTES:
        decision = linker.decide(text, None, candidates)
        # Random weights say nothing useful, but under the grammar they always say it in shape.
        assert decision.answer in ("supersedes", "none", "unsure"), (decision.reason, decision.raw)
        assert decision.kind in ("link", "abstain", "none")
        json.loads(decision.raw)
        if decision.proposal is not None:
            assert decision.proposal.target_id in offered
            assert 0.0 <= decision.proposal.confidence <= 1.0
            assert decision.proposal.by == "llm/tiny"
        assert set(ids(decision)) <= offered


def test_real_server_json_schema_form_never_invents_an_id(llama_server, old, other):
    linker = linker_for(llama_server, model="tiny", structured="json_schema", timeout_s=30.0)
    decision = linker.decide(NEW_TEXT, None, [old, other])
    assert isinstance(decision, LLMLinkDecision) and decision.kind in ("link", "abstain", "none")
    if decision.proposal is not None:
        assert decision.proposal.target_id in {old.id, other.id}


def test_real_server_unconstrained_garbage_abstains(llama_server, old, other):
    linker = linker_for(llama_server, model="tiny", structured="none", max_tokens=48, timeout_s=30.0)
    decision = linker.decide(NEW_TEXT, None, [old, other])
    assert decision.kind == "abstain" and decision.reason.startswith("invalid answer"), decision


def test_real_server_timeout_abstains(llama_server, old):
    linker = linker_for(llama_server, model="tiny", connect_timeout_s=1.0, read_timeout_s=0.001)
    decision = linker.decide(NEW_TEXT, None, [old])
    assert decision.kind == "abstain" and decision.reason.startswith("transport:"), decision


def test_the_linker_service_runs_the_llm_behind_the_pair_linker(llama_server):
    """`evomem-service linker` with EVOMEM_LINKER=llm, as compose runs it, against the real
    llama.cpp server: a note the pair linker is sure of links without the LLM; one it
    abstains on goes to the LLM, whose answer (random weights) is one of the valid decisions
    over offered ids, and crosses gRPC as a full decision."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from evomem.adapters.grpc.clients import GrpcLinker
    from tests.procutil import stop_process
    from tests.test_grpc_services import wait_health

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    env.update(
        EVOMEM_LINKER="llm",
        EVOMEM_LINKER_MODEL="tiny",
        EVOMEM_LINKER_BASE_URL=llama_server.base_url,
        EVOMEM_LINKER_TIMEOUT_S="30",
        EVOMEM_GRPC_HOST="127.0.0.1",
        EVOMEM_GRPC_PORT=str(port),
    )
    cmd = [str(Path(sys.executable).with_name("evomem-service")), "linker"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    client = None
    try:
        wait_health(f"127.0.0.1:{port}", "evomem.v1.LinkerService", proc)
        client = GrpcLinker(f"127.0.0.1:{port}", timeout_s=60)
        auth, db = node(SCORED_AUTH), node("ADR 7: " + SCORED_DB)
        named = "ADR 9: This record supersedes ADR 7. The ledger database moves to SQLite."
        sure = client.decide(named, None, [auth, db])
        assert sure.kind == "link" and sure.proposal.method == "pair" and sure.proposal.target_id == db.id
        asked = client.decide("From here on the ledger runs on Zorblax.", None, [auth, db])
        assert asked.kind in ("link", "abstain", "none"), asked
        if asked.proposal is not None:
            assert asked.proposal.method == "llm" and asked.proposal.target_id in {auth.id, db.id}
        assert {c for c, _ in asked.candidates} <= {auth.id, db.id}
    finally:
        if client is not None:
            client.close()
        stop_process(proc)


def test_the_composition_root_builds_the_gated_llm_linker(fake):
    from evomem.bootstrap.linkers import linker_for
    from evomem.settings import Settings

    settings = Settings(auto_supersede="llm", linker_model="m", linker_base_url=fake.base_url, linker_timeout_s=3)
    linker = linker_for("llm", settings)
    assert isinstance(linker, CascadeLinker) and isinstance(linker.llm, LLMLinker)
    assert isinstance(linker.cheap, PairLinker) and linker.needs_llm is pair_unsure
    assert linker.llm.read_timeout_s == 3 and linker.llm.structured == "grammar"
    with pytest.raises(ValueError):
        LLMLinker("m", "ftp://host/v1")


def test_the_llm_benchmark_runs_against_a_real_server(tmp_path):
    """`make bench-llm`: bench.llm serves the tiny model and runs the llm linker on the quality
    set next to the pair linker; the cost table counts the model calls it made."""
    require_llama_cpp()
    from bench.llm import main as bench_llm

    out = tmp_path / "llm"
    assert bench_llm(["--limit", "2", "--sets", "vdr", "--out", str(out), "--no-progress"]) == 0
    report = json.loads((out / "quality.json").read_text())
    cost = report["linker_cost"]
    llm, pair = cost["evomem-auto:llm"]["all"], cost["evomem-auto:pair"]["all"]
    assert llm["linker_calls"] == pair["linker_calls"] > 0
    # the llm linker asks the model exactly where the pair linker's gate opens
    assert llm["llm_calls"] == pair["llm_gate"] and pair["llm_calls"] is None
    assert "| evomem-auto:llm | all |" in (out / "quality.md").read_text()
