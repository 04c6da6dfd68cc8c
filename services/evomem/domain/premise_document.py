"""The part of a long document that decides (``evomem.domain.premise``): a decision record, an RFC or a
policy holds almost any word somewhere (its context, the options it weighed, the record it replaces), so
the premise check reads it by its title and the section that says what was decided ("## Decision",
"Resolution", "Decision outcome"), not by its whole text (``deciding``); and a document that decides
nothing by its own status line: rejected, only proposed, or superseded (``is_undecided``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields

from evomem.domain.model import MemoryNode
from evomem.domain.premise_types import Judgement, Verdict
from evomem.domain.premise_words import meets, words_of
from evomem.domain.subject import LONG_NOTE_CHARS, identifier

#: The headings of the section that says what was decided, best first ("Resolved:": minutes).
DECIDING = ("decision", "decision outcome", "resolution", "resolved", "outcome", "policy", "motion", "specification")
#: The headings of a summary, read when no section decides or is about the statement's topic.
SUMMARY = ("summary", "abstract")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s*)?(?:\d+(?:\.\d+)*\.?\s+)?([A-Za-z][A-Za-z /&-]{1,40}?)\s*:?\s*$")
_INLINE = re.compile(r"^\s*(?:#{1,6}\s*)?([A-Za-z][A-Za-z ]{1,30}?)\s*:\s+(\S.*)$")
#: The line that opens a resolution's operative part ("NOW, THEREFORE, BE IT RESOLVED by the Council:"), what it
#: decides after its "WHEREAS" recitals: a deciding section as "Resolution" is, and what follows its colon its text.
_RESOLVED = re.compile(
    r"^\s*(?:now,?\s+)?(?:therefore,?\s+)?be it (?:further\s+)?resolved\b[^:\n]{0,80}:?\s*(.*)$", re.I
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
SECTION_CHARS = 300  # what is read of the deciding section: its opening sentences (500: dev-g caught 0.607, 300: 0.643)
#: What is read of it first, its lead: its first sentences up to this many characters, where a document says
#: the value it decides before the exceptions and limits that name others ("20 weeks of paid leave ...;
#: extended ... up to 12 weeks"); when that tells nothing, its opening (``SECTION_CHARS``). The words alone
#: decide on the lead only for a value (``premise.judge``). 120: dev-g caught 0.661 -> 0.696 (no lead: 0.661).
LEAD_CHARS = 120
READS = (LEAD_CHARS, SECTION_CHARS)


@dataclass(slots=True)
class Decided(MemoryNode):
    """A long document read as the part that decides (``deciding``): its ``raw_text`` that part, the
    whole text kept (``whole``) for what reads a document as such (its status, its length)."""

    whole: str = ""


def whole_text(node: MemoryNode) -> str:
    """A note's whole text: a document's, where it is read as its deciding part (``Decided``)."""
    return node.whole if isinstance(node, Decided) else node.raw_text


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of each section: a line that is a short heading alone ("## Decision",
    "Decision", "3. Decision:"), or a label and its text on one line ("Decision: we adopt X")."""
    out: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        resolved = _RESOLVED.match(line)
        if resolved is not None:  # a resolution's operative part: "NOW, THEREFORE, BE IT RESOLVED by ...:"
            out.append(("resolution", [resolved.group(1)] if resolved.group(1) else []))
            continue
        inline = _INLINE.match(line)
        heading = _HEADING.match(line) if line.strip() else None
        if heading is not None and (line.lstrip().startswith("#") or line.rstrip().endswith(":") or len(line) < 45):
            out.append((heading.group(1).strip().lower(), []))
        elif inline is not None and inline.group(1).strip().lower() in DECIDING and _says(inline.group(2)):
            out.append((inline.group(1).strip().lower(), [inline.group(2)]))
        elif out:
            out[-1][1].append(line)
    return [(h, "\n".join(body).strip()) for h, body in out]


def _says(text: str) -> bool:
    """Whether a label's text says something: words, not a header field's value ("Resolution: 2016-02-10")."""
    return len(re.findall(r"[^\W\d_]{2,}", text)) >= 3


def _opening(body: str, chars: int = SECTION_CHARS) -> str:
    """The opening of a section: its sentences, paragraph after paragraph, up to the one that
    passes ``chars`` ("This record decides the metrics stack in two parts." reads on)."""
    out = ""
    for para in re.split(r"\n\s*\n", body):
        para = " ".join(line.strip().lstrip("-*").strip() for line in para.split("\n") if line.strip())
        for sentence in _SENTENCE.split(para):
            if sentence:
                out = f"{out} {sentence}".strip()
            if len(out) >= chars:
                return out
    return out


def deciding(text: str, topic: set[str] | frozenset[str] = frozenset(), chars: int = SECTION_CHARS) -> str | None:
    """The part of a long document that decides: its title (its first line) and the opening of its
    deciding section: one headed as such (``DECIDING``, best first); else the one whose heading holds
    most words of the statement's topic (``topic``: "3. Remote work allowance" for "the remote work
    days"); else its summary (``SUMMARY``). None: a short note, or no such section."""
    if len(text) <= LONG_NOTE_CHARS:
        return None
    found = [(h, b) for h, b in _sections(text) if b]
    sections = dict(reversed(found))  # the first section of each heading
    body = next((sections[h] for h in DECIDING if h in sections), None)
    if body is None and topic:
        held = [(sum(meets({t}, words_of(h)) for t in topic), -i, b) for i, (h, b) in enumerate(found)]
        best = max(held, default=None)
        body = best[2] if best is not None and best[0] > 0 else None
    if body is None:
        body = next((sections[h] for h in SUMMARY if h in sections), None)
    if body is None:
        return None
    title = next((line.strip().lstrip("#").strip() for line in text.split("\n") if line.strip()), "")
    part = _opening(body, chars)
    return f"{title}.\n{part}" if part else None


_STATUS = re.compile(r"^\s*status\b[^:=\n]{0,20}[:=-]\s*(\w+)", re.I | re.M)
_UNDECIDED = frozenset({"rejected", "proposed", "draft", "withdrawn", "declined", "introduced"})
#: A status that says the document no longer decides: another replaced it, or it was retired.
_NO_LONGER = frozenset({"superseded", "replaced", "deprecated", "obsolete", "obsoleted", "retired", "rescinded"})
_PROPOSAL = re.compile(r"\b(?:proposal|draft)\b", re.I)


def is_undecided(node: MemoryNode) -> bool:
    """A document whose header says it was rejected or only proposed ("Status: Rejected", "status:
    proposed"; a title "Proposal to relicense ..." or "(draft for consultation)" with no status):
    it decides nothing."""
    text = whole_text(node)
    if len(text) <= LONG_NOTE_CHARS:
        return False
    status = _STATUS.search(text[:600])
    if status is not None:
        return status.group(1).lower() in _UNDECIDED | _NO_LONGER
    return bool(_PROPOSAL.search(text.split("\n", 1)[0]))


def read_as_decided(
    chains: Sequence[tuple[MemoryNode, Sequence[MemoryNode]]],
    topic: set[str] | frozenset[str] = frozenset(),
    chars: int = SECTION_CHARS,
) -> list[tuple[MemoryNode, list[MemoryNode]]]:
    """The chains with each long document read as its deciding part (``deciding``; ``topic``: the words
    the statement says what it is about with): the same node (id, scope, status, time), its text that part."""

    def read(node: MemoryNode) -> MemoryNode:
        part = deciding(node.raw_text, topic, chars)
        if part is None or is_undecided(node):  # it decides nothing: read whole, as a document is
            return node
        kept = {f.name: getattr(node, f.name) for f in fields(MemoryNode)}
        return Decided(**{**kept, "raw_text": part}, whole=node.raw_text)

    return [(read(h), [read(n) for n in past]) for h, past in chains]


def as_read(out: Judgement, chains: Sequence[tuple[MemoryNode, Sequence[MemoryNode]]]) -> Judgement:
    """A judgement made on the deciding parts (``read_as_decided``), its evidence the notes as stored."""
    nodes = {n.id: n for h, past in chains for n in (h, *past)}

    def stored(node: MemoryNode | None) -> MemoryNode | None:
        return None if node is None else nodes.get(node.id, node)

    for r in out.readings:
        r.head, r.named, r.successor = stored(r.head) or r.head, stored(r.named), stored(r.successor)
    return out


def decided_elsewhere(
    out: Judgement,
    chains: Sequence[tuple[MemoryNode, Sequence[MemoryNode]]],
    topic: set[str] | frozenset[str],
    option: set[str] | frozenset[str],
) -> bool:
    """Whether a judgement against the statement rests only on documents in force whose deciding part
    names neither the statement's option (``option``: its words) nor a word of its topic (``topic``, less
    the option's words): they decided another part of what the record they replaced covered ("a new
    metrics backend" says nothing of "the dashboard tool", Grafana). Their whole text is read instead."""
    topic = set(topic) - set(option)
    if out.verdict not in (Verdict.SUPERSEDED, Verdict.CONTRADICTED) or not topic or not out.readings:
        return False
    stored = {h.id: h for h, _ in chains}
    for r in out.readings:
        whole = stored.get(r.head.id)
        if whole is None or whole.raw_text == r.head.raw_text:
            return False
        label = identifier(r.head.raw_text)  # "OBS-12": its series, no word of what it decides
        held = words_of(r.head.raw_text) - words_of(label or "")
        if meets(topic, held) or (option and set(option) <= held):
            return False
    return True
