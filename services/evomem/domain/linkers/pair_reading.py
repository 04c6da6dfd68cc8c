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

Pure Python and regular expressions. The frame's alignment is ``difflib``'s (``SequenceMatcher``
without junk), computed over the note's word positions indexed once per reading (``_matching_blocks``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

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
    title: frozenset[str]
    hedge: bool
    question: bool
    decides: bool
    reports: bool
    ident: str | None
    long: bool
    ref_sents: tuple[str, ...]  # the note's sentences with a replacing verb (``refers`` reads only these)
    decl_sents: tuple[str, ...]  # its sentences with a present-tense replacing verb (``declares`` reads these)
    seq: tuple[str, ...]  # the decision part's words in order, when it is short enough to align (``frame``)
    # where each word of ``seq`` occurs in it, ascending (``frame`` aligns a candidate against the note's)
    at: Mapping[str, tuple[int, ...]] = field(init=False, compare=False, hash=False, repr=False)
    # what only a note's own reading needs (``leaving``, ``back_to``, ``change``, ``keep``), read from
    # ``part`` when first asked: a candidate's reading never is (speed12: a third of reading a text)
    _lazy: dict[str, object] = field(init=False, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "at", _positions(self.seq))  # derived: always the positions of ``seq``
        object.__setattr__(self, "_lazy", {})

    def _once(self, key: str, make: Callable[[str], object]) -> object:
        """``make(part)``, read on first use and kept (``leaving``, ``back_to``, ``change``, ``keep``)."""
        got = self._lazy.get(key)
        if got is None:
            got = self._lazy[key] = make(self.part)
        return got

    @property
    def leaving(self) -> frozenset[str]:
        """The words in a leaving position of the decision part (``decision_text.leaving_windows``)."""
        return self._once("leaving", _leaving)  # type: ignore[return-value]

    @property
    def back_to(self) -> frozenset[str]:
        """The words after "back to" (``decision_text.back_to_windows``)."""
        return self._once("back_to", _back_to)  # type: ignore[return-value]

    @property
    def change(self) -> bool:
        """The decision part has a change cue (``decision_text.CHANGE``)."""
        return self._once("change", _changes)  # type: ignore[return-value]

    @property
    def keep(self) -> bool:
        """The decision part keeps something ("only", "still": ``decision_text.KEEP``)."""
        return self._once("keep", _keeps)  # type: ignore[return-value]


def _leaving(part: str) -> frozenset[str]:
    return frozenset(dt.leaving_windows(part))


def _back_to(part: str) -> frozenset[str]:
    return frozenset(dt.back_to_windows(part))


def _changes(part: str) -> bool:
    return dt.CHANGE.search(part) is not None


def _keeps(part: str) -> bool:
    return dt.KEEP.search(part) is not None


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
        title=frozenset(dt.content(dt.tokens(dt.title(text)))),
        hedge=dt.HEDGE.search(part) is not None,
        question=part.rstrip().endswith("?"),
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
    decision parts aligned word by word (``difflib``'s alignment, no junk heuristic:
    ``_matching_blocks``). Returns the share of the candidate's words the note keeps in order,
    the share of its leading words the note repeats exactly, and the share of the candidate's
    words the note does not keep that are names or values (capitalised, with digits:
    ``dt.distinctive``). "Pepper weighs 11.9 kg." against "Pepper weighs 11.2 kg." gives
    (0.75, 0.5, 1.0): same frame, a value swapped; "Dagny lives in Odense." against "Quorra lives
    in Odense." keeps as much but swaps its first word; "Widget Pro version: 3.3" against "Widget
    Pro price: $49." swaps a common word too. All zero when either part is empty or too long to
    align (``FRAME_WORDS``)."""
    a, b = cand.seq, note.seq
    if not a or not b:
        return 0.0, 0.0, 0.0
    blocks = _matching_blocks(a, len(b), note.at)
    kept = sum(size for _, _, size in blocks)
    prefix = 0
    for x, y in zip(a, b, strict=False):  # the common leading words: stop at the shorter
        if x != y:
            break
        prefix += 1
    dropped = len(a) - kept  # the candidate's words outside every matched block, in order
    if not dropped:
        return kept / len(a), prefix / len(a), 0.0
    dist = cand.dist
    values = sum(1 for w in a if w in dist) - sum(1 for i, _, size in blocks for w in a[i : i + size] if w in dist)
    return kept / len(a), prefix / len(a), values / dropped


def _positions(seq: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """Each word of ``seq`` -> where it occurs, ascending (``SequenceMatcher``'s ``b2j`` without junk)."""
    out: dict[str, list[int]] = {}
    for j, w in enumerate(seq):
        out.setdefault(w, []).append(j)
    return {w: tuple(js) for w, js in out.items()}


def _matching_blocks(a: tuple[str, ...], lb: int, b2j: Mapping[str, tuple[int, ...]]) -> list[tuple[int, int, int]]:
    """The blocks (i, j, size) of ``a`` matched in ``b`` (``lb`` words, indexed by ``b2j``) that
    ``SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()`` finds (before it merges
    adjacent ones and adds its sentinel, which changes no word matched).

    difflib takes the longest common run of the two ranges, then does the same on each side of
    it. Its ``find_longest_match`` (no junk) walks the ranges' equal pairs (i, j), i then j
    ascending, with the length k of the common run ending there (counted from the ranges'
    starts), and keeps the first pair whose k beats every earlier one; its extensions then add
    nothing, the run being whole. Here every equal pair of the whole sequences is listed once
    with its run's length, and a range's run ending at (i, j) is that length cut at the range's
    starts: the same pairs in the same order with the same k, so the same blocks, without
    building ``b2j`` per candidate or walking the words again for each range."""
    nothing: tuple[int, ...] = ()
    pairs: list[tuple[int, int, int]] = []  # (i, j, length of the common run ending at a[i], b[j])
    before: dict[int, int] = {}
    starts: list[int] = []  # where a[i]'s pairs start in ``pairs`` (a range from alo reads from there)
    besti = bestj = bestsize = 0  # the whole ranges' run, found on the way
    for i, w in enumerate(a):
        starts.append(len(pairs))
        here: dict[int, int] = {}
        for j in b2j.get(w, nothing):
            k = here[j] = before.get(j - 1, 0) + 1
            pairs.append((i, j, k))
            if k > bestsize:
                besti, bestj, bestsize = i - k + 1, j - k + 1, k
        before = here
    blocks: list[tuple[int, int, int]] = []
    queue = [(0, len(a), 0, lb)]
    run: tuple[int, int, int] | None = (besti, bestj, bestsize)
    while queue:
        alo, ahi, blo, bhi = queue.pop()
        i, j, k = run if run is not None else _longest(pairs, starts[alo], alo, ahi, blo, bhi)
        run = None
        if k:
            blocks.append((i, j, k))
            if alo < i and blo < j:
                queue.append((alo, i, blo, j))
            if i + k < ahi and j + k < bhi:
                queue.append((i + k, ahi, j + k, bhi))
    return blocks


def _longest(
    pairs: list[tuple[int, int, int]], start: int, alo: int, ahi: int, blo: int, bhi: int
) -> tuple[int, int, int]:
    """``find_longest_match(alo, ahi, blo, bhi)`` over ``_matching_blocks``' equal pairs: each run
    cut at the range's starts, the first longest (i, then j) kept. ``start``: the first pair of
    ``a[alo]`` (the pairs before it have ``i < alo``: skipped without reading them)."""
    besti = bestj = bestsize = 0
    for t in range(start, len(pairs)):
        i, j, k = pairs[t]
        if i >= ahi:
            break
        if j < blo or j >= bhi:
            continue
        if k > i - alo:
            k = i - alo + 1
        if k > j - blo:
            k = j - blo + 1
        if k > bestsize:
            besti, bestj, bestsize = i - k + 1, j - k + 1, k
    return besti, bestj, bestsize


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
