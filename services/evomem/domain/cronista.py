"""The cronista (note-taker), lite mode: sentence heuristics, no model.

It splits a note into sentences and clauses, and files each clause under
trigger (why), change (what was decided), alternatives tried, or consequences,
by cue words. Every field is a span of the source text, never generated.

The summary is assembled, not written: each extracted field is matched to its
closest source sentence (word overlap), and those sentences are joined in source
order. That was the prototype's most accurate option (88-93% correct against
26-37% for a generated summary) and its fastest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from evomem.domain.model import Extraction
from evomem.domain.text import words

NAME = "lite"
VERSION = "1"

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_CLAUSE = re.compile(
    r";\s*|\s+(?=(?:because|since|due to)\b)|\s+[-–—]\s+"
    r"|,\s+(?=(?:but|so|which|because|since|as a result|and so|and now)\b)|,\s+"
)
_REASON_START = re.compile(r"^(because|since|due to|given that|to avoid|in order to|so that)\b", re.I)
# A clause that opens with a result connective reports a consequence, whatever verbs follow
# ("As a result, backups are now a file copy" is not a new decision, though "are now" is a cue).
_RESULT_START = re.compile(
    r"^(as a result|as a consequence|consequently|therefore|hence|thus|this means|which means|that means)\b", re.I
)
# A connective on its own, cut off by the comma after it ("Therefore, ..."). It carries no
# content, so it is kept together with the clause it introduces.
_LEAD_IN = re.compile(r"(as a result|as a consequence|consequently|therefore|hence|thus)[.:]?", re.I)


def _cues(*phrases: str) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(phrases) + r")\b", re.I)


TRIGGER = _cues(
    r"because",
    r"since",
    r"due to",
    r"given that",
    r"after (?:the|a|an|we|it)",
    r"to avoid",
    r"in order to",
    r"so that",
    r"overkill",
    r"too (?:slow|expensive|complex|costly|heavy|big|fragile|risky)",
    r"(?:kept|keeps?) (?:failing|crashing|breaking|timing out)",
    r"timing out",
    r"timeouts?",
    r"bottleneck",
    r"problems?",
    r"issues?",
    r"outages?",
    r"incidents?",
    r"could(?:n't| not)",
    r"did(?:n't| not) scale",
    r"requirements?",
    r"compliance",
    r"the reason",
    r"motivated by",
    r"prompted by",
    r"was (?:slow|painful|hard|unreliable)",
    r"wasn't",
    r"was not",
    r"latency",
    r"costs? (?:too|were|was)",
    r"why",
)
CHANGE = _cues(
    r"decided",
    r"decide",
    r"chose",
    r"choose",
    r"picked",
    r"pick",
    r"selected",
    r"moved",
    r"move",
    r"moving",
    r"switched",
    r"switch",
    r"switching",
    r"migrated",
    r"migrate",
    r"migrating",
    r"replaced",
    r"replace",
    r"replacing",
    r"adopted",
    r"adopt",
    r"went with",
    r"going with",
    r"go with",
    r"will use",
    r"we use",
    r"now uses?",
    r"now lives?",
    r"now runs?",
    r"is now",
    r"are now",
    r"settled on",
    r"opted",
    r"standardi[sz]ed?",
    r"dropped",
    r"reverted",
    r"went back",
    r"rolled back",
    r"use",
    r"using",
    r"changed",
    r"upgraded",
    r"downgraded",
    r"introduced",
    r"retired",
    r"deprecated",
    r"set",
    r"enabled",
    r"disabled",
    r"turned (?:on|off)",
    r"lives in",
    r"runs on",
    r"hosted on",
)
ALTERNATIVES_STRONG = _cues(
    r"tried",
    r"considered",
    r"evaluated",
    r"looked at",
    r"rejected",
    r"ruled out",
    r"compared",
    r"benchmarked",
    r"prototyped",
    r"experimented",
    r"also tested",
    r"passed on",
)
ALTERNATIVES = _cues(
    r"tried",
    r"considered",
    r"evaluated",
    r"looked at",
    r"instead of",
    r"rather than",
    r"rejected",
    r"ruled out",
    r"alternatives?",
    r"compared",
    r"benchmarked",
    r"prototyped",
    r"also tested",
    r"experimented",
    r"vs\.?",
    r"versus",
    r"passed on",
)
CONSEQUENCES = _cues(
    r"as a result",
    r"which means",
    r"this means",
    r"that means",
    r"means that",
    r"therefore",
    r"consequently",
    r"now we",
    r"we now",
    r"will need",
    r"will have to",
    r"must now",
    r"need to",
    r"led to",
    r"resulting",
    r"result",
    r"downside",
    r"upside",
    r"trade-?off",
    r"saves?",
    r"saving",
    r"downtime",
    r"so we",
    r"so the",
    r"impact",
    r"follow-?up",
    r"breaks?",
    r"requires?",
)

_FIELDS = ("trigger", "change", "alternatives_tried", "consequences")
_PATTERNS = {"trigger": TRIGGER, "change": CHANGE, "alternatives_tried": ALTERNATIVES, "consequences": CONSEQUENCES}
# A clause that starts with a reason word is a trigger, one that starts with a result word a
# consequence; one that says what was tried is an alternative; otherwise, when it carries
# several kinds of cue, the first kind in this order wins (a decision verb beats "instead of",
# which beats a mentioned problem).
_PRECEDENCE = ("change", "alternatives_tried", "consequences", "trigger")

SUMMARY_MAX_CHARS = 600


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _clauses(sentence: str) -> list[str]:
    """The clauses of a sentence, each an exact span of it (separators trimmed).

    Fix: a bare lead-in such as "As a result" or "Therefore" used to become a clause of its
    own, so the consequences field held just "As a result" and the clause it introduced was
    filed by its own cues (often as the change). It now stays joined to that clause, as the
    source span from the lead-in to the clause's end.
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for sep in [*_CLAUSE.finditer(sentence), None]:
        end = sep.start() if sep is not None else len(sentence)
        part = sentence[pos:end]
        start = pos + len(part) - len(part.lstrip(" ,;"))
        stop = end - (len(part) - len(part.rstrip(" ,;")))
        if start < stop:
            if spans and _LEAD_IN.fullmatch(sentence[spans[-1][0] : spans[-1][1]]):
                spans[-1] = (spans[-1][0], stop)
            else:
                spans.append((start, stop))
        if sep is not None:
            pos = sep.end()
    return [sentence[a:b] for a, b in spans]


def _classify(clause: str) -> str | None:
    if _REASON_START.match(clause):
        return "trigger"
    if _RESULT_START.match(clause):
        return "consequences"
    if ALTERNATIVES_STRONG.search(clause):
        return "alternatives_tried"
    for name in _PRECEDENCE:
        if _PATTERNS[name].search(clause):
            return name
    return None


def extract(text: str) -> Extraction:
    """Extract the narrative fields of a note. Pure function; a few hundred microseconds."""
    found: dict[str, list[str]] = {name: [] for name in _FIELDS}
    sents = sentences(text)
    for sentence in sents:
        last: str | None = None
        for clause in _clauses(sentence):
            kind = _classify(clause) or last
            if kind is None:
                continue
            if clause not in found[kind]:
                found[kind].append(clause)
            last = kind
    if not found["change"] and sents:
        # A note is about a decision; when no clause names it, the first unfiled clause does.
        filed = {c for values in found.values() for c in values}
        for clause in (c for s in sents for c in _clauses(s)):
            if clause not in filed:
                found["change"].append(clause)
                break
    fields = {name: join_clauses(values) for name, values in found.items()}
    return Extraction(summary=assemble_summary(fields, sents), extractor=f"{NAME}/{VERSION}", **fields)


def join_clauses(values: Sequence[str]) -> str:
    """A field's clauses in one text: "; " between clauses, " " after a sentence's end. Every
    cronista joins this way (the onnx and triton ones, and the lab's gold fields)."""
    out = ""
    for value in values:
        if out:
            out += " " if out[-1] in ".!?" else "; "
        out += value
    return out


def _overlap(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def assemble_summary(fields: dict[str, str], source_sentences: list[str]) -> str:
    """Join, in source order, the source sentence closest to each extracted field."""
    if not source_sentences:
        return ""
    sent_words = [set(words(s)) for s in source_sentences]
    chosen: set[int] = set()
    for name in ("change", "trigger", "alternatives_tried", "consequences"):
        value = fields.get(name, "")
        if not value:
            continue
        fw = set(words(value))
        best = max(range(len(source_sentences)), key=lambda i: _overlap(fw, sent_words[i]))
        if _overlap(fw, sent_words[best]) > 0:
            chosen.add(best)
    summary = " ".join(source_sentences[i] for i in sorted(chosen))
    if len(summary) > SUMMARY_MAX_CHARS:
        summary = summary[: SUMMARY_MAX_CHARS - 1].rstrip() + "…"
    return summary


class LiteCronista:
    """The lite extractor as a port implementation (see ``evomem.app.ports.Extractor``)."""

    name = f"{NAME}/{VERSION}"

    def extract(self, text: str) -> Extraction:
        return extract(text)

    def load(self) -> None:
        """Nothing to load: sentence heuristics."""

    def check(self) -> str | None:
        """Never degraded: there is no fallback to fall to."""
        return None

    def close(self) -> None:
        """Nothing to release."""
