"""Contract tests of the model ports, in process and over gRPC: the ``Extractor``
(``LiteCronista``, or ``GrpcExtractor`` -> ``CronistaServicer(LiteCronista())``) and the ``Linker``
(``HeuristicLinker`` or ``ScoredLinker``, or ``GrpcLinker`` -> ``LinkerServicer(...)``), each server
real, on port 0. The same input must give the same answer in both wirings.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_support import serve, serve_storage

from evomem.adapters.grpc.clients import GrpcExtractor, GrpcLinker, GrpcStorage
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService
from evomem.app.ports import Extractor, Linker
from evomem.app.storage import LocalStorage
from evomem.domain import cronista
from evomem.domain.cronista import LiteCronista
from evomem.domain.linkers.heuristic import HeuristicLinker
from evomem.domain.linkers.scored import ScoredLinker
from evomem.domain.model import (
    Extraction,
    LinkDecision,
    LinkKind,
    LinkProposal,
    MemoryNode,
    Status,
    new_id,
)
from evomem.entrypoints.grpc.servicers import CronistaServicer, LinkerServicer
from evomem.v1 import cronista_pb2_grpc, linker_pb2_grpc


@pytest.fixture(params=["lite", "grpc"])
def extractor(request: pytest.FixtureRequest) -> Iterator[Extractor]:
    if request.param == "lite":
        yield LiteCronista()
        return
    running = serve(
        lambda s: cronista_pb2_grpc.add_CronistaServiceServicer_to_server(CronistaServicer(LiteCronista()), s),
        "evomem.v1.CronistaService",
    )
    client = GrpcExtractor(f"127.0.0.1:{running.port}")
    yield client
    client.close()
    running.stop(0)


def _linker_service(inner: Any) -> Iterator[GrpcLinker]:
    """``inner`` behind a real linker service on loopback, and a client to it."""
    running = serve(
        lambda s: linker_pb2_grpc.add_LinkerServiceServicer_to_server(LinkerServicer(inner), s),
        "evomem.v1.LinkerService",
    )
    client = GrpcLinker(f"127.0.0.1:{running.port}")
    yield client
    client.close()
    running.stop(0)


@pytest.fixture(params=["heuristic", "grpc"])
def linker(request: pytest.FixtureRequest) -> Iterator[Linker]:
    if request.param == "heuristic":
        yield HeuristicLinker()
        return
    yield from _linker_service(HeuristicLinker())


# ============================================================================ Extractor contract


NOTES = [
    "We moved the ledger from Postgres to SQLite because Postgres was overkill for one writer. "
    "We tried DuckDB first but it could not handle concurrent writes. As a result, backups are now a file copy.",
    "Decided to retry failed payments three times with exponential backoff, since the gateway times out under load.",
    "Switched CI from Jenkins to GitHub Actions; Jenkins kept failing. Builds are now 40% faster.",
    "Ünïcode: the 台帳 service uses SQLite — no more Postgres ✓.",
    "plain words with no cues at all",
    "",
    "   \n\n  ",
    "Line one.\nLine two because reasons.\n\nLine three, which means something.",
    ("We replaced the cache because the cache was too slow. " * 400).strip(),
]


def test_extractor_implements_the_port(extractor: Extractor) -> None:
    assert isinstance(extractor, Extractor)
    assert isinstance(extractor.name, str) and extractor.name


@pytest.mark.parametrize("text", NOTES, ids=[f"note{i}" for i in range(len(NOTES))])
def test_extractor_gives_the_same_extraction(extractor: Extractor, text: str) -> None:
    got = extractor.extract(text)
    assert isinstance(got, Extraction)
    assert got == cronista.extract(text)
    assert got.extractor == LiteCronista.name


def test_extraction_is_not_trivial() -> None:
    """Guard for the test above: the reference fills several fields for the first note."""
    ex = cronista.extract(NOTES[0])
    assert ex.change and ex.trigger and ex.alternatives_tried and ex.consequences and ex.summary


# ============================================================================ Linker contract


def _node(text: str, *, scope: str | None = None, status: Status = Status.ACTIVE, **kw: Any) -> MemoryNode:
    nid = new_id()
    return MemoryNode(id=nid, raw_text=text, scope=scope, status=status, chain_root=nid, **kw)


PG = _node("We picked Postgres for the ledger", tags=("ledger",), author="al", relations={"x": ("A",)})
PAY = _node("Retry failed payments three times with exponential backoff", scope="production")
CACHE = _node("The search cache lives in Redis", status=Status.SUPERSEDED, superseded_by=new_id())
PG_SCOPED = _node("We picked Postgres for the ledger service database", scope="billing")
PG_OPS = _node("We picked Postgres for the ledger service database", scope="ops")

LINK_CASES: list[tuple[str, str, str | None, list[MemoryNode]]] = [
    ("moved", "We moved the ledger from Postgres to SQLite", None, [PAY, PG]),
    # A scoped note never replaces a default-scope decision, even one ranked first.
    (
        "scoped-skips-default",
        "We moved the ledger service database from Postgres to SQLite",
        "billing",
        [PG, PG_SCOPED],
    ),
    ("scope-picks", "We moved the ledger service database from Postgres to SQLite", "billing", [PG_OPS, PG_SCOPED]),
    ("switched", "We switched failed payments retries from exponential backoff to a fixed delay", None, [PG, PAY]),
    ("no-cue", "We picked Postgres for the ledger", None, [PG]),
    ("no-candidates", "We moved the ledger from Postgres to SQLite", None, []),
    ("scope-mismatch", "We switched failed payments retries from exponential backoff", "billing", [PAY]),
    ("not-active", "We moved the search cache from Redis to Memcached", None, [CACHE]),
    ("no-overlap", "We moved the office to Lisbon", None, [PG, PAY]),
]


def test_linker_implements_the_port(linker: Linker) -> None:
    assert isinstance(linker, Linker)
    assert isinstance(linker.name, str) and linker.name


@pytest.mark.parametrize(("case", "text", "scope", "candidates"), LINK_CASES, ids=[c[0] for c in LINK_CASES])
def test_linker_gives_the_same_proposal(
    linker: Linker, case: str, text: str, scope: str | None, candidates: list[MemoryNode]
) -> None:
    expected = HeuristicLinker().propose(text, scope, candidates)
    got = linker.propose(text, scope, candidates)
    assert got == expected
    targets = {"moved": PG, "scoped-skips-default": PG_SCOPED, "scope-picks": PG_SCOPED, "switched": PAY}
    if case in targets:
        assert isinstance(got, LinkProposal)
        assert got.target_id == targets[case].id
        assert got.method == "heuristic" and got.by == HeuristicLinker.name and 0 < got.confidence <= 1
        assert got.evidence
    else:
        assert got is None


@pytest.fixture(params=["scored", "grpc"])
def scored_linker(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The scored linker in-process, and the same linker behind a real linker service."""
    if request.param == "scored":
        yield ScoredLinker()
        return
    yield from _linker_service(ScoredLinker())


LEDGER_AUTH = _node("Decision: the ledger uses Auth0 as its auth provider.")
LEDGER_DB = _node("We picked Postgres for the ledger database because it has managed backups.")
DECIDE_CASES: list[tuple[str, str, str]] = [
    ("link", "We moved the ledger database from Postgres to SQLite.", "link"),
    ("abstain", "From here on the ledger runs on Zorblax.", "abstain"),  # which aspect, nothing says
    ("none", "Ledger Postgres backups took four minutes.", "none"),
]


@pytest.mark.parametrize(("case", "text", "kind"), DECIDE_CASES, ids=[c[0] for c in DECIDE_CASES])
def test_linker_gives_the_same_decision(scored_linker: Any, case: str, text: str, kind: str) -> None:
    """link / abstain (with its candidates) / none cross the linker service unchanged."""
    candidates = [LEDGER_AUTH, LEDGER_DB]
    expected = ScoredLinker().decide(text, None, candidates)
    got = scored_linker.decide(text, None, candidates)
    assert got == expected
    assert got.kind == kind
    if kind == "link":
        assert got.proposal is not None and got.proposal.target_id == LEDGER_DB.id
    if kind == "abstain":
        assert {c for c, _ in got.candidates} == {LEDGER_AUTH.id, LEDGER_DB.id} and got.proposal is None


def test_every_link_kind_maps_to_the_proto_enum_and_back() -> None:
    """LinkKind and linker.proto's LinkDecisionKind name the same three answers; an unknown
    wire value (UNSPECIFIED) and an unknown kind are errors, never a silent "none"."""
    from evomem.adapters.grpc import convert
    from evomem.v1 import linker_pb2

    wire = {v for k, v in linker_pb2.LinkDecisionKind.items() if k != "LINK_DECISION_KIND_UNSPECIFIED"}
    seen = set()
    for kind in LinkKind:
        proposal = LinkProposal("01J0", 0.9, "scored", ("e",), "scored/1") if kind is LinkKind.LINK else None
        decision = LinkDecision(kind=kind, proposal=proposal, candidates=(("01J0", 0.5),), reason="r")
        msg = convert.decision_to_pb(decision, "scored/1")
        seen.add(msg.kind)
        assert convert.decision_from_pb(msg) == decision
    assert seen == wire
    with pytest.raises(ValueError, match="unknown link decision kind"):
        convert.decision_from_pb(linker_pb2.DecideLinkResponse())
    assert LinkDecision(kind="abstain").kind is LinkKind.ABSTAIN  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="LinkKind"):
        LinkDecision(kind="maybe")  # type: ignore[arg-type]


def test_an_abstention_over_the_linker_service_becomes_possible_supersedes(tmp_path: Path) -> None:
    """The gateway's wiring (storage and a scored linker service over gRPC): the linker's
    abstention reaches remember's response and the stored node, as in the embedded server."""
    db = SQLiteStore(tmp_path / "gw.db")
    storage = serve_storage(LocalStorage(db))
    gstorage = GrpcStorage(f"127.0.0.1:{storage.port}")
    linking = serve(
        lambda s: linker_pb2_grpc.add_LinkerServiceServicer_to_server(LinkerServicer(ScoredLinker()), s),
        "evomem.v1.LinkerService",
    )
    glinker = GrpcLinker(f"127.0.0.1:{linking.port}")
    try:
        svc = MemoryService(gstorage, extractor=LiteCronista(), linker=glinker)
        auth = svc.remember(LEDGER_AUTH.raw_text).node
        dbn = svc.remember(LEDGER_DB.raw_text).node
        unsure = svc.remember("From here on the ledger runs on Zorblax.")
        assert unsure.decision is not None and unsure.decision.kind == "abstain"
        assert unsure.linked_to is None and set(unsure.node.possible_supersedes) == {auth.id, dbn.id}
        assert set(db.get(unsure.node.id).possible_supersedes) == {auth.id, dbn.id}  # type: ignore[union-attr]
        sure = svc.remember("We moved the ledger database from Postgres to SQLite.")
        assert sure.linked_to == dbn.id and sure.link is not None and sure.link.method == "scored"
    finally:
        glinker.close()
        gstorage.close()
        linking.stop(0)
        storage.stop(0)
        db.close()


def test_an_inferred_scope_reaches_the_pair_linker_over_the_linker_service() -> None:
    """DecideLink carries whether the note's scope was inferred: the pair linker behind a real
    linker service lists another scope's decision that the note names for a note whose scope is a
    guess, as in-process, and rules it out when the caller gave that scope (offer_at 0: every
    candidate that passes the scope rules is listed)."""
    from evomem.adapters.models.pair_weights import shipped_pair_model
    from evomem.domain.linkers.pair import PairLinker

    inner = PairLinker(None, model=shipped_pair_model(), offer_at=0.0)
    old = MemoryNode(id="N1", raw_text="Staging deploys run from the release branch.", scope="staging")
    text = "staging deploys: no release branch now, and the deploy checks run only in CI."
    remote = _linker_service(inner)
    client = next(remote)
    try:
        assert isinstance(client, Linker)  # the one Linker contract: decide takes scope_inferred, as every linker
        for inferred in (True, False):
            here = inner.decide(text, "tests", [old], scope_inferred=inferred)
            there = client.decide(text, "tests", [old], scope_inferred=inferred)
            assert (there.kind, there.candidates) == (here.kind, here.candidates)
            assert (old.id in [c for c, _ in there.candidates]) is inferred
    finally:
        next(remote, None)  # the generator closes the client and stops the server
