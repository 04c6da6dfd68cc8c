"""Contract tests of the ``Storage`` port's own operations: ``LocalStorage(SQLiteStore)`` in
process against ``GrpcStorage`` talking to ``StorageServicer(LocalStorage(SQLiteStore))`` on a
loopback port (``contract_support``). One call per business operation: ``remember_context``
(what remember reads before it decides), ``remember_note`` (the write, at most once) and
``recall_nodes`` (recall's whole storage side), beside the records both ports share
(``test_contracts.py``).

Each answer is checked against the SQLite file behind the wiring (``backing``), and a scripted
session must answer the same in both wirings, scores and error messages included: the proof that
the conversion over gRPC loses nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_support import (
    AGENT,
    EXTRACTION,
    LEDGER,
    STORAGES,
    UNKNOWN_ID,
    Labeller,
    Wiring,
    node_view,
    note,
    open_wiring,
    raises_exactly,
)

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.app.storage import VECTORS_OFF
from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.domain.errors import Conflict, EvoMemError, Purged
from evomem.domain.model import ExtractionState, InsertOutcome, MemoryNode
from evomem.domain.recall import RecallAnswer, RecallQuery
from evomem.domain.remember import ContextQuery, NoteWrite, RememberContext, link_sketch
from evomem.domain.text import query_terms


@pytest.fixture(params=STORAGES)
def storage_wiring(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Wiring]:
    with open_wiring(request.param, tmp_path) as w:
        yield w


def recall(terms: str, **kw: Any) -> RecallQuery:
    words = tuple(terms.split())
    return RecallQuery(terms=words, text=terms, namespace=kw.pop("namespace", "default"), k=5, limit=50, **kw)


def candidates(text: str, **kw: Any) -> ContextQuery:
    terms = tuple(query_terms(text))
    return ContextQuery(text=text, namespace="default", candidates=True, search_terms=terms, **kw)


def test_remember_note_stores_once(storage_wiring: Wiring) -> None:
    """A key used before answers its node; another text under it is a Conflict, a purged one
    Purged; without a key, the dedupe window answers an identical active note."""
    storage, backing = storage_wiring.port, storage_wiring.backing
    first = storage.remember_note(NoteWrite(note(LEDGER), idempotency_key="k1"))
    assert (first.outcome, first.vector_problem, first.head_was_forgotten) == (InsertOutcome.INSERTED, None, False)
    assert first.node == backing.get(first.node.id)
    again = storage.remember_note(NoteWrite(note(LEDGER), idempotency_key="k1"))
    assert (again.node, again.outcome) == (first.node, InsertOutcome.REPLAYED)
    raises_exactly(Conflict, lambda: storage.remember_note(NoteWrite(note("Other text"), idempotency_key="k1")))

    write = NoteWrite(note("Deploys go through ArgoCD", scope="infra"), dedupe_window_ms=60_000)
    plain = storage.remember_note(write)
    same = storage.remember_note(write)
    assert (same.node.id, same.outcome) == (plain.node.id, InsertOutcome.DUPLICATE)
    assert storage.remember_note(NoteWrite(write.note)).outcome == InsertOutcome.INSERTED  # no window

    storage.forget(first.node.id, purge=True)
    raises_exactly(Purged, lambda: storage.remember_note(NoteWrite(note(LEDGER), idempotency_key="k1")))
    assert backing.check_invariants() == []


def test_remember_note_says_what_it_could_not_do(storage_wiring: Wiring) -> None:
    """A storage without vectors says so when the caller requires them (and is quiet otherwise);
    a note that supersedes a version whose chain's head was forgotten continues the chain, and
    says that the head it went after was forgotten."""
    storage = storage_wiring.port
    required = storage.remember_note(NoteWrite(note("Needs vectors"), vectors=True, vectors_required=True))
    assert required.outcome == InsertOutcome.INSERTED and required.vector_problem == VECTORS_OFF
    assert storage.remember_note(NoteWrite(note("Wants vectors"), vectors=True)).vector_problem is None
    assert storage.model_state() == "off"

    v1 = storage.remember_note(NoteWrite(note("The ledger uses Postgres"))).node
    v2 = storage.remember_note(NoteWrite(note("Moved the ledger to SQLite"), supersedes=v1.id, link=AGENT)).node
    storage.forget(v2.id)
    v3 = storage.remember_note(NoteWrite(note("Moved the ledger to DuckDB"), supersedes=v1.id, link=AGENT))
    assert (v3.node.supersedes, v3.node.version, v3.head_was_forgotten) == (v2.id, 3, True)
    assert v3.node.link is not None and v3.node.link.requested_id == v1.id
    assert v3.node == storage_wiring.backing.get(v3.node.id)


def test_remember_context_reads_the_named_nodes_and_the_candidates(storage_wiring: Wiring) -> None:
    w = storage_wiring
    storage = w.port
    pg = w.insert(note("We picked Postgres for the ledger database"))
    cache = w.insert(note("The search cache lives in Redis"))
    v1 = w.insert(note("Payments use Stripe for the ledger"))
    v2 = w.insert(note("Payments moved from Stripe to Adyen for the ledger"), supersedes=v1.id, link=AGENT)
    billing = w.insert(note("We picked MySQL for the ledger database", scope="billing"))
    gone = w.insert(note("We picked Oracle for the ledger database"))
    storage.forget(gone.id)

    named = storage.remember_context(ContextQuery(text="x", namespace="default", node_ids=(cache.id, UNKNOWN_ID)))
    assert named == RememberContext(nodes={cache.id: w.backing.get(cache.id)})

    found = storage.remember_context(candidates("We moved the ledger database to DuckDB", node_ids=(pg.id,)))
    assert found.nodes == {pg.id: w.backing.get(pg.id)}
    ids = [c.id for c in found.candidates]
    assert set(ids) == {pg.id, v2.id}  # active, in scope, matching: not the scoped, superseded or forgotten
    # the candidates and their earlier versions as link sketches: what a linker reads of them
    assert found.candidates == [link_sketch(w.backing.get(i)) for i in ids]
    assert found.earlier == {v1.id: link_sketch(w.backing.get(v1.id))}
    assert (found.similarities, found.vector_problem) == ({}, None)

    scoped = storage.remember_context(candidates("We moved the ledger database to DuckDB", scope="billing"))
    assert [c.id for c in scoped.candidates] == [billing.id]  # a scoped note replaces no default-scope decision
    required = storage.remember_context(candidates("ledger", vector_limit=5, vectors_required=True))
    assert required.vector_problem == VECTORS_OFF
    assert storage.remember_context(candidates("ledger", vector_limit=5)).vector_problem is None


def test_recall_nodes_answers_the_heads_in_force(storage_wiring: Wiring) -> None:
    w = storage_wiring
    storage = w.port
    v1 = w.insert(note("We picked Postgres for the ledger"))
    v2 = w.insert(note("We moved the ledger from Postgres to SQLite"), supersedes=v1.id, link=AGENT)
    a1 = w.insert(note("The archive lives in S3"))
    a2 = w.insert(note("The archive moved to Glacier"), supersedes=a1.id, link=AGENT)
    storage.forget(a2.id)

    answer = storage.recall_nodes(recall("ledger postgres", include_history=True))
    assert [(r.head.id, [h.id for h in hist]) for r, hist in answer.results] == [(v2.id, [v1.id])]
    assert answer.results[0][0].head == w.backing.get(v2.id)
    assert {m.node_id for m in answer.results[0][0].matches} == {v1.id, v2.id}
    assert (answer.hidden_forgotten, answer.vector_problem) == (0, None)
    archive = storage.recall_nodes(recall("archive"))
    assert (archive.results, archive.hidden_forgotten) == ([], 1)
    assert storage.recall_nodes(recall("ledger", namespace="team-b")) == RecallAnswer()
    assert storage.recall_nodes(recall("ledger", vector_limit=5, vectors_required=True)).vector_problem == VECTORS_OFF


def test_model_state_of_a_gateway_says_who_holds_the_vectors() -> None:
    assert GrpcStorage("127.0.0.1:1", vectors=True).model_state() == "remote"
    assert GrpcStorage("127.0.0.1:1").model_state() == "off"


# ---------------------------------------------------------------------------- across wirings


def storage_transcript(w: Wiring) -> list[Any]:
    """One scripted session on a Storage; everything it answered, ids labelled."""
    storage = w.port
    lab = Labeller()
    out: list[Any] = []

    def attempt(fn: Callable[[], Any]) -> Any:
        try:
            value = fn()
        except EvoMemError as exc:
            return ("error", type(exc).__name__, lab(exc.message))
        return ("ok", node_view(value, lab) if isinstance(value, MemoryNode) else lab(value))

    def answer(a: RecallAnswer) -> Any:
        return (
            [
                (
                    node_view(r.head, lab),
                    r.score,
                    r.scope_match,
                    [(lab(m.node_id), m.score, m.fields, m.via) for m in r.matches],
                    [
                        (node_view(s.node, lab), s.reason, s.result, s.position, s.confidence)
                        for s in r.maybe_replaced_by
                    ],
                    [node_view(h, lab) for h in hist],
                )
                for r, hist in a.results
            ],
            a.hidden_forgotten,
            a.vector_problem,
        )

    for i in range(6):
        w.insert(note(f"Filler {i}: the search service caches results in Redis for {i} minutes."))
    v1 = w.insert(note("We picked Postgres for the ledger", tags=("ledger",), scope="billing", author="al"))
    v2 = w.insert(note("We moved the ledger from Postgres to SQLite", scope="billing"), supersedes=v1.id, link=AGENT)
    v3 = storage.remember_note(
        NoteWrite(note("The ledger moves to DuckDB. " + LEDGER, extraction=EXTRACTION), supersedes=v1.id, link=AGENT)
    )
    x = w.insert(note("Payments retry three times", relations={"see_also": (v1.id,)}))
    y = w.insert(note("Payments retry five times", possible_supersedes=(x.id,), possible_supersedes_why=("retry",)))
    out.append([node_view(n, lab) for n in (v1, v2, v3.node, x, y)] + [lab(str(v3.outcome)), v3.head_was_forgotten])
    context = storage.remember_context(candidates("We moved the payments retries to five", node_ids=(v1.id, x.id)))
    out.append(
        [
            sorted(lab(list(context.nodes))),
            [node_view(c, lab) for c in context.candidates],
            {lab(k): node_view(n, lab) for k, n in context.earlier.items()},
        ]
    )
    out.append(answer(storage.recall_nodes(recall("ledger postgres", include_history=True, history_depth=1))))
    out.append(answer(storage.recall_nodes(recall("ledger sqlite", scope="billing"))))
    out.append(answer(storage.recall_nodes(recall("payments retry"))))  # y offered as x's possible successor
    out.append(node_view(storage.link(y.id, x.id, AGENT), lab))
    out.append(attempt(lambda: storage.link(x.id, y.id, AGENT)))
    out.append(attempt(lambda: w.insert(note("n", namespace="other"), supersedes=v3.node.id)))
    out.append([node_view(n, lab) for n in storage.unlink(y.id, by="bob")])
    out.append(sorted((lab(k), node_view(n, lab)) for k, n in storage.heads([v1.id, x.id, y.id]).items()))
    out.append([node_view(n, lab) for n in storage.chain(v3.node.id, 1)])
    out.append(storage.forget(v3.node.id)[1])
    out.append(attempt(lambda: w.insert(note("n", scope="billing"), supersedes=v2.id, link=AGENT)))
    out.append(node_view(storage.forget(x.id, purge=True)[0], lab))
    out.append(attempt(lambda: storage.forget(x.id)))
    out.append(node_view(storage.set_extraction(y.id, None, ExtractionState.FAILED, "e1"), lab))
    out.append(lab(storage.pending_extractions(3)))
    for ns in (None, "default", "other"):
        s = storage.stats(ns)
        out.append((s.by_status, s.purged, s.chains, s.extraction, s.namespaces, s.schema_version))
    storage.append_audit(
        AuditEntry(at=5, identity="al", role="writer", tool="remember", namespace=None, ids=(y.id,), outcome="ok")
    )
    out.append([(e.seq, e.identity, lab(list(e.ids)), e.outcome) for e in storage.audit_page(AuditQuery())])
    return out


def test_storage_transcripts_are_equal_across_wirings(tmp_path: Path) -> None:
    with open_wiring("local", tmp_path) as local:
        embedded = storage_transcript(local)
    with open_wiring("grpc", tmp_path) as remote:
        served = storage_transcript(remote)
    assert len(embedded) == len(served)
    for i, (a, b) in enumerate(zip(embedded, served, strict=True)):
        assert a == b, f"step {i} differs"
    # The transcript is not vacuous: candidates, scores, successors and errors are in it.
    assert embedded[1][1] and embedded[2][0] and all(r[1] > 0 for r in embedded[2][0])
    assert embedded[3][0] and embedded[4][0][0][4]  # a scoped recall; a possible successor
    assert embedded[6][:2] == ("error", "CycleError")
    assert embedded[7][:2] == ("error", "NamespaceMismatch")
