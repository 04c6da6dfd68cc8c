"""The premise check by the words (``evomem.domain.premise``'s second reading): the chain that holds
most of a statement's words, and within it the version that holds the words telling its versions
apart (``lexical``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from evomem.domain.model import MemoryNode, Status
from evomem.domain.premise_document import is_undecided, whole_text
from evomem.domain.premise_scope import in_scope, names_scope
from evomem.domain.premise_types import Judgement, Reading, Verdict
from evomem.domain.premise_words import blank as _blank
from evomem.domain.premise_words import (
    changed_values,
    keeps_beside,
    kept,
    left_after_verb,
    named_words,
    reported_words,
    share_held,
)
from evomem.domain.premise_words import holds as _holds
from evomem.domain.premise_words import meets as _meets
from evomem.domain.premise_words import topic_words as _topic_words
from evomem.domain.premise_words import words_of as _words
from evomem.domain.scope import compatible, is_default
from evomem.domain.subject import LONG_NOTE_CHARS, analyse
from evomem.domain.subject_names import clause_spans, left_phrases, reason_spans

LEXICAL = {"strong": 0.93, "weak": 0.87}  # right that often on the development sets
TOPICAL = 0.6  # the share of the statement's words a chain must hold to be about it
LOOSE = 0.8  # a chain that holds the option and a word of the topic, and left the option
UNMOORED = 0.75  # the one chain that holds the option, though no word of the topic, and left it
LATER = 0.8  # chains that disagree, the one that left the option later than the others hold it
HOLDS = 0.75  # the share a single version must hold to say it


def lexical(
    statement: str,
    chains: Sequence[tuple[MemoryNode, Sequence[MemoryNode]]],
    option_words: Iterable[str] = (),
    left: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    reverts: Collection[str] = (),
    phrases: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    scope: str | None = None,
    elsewhere: Sequence[MemoryNode] = (),
) -> Judgement | None:
    """The chain that holds most of the statement's words, and within it the version that holds
    the words telling its versions apart: the head (``in_force``) or an earlier one
    (``superseded``). A single version that holds the statement is in force. None: no chain is
    plainly about it, or the words do not tell. ``option_words``: the words of the statement's
    option (a name, or what it says is used: "every three years"), which tell versions apart as
    names do. ``left``: by node id, the spans where a version says what it left ("from X to",
    "X was overkill"): a version does not say what it names only there. ``reverts``: the ids of
    versions in force that say they go back to what came before the version they replaced ("back
    to 1 week -- too many handovers with 3 days"): what they share with that version alone, none
    before it held, is what they left, unless the statement names what they went back to; one that
    holds all the statement's names says it, unless an earlier version holds the whole statement.
    ``phrases``: by node id, the phrases a version in force says it left in so many words ("the old
    14", "instead of"; ``Facts.left_phrases``), which leave what any earlier version held.
    ``scope``: the statement's; a chain of that scope whose version in force holds the option's words
    holds there over the default scope's chains, as in the reading. ``elsewhere``: the versions in force
    of other scopes the search found; one of a scope the statement names that holds the option's words
    and a word of the topic keeps a chain tied to the statement only by them from saying it was replaced
    ("the cloud acct dev region uses eu-central-1" beside "dev stays in eu-central-1", kept in scope eu)."""
    # what it says it left, or reports on in a later clause ("hammerhead repo archived"), it does not assert
    gone = (
        tuple(left.get("", ())) + reported_words(statement) + left_after_verb(statement) + changed_values(statement)
        if left
        else ()
    )
    said = _words(_blank(statement, gone)) if left else _words(statement)
    if left is not None and (own_left := _said_left(statement)):  # a document as a statement: as a chain's (below)
        said = _words(_blank(statement, gone + own_left))
    elif gone and (reasons := _causes(statement)):
        # what it says it left and names again only in its reason, it does not assert either (as a head's: ``kept``)
        said -= _words(" ".join(statement[s:e] for s, e in gone)) - _words(_blank(statement, gone + reasons))
    if len(said) < 2:
        return None
    option = set(option_words) & said
    topic = _topic_words(statement)
    named = named_words(statement) & said
    # A name before the verb ("k8s", "3rd") says which thing, not which version: a chain that holds
    # under half of those some chain holds is about another ("Kitchen on 3rd floor"); one none holds is a label.
    anchors = named & _topic_words(statement, phrase=True) if named - topic else set()
    named = (named - anchors) | option
    if anchors:  # the chains' words, read only for a statement with such names
        unions = [set().union(*(_words(n.raw_text) for n in (head, *past))) for head, past in chains]
        memory = set().union(*unions)
        anchors = {a for a in anchors if _holds(memory, a)}
        # A chain that lacks them is about something else only when one that holds them names the option
        # ("Kitchen on 3rd floor still uses Square Mile"); else they are a label its notes do not restate.
        if not any(sum(_holds(u, a) for a in anchors) * 2 >= len(anchors) and (option or named) <= u for u in unions):
            anchors = set()
    scored: list[tuple[float, Reading]] = []
    undecided: list[tuple[float, Reading]] = []  # readings of rejected or proposed documents
    loose: list[Reading] = []  # chains tied by the option and one topic word, which left the option
    unmoored: list[Reading] = []  # chains tied by the option alone, which left the option
    holders = 0  # the chains whose versions hold the option's words
    telling = option or named
    # a version in force of a scope the statement names ("the dev region", "eu-central-1") that holds the
    # option's words and a word of the topic: the option may still hold there
    blockers: list[Reading] = []  # the versions in force that hold the option's words and a word of the topic
    in_force = any(
        telling
        and names_scope(said, h)
        and telling <= _words(h.raw_text)
        and _meets(topic - telling, _words(h.raw_text))
        for h in elsewhere
    )
    elsewhere_holds = in_force
    # a version in force anywhere that holds the option's words, about the topic or not
    held_now = any(telling and telling <= _words(h.raw_text) for h in elsewhere)
    held_elsewhere = held_now
    holding: list[Reading] = []  # the versions in force that hold the option's words
    carried: set[str] = set()  # of those, the ones whose replaced version held them too (a change beside it)
    for head, past in chains:
        versions = [head, *past]
        held = [_words(v.raw_text) for v in versions]
        union = set().union(*held)
        if sum(_holds(union, a) for a in anchors) * 2 < len(anchors):
            continue
        before = set().union(*held[2:])  # the words of the versions before the one the head replaced
        if left and len(versions) > 1:
            said_left = (phrases or {}).get(head.id, ())
            spans = tuple(left.get(head.id, ())) + reported_words(head.raw_text) + left_after_verb(head.raw_text)
            spans = _before_target(head.raw_text, spans, set().union(*held[1:]))
            spans += changed_values(head.raw_text, held[1], set().union(*held[1:]))
            reasons = _causes(head.raw_text)
            held[0] = kept(head.raw_text, held[0], held[1] - topic, spans, said_left, before - topic, reasons)
        elif left is not None and (said_left := _said_left(head.raw_text)):
            # a document alone does not hold what it names only as what was left or replaced ("When RP-19
            # replaced RP-12's three-minute limit, ..."): another chain's change it reports on
            held[0] = _words(_blank(head.raw_text, said_left))
        # a short head that sets a new number in place of the statement's, which the version it replaced held,
        # left that one, though it still names it ("debug uart 921600 - logs were truncated at 115200")
        if len(versions) > 1 and len(head.raw_text) <= LONG_NOTE_CHARS:
            new = held[0] - set().union(*held[1:]) - said
            held[0] = held[0] - _replaced_numbers(head.raw_text, said & held[0] & held[1], new)
        # a head that goes back leaves what only the version it replaced held, unless it is what it went back to
        if head.id in reverts and len(versions) > 2 and not telling & (held[0] & before) - held[1] - topic:
            held[0] = held[0] - (held[1] - before - topic)
        share = share_held(said, union)
        # A note of the statement's own scope that holds the option's words says it there, though it
        # holds fewer of its other words ("China build keeps the DRM check at launch").
        own_scope = scope is not None and not is_default(head.scope) and in_scope(head, scope) and len(versions) == 1
        if own_scope and telling and head.status == Status.ACTIVE and telling <= _own_words(head, left):
            scored.append((max(share, TOPICAL), Reading(head, "words", "supports", named=head)))
            continue
        # a version in force that holds the option's words and a word of the topic: the option may still hold
        about = _meets(topic - telling, held[0]) if topic - telling else True
        if telling and telling <= held[0] and head.status == Status.ACTIVE and about:
            in_force = True
            blockers.append(Reading(head, "words", "supports", named=head))
        if telling and telling <= held[0] and head.status == Status.ACTIVE:
            held_now = True
            holding.append(Reading(head, "words", "supports", named=head))
            # ... unless it says it went back to them, as held before the version it replaced ("back to Zapline")
            if len(versions) > 1 and telling <= held[1] and not (head.id in reverts and telling <= before):
                carried.add(head.id)
        holders += bool(telling and telling <= union)
        if share < TOPICAL:
            if telling and telling <= union and len(versions) > 1:
                reading = _within(said, telling, versions, held)
                if reading is not None and reading.stance == "replaced":
                    (loose if _meets(topic - telling, union) else unmoored).append(reading)
            continue
        reading = _within(said, telling, versions, held)
        # it went back to what the statement names, which no earlier version says whole
        back = head.id in reverts and bool(named) and named <= held[0] and all(said - h for h in held[1:])
        if reading is not None and reading.stance == "replaced" and back:
            reading = Reading(head, "words", "supports", named=head)
        if reading is not None:
            # a document that says it was rejected or only proposed decides nothing: at most it disagrees
            (undecided if is_undecided(head) else scored).append((share, reading))
    if not scored:
        # The statement's topic in other words ("the gym yoga instructor" for "Yoga: Dev teaches"):
        # one chain that named the option and left it, and nothing in force that holds it and a word of the
        # topic ("Priya's passport expires" is about something else than "the van sprinter driver").
        if len(loose) == 1 and not in_force:
            return Judgement(Verdict.SUPERSEDED, LOOSE, readings=loose, reason="read by its option and its words")
        if len(loose) == 1 and blockers and not elsewhere_holds:
            # notes in force that hold it, older than the version that left it and about no more of it
            later = _left_later(loose[0], [], blockers, topic, said)
            if later is not None:
                return later
        # The topic in words no version holds ("the campaign day" for "Moving game night to Saturday"): the one
        # chain found whose versions hold the option's words, which left it, with nothing in force holding them.
        if not loose and len(unmoored) == 1 and holders == 1 and not held_now:
            return Judgement(Verdict.SUPERSEDED, UNMOORED, readings=unmoored, reason="read by its option alone")
        # ... or only notes in force that hold it, older than the version that left it and about no more of it
        if not loose and len(unmoored) == 1 and holders == 1 + len(holding) and holding and not held_elsewhere:
            later = _left_later(unmoored[0], [], holding, topic, said)
            if later is not None:
                return later
        # The topic in other words, the case in force: the one chain whose versions hold the option's words,
        # its version in force holding them and a word of the topic, and no version anywhere that left them
        # ("the finance mortgage rate uses 3.94%" for "the mortgage is on a 5-year fix at 3.94%"). Not a head
        # that names them as the version it replaced did: it may report on what it left ("Kenji's out sick.
        # Beatriz is primary on-call"), or change something beside them; the words do not tell. Short notes only.
        alone = not loose and not unmoored and holders == 1 and len(holding) == 1 and not carried
        if alone and topic - telling and [r.head.id for r in blockers] == [holding[0].head.id]:
            if _long(holding[0]):  # a document holds any words ("Status: Superseded by ADR-14" among them)
                return None
            return Judgement(Verdict.IN_FORCE, LOOSE, readings=blockers, reason="read by its option and its words")
        # ... and where its head holds no word of the topic ("the media audio host uses Wavecrest" for "Podcasts
        # go out through Wavecrest"), with nothing in force elsewhere holding them: the twin of ``unmoored``
        if alone and not blockers and not held_elsewhere and not _long(holding[0]):
            return Judgement(Verdict.IN_FORCE, UNMOORED, readings=holding, reason="read by its option alone")
        return None
    if scope is not None:  # a scope's own decisions hold there over the default scope's
        scored = [x for x in scored if not is_default(x[1].head.scope) and in_scope(x[1].head, scope)] or scored
    scored.sort(key=lambda x: x[0], reverse=True)
    best_share, best = scored[0]
    # a rejected or proposed document casts doubt on a version in force, not on a decided replacement: what it
    # names, it only proposes or describes ("Remote-first working (draft for consultation)")
    doubts = undecided if best.stance == "supports" else []
    rivals = [r for sh, r in scored[1:] + doubts if sh >= best_share - 0.1 and r.stance != best.stance]
    if best.stance == "replaced" and telling and _long(best):
        # A document holds any words: a chain about the statement whose version in force holds
        # its option's words, though fewer of its other words, says otherwise.
        rivals += [r for _, r in scored[1:] if r.stance == "supports" and r not in rivals]
    if best.stance == "replaced":
        rivals += [r for r in _more_about(best, scored, topic) if r not in rivals]
        rivals += [r for r in _held_since(best, blockers, topic - telling) if r not in rivals]
    if rivals:
        later = _left_later(best, rivals, [r for sh, r in scored + undecided if sh >= best_share - 0.1], topic, said)
        if later is not None:
            return later
        lone = {h.id for h, past in chains if not past}
        reported = _reported_later(best, rivals, lone, topic, said)
        if reported is not None:
            return reported
        return Judgement(Verdict.UNKNOWN, 0.3, readings=[best, *rivals], reason="chains about it disagree")
    strength = "strong" if best_share >= 0.8 else "weak"
    verdict = Verdict.IN_FORCE if best.stance == "supports" else Verdict.SUPERSEDED
    return Judgement(verdict, LEXICAL[strength], readings=[best], reason="read by its words")


#: A note that says something holds as it did ("dual-run still begins 2025-08-25", "Trivy keeps doing the nightly
#: rescans", "nothing changes for container images").
_STILL = re.compile(r"\b(?:still|stays?|stayed|remains?|continues?|unchanged|nothing changes)\b", re.I)


def _held_since(best: Reading, blockers: Sequence[Reading], topic: set[str]) -> list[Reading]:
    """The short notes in force on other chains, later than the version that left the option, that hold its
    words and a word of the statement's topic (``topic``, its option's words out), not as what they left
    (``blockers``), and say it holds as it did (``_STILL``): "For the avoidance of doubt: dual-run still begins
    2025-08-25" after "Moving the BI cutover back two weeks", which replaced "cutover on 2025-09-08, dual-run
    starts 2025-08-25"; "Nothing changes for container images - Trivy in the registry keeps doing the nightly
    rescans". The later version changed another part of what it replaced: they contest the replacement. A
    later note that only names the option ("Erik opened a savings account at Nordea"), or keeps something
    beside it ("Vellum keeps a small Dublin satellite"), contests nothing: it may be about another thing."""
    if best.successor is None or not topic:
        return []
    since = best.successor.created_at
    return [
        r
        for r in blockers
        if r.head.id != best.head.id
        and r.head.created_at > since
        and len(r.head.raw_text) <= LONG_NOTE_CHARS  # a document says "still" of anything
        and _STILL.search(r.head.raw_text)
        and _meets(topic, _words(r.head.raw_text))
    ]


def _more_about(best: Reading, scored: Sequence[tuple[float, Reading]], topic: set[str]) -> list[Reading]:
    """The chains in force that hold the option's words (``supports``) and a word of the statement's topic that
    neither the version that named the option nor the one that left it holds, though fewer of the statement's
    words: they are about the very thing the statement names ("Team Mango keeps 15 per head" for "the team mango
    lunch budget", beside another team's "Team lunch budget: 15 per head" -> "20 per head"; "Henrik Moll reports
    to Sandra Ojo" beside "Priya reports to Sandra Ojo" -> "... to Lukas Brandt"). They contest the replacement.
    Only short notes that choose something (the shared reader finds an option in them): not a report on the option,
    not a document (one holds any words)."""
    nodes = (best.named, best.successor, best.head)
    held = set().union(*(_words(n.raw_text) for n in nodes if n is not None))
    out = []
    for _, r in scored:
        if r is best or r.stance != "supports" or len(r.head.raw_text) > LONG_NOTE_CHARS:
            continue
        if analyse(r.head.raw_text).option is None:
            continue  # it chooses nothing: a report on the option ("02:00 backup overlaps the Plex scan, NAS crawls")
        own = {t for t in topic if _meets({t}, _words(r.head.raw_text))}
        if any(not _meets({t}, held) for t in own):
            out.append(r)
    return out


_CAUSE = re.compile(r"(?:because|since|due to|given that|as it)\b", re.I)


def _causes(text: str) -> tuple[tuple[int, int], ...]:
    """Spans of a short note's reason clauses that give a cause ("since pitch 2 is being re-seeded"), not those
    that carry what it does ("so we're replacing X with Y", "which means ..."). A document: none."""
    if len(text) > LONG_NOTE_CHARS:
        return ()
    return tuple((s, e) for s, e in reason_spans(text) if _CAUSE.match(text, s))


def _said_left(text: str) -> tuple[tuple[int, int], ...]:
    """The spans where a document (which the shared reader does not read) says what was left or replaced: its
    phrases after "replaced", "instead of", "from X to" (``left_phrases``). A short note: none (read whole)."""
    return tuple(left_phrases(text, clause_spans(text))) if len(text) > LONG_NOTE_CHARS else ()


def _left_later(
    best: Reading, rivals: list[Reading], close: list[Reading], topic: set[str], said: set[str]
) -> Judgement | None:
    """``superseded`` when the chains about the statement disagree only because notes in force that
    hold it (``close``: those as near to it as the best) are older than the version that left it in
    a chain that named it, hold the same words of the statement's topic (``topic``) as the version
    that named it, and no more of the statement's words (``said``, in any form: "exhausted" is held
    where "exhausts" is): that later decision replaced them too, unlinked ("Chair confirmed allotment
    rent is unchanged at £48", then "Allotments 2026: full plot £55 a year", which replaced "Allotment
    plot rent: £48 a year"). A note that holds other words of the topic is about another thing that
    has the option ("Bastien is also mentored by Wren Abara" beside "Odalys's mentor is Wren Abara",
    who left). Not on a document's word (one holds any words)."""
    replaced = [r for r in (best, *rivals) if r.stance == "replaced" and r.successor is not None]
    supports = [r for r in close if r.stance == "supports"]
    if not replaced or not supports or any(_long(r) for r in replaced):
        return None

    def about(node: MemoryNode | None) -> set[str]:
        held = _words(node.raw_text) if node is not None else set()
        return {t for t in topic if _meets({t}, held)}

    if len({frozenset(about(r.named)) for r in replaced} | {frozenset(about(r.head)) for r in supports}) != 1:
        return None

    def held(node: MemoryNode) -> int:  # the statement's words it holds, in any form ("exhausts", "exhausted")
        words = _words(node.raw_text)
        return sum(_meets({w}, words) for w in said)

    named = min(held(r.named) for r in replaced if r.named is not None)
    if any(held(r.head) > named for r in supports):
        return None
    left_at = min(r.successor.created_at for r in replaced if r.successor is not None)
    if any(r.head.created_at >= left_at for r in supports):
        return None
    why = "a later version left it; the notes in force that hold it are older"
    return Judgement(Verdict.SUPERSEDED, LATER, readings=replaced, reason=why)


def _reported_later(
    best: Reading, rivals: list[Reading], lone: set[str], topic: set[str], said: set[str]
) -> Judgement | None:
    """``superseded`` when the chains about the statement disagree only because of notes in force that name the
    option after a linked version left it, each a note of its own (``lone``: no version before it) that decides
    nothing (the shared reader reads no word of deciding in it, nor an option it chooses) and holds no word of
    the statement's topic, nor more of its words, than the version that named the option: a report of the old
    value used since ("next door put her blue bin out Wednesdays again", "online booking still offering 15 min
    slots"), not a choice of it; a choice of it again is a decision, or a version linked to the one it replaced,
    or a note of another scope than the change's (that scope's own choice). A note that holds another word of
    the topic is about another thing that has the option ("Dev covers the Saturday yoga class"). Short notes."""
    if best.stance != "replaced":
        return None  # the note that names it is closer to the statement than the change: it may be its choice
    readings = (best, *rivals)
    replaced = [r for r in readings if r.stance == "replaced" and r.successor is not None]
    supports = [r for r in readings if r.stance == "supports"]
    if not replaced or not supports or len(replaced) + len(supports) != len(readings):
        return None
    if any(_long(r) or r.named is None for r in replaced):
        return None
    # a change that says, apart from what it chose, that the statement's part holds as it did left nothing of it:
    # the later note that names the option says what still holds ("dual-run still begins 2025-08-25")
    if any(keeps_beside(n.raw_text, topic) for r in replaced for n in (r.head, r.successor) if n):
        return None
    left_at = max(r.head.created_at for r in replaced)  # later than the version in force that left it

    def about(node: MemoryNode) -> set[str]:
        held = _words(node.raw_text)
        return {t for t in topic if _meets({t}, held)}

    def held(node: MemoryNode) -> int:  # the statement's words it holds, in any form
        words = _words(node.raw_text)
        return sum(_meets({w}, words) for w in said)

    chain_words = set().union(*(_words(n.raw_text) for r in replaced for n in (r.head, r.named) if n is not None))
    named_about = set().union(*(about(r.named) for r in replaced if r.named is not None))
    named = min(held(r.named) for r in replaced if r.named is not None)
    for r in supports:
        head = r.head
        if head.id not in lone or head.created_at <= left_at or _long(r):
            return None
        facts = analyse(head.raw_text)
        if facts.decision_cue is not None or facts.option is not None:
            return None  # a word of deciding ("keep", "now", "use"), or an option it chooses: it may choose it
        if not all(compatible(head.scope, x.successor.scope) for x in replaced if x.successor is not None):
            return None  # a note of another scope than the change's is that scope's own choice
        if not about(head) <= named_about or held(head) > named:
            return None
        # a word of the statement the chains that left it never use: it is about a look-alike ("incubator 1")
        if any(not _meets({w}, chain_words) for w in said & _words(head.raw_text)):
            return None
    why = "a later version left it; the later notes that name it report on it, they decide nothing"
    return Judgement(Verdict.SUPERSEDED, LATER, readings=replaced, reason=why)


#: Where a clause says what something became: "raised to", "moved into".
_TO = re.compile(r"\b(?:to|into)\s+", re.I)


def _before_target(text: str, spans: Sequence[tuple[int, int]], earlier: set[str]) -> tuple[tuple[int, int], ...]:
    """Spans of what a version in force says it left, each cut before a "to" that names what it became, a name
    or a value no earlier version held (``earlier``: their words): "threshold raised to 3 missed appointments"
    leaves the old threshold, not "3 missed appointments", whose words the version it replaced may share."""
    out = []
    for s, e in spans:
        m = _TO.search(text, s, e)
        out.append((s, m.start()) if m is not None and named_words(text[m.end() : e]) - earlier else (s, e))
    return tuple(out)


def _replaced_numbers(text: str, old: set[str], new: set[str]) -> set[str]:
    """Of the numbers ``old`` (the statement's, held by a head and the version it replaced), those a number
    of ``new`` (the head's own, no earlier version held) of the same shape (as many digits) replaces: the
    head ``text`` sets it before it names the old one ("OTA waves: 2%. ... The 5% wave in April hit ...";
    not "lowest Node: Node 20 (...). Matrix 20/22")."""

    def first(w: str) -> int:
        m = re.search(rf"(?<![\w.]){re.escape(w)}(?![\w.]\w)", text)
        return m.start() if m else len(text)

    news = [(len(w), first(w)) for w in new if w.isdigit()]
    return {w for w in old if w.isdigit() and any(n == len(w) and at < first(w) for n, at in news)}


def _own_words(node: MemoryNode, left: Mapping[str, Sequence[tuple[int, int]]] | None) -> set[str]:
    """A note's words but those it names only where it says what it left."""
    return _words(_blank(node.raw_text, (left or {}).get(node.id, ())))


def _long(reading: Reading) -> bool:
    """Whether a reading rests on a document (its version in force, or the one that named the option)."""
    return any(n is not None and len(whole_text(n)) > LONG_NOTE_CHARS for n in (reading.head, reading.named))


def _within(said: set[str], named: set[str], versions: list[MemoryNode], held: list[set[str]]) -> Reading | None:
    """One chain read by its words. With words that name an option: the head holds them all
    (``supports``), or holds none and an earlier version holds them all (``replaced``). Without:
    the head holds most of the statement, or an earlier version plainly more than the head."""
    head = versions[0]
    if head.status != Status.ACTIVE:
        return None
    shares = [len(said & h) / len(said) for h in held]
    short = [len(v.raw_text) <= LONG_NOTE_CHARS for v in versions]  # a long document holds any words
    says = [named <= h if named else shares[i] >= HOLDS and short[i] for i, h in enumerate(held)]
    if len(versions) == 1:
        if not says[0] or shares[0] < TOPICAL:
            return None
        return Reading(head, "words", "supports", named=head)
    telling = named - set.intersection(*held)  # the names that tell its versions apart
    says = [telling <= h if telling else shares[i] >= HOLDS and short[i] for i, h in enumerate(held)]
    if says[0]:
        # Names every version holds tell nothing, nor does a tie on the share of words: the head
        # that says it must hold the telling names, or plainly more of the statement.
        if telling or shares[0] > max(shares[1:]) or (not named and shares[0] >= max(shares[1:])):
            return Reading(head, "words", "supports", named=head)
        return None
    older = [i for i in range(1, len(versions)) if says[i]]
    if named and not telling and named <= held[0] and older and older[0] > 1 and all(short):
        # Every version names the option (the one between as a reason or what it left: "Jess has choir on
        # Thursdays, we record Wednesday then"), the head as its own, and the version it replaced says something
        # else: the head went back to what an older version said ("Thursday recordings again"). Notes only: a
        # document holds any words.
        return Reading(head, "words", "supports", named=head)
    if telling:
        if not older or len(telling & held[0]) > len(telling) / 2:
            return None
    elif not older or max(shares[1:]) - shares[0] < 0.25:
        return None
    at = older[0]  # the newest earlier version that says it
    return Reading(head, "words", "replaced", named=versions[at], successor=versions[at - 1])
