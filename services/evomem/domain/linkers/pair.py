"""The pair linker: an open-vocabulary model of "does this note replace that decision".

Every active candidate with a compatible scope (the service finds them by BM25 and embeddings,
whatever they are about; a candidate whose scope differs only by a scope inferred from a text,
``scope.may_list``, is listed but never linked) is scored as a pair (new note, candidate) by a logistic regression
over features that name no product, component or topic (``pair_features``):

- embedding similarity of the whole notes and of their decision parts (``decision_text``:
  the "Decision" section, the Status paragraph or the first paragraph of a long document),
  and the candidate's rank by that similarity among the candidates;
- word overlap of the two decision parts (all content words, and names/values);
- the candidate's words in a *leaving* position of the note ("instead of X", "from X",
  "no longer X", "X is out", "replaces X"), a leaving position that names something else,
  the candidate's names restated outside one, new names the note brings;
- a revert ("back to X") to a word of the candidate's chain, a change cue, a hedge;
- an explicit reference to the candidate's identifier ("supersedes ADR-12");
- the frame (``frame``): how far a short note repeats the candidate's words in order with a value
  swapped ("Pepper weighs 11.9 kg." after "Pepper weighs 11.2 kg."), its leading words kept, and
  whether what it dropped are names or values;
- recency and search rank among the candidates, scope, and lengths.

A record that *declares* it replaces exactly one candidate ("Supersedes ADR 7." as a header line,
"This policy replaces POL-3.": ``declares``) is a link on its own. Any other sentence that names a
candidate's identifier with a replacing verb ("NATS would replace ADR-7's broker", "For the EU
only, this record replaces DG-5", "- Replacing ADR-12 with X" among the alternatives) is a feature
of the model and puts that candidate first in the list, never a link by itself: on development
records written to test it (lab/devdata dev-g), such a mention was a supersession in 21 of 41
cases, the declarations in 36 of 36 (``python -m lab.explicit_refs``).

The weights live in ``pair_model.json`` next to this module, written by
``lab/train_linker.py`` with what they were trained on (files and sha256, seed, thresholds,
cross-validated precision and recall). The model is boosted trees (or a logistic regression);
inference is plain Python, a few hundred comparisons per pair. The shipped trees are histogram
boosting with monotone constraints (``train_linker.MONOTONE``): the probability may only rise with
the evidence that the two notes share a subject (cosines, shared words, the frame) or that the note
leaves the candidate, so a fold cannot teach the trees a pocket of unrelated pairs to link (the
unconstrained trees gave p 0.99 to pairs such as a release note against another project's
deprecation).

Three outcomes: ``link`` when the best pair's probability reaches ``link_at`` (calibrated for
precision >= 0.98 on development data, shown by enough links, pooled and on the hand-written files
alone: the 95 % bound of their error rate within 0.02; 1.0 in the shipped model, which shows it on
no threshold, so it links only declarations; ``link_at_long`` when the note or that candidate is a
long document, calibrated on those pairs alone, because long records of one domain look alike and
the model's confidence means less there; 1.0 while those pairs are too few to show the precision,
so a long record links only on its declaration and the model lists its likely predecessors);
``abstain`` with up to 3 likely
predecessors when the best reaches ``abstain_at``, a candidate's words stand in a leaving position
of the note, or it is on the note's subject (decision-part cosine at least ``subject_at``, or
whole-note cosine at least ``subject_at_full``: each the 10th percentile of the true pairs' in
development data; the second catches long records whose decision parts were read apart, a revision
whose Decision section is short against a record whose is long); ``none`` otherwise.

An optional second reading (``cross``, the ``PairScorer`` port; off unless the composition root
passes one, ``EVOMEM_LINKER_CROSS_ENCODER``): where the model would abstain, a cross-encoder reads
each listed candidate together with the note, and the best one links when
``logit(p) + weight * its logit`` reaches its calibrated ``link_score`` (``_cross``; not run at all
when the calibration found none, ``inf``: the shipped encoder since 2026-12-06).

Cost on long documents: a text's reading (``_Read``: decision part, its tokens and windows, the
sentences with a replacing verb that ``refers`` searches) and its vectors are cached by text
(``cache_size`` texts each, so a candidate is read once, not on every remember); the trees
are compiled once per model file into one function of nested ifs (``_compile_trees``: the same
comparisons and the same sum); ``prepare`` embeds a long note's decision part ahead, while the
service searches the candidates. None of these changes a feature's value.
"""

from __future__ import annotations

import functools
import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evomem.domain.linkers import decision_text as dt
from evomem.domain.model import LinkDecision, LinkProposal, MemoryNode
from evomem.domain.scope import compatible as scope_compatible
from evomem.domain.scope import is_default, may_list

if TYPE_CHECKING:
    from evomem.app.ports import PairScorer

NAME = "pair"
VERSION = "1"
MODEL_FILE = Path(__file__).with_name("pair_model.json")
MAX_LISTED = 3
HISTORY_DEPTH = 3
EXPLICIT_REFERENCE = 0.9  # confidence of a link on a record's declaration that it replaces the candidate
NO_EMBEDDING_JACCARD = 0.25  # without an embedder: the word overlap that puts a candidate on the subject

Lookup = Callable[[Iterable[str]], Mapping[str, MemoryNode]]

# A document identifier at the start of a note: an upper-case prefix and a number ("PEP: 8", "# ADR 12").
_IDENT = re.compile(r"^\W{0,6}(?:[Tt]itle:\s*)?([A-Z]{2,8})[-\s:#_]{0,3}0*(\d{1,5})\b")
# The note says it replaces the reference: the verb right before it ("supersedes ADR 7", "replaces PEP 215").
_REF_VERB = r"\b(?:supersedes|supersede|superseding|replaces|replace|replacing|obsoletes)\s+(?:the\s+)?"
_REF_VERB_RE = re.compile(_REF_VERB, re.I)
_DECL_VERB_RE = re.compile(r"\b(?:supersedes|replaces|obsoletes)\b", re.I)

FEATURES = (
    "bias",
    "has_emb",
    "cos_full",
    "cos_dec",
    "cos_rank",
    "cos_gap",
    "jacc",
    "shared",
    "shared_dist",
    "cov_cand",
    "leave_hit",
    "leave_hit_dist",
    "leave_other",
    "restate",
    "new_value",
    "back_hit",
    "change",
    "hedge",
    "question",
    "cand_hedge",
    "explicit_ref",
    "search_rank",
    "recency_rank",
    "scoped_same",
    "note_long",
    "cand_long",
    "title_jacc",
    "leave_x_cos",
    "change_x_cos",
    "n_cands",
    "newer_similar",
    "margin",
    "cand_chained",
    "keep",
    "decides",
    "reports",
    "cand_decides",
    "cand_reports",
    "novel",
    "frame_kept",
    "frame_prefix",
    "frame_value",
)


@dataclass(frozen=True, slots=True)
class _Read:
    """What the features need from one text (cached per text)."""

    text: str
    part: str  # decision part
    toks: frozenset[str]  # content tokens of the decision part
    dist: frozenset[str]  # names/values of the decision part
    leaving: frozenset[str]
    back_to: frozenset[str]
    title: frozenset[str]
    change: bool
    hedge: bool
    question: bool
    keep: bool
    decides: bool
    reports: bool
    ident: str | None
    long: bool
    ref_sents: tuple[str, ...]  # the note's sentences with a replacing verb (``refers`` reads only these)
    decl_sents: tuple[str, ...]  # its sentences with a present-tense replacing verb (``declares`` reads these)
    seq: tuple[str, ...]  # the decision part's words in order, when it is short enough to align (``frame``)


def read(text: str) -> _Read:
    part = dt.decision_part(text)
    ident = _ident_of(text[:120])
    words = dt.tokens(part)
    return _Read(
        text=text,
        part=part,
        toks=frozenset(dt.content(words)),
        dist=frozenset(dt.distinctive(part)),
        leaving=frozenset(dt.leaving_windows(part)),
        back_to=frozenset(dt.back_to_windows(part)),
        title=frozenset(dt.content(dt.tokens(dt.title(text)))),
        change=dt.CHANGE.search(part) is not None,
        hedge=dt.HEDGE.search(part) is not None,
        question=part.rstrip().endswith("?"),
        keep=dt.KEEP.search(part) is not None,
        decides=dt.DECIDES.search(part) is not None,
        reports=dt.REPORTS.search(part) is not None,
        ident=ident,
        long=len(text) > dt.SHORT_NOTE_CHARS,
        ref_sents=_sentences_with(_REF_VERB_RE, text),
        decl_sents=_sentences_with(_DECL_VERB_RE, text),
        seq=tuple(words) if len(words) <= FRAME_WORDS else (),
    )


#: A decision part of more words than this is not aligned word by word (``frame``: a restated
#: fact is a sentence or two; aligning two long records costs milliseconds and says little).
FRAME_WORDS = 60


def frame(note: _Read, cand: _Read) -> tuple[float, float, float]:
    """How far the note restates the candidate's wording with other values in it: the two
    decision parts aligned word by word (``difflib``, no junk heuristic). Returns the share of
    the candidate's words the note keeps in order, the share of its leading words the note
    repeats exactly, and the share of the candidate's words the note does not keep that are
    names or values (capitalised, with digits: ``dt.distinctive``). "Pepper weighs 11.9 kg."
    against "Pepper weighs 11.2 kg." gives (0.75, 0.5, 1.0): same frame, a value swapped;
    "Dagny lives in Odense." against "Quorra lives in Odense." keeps as much but swaps its first
    word; "Widget Pro version: 3.3" against "Widget Pro price: $49." swaps a common word too. All
    zero when either part is empty or too long to align (``FRAME_WORDS``)."""
    a, b = cand.seq, note.seq
    if not a or not b:
        return 0.0, 0.0, 0.0
    sm = SequenceMatcher(None, a, b, autojunk=False)
    kept = sum(block.size for block in sm.get_matching_blocks())
    prefix = 0
    for x, y in zip(a, b, strict=False):  # the common leading words: stop at the shorter
        if x != y:
            break
        prefix += 1
    dropped = [a[k] for tag, i1, i2, _, _ in sm.get_opcodes() if tag != "equal" for k in range(i1, i2)]
    values = sum(1 for w in dropped if w in cand.dist) / len(dropped) if dropped else 0.0
    return kept / len(a), prefix / len(a), values


def _sentences_with(verb: re.Pattern[str], text: str) -> tuple[str, ...]:
    """The sentences of ``text`` where ``verb`` occurs (none split when it occurs nowhere)."""
    return tuple(s for s in dt.sentences(text) if verb.search(s)) if verb.search(text) else ()


def _jacc(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


@functools.lru_cache(maxsize=4096)
def _ref_pattern(ident: str) -> re.Pattern[str]:
    """A replacing verb and then ``ident`` ("supersedes ADR-12", "replaces :pep:`215`")."""
    prefix, num = ident.split()
    return re.compile(rf"{_REF_VERB}(?::{re.escape(prefix)}:`|{re.escape(prefix)}\W{{0,3}})0*{num}\b", re.I)


def refers(note: _Read, ident: str | None) -> bool:
    """The note names the candidate's identifier ("ADR 12", "PEP-215") with a replacing verb."""
    if ident is None or ident == note.ident:
        return False
    if not note.ref_sents:
        return False
    pat = _ref_pattern(ident)
    # Only a sentence with a replacing verb can match: the pattern starts with one.
    for sent in note.ref_sents:
        m = pat.search(sent)
        if m is not None and dt.NEGATED.search(sent[: m.start()]) is None and dt.HEDGE.search(sent) is None:
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _declare_pattern(ident: str) -> re.Pattern[str]:
    """The record's own declaration that it replaces ``ident``: the sentence starts with the verb
    (a header line, "Supersedes: ADR 7", "Replaces UIR-9."), or with "This <document>" or the
    record's own identifier (group ``own``, checked by ``declares``) and then the verb in the
    present tense ("This SOP supersedes SOP-112", "ADR-12 supersedes ADR-7"). No modal, no
    condition, no restriction before it, no list of alternatives ("- Replacing ADR 12 with X")."""
    prefix, num = ident.split()
    return re.compile(
        r"^[\s*_>#|-]*(?:(?P<own>[A-Za-z]{2,8}[-\s:#_]{0,3}\d{1,5})\s*[:.]?\s+)?"
        r"(?:(?:this|the\s+present)\s+(?:[\w-]+\s+){1,3}?)?(?:hereby\s+)?"
        rf"(?:supersedes|replaces|obsoletes)\s*:?\s*(?:the\s+)?(?::{re.escape(prefix)}:`|{re.escape(prefix)}\W{{0,3}})"
        rf"0*{num}\b",
        re.I,
    )


def declares(note: _Read, ident: str | None) -> bool:
    """The note declares, in its own voice, that it replaces the record ``ident`` (``_declare_pattern``;
    not negated, not hedged). Stricter than ``refers`` (any sentence that names the record after a
    replacing verb), and it also reads header fields ("Replaces: RFC 40")."""
    if ident is None or ident == note.ident or not note.decl_sents:
        return False
    pat = _declare_pattern(ident)
    for sent in note.decl_sents:
        m = pat.search(sent)
        if m is None or dt.NEGATED.search(sent[: m.start()]) or dt.HEDGE.search(sent):
            continue
        own = m.group("own")
        if own is None or _ident_of(own) == note.ident:
            return True
    return False


def _ident_of(text: str) -> str | None:
    m = _IDENT.match(text)
    return f"{m.group(1).lower()} {int(m.group(2))}" if m else None


def pair_features(
    note: _Read,
    cands: Sequence[_Read],
    cos_full: Sequence[float | None],
    cos_dec: Sequence[float | None],
    created: Sequence[int],
    scopes: tuple[str | None, Sequence[str | None]],
    history: Sequence[frozenset[str]],
    chained: Sequence[bool] = (),
) -> list[list[float]]:
    """One feature vector (in ``FEATURES`` order) per candidate."""
    n = len(cands)
    chained = list(chained) or [False] * n
    has_emb = all(c is not None for c in cos_dec) and n > 0
    dec = [float(c) if c is not None else 0.0 for c in cos_dec]
    full = [float(c) if c is not None else 0.0 for c in cos_full]
    order = sorted(range(n), key=lambda i: -dec[i])
    cos_rank = {i: r for r, i in enumerate(order)}
    best = max(dec) if dec else 0.0
    by_time = sorted(range(n), key=lambda i: -created[i])
    recency = {i: r for r, i in enumerate(by_time)}
    scope, cand_scopes = scopes
    note_leave_dist = note.leaving & note.dist
    sim = dec if has_emb else [_jacc(note.toks, c.toks) for c in cands]
    rows: list[list[float]] = []
    for i, c in enumerate(cands):
        shared = note.toks & c.toks
        shared_dist = note.dist & c.dist
        left = note.leaving & c.toks
        left_dist = note.leaving & c.dist
        restate = (c.dist - c.toks.intersection(note.leaving)) & (note.toks - note.leaving) if c.dist else set()
        new = note.dist - c.toks
        back = bool(note.back_to & (c.toks | history[i])) if note.back_to else False
        x_cos = dec[i] if has_emb else _jacc(note.toks, c.toks)
        row = [
            1.0,
            1.0 if has_emb else 0.0,
            full[i],
            dec[i],
            1.0 / (1 + cos_rank[i]) if has_emb else 0.0,
            (best - dec[i]) if has_emb else 0.0,
            _jacc(note.toks, c.toks),
            math.log1p(len(shared)),
            math.log1p(len(shared_dist)),
            len(shared) / len(c.toks) if c.toks else 0.0,
            1.0 if left else 0.0,
            1.0 if left_dist else 0.0,
            1.0 if note_leave_dist and not (note_leave_dist & c.toks) else 0.0,
            len(restate) / len(c.dist) if c.dist else 0.0,
            len(new) / len(note.dist) if note.dist else 0.0,
            1.0 if back else 0.0,
            1.0 if note.change else 0.0,
            1.0 if note.hedge else 0.0,
            1.0 if note.question else 0.0,
            1.0 if c.hedge or c.question else 0.0,
            1.0 if refers(note, c.ident) else 0.0,
            1.0 / (1 + i),
            1.0 / (1 + recency[i]),
            1.0 if not is_default(scope) and not is_default(cand_scopes[i]) else 0.0,
            1.0 if note.long else 0.0,
            1.0 if c.long else 0.0,
            _jacc(note.title, c.title) if note.long and c.long else 0.0,
            (1.0 if left else 0.0) * x_cos,
            (1.0 if note.change else 0.0) * x_cos,
            math.log1p(n),
            float(sum(1 for j in range(n) if created[j] > created[i] and sim[j] >= sim[i] - 0.05)),
            sim[i] - max((sim[j] for j in range(n) if j != i), default=0.0),
            1.0 if chained[i] else 0.0,
            1.0 if note.keep else 0.0,
            1.0 if note.decides else 0.0,
            1.0 if note.reports else 0.0,
            1.0 if c.decides else 0.0,
            1.0 if c.reports else 0.0,
            len(note.toks - c.toks) / len(note.toks) if note.toks else 0.0,
            *frame(note, c),
        ]
        rows.append(row)
    return rows


_LEAVE, _COS, _EMB = FEATURES.index("leave_hit"), FEATURES.index("cos_dec"), FEATURES.index("has_emb")
_JACC, _SHARED, _FULL = FEATURES.index("jacc"), FEATURES.index("shared"), FEATURES.index("cos_full")


def plausible_ranked(
    probs: Sequence[float],
    rows: Sequence[Sequence[float]],
    abstain_at: float,
    subject_at: float,
    subject_at_full: float,
) -> list[int]:
    """The candidates that may be the note's predecessor, likeliest first: the model gives it at
    least ``abstain_at``, the note leaves its words, or it is on the note's subject (decision-part
    cosine at least ``subject_at`` or whole-note cosine at least ``subject_at_full``; without
    embeddings, enough shared words). Never none for a pair that may be a replacement. The
    linker lists ``MAX_LISTED`` of them (``listed``); ``lab.train_linker`` calibrates
    ``abstain_at`` against this same rule (the shipped model's ``abstain_at`` was calibrated
    when the list was the first ``MAX_LISTED``)."""

    def same_subject(r: Sequence[float]) -> bool:
        if r[_EMB]:
            return r[_COS] >= subject_at or r[_FULL] >= subject_at_full
        return r[_JACC] >= NO_EMBEDDING_JACCARD and r[_SHARED] >= math.log1p(2)

    ranked = sorted(range(len(probs)), key=lambda i: -probs[i])
    return [i for i in ranked if probs[i] >= abstain_at or rows[i][_LEAVE] > 0 or same_subject(rows[i])]


def listed(plausible: Sequence[int], rows: Sequence[Sequence[float]]) -> list[int]:
    """The ``MAX_LISTED`` candidates an abstention shows, from ``plausible`` (likeliest first):
    the model's likeliest, with the last place kept for the plausible candidate closest to the
    note by meaning (decision-part cosine; without embeddings, shared words) when the model ranks
    it lower. The model's order among candidates it thinks unlikely is weak where it never
    learned the wording: a restated fact with a new value ("The employer of Ann is Vohul" after
    "... is Tenzuzu") restates the candidate's names and brings few new ones, which the model
    reads as a follow-up, so it ranked the true predecessor below other people's facts."""
    top = list(plausible[:MAX_LISTED])
    if len(plausible) <= MAX_LISTED:
        return top

    def close(i: int) -> float:
        r = rows[i]
        return r[_COS] if r[_EMB] else r[_JACC]

    nearest = max(plausible, key=close)
    if nearest not in top:
        top[-1] = nearest
    return top


def _tree_sum(trees: Sequence[Mapping[str, Sequence[float]]], x: Sequence[float]) -> float:
    """The sum of the trees' leaves for ``x``, walking the arrays (what ``_compile_trees`` compiles)."""
    total = 0.0
    for t in trees:
        feature, threshold, left, right, value = t["f"], t["t"], t["l"], t["r"], t["v"]
        k = 0
        while feature[k] >= 0:
            k = int(left[k]) if x[int(feature[k])] <= threshold[k] else int(right[k])
        total += value[k]
    return total


def _compile_trees(trees: Sequence[Mapping[str, Sequence[float]]]) -> Callable[[Sequence[float]], float]:
    """``_tree_sum`` as one Python function of nested ifs, one block per tree: the same
    comparisons (each threshold written with ``repr``, which reads back as the same float) and
    the leaves added in the same order, so the same sum to the last bit; about 8 times faster
    than walking the arrays (a long note has 20 candidates, each through every tree)."""
    lines = ["def walk(x):", "    total = 0.0"]

    def emit(t: Mapping[str, Sequence[float]], k: int, depth: int) -> None:
        pad = "    " * depth
        f = t["f"][k]
        if f < 0:
            lines.append(f"{pad}total += {float(t['v'][k])!r}")
            return
        lines.append(f"{pad}if x[{int(f)}] <= {float(t['t'][k])!r}:")
        emit(t, int(t["l"][k]), depth + 1)
        lines.append(f"{pad}else:")
        emit(t, int(t["r"][k]), depth + 1)

    for t in trees:
        emit(t, 0, 1)
    lines.append("    return total")
    namespace: dict[str, Any] = {}
    try:
        exec(compile("\n".join(lines), "<pair_model trees>", "exec"), namespace)  # our own model's numbers only
    except (SyntaxError, RecursionError, MemoryError, ValueError):  # trees too deep to compile: walk them
        return functools.partial(_tree_sum, trees)
    return namespace["walk"]  # type: ignore[no-any-return]


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass(frozen=True, slots=True)
class PairModel:
    """The pair model, one of two kinds (``kind`` in the JSON file):

    - ``lr``: standardised logistic regression, p = sigmoid(b + sum w * (x - mean) / scale);
    - ``gbt``: gradient-boosted trees, p = sigmoid(init + rate * sum of the trees' leaves), each
      tree as parallel arrays (feature, threshold, left, right, value; feature -1 is a leaf).
    """

    kind: str
    link_at: float
    abstain_at: float
    link_at_long: float | None = None  # when the note or the candidate is long (None: ``link_at``)
    subject_at: float = 1.0  # decision-part cosine from which a candidate is on the note's subject
    subject_at_full: float = 1.0  # whole-note cosine from which it is (1.0, an older file: never)
    weights: tuple[float, ...] = ()
    mean: tuple[float, ...] = ()
    scale: tuple[float, ...] = ()
    intercept: float = 0.0
    trees: tuple[Mapping[str, Sequence[float]], ...] = ()
    rate: float = 0.1
    features: tuple[str, ...] = FEATURES
    meta: Mapping[str, Any] | None = None
    # the trees as one compiled function (``_compile_trees``), made by the first ``prob``
    _walk: list[Callable[[Sequence[float]], float]] = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def load(cls, path: Path | str = MODEL_FILE) -> PairModel:
        """The model in ``path``; one instance per file version in a process (so the trees are
        compiled once, not once per linker: the bench builds a service per scenario)."""
        p = Path(path)
        st = p.stat()
        key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
        model = _LOADED.get(key)
        if model is None:
            model = _LOADED[key] = cls._read(p)
        return model

    @classmethod
    def _read(cls, path: Path) -> PairModel:
        data = json.loads(path.read_text(encoding="utf-8"))
        if tuple(data["features"]) != FEATURES:
            raise ValueError(f"{path}: features {data['features']} do not match this linker's {FEATURES}")
        return cls(
            kind=data["kind"],
            link_at=float(data["link_at"]),
            link_at_long=float(data["link_at_long"]) if data.get("link_at_long") is not None else None,
            abstain_at=float(data["abstain_at"]),
            subject_at=float(data.get("subject_at", 1.0)),
            subject_at_full=float(data.get("subject_at_full", 1.0)),
            weights=tuple(data.get("weights", ())),
            mean=tuple(data.get("mean", ())),
            scale=tuple(data.get("scale", ())),
            intercept=float(data.get("intercept", 0.0)),
            trees=tuple(data.get("trees", ())),
            rate=float(data.get("rate", 0.1)),
            features=tuple(data["features"]),
            meta=data.get("training"),
        )

    def prob(self, x: Sequence[float]) -> float:
        z = self.intercept
        if self.kind == "gbt":
            if not self._walk:
                self._walk.append(_compile_trees(self.trees))
            return _sigmoid(z + self.rate * self._walk[0](x))
        for w, v, m, s in zip(self.weights, x, self.mean, self.scale, strict=True):
            z += w * (v - m) / s
        return _sigmoid(z)


_LOADED: dict[tuple[str, int, int], PairModel] = {}


class PairLinker:
    """Link, abstain or none from a learned pair model (see the module docstring).

    ``embedder``: anything with ``encode(texts) -> vectors`` (L2-normalised rows), as the scored
    linker takes; without one the embedding features are 0 and the model leans on words.
    ``lookup``: the store's ``get_many``, to read a candidate's earlier versions (reverts).
    """

    def __init__(
        self,
        embedder: object | None = None,
        *,
        lookup: Lookup | None = None,
        model: PairModel | None = None,
        link_at: float | None = None,
        abstain_at: float | None = None,
        cache_size: int = 4096,
        cross: PairScorer | None = None,
    ) -> None:
        self.cache_size = cache_size  # texts whose reading and embedding are kept
        self.embedder = embedder
        self.cross = cross
        self.lookup = lookup
        self.model = model or PairModel.load()
        self.link_at = self.model.link_at if link_at is None else link_at
        long_at = self.model.link_at_long
        self.link_at_long = max(self.link_at, long_at) if long_at is not None and link_at is None else self.link_at
        self.abstain_at = self.model.abstain_at if abstain_at is None else abstain_at
        emb = getattr(embedder, "name", None) if embedder is not None else None
        self.name = f"{NAME}/{VERSION}" + (f"+{emb}" if emb else "") + (f"+{cross.name}" if cross is not None else "")
        self._reads: dict[str, _Read] = {}
        self._vectors: dict[str, Any] = {}

    # ------------------------------------------------------------------ protocol

    abstains = True
    #: ``decide`` takes the candidates' cosine similarities from the caller's search (no re-embedding).
    takes_similarities = True
    #: ``decide`` takes ``scope_inferred`` and lists candidates whose scope differs only by a guess.
    reads_inferred_scopes = True

    def prepare(self, text: str) -> None:
        """What ``decide`` will need of the note itself, computed now: its reading, and the
        vector of its decision part when that is not the note's own embedded text (a long
        document whose Decision section lies beyond ``EMBEDDED_PREFIX_CHARS``). The service
        calls this on a pool thread before it embeds the note itself and searches the
        candidates, so it runs while they do (the embeddings run in onnxruntime, without the
        GIL), and ``decide`` finds both in the caches; the same vectors either way. Never
        raises: a failure here only leaves the work to ``decide``."""
        try:
            note = self._read(text)
            key = _part_key(text, note.part)
            if self.embedder is not None and key != text:
                self._embed([key])  # the note's own text is the service's to embed (and cached there)
        except Exception:  # decide embeds (and reports) it again
            return

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        decision = self.decide(text, scope, candidates)
        return decision.proposal if decision.kind == "link" else None

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        scope_inferred: bool = False,
    ) -> LinkDecision:
        """``similarities``: node id -> cosine of the note and that node's whole text, as the
        service's hybrid search measured it; used instead of embedding those candidates again.
        ``scope_inferred``: the note's ``scope`` was inferred from its text, not given.

        A candidate in another scope is kept when the difference rests on an inferred scope
        (``scope.may_list``): it may be listed for the agent, never linked."""
        nodes = [
            c
            for c in candidates
            if c.status == "active"
            and may_list(scope, c.scope, a_inferred=scope_inferred, b_inferred=c.scope_source == "inferred")
        ]
        linkable = [scope_compatible(scope, c.scope) for c in nodes]
        if not nodes:
            return LinkDecision(kind="none", reason="no active candidate")
        probs, rows = self.score(text, scope, nodes, similarities)
        ranked = sorted(range(len(nodes)), key=lambda i: -probs[i])
        b = next((i for i in ranked if linkable[i]), None)
        ref = FEATURES.index("explicit_ref")
        note = self._read(text)
        declared = (
            [i for i in ranked if linkable[i] and declares(note, self._read(nodes[i].raw_text).ident)]
            if note.decl_sents
            else []
        )
        named = [*declared, *(i for i in ranked if rows[i][ref] > 0 and linkable[i] and i not in declared)]
        if len(declared) == 1:
            # "Supersedes ADR 7.", "This PEP replaces PEP 215.": the record declares it replaces one
            # candidate. A link on its own.
            i = declared[0]
            proposal = self._proposal(nodes[i], max(probs[i], EXPLICIT_REFERENCE), rows[i], declared=True)
            return LinkDecision(
                kind="link",
                proposal=proposal,
                candidates=((nodes[i].id, proposal.confidence),),
                why=("declares it replaces it",),
                reason="the note declares it replaces the candidate",
            )
        plausible = plausible_ranked(probs, rows, self.abstain_at, self.model.subject_at, self.model.subject_at_full)
        # A record named with a replacing verb is listed first (a competing proposal, a partial or
        # scoped amendment, an alternative: the agent judges), whatever the model's rank.
        plausible = [*named, *(i for i in plausible if i not in named)]
        if b is not None and probs[b] >= self._link_at(rows[b]):
            top = [b, *(i for i in plausible if i != b)][:MAX_LISTED]
            return LinkDecision(
                kind="link",
                proposal=self._proposal(nodes[b], probs[b], rows[b]),
                candidates=tuple((nodes[i].id, round(probs[i], 3)) for i in top),
                why=tuple(self._why(probs[i], rows[i]) for i in top),
                reason="pair model",
            )
        sure = [i for i in plausible if linkable[i]][:MAX_LISTED]  # what a second reading may link
        if sure and self.cross is not None:
            crossed = self._cross(text, nodes, sure, probs, rows)
            if crossed is not None:
                return crossed
        if plausible:
            top = listed(plausible, rows)
            return LinkDecision(
                kind="abstain",
                candidates=tuple((nodes[i].id, round(probs[i], 3)) for i in top),
                why=tuple(self._why(probs[i], rows[i]) for i in top),
                reason="plausible predecessor below the link threshold",
            )
        return LinkDecision(kind="none", reason="no candidate is a plausible predecessor")

    def _cross(
        self,
        text: str,
        nodes: Sequence[MemoryNode],
        top: Sequence[int],
        probs: Sequence[float],
        rows: Sequence[Sequence[float]],
    ) -> LinkDecision | None:
        """The cross-encoder's reading of the plausible candidates the pair model was unsure of.
        Each gets ``logit(pair model p) + weight * encoder logit`` (both calibrated by the
        encoder's exporter on held-back development notes); the best one is linked when its
        score reaches ``link_score``, else None (the pair model's abstention stands). A scorer
        failure only loses this second reading."""
        assert self.cross is not None
        try:
            weight, link_score = float(self.cross.weight), float(self.cross.link_score)
            if not math.isfinite(link_score):  # calibrated to never link (no score showed the precision)
                return None  # so the encoder is not run: it could only cost time
            z = self.cross.logits([(cross_text(text), cross_text(nodes[i].raw_text)) for i in top])
        except Exception:
            return None
        combined = [_logit(probs[i]) + weight * z[k] for k, i in enumerate(top)]
        j = max(range(len(top)), key=lambda k: combined[k])
        if not combined[j] >= link_score:
            return None
        b = top[j]
        order = [b, *(i for i in top if i != b)]
        # confidence: 0.98 at the threshold (what it was calibrated for), rising above it
        confidence = _sigmoid(combined[j] - link_score + _logit(0.98))
        proposal = self._proposal(nodes[b], confidence, rows[b], cross=(z[j], combined[j], link_score, probs[b]))
        return LinkDecision(
            kind="link",
            proposal=proposal,
            candidates=tuple((nodes[i].id, round(probs[i], 3)) for i in order),
            why=tuple(
                self._why(probs[i], rows[i]) + f", cross-encoder p={_sigmoid(z[top.index(i)]):.2f}" for i in order
            ),
            reason="cross-encoder",
        )

    def _link_at(self, row: Sequence[float]) -> float:
        """The link threshold of this pair's regime: long documents have their own."""
        long = row[FEATURES.index("note_long")] or row[FEATURES.index("cand_long")]
        return self.link_at_long if long else self.link_at

    # ------------------------------------------------------------------ scoring

    def score(
        self,
        text: str,
        scope: str | None,
        nodes: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
    ) -> tuple[list[float], list[list[float]]]:
        """The model's probability and feature vector for each (note, candidate) pair."""
        rows = self.features(text, scope, nodes, similarities)
        return [self.model.prob(r) for r in rows], rows

    def features(
        self,
        text: str,
        scope: str | None,
        nodes: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
    ) -> list[list[float]]:
        note = self._read(text)
        cands = [self._read(c.raw_text) for c in nodes]
        k = len(nodes)
        sims = similarities or {}
        cos_full: list[float | None] = [sims.get(c.id) for c in nodes]
        cos_dec: list[float | None] = [None] * k
        note_key = _part_key(text, note.part)
        for i, c in enumerate(cands):
            # both decision parts are their notes' embedded text: the search's cosine is theirs too
            if cos_full[i] is not None and note_key == text and _part_key(c.text, c.part) == c.text:
                cos_dec[i] = cos_full[i]
        need = [i for i in range(k) if cos_full[i] is None or cos_dec[i] is None]
        if self.embedder is not None and need:
            keys = [text, note_key]
            for i in need:
                keys += [nodes[i].raw_text, _part_key(cands[i].text, cands[i].part)]
            try:
                vs = self._embed(keys)
            except Exception:  # an embedder failure only loses these features
                vs = None
            if vs is not None:
                for j, i in enumerate(need):
                    if cos_full[i] is None:
                        cos_full[i] = _dot(vs[0], vs[2 + 2 * j])
                    cos_dec[i] = _dot(vs[1], vs[3 + 2 * j])
        if any(c is None for c in cos_dec):  # the model knows "a cosine for every candidate" or "none"
            cos_full, cos_dec = [None] * k, [None] * k
        history = self._history(nodes) if note.back_to else [frozenset()] * len(nodes)
        return pair_features(
            note,
            cands,
            cos_full,
            cos_dec,
            [c.created_at for c in nodes],
            (scope, [c.scope for c in nodes]),
            history,
            [c.supersedes is not None for c in nodes],
        )

    def _read(self, text: str) -> _Read:
        r = self._reads.get(text)
        if r is None:
            if len(self._reads) > self.cache_size:
                self._reads.clear()
            r = self._reads[text] = read(text)
        return r

    def _embed(self, texts: list[str]) -> list[Any]:
        found = {t: self._vectors[t] for t in texts if t in self._vectors}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            vectors = self.embedder.encode(missing)  # type: ignore[union-attr]
            if len(self._vectors) + len(missing) > self.cache_size:
                self._vectors.clear()
            for t, v in zip(missing, vectors, strict=True):
                self._vectors[t] = found[t] = [float(x) for x in v]
        return [found[t] for t in texts]

    def _history(self, nodes: Sequence[MemoryNode]) -> list[frozenset[str]]:
        """Content words of each candidate's earlier versions (for "back to X")."""
        out: list[set[str]] = [set() for _ in nodes]
        if self.lookup is None:
            return [frozenset()] * len(nodes)
        heads = {k: n.supersedes for k, n in enumerate(nodes) if n.supersedes}
        for _ in range(HISTORY_DEPTH):
            if not heads:
                break
            try:
                found = self.lookup(set(heads.values()))  # type: ignore[arg-type]
            except Exception:
                break
            nxt: dict[int, str | None] = {}
            for k, pid in heads.items():
                prev = found.get(pid)  # type: ignore[arg-type]
                if prev is None:
                    continue
                out[k] |= self._read(prev.raw_text).toks
                if prev.supersedes:
                    nxt[k] = prev.supersedes
            heads = nxt
        return [frozenset(s) for s in out]

    # ------------------------------------------------------------------ output

    def _why(self, p: float, row: Sequence[float]) -> str:
        """A few words on why a candidate is listed (remember's answer shows them)."""
        f = dict(zip(FEATURES, row, strict=True))
        parts = [f"p={p:.2f}"]
        if f["explicit_ref"]:
            parts.append("names its identifier")
        if f["leave_hit"]:
            parts.append("the note leaves its words")
        if f["back_hit"]:
            parts.append("goes back to its chain")
        if f["has_emb"]:
            parts.append(f"cosine {f['cos_dec']:.2f}")
        elif f["shared"]:
            parts.append(f"{math.expm1(f['shared']):.0f} shared words")
        return ", ".join(parts)

    def _proposal(
        self,
        node: MemoryNode,
        p: float,
        row: Sequence[float],
        cross: tuple[float, float, float, float] | None = None,
        declared: bool = False,
    ) -> LinkProposal:
        f = dict(zip(FEATURES, row, strict=True))
        if cross is not None:
            evidence = [
                f"cross-encoder p={_sigmoid(cross[0]):.3f}, with the pair model's p={cross[3]:.3f}: "
                f"score {cross[1]:.2f} (link at {cross[2]:.2f}); the pair model alone was unsure"
            ]
        else:
            evidence = [f"pair model p={p:.3f} (link at {self._link_at(row):.3f})"]
        if f["has_emb"]:
            evidence.append(f"decision cosine: {f['cos_dec']:.3f}")
        if f["leave_hit"]:
            evidence.append("the note puts the candidate's words in a leaving position")
        if declared:
            evidence.append("the note declares it replaces the candidate's identifier")
        elif f["explicit_ref"]:
            evidence.append("the note names the candidate's identifier with a replacing verb")
        if f["back_hit"]:
            evidence.append("the note goes back to a word of the candidate's chain")
        evidence.append(f"shared words: {math.expm1(f['shared']):.0f}")
        return LinkProposal(
            target_id=node.id, confidence=round(min(0.99, p), 3), method=NAME, evidence=tuple(evidence), by=self.name
        )


def cross_text(text: str) -> str:
    """What the cross-encoder reads of a note: itself, or a long document's title and decision part."""
    return text if len(text) <= dt.SHORT_NOTE_CHARS else dt.search_text(text)


#: A decision part within this many leading characters of its note is covered by the note's own
#: embedding (the model reads about 256 word pieces): the note's vector stands for it, no second one.
EMBEDDED_PREFIX_CHARS = 1000


def _part_key(text: str, part: str) -> str:
    """The text to embed for a decision part: the note itself when the part lies in its embedded prefix."""
    return text if part in text[:EMBEDDED_PREFIX_CHARS] else part


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    # the same products added in the same order as ``sum(x * y for x, y in zip(a, b))``
    return float(sum(map(operator.mul, a, b)))
