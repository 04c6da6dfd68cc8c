"""Is the option of the same kind? The cosine between the options two notes choose, beside the whole notes'.

    python -m lab.option_study                       # MiniLM, the nine sets of embed11, writes the results
    python -m lab.option_study --sets para,dev-j     # a few sets (development only)
    python -m lab.option_study fit <train_linker's arguments>   # the pair model with the option column

embed11 (lab/HISTORY.md) found that a replacing note's closest earlier decision is as close as a
neighbouring decision is to a note that replaces nothing: "Push dispatcher cache: KeyDB" beside "Push
dispatcher single sign-on: Okta" share the component, not the kind of option. A replacement chooses an
option of the same kind as the one it leaves (Okta -> Keycloak, 07:30 -> quarter to eight). This measures
whether the cosine of the two *options* (each embedded alone with MiniLM, or in the carrier "We use X.")
separates gold pairs from the others better than the whole notes' cosine, alone and in a logistic fit of
both (cross-validated by scenario, the folds of ``train_linker.fold_of``).

The option is the product's reading, never the datasets' gold ``option`` field (that only checks the
reader: ``agreement``): the names the subject reader (``domain/subject.analyse``) reads as *chosen*,
else the names and values of the note's decision part (``decision_text.distinctive`` on
``pair_reading.read(text).part``, in the order written), else none (the option cosine is then 0 and the
fit sees a flag). Measures as ``lab.embedder_study``'s (pair AUC, 'replaces something' AUC, recall at
8 % wrong offers, per set and for the paraphrase sets), each score standing in for the cosine: a note's
score against each earlier decision-like note of its scenario. Blind data is refused.
Writes ``lab/results/option-study.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lab.embedder_study import DECIDING, PARAPHRASE, SETS, WATCH, cutoff, load_sets, summarise

ROOT = Path(__file__).resolve().parent.parent
NINE = ("odr", "vdr", "para", "dev-a", "dev-h", "dev-i", "dev-j", "dev-m", "dev-n")
CARRIER = "We use {}."
OPTION_NAMES = 2  # names/values of the decision part kept when the reader finds no chosen name
OUT = ROOT / "lab/results/option-study"
#: The logistic fits: their feature columns (``features``). ``fit``/``fit_carrier`` are the question's (c);
#: ``flag`` and ``same`` are ablations: is it the option's *kind* (its cosine) or only that both notes
#: name an option / the same one? ``kind`` lets the fit read "similar, not identical" (option cosine squared).
FITS: dict[str, tuple[str, ...]] = {
    "fit": ("whole", "option", "both", "whole*option"),
    "fit_carrier": ("whole", "option_carrier", "both", "whole*option_carrier"),
    "fit_flag": ("whole", "both"),
    "fit_same": ("whole", "both", "same"),
    "fit_kind": ("whole", "option", "option^2", "both", "same", "whole*option"),
}
SCORES = ("whole", "option", "option_carrier", *FITS)

# ---------------------------------------------------------------------------- the option, as read


def option_of(text: str, vocab: frozenset[str] = frozenset(), known: frozenset[str] = frozenset()) -> tuple[str, str]:
    """(the option ``text`` chooses as the product reads it, where it came from): the subject
    reader's chosen names, joined ("Keycloak"); else the decision part's names and values in the
    order written ("PostgreSQL 15"); else ("", "none")."""
    from evomem.domain import subject
    from evomem.domain.linkers import decision_text as dt
    from evomem.domain.linkers.pair_reading import read

    facts = subject.analyse(text, vocab, known=known)
    chosen = [m.text for m in facts.chosen]
    if chosen:
        return ", ".join(dict.fromkeys(chosen)), "chosen"
    part = read(text).part
    dist = dt.distinctive(part)
    seen: list[str] = []
    for m in re.finditer(r"[\w.\-+/]*\w", part):
        w = m.group(0)
        if any(t in dist for t in dt.tokens(w)) and w not in seen:
            seen.append(w)
    if seen:
        return " ".join(seen[:OPTION_NAMES]), "distinctive"
    return "", "none"


def _norm(s: str) -> set[str]:
    return {w for w in re.findall(r"\w+", s.lower()) if len(w) > 1 or w.isdigit()}


def agrees(read_option: str, gold: str) -> tuple[bool, bool]:
    """(exact: one contains the other, case-insensitively; overlap: they share a word)."""
    a, b = read_option.lower().strip(), gold.lower().strip()
    exact = bool(a) and (a in b or b in a)
    return exact, bool(_norm(a) & _norm(b))


# ---------------------------------------------------------------------------- the pairs


def pairs_of(
    data: dict[str, list[dict[str, Any]]],
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]], dict[str, Any]]:
    """One row per note with an earlier decision-like note (``embedder_study.rows_of``'s notes), the
    option read for every text, and the reader's agreement with the gold ``option`` field."""
    from evomem.domain import subject

    rows: list[dict[str, Any]] = []
    options: dict[str, tuple[str, str]] = {}
    agree: dict[str, Any] = {}
    for name, scenarios in data.items():
        n_gold = n_exact = n_overlap = 0
        sources: dict[str, int] = {}
        for g, sc in enumerate(scenarios):
            notes = sorted(sc["notes"], key=lambda n: n["i"])
            texts = [n["text"] for n in notes]
            vocab = subject.lowercase_vocabulary(texts)
            for n in notes:
                if n["text"] not in options:
                    options[n["text"]] = option_of(n["text"], vocab)
                opt, src = options[n["text"]]
                if n.get("kind") in DECIDING:
                    sources[src] = sources.get(src, 0) + 1
                    if n.get("option"):
                        n_gold += 1
                        e, o = agrees(opt, str(n["option"]))
                        n_exact += e
                        n_overlap += o
            for k, n in enumerate(notes):
                earlier = [m for m in notes[:k] if m.get("kind") in DECIDING]
                if not earlier:
                    continue
                gold = n.get("supersedes")
                rows.append(
                    {
                        "set": name,
                        "group": f"{name}/{g}",
                        "kind": n.get("kind"),
                        "text": n["text"],
                        "cands": [m["text"] for m in earlier],
                        "labels": [gold is not None and m["i"] == gold for m in earlier],
                        "gold": gold is not None,
                    }
                )
        agree[name] = {
            "decision_notes_with_gold_option": n_gold,
            "exact": n_exact / n_gold if n_gold else None,
            "overlap": n_overlap / n_gold if n_gold else None,
            "source": sources,
        }
    return rows, options, agree


def score_rows(rows: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """``embedder_study.summarise``'s rows from each pair's score ``key`` (``gold_cos``: the gold pair's score)."""
    out = []
    for r in rows:
        s = r[key]
        row: dict[str, Any] = {"kind": r["kind"], "max": max(s), "gold": r["gold"], "others": list(s)}
        if True in r["labels"]:
            g = r["labels"].index(True)
            row["gold_cos"] = s[g]
            row["rank"] = 1 + sum(1 for j, c in enumerate(s) if j != g and c > s[g])
            row["others"] = [c for j, c in enumerate(s) if j != g]
        out.append(row)
    return out


def features(r: dict[str, Any], j: int, cols: Sequence[str]) -> list[float]:
    """The pair's columns ``cols`` (``FITS``): the cosines, ``both`` (each note has an option read),
    ``same`` (the two options read alike, case-insensitively), squares and products of these."""
    both = float(r["has_opt"][j])
    base = {
        "whole": r["whole"][j],
        "option": r["ocos"][j] * both,
        "option_carrier": r["ocos_c"][j] * both,
        "both": both,
        "same": float(r["same"][j]),
    }
    out = []
    for c in cols:
        if "*" in c:
            a, b = c.split("*")
            out.append(base[a] * base[b])
        elif c.endswith("^2"):
            out.append(base[c[:-2]] ** 2)
        else:
            out.append(base[c])
    return out


def fit_oof(rows: list[dict[str, Any]], seed: int, cols: Sequence[str]) -> tuple[list[list[float]], list[float]]:
    """Per pair, the probability of a logistic fit of the whole and the option cosine, out of fold:
    the scenarios dealt to folds as ``train_linker.fold_of`` deals its groups (seed ``seed``)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from lab.train_linker import FOLDS, fold_of

    groups = sorted({r["group"] for r in rows})
    gi = {g: k for k, g in enumerate(groups)}
    fold = fold_of(len(groups), seed)
    X, y, f = [], [], []
    for r in rows:
        for j, lab in enumerate(r["labels"]):
            X.append(features(r, j, cols))
            y.append(int(lab))
            f.append(fold[gi[r["group"]]])
    Xa, ya, fa = np.asarray(X), np.asarray(y), np.asarray(f)
    p = np.zeros(len(ya))
    coefs = []
    for k in range(FOLDS):
        tr = fa != k
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
        model.fit(Xa[tr], ya[tr])
        p[~tr] = model.predict_proba(Xa[~tr])[:, 1]
        coefs.append(model[-1].coef_[0].tolist())
    out, at = [], 0
    for r in rows:
        n = len(r["labels"])
        out.append([float(x) for x in p[at : at + n]])
        at += n
    return out, np.mean(coefs, axis=0).tolist()


# ---------------------------------------------------------------------------- the run


def run(sets: Sequence[str], seed: int, encode: Callable[[list[str]], np.ndarray] | None = None) -> dict[str, Any]:
    data = load_sets(sets)
    rows, options, agree = pairs_of(data)
    if encode is None:
        from evomem.adapters.models.embedding import OnnxEmbedder

        emb = OnnxEmbedder()
        emb.load()
        encode = emb.encode
    texts = sorted({t for r in rows for t in [r["text"], *r["cands"]]})
    opts = sorted({options[t][0] for t in texts if options[t][0]})
    t0 = time.perf_counter()
    vec = dict(zip(texts, encode(texts), strict=True))
    ovec = dict(zip(opts, encode(opts), strict=True)) if opts else {}
    cvec = dict(zip(opts, encode([CARRIER.format(o) for o in opts]), strict=True)) if opts else {}
    embed_s = time.perf_counter() - t0
    for r in rows:
        v, o = vec[r["text"]], options[r["text"]][0]
        r["whole"] = [float(v @ vec[c]) for c in r["cands"]]
        co = [options[c][0] for c in r["cands"]]
        r["has_opt"] = [bool(o and x) for x in co]
        r["ocos"] = [float(ovec[o] @ ovec[x]) if o and x else 0.0 for x in co]
        r["ocos_c"] = [float(cvec[o] @ cvec[x]) if o and x else 0.0 for x in co]
        r["same"] = [bool(o) and o.lower() == x.lower() for x in co]
        r["option"] = r["ocos"]
        r["option_carrier"] = r["ocos_c"]
    fits: dict[str, Any] = {}
    for key, cols in FITS.items():
        probs, coef = fit_oof(rows, seed, cols)
        for r, p in zip(rows, probs, strict=True):
            r[key] = p
        fits[key] = {"features": list(cols), "mean_coef": coef}
    result: dict[str, Any] = {
        "sets": list(sets),
        "seed": seed,
        "texts": len(texts),
        "options": len(opts),
        "embed_s": round(embed_s, 1),
        "agreement": agree,
        "agreement_pooled": _pool_agree(agree),
        "fits": fits,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load1": os.getloadavg()[0],
        "scores": {},
    }
    for key in SCORES:
        srows = score_rows(rows, key)
        per = {name: [s for s, r in zip(srows, rows, strict=True) if r["set"] == name] for name in sets}
        pooled_cut = cutoff([s["max"] for s in srows if not s["gold"]])
        para = [s for name in PARAPHRASE if name in per for s in per[name]]
        result["scores"][key] = {
            "pooled": summarise(srows, pooled_cut),
            "paraphrase": summarise(para, pooled_cut),
            "sets": {name: summarise(per[name], pooled_cut) for name in sets},
        }
    result["close_calls"] = {
        group: close_calls([r for r in rows if r["set"] in g])
        for group, g in (("paraphrase", PARAPHRASE), ("pooled", tuple(sets)))
    }
    result["bootstrap"] = {
        group: bootstrap([r for r in rows if r["set"] in sets_], "whole", "fit", seed)
        for group, sets_ in (("paraphrase", PARAPHRASE), ("pooled", tuple(sets)))
    }
    return result


def close_calls(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """embed11's hard cases: the notes that replace nothing whose closest earlier decision (whole
    cosine) reaches the 8 % cut-off, against the replacing notes' gold pairs. For each, the option
    cosine of that pair (the closest / the gold), how often both options were read and read alike,
    and the AUC of the option cosine between the two (does the option's kind tell them apart?)."""
    from lab.embedder_study import auc

    cut = cutoff([max(r["whole"]) for r in rows if not r["gold"]])
    gold, close = [], []
    for r in rows:
        if True in r["labels"]:
            gold.append(r["labels"].index(True))
            gold[-1] = (r, gold[-1])
        elif not r["gold"] and max(r["whole"]) >= cut:
            close.append((r, int(np.argmax(r["whole"]))))

    def side(pairs: list[tuple[dict[str, Any], int]]) -> dict[str, Any]:
        have = [(r, j) for r, j in pairs if r["has_opt"][j]]
        return {
            "n": len(pairs),
            "both_read": len(have),
            "alike": sum(1 for r, j in have if r["same"][j]),
            "option_cos_p50": float(np.median([r["ocos"][j] for r, j in have])) if have else None,
            "by_kind": dict(
                sorted({k: sum(1 for r, _ in pairs if r["kind"] == k) for k in {r["kind"] for r, _ in pairs}}.items())
            ),
        }

    g_have = [r["ocos"][j] for r, j in gold if r["has_opt"][j]]
    c_have = [r["ocos"][j] for r, j in close if r["has_opt"][j]]
    g_diff = [r["ocos"][j] for r, j in gold if r["has_opt"][j] and not r["same"][j]]
    c_diff = [r["ocos"][j] for r, j in close if r["has_opt"][j] and not r["same"][j]]
    return {
        "cut": cut,
        "gold": side(gold),
        "close": side(close),
        "auc_option_cos": auc(g_have, c_have),
        "auc_option_cos_other_options": auc(g_diff, c_diff),  # the pairs whose options are not read alike
        "option_cos_p50_other_options": [float(np.median(x)) if x else None for x in (g_diff, c_diff)],
    }


def bootstrap(rows: list[dict[str, Any]], a: str, b: str, seed: int, n: int = 200) -> dict[str, Any]:
    """Score ``b`` minus score ``a`` on the AUC rep. and the recall at the group's own 8 % cut, over
    ``n`` resamples of the scenarios (with replacement): the mean and the 5th and 95th percentiles."""
    rng = np.random.default_rng(seed)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_group.setdefault(r["group"], []).append(r)
    keys = sorted(by_group)
    diffs: dict[str, list[float]] = {"auc_replaces": [], "recall_own_cut": []}
    for _ in range(n):
        sample = [r for k in rng.choice(len(keys), len(keys)) for r in by_group[keys[k]]]
        sa, sb = summarise(score_rows(sample, a), None), summarise(score_rows(sample, b), None)
        for m in diffs:
            if sa[m] is not None and sb[m] is not None:
                diffs[m].append(sb[m] - sa[m])
    return {
        m: {"mean": float(np.mean(d)), "p5": float(np.quantile(d, 0.05)), "p95": float(np.quantile(d, 0.95))}
        for m, d in diffs.items()
        if d
    } | {"a": a, "b": b, "resamples": n}


def _pool_agree(agree: dict[str, Any]) -> dict[str, Any]:
    n = sum(a["decision_notes_with_gold_option"] for a in agree.values())
    out: dict[str, Any] = {"n": n}
    for k in ("exact", "overlap"):
        out[k] = sum((a[k] or 0) * a["decision_notes_with_gold_option"] for a in agree.values()) / n if n else None
    return out


# ---------------------------------------------------------------------------- one more pair-model column

COLUMN = "opt_cos"
#: The column where a note or its candidate has no option read, or the row has no embeddings.
NO_OPTION = -1.0


def option_column(sources: Sequence[Any], groups: Sequence[Any], encode: Callable[[list[str]], Any]) -> list[float]:
    """Per row of ``groups`` (flat order), the cosine of the options the note and the candidate
    choose (``option_of``, each scenario's lowercase vocabulary; embedded alone by ``encode``), or
    ``NO_OPTION`` where either has none or the row has no embeddings (``has_emb``)."""
    from evomem.domain import subject
    from evomem.domain.linkers import pair_features as pf
    from lab.emb_head import texts_of

    has_emb = pf.FEATURES.index("has_emb")
    items = {name: its for name, its, _ in sources}
    texts = texts_of(sources, groups)
    opt: dict[tuple[str, int, str], str] = {}
    pairs: list[tuple[str, str] | None] = []
    for (name, k, entries), tx in zip(groups, texts, strict=True):
        vocab = subject.lowercase_vocabulary(n["text"] for n in items[name][k]["notes"])

        def of(t: str, name: str = name, k: int = k, vocab: frozenset[str] = vocab) -> str:
            key = (name, k, t)
            if key not in opt:
                opt[key] = option_of(t, vocab)[0]
            return opt[key]

        for e, (note, cands) in zip(entries, tx, strict=True):
            for row, cand in zip(e["rows"], cands, strict=True):
                a, b = (of(note), of(cand)) if row[has_emb] else ("", "")
                pairs.append((a, b) if a and b else None)
    names = sorted({x for p in pairs if p for x in p})
    vec = dict(zip(names, encode(names), strict=True)) if names else {}
    return [NO_OPTION if p is None else round(float(vec[p[0]] @ vec[p[1]]), 6) for p in pairs]


def add_column(groups: Sequence[Any], values: Sequence[float]) -> None:
    """Append ``values`` (flat row order) to the rows, and make ``COLUMN`` a pair feature for this
    process (last, free of monotone constraints: a replacement's option is alike, not identical)."""
    from evomem.domain.linkers import pair_features as pf
    from evomem.domain.linkers import pair_model as pm
    from lab import train_linker as tl

    it = iter(values)
    for _, _, entries in groups:
        for e in entries:
            for row in e["rows"]:
                row.append(next(it))
    if COLUMN not in pf.FEATURES:
        pf.FEATURES = (*pf.FEATURES, COLUMN)
        pm.FEATURES = pf.FEATURES
        tl.MONOTONE[COLUMN] = 0


def augment(sources: Sequence[Any], groups: Sequence[Any], seed: int, vector_cache: str) -> dict[str, Any]:
    """``train_linker.main``'s hook: the option cosine as one more column (nothing is learnt for it)."""
    from evomem.adapters.models.embedding import OnnxEmbedder

    emb = OnnxEmbedder(threads=1)
    emb.load()
    values = option_column(sources, groups, emb.encode)
    add_column(groups, values)
    have = sum(v != NO_OPTION for v in values)
    print(f"{COLUMN}: {have} of {len(values)} rows with both options", file=sys.stderr)
    return {"kind": COLUMN, "input": "MiniLM cosine of the options read (lab.option_study.option_of)", "rows": have}


def evaluate_with_column(model_path: str, groups_path: str, vector_cache: str, out_groups: str) -> dict[str, Any]:
    """``lab.emb_head``'s out-of-sample evaluation (the eval replays: dev-g, dev-m, dev-n) of a model
    fitted with the option column: the column added to the eval rows, the model read without the
    block the trainer wrote under the head's key."""
    import pickle
    import tempfile

    from evomem.adapters.models.embedding import OnnxEmbedder
    from lab import emb_head

    with open(groups_path, "rb") as fh:
        sources, groups = pickle.load(fh)
    emb = OnnxEmbedder(threads=1)
    emb.load()
    add_column(groups, option_column(sources, groups, emb.encode))
    with open(out_groups, "wb") as fh:
        pickle.dump((sources, groups), fh)
    data = json.loads(Path(model_path).read_text(encoding="utf-8"))
    data.pop(emb_head.NAME, None)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(data, fh)
    return emb_head.evaluate(fh.name, out_groups, vector_cache)


def compare(base: dict[str, Any], opt: dict[str, Any], counts: dict[str, list[int]]) -> dict[str, Any]:
    """Out of fold on the training replays, at each model's own offer rules: recall if confirmed and
    offers on notes that replace nothing per source, and pooled (weighted by each source's replacing
    notes and notes that replace nothing, ``counts``) over all, the hand-written and the paraphrase sources."""
    out: dict[str, Any] = {"rules": {}, "per_source": {}, "pooled": {}}
    for tag, m in (("base", base), ("option", opt)):
        out["rules"][tag] = {k: m[k] for k in ("offer_at", "hint_at", "link_at")}
    groups = {
        "all": list(counts),
        "written": [s for s in counts if s.startswith("dev-")],
        "paraphrase": [s for s in counts if s in ("para", "gen-para-1001", "dev-j")],
    }
    for tag, m in (("base", base), ("option", opt)):
        per = m["training"]["offers"]["per_source"]
        for s in counts:
            out["per_source"].setdefault(s, {})[tag] = {
                k: per[s][k] for k in ("recall_if_confirmed", "offers_on_nothing", "hint_precision")
            }
        for g, names in groups.items():
            rep = sum(counts[s][0] for s in names)
            nothing = sum(counts[s][1] for s in names)
            out["pooled"].setdefault(g, {})[tag] = {
                "recall_if_confirmed": round(sum(per[s]["recall_if_confirmed"] * counts[s][0] for s in names) / rep, 3),
                "offers_on_nothing": round(sum(per[s]["offers_on_nothing"] * counts[s][1] for s in names) / nothing, 3),
                "replacing": rep,
                "replace_nothing": nothing,
            }
    return out


# ---------------------------------------------------------------------------- the report


def _f(x: Any, nd: int = 3) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


LABELS = {
    "whole": "(a) whole-note cosine",
    "option": "(b) option cosine, option alone",
    "option_carrier": "(b') option cosine, 'We use X.'",
    "fit": "(c) logistic fit of (a) and (b), out of fold",
    "fit_carrier": "(c') logistic fit of (a) and (b'), out of fold",
    "fit_flag": "(d) ablation: (a) + both notes have an option read",
    "fit_same": "(e) ablation: (d) + the options read alike",
    "fit_kind": "(f) (c) + option cosine squared + alike",
}


def report(result: dict[str, Any]) -> str:
    lines = [
        "# Is the option of the same kind? Option cosine beside the whole-note cosine (option11)",
        "",
        "`python -m lab.option_study` (development sets only; see its docstring). MiniLM-L6 int8 (the product's).",
        "Per note, a score against each earlier decision-like note of its scenario; measures as",
        "`lab/results/embedder-study.md`: *top1/top3* the gold's rank, *AUC rep.* a replacing note's highest",
        "score against a note that replaces nothing, *AUC pair* gold pair against every other pair, *R@8%* gold",
        "in the top 3 and the note's highest score at or above the cut-off 8 % of the notes that replace nothing",
        "reach (pooled cut / each group's own cut). Paraphrase sets: " + ", ".join(PARAPHRASE) + ".",
        f"Run {result['date']}, load {result['load1']:.1f}, seed {result['seed']}, {result['texts']} texts,"
        f" {result['options']} distinct options.",
        "",
        "## Pooled and paraphrase sets",
        "",
        "| score | pooled top1/top3 | AUC rep. / dec. | AUC pair | R@8% pooled | para top1/top3 | AUC rep. "
        "| AUC pair | R@8% pooled / own cut |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in SCORES:
        p, q = result["scores"][key]["pooled"], result["scores"][key]["paraphrase"]
        lines.append(
            f"| {LABELS[key]} | {_f(p['top1'])} / {_f(p['top3'])} | {_f(p['auc_replaces'])} / "
            f"{_f(p['auc_replaces_decisions'])} | {_f(p['auc_pair'])} | {_f(p['recall_pooled_cut'])} | "
            f"{_f(q['top1'])} / {_f(q['top3'])} | {_f(q['auc_replaces'])} | {_f(q['auc_pair'])} | "
            f"{_f(q['recall_pooled_cut'])} / {_f(q['recall_own_cut'])} |"
        )
    lines += [
        "",
        "## Per set: top1 / top3 · AUC rep. · AUC pair · R@8% own cut",
        "",
        "| set | gold | " + " | ".join(LABELS[k].split(" ")[0] for k in SCORES) + " |",
        "|---|---|" + "---|" * len(SCORES),
    ]
    for name in result["sets"]:
        cells = []
        for key in SCORES:
            s = result["scores"][key]["sets"][name]
            cells.append(
                f"{_f(s['top1'], 2)}/{_f(s['top3'], 2)} · {_f(s['auc_replaces'], 2)} · {_f(s['auc_pair'], 2)} · "
                f"{_f(s['recall_own_cut'], 2)}"
            )
        gold = result["scores"]["whole"]["sets"][name]["gold"]
        lines.append(f"| {name}{' *' if name in WATCH else ''} | {gold} | " + " | ".join(cells) + " |")
    a = result["agreement_pooled"]
    lines += [
        "",
        "## The reader's option against the datasets' gold `option` (a check of the reader, never a feature)",
        "",
        f"Pooled over {a['n']} decision-like notes with a gold option: one contains the other {_f(a['exact'])},"
        f" they share a word {_f(a['overlap'])}.",
        "",
        "| set | notes | contains | shares a word | where the option came from (decision-like notes) |",
        "|---|---|---|---|---|",
    ]
    for name, s in result["agreement"].items():
        src = ", ".join(f"{k} {v}" for k, v in s["source"].items())
        lines.append(
            f"| {name} | {s['decision_notes_with_gold_option']} | {_f(s['exact'], 2)} | {_f(s['overlap'], 2)} | {src} |"
        )
    lines += [
        "",
        "## embed11's close calls: option cosine of the gold pairs against the closest pair of a note that",
        "## replaces nothing above the whole-cosine 8 % cut",
        "",
    ]
    lines += [
        "| group | cut | gold pairs: n / both read / alike / option cos p50 | close calls: n / both read / alike"
        " / option cos p50 | close calls by kind | AUC option cos, gold vs close: all / options not alike"
        " (p50 gold / close) |",
        "|---|---|---|---|---|---|",
    ]
    for group, c in result["close_calls"].items():
        g, k = c["gold"], c["close"]
        kinds = ", ".join(f"{a} {b}" for a, b in k["by_kind"].items())
        lines.append(
            f"| {group} | {c['cut']:.3f} | {g['n']} / {g['both_read']} / {g['alike']} / {_f(g['option_cos_p50'])} "
            f"| {k['n']} / {k['both_read']} / {k['alike']} / {_f(k['option_cos_p50'])} | {kinds} "
            f"| {_f(c['auc_option_cos'])} / {_f(c['auc_option_cos_other_options'])} "
            f"({' / '.join(_f(x) for x in c['option_cos_p50_other_options'])}) |"
        )
    lines += ["", "Scenario bootstrap, (c) minus (a) (mean [5th, 95th percentile]):", ""]
    for group, b in result["bootstrap"].items():
        cells = ", ".join(
            f"{m} {v['mean']:+.3f} [{v['p5']:+.3f}, {v['p95']:+.3f}]" for m, v in b.items() if isinstance(v, dict)
        )
        lines.append(f"- {group}: {cells} ({b['resamples']} resamples)")
    lines += ["", "Fits (mean standardised coefficients over the folds):", ""]
    for key, f in result["fits"].items():
        coef = ", ".join(f"{n} {c:+.2f}" for n, c in zip(f["features"], f["mean_coef"], strict=True))
        lines.append(f"- {key}: {coef}")
    lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "fit":  # the trainer with the option column: the rest is train_linker's arguments
        from lab import train_linker as tl

        return tl.main(list(argv[1:]), augment=augment)
    if argv and argv[0] == "eval":  # eval <model> <eval groups> <vector cache> <groups out>
        print(json.dumps(evaluate_with_column(*argv[1:5]), indent=1))
        return 0
    if argv and argv[0] == "compare":  # compare <base model> <model with the column> <counts json>
        base, opt, counts = (json.loads(Path(p).read_text(encoding="utf-8")) for p in argv[1:4])
        print(json.dumps(compare(base, opt, counts.get("counts", counts)), indent=1))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(NINE), help="comma-separated development sets")
    ap.add_argument("--seed", type=int, default=7, help="the fold seed (train_linker's default)")
    ap.add_argument("--out", default=str(OUT), help="writes <out>.json and <out>.md")
    args = ap.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    unknown = [s for s in sets if s not in SETS]
    if unknown:
        raise SystemExit(f"unknown sets {unknown}")
    result = run(sets, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    text = report(result)
    out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
