"""Offers an agent can trust, through the embedded server as `evomem-mcp --db` builds it with
default settings and the shipped pair model: a note that decides nothing gets no offer and is never
offered; a decision for one scope is not offered as replacing another scope's; what is offered
carries a calibrated probability and says what changes; offers and hints can be switched off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evomem.adapters.models.pair_weights import shipped_pair_model
from evomem.app.memory import MemoryService
from evomem.bootstrap.embedded import build_embedded
from evomem.settings import Settings

LEDGER = "The ledger runs on PostgreSQL 16 with a nightly base backup."
MOVED = "We moved the ledger from PostgreSQL to SQLite in WAL mode; one file per tenant."


def service(tmp_path: Path, **linker: object) -> MemoryService:
    """The embedded default (hybrid: the packaged embedding model), with these linker settings."""
    settings = Settings(db=str(tmp_path / "m.db"), linker=linker)  # type: ignore[arg-type]
    return build_embedded(settings)


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[MemoryService]:
    s = service(tmp_path)
    yield s
    s.close()


def test_the_shipped_model_is_calibrated_and_selective() -> None:
    model = shipped_pair_model()
    assert model.calibration, "the shipped model has no calibration"
    assert model.decides is not None
    assert model.offer_at is not None and 0 < model.offer_at < model.hint_at <= 1.0
    xs = [x for x, _ in model.calibration]
    ys = [y for _, y in model.calibration]
    assert xs == sorted(xs) and ys == sorted(ys)  # a probability that rises with the model's score


def test_a_change_of_the_ledger_is_offered_with_its_probability_and_what_changes(svc: MemoryService) -> None:
    old = svc.remember(LEDGER).node
    got = svc.remember(MOVED)
    assert got.node.possible_supersedes == (old.id,)
    assert got.decision is not None
    ((target, p),) = got.decision.candidates
    assert target == old.id and shipped_pair_model().offer_at <= p < 1.0  # type: ignore[operator]
    (why,) = got.decision.why
    assert why.startswith(f"p={p:.2f}") and "SQLite" in why, why


@pytest.mark.parametrize(
    "question",
    [
        "Who owns the alerts for the ledger's PostgreSQL backups?",
        "reminder: write up the ledger PostgreSQL incident for Friday's review",
        "The ledger's PostgreSQL backup job failed again last night, third time this week.",
    ],
)
def test_a_note_that_decides_nothing_neither_gets_nor_is_an_offer(svc: MemoryService, question: str) -> None:
    svc.remember(LEDGER)
    asked = svc.remember(question)
    assert asked.node.possible_supersedes == ()
    moved = svc.remember(MOVED)
    assert asked.node.id not in moved.node.possible_supersedes


def test_a_decision_for_another_scope_is_not_offered_as_its_replacement(svc: MemoryService) -> None:
    svc.remember(LEDGER)
    staged = svc.remember("In staging we moved the ledger from PostgreSQL to SQLite to test the migration.")
    assert staged.node.scope == "staging"  # inferred from its words
    assert staged.node.possible_supersedes == ()


def test_offers_can_be_switched_off_and_the_cut_off_set(tmp_path: Path) -> None:
    off = service(tmp_path / "a", offer_candidates=False)
    try:
        off.remember(LEDGER)
        assert off.remember(MOVED).node.possible_supersedes == ()
    finally:
        off.close()
    strict = service(tmp_path / "b", offer_min_p=1.0)
    try:
        strict.remember(LEDGER)
        assert strict.remember(MOVED).node.possible_supersedes == ()
    finally:
        strict.close()


def test_hints_follow_their_cut_off_and_can_be_switched_off(tmp_path: Path) -> None:
    for hints, at, shown in ((True, 0.0, True), (False, None, False), (True, 1.0, False)):
        s = service(tmp_path / f"{hints}-{at}", recall_hints=hints, hint_min_p=at)
        try:
            s.remember(LEDGER)
            assert s.remember(MOVED).node.possible_supersedes
            hits = s.recall("ledger PostgreSQL backup", k=3).results
            old = next(entry for entry, _ in hits if entry.head.raw_text == LEDGER)
            assert bool(old.maybe_replaced_by) is shown, (hints, at)
        finally:
            s.close()


def test_a_successor_among_the_results_is_shown_from_its_own_cut_off(tmp_path: Path) -> None:
    """Recall shows a possible successor that is itself a result from ``among_results``, one that
    is not from ``alone``: the same offer, read with and without the other note in the answer."""
    from dataclasses import replace

    from evomem.domain.recall import HintCutoffs

    s = service(tmp_path, hint_min_p=0.0)
    try:
        s.remember(LEDGER)
        moved = s.remember(MOVED)
        ((_, p),) = moved.decision.candidates  # type: ignore[union-attr]

        def successors(cut: HintCutoffs, query: str) -> list[str]:
            s.config = replace(s.config, hint_min_p=lambda: cut)
            hits = s.recall(query, k=5).results
            old = next(entry for entry, _ in hits if entry.head.raw_text == LEDGER)
            return [y.node.id for y in old.maybe_replaced_by]

        both = "ledger PostgreSQL SQLite"  # finds both notes: the successor is a result
        assert successors(HintCutoffs(alone=1.01, among_results=p), both) == [moved.node.id]
        assert successors(HintCutoffs(alone=p, among_results=1.01), both) == []
        s.forget(moved.node.id)  # a successor that is not active is never shown
        assert successors(HintCutoffs(alone=0.5, among_results=0.5), both) == []
    finally:
        s.close()


def test_the_shipped_hint_cut_offs_reach_recall() -> None:
    from evomem.bootstrap.linkers import hint_floor
    from evomem.domain.recall import HintCutoffs

    model = shipped_pair_model()
    shown = model.hint_at if model.hint_at_shown is None else model.hint_at_shown
    assert hint_floor(Settings(db=":memory:", vectors="off"))() == HintCutoffs(model.hint_at, shown)
    assert model.offer_at is not None and model.offer_at <= shown <= model.hint_at
    assert hint_floor(Settings(db=":memory:", vectors="off", hint_min_p=0.7))() == HintCutoffs(0.7, 0.7)
    assert hint_floor(Settings(db=":memory:", vectors="off", recall_hints=False))().shows_all is False


def test_the_offer_cut_off_reaches_every_pair_linker_the_settings_build() -> None:
    from evomem.bootstrap.linkers import linker_for, offerer_for

    settings = Settings(db=":memory:", vectors="off", offer_min_p=0.7, auto_supersede="pair")
    assert linker_for("pair", settings).offer_at == 0.7  # type: ignore[attr-defined]
    off = Settings(db=":memory:", vectors="off", offer_min_p=0.7)
    assert offerer_for(off).offer_at == 0.7  # type: ignore[union-attr]
    assert linker_for("pair", Settings(db=":memory:", vectors="off")).offer_at == shipped_pair_model().offer_at  # type: ignore[attr-defined]


def test_a_pair_of_long_documents_reads_the_long_calibration() -> None:
    """``PairModel.prob``: the same raw score means what its regime's calibration says; a file
    without a long calibration reads the one it has for both."""
    from evomem.domain.linkers.pair_features import FEATURES
    from evomem.domain.linkers.pair_model import PairModel

    base = {"kind": "lr", "link_at": 1.0, "abstain_at": 1.0, "intercept": 0.0}
    weights = dict(weights=(0.0,) * len(FEATURES), mean=(0.0,) * len(FEATURES), scale=(1.0,) * len(FEATURES))
    short_cal = ((0.0, 0.0), (1.0, 0.9))
    long_cal = ((0.0, 0.0), (1.0, 0.2))
    model = PairModel(**base, **weights, calibration=short_cal, calibration_long=long_cal)  # raw = sigmoid(0) = 0.5
    row = [0.0] * len(FEATURES)
    assert abs(model.prob(row) - 0.45) < 1e-9
    for flag in ("note_long", "cand_long"):
        long_row = list(row)
        long_row[FEATURES.index(flag)] = 1.0
        assert abs(model.prob(long_row) - 0.1) < 1e-9, flag
    older = PairModel(**base, **weights, calibration=short_cal)
    long_row[FEATURES.index("cand_long")] = 1.0
    assert abs(older.prob(long_row) - 0.45) < 1e-9


def test_an_offer_whose_note_keeps_part_of_the_decision_says_it_may_be_partial(tmp_path: Path) -> None:
    """The reason names what changes and, when the note says that some of it stands ("only",
    "except", "still"), that it may be a partial change; a plain change says nothing of the kind."""
    s = service(tmp_path, offer_min_p=0.0)
    try:
        s.remember(LEDGER)
        partial = s.remember("Only the EU tenants' ledger moves from PostgreSQL to SQLite; the rest stays put.")
        (why,) = [w for w in partial.decision.why][:1]  # type: ignore[union-attr]
        assert "SQLite" in why and "may be a partial change" in why, why
    finally:
        s.close()
    plain = service(tmp_path / "b", offer_min_p=0.0)
    try:
        plain.remember(LEDGER)
        (why,) = [w for w in plain.remember(MOVED).decision.why][:1]  # type: ignore[union-attr]
        assert "partial" not in why, why
    finally:
        plain.close()
