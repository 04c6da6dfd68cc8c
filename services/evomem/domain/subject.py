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
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from evomem.domain.linkers.vocabulary import CHANGE_CUE, CUE_WORDS, STOPWORDS
from evomem.domain.scope import infer_scope, normalise

#: Longer notes are documents, not decision notes: only explicit references are read there.
LONG_NOTE_CHARS = 1200

# ----------------------------------------------------------------------------- vocabulary

# The stopwords, the cue words and the change cue are the shared ones (``vocabulary``); the
# lists below are this reader's own.

#: Words that carry no subject in a decision note: time, meeting and bookkeeping words.
FILLER = frozenset(
    """week weeks sprint sprints month months quarter today tonight yesterday tomorrow day days year
    years time here forward onward onwards review reviews design meeting options option comparing compared
    comparison team teams latest release current currently way whole default setup thing things
    everything part point plan plans approach going ahead effective immediately official officially
    final finally call moment start starting begin beginning future""".split()
)

#: Heads that many subjects share ("billing service", "search backend"): they neither make
#: nor break a subject match.
WEAK = frozenset(
    "service services provider platform layer stack engine backend system systems tool tooling solution".split()
)

#: Ordinary words that are written capitalised at a sentence start, and calendar names.
COMMON_CAPITALISED = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays
    fridays saturdays sundays january february march april may june july august september october
    november december ok okay note notes reminder update todo fyi tl dr context incident incidents
    load retro quarterly sprint design agreed settled decision""".split()
)

#: Acronyms that name a kind of thing, not a product.
CATEGORY_ACRONYMS = frozenset(
    """ci cd api apis db dbs sdk ui ux etl cdn dns vm vms os sla slo slos sso iam kms mfa qa uat eu us uk
    apac emea id ids url urls http https tls ssl pr prs sql nosql orm rpc rest json? yaml? ops devops sre
    p50 p90 p95 p99 gb mb kb tb ms cpu gpu ram ssd hdd io tcp udp ip""".replace("?", "").split()
)
# JSON/YAML are formats people choose between, so they stay product-like names.
CATEGORY_ACRONYMS = CATEGORY_ACRONYMS - {"json", "yaml"}

#: Paraphrases of common infrastructure aspects, folded into one concept token. Longest
#: phrases first. General vocabulary of the field, in the spirit of a thesaurus.
CONCEPTS: dict[str, tuple[str, ...]] = {
    "@database": (
        "relational database",
        "primary database",
        "primary datastore",
        "primary store",
        "storage engine",
        "data store",
        "datastore",
        "datastores",
        "database",
        "databases",
        "rdbms",
        "db",
        "dbs",
    ),
    "@queue": (
        "message queue",
        "message queues",
        "message broker",
        "message bus",
        "event bus",
        "event stream",
        "event streaming",
        "event streams",
        "streaming platform",
        "job queue",
        "task queue",
        "pub/sub",
        "pubsub",
        "broker",
        "queue",
        "queues",
        "queueing",
        "queuing",
        "streams",
        "stream",
    ),
    "@cache": ("caching layer", "cache layer", "cache tier", "in-memory cache", "caching", "cache", "caches"),
    "@ci": (
        "continuous integration",
        "ci/cd pipeline",
        "ci pipeline",
        "ci pipelines",
        "build pipeline",
        "build system",
        "build server",
        "ci/cd",
        "ci",
    ),
    "@hosting": (
        "deployment platform",
        "deploy platform",
        "hosting platform",
        "compute platform",
        "container platform",
        "container orchestrator",
        "container orchestration",
        "deploy target",
        "deployment target",
        "hosting",
        "deployment",
        "deployments",
        "orchestration",
        "paas",
    ),
    "@auth": (
        "authentication provider",
        "identity provider",
        "auth provider",
        "login provider",
        "sign-in provider",
        "single sign-on",
        "authentication",
        "authn",
        "auth",
        "login",
        "logins",
        "sso",
        "idp",
        "identity",
    ),
    "@search": (
        "full-text search",
        "search engine",
        "search backend",
        "search index",
        "search cluster",
        "search service",
    ),
    "@objectstore": (
        "object storage",
        "object store",
        "blob storage",
        "blob store",
        "file storage",
        "bucket storage",
        "storage",
    ),
    "@flags": (
        "feature flag service",
        "feature flag system",
        "feature flags",
        "feature flag",
        "feature toggles",
        "feature toggle",
        "flag service",
        "flags",
        "toggles",
    ),
    "@scheduler": (
        "job scheduler",
        "task scheduler",
        "workflow scheduler",
        "workflow engine",
        "workflow orchestrator",
        "job runner",
        "scheduled jobs",
        "cron jobs",
        "scheduling",
        "scheduler",
    ),
    "@monitoring": (
        "metrics stack",
        "metrics backend",
        "metrics platform",
        "monitoring stack",
        "monitoring system",
        "observability stack",
        "observability",
        "monitoring",
        "metrics",
        "telemetry",
        "apm",
    ),
    "@email": (
        "transactional email",
        "email provider",
        "email service",
        "mail provider",
        "mail service",
        "mail server",
        "mailer",
        "email",
        "emails",
        "mail",
        "smtp",
    ),
    "@format": (
        "serialization format",
        "serialisation format",
        "wire format",
        "message format",
        "payload format",
        "data format",
        "encoding format",
        "wire protocol",
        "serialization",
        "serialisation",
        "encoding",
    ),
    "@secrets": (
        "secrets manager",
        "secrets management",
        "secret manager",
        "secret store",
        "secrets store",
        "credential store",
        "credentials store",
        "secrets",
        "secret",
        "credentials",
    ),
}
_CONCEPT_OF: dict[tuple[str, ...], str] = {tuple(p.split()): c for c, ps in CONCEPTS.items() for p in ps}
_CONCEPT_MAX = max(len(k) for k in _CONCEPT_OF)

# ----------------------------------------------------------------------------- patterns

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[.+\-/][A-Za-z0-9]+)*\+*")

#: Clause boundaries inside a note.
_CLAUSE_BREAK = re.compile(r"[;:]\s+|(?<=[.!?])\s+|,\s+|\s+[-\u2013\u2014]\s+|\n+")
#: A reason clause runs from its connective to the end of the clause.
_REASON = re.compile(
    r"\b(?:because|since|due to|given that|as it|so that|so we|to avoid|in order to|which means|as a result)\b"
    r"[^;.!?]*",
    re.I,
)

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
_LOWER_LEAD = re.compile(r"(?:^|[:;.]\s+)([a-z][\w.+-]{1,30})\s+(?:is|are)\s+(?:the|our|back)\b")

#: Words that make a decision tentative, conditional or negative. Read outside reason clauses
#: and the clauses about a replaced option ("Postgres did not survive the drill" is fine).
HEDGE = re.compile(
    r"\b(?:consider(?:ed|ing)?|evaluat\w+|propos\w+|might|maybe|perhaps|possibly|could|should|would|"
    r"plan(?:s|ned|ning)? to|thinking (?:about|of)|if|unless|whether|decided against|rejected|ruled out|"
    r"not|won't|didn't|don't|doesn't|isn't|aren't|never|tried|trying|trial\w*|pilot\w*|experiment\w*|"
    r"prototyp\w+|test(?:ing|ed)? out|looking (?:at|into)|investigat\w+|draft|tbd)\b|\?",
    re.I,
)
REVERT_CUE = re.compile(
    r"\b(?:reverted|revert|rolled back|roll back|went back|go back|going back|back (?:on|to)|is back|are back|"
    r"returns? to|returned to|restored)\b",
    re.I,
)

# Roles, read from the words just before and after a mention.
_BEFORE_PREV = re.compile(
    r"(?:\bfrom|\baway from|\breplac\w*|\bdropp?\w*|\bditch\w*|\bretir\w*|\babandon\w*|\bdeprecat\w*|"
    r"\bremov\w*|\binstead of|\brather than|\bnot|\bno longer (?:use|uses|using|on|runs? on|running on)|"
    r"\bmoved off|\bmoving off|\bmigrated off|\bswitched off|\bleft|\bleaving|\bover)\s+(?:the\s+|our\s+)?$",
    re.I,
)
# Right after these words a name is what the note chooses, whatever follows it
# ("switching to GitHub Actions next sprint"); elsewhere a name followed by a noun is a modifier.
_BEFORE_CHOSEN = re.compile(
    r"(?:\bto|\bwith|\bon|\bonto|\buse|\buses|\busing|\bchose|\bpicked|\badopted|\bselected|\bvia|"
    r"\bthrough|\bin favou?r of|\bby)\s+(?:the\s+)?$",
    re.I,
)
# Where the option of a decision stands: after a choosing verb or preposition, or as the
# complement of a copula ("The capital of Germany is Berlin": Berlin, not Germany).
_CHOICE_SLOT = re.compile(
    r"(?:\bto|\bwith|\bon|\bonto|\buse|\buses|\busing|\bchose|\bpicked|\badopted|\bselected|\bvia|"
    r"\bthrough|\bin favou?r of|\bby|\bis|\bare|\bwas|\bwere|\bsettled on|\bgoing with|\bwent with|"
    r"\bgo with)\s+(?:the\s+|now\s+)?$",
    re.I,
)
_CHOICE_SUBJECT = re.compile(r"^\s+(?:is|are)\s+(?:back|the|our|now)\b", re.I)


def _subject_names(text: str, mentions: list[Mention]) -> list[Mention]:
    """Of several chosen names, the ones in a choice slot are the option; the others name
    what the decision is about ("The CEO of Apple is Tim Cook"), so they join the subject."""
    chosen = [m for m in mentions if m.role == "chosen"]
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
_AFTER_REPORT = re.compile(
    r"^\s+(?:was|were|had|has|did|didn't|did not|kept|keeps|lost|lacked|needed|cost|costs|couldn't|could not|"
    r"can't|cannot|failed|fails|broke|breaks|caused|became|got|went down|[a-z]+ed)\b",
    re.I,
)
# A lowercase option in a clear slot: "picked cron for", "from cron to Airflow".
_LOWER_WORD = r"([a-z][a-z0-9+-]*(?:\.[a-z0-9]+)*)"
# What may follow it: a preposition, a reason, a time marker ("migrated to cron this week"),
# or the end of the clause.
_LOWER_END = (
    r"(?=\s+(?:for|as|to|instead|because|since|after|this|next|today|tonight|now|again|from|starting|"
    r"effective|until)\b|\s*[;,.:]|\s*$)"
)
_LOWER_SLOT = re.compile(
    r"\b(?i:picked|chose|selected|adopted|going with|went with|go with|uses|use|using|runs on|run on|"
    r"back to|back on|returns to|from|is|settled on|settled:)\s+" + _LOWER_WORD + _LOWER_END
)
_LOWER_TO = re.compile(
    r"\b(?i:reverted|rolled back|changed|moved|switched|migrated|returned)\b[^;:.]{0,50}?\bto\s+"
    + _LOWER_WORD
    + _LOWER_END
)
# "Replacing Airflow with cron as ...", "swapped Jenkins for drone".
_LOWER_WITH = re.compile(
    r"\b(?i:replac(?:e|es|ed|ing)|swapp?(?:ed|ing)?|swaps)\b[^;:.]{0,50}?\b(?:with|for|by)\s+"
    + _LOWER_WORD
    + _LOWER_END
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


# ----------------------------------------------------------------------------- the facts


@dataclass(frozen=True, slots=True)
class Mention:
    """An option-like name in the note, where it is, and what the note does with it."""

    text: str  # as written (a substring of the note)
    key: str  # compared case-insensitively
    start: int
    end: int
    role: str  # chosen | prev | subject | other (see the module docstring)


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
        out.update(m.group(0) for m in _TOKEN.finditer(t) if m.group(0).islower())
    return frozenset(out)


def _sentence_initial(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\"'([")
    return not before or before[-1] in ".!?:;\n"


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
    return not (initial and low in vocab)


def _mask(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s <= start and end <= e for s, e in spans)


_VERSION = re.compile(
    r" v?\d+(?:\.\d+)*(?![\w.]*\s*(?:%|ms|s\b|gb|mb|kb|tb|minutes?|hours?|seconds?|days?|requests?|rps))", re.I
)


def find_names(text: str, vocab: frozenset[str]) -> list[tuple[int, int]]:
    """Spans of product-like names; adjacent capitalised words join one name."""
    toks = list(_TOKEN.finditer(text))
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        initial = _sentence_initial(text, t.start())
        if not _name_like(t.group(0), initial, vocab) or (
            initial and t.group(0).lower().endswith(("ed", "ing")) and _VERB_FOLLOW.match(text[t.end() :])
        ):
            i += 1
            continue
        start, end = t.start(), t.end()
        j = i + 1
        while j < len(toks):
            nxt = toks[j]
            gap = text[end : nxt.start()]
            word = nxt.group(0)
            if gap != " " or not (word[0].isupper() or word[0].isdigit()):
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
    return out


def _known_words(text: str, known: frozenset[str], names: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of one-word options the memory wrote in lowercase ("cron"), outside ``names``:
    lowercase anywhere, capitalised only at a sentence start ("Cron was hard to debug"). Not
    when the word starts a concept phrase ("cron jobs" is the scheduler, not the option)."""
    out: list[tuple[int, int]] = []
    toks = list(_TOKEN.finditer(text))
    for i, t in enumerate(toks):
        word = t.group(0)
        low = word.lower()
        if low not in known or any(s <= t.start() < e for s, e in names):
            continue
        if word != low and not (word[1:] == low[1:] and _sentence_initial(text, t.start())):
            continue
        nxt = toks[i + 1].group(0).lower() if i + 1 < len(toks) else ""
        if nxt and (low, nxt) in _CONCEPT_OF:
            continue
        out.append((t.start(), t.end()))
    return out


_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def name_concepts(name: str) -> frozenset[str]:
    """The concepts a product's own name states: "VictoriaMetrics" (metrics), "AWS Secrets
    Manager" (secrets manager), "Redis Streams", "GitLab CI". Words of the name and parts of a
    camel-case word count; a camel-case part of under three letters does not ("MongoDB",
    "CircleCI": the brand, not the kind, is what the name is)."""
    words: list[str] = []
    for w in name.split():
        parts = _CAMEL_PART.findall(w)
        if len(parts) > 1:
            words.extend(p.lower() for p in parts if len(p) >= 3)
        else:
            words.append(w.lower())
    out: set[str] = set()
    for i in range(1, len(words)):  # the first word is the brand ("Redis", "Victoria")
        for n in range(min(_CONCEPT_MAX, len(words) - i), 0, -1):
            concept = _CONCEPT_OF.get(tuple(words[i : i + n]))
            if concept:
                out.add(concept)
                break
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


def _reason_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _REASON.finditer(text)]


def _clauses(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for m in _CLAUSE_BREAK.finditer(text):
        if m.start() > pos:
            out.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        out.append((pos, len(text)))
    return out


def _clause_of(clauses: list[tuple[int, int]], pos: int) -> int:
    for i, (s, e) in enumerate(clauses):
        if s <= pos < e:
            return i
    return -1


_NEXT_WORD = re.compile(r"^\s([A-Za-z][\w'-]*)")
_PREPOSITIONS = frozenset("instead after as for since because this that these now today again".split())


def _role(text: str, start: int, end: int, clauses: list[tuple[int, int]], reasons: list[tuple[int, int]]) -> str:
    if _mask(reasons, start, end):
        return "other"
    before = text[max(0, start - 48) : start]
    after = text[end : end + 48]
    if _BEFORE_PREV.search(before) or _AFTER_PREV.match(after):
        # "replacing X with Y": X prev; "moved from X to Y": X prev
        return "prev"
    ci = _clause_of(clauses, start)
    clause_start = clauses[ci][0] if ci >= 0 else 0
    lead = text[clause_start:start].strip().lower()
    if _BEFORE_AFTER.search(before) and _AFTER_REPORT.match(after):
        return "prev"  # "went with Y after X kept failing"
    if ci > 0 and lead in ("", "and", "but", "as") and _AFTER_REPORT.match(after):
        return "prev"  # "...; X was overkill"
    nxt = _NEXT_WORD.match(after)
    if nxt and nxt.group(1).islower() and not _BEFORE_CHOSEN.search(before):
        w = nxt.group(1).lower()
        if w not in STOPWORDS and w not in CUE_WORDS and w not in _PREPOSITIONS:
            return "modifier"  # "the ledger Postgres backups", "the latest SQLite release"
    return "chosen"


def _stem(w: str) -> str:
    """A light stemmer, enough to match "provisioning", "provisioned" and "provisions"."""
    if len(w) > 6 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 5 and w.endswith("ed"):
        w = w[:-2]
    elif len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


def _subject(
    text: str, blocked: list[tuple[int, int]], names: list[tuple[int, int]]
) -> tuple[frozenset[str], frozenset[str], dict[str, str]]:
    """(subject tokens, core tokens, token -> span). ``names``: spans of names the decision is
    about; a name of several words is one token ("shingon buddhism" is not "buddhism"). Core
    tokens are the ones that can make two subjects the same: not verb forms ("founded")."""
    starts = {s: e for s, e in names}
    words: list[tuple[str, int, int]] = []
    for m in _TOKEN.finditer(text):
        if _mask(blocked, m.start(), m.end()):
            words.append(("|", m.start(), m.end()))  # a break: concepts never span a hole
            continue
        if any(s < m.start() < e for s, e in names):
            continue  # inside a name already taken whole
        if m.start() in starts and " " in text[m.start() : starts[m.start()]]:
            name = " ".join(text[m.start() : starts[m.start()]].lower().split())
            words.append(("\x00" + name, m.start(), starts[m.start()]))
            continue
        words.append((m.group(0).lower(), m.start(), m.end()))
    tokens: set[str] = set()
    core: set[str] = set()
    spans: dict[str, str] = {}
    i = 0
    while i < len(words):
        matched = False
        for n in range(min(_CONCEPT_MAX, len(words) - i), 0, -1):
            key = tuple(w for w, _, _ in words[i : i + n])
            concept = _CONCEPT_OF.get(key)
            if concept:
                tokens.add(concept)
                core.add(concept)
                spans.setdefault(concept, text[words[i][1] : words[i + n - 1][2]])
                i += n
                matched = True
                break
        if matched:
            continue
        w, s, e = words[i]
        i += 1
        if w.startswith("\x00"):
            tokens.add(w[1:])
            core.add(w[1:])
            spans.setdefault(w[1:], text[s:e])
            continue
        if w == "|" or len(w) < 2 or w in STOPWORDS or w in CUE_WORDS or w in FILLER or w in WEAK:
            continue
        if w.isdigit() or w in CATEGORY_ACRONYMS:
            continue
        stem = _stem(w)
        tokens.add(stem)
        if not w.endswith(("ed", "en")):
            core.add(stem)
        spans.setdefault(stem, text[s:e])
    return frozenset(tokens), frozenset(core), spans


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
    reasons = _reason_spans(text)
    clauses = _clauses(text)
    names = find_names(text, vocab)
    if known:
        names = sorted(names + _known_words(text, known, names))
    mentions: list[Mention] = []
    unsure: set[int] = set()  # a capitalised word at a sentence start may be an ordinary word
    for s, e in names:
        if _mask(blocked, s, e):
            continue
        word = text[s:e]
        if _sentence_initial(text, s) and " " not in word and word[1:].islower() and word.isalpha():
            unsure.add(s)
        mentions.append(Mention(word, word.lower(), s, e, _role(text, s, e, clauses, reasons)))
    # Lowercase options in a clear slot ("picked cron for"), when no sure name is chosen.
    if not any(m.role == "chosen" and m.start not in unsure for m in mentions):
        taken = {m.start for m in mentions}
        for pattern in (_LOWER_SLOT, _LOWER_TO, _LOWER_WITH, _LOWER_LEAD):
            for m in pattern.finditer(text):
                w, s = m.group(1), m.start(1)
                if w in STOPWORDS or w in CUE_WORDS or w in FILLER or w in WEAK or (w,) in _CONCEPT_OF or s in taken:
                    continue
                if w.endswith(("ed", "ing")):
                    continue
                if _mask(reasons, s, m.end(1)) or _mask(blocked, s, m.end(1)):
                    continue
                taken.add(s)
                mentions.append(Mention(w, w.lower(), s, m.end(1), _role(text, s, m.end(1), clauses, reasons)))
        mentions.sort(key=lambda x: x.start)
    # An unsure word is dropped when a sure name is chosen ("Admin dashboard: going with X"),
    # unless it reads as a replaced option ("; Jenkins lost data").
    if any(m.role == "chosen" and m.start not in unsure for m in mentions):
        mentions = [m for m in mentions if m.start not in unsure or m.role == "prev"]
    mentions = _subject_names(text, mentions)
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
        if m.role == "prev" and _AFTER_REPORT.match(text[m.end : m.end + 48]):
            ci = _clause_of(clauses, m.start)
            if ci >= 0:
                prev_clauses.append((m.start, clauses[ci][1]))  # "X kept timing out", "after X was slow"
    # A later clause that reports on something ("Cron was hard to debug") is about the past.
    for ci, (cs, ce) in enumerate(clauses):
        first = _TOKEN.match(text, cs)
        if ci > 0 and first and first.group(0).lower() not in STOPWORDS and _AFTER_REPORT.match(text[first.end() : ce]):
            prev_clauses.append((cs, ce))
            low = first.group(0).lower()
            if low in vocab and low not in STOPWORDS and not any(x.start == cs for x in mentions):
                mentions.append(Mention(first.group(0), low, cs, first.end(), "prev"))
    mentions.sort(key=lambda x: x.start)
    hole = blocked + reasons + prev_clauses + [(m.start, m.end) for m in mentions if m.role != "subject"]
    subject, core, spans = _subject(text, hole, [(m.start, m.end) for m in mentions if m.role == "subject"])
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
    )
