"""The scored linker (``--auto-supersede scored``): subject + option + change cue (+ embedding).

The safe one. It reads what each note decides (subject, option, the option it leaves, change
cue: ``evomem.domain.subject``, with the product catalogue ``evomem.domain.catalog``), links
only a note that chooses another option for the same subject, abstains when unsure, and
records its evidence as spans of the notes. See ``ScoredLinker``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from evomem.domain.catalog import product_kinds
from evomem.domain.linkers.history import Lookup, versions_from
from evomem.domain.linkers.vocabulary import words
from evomem.domain.model import LinkDecision, LinkKind, LinkProposal, MemoryNode
from evomem.domain.scope import compatible as scopes_compatible
from evomem.domain.subject import (
    LONG_NOTE_CHARS,
    Facts,
    analyse,
    identifier,
    lowercase_options,
    lowercase_vocabulary,
)
from evomem.domain.subject import references as analyse_references
from evomem.domain.subject_names import Mention
from evomem.domain.subject_words import name_concepts

if TYPE_CHECKING:
    from evomem.domain.linkers.contracts import Embedder

SCORED_NAME = "scored"
SCORED_VERSION = "1"

#: Base score of a candidate by how its subject relates to the note's.
RELATION_SCORE = {"exact": 0.55, "broader": 0.45, "narrower": 0.40}
PREV_HIT = 0.30  # the note names the candidate's option as the one it leaves
LEAVES_OTHER = 0.30  # the note names the option it leaves, and it is not the candidate's
REVERT_HIT = 0.15  # the note goes back to an option the candidate (or its chain) replaced
CHANGE = 0.10  # the note says something changed ("moved", "from here on", "is back")
OPTION_TYPE = 0.10  # the note's option is named elsewhere in the memory for the same concept
OPTION_TYPE_CLASH = 0.30  # ... or only for other concepts
BROADER_UNNAMED = 0.20  # the candidate is less specific than the note and its option is not named
UNIQUE = 0.15  # every plausible candidate is about the same thing
EMBEDDING = 0.05  # at most, either way, from the embedding similarity of the two notes
LINK_AT = 0.60
ABSTAIN_AT = 0.40
MARGIN = 0.15  # candidates on other subjects within this of the best: abstain
EXPLICIT_REFERENCE = 0.90
HISTORY_DEPTH = 4  # earlier versions read to learn what a terse candidate is about


@dataclass(slots=True)
class Candidate:
    node: MemoryNode
    facts: Facts
    subject: frozenset[str]  # its own subject, plus the concepts its earlier versions name
    core: frozenset[str]  # the part of the subject that can identify it (see ``Facts.core``)
    history: tuple[Facts, ...] = ()  # earlier versions of its chain, newest first
    score: float = 0.0
    relation: str = ""
    prev_hit: Mention | None = None
    revert_hit: Mention | None = None
    leaves_other: bool = False
    similarity: float | None = None
    notes: list[str] = field(default_factory=list)


def subject_relation(
    note: frozenset[str],
    cand: frozenset[str],
    note_core: frozenset[str] | None = None,
    cand_core: frozenset[str] | None = None,
) -> str:
    """exact | narrower (the note says less) | broader (it says more) | conflict | disjoint.

    Subjects that share only verb forms ("founded", "written") are disjoint: the cores
    (``Facts.core``) must meet."""
    shared = note & cand
    if not shared or not (note_core if note_core is not None else note) & (
        cand_core if cand_core is not None else cand
    ):
        return "disjoint"
    only_note, only_cand = note - cand, cand - note
    if not only_note and not only_cand:
        return "exact"
    if not only_note:
        return "narrower"
    if not only_cand:
        return "broader"
    return "conflict"


def _compatible(a: Candidate, b: Candidate) -> bool:
    return subject_relation(a.subject, b.subject, a.core, b.core) in RELATION_SCORE


def _one_topic(cands: Sequence[Candidate]) -> bool:
    """Whether every two candidates have compatible subjects (one contains the other)."""
    return all(_compatible(a, b) for i, a in enumerate(cands) for b in cands[i + 1 :])


def _concepts(tokens: Iterable[str]) -> frozenset[str]:
    return frozenset(t for t in tokens if t.startswith("@"))


def option_kinds(option: Mention, memory: Mapping[str, set[str]]) -> frozenset[str]:
    """What kind of thing an option is: what the memory says (the decisions that name it), else
    what its own name says ("Redis Streams", "GitLab CI"), else what the catalogue of well-known
    products says (``evomem.domain.catalog``: "CBOR" is a serialization format)."""
    return frozenset(memory.get(option.key) or ()) or name_concepts(option.text) or product_kinds(option.text)


def _aspect_from_option(
    facts: Facts, subject: frozenset[str], core: frozenset[str], memory: Mapping[str, set[str]]
) -> tuple[frozenset[str], frozenset[str], str | None]:
    """A decision that names no aspect ("From here on the ledger runs on Cognito") is about
    what its option is, when the option is of one kind only (Cognito: a login provider).
    Returns the subject and core, with that concept added, and the concept (or None)."""
    if _concepts(subject) or facts.option is None:
        return subject, core, None
    kinds = option_kinds(facts.option, memory)
    if len(kinds) != 1:
        return subject, core, None
    return subject | kinds, core | kinds, next(iter(kinds))


def _names_any(c: Candidate, known: frozenset[str]) -> bool:
    """Whether the candidate (or its history) has a word that is a known lowercase option."""
    return any(known & set(words(f.text)) for f in (c.facts, *c.history))


def _left_by_newer(best: Candidate, cands: Sequence[Candidate]) -> Mention | None:
    """A mention, in a newer candidate on the same topic, that leaves ``best``'s option."""
    option = best.facts.option
    if option is None:
        return None
    for c in cands:
        if c is best or c.node.created_at <= best.node.created_at or not _compatible(c, best):
            continue
        hit = next((m for m in c.facts.prev if m.key == option.key), None)
        if hit is not None and c.facts.decision_cue is not None:
            return hit
    return None


class ScoredLinker:
    """Subject + option + change cue (+ embedding) scoring: link, abstain, or none.

    For the new note and every candidate it reads (``evomem.domain.subject``) whether the
    text is a decision, the option it chooses and the options it leaves, and its subject
    (content words, paraphrases folded into concepts). A terse candidate ("Ledger runs on
    SQLite") inherits the concepts its earlier versions name, given with the candidates
    (``decide(..., earlier=)``) or read through ``lookup`` (the store's ``get_many``): a chain is
    one topic.

    A candidate can be replaced only when both notes are decisions, their scopes are
    compatible, their subjects agree (one contains the other) and the note chooses an option
    *other* than the candidate's: a note that names the candidate's option without leaving
    it ("the Redis cache had no incidents", "moved the SQLite file to a bigger disk")
    restates, it never replaces. The score adds the subject agreement, the candidate's
    option named as the one left ("from X", "X was overkill"), a revert to an option the
    candidate's chain replaced, a change cue, what the memory says about the option's kind,
    and (with an embedder) the similarity of the two notes. When candidates on different
    subjects fit about as well, or the best is below ``link_at``, it abstains and lists them;
    with no plausible candidate it says none. Among versions of one topic that are all still
    active (an earlier link was missed), it picks the one whose option the note leaves, else
    the newest.

    An explicit reference ("This PEP replaces PEP 215", "supersedes ADR-12") to a candidate
    whose first line carries that identifier is a link on its own.
    """

    abstains = True

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        lookup: Lookup | None = None,
        link_at: float = LINK_AT,
        abstain_at: float = ABSTAIN_AT,
        margin: float = MARGIN,
    ) -> None:
        self.embedder = embedder
        self.lookup = lookup
        self.link_at = link_at
        self.abstain_at = abstain_at
        self.margin = margin
        model = embedder.name if embedder is not None else None
        self.name = f"{SCORED_NAME}/{SCORED_VERSION}" + (f"+{model}" if model else "")
        self._vectors: dict[str, Any] = {}  # text -> embedding, bounded

    # ------------------------------------------------------------------ protocol

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        decision = self.decide(text, scope, candidates)
        return decision.proposal if decision.kind is LinkKind.LINK else None

    def prepare(self, text: str) -> None:
        """Nothing to do on the note alone ahead of ``decide``."""

    def wants_candidates(self, text: str) -> bool:
        """Always: whether the note decides is read against its candidates' vocabulary."""
        return True

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        scope_inferred: bool = False,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> LinkDecision:
        """Link, abstain or none (see the class docstring). ``earlier``: the candidates' earlier
        versions by id, as the caller read them (at least ``HISTORY_DEPTH`` back), read instead of
        ``lookup``. ``similarities`` and ``scope_inferred`` are not read: this linker embeds the
        notes it compares itself and never lists a candidate in another scope."""
        nodes = [c for c in candidates if c.status == "active" and scopes_compatible(scope, c.scope)]
        if not nodes:
            return LinkDecision(kind=LinkKind.NONE, reason="no active candidate with a compatible scope")
        explicit = self._explicit_reference(text, nodes)
        if explicit is not None:
            return explicit
        if len(text) > LONG_NOTE_CHARS:
            return LinkDecision(kind=LinkKind.NONE, reason="a long document: only explicit references are linked")
        history = self._history(nodes, earlier)
        vocab = lowercase_vocabulary(
            [text, *(c.raw_text for c in nodes), *(h.raw_text for hs in history.values() for h in hs)]
        )
        cands = [self._candidate(c, history.get(c.id, ()), vocab) for c in nodes]
        # Options the memory writes in lowercase ("cron") are names wherever they stand.
        known = lowercase_options(f for c in cands for f in (c.facts, *c.history))
        if known:
            cands = [
                self._candidate(c.node, history.get(c.node.id, ()), vocab, known) if _names_any(c, known) else c
                for c in cands
            ]
        note = analyse(text, vocab, scope=scope, known=known)
        if not note.is_decision:
            return LinkDecision(kind=LinkKind.NONE, reason="the note decides nothing (no decision cue and option)")
        memory_kinds = self._option_concepts(cands)
        note = self._typed_note(note, memory_kinds)
        for c in cands:
            c.subject, c.core, concept = _aspect_from_option(c.facts, c.subject, c.core, memory_kinds)
            if concept is not None:
                c.notes.append(f"its aspect is what its option is ({c.facts.option.text}: {concept})")  # type: ignore[union-attr]
        scored = [c for c in cands if self._score(note, c, memory_kinds)]
        if not scored:
            return LinkDecision(
                kind=LinkKind.NONE, reason="no candidate decision on the same subject with another option"
            )
        if self.embedder is not None:
            self._add_similarity(text, scored)
        if _one_topic(scored):
            for c in scored:
                c.score += UNIQUE
        scored.sort(key=lambda c: c.score, reverse=True)
        listed = tuple((c.node.id, round(min(c.score, 0.99), 3)) for c in scored if c.score >= self.abstain_at)[:5]
        top = scored[0].score
        contenders = [c for c in scored if c.score > top - self.margin]
        if not _one_topic(contenders):
            if top < self.abstain_at:
                return LinkDecision(kind=LinkKind.NONE, reason="weak candidates on different subjects")
            return LinkDecision(
                kind=LinkKind.ABSTAIN,
                candidates=listed or ((scored[0].node.id, round(top, 3)),),
                reason="candidates on different subjects fit the note about as well",
            )
        # One topic. Several of its versions may still be active (an earlier link was missed):
        # the one whose option the note leaves, else the newest, is the version in force. The
        # versions must be about one thing with each other too, not only with the best: a
        # terse best ("the audit log runs on Protobuf") fits every aspect of its component.
        topic = [c for c in scored if c.score >= self.abstain_at and all(_compatible(c, o) for o in contenders)]
        if not _one_topic(topic):
            topic = contenders
        best = max(topic or contenders, key=lambda c: (c.prev_hit is not None, c.node.created_at, c.score))
        best.score = max(best.score, top)
        if note.hedge is not None:
            # "We might move the ledger to SQLite", "considered Kafka, decided against it".
            best.score = min(best.score, self.link_at - 0.01)
            best.notes.append(f"the note hedges ({note.hedge!r})")
        if best.leaves_other:
            # The note names the option it leaves and it is not this one: the version it
            # replaces is not among the candidates. Never a link on that.
            best.score = min(best.score, self.link_at - 0.01)
        left = _left_by_newer(best, cands)
        if left is not None:
            # A newer note on the same topic already left this option ("Replacing Airflow with
            # ..."): this version is not in force, whatever that note chose. Never a link on it.
            best.score = min(best.score, self.link_at - 0.01)
            best.notes.append(f"a newer note leaves its option ({left.text!r})")
        if best.score >= self.link_at:
            return LinkDecision(kind=LinkKind.LINK, proposal=self._proposal(note, best), reason="; ".join(best.notes))
        if best.score >= self.abstain_at:
            return LinkDecision(kind=LinkKind.ABSTAIN, candidates=listed, reason="plausible but not sure")
        return LinkDecision(kind=LinkKind.NONE, reason="no candidate scores high enough")

    # ------------------------------------------------------------------ reading the candidates

    @staticmethod
    def _typed_note(note: Facts, memory: Mapping[str, set[str]]) -> Facts:
        """The note, with the aspect its option stands for when it names none (see
        ``_aspect_from_option``); the option's own words are that concept's evidence."""
        subject, core, concept = _aspect_from_option(note, note.subject, note.core, memory)
        if concept is None or note.option is None:
            return note
        spans = {**note.subject_spans, concept: note.option.text}
        return replace(note, subject=subject, core=core, subject_spans=spans)

    def _history(
        self, nodes: Sequence[MemoryNode], earlier: Mapping[str, MemoryNode] | None = None
    ) -> dict[str, list[MemoryNode]]:
        """Earlier versions of each candidate's chain (newest first): from ``earlier`` when the
        caller gave them, else through ``lookup`` when one is wired."""
        out: dict[str, list[MemoryNode]] = {n.id: [] for n in nodes}
        lookup = versions_from(self.lookup, earlier)
        if lookup is None:
            return out
        heads = {n.id: n.supersedes for n in nodes if n.supersedes}
        for _ in range(HISTORY_DEPTH):
            if not heads:
                break
            try:
                found = lookup(set(heads.values()))
            except Exception:  # history only sharpens the subject; never fail on it
                break
            nxt: dict[str, str] = {}
            for cid, pid in heads.items():
                prev = found.get(pid)  # type: ignore[arg-type]
                if prev is None or len(prev.raw_text) > LONG_NOTE_CHARS:
                    continue
                out[cid].append(prev)
                if prev.supersedes:
                    nxt[cid] = prev.supersedes
            heads = nxt
        return out

    @staticmethod
    def _candidate(
        node: MemoryNode, history: Sequence[MemoryNode], vocab: frozenset[str], known: frozenset[str] = frozenset()
    ) -> Candidate:
        facts = analyse(node.raw_text, vocab, scope=node.scope, known=known)
        past = tuple(analyse(h.raw_text, vocab, scope=h.scope, known=known) for h in history)
        subject, core = facts.subject, facts.core
        if not _concepts(subject):
            inherited = {
                c
                for p in past
                if subject_relation(subject, p.subject, core, p.core) in RELATION_SCORE
                for c in _concepts(p.subject)
            }
            if len(inherited) == 1:  # one concept for the whole chain, or none at all
                subject, core = subject | inherited, core | inherited
        return Candidate(node, facts, subject, core, past)

    @staticmethod
    def _option_concepts(cands: Sequence[Candidate]) -> dict[str, set[str]]:
        """For each option named in the memory, the concepts of the decisions that name it."""
        out: dict[str, set[str]] = {}
        for c in cands:
            concepts = _concepts(c.subject)
            if not concepts:
                continue
            for f in (c.facts, *c.history):
                if not f.is_decision:
                    continue
                for m in f.mentions:
                    if m.role in ("chosen", "prev"):
                        out.setdefault(m.key, set()).update(concepts)
        return out

    # ------------------------------------------------------------------ scoring

    def _score(self, note: Facts, c: Candidate, option_kinds_of: Mapping[str, set[str]]) -> bool:
        """Score one candidate in place; False when it cannot be the decision the note replaces."""
        f = c.facts
        if not f.is_decision or note.option is None or f.option is None:
            return False  # context, status and noise notes are never replaced
        mine, theirs = note.option.key, f.option.key
        if mine == theirs:
            return False  # the same option again: a restatement, not a replacement
        if any(m.key == theirs and m.role != "prev" for m in note.mentions):
            return False  # the note names the candidate's option without leaving it
        relation = subject_relation(note.subject, c.subject, note.core, c.core)
        if relation not in RELATION_SCORE:
            return False
        c.relation, c.score = relation, RELATION_SCORE[relation]
        c.notes.append(f"subject {relation}")
        c.prev_hit = next((m for m in note.prev if m.key == theirs), None)
        if c.prev_hit is not None:
            c.score += PREV_HIT
            c.notes.append("the note leaves the candidate's option")
        elif note.prev and not any(m.key in f.names() for m in note.prev):
            c.score -= LEAVES_OTHER
            c.leaves_other = True
            c.notes.append("the note leaves another option")
        if note.revert_cue is not None:
            replaced = [m for h in (f, *c.history) for m in h.mentions if m.role in ("prev", "chosen")]
            c.revert_hit = next((m for m in replaced if m.key == mine), None)
            if c.revert_hit is not None:
                c.score += REVERT_HIT
                c.notes.append("the note goes back to an option the chain had")
        if note.change_cue is not None:
            c.score += CHANGE
        if relation == "broader" and c.prev_hit is None and c.revert_hit is None:
            # The candidate is less precise than the note: it may be another aspect of the
            # same component. Only the option can tell (below).
            c.score -= BROADER_UNNAMED
            c.notes.append("the candidate is less specific and its option is not named")
        # What kind of thing the note's option is (``option_kinds``): the memory, its own name,
        # the catalogue of well-known products.
        kinds, own = option_kinds(note.option, option_kinds_of), _concepts(c.subject)
        if kinds and own:
            if kinds & own:
                c.score += OPTION_TYPE
                c.notes.append("the option is of the candidate's kind")
            else:
                c.score -= OPTION_TYPE_CLASH
                c.notes.append("the option is of another kind")
        return True

    def _embed(self, texts: list[str]) -> list[Any]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            assert self.embedder is not None
            vectors = self.embedder.encode(missing)
            if len(self._vectors) + len(missing) > 4096:
                self._vectors.clear()
            for t, v in zip(missing, vectors, strict=True):
                self._vectors[t] = v
        return [self._vectors[t] for t in texts]

    def _add_similarity(self, text: str, scored: list[Candidate]) -> None:
        try:
            vectors = self._embed([text, *(c.node.raw_text for c in scored)])
        except Exception:  # an embedder failure only loses this feature
            return
        mine = vectors[0]
        for c, v in zip(scored, vectors[1:], strict=True):
            sim = float(sum(float(a) * float(b) for a, b in zip(mine, v, strict=False)))
            c.similarity = sim
            c.score += EMBEDDING * max(-1.0, min(1.0, (sim - 0.45) / 0.3))

    # ------------------------------------------------------------------ output

    def _proposal(self, note: Facts, best: Candidate) -> LinkProposal:
        f = best.facts
        assert note.option is not None and f.option is not None
        evidence = [f"note option: {note.option.text}", f"target option: {f.option.text}"]
        if best.prev_hit is not None:
            evidence.append(f"note leaves: {best.prev_hit.text}")
        if best.revert_hit is not None:
            evidence.append(f"goes back to: {best.revert_hit.text}")
        if note.change_cue:
            evidence.append(f"change cue: {note.change_cue}")
        elif note.decision_cue:
            evidence.append(f"decision cue: {note.decision_cue}")
        for token in sorted(note.subject & f.subject)[:4]:
            evidence.append(f"shared subject: {note.subject_spans[token]}")
        if best.similarity is not None:
            evidence.append(f"embedding cosine: {best.similarity:.3f}")
        return LinkProposal(
            target_id=best.node.id,
            confidence=round(max(0.0, min(0.99, best.score)), 3),
            method=SCORED_NAME,
            evidence=tuple(evidence),
            by=self.name,
        )

    def _explicit_reference(self, text: str, nodes: list[MemoryNode]) -> LinkDecision | None:
        idents: dict[str, MemoryNode] = {}
        for c in nodes:
            ident = identifier(c.raw_text)
            if ident is not None:
                idents.setdefault(ident, c)
        if not idents:
            return None
        own = identifier(text)
        for ref, sentence in analyse_references(text, {i.split()[0] for i in idents}):
            target = idents.get(ref)
            if target is None or ref == own:
                continue
            return LinkDecision(
                kind=LinkKind.LINK,
                proposal=LinkProposal(
                    target_id=target.id,
                    confidence=EXPLICIT_REFERENCE,
                    method=SCORED_NAME,
                    evidence=(f"explicit reference: {sentence[:240]}",),
                    by=self.name,
                ),
                reason=f"the note replaces {ref} explicitly",
            )
        return None
