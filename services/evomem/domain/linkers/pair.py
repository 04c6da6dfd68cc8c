"""The pair linker: an open-vocabulary model of "does this note replace that decision".

Every active candidate with a compatible scope (the service finds them by BM25 and embeddings,
whatever they are about; a candidate whose scope differs only by a scope inferred from a text,
``scope.may_list``, is listed but never linked) is scored as a pair (new note, candidate) by the
pair model (``pair_model.PairModel``) over features that name no product, component or topic
(``pair_features``), read from each text once (``pair_reading``).

A record that *declares* it replaces exactly one candidate ("Supersedes ADR 7." as a header line,
"This policy replaces POL-3.": ``pair_reading.declares``) is a link on its own. Any other sentence
that names a candidate's identifier with a replacing verb ("NATS would replace ADR-7's broker", "For
the EU only, this record replaces DG-5", "- Replacing ADR-12 with X" among the alternatives) is a
feature of the model and puts that candidate first in the list, never a link by itself: on
development records written to test it (lab/devdata dev-g), such a mention was a supersession in 21
of 41 cases, the declarations in 36 of 36 (``python -m lab.explicit_refs``).

The model is the caller's: the composition root passes the shipped one
(``evomem.adapters.models.pair_weights.shipped_pair_model``: ``pair/pair_model.json`` there, written by
``lab/train_linker.py`` with what it was trained on, files and sha256, seed, thresholds,
cross-validated precision and recall, and pinned by its sha256 in ``pins.json`` beside it).

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

**Calibrated offers** (a model file with ``offer_at``: the shipped one since 2026-12-06). What the
agent reads is the model's probability through its calibration (``PairModel.calibration``, isotonic,
fitted out of fold on hand-written development notes by ``lab/offers.py``; a pair of long documents
reads ``calibration_long`` when the file has one): the probability that the note replaces that
decision. Before any pair is scored, ``_gate`` drops what cannot be a
replacement: a note that decides nothing (a question, a reminder, a report: the ``decides`` model
over its words, learned from data) gets no offer, a candidate that decides nothing is never offered,
and a candidate whose scope differs from the note's (listed because a scope was inferred from a text)
is offered only when the note names its scope. Then only candidates at or above ``offer_at`` are
offered (``abstain``), and the best links at ``link_at`` (the ``pair`` auto linker, opt-in). Each
offer's reason gives the probability, what changes as read from the two decision parts
(``changes``: "Postgres -> SQLite") or that no option changes (a restatement?), and another scope
when there is one. Without ``offer_at`` (an older file) the rules below apply.

An optional second reading (``cross``, the ``PairScorer`` port; off unless the composition root
passes one, ``EVOMEM_LINKER_CROSS_ENCODER``): where the model would abstain, a cross-encoder reads
each listed candidate together with the note, and the best one links when
``logit(p) + weight * its logit`` reaches its calibrated ``link_score`` (``_cross``; not run at all
when the calibration found none, ``inf``: the shipped encoder since 2026-12-06).

A candidate's earlier versions (for "back to X") come from ``decide(..., earlier=)`` when the caller
read them, else from ``lookup`` (the store's ``get_many``); the same versions give the same features.

Cost on long documents: a text's reading (``pair_reading.Reading``: decision part, its tokens and
windows, the sentences with a replacing verb that ``refers`` searches) and its vectors are cached by
text (``cache_size`` texts each, so a candidate is read once, not on every remember), and what only a
note's reading uses (its leaving and back-to windows, change and keep cues) is read on first use; the
trees are compiled once per model into one function of nested ifs; ``prepare`` embeds a long note's
decision part ahead, while the service searches the candidates. None of these changes a feature's
value (``lab/tests/test_pair_cheaper_rows.py`` compares the cheaper paths with the old ones).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evomem.domain.linkers import decision_text as dt
from evomem.domain.linkers.history import Lookup, versions_from
from evomem.domain.linkers.pair_features import FEATURES, MAX_LISTED, listed, pair_features, plausible_ranked
from evomem.domain.linkers.pair_model import PairModel, is_long, logit, sigmoid
from evomem.domain.linkers.pair_reading import Reading, declares, read
from evomem.domain.linkers.vocabulary import CUE_WORDS
from evomem.domain.model import LinkDecision, LinkProposal, MemoryNode
from evomem.domain.scope import compatible as scope_compatible
from evomem.domain.scope import infer_scope, may_list, normalise

if TYPE_CHECKING:
    from evomem.domain.linkers.contracts import Embedder, PairScorer

NAME = "pair"
VERSION = "1"
HISTORY_DEPTH = 3
EXPLICIT_REFERENCE = 0.9  # confidence of a link on a record's declaration that it replaces the candidate


class PairLinker:
    """Link, abstain or none from a learned pair model (see the module docstring).

    ``embedder``: anything with ``encode(texts) -> vectors`` (L2-normalised rows), as the scored
    linker takes; without one the embedding features are 0 and the model leans on words.
    ``model``: the pair model (required; the composition root passes the shipped one,
    ``evomem.adapters.models.pair_weights.shipped_pair_model``).
    ``lookup``: the store's ``get_many``, to read a candidate's earlier versions (reverts) when
    ``decide`` is not given them (``earlier``).
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        model: PairModel,
        lookup: Lookup | None = None,
        link_at: float | None = None,
        abstain_at: float | None = None,
        offer_at: float | None = None,
        cache_size: int = 4096,
        cross: PairScorer | None = None,
    ) -> None:
        self.cache_size = cache_size  # texts whose reading and embedding are kept
        self.embedder = embedder
        self.cross = cross
        self.lookup = lookup
        if model is None:
            raise TypeError(
                "PairLinker needs its model: pass model=, the shipped one is "
                "evomem.adapters.models.pair_weights.shipped_pair_model()"
            )
        self.model = model
        self.link_at = self.model.link_at if link_at is None else link_at
        long_at = self.model.link_at_long
        self.link_at_long = max(self.link_at, long_at) if long_at is not None and link_at is None else self.link_at
        self.abstain_at = self.model.abstain_at if abstain_at is None else abstain_at
        # a calibrated model offers from this probability (None: the older rules, ``plausible_ranked``)
        self.offer_at = self.model.offer_at if offer_at is None else offer_at
        emb = embedder.name if embedder is not None else None
        self.name = f"{NAME}/{VERSION}" + (f"+{emb}" if emb else "") + (f"+{cross.name}" if cross is not None else "")
        self._reads: dict[str, Reading] = {}
        self._vectors: dict[str, Any] = {}

    # ------------------------------------------------------------------ protocol

    abstains = True

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

    def wants_candidates(self, text: str) -> bool:
        """False exactly when ``_gate`` answers "the note decides nothing" whatever the candidates:
        a calibrated model's ``decides`` rejects the note and it declares no replacement (a note
        with a replacing sentence, "Supersedes ADR 7", is judged: it may name a candidate)."""
        dm = self.model.decides
        if self.offer_at is None or dm is None:
            return True
        try:
            return dm.decides(text) or bool(self._read(text).decl_sents)
        except Exception:  # decide reads (and reports) it again
            return True

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
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> LinkDecision:
        """``similarities``: node id -> cosine of the note and that node's whole text, as the
        service's hybrid search measured it; used instead of embedding those candidates again.
        ``scope_inferred``: the note's ``scope`` was inferred from its text, not given.
        ``earlier``: the candidates' earlier versions by id, as the caller read them (at least
        ``HISTORY_DEPTH`` back); read instead of ``lookup``.

        A candidate in another scope is kept when the difference rests on an inferred scope
        (``scope.may_list``): it may be listed for the agent, never linked."""
        nodes = [
            c
            for c in candidates
            if c.status == "active"
            and may_list(scope, c.scope, a_inferred=scope_inferred, b_inferred=c.scope_source == "inferred")
        ]
        if self.offer_at is not None:
            gated = self._gate(text, scope, nodes)
            if isinstance(gated, LinkDecision):
                return gated
            nodes = gated
        linkable = [scope_compatible(scope, c.scope) for c in nodes]
        if not nodes:
            return LinkDecision(kind="none", reason="no active candidate")
        probs, rows = self.score(text, scope, nodes, similarities, earlier)
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
        if self.offer_at is not None:  # calibrated: what reaches the probability is offered, nothing else
            plausible = [i for i in ranked if probs[i] >= self.offer_at]
            named = [i for i in named if probs[i] >= self.offer_at]
        else:
            plausible = plausible_ranked(
                probs, rows, self.abstain_at, self.model.subject_at, self.model.subject_at_full
            )
        # A record named with a replacing verb is listed first (a competing proposal, a partial or
        # scoped amendment, an alternative: the agent judges), whatever the model's rank.
        plausible = [*named, *(i for i in plausible if i not in named)]
        if b is not None and probs[b] >= max(self._link_at(rows[b]), self.offer_at or 0.0):
            top = [b, *(i for i in plausible if i != b)][:MAX_LISTED]
            return LinkDecision(
                kind="link",
                proposal=self._proposal(nodes[b], probs[b], rows[b]),
                candidates=tuple((nodes[i].id, round(probs[i], 3)) for i in top),
                why=tuple(self._why(probs[i], rows[i], text, nodes[i], scope) for i in top),
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
                why=tuple(self._why(probs[i], rows[i], text, nodes[i], scope) for i in top),
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
        combined = [logit(probs[i]) + weight * z[k] for k, i in enumerate(top)]
        j = max(range(len(top)), key=lambda k: combined[k])
        if not combined[j] >= link_score:
            return None
        b = top[j]
        order = [b, *(i for i in top if i != b)]
        # confidence: 0.98 at the threshold (what it was calibrated for), rising above it
        confidence = sigmoid(combined[j] - link_score + logit(0.98))
        proposal = self._proposal(nodes[b], confidence, rows[b], cross=(z[j], combined[j], link_score, probs[b]))
        return LinkDecision(
            kind="link",
            proposal=proposal,
            candidates=tuple((nodes[i].id, round(probs[i], 3)) for i in order),
            why=tuple(
                self._why(probs[i], rows[i], text, nodes[i]) + f", cross-encoder p={sigmoid(z[top.index(i)]):.2f}"
                for i in order
            ),
            reason="cross-encoder",
        )

    def _gate(self, text: str, scope: str | None, nodes: Sequence[MemoryNode]) -> list[MemoryNode] | LinkDecision:
        """A calibrated model's gates, before any pair is scored: a note that decides nothing
        gets no offer, a candidate that decides nothing is never offered (``decides``), unless
        the note declares it replaces it; a candidate in another scope (one the service listed
        because a scope was inferred from a text) is offered only when the note names that
        scope."""
        dm = self.model.decides
        note = self._read(text)
        declared = {c.id for c in nodes if note.decl_sents and declares(note, self._read(c.raw_text).ident)}
        if dm is not None and not declared and not dm.decides(text):
            return LinkDecision(kind="none", reason=f"the note decides nothing (p={dm.p(text):.2f})")
        kept = []
        for c in nodes:
            if c.id in declared:
                kept.append(c)
                continue
            if dm is not None and not dm.decides(c.raw_text):
                continue
            if not scope_compatible(scope, c.scope) and not names_scope(text, c.scope):
                continue
            kept.append(c)
        return kept

    def _link_at(self, row: Sequence[float]) -> float:
        """The link threshold of this pair's regime: long documents have their own."""
        return self.link_at_long if is_long(row) else self.link_at

    # ------------------------------------------------------------------ scoring

    def score(
        self,
        text: str,
        scope: str | None,
        nodes: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> tuple[list[float], list[list[float]]]:
        """The model's probability and feature vector for each (note, candidate) pair."""
        rows = self.features(text, scope, nodes, similarities, earlier)
        return [self.model.prob(r) for r in rows], rows

    def features(
        self,
        text: str,
        scope: str | None,
        nodes: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> list[list[float]]:
        """One row of ``pair_features`` per candidate (see ``decide`` for the arguments)."""
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
        history = self._history(nodes, earlier) if note.back_to else [frozenset()] * len(nodes)
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

    def _read(self, text: str) -> Reading:
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

    def _history(
        self, nodes: Sequence[MemoryNode], earlier: Mapping[str, MemoryNode] | None = None
    ) -> list[frozenset[str]]:
        """Content words of each candidate's earlier versions (for "back to X"), read from
        ``earlier`` when the caller gave them, else through ``lookup``."""
        out: list[set[str]] = [set() for _ in nodes]
        lookup = versions_from(self.lookup, earlier)
        if lookup is None:
            return [frozenset()] * len(nodes)
        heads = {k: n.supersedes for k, n in enumerate(nodes) if n.supersedes}
        for _ in range(HISTORY_DEPTH):
            if not heads:
                break
            try:
                found = lookup(set(heads.values()))  # type: ignore[arg-type]
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

    def _why(
        self, p: float, row: Sequence[float], text: str = "", node: MemoryNode | None = None, scope: str | None = None
    ) -> str:
        """A few words on why a candidate is listed (remember's answer shows them): the
        probability, what changes as read from the two texts, and any reason it may not be a
        replacement (another scope, a restatement, a partial change)."""
        f = dict(zip(FEATURES, row, strict=True))
        parts = [f"p={p:.2f}"]
        if node is not None:
            note = self._read(text)
            changed = changes(note, self._read(node.raw_text))
            parts.append(changed or "names no new option: may restate it")
            kept = dt.KEEP.search(note.part) if changed and note.keep else None
            if kept is not None:  # "only", "except", "still", "stays": some of it may stand
                parts.append(f'says "{kept.group(0).lower()}": may be a partial change')
            if not scope_compatible(scope, node.scope):
                parts.append(f"another scope: the note is {scope or 'unscoped'}, it is {node.scope or 'unscoped'}")
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
                f"cross-encoder p={sigmoid(cross[0]):.3f}, with the pair model's p={cross[3]:.3f}: "
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


def _cased(part: str) -> dict[str, str]:
    """Each lower-case token of ``part`` as it is first written there."""
    out: dict[str, str] = {}
    for w in _WORDS.findall(part):
        out.setdefault(w.lower().strip("_"), w)
    return out


_WORDS = re.compile(r"[\w.+#-]*\w", re.UNICODE)
CHANGE_WORDS = 2  # names or values shown on each side of a change


def changes(note: Reading, cand: Reading) -> str | None:
    """What changes from the candidate to the note, as read from their decision parts: what the
    note leaves (its words in a leaving position, "instead of X", "from X") or else the names and
    values (``decision_text.distinctive``) of the candidate the note does not repeat, against what
    the note brings (its names and values the candidate lacks, else its other new words):
    "PostgreSQL -> SQLite", "nightly -> hourly", "brings Kafka"; None when the note brings nothing."""
    old_case, new_case = _cased(cand.part), _cased(note.part)
    new = [new_case[w] for w in new_case if w in note.dist and w not in cand.toks and w not in cand.dist]
    left = [old_case[w] for w in old_case if w in note.leaving and (w in cand.toks or w in cand.dist)]
    if not new and left:  # "hourly instead of nightly": the new words nearest what the note leaves
        order = list(new_case)
        at = order.index(left[0].lower()) if left[0].lower() in order else 0
        fresh = [
            w for w in order if w in note.toks and w not in cand.toks and w not in note.leaving and w not in CUE_WORDS
        ]
        new = [new_case[w] for w in sorted(fresh, key=lambda w: abs(order.index(w) - at))]
    unsaid = [old_case[w] for w in old_case if w in cand.dist and w not in note.toks and w not in note.dist]
    old = (left or unsaid)[:CHANGE_WORDS]
    new = new[:CHANGE_WORDS]
    if old and new:
        return f"{', '.join(old)} -> {', '.join(new)}"
    if new:
        return f"brings {', '.join(new)}"
    if left:
        return f"drops {', '.join(left[:CHANGE_WORDS])}"
    return None


def names_scope(text: str, scope: str | None) -> bool:
    """Whether ``text`` names ``scope`` (each of its words, or the scope its own words place it in):
    a note about another scope than the candidate's may replace it only when it says so."""
    if scope is None:
        return False
    got = infer_scope(text)
    if got is not None and normalise(got.scope) == normalise(scope):
        return True
    words = set(dt.tokens(text))
    parts = [w for w in re.split(r"[^a-z0-9]+", scope.lower()) if w]
    return bool(parts) and all(w in words for w in parts)
