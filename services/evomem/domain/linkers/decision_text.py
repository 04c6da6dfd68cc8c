"""Reading any note for the pair linker, with no list of components or options.

- ``decision_part``: the part of a note that decides. A short note is its own decision. A
  structured document (a decision record, a PEP) has it in a "Decision" / "Decision Outcome" /
  "Resolution" section, else after a ``Status`` line, else in its first paragraph. Long notes
  are never skipped: the pair linker compares decisions with decisions.
- ``tokens``: lowercase word tokens, plus version-like tokens kept whole ("20.11", "v2.3").
- ``leaving_windows``: the tokens the note puts in a *leaving* position ("instead of X",
  "from X to", "no longer X", "X is out", "replaces X", "dropped X", "X was overkill", "X -> Y").
  A word of the candidate there says the note leaves it, whatever the word is.
- ``back_to_windows``: tokens after "back to" / "revert to": the note returns to an earlier option.

Every pattern here is generic English for changing one's mind; none names a product or a topic.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

#: Notes up to this size are their own decision part.
SHORT_NOTE_CHARS = 600
#: The decision part of a long document is cut to this size (its first sentences).
DECISION_PART_CHARS = 900

_TOKEN = re.compile(r"v?\d+(?:[.\-]\d+)+[a-z]*|\w+", re.UNICODE)

# Sections that hold the decision of a structured document (markdown, rst or "Title:" lines).
_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}\s*)?(?P<title>[A-Za-z][A-Za-z /&-]{1,60}?)\s*:?\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^\s*([=\-~^*#+])\1{2,}\s*$")
_DECISION_TITLES = re.compile(
    r"^(?:the\s+)?(?:decision(?:\s+outcome)?|decisions?|outcome|resolution|chosen\s+option|what\s+we\s+decided|"
    r"we\s+decided|proposal|specification|rationale\s+and\s+decision)\b",
    re.I,
)
_STATUS_LINE = re.compile(r"^\s*(?:[*_#>-]\s*)*status\s*[:=-]", re.I | re.M)

LEAVE_BEFORE = re.compile(
    r"\b(?:instead\s+of|rather\s+than|in\s+place\s+of|replac(?:es|ed|ing|e)|supersed(?:es|ed|ing|e)|"
    r"no\s+longer(?:\s+(?:use|uses|using|on|run|runs|in|with|via))?|not\s+(?:using|on)|stop(?:ped)?\s+using|"
    r"moved?\s+(?:away\s+)?(?:off|from|away\s+from)|moving\s+(?:off|from|away\s+from)|away\s+from|"
    r"migrat(?:e|ed|ing)\s+(?:off|from|away\s+from)|switch(?:ed|ing)?\s+from|chang(?:e|ed|ing)\s+from|"
    r"from|dropp(?:ed|ing)|drop|ditch(?:ed|ing)?|retir(?:e|ed|ing)|remov(?:e|ed|ing)|deprecat(?:e|ed|ing)|"
    r"abandon(?:ed|ing)?|sunset(?:ted|ting)?|kill(?:ed|ing)|scrap(?:ped|ping)?|swap(?:ped|ping)?|"
    r"phas(?:e|ed|ing)\s+out|rip(?:ped)?\s+out|used\s+to\s+be|previously|formerly|old|"
    r"out\s+goes|goodbye)\b",
    re.I,
)
LEAVE_AFTER = re.compile(
    r"\b(?:is|are|was|were)\s+(?:out|gone|dead|done|retired|deprecated|overkill|dropped|removed|history|"
    r"off\s+the\s+table|no\s+more|too\s+\w+)\b|\b(?:no\s+more|anymore|any\s+more|out)\b|->|→|=>",
    re.I,
)
BACK_TO = re.compile(r"\b(?:back\s+to|back\s+on|revert(?:ed|ing)?\s+to|return(?:ed|ing)?\s+to|again)\b", re.I)
CHANGE = re.compile(
    r"\b(?:now|mov(?:e|ed|es|ing)|switch(?:ed|es|ing)?|migrat(?:e|ed|es|ing)|replac(?:e|ed|es|ing)|chang(?:e|ed|es|ing)|"
    r"no\s+longer|instead|anymore|going\s+forward|from\s+now\s+on|from\s+here\s+on|effective|as\s+of|starting|"
    r"updat(?:e|ed|es|ing)|upgrad(?:e|ed|es|ing)|downgrad(?:e|ed|es|ing)|bump(?:s|ed|ing)?|revert(?:s|ed|ing)?|"
    r"rolled\s+back|"
    r"went\s+back|supersed(?:e|ed|es|ing)|new|took\s+over|takes\s+over|handed\s+over|rotat(?:e|ed|ing))\b|->|→",
    re.I,
)
HEDGE = re.compile(
    r"\b(?:might|may\s+(?:move|switch|want)|maybe|perhaps|consider(?:ing|ed)?|evaluat(?:e|ing)|propos(?:e|ed|al)|"
    r"thinking\s+about|could|would\s+like|not\s+sure|trial|experiment(?:ing)?|spike|poc|decided\s+against|"
    r"rejected|if\s+we|whether|\?)",
    re.I,
)
KEEP = re.compile(
    r"\b(?:stay|stays|stayed|staying|keep|keeps|kept|keeping|still|remain|remains|remained|unchanged|as\s+is|"
    r"as\s+before|as\s+always|as\s+decided|same|confirm(?:s|ed)?|reconfirm(?:s|ed)?|reiterat\w*|no\s+change|but|only|"
    r"except|while)\b",
    re.I,
)
DECIDES = re.compile(
    r"\b(?:decided|decision|we\s+(?:will|use|run|go|pick|chose|picked|adopt|adopted)|going\s+with|goes\s+to|"
    r"is\s+now|are\s+now|pinned|pin|adopt(?:ed)?|approved|agreed|chosen|standardi[sz]e|policy|owner|owns|"
    r"from\s+now|effective|starting|must|should|default)\b",
    re.I,
)
REPORTS = re.compile(
    r"\b(?:took|came\s+in|measured|reported|saw|observed|asked|discussed|incident|drill|reminder|fyi|"
    r"question|wondering|minutes|recap|results?|metrics?|data|numbers|went\s+fine|worked|works|passed|failed|"
    r"outage|postmortem|not\s+scheduled|pending|todo|tbd)\b",
    re.I,
)
NEGATED = re.compile(r"\b(?:not|never|no|don't|won't|didn't)\b", re.I)

WINDOW = 4  # tokens read after a cue (before one for LEAVE_AFTER)

STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers him his how i if in into is it its itself just let me more most my no nor not now of off on once
    only or other our ours out over own same she should so some such than that the their theirs them then there
    these they this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours us use used using uses one two per via etc s t""".split()
)


# the patterns ``distinctive`` and ``sentences`` split and scan with, compiled once (speed12: the
# ``re`` module's cache lookup on every sentence and call was a tenth of reading a note)
_CLAUSES = re.compile(r"(?<=[.!?;:\n])\s+")
_WORDISH = re.compile(r"[\w.\-+/]*\w")
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")


def tokens(text: str) -> list[str]:
    return [t for t in (m.group(0).lower().strip("_") for m in _TOKEN.finditer(text)) if t]


def content(toks: Iterable[str]) -> set[str]:
    return {t for t in toks if t not in STOPWORDS and (len(t) > 1 or t.isdigit())}


def distinctive(text: str) -> set[str]:
    """Tokens that look like names or values: capitalised mid-sentence, with digits, or with
    inner capitals/dots/dashes ("GitLab", "20.11", "Q3", "p99", "k8s", "gRPC")."""
    out: set[str] = set()
    for sent in _CLAUSES.split(text):
        for j, m in enumerate(_WORDISH.finditer(sent)):
            got = _word_kind(m.group(0))
            if got is not None and (got[0] or (j > 0 and got[1])):
                out.update(got[2])
    return {t for t in out if t not in STOPWORDS}


@functools.lru_cache(maxsize=1 << 16)
def _word_kind(w: str) -> tuple[bool, bool, tuple[str, ...]] | None:
    """What ``distinctive`` needs of one word, worked out once per word (speed12: words recur
    from note to note): None for a stopword or a single letter; else whether it is a name or a
    value wherever it stands (a digit, an inner capital), whether it starts with a capital (a
    name after a sentence's first word), and its tokens."""
    low = w.lower()
    if low in STOPWORDS or (len(low) < 2 and not low.isdigit()):
        return None
    return any(c.isdigit() for c in w) or any(c.isupper() for c in w[1:]), w[0].isupper(), tuple(tokens(w))


def sentences(text: str) -> list[str]:
    parts = _SENTENCES.split(text)
    return [p.strip() for p in parts if p.strip()]


def _sections(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(title, body lines) of a document with headings (markdown, rst underlines, "Title:" lines)."""
    out: list[tuple[str, list[str]]] = [("", [])]
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and _RST_UNDERLINE.match(nxt) and len(line.strip()) <= 60:
            out.append((line.strip(), []))
            i += 2
            continue
        stripped = line.strip()
        m = _HEADING.match(line) if (stripped.startswith("#") or stripped.endswith(":")) else None
        if m and len(stripped) <= 64:
            out.append((m.group("title").strip(), []))
        else:
            out[-1][1].append(line)
        i += 1
    return out


def _first_paragraph(text: str) -> str:
    paras = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    for p in paras:
        # skip a title line and front matter ("PEP: 8", "Author: ...", "# ADR 12: ...")
        lines = [ln for ln in p.splitlines() if ln.strip()]
        if all(re.match(r"^\s*(?:#|[A-Z][\w -]{0,30}:\s)", ln) for ln in lines) and len(p) < 400:
            continue
        return p
    return paras[0] if paras else text


def decision_part(text: str) -> str:
    """The part of the note that decides (see the module docstring)."""
    if len(text) <= SHORT_NOTE_CHARS:
        return text
    lines = text.splitlines()
    for title, body in _sections(lines):
        if title and _DECISION_TITLES.match(title):
            part = "\n".join(body).strip()
            if len(part) >= 20:
                return part[:DECISION_PART_CHARS]
    m = _STATUS_LINE.search(text)
    if m is not None:
        after = text[m.end() :]
        rest = re.split(r"\n\s*\n", after, maxsplit=2)
        part = " ".join(x.strip() for x in rest[:2] if x.strip())
        if len(part) >= 40:
            return part[:DECISION_PART_CHARS]
    return _first_paragraph(text)[:DECISION_PART_CHARS]


def search_text(text: str) -> str:
    """What the candidate search for a new note looks for: a short note is its own query; a long
    document is searched by its title and its decision part, since its predecessors are found by
    what it decides, not by its front matter (authors, dates, headers) or its background."""
    if len(text) <= SHORT_NOTE_CHARS:
        return text
    return f"{title(text)}\n{decision_part(text)}"


def title(text: str) -> str:
    """The first line of a note (a document's title)."""
    for ln in text.splitlines():
        if ln.strip():
            return ln.strip().lstrip("#").strip()[:200]
    return ""


def leaving_windows(text: str) -> set[str]:
    """Tokens the note puts in a leaving position (see the module docstring)."""
    out: set[str] = set()
    for sent in sentences(text):
        for m in LEAVE_BEFORE.finditer(sent):
            before = sent[max(0, m.start() - 8) : m.start()]
            if NEGATED.search(before):  # "not replacing X", "never dropped X"
                continue
            after = tokens(sent[m.end() :])
            # "from X to Y": X only
            stop = next((k for k, t in enumerate(after) if t in ("to", "with", "for", "in", "because", "since")), None)
            out.update(content(after[: min(WINDOW, stop) if stop is not None else WINDOW]))
        for m in LEAVE_AFTER.finditer(sent):
            before = tokens(sent[: m.start()])
            out.update(content(before[-WINDOW:]))
    return out


def back_to_windows(text: str) -> set[str]:
    out: set[str] = set()
    for sent in sentences(text):
        for m in BACK_TO.finditer(sent):
            if m.group(0).lower() == "again":
                out.update(content(tokens(sent[: m.start()])[-3:]))
            else:
                out.update(content(tokens(sent[m.end() :])[:WINDOW]))
    return out
