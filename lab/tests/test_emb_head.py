"""The embedding interaction head (``lab.emb_head``): its out-of-fold score never saw its own scenario,
and the feature joins the rows last, 0 where a row has no embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from evomem.domain.linkers import pair_features as pf
from evomem.domain.linkers import pair_model as pm
from lab import emb_head as eh
from lab import train_linker as tl


def _table(labels: np.ndarray, groups: np.ndarray, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    n = len(labels)
    u = rng.normal(size=(n, 8)).astype(np.float32)
    v = (u + rng.normal(scale=0.5, size=(n, 8))).astype(np.float32)
    v[labels == 1] = u[labels == 1] * 0.9  # true pairs: a head can learn them
    return {
        "pos": np.arange(n),
        "pair": np.arange(n),
        "group": groups,
        "label": labels.astype(float),
        "u": u,
        "v": v,
        "n_rows": n,
    }


def test_out_of_fold_scores_ignore_their_own_fold() -> None:
    groups = np.repeat(np.arange(20), 6)
    labels = (np.arange(len(groups)) % 6 == 0).astype(int)
    fold = tl.fold_of(20, 7)
    table = _table(labels, groups)
    weight = np.ones(len(groups))
    oof, _ = eh.out_of_fold(table, weight, fold)
    # flip every label of fold 0's rows: their scores come from heads that never read them
    in0 = np.asarray([fold[int(g)] == 0 for g in groups])
    flipped = dict(table, label=np.where(in0, 1 - table["label"], table["label"]))
    oof2, _ = eh.out_of_fold(flipped, weight, fold)
    assert np.allclose(oof[in0], oof2[in0])
    assert not np.allclose(oof[~in0], oof2[~in0])


def test_head_input_is_symmetric() -> None:
    u, v = np.array([[0.5, -1.0]]), np.array([[2.0, 3.0]])
    assert np.allclose(eh.head_input(u, v), eh.head_input(v, u))
    assert eh.head_input(u, v).shape == (1, 4)


def test_feature_is_appended_last_and_zero_without_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pf, "FEATURES", pf.FEATURES)
    monkeypatch.setattr(pm, "FEATURES", pm.FEATURES)
    monkeypatch.setattr(tl, "MONOTONE", dict(tl.MONOTONE))
    long_at = pf.FEATURES.index("note_long")
    eh.use_feature()
    assert pf.FEATURES[-1] == eh.NAME and pf.FEATURES.index("note_long") == long_at
    assert tl.MONOTONE[eh.NAME] == 1
    groups = [("s", 0, [{"rows": [[1.0], [2.0]]}, {"rows": [[3.0]]}])]
    table = {"pos": np.array([0, 2])}
    eh.add_feature(groups, table, np.array([0.5, -1.5]))
    assert [r[-1] for e in groups[0][2] for r in e["rows"]] == [0.5, 0.0, -1.5]
