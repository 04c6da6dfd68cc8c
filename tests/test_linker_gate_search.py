"""A note the linker will not judge costs no candidate search (issue 32, ``Linker.wants_candidates``).

The pair linker's ``decides`` gate rejects a question, a reminder or a report whatever its
candidates, unless it declares it replaces a record; the service then asks storage for no
candidate (the nodes the note names are still read) and the decision is the one the linker gives
with the candidates: none, "the note decides nothing". A deciding note, or a rejected one that
declares a replacement, is searched for and gets its offers as before. On a real SQLite store, with
the shipped pair model (words only).
"""

from __future__ import annotations

from typing import Any

import pytest

from evomem.adapters.models.pair_weights import shipped_pair_model
from evomem.domain.linkers.cascade import CascadeLinker, has_change_cue, pair_unsure
from evomem.domain.linkers.heuristic import HeuristicLinker
from evomem.domain.linkers.pair import PairLinker
from evomem.domain.model import MemoryNode
from evomem.domain.remember import ContextQuery, RememberContext

OLD = "We keep the invoices in Postgres because the accountants query them with psql."
NEW = "The invoices moved from Postgres to SQLite; one file is enough for our volume."
QUESTION = "Do we still keep the invoices in Postgres for the accountants?"
REMINDER = "Reminder: the invoices report for the accountants is due on Friday."
RECORD = "RFC 40: Nightly exports\n\nExports run nightly at 02:00 and land in the cold bucket."
DECLARING = "RFC 52: Hourly exports\n\nSupersedes RFC 40. Who runs the hourly export now?"


class RecordingStorage:
    """The service's storage, with every ``remember_context`` query it was asked kept."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.queries: list[ContextQuery] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def remember_context(self, query: ContextQuery) -> RememberContext:
        self.queries.append(query)
        return self.inner.remember_context(query)

    def searches(self) -> int:
        return sum(q.candidates for q in self.queries)


@pytest.fixture
def service(tmp_path) -> Any:
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    svc = build_embedded(Settings(db=str(tmp_path / "g.db"), vectors="off"))
    svc.storage = RecordingStorage(svc.storage)
    yield svc
    svc.close()


def test_a_note_the_gate_rejects_is_not_searched_for_and_gets_the_same_none(service) -> None:
    old = service.remember(OLD).node
    for text in (QUESTION, REMINDER):
        before = service.storage.searches()
        out = service.remember(text)
        assert service.storage.searches() == before  # no candidate search
        assert out.decision is not None and out.decision.kind == "none"
        assert out.decision.reason.startswith("the note decides nothing")
        assert out.node.possible_supersedes == ()
        # what the linker answers when it is shown the candidates the search would have given
        shown = service.link_candidates(text, "default", None)
        assert old.id in [c.id for c in shown]
        assert service.offerer.decide(text, None, shown) == out.decision


def test_a_rejected_note_still_reads_the_nodes_it_names(service) -> None:
    old = service.remember(OLD).node
    before = len(service.storage.queries)
    out = service.remember(QUESTION, relations={"depends_on": [old.id]})
    (query,) = service.storage.queries[before:]
    assert query.node_ids == (old.id,) and not query.candidates and query.search_terms == ()
    assert out.node.relations["depends_on"] == (old.id,)


def test_a_deciding_note_is_searched_for_and_gets_its_offer(service) -> None:
    old = service.remember(OLD).node
    before = service.storage.searches()
    out = service.remember(NEW)
    assert service.storage.searches() == before + 1
    assert old.id in out.node.possible_supersedes


def test_a_rejected_note_that_declares_a_replacement_is_still_judged(service) -> None:
    linker = PairLinker(None, model=shipped_pair_model())
    dm = linker.model.decides
    assert dm is not None and not dm.decides(DECLARING)  # the gate alone would reject it
    assert linker.wants_candidates(DECLARING)
    old = service.remember(RECORD).node
    before = service.storage.searches()
    out = service.remember(DECLARING)
    assert service.storage.searches() == before + 1
    assert old.id in out.node.possible_supersedes  # it declares it replaces RFC 40


def _node(k: int, text: str) -> MemoryNode:
    return MemoryNode(id=f"N{k:04d}", raw_text=text, created_at=k * 1000)  # type: ignore[arg-type]


def test_wants_candidates_is_false_only_where_the_decision_does_not_depend_on_them() -> None:
    """Each linker: where it wants no candidate, its decision with candidates is its decision without."""
    pair = PairLinker(None, model=shipped_pair_model())
    cands = [_node(1, OLD), _node(2, RECORD), _node(3, "Deploys go out on Tuesdays after the standup.")]
    cued = "We switched the deploys to Thursdays instead of Tuesdays?"
    notes = (QUESTION, REMINDER, NEW, DECLARING, cued, "We switched the deploys to Thursdays instead of Tuesdays.")
    linkers = (
        pair,
        HeuristicLinker(),
        CascadeLinker(pair, HeuristicLinker(), pair_unsure),
        CascadeLinker(pair, HeuristicLinker(), has_change_cue),
    )
    for linker in linkers:
        for text in notes:
            if not linker.wants_candidates(text):
                assert linker.decide(text, None, cands) == linker.decide(text, None, ())
    assert not pair.wants_candidates(QUESTION) and pair.wants_candidates(NEW)
    assert not HeuristicLinker().wants_candidates(QUESTION)
    # the cascade's gate asks the second linker after a none when the note has a change cue
    assert not pair.wants_candidates(cued)
    assert CascadeLinker(pair, HeuristicLinker(), has_change_cue).wants_candidates(cued)
    assert not CascadeLinker(pair, HeuristicLinker(), pair_unsure).wants_candidates(cued)


def test_a_linker_that_cannot_be_built_still_loses_no_note(tmp_path) -> None:
    """``wants_candidates`` of a lazy linker whose build fails says True: the note is searched
    for, ``decide`` fails, and the note is stored unlinked (as before the method existed)."""
    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.app.memory import MemoryService
    from evomem.domain.linkers.lazy import LazyLinker

    def broken() -> Any:
        raise RuntimeError("no weights")

    lazy = LazyLinker(broken)
    assert lazy.wants_candidates(QUESTION)
    svc = MemoryService.local(SQLiteStore(str(tmp_path / "b.db")), offerer=lazy)
    svc.remember(OLD)
    out = svc.remember(QUESTION)
    assert out.node.id and out.decision is not None and out.decision.reason.startswith("linker failed")
