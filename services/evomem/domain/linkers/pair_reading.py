"""The pair linker's reading of one note: what its features need of a text, and the note's references.

``read`` reads a text once (the linker caches it by text): its decision part (``decision_text``), that
part's content words and its names/values, the words in a leaving or a "back to" position, the title,
the change, hedge, keep, decides and reports cues, the document identifier at its start ("PEP: 8",
"# ADR 12"), and the sentences with a replacing verb, which ``refers`` and ``declares`` search.

- ``frame``: how far a short note repeats the candidate's words in order with a value swapped
  ("Pepper weighs 11.9 kg." after "Pepper weighs 11.2 kg."), its leading words kept, and whether
  what it dropped are names or values.
- ``refers``: the note names a candidate's identifier with a replacing verb ("NATS would replace
  ADR-7's broker"); a feature of the model, never a link by itself.
- ``declares``: the record declares, in its own voice, that it replaces the candidate ("Supersedes
  ADR 7." as a header line, "This policy replaces POL-3."); a link on its own.

Pure Python and regular expressions (``difflib`` for the frame).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from evomem.domain.linkers import decision_text as dt

# A document identifier at the start of a note: an upper-case prefix and a number ("PEP: 8", "# ADR 12").
_IDENT = re.compile(r"^\W{0,6}(?:[Tt]itle:\s*)?([A-Z]{2,8})[-\s:#_]{0,3}0*(\d{1,5})\b")
# The note says it replaces the reference: the verb right before it ("supersedes ADR 7", "replaces PEP 215").
_REF_VERB = r"\b(?:supersedes|supersede|superseding|replaces|replace|replacing|obsoletes)\s+(?:the\s+)?"
_REF_VERB_RE = re.compile(_REF_VERB, re.I)
_DECL_VERB_RE = re.compile(r"\b(?:supersedes|replaces|obsoletes)\b", re.I)


@dataclass(frozen=True, slots=True)
class Reading:
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


def read(text: str) -> Reading:
    """What the pair features need of ``text`` (see ``Reading``); the linker caches it by text."""
    part = dt.decision_part(text)
    ident = _ident_of(text[:120])
    words = dt.tokens(part)
    return Reading(
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


def frame(note: Reading, cand: Reading) -> tuple[float, float, float]:
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


@functools.lru_cache(maxsize=4096)
def _ref_pattern(ident: str) -> re.Pattern[str]:
    """A replacing verb and then ``ident`` ("supersedes ADR-12", "replaces :pep:`215`")."""
    prefix, num = ident.split()
    return re.compile(rf"{_REF_VERB}(?::{re.escape(prefix)}:`|{re.escape(prefix)}\W{{0,3}})0*{num}\b", re.I)


def refers(note: Reading, ident: str | None) -> bool:
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


def declares(note: Reading, ident: str | None) -> bool:
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
