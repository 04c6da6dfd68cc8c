"""The subject reader's own vocabulary, and a decision's subject tokens (``evomem.domain.subject``).

- the words that carry no subject (``FILLER``), the heads many subjects share (``WEAK``), ordinary
  words written capitalised (``COMMON_CAPITALISED``) and acronyms that name a kind of thing
  (``CATEGORY_ACRONYMS``); the stopwords, cue words and change cue are the shared ones
  (``evomem.domain.linkers.vocabulary``);
- ``CONCEPTS``: paraphrases of common infrastructure aspects folded into one concept token
  ("database" and "datastore" are ``@database``), general vocabulary of the field, not a list of
  any data set's components or products;
- ``subject_tokens``: the content words of a decision, concepts folded, with its *core* (the tokens
  that can identify it: not verb forms such as "founded");
- ``name_concepts``: the concepts a product's own name states ("Redis Streams", "GitLab CI").
"""

from __future__ import annotations

import re

from evomem.domain.linkers.vocabulary import CUE_WORDS, STOPWORDS, fold

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

#: Titles and abbreviations written with a period that does not end the sentence ("Mr. Hrubý",
#: "Dr. Okafor", "Capt. Ruel"): the period belongs to the word, and the name that follows joins it.
TITLES = frozenset("mr mrs ms mx dr prof st capt cpt sgt lt col gen rev fr sr jr mt ft hon messrs".split())

#: Short forms of days and months: next to a number or another of them ("23-27 Dec", "Mon-Fri",
#: "Jan–Aug", "14 Sept") they are a date, not a name.
DATE_ABBREVIATIONS = frozenset(
    "mon tue tues wed thu thur thurs fri sat sun jan feb mar apr jun jul aug sep sept oct nov dec".split()
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
CONCEPT_OF: dict[tuple[str, ...], str] = {tuple(p.split()): c for c, ps in CONCEPTS.items() for p in ps}
CONCEPT_MAX = max(len(k) for k in CONCEPT_OF)

#: A word of a note: letters (accented ones too: "Raúl") and digits, with inner dots, pluses, dashes
#: or slashes ("CI/CD", "C++").
TOKEN = re.compile(r"[^\W\d_][^\W_]*(?:[.+\-/][^\W_]+)*\+*")


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


def masked(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``start:end`` lies inside one of ``spans``."""
    return any(s <= start and end <= e for s, e in spans)


def subject_tokens(
    text: str, blocked: list[tuple[int, int]], names: list[tuple[int, int]]
) -> tuple[frozenset[str], frozenset[str], dict[str, str]]:
    """(subject tokens, core tokens, token -> span). ``names``: spans of names the decision is
    about; a name of several words is one token ("shingon buddhism" is not "buddhism"). Core
    tokens are the ones that can make two subjects the same: not verb forms ("founded")."""
    starts = {s: e for s, e in names}
    words: list[tuple[str, int, int]] = []
    for m in TOKEN.finditer(text):
        if masked(blocked, m.start(), m.end()):
            words.append(("|", m.start(), m.end()))  # a break: concepts never span a hole
            continue
        if any(s < m.start() < e for s, e in names):
            continue  # inside a name already taken whole
        if m.start() in starts and " " in text[m.start() : starts[m.start()]]:
            name = " ".join(fold(text[m.start() : starts[m.start()]]).split())
            words.append(("\x00" + name, m.start(), starts[m.start()]))
            continue
        words.append((fold(m.group(0)), m.start(), m.end()))
    tokens: set[str] = set()
    core: set[str] = set()
    spans: dict[str, str] = {}
    i = 0
    while i < len(words):
        matched = False
        for n in range(min(CONCEPT_MAX, len(words) - i), 0, -1):
            key = tuple(w for w, _, _ in words[i : i + n])
            concept = CONCEPT_OF.get(key)
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
        for n in range(min(CONCEPT_MAX, len(words) - i), 0, -1):
            concept = CONCEPT_OF.get(tuple(words[i : i + n]))
            if concept:
                out.add(concept)
                break
    return frozenset(out)
