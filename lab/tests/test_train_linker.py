"""The pair model's training and calibration (lab/train_linker.py, lab/calibration.py): reproducible,
replayed through the real service, held to one link rule, and monotone where its training says."""

from __future__ import annotations

import json
import random

from evomem.adapters.models.pair_weights import MODEL_FILE, shipped_pair_model
from evomem.domain.linkers.pair import PairLinker
from evomem.domain.linkers.pair_features import FEATURES
from evomem.domain.linkers.pair_model import PairModel


def test_threshold_calibration_is_reproducible_from_its_seed() -> None:
    from bench import scenarios as scen
    from lab import train_linker as tl

    sources = [("gen", scen.generate(24, 5), {"generator": scen.GENERATOR, "seed": 5})]
    feats = PairLinker(None, model=PairModel(kind="lr", link_at=1.0, abstain_at=1.0))
    groups = tl.build_groups(sources, feats)
    a = tl.calibrate(sources, groups, seed=3, model="lr")
    b = tl.calibrate(sources, groups, seed=3, model="lr")
    assert (a["link_at"], a["abstain_at"], a["report"]) == (b["link_at"], b["abstain_at"], b["report"])
    assert a["oof"].tolist() == b["oof"].tolist()


def test_training_replays_a_scenario_with_the_candidates_the_service_gives() -> None:
    """The pair data is what the served linker sees: each note's candidates are the ones the
    embedded service's own search gives (its BM25, its scope inference), in its order; with the
    gold links made, a replaced note is no longer a candidate and a candidate knows its chain."""
    from bench import scenarios as scen
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings
    from lab import train_linker as tl

    scenario = scen.generate(1, 5)[0]
    feats = PairLinker(None, model=PairModel(kind="lr", link_at=1.0, abstain_at=1.0))
    entries = {e["note"]: e for e in tl.replay(scenario, feats, linked=False)}
    service = build_embedded(Settings(db=":memory:", auto_supersede="off", vectors="off"))
    ids: dict[str, int] = {}
    compared = 0
    for n in sorted(scenario["notes"], key=lambda n: n["i"]):
        scope = n["scope"]
        searched = service.link_candidates(n["text"], tl.REPLAY_NAMESPACE, scope)
        if searched:
            assert entries[n["i"]]["cands"] == [ids[c.id] for c in searched]
            compared += 1
        ids[service.remember(n["text"], scope=scope, namespace=tl.REPLAY_NAMESPACE).node.id] = n["i"]
    assert compared >= 3
    edges = [(n["supersedes"], n["i"]) for n in scenario["notes"] if n["supersedes"] is not None]
    chained = tl.replay(scenario, feats, linked=True)
    after = [(old, e) for old, new in edges for e in chained if e["note"] > new]
    assert after and all(old not in e["cands"] for old, e in after)
    # unlinked, the replaced notes stay candidates
    assert any(old in u["cands"] for old, new in edges for u in entries.values() if u["note"] > new)
    assert any(r[FEATURES.index("cand_chained")] == 1.0 for e in chained for r in e["rows"])


def test_abstain_threshold_counts_only_what_the_probability_adds() -> None:
    """abstain_at is calibrated under the rule the linker runs (plausible_ranked): a predecessor
    already listed because it is on the note's subject gains nothing from a lower threshold, so
    it does not pull the threshold down; one only the probability can list does."""
    from evomem.domain.linkers.pair_features import FEATURES
    from lab import train_linker as tl

    def row(cos: float) -> list[float]:
        r = [0.0] * len(FEATURES)
        r[FEATURES.index("has_emb")] = 1.0
        r[FEATURES.index("cos_dec")] = r[FEATURES.index("cos_full")] = cos
        return r

    on_subject, off_subject = row(0.8), row(0.1)
    # 20 replacing notes whose predecessor is on the subject (p 0.10), 30 notes that replace
    # nothing with an off-subject candidate at p 0.30
    listed_anyway = [([0.10], [on_subject], 0) for _ in range(20)]
    noise = [([0.30], [off_subject], None) for _ in range(30)]
    t = tl.abstain_threshold(listed_anyway + noise, 0.98, subject_at=0.5, subject_at_full=0.5)
    assert t > 0.30  # offering the noise gains nothing: the true ones are listed already
    # the same predecessors off the subject: only a threshold at or below 0.10 lists them
    by_probability = [([0.10], [off_subject], 0) for _ in range(20)]
    t = tl.abstain_threshold(by_probability + noise, 0.98, subject_at=0.5, subject_at_full=0.5)
    assert t <= 0.10  # 20 listed for 30 offers at a quarter each
    # a predecessor the search missed (-1) is never listed, whatever the threshold
    assert tl.abstain_threshold([([0.10], [off_subject], -1)] * 5 + noise, 0.98, 0.5, 0.5) > 0.30


def test_training_report_counts_offers_as_the_linker_makes_them() -> None:
    """The out-of-fold report counts an abstention where the linker abstains: a candidate on the
    note's subject is listed whatever its probability, an off-subject one below abstain_at is not,
    a linked note offers nothing, and the gold must be among the candidates the linker lists
    (``pair_features.listed``: the model's first, the last place to the closest by meaning)."""
    from evomem.domain.linkers.pair_features import FEATURES
    from lab import train_linker as tl

    def row(cos: float) -> list[float]:
        r = [0.0] * len(FEATURES)
        r[FEATURES.index("has_emb")] = 1.0
        r[FEATURES.index("cos_dec")] = r[FEATURES.index("cos_full")] = cos
        return r

    notes = [
        ([0.05], [row(0.8)], 0),  # on the subject at p 0.05: listed, the gold
        ([0.05], [row(0.1)], 0),  # off the subject below abstain_at: none
        ([0.99], [row(0.9)], 0),  # linked: no offer
        # four candidates likelier than the gold, which is the closest by meaning: last place
        ([0.5, 0.4, 0.3, 0.2, 0.05], [row(0.3), row(0.3), row(0.3), row(0.3), row(0.95)], 4),
        ([0.5], [row(0.1)], None),  # replaces nothing, plausible by probability: an offer
    ]
    linked = [False, False, True, False, False]
    got = tl.served_offers(notes, linked, abstain_at=0.2, subject_at=0.5, subject_at_full=0.5)
    assert got == [(True, True), (False, False), (False, False), (True, True), (True, False)]
    dec = [(ps[0], False, g is not None) for ps, _, g in notes]
    m = tl.metrics(dec, 0.98, got, gold_total=4)
    assert (m["abstentions"], m["abstentions_no_gold"], m["recall_if_confirmed"]) == (3, 1, 0.5)


def test_link_threshold_reaches_the_precision() -> None:
    from lab import calibration as cal

    rng = random.Random(11)
    dec = [(p, rng.random() < p, True) for p in (rng.random() for _ in range(400))]
    t = cal.link_threshold(dec, 0.95)
    links = [d for d in dec if d[0] >= t]
    assert links and sum(d[1] for d in links) / len(links) >= 0.95
    assert cal.link_threshold(dec, 0.95) == t


def test_a_link_threshold_must_be_shown_by_enough_links() -> None:
    """Two right links at the top reach precision 1.0 but show nothing: pooled, a threshold is
    taken only where the links' error bound (Clopper-Pearson, 95 %) is within 1 - precision. The
    same two pairs among 200 right ones set it; with no more evidence the regime never links."""
    from lab import calibration as cal

    few = [(0.99, True, True), (0.985, True, True), (0.5, False, True)]
    assert cal.link_threshold(few) == 0.985  # reached, not shown
    assert cal.link_threshold(few, shown=True) == 1.0
    many = few + [(0.9 - i / 1000, True, True) for i in range(200)]
    assert cal.link_threshold(many, shown=True) == many[-1][0]  # 202 right links, not the wrong one below
    assert cal.link_threshold(few + many[3:100], shown=True) == 1.0  # 99 right links show less than 0.98
    assert cal.error_bound(0, 149) <= 0.02 < cal.error_bound(0, 148)
    # pooled shown, per source only reached: a source's own few links do not veto the pooled one
    assert cal._threshold_everywhere({"a": many, "b": few}) == cal.link_threshold(many + few, shown=True)


def test_a_link_threshold_holds_on_every_source_at_once() -> None:
    """Precision is not monotone in the threshold: a source whose own lowest threshold is low can
    be below the target higher up, where another source sets it. The threshold is the lowest at
    which the pooled links show the precision and every source with enough gold edges reaches it,
    all at that threshold (the highest of each one's own lowest, as before 2026-12-06, would link
    source a at precision 0.5 here)."""
    from lab import calibration as cal

    # a: right at 0.99, wrong at 0.98, then 100 right links from 0.90: its own lowest is ~0.80
    a = [(0.99, True, True), (0.98, False, True)] + [(0.90 - i / 1000, True, True) for i in range(100)]
    # b: 300 right links from 0.999 to 0.97, then 10 wrong: its own lowest is ~0.955
    b = [(0.999 - i / 10000, True, True) for i in range(300)] + [(0.96 - i / 1000, False, True) for i in range(10)]
    old = max(cal.link_threshold(a + b, shown=True), cal.link_threshold(a), cal.link_threshold(b))
    assert 0.96 < old < 0.98  # where a links its 0.98 error with one right link
    t = cal._threshold_everywhere({"a": a, "b": b})
    for source in (a, b):
        links = [ok for p, ok, _ in source if p >= t]
        assert not links or sum(links) / len(links) >= 0.98
    assert t > 0.98  # above a's error, where b's right links alone still show the precision


def test_a_long_records_error_does_not_hold_short_links_back() -> None:
    """Long documents have their own threshold, never below the short one: a long note's wrong
    best candidate at the top keeps long pairs from linking, not short ones."""
    from lab import calibration as cal
    from lab import train_linker as tl

    short = [(0.999 - i / 10000, True, True) for i in range(300)]
    long = [(0.9995, False, True)] + [(0.9 - i / 1000, True, True) for i in range(40)]
    by_source = {"short records": short, "long records": long}
    flags = {"short records": [False] * len(short), "long records": [True] * len(long)}
    link_at, link_at_long = tl.regime_thresholds(by_source, flags)
    assert link_at < 0.98 and link_at_long == 1.0
    assert cal._threshold_everywhere(by_source) == 1.0  # one regime for all: nothing links


def test_shipped_model_is_monotone_where_its_training_says() -> None:
    """The shipped trees were fitted with monotone constraints (``train_linker.MONOTONE``): raising
    a same-subject or leaving feature, all else equal, never lowers the probability, and raising
    the distance to the closest candidate never raises it. Checked on random feature rows."""
    from lab.train_linker import MONOTONE

    data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    assert data.get("fit") == "hgb" and data["monotone"] == MONOTONE
    model = shipped_pair_model()
    rng = random.Random(5)
    for _ in range(200):
        row = [rng.random() for _ in FEATURES]
        row[FEATURES.index("bias")] = 1.0
        for name, sign in MONOTONE.items():
            k = FEATURES.index(name)
            lo, hi = sorted((rng.random(), rng.random()))
            a, b = list(row), list(row)
            a[k], b[k] = lo, hi
            assert sign * (model.prob(b) - model.prob(a)) >= -1e-12, (name, lo, hi)


def test_a_replay_alone_must_name_where_it_goes() -> None:
    """``--replay-only`` (the first half of ``make -C lab train-linker``) fits nothing, so without
    ``--save-groups`` it would throw the replay away: refused before any replay starts."""
    import pytest

    from lab import train_linker

    with pytest.raises(SystemExit) as stop:
        train_linker.main(["--replay-only", "--no-embeddings"])
    assert stop.value.code == 2
