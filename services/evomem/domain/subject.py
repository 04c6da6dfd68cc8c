"""Reading a short decision note: what it is about, which option it names, and in which role.

The scored linker (``evomem.domain.linkers.scored.ScoredLinker``) needs, for the new note and for
every candidate, what plain word overlap cannot give:

- **is it a decision?** A decision cue (picked, uses, runs on, moved, switched, went back,
  from here on, goes through, "X is the ...", "Label: X.") *and* an option it chooses.
  Context and status notes ("Ledger Postgres backups took 4 minutes", "had no incidents")
  have neither: they are never linked, to or from.
- **the names it mentions, and their roles.** A name is a capitalised word that is not
  ordinary English and is not written in lowercase elsewhere in the memory, a word with inner
  capitals or digits (SQLite, Auth0), an acronym (JSON, SQS), a run of them (GitHub Actions),
  with a version if one follows (Python 3.12); a lowercase word counts only in a clear slot
  ("picked cron for"). Each is ``chosen`` (the option: after a choosing verb or preposition,
  or the complement of a copula), ``prev`` (what the note leaves: "from X to", "replacing X
  with", "X is no longer", "instead of X", "after X kept failing", "; X was overkill"),
  ``subject`` (a name the decision is about: "The capital of *Germany* is Berlin", "the
  *Scotland* government") or ``other`` (inside a reason clause, or the option repeated as a
  modifier: "the SQLite database").
- **its subject**: the content words of the decision itself (not its reason, not the clauses
  about the old option, not its scope phrase, not the options), with common infrastructure
  paraphrases folded into one *concept* ("database" and "datastore" are ``@database``;
  "metrics stack" and "monitoring" are ``@monitoring``), and its *core*: the tokens that can
  identify it (not verb forms such as "founded"). The concept table is general vocabulary of
  the field, not a list of any data set's components or products.
- **hedges** ("considered", "might", "should we ...?", "not"): a tentative note is never linked.
- **explicit references** ("This PEP replaces PEP 215") and a document's own identifier
  (its first line, "PEP: 215").

Every fact keeps the exact substring of the note it was read from, so a link's provenance can
quote the note. Pure Python and regular expressions; nothing is learnt or downloaded.

The reader is three modules: ``evomem.domain.subject_words`` (its vocabulary, the concept table
and the subject tokens), ``evomem.domain.subject_names`` (the names and their roles) and this one
(decision cues, hedges, explicit references, and ``analyse``, which puts the facts together).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from evomem.domain.linkers.vocabulary import CHANGE_CUE, CUE_WORDS, STOPWORDS, fold
from evomem.domain.scope import infer_scope, normalise
from evomem.domain.subject_names import (
    AFTER_REPORT,
    BACK,
    LOWER_LEAD,
    LOWER_SLOT,
    LOWER_TO,
    LOWER_WITH,
    Mention,
    after_label,
    clause_of,
    clause_spans,
    find_names,
    known_words,
    left_phrases,
    opening_reports,
    reason_spans,
    role_of,
    sentence_initial,
    subject_names,
)
from evomem.domain.subject_words import CONCEPT_OF, FILLER, TOKEN, WEAK, masked, subject_tokens

#: Longer notes are documents, not decision notes: only explicit references are read there.
LONG_NOTE_CHARS = 1200

#: Decision cues: a note without one of them decides nothing.
DECISION_CUE = re.compile(
    r"\b(?:decided|decision|picked|pick|chose|chosen|choose|selected|select|adopted|adopt|standardi[sz]ed|"
    r"settled(?: on)?|agreed|going with|go with|went with|opted for|will use|we use|uses|use|using|"
    r"will run on|runs? on|running on|now runs?|lives? (?:in|on)|hosted on|"
    r"moved|move|moving|migrated|migrate|migrating|switched|switch|switching|replaced|replace|replacing|"
    r"changed|change|changing|reverted|revert|rolled back|roll back|went back|go back|going back|"
    r"back (?:on|to)|is back|are back|returns? to|returned to|no longer|instead|from now on|from here on|"
    r"going forward|as of|keeps?|stays? on|upgraded|downgraded|ported|consolidated|now|"
    r"dropped|ditched|abandoned|retired|deprecated|in favou?r of|default(?:s to)?|standardi[sz]e|"
    r"go(?:es)? (?:to|through|via)|went (?:to|through|via)|sen[dt]s? (?:to|through|via)|ship(?:s|ped)? (?:to|via)|"
    r"routed? (?:to|through|via)|stored? in|stores? in|deploy(?:s|ed)? (?:to|on)|built (?:with|on)|"
    r"written in|powered by|backed by|managed (?:by|with|in)|served (?:by|from)|handled by|provisioned with)\b",
    re.I,
)
#: "X is the <noun>", "the <noun> is X": a copula that states a choice.
_COPULA_NAME = re.compile(
    r"\b(?:is|are)\s+(?:now\s+)?$|"
    r"\b(?:is|are|was|were)\s+(?:now\s+)?\w+ed\s+(?:with|on|in|by|via|through|to|onto)\s+(?:the\s+)?$",
    re.I,
)
_LABEL_BEFORE = re.compile(r"^\s*[^:.;!?\n]{2,60}:\s*$")
_COPULA_AFTER = re.compile(r"^\s+(?:is|are)\s+(?:the|our|now)\b", re.I)

#: Words that make a decision tentative, conditional or negative. Read outside reason clauses
#: and the clauses about a replaced option ("Postgres did not survive the drill" is fine).
HEDGE = re.compile(
    r"\b(?:consider(?:ed|ing)?|evaluat\w+|propos\w+|might|maybe|perhaps|possibly|could|should|would|"
    r"plan(?:s|ned|ning)? to|thinking (?:about|of)|if|unless|whether|decided against|rejected|ruled out|"
    r"not|won't|didn't|don't|doesn't|isn't|aren't|never|tried|trying|trial\w*|pilot\w*|experiment\w*|"
    r"prototyp\w+|test(?:ing|ed)? out|looking (?:at|into)|investigat\w+|draft|tbd)\b|\?",
    re.I,
)
# Going back, read by the stem of its verb in every inflection ("reverting", "returning to", "goes back").
REVERT_CUE = re.compile(
    r"\b(?:revert\w*|roll\w*\s+back|(?:go|goes|going|gone|went)\s+back|back (?:on|to)|is back|are back|"
    r"return\w*\s+to|restored)\b",
    re.I,
)

# Explicit references to a document by identifier ("This PEP replaces PEP 215", "it supersedes
# ADR-12", "this is an updated version of RFC 1"): the note itself (this/it/we/the current
# proposal) replaces the document it names right after the verb. Passive forms ("was
# superseded by X") point the other way and are not read.
_REF_SUBJECT = r"\b(?:this|it|we|the\s+(?:current|present|new)\s+(?:proposal|document|version|pep|adr|rfc|spec\w*))\b"
_REF_VERB = (
    r"\b(?:supersedes?|supersede|replaces?|replace|obsoletes?|obsolete|rescinds?|rescind|withdraws?|"
    r"(?:is|are)\s+(?:an?\s+)?(?:updated|revised|new)\s+version\s+of|"
    r"(?:is|are)\s+(?:essentially\s+)?a\s+continuation\s+of|(?:is|are)\s+a\s+revision\s+of)\b"
)
_REF_NEGATION = re.compile(r"\b(?:not|n't|rather than|instead of|never|no longer|if)\b", re.I)
_IDENT_HEAD = re.compile(r"^\s*#*\s*([A-Za-z]{2,10})\s*[:\-#]?\s*0*(\d{1,6})\b")


#: A record's front matter: a block of "Field: value" lines at its top, after its title ("Status: Accepted
#: - Date: 2023-06-26 - Author: Pieter de Wit", "From: Ines (CEO)" then "Subject: End of year").
_FIELD_KEY = r"[A-Z][A-Za-z]*(?: [A-Za-z]+){0,2}:"
_FIELD_LINE = re.compile(rf"^\s*{_FIELD_KEY}\s+\S.{{0,80}}$")
_FIELDS = re.compile(rf"(?:^|\s[-|\u2013\u2014]\s|\|)\s*{_FIELD_KEY}(?=\s)")


def front_matter(text: str) -> tuple[int, int] | None:
    """The span of a record's header fields: the "Field: value" lines (short; two fields at least, on
    one line or several) that open it, after a title line, with more text after them. Their values
    describe the record (its status, date, author, sender), not what it decides. None: no such block
    (a note that is a field or two, "Bins: Finn", is what it says)."""
    lines: list[tuple[int, int, str]] = []
    pos = 0
    for line in text.split("\n"):
        lines.append((pos, pos + len(line), line))
        pos += len(line) + 1
    i = 0
    while i < len(lines) and not lines[i][2].strip():
        i += 1
    if i < len(lines) and not _FIELD_LINE.match(lines[i][2]):
        i += 1  # its title
        while i < len(lines) and not lines[i][2].strip():
            i += 1
    j, fields = i, 0
    while j < len(lines) and _FIELD_LINE.match(lines[j][2]):
        fields += len(_FIELDS.findall(lines[j][2]))
        j += 1
    if j == i or fields < 2 or not text[lines[j - 1][1] :].strip():
        return None
    return lines[i][0], lines[j - 1][1]


_LIST_GAP = re.compile(r",\s+(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


def colon_lists(text: str, mentions: list[Mention]) -> list[Mention]:
    """A chosen name after a label's colon that opens a list of three names or more ("three levels:
    Public, Internal, Confidential") is one option, the whole list, not its first item: the list is
    what the label is set to. Its other items are part of it."""
    out: list[Mention] = []
    i = 0
    while i < len(mentions):
        m = mentions[i]
        j = i
        while j + 1 < len(mentions) and _LIST_GAP.fullmatch(text[mentions[j].end : mentions[j + 1].start]):
            j += 1
        if m.role == "chosen" and j - i >= 2 and after_label(text, m.start):
            whole = text[m.start : mentions[j].end]
            out.append(Mention(whole, fold(whole), m.start, mentions[j].end, "chosen"))
            i = j + 1
            continue
        out.append(m)
        i += 1
    return out


# ----------------------------------------------------------------------------- the facts


@dataclass(frozen=True, slots=True)
class Facts:
    text: str
    long: bool = False
    decision_cue: str | None = None  # the span that makes the note a decision
    change_cue: str | None = None
    revert_cue: str | None = None
    hedge: str | None = None  # "considered", "might", "not": the note may not decide anything yet
    mentions: tuple[Mention, ...] = ()
    subject: frozenset[str] = frozenset()  # concept-folded subject tokens
    core: frozenset[str] = frozenset()  # the subject tokens that can identify it (not verb forms)
    subject_spans: dict[str, str] = field(default_factory=dict)  # token -> span of the note
    scope_span: str | None = None
    identifier: str | None = None  # "pep 215" when the note starts with such a header
    left: tuple[tuple[int, int], ...] = ()  # spans about what the note leaves (prev names, their clauses)
    left_phrases: tuple[tuple[int, int], ...] = ()  # of those, the phrases a change says it leaves, values included

    @property
    def chosen(self) -> tuple[Mention, ...]:
        return tuple(m for m in self.mentions if m.role == "chosen")

    @property
    def prev(self) -> tuple[Mention, ...]:
        return tuple(m for m in self.mentions if m.role == "prev")

    @property
    def option(self) -> Mention | None:
        """The option the note decides: its first chosen mention."""
        chosen = self.chosen
        return chosen[0] if chosen else None

    @property
    def is_decision(self) -> bool:
        return not self.long and self.decision_cue is not None and self.option is not None

    def names(self) -> set[str]:
        return {m.key for m in self.mentions}


def lowercase_vocabulary(texts: Iterable[str]) -> frozenset[str]:
    """Words written in lowercase somewhere in these texts (so not product names)."""
    out: set[str] = set()
    for t in texts:
        if len(t) > LONG_NOTE_CHARS:
            continue
        out.update(m.group(0) for m in TOKEN.finditer(t) if m.group(0).islower())
    return frozenset(out)


def lowercase_options(facts: Iterable[Facts]) -> frozenset[str]:
    """One-word options written in lowercase that these decisions choose or leave ("cron")."""
    return frozenset(
        m.key
        for f in facts
        if f.is_decision
        for m in f.mentions
        if m.role in ("chosen", "prev") and m.text.islower() and " " not in m.text
    )


def identifier(text: str) -> str | None:
    """A document identifier from the first line ("PEP: 215" -> "pep 215")."""
    m = _IDENT_HEAD.match(text[:80])
    if not m:
        return None
    return f"{m.group(1).lower()} {int(m.group(2))}"


def references(text: str, prefixes: set[str]) -> tuple[tuple[str, str], ...]:
    """Documents the note says it replaces: (identifier, the statement as written).

    Only an active statement by the note about itself counts ("This PEP replaces PEP 215",
    "it would supersede :pep:`563` and :pep:`486`"), with the reference right after the verb
    and no negation or condition between ("supplements rather than supersedes" is not one).
    """
    if not prefixes:
        return ()
    alt = "|".join(re.escape(p) for p in sorted(prefixes))
    # The reStructuredText role (":pep:`215`") first, so its closing backquote is consumed.
    one = rf"(?::(?:{alt}):`(?:[^`<]*<)?0*\d{{1,6}}[^`]*`|\b(?:{alt})\b\W{{0,3}}0*\d{{1,6}}\b)"
    ref = re.compile(rf"(?::({alt}):`(?:[^`<]*<)?0*(\d{{1,6}})[^`]*`|\b({alt})\b\W{{0,3}}0*(\d{{1,6}})\b)", re.I)
    statement = re.compile(
        rf"{_REF_SUBJECT}(?P<gap>[^.;:!?]{{0,80}}?){_REF_VERB}[\s*_\"']{{0,4}}(?:the\s+)?"
        rf"(?P<refs>{one}(?:\s*(?:\([^)]{{0,80}}\)\s*)?(?:,\s*and\s+|,\s*|and\s+){one})*)",
        re.I,
    )
    out: list[tuple[str, str]] = []
    for m in statement.finditer(text):
        if _REF_NEGATION.search(m.group("gap")):
            continue
        for r in ref.finditer(m.group("refs")):
            prefix = (r.group(1) or r.group(3)).lower()
            number = int(r.group(2) or r.group(4))
            out.append((f"{prefix} {number}", m.group(0)))
    return tuple(out)


def analyse(
    text: str,
    vocab: frozenset[str] = frozenset(),
    scope: str | None = None,
    known: frozenset[str] = frozenset(),
) -> Facts:
    """Read one note. ``vocab``: words seen in lowercase in the memory (see ``lowercase_vocabulary``).

    ``scope``: the note's scope. When the note's own words name it ("In staging, ..."), that
    phrase is left out of the subject; a phrase that only looks like a scope is kept.

    ``known``: lowercase options other decisions in the memory chose ("cron"; see
    ``lowercase_options``). Such a word is read as a name wherever it stands ("Replacing cron
    with Prefect"), not only in the clear slots a lowercase option needs otherwise.
    """
    ident = identifier(text)
    if len(text) > LONG_NOTE_CHARS:
        return Facts(text=text, long=True, identifier=ident)
    inferred = infer_scope(text) if scope is not None else None
    blocked: list[tuple[int, int]] = []
    scope_span = None
    if inferred is not None and normalise(inferred.scope) == normalise(scope):
        at = text.find(inferred.evidence)
        if at >= 0:
            blocked.append((at, at + len(inferred.evidence)))
            scope_span = inferred.evidence
    reasons = reason_spans(text)
    clauses = clause_spans(text)
    header = [h] if (h := front_matter(text)) is not None else []  # names there are no choice ("Status: Accepted")
    names = find_names(text, vocab)
    if known:
        names = sorted(names + known_words(text, known, names))
    mentions: list[Mention] = []
    unsure: set[int] = set()  # a capitalised word at a sentence start may be an ordinary word
    for s, e in names:
        if masked(blocked, s, e):
            continue
        word = text[s:e]
        plain_word = " " not in word and word[1:].islower() and word.isalpha()
        # "Payments: Stripe", "Sol's back as DM": sure
        if plain_word and sentence_initial(text, s) and not after_label(text, s) and not BACK.match(text[e:]):
            unsure.add(s)
        role = "other" if masked(header, s, e) else role_of(text, s, e, clauses, reasons)
        mentions.append(Mention(word, fold(word), s, e, role))
    # Lowercase options in a clear slot ("picked cron for"), when no sure name is chosen.
    if not any(m.role == "chosen" and m.start not in unsure for m in mentions):
        taken = {m.start for m in mentions}
        for pattern in (LOWER_SLOT, LOWER_TO, LOWER_WITH, LOWER_LEAD):
            for m in pattern.finditer(text):
                w, s = m.group(1), m.start(1)
                if w in STOPWORDS or w in CUE_WORDS or w in FILLER or w in WEAK or (w,) in CONCEPT_OF or s in taken:
                    continue
                if w.endswith(("ed", "ing")):
                    continue
                if masked(reasons, s, m.end(1)) or masked(blocked, s, m.end(1)) or masked(header, s, m.end(1)):
                    continue
                taken.add(s)
                mentions.append(Mention(w, fold(w), s, m.end(1), role_of(text, s, m.end(1), clauses, reasons)))
        mentions.sort(key=lambda x: x.start)
    mentions = opening_reports(text, mentions, clauses)
    # An unsure word is dropped when a sure name is chosen ("Admin dashboard: going with X"),
    # unless it reads as a replaced option ("; Jenkins lost data").
    if any(m.role == "chosen" and m.start not in unsure for m in mentions):
        mentions = [m for m in mentions if m.start not in unsure or m.role == "prev"]
    mentions = colon_lists(text, subject_names(text, mentions))
    # A name that qualifies a noun ("the Scotland government") is part of what the note is
    # about, unless it is the option itself ("we moved the SQLite database; it stays on SQLite").
    options = {m.key for m in mentions if m.role in ("chosen", "prev")}
    mentions = [
        Mention(m.text, m.key, m.start, m.end, "other" if m.key in options else "subject")
        if m.role == "modifier"
        else m
        for m in mentions
    ]
    # Clauses about a replaced option (and reasons) are not part of the subject.
    prev_clauses = []
    for m in mentions:
        if m.role == "prev" and AFTER_REPORT.match(text[m.end : m.end + 48]):
            ci = clause_of(clauses, m.start)
            if ci >= 0:
                prev_clauses.append((m.start, clauses[ci][1]))  # "X kept timing out", "after X was slow"
    # A later clause that reports on something ("Cron was hard to debug") is about the past.
    for ci, (cs, ce) in enumerate(clauses):
        first = TOKEN.match(text, cs)
        if ci > 0 and first and first.group(0).lower() not in STOPWORDS and AFTER_REPORT.match(text[first.end() : ce]):
            prev_clauses.append((cs, ce))
            low = first.group(0).lower()
            if low in vocab and low not in STOPWORDS and not any(x.start == cs for x in mentions):
                mentions.append(Mention(first.group(0), fold(low), cs, first.end(), "prev"))
    mentions.sort(key=lambda x: x.start)
    hole = blocked + reasons + prev_clauses + [(m.start, m.end) for m in mentions if m.role != "subject"]
    subject, core, spans = subject_tokens(text, hole, [(m.start, m.end) for m in mentions if m.role == "subject"])
    plain = text
    for s, e in reasons:
        plain = plain[:s] + " " * (e - s) + plain[e:]
    cue = DECISION_CUE.search(plain)
    decision = cue.group(0) if cue else None
    if decision is None:
        # A copula that states a choice: "Postgres is the ledger database", "the database is Postgres".
        for m in mentions:
            if m.role != "chosen":
                continue
            before = _COPULA_NAME.search(text[max(0, m.start - 40) : m.start])
            after = _COPULA_AFTER.match(text[m.end :])
            label = _LABEL_BEFORE.search(text[: m.start]) if text[m.end :].strip() in ("", ".") else None
            if label:  # "API gateway: NGINX."
                decision = text[label.start() : m.end]
                break
            if before:
                decision = text[max(0, m.start - 40) + before.start() : m.end]
                break
            if after:
                decision = text[m.start : m.end + after.end()]
                break
    settled = plain
    # "..., not Postgres": the words that mark an option as left are not a hedge.
    left = [(max(0, m.start - 6), m.end) for m in mentions if m.role == "prev"]
    for s, e in prev_clauses + left:
        settled = settled[:s] + " " * (e - s) + settled[e:]
    hedge = HEDGE.search(settled)
    phrases = tuple(left_phrases(text, clauses))
    leaving = sorted({*prev_clauses, *((m.start, m.end) for m in mentions if m.role == "prev"), *phrases})
    change = CHANGE_CUE.search(plain)
    revert = REVERT_CUE.search(plain)
    return Facts(
        text=text,
        decision_cue=decision,
        change_cue=change.group(0) if change else None,
        revert_cue=revert.group(0) if revert else None,
        hedge=hedge.group(0) if hedge else None,
        mentions=tuple(mentions),
        subject=subject,
        core=core,
        subject_spans=spans,
        scope_span=scope_span,
        identifier=ident,
        left=tuple(leaving),
        left_phrases=phrases,
    )
