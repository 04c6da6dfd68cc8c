"""The pair linker's cheaper computations give what the ones they replaced gave, to the bit.

``pair_reading.frame`` aligned each candidate with ``difflib.SequenceMatcher`` (a third of a remember's
linking cost); it now runs the same steps over the note's word positions, indexed once per reading.
``_frame_before`` below is the old function, kept as the reference: both are compared on every
ordered pair of notes of a scenario in ``lab/devdata`` (and pairs across scenarios), on the feature
rows the linker builds from them, and on random word sequences with few distinct words (many tied
runs, where difflib's tie-breaking decides which words count as dropped).
"""

from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest

from evomem.adapters.models.pair_weights import shipped_pair_model
from evomem.domain.linkers import pair_features, pair_reading
from evomem.domain.linkers.pair import PairLinker
from evomem.domain.linkers.pair_reading import Reading
from evomem.domain.model import MemoryNode
from lab.tests.devtexts import scenario_texts


def _frame_before(note: Reading, cand: Reading) -> tuple[float, float, float]:
    """``pair_reading.frame`` as it was (difflib), verbatim."""
    a, b = cand.seq, note.seq
    if not a or not b:
        return 0.0, 0.0, 0.0
    sm = SequenceMatcher(None, a, b, autojunk=False)
    kept = sum(block.size for block in sm.get_matching_blocks())
    prefix = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix += 1
    dropped = [a[k] for tag, i1, i2, _, _ in sm.get_opcodes() if tag != "equal" for k in range(i1, i2)]
    values = sum(1 for w in dropped if w in cand.dist) / len(dropped) if dropped else 0.0
    return kept / len(a), prefix / len(a), values


def test_the_frame_of_every_development_pair_is_what_difflib_gave(scenarios: list[list[Reading]]) -> None:
    pairs = aligned = 0
    for k, reads in enumerate(scenarios):
        others = scenarios[k - 1][:3]  # a neighbouring scenario's notes: pairs of other subjects
        for note in reads:
            for cand in [*reads, *others]:
                got, want = pair_reading.frame(note, cand), _frame_before(note, cand)
                assert got == want, (note.text[:60], cand.text[:60], got, want)
                pairs += 1
                aligned += bool(note.seq and cand.seq)
    assert pairs > 20_000 and aligned > 15_000


def test_tied_runs_are_broken_as_difflib_breaks_them() -> None:
    rng = random.Random(5)
    words = ["a", "b", "c", "X1", "Y2"]
    for _ in range(4000):
        a = tuple(rng.choice(words) for _ in range(rng.randint(1, 30)))
        b = tuple(rng.choice(words) for _ in range(rng.randint(1, 30)))
        cand = pair_reading.read(" ".join(a))
        note = pair_reading.read(" ".join(b))
        assert cand.seq == tuple(w.lower() for w in a) and note.seq == tuple(w.lower() for w in b)
        assert pair_reading.frame(note, cand) == _frame_before(note, cand), (a, b)


def test_the_linker_builds_the_rows_it_built(scenarios: list[list[Reading]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole feature rows (and so the model's probabilities) of the development scenarios: each
    note against the notes before it, as the linker sees them, with the old frame and the new."""
    linker = PairLinker(None, model=shipped_pair_model())
    texts = scenario_texts()
    cases = [
        (ts[i], [MemoryNode(id=f"N{k}-{j}", raw_text=t, created_at=j * 1000) for j, t in enumerate(ts[:i])])
        for k, ts in enumerate(texts)
        for i in range(1, len(ts))
    ]
    new = [linker.features(text, None, cands) for text, cands in cases]
    monkeypatch.setattr(pair_features, "frame", _frame_before)
    old = [linker.features(text, None, cands) for text, cands in cases]
    assert len(cases) > 3000
    assert new == old
