"""Does a statement still hold? ``judge`` reads a statement and the chains a search found for it
the way the scored linker reads a note and its candidates (``evomem.domain.subject``: subject,
option and the options a note leaves; ``linkers.scored``: a chain inherits its earlier versions'
concepts, an option's kind), and answers one of:

- ``in_force``: a decision in force on the same subject names the statement's option;
- ``superseded``: an earlier version of such a decision named it (or the version in force says it
  left it), and another version is in force now;
- ``contradicted``: a decision in force on the same subject names another option (and nothing in
  its chain ever named the statement's);
- ``unknown``: no decision is about the statement's subject and option, or the statement names no
  option, or the evidence disagrees with itself. Never a guess.

Each answer carries its evidence (the chains read, the version that named the option) and a
confidence from the strength of the reading: the subject relation (exact, or one containing the
other), whether both notes are decisions, and whether evidence pulls both ways.
"""

from __future__ import annotations

from collections.abc import Sequence

from evomem.domain.linkers.scored import RELATION_SCORE, Candidate, ScoredLinker, option_kinds, subject_relation
from evomem.domain.model import MemoryNode, Status
from evomem.domain.premise_absent import absent
from evomem.domain.premise_document import READS, as_read, decided_elsewhere, deciding, read_as_decided
from evomem.domain.premise_lexical import TOPICAL, lexical
from evomem.domain.premise_scope import answers_for, covers, in_scope, overridden
from evomem.domain.premise_types import Judgement, Reading, Verdict
from evomem.domain.premise_words import (
    asks,
    complement,
    kept,
    kept_in_place,
    leaves,
    named_as,
    named_words,
    other_versions,
    own_version,
    says_unchanged,
    topic_words,
)
from evomem.domain.premise_words import meets as _meets
from evomem.domain.premise_words import words_of as _words
from evomem.domain.scope import is_default
from evomem.domain.subject import Facts, analyse, lowercase_options, lowercase_vocabulary
from evomem.domain.subject_names import Mention

__all__ = ["Judgement", "Reading", "Verdict", "complement", "covers", "in_scope", "judge", "lexical", "overridden"]


#: Confidence by case: about the share of right answers each case had on the development sets
#: (``bench/premise.py``, ``premise.json``'s ``calibration``): an exact subject match, one subject
#: containing the other, and evidence that pulls both ways.
CONFIDENCE = {
    (Verdict.IN_FORCE, "exact"): 0.95,
    (Verdict.IN_FORCE, "near"): 0.85,
    (Verdict.SUPERSEDED, "exact"): 0.95,
    (Verdict.SUPERSEDED, "near"): 0.8,
    (Verdict.CONTRADICTED, "exact"): 0.9,
    (Verdict.CONTRADICTED, "near"): 0.55,  # one subject inside the other by a kind only ("@database")
}
MIXED = 0.6  # a newer decision outweighs an older unlinked one on the same subject
COVERED = 0.8  # a scope's own decision, covered since by a later one of the default scope
BY_CHAIN = 0.8  # a chain read as one decision (``_by_chain``): right that often on the development sets
LOOSE_SHARE = 0.5  # the share of the statement's subject a chain's versions must hold (``_by_chain``)
PHRASE_WORDS = 5  # the most words of a phrase the statement says is used, read whole as its option (``_judge``)


def _option(note: Facts) -> Mention | None:
    if note.option is not None:
        return note.option
    named = [m for m in note.mentions if m.role not in ("subject", "prev")]
    return named[0] if len(named) == 1 else None


def judge(
    statement: str,
    scope: str | None,
    chains: Sequence[tuple[MemoryNode, Sequence[MemoryNode]]],
) -> Judgement:
    """``chains``: (version in force, earlier versions newest first) of each chain the search
    found, best first (a newer note a linker offered as a hit's replacement comes as a chain of
    its own). ``scope``: the statement's (None: the default scope).

    The reading of subject and option decides first; when it finds nothing to go on (a statement
    or decisions that name no option it can read: "snapshots every 6 hours"), the words that tell a
    chain's versions apart decide (``lexical``), more cautiously; when no chain's subject matches
    the statement's, a chain whose versions together hold half of it, one of which chose the
    option the head left, says ``superseded`` (``_by_chain``), unless the words read otherwise.
    A scope's own decision that a later one of the default scope covers (``overridden``) was
    replaced by it.

    A long document (a decision record, an RFC, a policy) is read first by the part that decides
    (``read_as_decided``): its title and its decision section, as is a statement that is one; when
    that part tells nothing (``unknown``), by its whole text. The lead of that section is read first
    (``LEAD_CHARS``): a document sets its value before the exceptions and limits that name others
    ("20 weeks of paid leave ... extended ... up to 12 weeks"). Only where the statement's option is a
    value (it holds a digit: "12 weeks", "4% of base salary") do the words alone decide on the lead: a
    name the lead leaves out may stand in the next sentence ("The foundation's committee applies ...")."""
    topic = topic_words(deciding(statement) or statement)
    value = any(c.isdigit() for c in complement(statement) or "")
    for chars in READS:  # its lead first; then its opening
        part = deciding(statement, chars=chars)  # a document as a statement: what it decides
        decided = read_as_decided(chains, topic, chars)
        if part is None and all(
            n is m
            for (h, p), (g, q) in zip(chains, decided, strict=True)
            for n, m in zip((h, *p), (g, *q), strict=True)
        ):
            break  # no document: read as it is
        out = _judge_scoped(part or statement, scope, decided)
        # the lead read by its words alone: only for a value
        by_words = bool(out.readings) and all(r.relation == "words" for r in out.readings)
        if (
            out.verdict is not Verdict.UNKNOWN
            and not (chars < READS[-1] and by_words and not value)
            and not decided_elsewhere(out, chains, topic, _words(out.option or complement(statement) or ""))
        ):
            return _unchanged(as_read(out, chains), chains, topic)
    return _unchanged(_judge_scoped(statement, scope, chains), chains, topic)


def _unchanged(out: Judgement, chains: Sequence[tuple[MemoryNode, Sequence[MemoryNode]]], topic: set[str]) -> Judgement:
    """``superseded`` gives way (``unknown``) where a version in force that replaced the option says, in a
    sentence about the statement's topic, that this part of what it replaced holds unchanged
    (``says_unchanged``: "Section 3 of that policy, meal per diems, is not affected")."""
    if out.verdict is not Verdict.SUPERSEDED:
        return out
    texts = {h.id: h.raw_text for h, _ in chains}
    about = topic - _words(out.option or "")
    heads = {r.head.id for r in out.readings if r.stance == "replaced"}
    if not any(says_unchanged(texts.get(i, ""), about) for i in heads):
        return out
    why = "the version in force says this part of what it replaced holds unchanged"
    return Judgement(Verdict.UNKNOWN, 0.3, out.option, out.subject, out.readings, reason=why)


def _judge_scoped(
    statement: str, scope: str | None, chains: Sequence[tuple[MemoryNode, Sequence[MemoryNode]]]
) -> Judgement:
    said = _words(statement)
    elsewhere = [h for h, past in chains if not answers_for(h, past, scope, said) and h.status == Status.ACTIVE]
    chains = [(h, list(past)) for h, past in chains if answers_for(h, past, scope, said)]
    kept, covering = overridden(chains, scope)
    out = _judge(statement, scope, chains, elsewhere)
    if covering is not None and out.verdict is Verdict.IN_FORCE and out.readings:
        kept_ids = {h.id for h, _ in kept}
        if all(r.head.id not in kept_ids for r in out.readings):  # only chains it overrode hold it
            readings = [Reading(covering, "scope", "replaced", named=r.head, successor=covering) for r in out.readings]
            why = "a later decision of the default scope covers this scope too"
            return Judgement(Verdict.SUPERSEDED, COVERED, out.option, out.subject, readings, reason=why)
    return _judge(statement, scope, kept, elsewhere) if len(kept) != len(chains) else out


def _judge(
    statement: str, scope: str | None, chains: list[tuple[MemoryNode, list[MemoryNode]]], elsewhere: list[MemoryNode]
) -> Judgement:
    nothing = absent(statement, chains)  # "... uses none": the chain about it that ended the thing
    if nothing is not None:
        return nothing
    # node id ("": the statement) -> the spans where it says what it left
    left: dict[str, tuple[tuple[int, int], ...]] = {}
    phrases: dict[str, tuple[tuple[int, int], ...]] = {}  # node id -> the phrases it says it leaves in so many words
    loose: list[Reading] = []
    reverts: set[str] = set()  # the ids of versions in force that say they go back ("reverted", "back to")
    read = _by_reading(statement, scope, chains, left, loose, reverts, phrases)
    if read.verdict is Verdict.UNKNOWN:
        # No name to read as its option ("... uses every three years"): what follows its verb is. In a statement
        # that is one phrase, its verb and a phrase of a few words (``PHRASE_WORDS``), that phrase is one option,
        # all its words, where the reader read none or only a part of it ("MMR" of "±400 MMR", "Kestrel" of "the
        # Kestrel authenticator app"): a name with its qualifier ("self-hosted Mac minis" is told from "EC2 Mac
        # instances" by "minis"), not a clause that names something.
        said = complement(statement) if read.option is None else None
        whole = said or complement(statement) or ""  # the option read in part ("MMR" of "±400 MMR"): its phrase
        phrase = bool(whole and len(whole.split()) <= PHRASE_WORDS and topic_words(statement, phrase=True))
        phrase = phrase and (read.option is None or read.option.lower() in whole.lower())
        words = _words(whole) if phrase else _option_words(said or read.option)
        lex = lexical(statement, chains, words, left, reverts, phrases, scope, elsewhere)
        if lex is not None:
            lex.option = said or read.option
        if read.readings:
            return read
        by_chain = _replaced_by_chain(read, loose, scope)
        if by_chain is None or (lex is not None and lex.verdict is Verdict.SUPERSEDED):
            return lex or read
        if lex is not None and not _turned_from(lex, by_chain):  # the words read it otherwise: unknown
            return Judgement(Verdict.UNKNOWN, 0.3, read.option, read.subject, loose + lex.readings, reason=DISAGREE)
        return by_chain
    # The chains the reading decided on, read again by their words: a disagreement is unknown.
    used = {r.head.id for r in read.readings}
    used_chains = [c for c in chains if c[0].id in used]
    lex = lexical(statement, used_chains, _option_words(read.option), left, reverts, phrases, scope)
    if lex is None or lex.verdict is Verdict.UNKNOWN:
        return read
    if read.verdict is Verdict.SUPERSEDED and lex.verdict is Verdict.IN_FORCE:
        # The version in force names the option, in a role only the reading sees ("X cost too
        # much"): the reading holds, less sure.
        read.confidence = min(read.confidence, 0.85)
        return read
    if (read.verdict is Verdict.IN_FORCE) != (lex.verdict is Verdict.IN_FORCE):
        return Judgement(Verdict.UNKNOWN, 0.3, read.option, read.subject, read.readings + lex.readings, reason=DISAGREE)
    read.confidence = min(0.97, max(read.confidence, lex.confidence) + 0.02)  # two readings agree
    return read


def _turned_from(lex: Judgement, by_chain: Judgement) -> bool:
    """Whether the words read in force only the heads that chose another option than the version
    they replaced, which chose the statement's: they name it in a report ("FleetHalo couldn't
    finish the installs"), and what they chose says they left it."""
    turned = {r.head.id for r in by_chain.readings if r.turned}
    return lex.verdict is Verdict.IN_FORCE and bool(lex.readings) and {r.head.id for r in lex.readings} <= turned


def _option_words(option: str | None) -> set[str]:
    """The words of an option the statement names in lowercase ("fortnightly", "every three
    years"), which tell a chain's versions apart as its names do (``named_words`` has those)."""
    return set() if option is None or named_words(f"x {option}") else _words(option)


DISAGREE = "its subject and option say one thing, the words of the versions another"


def _by_reading(
    statement: str,
    scope: str | None,
    chains: list[tuple[MemoryNode, list[MemoryNode]]],
    left: dict[str, tuple[tuple[int, int], ...]],
    loose: list[Reading] | None = None,
    reverts: set[str] | None = None,
    phrases: dict[str, tuple[tuple[int, int], ...]] | None = None,
) -> Judgement:
    texts = [statement, *(n.raw_text for h, past in chains for n in (h, *past))]
    vocab = lowercase_vocabulary(texts)
    cands = [ScoredLinker._candidate(h, past, vocab) for h, past in chains]
    known = lowercase_options(f for c in cands for f in (c.facts, *c.history))
    if known:
        cands = [ScoredLinker._candidate(h, past, vocab, known) for h, past in chains]
    chosen_versions: set[str] = set()  # the versions the chains' versions chose, in chains that chose several
    for (head, past), c in zip(chains, cands, strict=True):
        if reverts is not None and c.facts.revert_cue and len(past) > 1:
            reverts.add(head.id)
        facts = (c.facts, *c.history)
        if phrases is not None:
            phrases[head.id] = c.facts.left_phrases
        # the versions each chose: one it names besides its own, another chose, it left ("Do not install 12.1")
        own = [_own_version(f) for f in facts]
        chosen = {v for v in own if v}
        if len(chosen) > 1:
            chosen_versions |= chosen
            for n, f, v in zip((head, *past), facts, own, strict=True):
                left[n.id] = f.left + (other_versions(f.text, v, chosen) if v else ())
        else:
            left.update((n.id, f.left) for n, f in zip((head, *past), facts, strict=True))
    note = analyse(statement, vocab, scope=scope, known=known)
    if reverts is not None and note.revert_cue:  # it goes back too: it names what it left as they do
        reverts.clear()
    # the statement's own: what it says it left, and the versions it names besides its own, is not what it asserts
    own_statement = _own_version(note)
    left[""] = note.left + (other_versions(statement, own_statement, chosen_versions) if own_statement else ())
    kinds_of = ScoredLinker._option_concepts(cands)
    note = ScoredLinker._typed_note(note, kinds_of)
    option = _option(note)
    if option is None:
        return Judgement(Verdict.UNKNOWN, 0.0, reason="the statement names no option to check (say what it uses)")
    kinds = option_kinds(option, kinds_of)
    # The names the statement gives besides its option ("Pepper", "Team Heron"): a chain about
    # something else of the same kind (another pet, another team) holds at most half of them.
    anchors = named_words(statement) - _words(option.text)
    readings: list[Reading] = []
    memory = set().union(*(f.core for c in cands for f in (c.facts, *c.history)))
    loose = [] if loose is None else loose  # chains whose subject meets the statement's in part (``_by_chain``)
    for (head, past), c in zip(chains, cands, strict=True):
        if anchors and len(anchors & set().union(*(_words(n.raw_text) for n in (head, *past)))) * 2 < len(anchors):
            continue
        subject, core = c.subject, c.core
        if note.subject and not (subject & note.subject) and c.facts.option is not None:
            own = option_kinds(c.facts.option, kinds_of)  # a terse "the ledger runs on X": X's kind
            subject, core = subject | own, core | own
        relation = subject_relation(note.subject, subject, note.core, core)
        if relation not in RELATION_SCORE:
            by_chain = _by_chain(note, option, head, past, c, kinds, memory)
            if by_chain is not None:
                loose.append(by_chain)
            continue
        concepts = {t for t in subject if t.startswith("@")}
        if kinds and concepts and not kinds & concepts:
            continue  # the statement's option is another kind of thing than this decision's
        versions = [c.facts, *c.history]
        nodes = [head, *past]
        head_option = c.facts.option.key if c.facts.is_decision and c.facts.option and not asks(c.facts) else None
        reading = Reading(head, relation, "", option=c.facts.option.text if head_option else None)
        at = next(
            (i for i, f in enumerate(versions) if i > 0 and f.option is not None and f.option.key == option.key),
            None,
        )
        # the statement's subject holds a word more that notes use ("second car"): another aspect
        aspect = relation == "broader" and _meets({t for t in note.subject - subject if t[0] != "@"}, memory)
        holder = named_as(head.raw_text, option.text, note.subject)
        if head_option == option.key and head.status == Status.ACTIVE:
            reading.stance, reading.named = "supports", head
        elif (
            at == 1
            and head_option is not None
            and head.status == Status.ACTIVE
            and not aspect
            and not holder
            and not _kept(note, c, option)
        ):
            # The version in force chose another option than the version it replaced: it left that
            # one, whatever else it says of it ("Reverting to yarn: pnpm symlinks broke the bundler").
            reading.stance, reading.named, reading.successor = "replaced", nodes[1], head
        elif option.key in {m.key for m in c.facts.mentions} - {m.key for m in c.facts.prev}:
            continue  # the version in force names it too, not as what it left: the reading cannot tell
        else:
            left = any(m.key == option.key and leaves(c.facts, m) for m in c.facts.prev)
            if at is not None and aspect:
                continue
            if at is not None:
                reading.stance, reading.named, reading.successor = "replaced", nodes[at], nodes[at - 1]
            elif left and head.status == Status.ACTIVE:
                reading.stance, reading.successor = "replaced", head
            elif head_option is not None and head.status == Status.ACTIVE and not _another_aspect(note, subject):
                reading.stance = "contradicts"
            else:
                continue
        readings.append(reading)
    if scope is not None:  # a scope's own decisions hold there over the default scope's
        own = [r for r in readings if not is_default(r.head.scope) and in_scope(r.head, scope)]
        readings = own or readings
    out = _verdict(note, option, readings)
    if out.verdict is Verdict.SUPERSEDED:
        holding = _held_later(statement, option, out.readings, chains, cands)
        if holding:
            why = "a later note in force names the option and the statement's topic"
            return Judgement(Verdict.UNKNOWN, 0.3, out.option, out.subject, out.readings + holding, reason=why)
    return out


def _held_later(
    statement: str,
    option: Mention,
    readings: list[Reading],
    chains: list[tuple[MemoryNode, list[MemoryNode]]],
    cands: list[Candidate],
) -> list[Reading]:
    """The notes in force on other chains, later than the version that left the option, that name
    it (not as what they left) and a word of the statement's topic ("Dev covers the Saturday yoga
    class." after "Yoga: Dev teaches." -> "Yoga now with Mei."): the option still holds there, so
    the memory does not say it was replaced (as ``lexical``'s and ``_by_chain``'s readings). Only
    where the chains that left it hold under ``TOPICAL`` of the statement's words (its topic in other
    words): a chain that holds the statement ("Yuki's car: Toyota Yaris." -> "... Corolla.") is about it."""
    named = _words(option.text)
    topic = topic_words(statement) - named
    successors = [r.successor or r.head for r in readings if r.stance == "replaced"]
    if not named or not topic or not successors:
        return []
    said = _words(statement)
    texts = {h.id: [n.raw_text for n in (h, *past)] for h, past in chains}
    for r in readings:
        held = set().union(*(_words(t) for t in texts.get(r.head.id, [r.head.raw_text])))
        if r.stance == "replaced" and len(said & held) >= TOPICAL * len(said):
            return []
    since = max(n.created_at for n in successors)
    used = {r.head.id for r in readings}
    out = []
    for (head, _), c in zip(chains, cands, strict=True):
        if head.id in used or head.status != Status.ACTIVE or head.created_at <= since:
            continue
        if option.key in {m.key for m in c.facts.prev}:
            continue  # it names the option as what it left
        held = _words(head.raw_text)
        if named <= held and _meets(topic, held):
            out.append(Reading(head, "words", "supports", named=head))
    return out


def _own_version(facts: Facts) -> str | None:
    return own_version(facts.text, (facts.option.start, facts.option.end) if facts.option else None, facts.left)


def _replaced_by_chain(read: Judgement, loose: list[Reading], scope: str | None) -> Judgement | None:
    """``superseded`` when every chain read only as a whole (``_by_chain``) left the statement's
    option, and none chose it in force: a reading that never answers ``in_force`` or
    ``contradicted`` on so partial a subject match."""
    if scope is not None:  # a scope's own decisions hold there over the default scope's
        loose = [r for r in loose if not is_default(r.head.scope) and in_scope(r.head, scope)] or loose
    if not loose or any(r.stance != "replaced" for r in loose):
        return None
    why = "an earlier version of a decision on much the same subject named it"
    return Judgement(Verdict.SUPERSEDED, BY_CHAIN, read.option, read.subject, loose, reason=why)


def _by_chain(
    note: Facts,
    option: Mention,
    head: MemoryNode,
    past: Sequence[MemoryNode],
    c: Candidate,
    kinds: frozenset[str],
    memory: set[str],
) -> Reading | None:
    """A chain whose head's subject neither equals nor contains the statement's ("the hiring
    background check vendor uses Vettly" against "Pre-employment screening moves to ClearPath;
    Vettly contract not renewed", whose first version said "Background checks for new hires are
    done by Vettly"), read as one decision: its versions' subjects together hold at least half of
    the statement's, and one of its versions chose the statement's option. The head chose it
    (``supports``), or an earlier version did and the head names it at most as what it left
    (``replaced``). Only read when no chain's subject matches (``_by_reading``)."""
    if head.status != Status.ACTIVE or not note.core:
        return None
    versions = [c.facts, *c.history]
    held = set().union(*(f.core for f in versions))
    core = {t for t in note.core if _meets({t}, memory)} or note.core  # not its own labels ("hw")
    if sum(_meets({t}, held) for t in core) < LOOSE_SHARE * len(core):
        return None
    concepts = {t for f in versions for t in f.subject if t.startswith("@")}
    if kinds and concepts and not kinds & concepts:
        return None
    head_option = c.facts.option.key if c.facts.is_decision and c.facts.option and not asks(c.facts) else None
    if head_option == option.key:
        return Reading(head, "loose", "supports", named=head, option=c.facts.option.text if c.facts.option else None)
    at = next((i for i, f in enumerate(versions) if i > 0 and f.option and f.option.key == option.key), None)
    nodes = [head, *past]
    turned = (
        at == 1
        and head_option is not None
        and not named_as(head.raw_text, option.text, note.subject)
        and not _kept(note, c, option)
    )
    if turned and c.facts.option is not None:  # it chose another option than the version before
        return Reading(head, "loose", "replaced", nodes[1], head, c.facts.option.text, turned=True)
    if option.key in {m.key for m in c.facts.mentions} - {m.key for m in c.facts.prev}:
        return None  # the head names it, not as what it left: the chain cannot tell
    if at is None:
        return None
    # The head names it other than as what it left: by words no other version holds ("Elif's back
    # managing"), or any, in a note that says it goes back ("Bea is back on Ysolde").
    earlier = set().union(*(_words(n.raw_text) for n in past[1:]))
    own = kept(
        head.raw_text, _words(head.raw_text), _words(past[0].raw_text), c.facts.left, c.facts.left_phrases, earlier
    )
    named = _words(option.text)
    telling = named - set.intersection(*(_words(n.raw_text) for n in nodes))
    if telling & own or (c.facts.revert_cue and named <= own):
        return None
    option_text = c.facts.option.text if head_option else None
    return Reading(head, "loose", "replaced", named=nodes[at], successor=nodes[at - 1], option=option_text)


def _kept(note: Facts, c: Candidate, option: Mention) -> bool:
    """Whether the version in force kept the option where it speaks of the subject of the version it
    replaced or of the statement's topic (``kept_in_place``), whatever else it chose."""
    topic = topic_words(note.text) - _words(option.text)
    return kept_in_place(c.facts, c.history[0].core, option) or kept_in_place(c.facts, topic, option)


def _another_aspect(note: Facts, subject: frozenset[str]) -> bool:
    """Whether one subject holds the other and a word more (not a kind: "@database"): a decision
    that says less ("Maria lives in Lyon" against "Maria's employer uses Initech") or more ("build
    artefacts and nightly database dumps go to Wasabi" against "the database dumps use Hetzner").
    Another option named there is as often another aspect of the same thing as a contradiction
    (dev-f: 7 of 15 saying less; dev-a, e, h, k, l: 8 of 8 template statements so flagged saying
    more were true): no contradiction, and the words decide (``lexical``)."""
    words = frozenset(t for t in note.subject ^ subject if not t.startswith("@"))
    return bool(words) and (subject < note.subject or note.subject < subject)


def _verdict(note: Facts, option: Mention, readings: list[Reading]) -> Judgement:
    base = {"option": option.text, "subject": tuple(sorted(note.subject))}
    if not readings:
        return Judgement(Verdict.UNKNOWN, 0.0, **base, reason="no decision on this subject names an option")
    supports = [r for r in readings if r.stance == "supports"]
    against = [r for r in readings if r.stance != "supports"]

    def strength(rs: list[Reading]) -> str:
        return "exact" if any(r.relation == "exact" for r in rs) else "near"

    if supports and not against:
        return Judgement(
            Verdict.IN_FORCE, CONFIDENCE[(Verdict.IN_FORCE, strength(supports))], **base, readings=supports
        )
    replaced = [r for r in against if r.stance == "replaced"]
    if not supports:
        if replaced:
            conf = CONFIDENCE[(Verdict.SUPERSEDED, strength(replaced))]
            return Judgement(
                Verdict.SUPERSEDED, conf, **base, readings=replaced + [r for r in against if r not in replaced]
            )
        conf = CONFIDENCE[(Verdict.CONTRADICTED, strength(against))]
        return Judgement(Verdict.CONTRADICTED, conf, **base, readings=against)
    # Both ways: decisions in force on this subject disagree (a link was missed). The newest
    # decision in force is the one that holds, only when it is plainly later and says more.
    newest_for = max(r.head.created_at for r in supports)
    newest_against = max(r.head.created_at for r in against)
    if newest_against > newest_for and (replaced or strength(against) == "exact"):
        verdict = Verdict.SUPERSEDED if replaced else Verdict.CONTRADICTED
        return Judgement(verdict, MIXED, **base, readings=against + supports, reason="a newer decision disagrees")
    if newest_for > newest_against and strength(supports) == "exact":
        return Judgement(
            Verdict.IN_FORCE, MIXED, **base, readings=supports + against, reason="newer than what disagrees"
        )
    return Judgement(Verdict.UNKNOWN, 0.3, **base, readings=supports + against, reason="decisions in force disagree")
