"""The option study (lab/option_study.py): the option read, the pairs, the scores and the column, on hand-made notes."""

from __future__ import annotations

import numpy as np
import pytest

from lab import option_study as os_


def test_option_is_the_readers_chosen_name_never_the_gold_field() -> None:
    assert os_.option_of("Push dispatcher single sign-on: going with Okta.") == ("Okta", "chosen")
    # no chosen name: the decision part's names and values, in the order written
    opt, src = os_.option_of("The ledger persists journal entries in PostgreSQL 15 with replicas.")
    assert src in ("chosen", "distinctive") and "PostgreSQL" in opt
    assert os_.option_of("we should talk about this soon") == ("", "none")


def test_agreement_is_containment_or_a_shared_word() -> None:
    assert os_.agrees("Keycloak", "keycloak") == (True, True)
    assert os_.agrees("PostgreSQL 15 S3", "PostgreSQL 15") == (True, True)
    assert os_.agrees("Postgres cluster", "Postgres") == (True, True)
    assert os_.agrees("ADR-14", "PostgreSQL 15") == (False, False)
    assert os_.agrees("", "Okta") == (False, False)


def _data() -> dict[str, list[dict]]:
    notes = [
        {"i": 0, "text": "Push dispatcher single sign-on: going with Okta.", "kind": "decision", "option": "Okta"},
        {"i": 1, "text": "Push dispatcher cache: going with KeyDB.", "kind": "distractor", "option": "KeyDB"},
        {"i": 2, "text": "The pager is loud today.", "kind": "noise"},
        {
            "i": 3,
            "text": "Push dispatcher single sign-on: switching to Keycloak.",
            "kind": "decision",
            "option": "Keycloak",
            "supersedes": 0,
        },
    ]
    return {"para": [{"notes": notes}]}


def test_pairs_label_the_gold_among_earlier_decision_like_notes() -> None:
    rows, options, agree = os_.pairs_of(_data())
    assert [r["kind"] for r in rows] == ["distractor", "noise", "decision"]
    last = rows[-1]
    assert last["gold"] and last["labels"] == [True, False] and len(last["cands"]) == 2
    assert options[last["text"]][0] == "Keycloak"
    assert agree["para"]["decision_notes_with_gold_option"] == 3 and agree["para"]["exact"] == 1.0


def test_score_rows_rank_by_the_score_named() -> None:
    row = {"kind": "decision", "gold": True, "labels": [False, True, False], "s": [0.9, 0.5, 0.7]}
    (out,) = os_.score_rows([row], "s")
    assert out["rank"] == 3 and out["gold_cos"] == 0.5 and out["max"] == 0.9 and out["others"] == [0.9, 0.7]


def test_features_mask_the_option_cosine_when_an_option_is_missing() -> None:
    r = {
        "whole": [0.6, 0.4],
        "ocos": [0.3, 0.9],
        "ocos_c": [0.2, 0.8],
        "has_opt": [True, False],
        "same": [False, False],
    }
    assert os_.features(r, 0, ("whole", "option", "both", "whole*option", "option^2")) == [
        0.6,
        0.3,
        1.0,
        0.6 * 0.3,
        0.3**2,
    ]
    assert os_.features(r, 1, ("option", "option_carrier", "both")) == [0.0, 0.0, 0.0]


def test_the_fit_is_out_of_fold_and_reproducible() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for g in range(30):
        lab = [True, False, False]
        rows.append(
            {
                "group": f"s/{g}",
                "labels": lab,
                "whole": [0.6 + 0.1 * rng.random(), 0.5 * rng.random(), 0.5 * rng.random()],
                "ocos": list(rng.random(3)),
                "ocos_c": list(rng.random(3)),
                "has_opt": [True, True, False],
                "same": [False, True, False],
            }
        )
    a, _ = os_.fit_oof(rows, 7, os_.FITS["fit"])
    b, _ = os_.fit_oof(rows, 7, os_.FITS["fit"])
    assert a == b and len(a) == 30 and all(len(p) == 3 for p in a)
    assert np.mean([p[0] for p in a]) > np.mean([p[1] for p in a])  # the gold pair (high whole cosine) scores higher


def test_option_column_appends_one_value_per_row() -> None:
    from evomem.domain.linkers import pair_features as pf

    has_emb = pf.FEATURES.index("has_emb")
    row = [0.0] * len(pf.FEATURES)
    with_emb, without = list(row), list(row)
    with_emb[has_emb] = 1.0
    data = _data()
    sources = [("para", data["para"], {})]
    entry = {"note": 3, "cands": [0, 1], "extra": [], "rows": [with_emb, without], "labels": [1, 0]}
    groups = [("para", 0, [entry])]
    vecs = {"Keycloak": [1.0, 0.0], "Okta": [0.6, 0.8], "KeyDB": [0.0, 1.0]}
    values = os_.option_column(sources, groups, lambda xs: np.asarray([vecs[x] for x in xs]))
    assert values == [0.6, os_.NO_OPTION]  # the second row has no embeddings


def test_add_column_appends_and_registers_the_feature_for_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from evomem.domain.linkers import pair_features as pf
    from evomem.domain.linkers import pair_model as pm
    from lab import train_linker as tl

    monkeypatch.setattr(pf, "FEATURES", pf.FEATURES)
    monkeypatch.setattr(pm, "FEATURES", pm.FEATURES)
    monkeypatch.setattr(tl, "MONOTONE", dict(tl.MONOTONE))
    groups = [("s", 0, [{"rows": [[1.0], [2.0]]}])]
    os_.add_column(groups, [0.5, os_.NO_OPTION])
    assert groups[0][2][0]["rows"] == [[1.0, 0.5], [2.0, os_.NO_OPTION]]
    assert pf.FEATURES[-1] == os_.COLUMN and pm.FEATURES == pf.FEATURES and tl.MONOTONE[os_.COLUMN] == 0


def test_compare_pools_by_the_sources_counts() -> None:
    def model(ric: dict[str, float]) -> dict:
        per = {
            s: {"recall_if_confirmed": r, "offers_on_nothing": 0.1, "hint_precision": [1.0, 1]} for s, r in ric.items()
        }
        return {"offer_at": 0.4, "hint_at": 0.8, "link_at": 0.95, "training": {"offers": {"per_source": per}}}

    counts = {"odr": [30, 10], "dev-j": [10, 10]}
    out = os_.compare(model({"odr": 1.0, "dev-j": 0.0}), model({"odr": 1.0, "dev-j": 1.0}), counts)
    assert out["pooled"]["all"]["base"]["recall_if_confirmed"] == 0.75
    assert out["pooled"]["all"]["option"]["recall_if_confirmed"] == 1.0
    assert out["pooled"]["written"]["base"]["replacing"] == 10
    assert out["per_source"]["dev-j"]["option"]["recall_if_confirmed"] == 1.0
