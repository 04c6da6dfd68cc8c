"""Train the pair linker (``evomem.domain.linkers.pair``) and write its weights file.

    python -m lab.train_linker                       # default data, seed 7, writes build/lab/pair/pair_model.json
    python -m lab.train_linker --check               # cross-validated numbers only, writes nothing
    python -m lab.train_linker --gen-seeds 0         # frozen files only, no extra generated sets
    python -m lab.train_linker --hold-out dev-a --out /tmp/m.json   # odd dev-a scenarios held out

The pair dataset. For every scenario of every development file (default: ``bench/data/odr.jsonl``,
``vdr.jsonl``, ``para.jsonl``, every ``lab/devdata/*.jsonl``) and of the generated sets
(``bench.scenarios`` and ``bench.paraphrase`` with ``--gen-seeds``), the notes are remembered in
order into a real embedded service (``replay``), once with the gold links made after each
replacing note (``supersede``: a replaced note is superseded) and once as if no link had been made
(every earlier note active: the state after abstentions nobody confirmed), with three long notes of
other scenarios remembered first (seeded; see ``build_groups``); a note's candidates are the ones
the service's own search gives its linker (BM25 on the note's search text fused with its embedding
neighbours, active, in a compatible scope, the scope the service infers when the note has none).
Each (note, candidate) pair is one row of ``pair_features``; its label is 1 when the candidate is the
note's gold ``supersedes``. Every note kind is replayed (decision, context, distractor, noise,
scope notes), so most rows are negatives. Blind data (``bench/blind``, ``shared/data/external``)
is refused.

Training: ``--model``: gradient-boosted trees (``gbt``), histogram boosting with monotone
constraints (``hgb``, ``MONOTONE``: the default, what ``make train-linker`` ships) or logistic regression with L2
(``lr``: Newton steps, numpy; training only), each source file
weighted to the same total weight so the generators' thousands of pairs do not drown the
hand-written sets (the files under ``lab/devdata`` together weigh as much as all the generated
data together). Calibration: grouped k-fold by scenario (fold order from ``--seed``) gives an
out-of-fold probability for every pair; ``link_at`` is the lowest threshold at which, all at once,
the notes whose best candidate reaches it are linked to the right predecessor with precision >= 0.98
on every source with at least 30 gold edges, and pooled and on the hand-written development files
as a family with that precision *shown*: the 95 % upper bound of the error rate of the links
(Clopper-Pearson) is at most 0.02, so a threshold that only a few links reach is not taken on their
word (0 wrong needs 149 links); it is set on the notes whose note and best candidate are short;
``link_at_long`` the same on the notes whose note or best candidate is a long document (over
``SHORT_NOTE_CHARS``), never below ``link_at``; 1.0 (no link by the model) where no threshold holds;
``subject_at`` and ``subject_at_full`` are the 10th percentiles of the true pairs'
decision-part and whole-note cosines (a candidate reaching either is on the note's subject:
listed, never none); ``abstain_at`` is the threshold, below ``link_at``, that maximises gold
predecessors listed minus a quarter of notes that replace nothing but get offers, under the rule
the linker runs (``pair.plausible_ranked``: subject, leaving words or probability; until
2026-12-03 it was calibrated on the probability alone, as if nothing else listed a candidate). The final model
is fitted on everything and written with its metadata (files and sha256, seed, thresholds, the
out-of-fold precision/recall per source). The offers' calibration and cut-offs (``lab/offers.py``) are
fitted on the scenario folds' probabilities; with ``--calibrate-on source`` on each pair's probability
from trees fitted without its whole hand-written source (``new_source_probabilities``), and the report's
``source_shift`` compares the ways of calibrating on each source held out (``lab/source_shift.py``;
tried 2026-12-07 and not shipped: on the blind sets it held no better, lab/HISTORY.md, calib10).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pickle
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench import paraphrase as para
from bench import scenarios as scen
from bench.memories import scope_label
from evomem.adapters.models.loader import sha256_file
from evomem.app.memory import ServiceConfig
from evomem.domain.errors import EvoMemError
from evomem.domain.linkers import decision_text as dt
from evomem.domain.linkers import pair as pl
from evomem.domain.linkers import pair_features as pf
from evomem.domain.linkers import pair_model as pm
from evomem.domain.model import MemoryNode
from lab import offers
from lab.calibration import (  # the rules a link threshold is set by (shared with the cross-encoder's)
    PRECISION,
    _threshold_everywhere,
)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = [
    ROOT / "bench/data/odr.jsonl",
    ROOT / "bench/data/vdr.jsonl",
    ROOT / "bench/data/para.jsonl",
]
DEVDATA = ROOT / "lab/devdata"
#: Where the weights file goes: the lab's build folder; ``python -m lab.handoff`` copies it into the
#: product (``services/evomem/adapters/models/pair/``) and pins its sha256 there.
OUT = ROOT / "build/lab/pair/pair_model.json"
#: The lab/devdata sets the model is trained on, by name: a new file there stays evaluation data
#: (out of sample, run whole by the linking table) until it is added here, so rerunning
#: ``make train-linker`` reproduces the shipped model. ``--data`` adds a file for one run.
TRAINING_SETS = (
    "dev-a",
    "dev-b",
    "dev-c",
    "dev-d",
    "dev-e",
    "dev-long",
    "dev-f",
    "dev-h",
    "dev-i",
    "dev-j",
    "dev-k",
    "dev-l",
)
BLIND = ("bench/blind", "data/external")
FOLDS = 5
L2 = 1.0
LONG_DISTRACTORS = 3


def dev_files(extra: Sequence[str] = ()) -> list[Path]:
    files = [*DEFAULT_FILES, *(DEVDATA / f"{name}.jsonl" for name in TRAINING_SETS), *(Path(x) for x in extra)]
    for f in files:
        if any(b in str(f.resolve()) for b in BLIND):
            raise SystemExit(f"refusing blind data: {f}")
    return files


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a file being written: skip a half line
                continue
    return out


#: The namespace the replays remember into.
REPLAY_NAMESPACE = "replay"


class _CachedEmbedder:
    """The replay service's embedder: the trainer's loaded model and its vector cache (the texts
    ``--vector-cache`` keeps), so no replay loads a model or embeds a text twice."""

    state = "loaded"  # an ``EmbeddingModel`` with nothing to load: the vectors are the trainer's
    load_error = None

    def load(self) -> None:
        pass

    def __init__(self, linker: pl.PairLinker) -> None:
        self.linker = linker
        self.name = getattr(linker.embedder, "name", "")

    def encode(self, texts: Sequence[str]) -> Any:
        import numpy as np

        return np.asarray(self.linker._embed(list(texts)), dtype=np.float32)


def _replay_service(linker: pl.PairLinker) -> Any:
    """A fresh embedded service on an in-memory store, as ``evomem-mcp --db`` wires it with
    ``--auto-supersede off`` (candidates offered, nothing linked), over ``linker``'s embedder."""
    from evomem.bootstrap.embedded import build_embedded
    from evomem.settings import Settings

    vectors = "auto" if linker.embedder is not None else "off"
    service = build_embedded(Settings(db=":memory:", auto_supersede="off", vectors=vectors))
    if service.vectors is not None:
        service.vectors.embedder = _CachedEmbedder(linker)
    return service


class _Recorder:
    """The replay service's offerer (the one ``build_embedded`` wires with ``--auto-supersede
    off``), recording the candidates the service's search handed it on each remember: the
    ``Linker`` port's ``decide`` gets them, in the service's order. Everything else is the
    offerer's own. (Until 2026-12-06 the replay wrapped the service's private candidate search.)"""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.searched: list[list[MemoryNode]] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def wants_candidates(self, text: str) -> bool:
        """Every note's candidates are recorded, those of a note the offerer will not judge (its
        ``decides`` gate) too: the model's rows and the ``decides`` model's data need them."""
        return True

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        similarities: Any = None,
        scope_inferred: bool = False,
        earlier: Any = None,
    ) -> Any:
        self.searched.append(list(candidates))
        return self.inner.decide(text, scope, candidates, similarities, scope_inferred, earlier)


def replay(
    scenario: dict[str, Any], linker: pl.PairLinker, *, linked: bool = True, distractors: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """One entry per note that had candidates: its candidates' rows, labels and the gold index.

    The notes are remembered in order into a real embedded service (``_replay_service``), and
    each note's candidates are the ones its own candidate search gave the linker (``_Recorder``;
    the service's ``link_candidates``: BM25 on the note's search text fused with its embedding neighbours,
    active notes of a compatible scope, the scope the service infers when the note has none),
    scored with the store as the linker's lookup (a candidate's history). Until 2026-12-06 the
    replay ranked the candidates itself (its own BM25 over the raw texts, the note's scope
    inferred from the whole text, no lookup): on odr's first 20 scenarios a note's candidates
    were the service's in 82 of 147 notes, in the same order in 49.

    ``linked``: the earlier gold edges were made (``supersede`` after each replacing note: a
    replaced note is no longer a candidate, a candidate knows its predecessor); otherwise none was
    (every earlier version is still active and unchained: what the service holds when links were
    abstained on and not confirmed). ``distractors``: texts remembered before the scenario's
    notes (never a gold predecessor; candidate ``-k`` is ``distractors[k - 1]``)."""
    service = _replay_service(linker)
    recorder = _Recorder(service.offerer)
    service.offerer = recorder
    searched = recorder.searched
    features = pl.PairLinker(
        linker.embedder, model=linker.model, lookup=service.storage.store, cache_size=linker.cache_size
    )
    features._vectors = linker._vectors  # one vector cache for every replay
    node_of: dict[int, str] = {}  # note index -> node id
    index_of: dict[str, int] = {}  # node id -> the note that stored it
    try:
        for k, text in enumerate(distractors):
            node = service.remember(text, namespace=REPLAY_NAMESPACE).node
            node_of[-(k + 1)] = node.id
            index_of.setdefault(node.id, -(k + 1))
        out = []
        for n in sorted(scenario["notes"], key=lambda n: n["i"]):
            i = n["i"]
            asked = len(searched)
            scope = scope_label(n["scope"]) if n.get("scope") else None  # as the benchmark passes it
            got = service.remember(n["text"], scope=scope, namespace=REPLAY_NAMESPACE)
            node_of[i] = got.node.id
            index_of.setdefault(got.node.id, i)
            gold = n.get("supersedes")
            ranked = searched[-1] if len(searched) > asked else []
            if ranked:  # the service calls the linker only with candidates
                rows = features.features(got.node.raw_text, got.node.scope, ranked)
                labels = [int(gold is not None and c.id == node_of.get(gold)) for c in ranked]
                out.append(
                    {
                        "note": i,
                        "linked": linked,
                        "kind": n.get("kind"),
                        "gold": gold,
                        "gold_in": gold is not None and any(labels),
                        "cands": [index_of[c.id] for c in ranked],  # every candidate was remembered here
                        "rows": rows,
                        "labels": labels,
                    }
                )
            if linked and gold is not None and gold in node_of and got.duplicate_of is None:
                # a gold predecessor no longer active (a revert to it) or a link that would fork
                # a chain: no edge, as when an agent's supersede is refused
                with contextlib.suppress(EvoMemError):
                    service.supersede(got.node.id, node_of[gold])
        return out
    finally:
        service.close()


# ----------------------------------------------------------------------------- training


def fit(x: Any, y: Any, w: Any, l2: float = L2) -> tuple[Any, Any, Any, float]:
    """Weighted L2 logistic regression by Newton steps. Returns (weights, mean, scale, intercept)."""
    import numpy as np

    mean = (x * w[:, None]).sum(0) / w.sum()
    scale = np.sqrt(((x - mean) ** 2 * w[:, None]).sum(0) / w.sum())
    scale[scale < 1e-6] = 1.0
    mean[0], scale[0] = 0.0, 1.0
    z = (x - mean) / scale
    z[:, 0] = 0.0  # the bias column: the intercept below carries it
    z = np.hstack([z, np.ones((len(z), 1))])
    beta = np.zeros(z.shape[1])
    reg = np.full(z.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-(z @ beta)))
        g = z.T @ (w * (p - y)) + reg * beta
        h = (z * (w * p * (1 - p))[:, None]).T @ z + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta[:-1], mean, scale, float(beta[-1])


GBT = {"n_estimators": 200, "max_depth": 3, "learning_rate": 0.1, "subsample": 0.8, "min_samples_leaf": 20}


def fit_gbt(x: Any, y: Any, w: Any, seed: int) -> Any:
    from sklearn.ensemble import GradientBoostingClassifier

    est = GradientBoostingClassifier(init="zero", random_state=seed, **GBT)
    est.fit(x, y, sample_weight=w)
    return est


#: ``--model hgb``: histogram gradient boosting whose probability may only rise with the evidence
#: that the two notes are about the same thing or that the note leaves the candidate (+1), and only
#: fall with the distance to the closest candidate (-1); the trees cannot carve out a pocket of
#: unrelated pairs the folds happened to label true. The signs say what a feature means, not what
#: any benchmark item needs; every other feature is free.
MONOTONE = {
    "cos_full": 1, "cos_dec": 1, "cos_rank": 1, "cos_gap": -1, "jacc": 1, "shared": 1, "shared_dist": 1,
    "cov_cand": 1, "leave_hit": 1, "leave_hit_dist": 1, "back_hit": 1, "explicit_ref": 1, "margin": 1,
    "frame_kept": 1, "frame_prefix": 1, "frame_value": 1,
}  # fmt: skip
HGB = {"max_iter": 200, "learning_rate": 0.1, "max_leaf_nodes": 8, "min_samples_leaf": 40, "l2_regularization": 1.0}


def fit_hgb(x: Any, y: Any, w: Any, seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    cst = [MONOTONE.get(f, 0) for f in pf.FEATURES]
    est = HistGradientBoostingClassifier(monotonic_cst=cst, early_stopping=False, random_state=seed, **HGB)
    est.fit(x, y, sample_weight=w)
    return est


def export_hgb(est: Any) -> tuple[float, list[dict[str, list[float]]]]:
    """The fitted histogram trees as ``pair.PairModel``'s arrays (a leaf's value already carries the
    learning rate, so the model's ``rate`` is 1) and the baseline as the intercept. A sample goes
    left when its value is at most the node's threshold, as in ``PairModel``; the features are never
    missing, so the trees' side for missing values is not used. It reads scikit-learn's private
    predictor arrays (``_predictors``, ``_baseline_prediction``; the version is pinned below 2), and
    ``main`` checks the exported trees against ``predict_proba`` before it writes them."""
    trees = []
    for (pred,) in est._predictors:
        nodes = pred.nodes
        trees.append(
            {
                "f": [-1 if leaf else int(f) for f, leaf in zip(nodes["feature_idx"], nodes["is_leaf"], strict=True)],
                "t": [float(v) for v in nodes["num_threshold"]],
                "l": [int(v) for v in nodes["left"]],
                "r": [int(v) for v in nodes["right"]],
                "v": [round(float(v), 8) for v in nodes["value"]],
            }
        )
    return float(est._baseline_prediction.ravel()[0]), trees


def export_gbt(est: Any) -> list[dict[str, list[float]]]:
    trees = []
    for (t,) in est.estimators_:
        tr = t.tree_
        trees.append(
            {
                "f": [int(f) if left >= 0 else -1 for f, left in zip(tr.feature, tr.children_left, strict=True)],
                "t": [round(float(v), 6) for v in tr.threshold],
                "l": [int(v) for v in tr.children_left],
                "r": [int(v) for v in tr.children_right],
                "v": [round(float(v), 6) for v in tr.value[:, 0, 0]],
            }
        )
    return trees


def _prob(beta: Any, mean: Any, scale: Any, b0: float, x: Any) -> Any:
    import numpy as np

    z = (x - mean) / scale
    z[:, 0] = 0.0
    return 1 / (1 + np.exp(-(z @ beta + b0)))


def decisions(entries: list[dict[str, Any]], probs: list[list[float]]) -> list[tuple[float, bool, bool]]:
    """Per note: (best p, best is gold, note has a gold edge); what the linker lists when it does
    not link is ``served_offers``'s."""
    out = []
    for e, ps in zip(entries, probs, strict=True):
        best = max(range(len(ps)), key=lambda k: ps[k])
        out.append((ps[best], e["cands"][best] == e["gold"], e["gold"] is not None))
    return out


def regime_thresholds(
    by_source: dict[str, list[tuple[float, bool, bool]]],
    long_flags: dict[str, list[bool]],
    families: dict[str, str] | None = None,
) -> tuple[float, float]:
    """``link_at`` and ``link_at_long``: ``_threshold_everywhere`` on the notes whose note and
    best candidate are short, and on those where either is a long document (their own regime,
    never below ``link_at``). Until 2026-12-06 ``link_at`` was set on every note, the long ones
    too, although a long pair links only from ``link_at_long``: a long record's wrong best
    candidate held every short link back."""
    short = {n: [d for d, lg in zip(v, long_flags[n], strict=True) if not lg] for n, v in by_source.items()}
    long = {n: [d for d, lg in zip(v, long_flags[n], strict=True) if lg] for n, v in by_source.items()}
    link_at = _threshold_everywhere(short, families)
    return link_at, max(link_at, _threshold_everywhere(long, families))


#: What one offer on a note that replaces nothing costs, in true predecessors listed.
OFFER_COST = 0.25


def abstain_threshold(
    notes: list[tuple[list[float], list[list[float]], int | None]],
    link_at: float,
    subject_at: float,
    subject_at_full: float,
) -> float:
    """The ``abstain_at`` that maximises true predecessors listed minus ``OFFER_COST`` per note
    that replaces nothing but gets offers, under the rule the linker runs
    (``pair.plausible_ranked``: a candidate is also listed when the note leaves its words or it
    is on the subject, whatever its probability). ``notes``: per note, its candidates'
    out-of-fold probabilities, their feature rows, and the gold candidate's index (None: the
    note replaces nothing; -1: its predecessor is not among the candidates). Notes the model
    would link are left out. A grid of 0.01."""
    live = [(ps, rows, g) for ps, rows, g in notes if ps and max(ps) < link_at]
    best, best_t = -1e9, link_at
    for t in [k / 100 for k in range(99, 1, -1) if k / 100 < link_at]:
        gain = cost = 0
        for ps, rows, g in live:
            listed = pf.listed(pf.plausible_ranked(ps, rows, t, subject_at, subject_at_full), rows)
            if g is None:
                cost += bool(listed)
            else:
                gain += g in listed
        v = gain - OFFER_COST * cost
        if v > best:
            best, best_t = v, t
    return max(0.02, best_t)


def metrics(
    dec: list[tuple[float, bool, bool]], link_at: float, offers: list[tuple[bool, bool]], gold_total: int
) -> dict:
    """Links, abstentions and recall if confirmed of per-note decisions. ``offers``: per note,
    whether the linker abstains (it does not link and some candidate is plausible) and whether
    the gold predecessor is among the candidates it lists (``served_offers``)."""
    links = [d for d in dec if d[0] >= link_at]
    tp = sum(d[1] and d[2] for d in links)
    abst = [d for d, (abstains, _) in zip(dec, offers, strict=True) if abstains]
    listed = sum(1 for d, (abstains, gold) in zip(dec, offers, strict=True) if abstains and d[2] and gold)
    return {
        "notes": len(dec),
        "gold": gold_total,
        "links": len(links),
        "precision": round(tp / len(links), 4) if links else None,
        "recall": round(tp / gold_total, 4) if gold_total else None,
        "abstentions": len(abst),
        "abstentions_no_gold": sum(1 for d in abst if not d[2]),
        "recall_if_confirmed": round((tp + listed) / gold_total, 4) if gold_total else None,
    }


def served_offers(
    notes: Sequence[tuple[list[float], list[list[float]], int | None]],
    linked: Sequence[bool],
    abstain_at: float,
    subject_at: float,
    subject_at_full: float,
) -> list[tuple[bool, bool]]:
    """Per note, what the linker does when it does not link: whether it abstains (a candidate is
    plausible, ``pair.plausible_ranked``) and whether the gold predecessor is among the
    candidates it lists (``pair.listed``). ``notes``: each note's probabilities, feature rows and
    gold index (None: replaces nothing; -1: the search missed it)."""
    out = []
    for (ps, rows, g), link in zip(notes, linked, strict=True):
        if link:
            out.append((False, False))
            continue
        plausible = pf.plausible_ranked(ps, rows, abstain_at, subject_at, subject_at_full)
        out.append((bool(plausible), g is not None and g >= 0 and g in pf.listed(plausible, rows)))
    return out


def load_sources(files: Sequence[Path], gen_seeds: int) -> list[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    """(name, scenarios, metadata) of every development file, and ``gen_seeds`` generated sets per
    generator (seeds 1001, 1002, ...)."""
    sources: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = []
    for f in files:
        items = load_jsonl(f)
        where = str(f.resolve().relative_to(ROOT)) if f.resolve().is_relative_to(ROOT) else str(f)
        sources.append((f.stem, items, {"file": where, "sha256": sha256_file(f), "n": len(items)}))
    for k in range(gen_seeds):
        seed = 1001 + k
        sources.append((f"gen-odr-{seed}", scen.generate(120, seed), {"generator": scen.GENERATOR, "seed": seed}))
        sources.append(
            (f"gen-vdr-{seed}", scen.generate(80, seed, vdr=True), {"generator": scen.GENERATOR, "seed": seed})
        )
        sources.append((f"gen-para-{seed}", para.generate(72, seed), {"generator": para.GENERATOR, "seed": seed}))
    return sources


def hold_out(sources: list[Any], names: Sequence[str], folder: str) -> list[Any]:
    """Drop the odd-indexed scenarios of the named sources from training and write them to
    ``folder/<name>-odd.jsonl``: an evaluation set the model never saw (``bench.quality --data``)."""
    out = []
    Path(folder).mkdir(parents=True, exist_ok=True)
    for name, items, meta in sources:
        if name in names:
            held = items[1::2]
            path = Path(folder) / f"{name}-odd.jsonl"
            path.write_text("".join(json.dumps(s) + "\n" for s in held), encoding="utf-8")
            items = items[0::2]
            meta = {**meta, "held_out": f"odd-indexed scenarios ({len(held)}) written to {path}"}
            print(f"held out {len(held)} scenarios of {name} -> {path}", file=sys.stderr)
        out.append((name, items, meta))
    return out


def _long_distractors(pool: Sequence[tuple[Any, str]], own: Any, rng: random.Random) -> list[str]:
    others = [t for where, t in pool if where != own]
    return rng.sample(others, min(LONG_DISTRACTORS, len(others)))


def build_groups(
    sources: Sequence[Any], linker: pl.PairLinker, seed: int = 7
) -> list[tuple[str, int, list[dict[str, Any]]]]:
    """(source, scenario index, replayed notes) per scenario: the pair dataset. Each scenario is
    replayed twice, with the earlier gold links made and with none made (``replay``); both stay in
    one group, so a scenario is never on both sides of a fold. Before each scenario's notes,
    ``LONG_DISTRACTORS`` long notes (over ``SHORT_NOTE_CHARS``) of *other* scenarios are remembered
    (chosen with ``seed``): long documents of one domain look alike, and only these teach the model
    that a long note close to another long note need not replace it."""
    rng = random.Random(seed)
    pool = [
        ((name, k), n["text"])
        for name, items, _ in sources
        for k, s in enumerate(items)
        for n in s["notes"]
        if len(n["text"]) > dt.SHORT_NOTE_CHARS
    ]
    from tqdm import tqdm

    groups: list[tuple[str, int, list[dict[str, Any]]]] = []
    for name, items, _ in sources:
        for k, s in enumerate(tqdm(items, desc=f"replaying {name}", unit="scenario", file=sys.stderr)):
            extra = _long_distractors(pool, (name, k), rng)
            both = replay(s, linker, linked=True, distractors=extra) + replay(
                s, linker, linked=False, distractors=extra
            )
            for e in both:  # candidate -k is extra[k - 1] (``lab.cross_pairs`` reads their texts)
                e["extra"] = extra
            groups.append((name, k, both))
        print(f"{name}: {len(items)} scenarios", file=sys.stderr)
    return groups


def earlier_versions(notes: Sequence[dict[str, Any]], gold: int | None) -> set[int]:
    """The notes the gold predecessor itself replaced, transitively: the earlier versions of its
    chain (still active in a replay without links; a link to one hides nothing in force, but it is
    not the link the note asks for)."""
    by_i = {n["i"]: n for n in notes}
    out: set[int] = set()
    cur = by_i.get(gold) if gold is not None else None
    while cur is not None and cur.get("supersedes") is not None and cur["supersedes"] not in out:
        out.add(cur["supersedes"])
        cur = by_i.get(cur["supersedes"])
    return out


def _family(meta: dict[str, Any]) -> str:
    """A source's calibration family: ``written`` for a hand-written file under lab/devdata,
    ``generated`` for the generators' frozen files and generated sets."""
    return "written" if str(meta.get("file", "")).startswith("lab/devdata") else "generated"


def fold_of(n_groups: int, seed: int) -> dict[int, int]:
    """Each group's (scenario's) fold of the grouped k-fold: the groups in an order drawn from
    ``seed``, dealt round the ``FOLDS`` folds."""
    order = list(range(n_groups))
    random.Random(seed).shuffle(order)
    return {g: k % FOLDS for k, g in enumerate(order)}


def new_source_probabilities(
    sources: list[Any], groups: list[Any], cal: dict[str, Any], seed: int, model: str = "hgb"
) -> Any:
    """Per row, the probability from a model fitted without the row's whole source, for every
    hand-written source (leave one source out: the trees never saw its authors or style, as they
    never see a user's); the scenario-fold out-of-fold probability for the generated sources, which
    stay in every fit. The held-out source's family weighs as before (its other sources' weights
    are scaled up), so only what the trees saw changes."""
    import numpy as np

    x, y, w, oof = cal["x"], cal["y"], cal["w"], cal["oof"]
    family = {name: _family(meta) for name, _, meta in sources}
    row_source = np.array([name for name, _, entries in groups for e in entries for _ in e["rows"]])
    row_family = np.array([family[s] for s in row_source])
    out = np.array(oof, dtype=float, copy=True)
    written = [name for name, _, meta in sources if _family(meta) == "written"]
    for name in tqdm_names(written, "trees without each hand-written source"):
        te = row_source == name
        tr = ~te
        wt = w.copy()
        same = tr & (row_family == family[name])
        wt[same] *= w[(row_family == family[name])].sum() / w[same].sum()
        if model == "hgb":
            out[te] = fit_hgb(x[tr], y[tr], wt[tr], seed).predict_proba(x[te])[:, 1]
        elif model == "gbt":
            out[te] = fit_gbt(x[tr], y[tr], wt[tr], seed).predict_proba(x[te])[:, 1]
        else:
            beta, mean, scale, b0 = fit(x[tr], y[tr], wt[tr])
            out[te] = _prob(beta, mean, scale, b0, x[te].copy())
    return out


def tqdm_names(names: Sequence[str], desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(names, desc=desc, unit="source")


def per_note(groups: list[Any], oof: Any) -> Iterator[tuple[str, int, dict[str, Any], list[float], int, bool]]:
    """Each replayed note with its candidates' out-of-fold probabilities (``oof``, in the rows'
    order): (source, scenario index, entry, probabilities, best candidate's index, whether the
    note or that candidate is a long document: the regime ``link_at_long`` applies to)."""
    note_long, cand_long = pf.FEATURES.index("note_long"), pf.FEATURES.index("cand_long")
    pos = 0
    for name, k, entries in groups:
        for e in entries:
            ps = oof[pos : pos + len(e["rows"])].tolist()
            pos += len(e["rows"])
            best = max(range(len(ps)), key=lambda j: ps[j])
            row = e["rows"][best]
            yield name, k, e, ps, best, bool(row[note_long] or row[cand_long])


def calibrate(sources: list[Any], groups: list[Any], seed: int, model: str = "hgb") -> dict[str, Any]:
    """Weights, grouped k-fold out-of-fold probabilities (fold order from ``seed``), the two
    thresholds and the out-of-fold metrics per source (see the module docstring)."""
    import numpy as np

    family = {name: _family(meta) for name, _, meta in sources}
    family_sources = {f: sum(1 for v in family.values() if v == f) for f in set(family.values())}
    xs, ys, ws, gid = [], [], [], []
    per_source_rows: dict[str, int] = {}
    for name, _, entries in groups:
        for e in entries:
            per_source_rows[name] = per_source_rows.get(name, 0) + len(e["rows"])
    for g, (name, _, entries) in enumerate(groups):
        for e in entries:
            for r, lab in zip(e["rows"], e["labels"], strict=True):
                xs.append(r)
                ys.append(lab)
                ws.append(1000.0 / per_source_rows[name] / family_sources[family[name]])
                gid.append(g)
    x, y, w, gid_a = np.array(xs), np.array(ys, dtype=float), np.array(ws), np.array(gid)
    fold = fold_of(len(groups), seed)
    fold_a = np.array([fold[g] for g in gid_a])
    oof = np.zeros(len(y))
    for k in range(FOLDS):
        tr, te = fold_a != k, fold_a == k
        if model == "gbt":
            oof[te] = fit_gbt(x[tr], y[tr], w[tr], seed).predict_proba(x[te])[:, 1]
        elif model == "hgb":
            oof[te] = fit_hgb(x[tr], y[tr], w[tr], seed).predict_proba(x[te])[:, 1]
        else:
            beta, mean, scale, b0 = fit(x[tr], y[tr], w[tr])
            oof[te] = _prob(beta, mean, scale, b0, x[te].copy())
    # per note decisions from the out-of-fold probabilities
    by_source: dict[str, list[tuple[float, bool, bool]]] = {}
    long_by_source_flags: dict[str, list[bool]] = {}
    gold_by_source: dict[str, int] = {}
    listing_by_source: dict[str, list[tuple[list[float], list[list[float]], int | None]]] = {}
    for name, _, e, ps, _, long in per_note(groups, oof):
        by_source.setdefault(name, []).extend(decisions([e], [ps]))
        # the gold candidate's index (-1: the search missed it, nothing can list it)
        gold_index = None if e["gold"] is None else e["cands"].index(e["gold"]) if e["gold"] in e["cands"] else -1
        listing_by_source.setdefault(name, []).append((ps, e["rows"], gold_index))
        long_by_source_flags.setdefault(name, []).append(long)
    for name, _, entries in groups:
        gold_by_source[name] = gold_by_source.get(name, 0) + sum(1 for e in entries if e["gold"] is not None)
    link_at, link_at_long = regime_thresholds(by_source, long_by_source_flags, family)
    # the decision-part cosine above which a candidate is on the same subject: the 10th percentile of
    # the gold pairs' (with embeddings); the linker abstains rather than say none above it
    cos = pf.FEATURES.index("cos_dec")
    gold_rows = [r for r, lab in zip(x.tolist(), y.tolist(), strict=True) if lab and r[1]]
    gold_cos = sorted(float(r[cos]) for r in gold_rows)
    subject_at = gold_cos[len(gold_cos) // 10] if gold_cos else 1.0
    # the same on the whole notes' cosine: long records whose decision parts were read apart
    full = pf.FEATURES.index("cos_full")
    gold_full = sorted(float(r[full]) for r in gold_rows)
    subject_at_full = gold_full[len(gold_full) // 10] if gold_full else 1.0
    # what the probability adds to the subject and leaving rules, under the rule the linker runs
    listing = [n for v in listing_by_source.values() for n in v]
    abstain_at = abstain_threshold(listing, link_at, subject_at, subject_at_full)

    # the report applies each regime's threshold: a long pair below link_at_long abstains
    def regime(d: tuple[float, bool, bool], long: bool) -> tuple[float, bool, bool]:
        return (min(d[0], link_at - 1e-9), *d[1:]) if long and d[0] < link_at_long else d  # type: ignore[return-value]

    shown = {n: [regime(d, lg) for d, lg in zip(v, long_by_source_flags[n], strict=True)] for n, v in by_source.items()}
    # abstentions and listings under the rule the linker runs (before 2026-12-06: the probability
    # between abstain_at and link_at, and the model's first 3, which left out what the subject and
    # leaving rules list)
    offers = {
        n: served_offers(
            listing_by_source[n], [d[0] >= link_at for d in shown[n]], abstain_at, subject_at, subject_at_full
        )
        for n in shown
    }
    report = {name: metrics(shown[name], link_at, offers[name], gold_by_source[name]) for name in shown}
    report["all"] = metrics(
        [d for v in shown.values() for d in v],
        link_at,
        [o for n in shown for o in offers[n]],
        sum(gold_by_source.values()),
    )
    return {
        "x": x,
        "y": y,
        "w": w,
        "oof": oof,
        "link_at": link_at,
        "link_at_long": link_at_long,
        "abstain_at": abstain_at,
        "subject_at": subject_at,
        "subject_at_full": subject_at_full,
        "report": report,
    }


def _dump(path: str, groups: list[Any], sources: list[Any], oof: Any) -> None:
    """Out-of-fold decisions of the development files (never blind data), one JSON line per
    replayed note: for reading errors, and for ``lab.pair_curves`` (precision against recall by
    family and regime). ``family`` is the calibration's (``written``: a hand-written file under
    lab/devdata; ``generated``), ``long`` the regime (the note or its best candidate is a long
    document: ``link_at_long`` applies), ``linked`` which replay it came from (``replay``)."""
    items = {name: its for name, its, _ in sources}
    family = {name: _family(meta) for name, _, meta in sources}
    with open(path, "w", encoding="utf-8") as fh:
        for name, k, e, ps, best, long in per_note(groups, oof):
            notes = {n["i"]: n for n in items[name][k]["notes"]}
            for j in range(1, LONG_DISTRACTORS + 1):
                notes[-j] = {"text": "(a long note of another scenario)"}
            order = sorted(range(len(ps)), key=lambda j: -ps[j])  # best first: order[0] == best
            row = {
                "source": name,
                "family": family[name],
                "scenario": k,
                "linked": e["linked"],
                "long": long,
                "note_i": e["note"],
                "best_i": e["cands"][best],
                "gold_i": e["gold"],
                # the best candidate is an earlier version of the gold predecessor's chain
                "earlier": e["cands"][best] in earlier_versions(items[name][k]["notes"], e["gold"]),
                "note": notes[e["note"]]["text"],
                "kind": e["kind"],
                "gold": notes[e["gold"]]["text"] if e["gold"] is not None else None,
                "top": [[round(ps[j], 3), notes[e["cands"][j]]["text"]] for j in order[:3]],
                "ok": e["cands"][best] == e["gold"],
            }
            fh.write(json.dumps(row) + "\n")


def _load_groups(paths: Sequence[str]) -> tuple[list[Any], list[Any]]:
    """The pair datasets ``--save-groups`` wrote (our own pickles), merged scenario by scenario:
    a replay without embeddings (its rows' ``has_emb`` is 0) is marked ``words`` and joins its
    scenario's group, so a scenario is on one side of every fold in both regimes."""
    sources: list[Any] = []
    merged: list[Any] = []
    for path in paths:
        with open(path, "rb") as fh:
            src, groups = pickle.load(fh)
        if not merged:
            sources, merged = src, [(n, k, list(es)) for n, k, es in groups]
            continue
        if [(n, k) for n, k, _ in groups] != [(n, k) for n, k, _ in merged]:
            raise SystemExit(f"{path}: not the same scenarios as {paths[0]}")
        for (_, _, entries), (_, _, more) in zip(merged, groups, strict=True):
            entries.extend(more)
    has_emb = pf.FEATURES.index("has_emb")
    for _, _, entries in merged:
        for e in entries:
            e["words"] = not any(r[has_emb] for r in e["rows"])
    return sources, merged


def _read_vector_cache(path: Path, key: str | None) -> dict[str, list[float]]:
    """The embeddings kept by an earlier run with the same embedder (empty when none)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("embedder") != key:
        print(f"{path}: made with {data.get('embedder')}, not {key}: not used", file=sys.stderr)
        return {}
    return dict(data["vectors"])


def _write_vector_cache(path: Path, key: str | None, vectors: dict[str, list[float]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"embedder": key, "vectors": vectors}), encoding="utf-8")
    tmp.replace(path)


#: An experiment's extra feature (``lab.emb_head.augment``): given the sources, the replayed groups, the
#: seed and the vector cache, it adds its column to every row and returns what the weights file carries.
Augment = Callable[[Sequence[Any], Sequence[Any], int, str], dict[str, Any]]


def main(argv: list[str] | None = None, augment: Augment | None = None) -> int:
    """The trainer. ``augment``: an experiment's extra feature, run on the replays before the
    calibration (``python -m lab.emb_head fit`` passes its own; the trainer imports no experiment)."""
    import numpy as np

    ap = argparse.ArgumentParser(prog="python -m lab.train_linker", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=7, help="fold assignment seed")
    ap.add_argument("--gen-seeds", type=int, default=1, help="extra generated sets per generator (seeds 1001, ...)")
    ap.add_argument("--data", action="append", default=[], help="another development JSONL file")
    ap.add_argument("--out", default=str(OUT), help="the weights file (python -m lab.handoff puts it in the product)")
    ap.add_argument("--no-embeddings", action="store_true", help="train without the embedding features")
    ap.add_argument(
        "--model",
        choices=("gbt", "hgb", "lr"),
        default="hgb",
        help="gradient-boosted trees, histogram boosting with monotone constraints (MONOTONE), or logistic regression",
    )
    ap.add_argument("--dump", default="", help="write the out-of-fold decisions (development data) to this file")
    ap.add_argument(
        "--hold-out", action="append", default=[], help="train without the odd-indexed scenarios of this source"
    )
    ap.add_argument("--hold-out-dir", default="lab/results/holdout", help="where the held-out scenarios go")
    ap.add_argument("--check", action="store_true", help="cross-validate and print; write nothing")
    ap.add_argument(
        "--vector-cache",
        default="",
        help="a file of the texts' embeddings, read if present and written after (for reruns; keyed by the embedder)",
    )
    ap.add_argument("--save-groups", default="", help="write the replayed pair dataset here (pickle), for reruns")
    ap.add_argument(
        "--load-groups",
        action="append",
        default=[],
        help="read the pair dataset --save-groups wrote instead of replaying; twice: the replays with and "
        "without embeddings (--no-embeddings), each scenario's two replays in one group",
    )
    ap.add_argument(
        "--replay-only",
        action="store_true",
        help="replay and write --save-groups (and --vector-cache), fit nothing: the first half of a training on "
        "both replays (make -C lab train-linker)",
    )
    ap.add_argument("--cal-cache", default="", help="keep the out-of-fold run here (pickle) and reuse it if present")
    ap.add_argument(
        "--calibrate-on",
        choices=("source", "scenario"),
        default="scenario",
        help="the offers' calibration fitted on the scenario folds' probabilities (default, what ships) or on "
        "probabilities from trees that never saw the pair's source (leave one hand-written source out; calib10: "
        "it did not hold better on blind data, lab/HISTORY.md); 'source' also writes the source_shift report",
    )
    args = ap.parse_args(argv)
    if args.replay_only and not args.save_groups:
        ap.error("--replay-only writes the replay to --save-groups: name the file")
    started = time.perf_counter()
    embedder = None
    if not args.no_embeddings:
        from evomem.adapters.models.embedding import OnnxEmbedder

        embedder = OnnxEmbedder(threads=1)
    dummy = pm.PairModel(kind="lr", link_at=1.0, abstain_at=1.0)
    linker = pl.PairLinker(embedder, model=dummy, cache_size=1_000_000)
    cache_key = getattr(embedder, "name", None)
    if args.vector_cache and embedder is not None:
        linker._vectors.update(_read_vector_cache(Path(args.vector_cache), cache_key))
    sources = load_sources(dev_files(args.data), args.gen_seeds)
    if args.hold_out:
        sources = hold_out(sources, args.hold_out, args.hold_out_dir)
    if args.load_groups:
        sources, groups = _load_groups(args.load_groups)
    else:
        groups = build_groups(sources, linker, args.seed)
    if args.save_groups:
        Path(args.save_groups).parent.mkdir(parents=True, exist_ok=True)
        with open(args.save_groups, "wb") as fh:
            pickle.dump((sources, groups), fh)
    if args.vector_cache and embedder is not None:
        _write_vector_cache(Path(args.vector_cache), cache_key, linker._vectors)
    if args.replay_only:
        return 0
    head = None
    if augment is not None:
        if not args.vector_cache or not Path(args.vector_cache).exists():
            raise SystemExit("the extra feature reads the decision parts' vectors from --vector-cache (a replay's)")
        head = augment(sources, groups, args.seed, args.vector_cache)
    if args.cal_cache and Path(args.cal_cache).exists():
        with open(args.cal_cache, "rb") as fh:
            cal = pickle.load(fh)  # our own file: the out-of-fold run of these groups
    else:
        cal = calibrate(sources, groups, args.seed, args.model)
        if args.cal_cache:
            with open(args.cal_cache, "wb") as fh:
                pickle.dump(cal, fh)
    if args.calibrate_on == "source" and "fresh" not in cal:
        cal["fresh"] = new_source_probabilities(sources, groups, cal, args.seed, args.model)
        if args.cal_cache:
            with open(args.cal_cache, "wb") as fh:
                pickle.dump(cal, fh)
    fresh = cal["fresh"].tolist() if args.calibrate_on == "source" else None
    x, y, w, oof = cal["x"], cal["y"], cal["w"], cal["oof"]
    link_at, abstain_at, report = cal["link_at"], cal["abstain_at"], cal["report"]
    link_at_long = cal["link_at_long"]
    subject_at, subject_at_full = cal["subject_at"], cal["subject_at_full"]
    if args.dump:
        _dump(args.dump, groups, sources, oof)
    written = {name for name, _, meta in sources if _family(meta) == "written"}
    served = offers.fit(
        sources,
        groups,
        oof.tolist(),
        w.tolist(),
        fold_of(len(groups), args.seed),
        args.seed,
        written=written,
        fresh=fresh,
    )
    print(json.dumps(served["report"], indent=1))
    # the calibrated model's thresholds replace the raw ones (a link needs the calibrated p)
    link_at = link_at_long = served["link_at"]
    print(
        json.dumps(
            {
                "link_at": link_at,
                "link_at_long": link_at_long,
                "abstain_at": abstain_at,
                "subject_at": subject_at,
                "subject_at_full": subject_at_full,
                "oof": report,
            },
            indent=1,
        )
    )
    if args.model in ("gbt", "hgb"):
        if args.model == "gbt":
            est = fit_gbt(x, y, w, args.seed)
            body: dict[str, Any] = {"kind": "gbt", "rate": GBT["learning_rate"], "intercept": 0.0}
            body["trees"] = export_gbt(est)
        else:  # the same kind of file: trees and an intercept
            est = fit_hgb(x, y, w, args.seed)
            baseline, trees = export_hgb(est)
            body = {"kind": "gbt", "rate": 1.0, "intercept": baseline, "trees": trees}
            body |= {"fit": "hgb", "monotone": MONOTONE}
        check = pm.PairModel(
            kind="gbt",
            link_at=1,
            abstain_at=1,
            trees=tuple(body["trees"]),
            rate=body["rate"],
            intercept=body["intercept"],
        )
        ref = est.predict_proba(x[:500])[:, 1]
        got = np.array([check.prob(r) for r in x[:500].tolist()])
        assert np.abs(ref - got).max() < 1e-4, "exported trees disagree with the fitted model"
        importances = getattr(est, "feature_importances_", None)  # histogram boosting has none
        if importances is not None:
            for f, b in sorted(zip(pf.FEATURES, importances.tolist(), strict=True), key=lambda t: -t[1]):
                print(f"  {f:16s} {b:.3f}", file=sys.stderr)
    else:
        beta, mean, scale, b0 = fit(x, y, w)
        body = {
            "kind": "lr",
            "weights": [round(v, 6) for v in beta.tolist()],
            "mean": [round(v, 6) for v in mean.tolist()],
            "scale": [round(v, 6) for v in scale.tolist()],
            "intercept": round(b0, 6),
        }
        for f, b in sorted(zip(pf.FEATURES, beta.tolist(), strict=True), key=lambda t: -abs(t[1])):
            print(f"  {f:16s} {b:+.3f}", file=sys.stderr)
    if args.check:
        return 0
    out = {
        "model": f"{pl.NAME}/{pl.VERSION}",
        **body,
        "features": list(pf.FEATURES),
        "link_at": round(link_at, 4),
        "link_at_long": round(link_at_long, 4),
        "abstain_at": round(abstain_at, 4),
        "subject_at": round(subject_at, 4),
        "subject_at_full": round(subject_at_full, 4),
        "calibration": served["calibration"],
        "calibration_long": served["calibration_long"],
        "offer_at": served["offer_at"],
        "hint_at": served["hint_at"],
        "decides": served["decides"],
        "training": {
            "script": "lab/train_linker.py",
            "seed": args.seed,
            "folds": FOLDS,
            "calibrated_on": args.calibrate_on,
            "model": args.model,
            "hyperparameters": {"gbt": GBT, "hgb": HGB}.get(args.model, {"l2": L2}),
            "precision_target": PRECISION,
            "embedder": getattr(embedder, "name", None),
            "candidates_per_note": ServiceConfig().link_candidates,  # what the replay's search gives
            "sources": {name: meta for name, _, meta in sources},
            "pairs": len(y),
            "positives": int(y.sum()),
            "out_of_fold": report,
            "offers": served["report"],
            "seconds": round(time.perf_counter() - started, 1),
        },
    }
    if head is not None:
        out["emb_head"] = head  # the experiment's own block (lab.emb_head's is the only one)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
