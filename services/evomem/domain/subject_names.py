"""The names a decision note mentions, and the role of each (``evomem.domain.subject``).

A name is a capitalised word that is not ordinary English and is not written in lowercase elsewhere
in the memory, a word with inner capitals or digits (SQLite, Auth0), an acronym (JSON, SQS), a run
of them (GitHub Actions), with a version if one follows (Python 3.12): ``find_names``. A lowercase
word counts only in a clear slot ("picked cron for": ``LOWER_SLOT``, ``LOWER_TO``, ``LOWER_WITH``,
``LOWER_LEAD``) or when the memory chose it elsewhere (``known_words``). Each mention's role is read
from the words just before and after it (``role_of``): ``chosen``, ``prev``, ``modifier`` or
``other``; ``subject_names`` turns chosen names outside a choice slot into ``subject``.
A later clause (or a parenthesis) that reports on a name leaves it (``reported``: "; the Snyk
seats were $40k"), and so does a note that opens with one reported on and then changes something
(``opening_reports``). ``left_phrases`` reads what a change leaves in any case, values included
("from 2 weeks to 3 weeks", "instead of 08:15", "; 3.1 hurt recall").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evomem.domain.linkers.vocabulary import CHANGE_CUE, CUE_WORDS, STOPWORDS, fold
from evomem.domain.subject_words import (
    CATEGORY_ACRONYMS,
    COMMON_CAPITALISED,
    CONCEPT_OF,
    DATE_ABBREVIATIONS,
    FILLER,
    TITLES,
    TOKEN,
    masked,
)


@dataclass(frozen=True, slots=True)
class Mention:
    """An option-like name in the note, where it is, and what the note does with it."""

    text: str  # as written (a substring of the note)
    key: str  # compared case-insensitively
    start: int
    end: int
    role: str  # chosen | prev | subject | other (see the module docstring)


#: Clause boundaries inside a note.
_CLAUSE_BREAK = re.compile(r"[;:]\s+|(?<=[.!?])\s+|,\s+|\s+[-\u2013\u2014]\s+|\n+")
#: A reason clause runs from its connective to the end of the clause.
_REASON = re.compile(
    r"\b(?:because|since|due to|given that|as it|so that|so we|to avoid|in order to|which means|as a result)\b"
    r"[^;.!?]*",
    re.I,
)
#: A lowercase option leading its clause before a copula ("cron is the scheduler").
LOWER_LEAD = re.compile(r"(?:^|[:;.]\s+)([a-z][\w.+-]{1,30})\s+(?:is|are)\s+(?:the|our|back)\b")

# Roles, read from the words just before and after a mention. A leaving verb is read by its stem,
# in every inflection ("moves off", "cancelled", "gave up"); a change verb leaves what it moves
# "off", its object between ("moving shipment events off Kafka").
_BEFORE_PREV = re.compile(
    r"(?:\bfrom|\baway from|\breplac\w*|\bdropp?\w*|\bditch\w*|\bretir\w*|\babandon\w*|\bdeprecat\w*|"
    r"\bremov\w*|\bcancel\w*|\bquit(?:s|ting)?|\bg[ai]v(?:e|es|en|ing)\s+up(?:\s+on)?|\bstopp?(?:s|ed|ing)?\s+using|"
    r"\binstead of|\brather than|\bnot|\bno longer (?:use|uses|using|on|runs? on|running on)|"
    r"\b(?:mov|migrat|switch|shift|port|transition)\w*(?:\s+[^\s;:.!?,]+){0,4}?\s+off(?:\s+of)?|"
    r"\bleft|\bleav(?:e|es|ing)|\bover)\s+(?:the\s+|our\s+)?$",
    re.I,
)
# Right after these words a name is what the note chooses, whatever follows it
# ("switching to GitHub Actions next sprint"); elsewhere a name followed by a noun is a modifier.
_BEFORE_CHOSEN = re.compile(
    r"(?:\bto|\bwith|\bon|\bonto|\buse|\buses|\busing|\bchose|\bpicked|\badopted|\bselected|\bvia|"
    r"\bthrough|\bin favou?r of|\bby)\s+(?:the\s+)?$",
    re.I,
)
#: A label's colon (not a time's), an equals sign or an arrow: what follows is what the label is set to.
_LABEL_MARK = r"(?<!\d):|=|->|\u2192"
# Where the option of a decision stands: after a choosing verb or preposition, or as the
# complement of a copula ("The capital of Germany is Berlin": Berlin, not Germany).
_CHOICE_SLOT = re.compile(
    r"(?:\bto|\bwith|\bon|\bonto|\buse|\buses|\busing|\bchose|\bpicked|\badopted|\bselected|\bvia|"
    r"\bthrough|\bin favou?r of|\bby|\bis|\bare|\bwas|\bwere|\bsettled on|\bgoing with|\bwent with|"
    rf"\bgo with|{_LABEL_MARK})\s+(?:the\s+|now\s+)?$",
    re.I,
)
_CHOICE_SUBJECT = re.compile(r"^(?:\s+(?:is|are)\s+(?:back|the|our|now)|['\u2019]s\s+back)\b", re.I)
#: A name that the sentence says is back ("Sol's back as DM", "Kafka is back"): it chooses it again.
BACK = re.compile(r"^(?:\s+(?:is|are)|['\u2019]s)\s+back\b", re.I)


# A report that chooses its name (again): "GreenCut rehired", "Linde renewed", "Ruel was appointed".
_CHOSEN_AGAIN = re.compile(
    r"^\s+(?:(?:was|were|is|are|has been|have been|got|gets)\s+)?(?:re-?(?:hired|signed|newed|instated|elected|"
    r"appointed|engaged|booked|opened|enabled|activated|started)|picked|chosen|selected|adopted|approved|"
    r"confirmed|hired|appointed|elected)\b",
    re.I,
)


def in_aside(text: str, start: int) -> bool:
    """Whether ``start`` lies inside an open parenthesis ("Ostrava Steelworks (Mr. Hrubý)")."""
    paren = text.rfind("(", 0, start)
    return paren >= 0 and ")" not in text[paren:start]


def subject_names(text: str, mentions: list[Mention]) -> list[Mention]:
    """Of several chosen names, the ones in a choice slot are the option; the others name
    what the decision is about ("The CEO of Apple is Tim Cook"), so they join the subject.
    A name chosen inside an aside (a parenthesis) is not the option when one outside is chosen
    ("Jonas (Priya out sick)", "Delft Ceramics (Anouk)"): it is ``other``."""
    chosen = [m for m in mentions if m.role == "chosen"]
    if len(chosen) < 2:
        return mentions
    aside = {m.start for m in chosen if in_aside(text, m.start)}
    if len(aside) < len(chosen):
        mentions = [Mention(m.text, m.key, m.start, m.end, "other") if m.start in aside else m for m in mentions]
        chosen = [m for m in chosen if m.start not in aside]
        if len(chosen) < 2:
            return mentions
    slotted = {
        m.start
        for m in chosen
        if _CHOICE_SLOT.search(text[max(0, m.start - 24) : m.start]) or _CHOICE_SUBJECT.match(text[m.end :])
    }
    keep = slotted or {chosen[-1].start}  # no slot: the complement comes last
    return [
        Mention(m.text, m.key, m.start, m.end, "subject") if m.role == "chosen" and m.start not in keep else m
        for m in mentions
    ]


_BEFORE_AFTER = re.compile(r"\bafter\s+(?:the\s+|our\s+)?$", re.I)
_AFTER_PREV = re.compile(
    r"^\s+(?:(?:is|was|are|were)\s+(?:no longer|not|gone|out|retired|deprecated|dropped|dead|replaced|"
    r"superseded|removed|abandoned|phased out)\b|"
    r"(?:isn't|wasn't|aren't|weren't)\b|(?:is|was|are|were)\s+(?:too|overkill|painful|slow|hard|expensive)\b)",
    re.I,
)
# A later clause whose subject is a name and whose verb reports on it: "Postgres was overkill".
AFTER_REPORT = re.compile(
    r"^\s+(?:was|were|had|has|did|didn't|did not|kept|keeps|lost|lacked|needed|cost|costs|couldn't|could not|"
    r"can't|cannot|failed|fails|broke|breaks|caused|became|got|went down|[a-z]+ed|"
    r"(?:gets|get|to be|will be|is being|are being)\s+[a-z]+ed|ends?|lapses?|expires?|hurts?|hid|"
    r"winds? down|wound down|(?:is|are) over)\b",
    re.I,
)
# What may stand between a name and the verb that reports on it: a possessive, or another name
# it is listed with ("Marqeta and Galileo contracts end"); then up to two words of the noun it
# qualifies ("Snyk seats were $40k", "the Unleash VM gets decommissioned").
_LISTED = re.compile(r"(?:['\u2019]s)?(?:\s+(?:and|&)\s+(?:the\s+)?[A-Z][\w.+&-]*(?:\s+[A-Z][\w.+&-]*)*)?")
_GAP_WORD = re.compile(r"\s+([a-z][a-z-]+|[A-Z]{2,}s?)(?=\s)")
# The words that may open a clause before the name it reports on ("; the Unleash VM gets ...").
_REPORT_LEAD = re.compile(
    r"^(?:(?:and|but|as|also|plus)\s+)?(?:(?:the|our|their|its|his|her)\s+)?"
    r"(?:(?:the\s+)?[A-Z][\w.+&-]*(?:\s+[A-Z][\w.+&-]*)*\s+(?:and|&)\s+)?$",
    re.I,
)


def reported(text: str, end: int) -> bool:
    """Whether the words after a name (ending at ``end``) report on it: a verb of ``AFTER_REPORT``,
    after at most a possessive, a listed name and two words of the noun it qualifies."""
    listed = _LISTED.match(text, end)
    at = listed.end() if listed else end
    for _ in range(3):
        if AFTER_REPORT.match(text[at : at + 60]):
            return True
        word = _GAP_WORD.match(text, at)
        if word is None or word.group(1).lower() in STOPWORDS or word.group(1).lower() in CUE_WORDS:
            return False
        at = word.end()
    return False


# A lowercase option in a clear slot: "picked cron for", "from cron to Airflow".
_LOWER_WORD = r"([a-z][a-z0-9+-]*(?:\.[a-z0-9]+)*)"
# What may follow it: a preposition, a reason, a time marker ("migrated to cron this week"),
# or the end of the clause.
_LOWER_END = (
    r"(?=\s+(?:for|as|to|instead|because|since|after|this|next|today|tonight|now|again|from|starting|"
    r"effective|until)\b|\s*[;,.:](?!\S)|\s*$)"
)
LOWER_SLOT = re.compile(
    r"\b(?i:picked|chose|selected|adopted|going with|went with|go with|uses|use|using|runs on|run on|"
    r"back to|back on|returns to|from|is|settled on|settled:)\s+" + _LOWER_WORD + _LOWER_END
)
LOWER_TO = re.compile(
    r"\b(?i:reverted|rolled back|changed|moved|switched|migrated|returned)\b[^;:.]{0,50}?\bto\s+"
    + _LOWER_WORD
    + _LOWER_END
)
# "Replacing Airflow with cron as ...", "swapped Jenkins for drone".
LOWER_WITH = re.compile(
    r"\b(?i:replac(?:e|es|ed|ing)|swapp?(?:ed|ing)?|swaps)\b[^;:.]{0,50}?\b(?:with|for|by)\s+"
    + _LOWER_WORD
    + _LOWER_END
)


# What a change says it leaves, written in any case ("changes from two weeks to three weeks",
# "now six years instead of seven", "replacing the 14:00 rule", "short of the old 14", "3 jobs, not
# the 4 we had"): the phrase runs to the next "to" (after "from"), or to the end of its clause, six
# words at most.
_WORD = r"(?:[^\s;:.!?,()]|(?<=\d)[:.,](?=\d))+"  # a word, or a value with its inner separators: 08:40, 1,100
_LEFT_FROM = re.compile(rf"\bfrom\s+({_WORD}(?:\s+(?!to\b){_WORD}){{0,5}}?)\s+to\s+\S", re.I)
_LEFT_AFTER = re.compile(
    r"\b(?:instead of|rather than|in place of|replacing|replaces|replaced|the old|the previous|the former|"
    r"not(?:\s+quite)?\s+the)\s+"
    rf"((?:the\s+)?{_WORD}(?:\s+{_WORD}){{0,5}}?)(?=\s*(?:[;:!?,()]|\.(?:\s|$)|$|"
    r"\s+(?:after|because|since|for|as|in|on|at|from|with|by|and|but|so|which|when|until)\b))",
    re.I,
)

# Verbs of a change in any form ("changes", "moves", "raising", "cuts"): "from X to Y" after one
# of them is a change, not a range ("open from 9:00 to 17:00").
_CHANGE_VERB = re.compile(
    r"\b(?:chang|mov|switch|migrat|shift|swap|rais|lower|cut|reduc|increas|extend|shorten|bump|upgrad|"
    r"downgrad|relicens|revis|revert|return|drop)\w*",
    re.I,
)


# A value opening its clause ("3.1 hurt recall", "v2.4 double-counts overtime"), after a determiner.
_VALUE_LEAD = re.compile(r"(?:(?:the|our|their)\s+)?(\S*\d[^\s;:,]*)", re.I)


def left_phrases(text: str, clauses: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of the phrases a change says it leaves, in a clause that also holds a change cue
    (for "from X to Y"); options the name reader cannot see (values, lowercase phrases) included;
    a value a clause opens with and reports on ("; 3.1 hurt recall"), the first clause only when
    a later one says something changes."""
    out: list[tuple[int, int]] = []
    changes = len(clauses) > 1 and bool(
        CHANGE_CUE.search(text[clauses[0][1] :]) or _CHANGE_VERB.search(text[clauses[0][1] :])
    )
    for ci, (cs, ce) in enumerate(clauses):
        value = _VALUE_LEAD.match(text, cs)
        if value and (ci > 0 or changes) and value.end(1) <= ce and AFTER_REPORT.match(text[value.end(1) : ce]):
            out.append((value.start(1), value.end(1)))
        clause = text[cs:ce]
        for m in _LEFT_AFTER.finditer(clause):
            out.append((cs + m.start(1), cs + m.end(1)))
        for m in _LEFT_FROM.finditer(clause):
            if CHANGE_CUE.search(clause[: m.start()]) or _CHANGE_VERB.search(clause[: m.start()]):
                out.append((cs + m.start(1), cs + m.end(1)))
    return out


# A report that keeps its subject: it goes somewhere ("Kafka moved to the new cluster") or was
# chosen ("Postgres was picked for the ledger").
_GOES_TO = re.compile(r"^\s+\S+\s+(?:to|onto|into|over to|back to|on|with)\b", re.I)
_KEPT = re.compile(
    r"^\s+(?:(?:was|were|is|are|has been|have been|got|gets)\s+)?(?:picked|chosen|chose|selected|adopted|"
    r"approved|agreed|confirmed|kept|retained|renewed|re[a-z]+ed|signed|hired|back)\b",
    re.I,
)


def opening_reports(text: str, mentions: list[Mention], clauses: list[tuple[int, int]]) -> list[Mention]:
    """A name that opens the note and is reported on ("CourtNest keeps double-booking. We're
    reverting to the paper sheet", "Pine & Petal fired, GreenCut rehired") is left when a later
    clause chooses another name or says it changes something; alone it is what the note is about."""
    later = [i for i, (cs, ce) in enumerate(clauses) if i > 0]
    if not later:
        return mentions
    rest = text[clauses[0][1] :]
    changes = any(m.role == "chosen" and clause_of(clauses, m.start) > 0 for m in mentions) or bool(
        CHANGE_CUE.search(rest) or _CHANGE_VERB.search(rest)
    )
    if not changes:
        return mentions
    out = []
    for m in mentions:
        lead = text[clauses[0][0] : m.start].split()
        if (
            m.role in ("chosen", "modifier")  # "La Brisa closed": a lowercase word follows it
            and clause_of(clauses, m.start) == 0
            and _REPORT_LEAD.match(" ".join(lead) + " " if lead else "")
            and (AFTER_REPORT.match(text[m.end : m.end + 60]) if m.role == "modifier" else reported(text, m.end))
            and not _GOES_TO.match(text[m.end :])
            and not _KEPT.match(text[m.end :])
        ):
            m = Mention(m.text, m.key, m.start, m.end, "prev")
        out.append(m)
    return out


#: A label's colon (or an arrow, an equals sign) right before a name: "Payments: Stripe", "fish supplier =
#: Dockside Catch", "donors \u2192 Salesforce NPSP". The name is what the label is set to.
_AFTER_LABEL = re.compile(rf"(?:{_LABEL_MARK})\s+(?:the\s+)?$")


def after_label(text: str, start: int) -> bool:
    """Whether the name at ``start`` stands right after a label's colon, an arrow or an equals sign."""
    return _AFTER_LABEL.search(text[max(0, start - 12) : start]) is not None


def sentence_initial(text: str, start: int) -> bool:
    """Whether ``start`` begins a sentence (after quotes and brackets); not after a title's period ("Dr. Okafor")."""
    before = text[:start].rstrip(" \t\"'([")
    return not before or (before[-1] in ".!?:;\n" and not abbreviated(before))


_ABBREVIATION = re.compile(r"(?<![\w.])([^\W\d_]+)\.$")


def abbreviated(before: str) -> bool:
    """Whether ``before`` ends with a title's period ("Mr.", "Dr.") or an initial's ("J."): a period
    that does not end the sentence."""
    m = _ABBREVIATION.search(before[-12:])
    if m is None:
        return False
    word = m.group(1)
    return word.lower() in TITLES or (len(word) == 1 and word.isupper())


# What follows a sentence-initial verb ("Switched the", "Agreed in", "Going forward"), not a name
# ("Memcached is", "Kafka is back").
_VERB_FOLLOW = re.compile(
    r"^(?:\s*[:,]|\s+(?:the|a|an|to|in|on|at|back|with|from|our|over|off|up|out|forward|ahead)\b)", re.I
)


def _name_like(tok: str, initial: bool, vocab: frozenset[str]) -> bool:
    low = tok.lower()
    if low in CATEGORY_ACRONYMS:
        return False
    body = tok[1:]
    if any(c.isdigit() for c in tok):
        return any(c.isupper() for c in tok) and low not in CATEGORY_ACRONYMS
    if any(c.isupper() for c in body):  # SQLite, GitHub, JSON, SQS
        return len(tok) >= 2
    if not tok[0].isupper():
        return False
    if low in STOPWORDS or low in CUE_WORDS or low in FILLER or low in COMMON_CAPITALISED:
        return False
    return not (initial and (low in vocab or _inflected(low, vocab)))


def _inflected(low: str, vocab: frozenset[str]) -> bool:
    """Whether a word ending in -ed or -ing is a form of a word the memory writes in lowercase: its
    base, five letters at least, begins one ("Cancelled" for "cancellation", "Deployed" for
    "deploys"): at a sentence start such a word is a verb, not a name ("Cancelled FibreNest")."""
    base = low[:-2] if low.endswith("ed") else low[:-3] if low.endswith("ing") else ""
    return len(base) >= 5 and any(v.startswith(base) for v in vocab)


# A version: a number not cut short ("USD 5,000" is an amount, not "USD 5"; "ImageJ 1.54f", "Python 3.11+",
# "PB 46:20" whole), with no leading zero ("Tel 0161" is a phone number) and no unit after it.
_VERSION = re.compile(
    r" v?(?!0\d)(?:\d{1,3}(?:,\d{3})+|\d+)(?:[.:]\d+)*"
    r"(?:(?<=\.\d)[a-rt-z](?!\w)|(?<=\.\d\d)[a-rt-z](?!\w)|\+)?(?![.,:]?\d)(?!\w)"
    r"(?![\w.]*\s*(?:%|ms|s\b|gb|mb|kb|tb|minutes?|hours?|seconds?|days?|requests?|rps))",
    re.I,
)
#: An address with its scheme ("https://docs.acme.io/api", "s3://heron-uploads"): one name, never split
#: at its colon or dots; a sentence's closing punctuation is not part of it.
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s<>\"'`()\[\]]+(?<![.,;:!?])", re.I)
# Calendar words: "Q3", "H2", "FY25" (periods of a year); a short day or month next to a number or
# another one ("23-27 Dec", "Mon-Fri", "Jan–Aug").
_PERIOD = re.compile(r"(?:Q[1-4]|H[12]|FY\d{2,4})$")
_DATE_NEIGHBOUR = re.compile(r"\d|[-\u2013/]\s*[A-Z][a-z]{2,3}\b")


def _date_word(text: str, t: re.Match[str]) -> bool:
    """Whether the token ``t`` is a calendar word (see ``_PERIOD``, ``DATE_ABBREVIATIONS``), not a name."""
    word = t.group(0)
    if _PERIOD.match(word):
        return True
    parts = re.split(r"[-/]", word.lower().rstrip("."))
    if len(parts) > 1:
        return all(p in DATE_ABBREVIATIONS or p in COMMON_CAPITALISED for p in parts)
    if parts[0] not in DATE_ABBREVIATIONS:
        return False
    before, after = text[max(0, t.start() - 3) : t.start()].rstrip(), text[t.end() : t.end() + 6].lstrip(" .")
    return bool(before and (before[-1].isdigit() or before[-1] in "-\u2013/")) or bool(_DATE_NEIGHBOUR.match(after))


#: A number and then one capital letter ("4000 K", "230 V", "16 A"): the letter is the number's unit, not a name.
_UNIT_BEFORE = re.compile(r"\d ?$")


def _unit_letter(text: str, t: re.Match[str]) -> bool:
    """Whether the token ``t`` is one capital letter just after a number: a unit ("4000 K"), not a name."""
    before = text[max(0, t.start() - 2) : t.start()]
    return len(t.group(0)) == 1 and t.group(0).isupper() and _UNIT_BEFORE.search(before) is not None


def find_names(text: str, vocab: frozenset[str]) -> list[tuple[int, int]]:
    """Spans of product-like names; adjacent capitalised words join one name, and so does a title's
    ("Dr. Okafor"); an address with its scheme is one name ("https://status.acme.io")."""
    urls = [(m.start(), m.end()) for m in _URL.finditer(text)]
    toks = [t for t in TOKEN.finditer(text) if not masked(urls, t.start(), t.end())]
    out: list[tuple[int, int]] = list(urls)
    i = 0
    while i < len(toks):
        t = toks[i]
        initial = sentence_initial(text, t.start())
        titled = t.group(0).lower() in TITLES and re.match(r"\.? [^\W\d_]", text[t.end() : t.end() + 3]) is not None
        if (
            _date_word(text, t)
            or _unit_letter(text, t)
            or not (titled or _name_like(t.group(0), initial, vocab))
            or (initial and t.group(0).lower().endswith(("ed", "ing")) and _VERB_FOLLOW.match(text[t.end() :]))
        ):
            i += 1
            continue
        start, end = t.start(), t.end()
        j = i + 1
        while j < len(toks):
            nxt = toks[j]
            gap = text[end : nxt.start()]
            word = nxt.group(0)
            title = gap == ". " and toks[j - 1].group(0).lower() in TITLES and word[0].isupper()
            if (gap != " " and not title) or not (word[0].isupper() or word[0].isdigit()) or _date_word(text, nxt):
                break
            if word.lower() in STOPWORDS or word.lower() in COMMON_CAPITALISED:
                break
            first = t.group(0)
            if word.lower() in CATEGORY_ACRONYMS and initial and first[1:].islower():
                break  # "Checkout CI: ..." is a component and a category, not "GitLab CI"
            end = nxt.end()
            j += 1
        version = _VERSION.match(text, end)
        if version:  # "iOS 7", "Python 3.12": the version is part of the name
            end = version.end()
        out.append((start, end))
        i = j
    return sorted(out)


def known_words(text: str, known: frozenset[str], names: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of one-word options the memory wrote in lowercase ("cron"), outside ``names``:
    lowercase anywhere, capitalised only at a sentence start ("Cron was hard to debug"). Not
    when the word starts a concept phrase ("cron jobs" is the scheduler, not the option)."""
    out: list[tuple[int, int]] = []
    toks = list(TOKEN.finditer(text))
    for i, t in enumerate(toks):
        word = t.group(0)
        low = fold(word)
        if low not in known or any(s <= t.start() < e for s, e in names):
            continue
        lower = word.lower()
        if word != lower and not (word[1:] == lower[1:] and sentence_initial(text, t.start())):
            continue
        nxt = toks[i + 1].group(0).lower() if i + 1 < len(toks) else ""
        if nxt and (low, nxt) in CONCEPT_OF:
            continue
        out.append((t.start(), t.end()))
    return out


def reason_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the reason clauses ("because ...", "so that ...")."""
    return [(m.start(), m.end()) for m in _REASON.finditer(text)]


def clause_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the clauses, split at ``_CLAUSE_BREAK``."""
    out, pos = [], 0
    for m in _CLAUSE_BREAK.finditer(text):
        if text[m.start() - 1 : m.start()] == "." and abbreviated(text[: m.start()]):
            continue  # "Mr. Hrubý": a title's period is no clause break
        if m.start() > pos:
            out.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        out.append((pos, len(text)))
    return out


def clause_of(clauses: list[tuple[int, int]], pos: int) -> int:
    """The index of the clause that holds ``pos`` (-1: none)."""
    for i, (s, e) in enumerate(clauses):
        if s <= pos < e:
            return i
    return -1


_NEXT_WORD = re.compile(r"^\s([A-Za-z][\w'-]*)")
_PREPOSITIONS = frozenset("instead after as for since because this that these now today again".split())


def role_of(text: str, start: int, end: int, clauses: list[tuple[int, int]], reasons: list[tuple[int, int]]) -> str:
    """The role of the mention at ``start:end``: chosen, prev, modifier or other (see the module docstring)."""
    if masked(reasons, start, end):
        return "other"
    before = text[max(0, start - 48) : start]
    after = text[end : end + 48]
    if _BEFORE_PREV.search(before) or _AFTER_PREV.match(after):
        # "replacing X with Y": X prev; "moved from X to Y": X prev
        return "prev"
    ci = clause_of(clauses, start)
    clause_start = clauses[ci][0] if ci >= 0 else 0
    if _BEFORE_AFTER.search(before) and AFTER_REPORT.match(after):
        return "prev"  # "went with Y after X kept failing"
    paren = text.rfind("(", clause_start, start)  # a parenthesis is a clause of its own: "(ERC ended)"
    if paren >= 0 and ")" not in text[paren:start]:
        ci, clause_start = max(ci, 1), paren + 1
    lead = text[clause_start:start].split()
    if _CHOSEN_AGAIN.match(after):
        return "chosen"  # a report that chooses it: "Pine & Petal fired, GreenCut rehired"
    if ci > 0 and _REPORT_LEAD.match(" ".join(lead) + " " if lead else "") and reported(text, end):
        return "prev"  # "...; X was overkill", "; the Snyk seats were $40k", "Marqeta and Galileo contracts end"
    nxt = _NEXT_WORD.match(after)
    labelled = after_label(text, start) and not reported(text, end)  # "Payments: Stripe processes cards"
    if nxt and nxt.group(1).islower() and not labelled and not _BEFORE_CHOSEN.search(before):
        w = nxt.group(1).lower()
        if w not in STOPWORDS and w not in CUE_WORDS and w not in _PREPOSITIONS:
            return "modifier"  # "the ledger Postgres backups", "the latest SQLite release"
    return "chosen"
