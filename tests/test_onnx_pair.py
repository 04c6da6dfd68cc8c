"""The pair linker's cross-encoder on onnxruntime: the packaged model, its pins, and its answers.

The real int8 model (``services/evomem/adapters/models/pair-cross``) and onnxruntime; no fakes.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from evomem.adapters.models.onnx_pair import (
    DEFAULT_MODEL_DIR,
    MAX_TOKENS,
    OnnxPairScorer,
    PairModelUnavailable,
    pair_ids,
)

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def scorer() -> OnnxPairScorer:
    return OnnxPairScorer.shared()


def test_the_packaged_model_loads_and_states_its_threshold(scorer: OnnxPairScorer) -> None:
    scorer.load()
    pins = json.loads((DEFAULT_MODEL_DIR / "pins.json").read_text())
    assert pins["model"] == "pair-cross-minilm-1"
    assert pins["precision_target"] == 0.98
    assert (scorer.weight, scorer.link_score) == (pins["weight"], pins["link_score"])
    assert pins["weight"] > 0 and not math.isnan(pins["link_score"])
    # what it was trained on is written next to it: development data only
    training = pins["training"]
    assert training["train_pairs"] > 1000 and training["train_positive"] > 100
    assert not any("blind" in s or "external" in s for s in training["sources"])
    assert {"dev-a", "odr"} <= set(training["sources"])


def test_a_replacement_scores_above_an_unrelated_pair(scorer: OnnxPairScorer) -> None:
    old = "The weekly planning meeting is on Monday at 10:00."
    replaced, unrelated = scorer.logits(
        [
            ("Weekly planning moves to Tuesday at 14:00 from next week.", old),
            ("The office plants are watered on Fridays.", old),
        ]
    )
    assert unrelated < replaced


def test_a_pair_scores_the_same_alone_and_beside_others(scorer: OnnxPairScorer) -> None:
    """Each pair runs on its own, so a candidate's probability never depends on the other candidates."""
    pair = ("Billing now uses Adyen; Stripe is gone.", "Payments go through Stripe.")
    long_other = ("A long note. " * 80, "Another long note. " * 80)
    alone = scorer.logits([pair])[0]
    beside = scorer.logits([long_other, pair, long_other])[1]
    assert alone == beside


def test_pairs_are_cut_to_the_model_length() -> None:
    ids, types = pair_ids(list(range(1000, 1300)), list(range(2000, 2010)))
    assert len(ids) == MAX_TOKENS and len(types) == MAX_TOKENS
    assert ids[0] == 101 and ids.count(102) == 2
    assert types[: ids.index(102) + 1] == [0] * (ids.index(102) + 1) and set(types[ids.index(102) + 1 :]) == {1}
    # the short text is kept whole, the long one cut
    assert ids[-11:-1] == list(range(2000, 2010))
    both_long, _ = pair_ids(list(range(1000, 1300)), list(range(2000, 2300)))
    assert len(both_long) == MAX_TOKENS and both_long.index(102) == 1 + (MAX_TOKENS - 3) // 2


def test_a_damaged_model_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "pair-cross"
    shutil.copytree(DEFAULT_MODEL_DIR, folder)
    with open(folder / "model.onnx", "r+b") as fh:
        fh.seek(5000)
        byte = fh.read(1)
        fh.seek(5000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(PairModelUnavailable, match="pinned sha256"):
        OnnxPairScorer(folder).logits([("a", "b")])


def test_a_missing_model_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(PairModelUnavailable, match="make -C lab train-cross"):
        OnnxPairScorer(tmp_path).load()


def test_the_linker_runs_without_the_model(tmp_path: Path) -> None:
    """A missing cross-encoder loses only its reading: the pair model's answer stands."""
    from evomem.adapters.models.pair_weights import shipped_pair_model
    from evomem.domain.linkers.pair import PairLinker
    from evomem.domain.model import MemoryNode

    old = MemoryNode(id="A", raw_text="Standup is at 10:00 in the small meeting room.", created_at=1)
    linker = PairLinker(None, model=shipped_pair_model(), cross=OnnxPairScorer(tmp_path), link_at=1.01)
    decision = linker.decide("Standup moves to 9:30 from Monday.", None, [old])
    assert decision.kind in ("abstain", "none")


def test_the_composition_root_wires_it_as_set(tmp_path: Path) -> None:
    from evomem.bootstrap.linkers import linker_for
    from evomem.settings import Settings

    on = linker_for("pair", Settings(db=str(tmp_path / "a.db"), auto_supersede="pair", linker_cross_encoder=True))
    off = linker_for("pair", Settings(db=str(tmp_path / "b.db"), auto_supersede="pair"))  # the default
    assert getattr(on, "cross", None) is not None and "pair-cross" in on.name
    assert getattr(off, "cross", "missing") is None
