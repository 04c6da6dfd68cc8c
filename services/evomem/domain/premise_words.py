"""The words of a statement and of a note, as the premise check compares them by their words
(``evomem.domain.premise``'s ``lexical``): content words less stopwords and the verbs a statement says
"uses" with, a light plural stem, a dotted version kept whole; the words that name something; what
a one-clause statement says is used (its complement) and what it is about (the words before its verb);
what a version in force holds as its own (``kept``) and what it names as holding the subject (``named_as``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from evomem.domain.linkers.vocabulary import STOPWORDS, fold, words
from evomem.domain.subject import DECISION_CUE, LONG_NOTE_CHARS, Facts
from evomem.domain.subject_names import Mention, clause_spans, reported

VERBS = frozenset({"use", "uses", "used", "using", "run", "runs", "running", "is", "are", "was", "were", "be"})


def stem(w: str) -> str:
    if len(w) > 4 and w.endswith(("ies", "oes")):
        return w[:-3] + "y" if w.endswith("ies") else w[:-2]  # "policies", "tomatoes"
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


#: The stopwords that state a quantity: a value as much as "four" or "14" ("three weeks", "once a year").
QUANTITIES = frozenset({"one", "two", "three", "once"})


#: A dotted version or number ("v1.0.1", "4.1.1", "3.12"): one value, not the numbers it holds.
_DOTTED = re.compile(r"(?<![\w.])\w*\d\.\d[\w.]*\w|(?<![\w.])\w*\d\.\d\b")


def _shape(value: str) -> tuple[str, int]:
    """A version's letters before its first digit and its number of parts: "v2.3" ("v", 2), "4.2.3" ("", 3)."""
    lead = re.match(r"\D*", value)
    return (lead.group(0).lower() if lead else "", len(re.findall(r"\d+", value)))


def own_version(text: str, option: tuple[int, int] | None, left: Sequence[tuple[int, int]]) -> str | None:
    """The version a note chooses: in its option (``option``: its span) or just after it in the same
    phrase ("Epicure 11.4", "Timesheet macro v2.3"); a note whose option holds none, the first version
    it names outside what it says it left ("Upgrading the client to 12.1, replaces 11.4": 12.1)."""
    if option is not None:
        start, end = option
        own = _DOTTED.search(text, start, min(len(text), end + 24))
        if own is not None and (own.start() <= end or re.fullmatch(r"[ \w-]*", text[end : own.start()])):
            return own.group(0).lower()
    for m in _DOTTED.finditer(text):
        if not any(s <= m.start() < e for s, e in left):
            return m.group(0).lower()
    return None


def other_versions(text: str, own: str, chosen: set[str]) -> tuple[tuple[int, int], ...]:
    """Spans of the versions a note that chooses version ``own`` names besides it, of those another
    version of its chain chose (``chosen``), in the same shape: what it leaves or rejects, not what it
    uses ("Do not install 12.1", "v2.4 double-counts overtime", "the binaries for 4.3.2 give different
    SEs"). A version no other version chose may be another thing's ("ruff 0.6.9, mypy 1.11.2")."""
    shape = _shape(own)
    return tuple(
        (m.start(), m.end())
        for m in _DOTTED.finditer(text)
        if m.group(0).lower() != own and m.group(0).lower() in chosen and _shape(m.group(0)) == shape
    )


#: A time of day ("15:15", "9:30"): one value, not its hour and minutes ("15:15" is not in "15:30").
_CLOCK = re.compile(r"(?<![\w:.])\d{1,2}:\d{2}(?![\w:])")


#: A standard's number after its body's capitals ("ISO 8655-6", "EN 1090-2"): one value, not "6" and "2" (not a
#: date, which is split as it is elsewhere: "on 2025-08-25" has no capital before it, "Stripe API 2024-06-20" does).
_STANDARD = re.compile(r"(?<=[A-Z] )(?!\d{4}-\d{1,2}-\d{1,2}\b)\d+(?:-\d+)+\b")


#: Words joined by hyphens to a number ("us-east-1", "eu-central-1"): one name, whose letters tell it from
#: another of the same shape ("eu-east-1"), a stopword's letters too ("us" there is no pronoun).
_HYPHENED = re.compile(r"(?<![\w.-])(?:[^\W\d_]+-)+\d\w*(?![\w-])")


def words_of(text: str) -> set[str]:
    dotted = {m.group(0).lower() for m in _DOTTED.finditer(text)}
    rest = _DOTTED.sub(" ", text) if dotted else text
    hyphened = {stem(fold(w)) for m in _HYPHENED.finditer(rest) for w in words(m.group(0))}
    rest = _HYPHENED.sub(" ", rest) if hyphened else rest
    dotted |= hyphened
    standards = set(_STANDARD.findall(rest))
    rest = _STANDARD.sub(" ", rest) if standards else rest
    dotted |= standards
    clocks = set(_CLOCK.findall(rest))
    rest = _CLOCK.sub(" ", rest) if clocks else rest
    dotted |= clocks
    return dotted | {
        stem(fold(w))
        for w in words(rest)
        if (w not in STOPWORDS or w in QUANTITIES) and w not in VERBS and (len(w) > 1 or w.isdigit())
    }


#: A name: capitalised past a sentence's first word; anywhere, a word whose capitals or digits past its first
#: letter make it one ("AWS", "SQLite", "B2"), a time of day, a word holding a digit ("25", "us-east-1").
_NAMED = re.compile(
    r"\b([A-Z][\w.+-]*?[A-Z\d][\w.+-]*|(?<![.!?]\s)(?<!^)[A-Z][\w.+-]*|\d{1,2}:\d{2}(?![\w:])"
    r"|(?:[^\W\d_]+-)*\w*\d[\w.+-]*)"
)


def named_words(text: str) -> set[str]:
    """The words of a statement that name something (capitalised past its first word, or holding a
    digit: "Brotzeit Kollektiv", "Node 18", "25 MB"; at a sentence's start too where not only its first
    letter is a capital: "AWS", "9:15", "3 years"): what tells one option from another. A word
    joined by hyphens to one that holds a digit is part of that name ("eu-central-1", "us-east-2"):
    its letters tell it from another of the same shape ("eu-north-1")."""
    out: set[str] = set()
    text = text.strip()
    for m in _NAMED.finditer(text):
        standard = _STANDARD.match(text, m.start(1))  # "ISO 8655-6": the capitals before it are out of the match
        out |= (
            {standard.group(0)}
            if standard is not None and not text[standard.end() : m.end(1)].strip(".")
            else words_of(m.group(1))
        )
    return out


_COMPLEMENT = re.compile(
    r"^\s*(?:(?:the|a|an|our|its|their)\s+)?(?P<phrase>(?:[^.;!?\n]|\.(?=\w))+?)\s*[.;!?]*\s*$", re.I
)  # a dot inside a value ("4.29%", "v1.0.1") ends no clause


def complement(statement: str) -> str | None:
    """What a one-clause statement says is used, after its last decision verb ("The volunteer
    DBS renewal uses every three years" -> "every three years"); None when it has no such verb
    or says more than one clause."""
    cues = list(DECISION_CUE.finditer(statement))
    if not cues:
        return None
    m = _COMPLEMENT.match(statement[cues[-1].end() :])
    return m.group("phrase") if m else None


_PARTS = re.compile(r"[^\W\d_]+|\d+")


def holds(held: set[str], name: str) -> bool:
    """Whether words hold a name, whole or in its letter and digit parts ("ward7" in "Ward 7")."""
    parts = _PARTS.findall(name)
    return name in held or (len(parts) > 1 and all(stem(p) in held for p in parts))


#: A word of letters then digits ("sc47", "ward7": a slug's way of writing "Sc 47").
_JOINED = re.compile(r"([a-z]{2,})(\d+)")


def share_held(said: set[str], held: set[str]) -> float:
    """The share of a statement's words held, a word written as letters then digits ("sc47") held where
    both its parts are ("Sc 47"): the template wording joins what a note writes apart."""
    return sum(w in held or bool((m := _JOINED.fullmatch(w)) and set(m.groups()) <= held) for w in said) / len(said)


def meets(topic: set[str], held: set[str]) -> bool:
    """Whether a word of the topic is held, or one that begins like it ("min" and "minimum",
    "insurer" and "insurance": five letters in common at the start, or the whole of a shorter one)."""

    def near(a: str, b: str) -> bool:
        if a == b:
            return True
        short, long = sorted((a, b), key=len)
        return len(short) >= 3 and long.startswith(short[:5]) and not short.isdigit()

    return any(near(t, h) for t in topic for h in held)


def topic_words(statement: str, phrase: bool = False) -> set[str]:
    """The words a one-clause statement says what it is about with, before its verb ("The ward 7
    beds" of "The ward 7 beds uses 28."): never an option a version left. ``phrase``: only when
    they are one phrase (no comma: "ok going forward just answer in English, I keep ...")."""
    cues = list(DECISION_CUE.finditer(statement))
    if not cues or complement(statement) is None or (phrase and "," in statement[: cues[-1].start()]):
        return set()
    return words_of(statement[: cues[-1].start()])


def blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    for s, e in spans:
        text = text[:s] + " " * (e - s) + text[e:]
    return text


def kept(
    text: str,
    held: set[str],
    before: set[str],
    spans: Sequence[tuple[int, int]],
    phrases: Sequence[tuple[int, int]] = (),
    earlier: set[str] | frozenset[str] = frozenset(),
    reasons: Sequence[tuple[int, int]] = (),
) -> set[str]:
    """The words the version in force (``text``, its words ``held``) holds as its own: not those it
    names only where it says what it left (``spans``: "from X to", "X was overkill"), when the
    version it replaced held them (``before``: a version leaves only what came before it: "GreenCut
    rehired" is not left), or, where it says so in so many words (``phrases``, ``Facts.left_phrases``:
    "the old 14", "instead of 8%", "replacing 60 days", "from X to"), when any earlier version held
    them (``earlier``: a value two versions back). A word it names where it says what it left and again only in
    its reason (``reasons``: "move off pitch 2 to pitch 4, since pitch 2 is being re-seeded") is left too."""
    if not spans:
        return held
    own = words_of(blank(text, (*spans, *reasons)))
    gone = words_of(" ".join(text[s:e] for s, e in spans)) & before
    if earlier:
        gone |= words_of(" ".join(text[s:e] for s, e in phrases)) & earlier
    return held - (gone - own)


_AS = re.compile(r"\s+as\s+(?:the\s+|our\s+|its\s+|an?\s+)?([\w-]+)", re.I)


def named_as(text: str, option: str, subject: Iterable[str]) -> bool:
    """Whether a note names the option as what holds the statement's subject ("co-opted Fiona Lee
    as secretary"): it chose it, whatever else it chose."""
    wanted = {t for t in subject if not t.startswith("@")}
    for m in re.finditer(re.escape(option), text, re.I):
        after = _AS.match(text, m.end())
        if after and meets(wanted, words_of(after.group(1))):
            return True
    return False


_BARE_FROM = re.compile(r"\bfrom\s+(?:the\s+|our\s+)?$", re.I)


def leaves(facts: Facts, mention: Mention) -> bool:
    """Whether a note that names ``mention`` as left says it leaves it: "from X" alone does so only
    in a note that says something changed ("takes freelance gigs from X" leaves nothing)."""
    bare = _BARE_FROM.search(facts.text[max(0, mention.start - 24) : mention.start])
    return not bare or bool(facts.change_cue or facts.revert_cue)


_OPENING_WORD = re.compile(r"\s*(?:(?:the|our|their|its|his|her)\s+)?([^\W_][\w.+-]*)", re.I)


def reported_words(text: str) -> tuple[tuple[int, int], ...]:
    """Spans of the words a later clause opens with and reports on ("hammerhead repo archived", "the
    helix experiment is over", "Squash button disabled"): what a version in force says of a word, in
    any case, as the reader says it of a name ("; X was overkill"). A short note only: a document's
    clauses open with any words ("Options considered", "Every team ..."). A parenthesis opens one too
    ("Westgate phone: 020 7946 0300 (the 0444 line was temporary)")."""
    out: list[tuple[int, int]] = []
    if len(text) > LONG_NOTE_CHARS:
        return ()
    spans = clause_spans(text)[1:]
    for p in _PAREN.finditer(text):
        spans.append((p.start(1), p.end(1)))
    for cs, ce in spans:
        m = _OPENING_WORD.match(text, cs, ce)
        if m is not None and reported(text[:ce], m.end(1)) and (m.start(1), m.end(1)) not in out:
            out.append((m.start(1), m.end(1)))
    return tuple(out)


_PAREN = re.compile(r"\(([^()]+)\)")


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def _sentence_span(text: str, pos: int) -> tuple[int, int]:
    """The span of the sentence of ``text`` that holds ``pos``."""
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text) if m.end() <= pos]
    end = next((m.start() for m in _SENTENCE_END.finditer(text, starts[-1]) if m.start() >= pos), len(text))
    return starts[-1], end


def _sentence(text: str, pos: int) -> str:
    start, end = _sentence_span(text, pos)
    return text[start:end]


def kept_in_place(head: Facts, about: set[str] | frozenset[str], option: Mention) -> bool:
    """Whether the version in force names the statement's option, not as what it left, in a sentence
    that holds a word of ``about`` (the subject of the version it replaced, or the statement's topic),
    while what it chose stands in a sentence that holds none ("New term plan: pickup Mon/Wed/Fri me,
    Tue/Thu Sam (...); Maya walks home ... with the Okafor kids": Sam still does the pickup; "DNS moves
    to NS1 ... The CDN part is unchanged: Cloudflare continues to front ...": Cloudflare still is the
    CDN). It kept the option there: it did not turn from it (unlike "The GlitchTip box died. Going back
    to Sentry for shop error tracking")."""
    about = {t for t in about if not t.startswith("@")}
    if head.option is None or not about or meets(about, words_of(_sentence(head.text, head.option.start))):
        return False
    return any(
        m.key == option.key
        and m.role not in ("prev", "other")
        and not any(s <= m.start < e for s, e in head.left)
        and meets(about, words_of(_sentence(head.text, m.start)))
        for m in head.mentions
    )


#: A sentence that says a part of what came before holds as it was ("Section 3 ... is not affected and continues
#: to apply", "the indication threshold ... remain in force without change", "The CDN part is unchanged").
_UNCHANGED = re.compile(
    r"\b(?:unchanged|not affected|unaffected|without change|continues? to apply|remains? in (?:force|effect))\b",
    re.I,
)


def says_unchanged(text: str, topic: set[str]) -> bool:
    """Whether a version says, in a sentence that holds a word of the statement's topic (``topic``, its
    option's words taken out) no other sentence of it holds, that this part of what it replaced holds
    unchanged: it speaks of that part only to keep it ("Section 3 of that policy, meal per diems, is not
    affected" in a policy on approval limits), so the statement's part was not replaced. A topic word
    the version uses elsewhere ("Dual-run start date is unchanged" beside the new cutover date) keeps
    nothing. Only a document does so (``LONG_NOTE_CHARS``): a short note's "Cocktails $10, beer unchanged"
    keeps the beer, not the cocktails it names."""
    return len(text) >= LONG_NOTE_CHARS and _keeps_a_part(text, topic, _UNCHANGED, alone=True)


def _keeps_a_part(text: str, topic: set[str], says: re.Pattern[str], *, alone: bool) -> bool:
    """Whether a sentence of ``text`` that matches ``says`` holds a word of ``topic`` no other sentence of it
    holds (``says_unchanged``, ``keeps_beside``); ``alone``: a text of that one sentence counts too."""
    if not topic:
        return False
    for m in says.finditer(text):
        start, end = _sentence_span(text, m.start())
        rest = words_of(text[:start] + " " + text[end:])
        if (rest or alone) and topic & words_of(text[start:end]) - rest:
            return True
    return False


#: A word that says something holds as it did ("Dual-run start date is unchanged", "The waiting alert stays as it is").
_KEEPS = re.compile(
    r"\b(?:unchanged|not affected|unaffected|without change|stays?|remains?|continues?|is still|are still)\b", re.I
)


def keeps_beside(text: str, topic: set[str]) -> bool:
    """Whether a version says, in a sentence of its own that holds a word of the statement's topic (``topic``) no
    other sentence of it holds, that this part holds as it did, while its other sentences make the change
    ("Moving the BI cutover back two weeks to 2025-09-22 ... Dual-run start date is unchanged."): it changed a
    thing beside the statement's, and kept the statement's; it did not leave its option. A note of one sentence
    speaks of the change in it ("vet consults go to 20 minutes from June, nurse clinic unchanged")."""
    return _keeps_a_part(text, topic, _KEEPS, alone=False)


def asks(facts: Facts) -> bool:
    """Whether a note's option stands in a question ("are we still using DPD for the islands?", "is Priya doing
    next Friday or should I ask Grandma?"): the note asks about it, it does not choose it."""
    return facts.option is not None and _sentence(facts.text, facts.option.start).rstrip().endswith("?")


#: A leaving verb ("moving off", "dropping", "cancelled", "gave up on", "no longer using"; as a verb: not the nouns
#: "drop rate", "cancellation fee", "removal") and what it leaves, in any case: up to five words, to the end of the
#: clause or the next preposition or connective ("moving off us-east-1 after the outage", "We're dropping the free
#: whitening consultation offer").
_LEAVING = re.compile(
    r"\b(?:(?:mov|migrat|switch|shift|port|transition)\w*\s+off(?:\s+of)?|dropp(?:ed|ing)|ditch(?:es|ed|ing)?|"
    r"retir(?:e|es|ed|ing)|abandon(?:s|ed|ing)?|deprecat(?:e|es|ed|ing)|remov(?:e|es|ed|ing)|cancel(?:s|l?ed|l?ing)?|"
    r"quit(?:s|ting)?|end(?:ed|ing)(?=\s+(?:the|our|their|its)\s)|g[ai]v(?:e|es|en|ing)\s+up(?:\s+on)?|stopp?(?:s|ed|ing)?\s+using|"
    r"no\s+longer\s+(?:use|uses|using|on|runs?\s+on|running\s+on)|away\s+from)"
    r"\s+(?:(?:the|our|their|its)\s+)?"
    r"(?P<what>(?:[^\s;:,.!?()]|\.(?=\w))+"
    r"(?:\s+(?!(?:to|for|after|because|since|as|in|at|on|onto|with|and|but|so|from|by|until|when|which|this|next|"
    r"now|today|again|instead)\b)(?:[^\s;:,.!?()]|\.(?=\w))+){0,4})",
    re.I,
)


#: A clause that opens with what it says is gone, before a leaving verb that takes no object ("the weekly capacity
#: review is discontinued", "Dev & Ola moved out", "the club night ends this month"; not "Standup ends at 10:15",
#: "savings rate dropped to 3.8%"): up to five words.
_LEFT_SUBJECT = re.compile(
    r"(?:(?:the|our|their|its|this|that|his|her)\s+)?(?P<what>[^\s;:,.!?()]+(?:\s+[^\s;:,.!?()]+){0,4}?)"
    r"(?:['\u2019]s)?\s+(?:(?:is|are|was|were|has\s+been|have\s+been|got|gets|will\s+be|is\s+being)\s+)?"
    r"(?:discontinued|cancell?ed|scrapped|axed|dropped|retired|abandoned|decommissioned|moved\s+(?:out|away)|"
    r"(?:ends|ended|stops|stopped|lapses|lapsed|expires|expired|gone|over)(?=\s*$|\s+(?:after|this|next|today|"
    r"tomorrow|for\s+good)\b)|no\s+longer\s+(?:needed|used|in\s+use))\b(?!\s+(?:to|by|from)\b)",
    re.I,
)


def left_after_verb(text: str) -> tuple[tuple[int, int], ...]:
    """Spans of what a short note says it leaves after a leaving verb, in any case (``_LEAVING``: "moving off
    us-east-1", "dropping the free whitening consultation offer", "ending the Fleetwise contract"), or before
    one that takes no object, where a clause opens with it (``_LEFT_SUBJECT``: "the weekly capacity review is
    discontinued", "Dev & Ola moved out"): the shared reader reads a leaving verb only before a name. A short
    note only: a document's leaving verbs speak of anything ("retired staff")."""
    if len(text) > LONG_NOTE_CHARS:
        return ()
    out = [(m.start("what"), m.end("what")) for m in _LEAVING.finditer(text)]
    for cs, ce in clause_spans(text):
        m = _LEFT_SUBJECT.match(text[:ce], cs)
        if m is not None and words_of(m.group("what")):  # a pronoun ("it stops this Sunday") names nothing here
            out.append((m.start("what"), m.end("what")))
    return tuple(out)


_VALUE_WORD = r"(?:[^\s;:.!?,()]|(?<=\d)[:.,](?=\d))+"
#: "from X to Y" with a number on each side ("tightening the window from ±400 MMR to ±250 MMR").
_FROM_TO = re.compile(
    rf"\bfrom\s+(?P<x>{_VALUE_WORD}(?:\s+(?!to\b){_VALUE_WORD}){{0,3}}?)\s+to\s+(?P<y>{_VALUE_WORD}(?:\s+{_VALUE_WORD}){{0,3}})",
    re.I,
)


def changed_values(
    text: str, before: set[str] | None = None, earlier: set[str] | frozenset[str] = frozenset()
) -> tuple[tuple[int, int], ...]:
    """Spans of the values a short version in force says it changes "from X to Y", whatever its verb ("tightening
    the window from ±400 MMR to ±250 MMR"): X holds a number the version it replaced held (``before``), Y one no
    earlier version held (``earlier``): a change, not a range it restates ("open from 9:00 to 17:00"). A statement
    (``before`` None) has no chain to tell: a number on each side, another on each."""
    if len(text) > LONG_NOTE_CHARS:
        return ()
    out = []
    for m in _FROM_TO.finditer(text):
        old = {w for w in words_of(m.group("x")) if any(c.isdigit() for c in w)}
        new = {w for w in words_of(m.group("y")) if any(c.isdigit() for c in w)}
        if (old & before if before is not None else old and old != new) and new and not new & earlier:
            out.append((m.start("x"), m.end("x")))
    return tuple(out)
