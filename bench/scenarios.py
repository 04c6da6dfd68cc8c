"""Seeded generator of the frozen ODR and VDR scenario files (JSONL, one scenario a line).

The same ``--seed`` and ``--n`` give byte-identical files: only ``random.Random(seed)`` is
used, nothing iterates a set or reads the clock, and JSON is written with a fixed layout.

ODR (obsolete decision rate) scenarios: one *topic* (a component and an aspect, e.g. the
ledger's database) has 2 to 6 versions of a decision, plus distractor notes: decisions on
other topics (often naming an option the question mentions), context notes about the topic
that decide nothing, and unrelated noise. Later versions are worded with change words
("we moved the ledger from Postgres to SQLite") or without ("Ledger lives in SQLite;
Postgres was overkill"), some are reverts ("we went back to Postgres"), and many carry a
reason. The question is often worded with an old option's name, so plain BM25 prefers an
old version to the current one.

VDR (valid decision retention) scenarios: the same kind of main chain (2 to 4 versions,
default scope) plus a decision on the same component in another scope (staging, analytics,
EU region, mobile app, tests, ...) that stays valid the whole time, and 1 to 2 later notes in
that scope. In half the scenarios (``bait``) the scope's notes use change words on purpose,
to tempt an automatic linker into superseding a decision that is still valid.

Every note carries its gold metadata: ``kind``, ``topic`` (``component/aspect``),
``component``, ``aspect``, ``scope`` (null = the default scope), ``option`` (the option it
decides or restates; null when it decides nothing), ``version`` (1-based position in its
topic+scope chain; null when not a decision), ``supersedes`` (index of the note it replaces,
or null), ``valid_at_question`` (still true when the question is asked), ``wording`` and
``change_words`` (whether it contains a change word of the list below), plus ``i`` (its
index, the order in which notes are remembered), ``date`` and ``has_reason``.

Every question carries ``topic`` and ``scope`` (what it asks about), ``gold_option`` and
``gold_note`` (the decision in force), ``obsolete_options`` (options replaced before the
question), ``wrong_scope_options`` (the same component's option in another scope), ``wording``
(``bait`` when it names an old option) and two diagnostics computed with plain BM25
(``bm25_first_topic_note_obsolete``, ``bm25_current_in_top_k``), never used to judge.

    python -m bench.scenarios --out bench/data/odr.jsonl --n 120 --seed 7
    python -m bench.scenarios --vdr --out bench/data/vdr.jsonl --n 80 --seed 11
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bm25 import BM25

GENERATOR = "bench.scenarios/1"
K = 5  # the recall depth the diagnostics assume (same as bench.quality)

# A superset of the heuristic linker's change cues; used only to label notes (change_words).
CHANGE_WORDS = re.compile(
    r"\b(moved|move|moving|switched|switch|switching|migrated|migrate|migrating|replaced|replace|replacing|"
    r"changed|change|changing|now|no longer|instead|went back|go back|going back|reverted|revert|rolled back|"
    r"roll back|dropped|drop|ditched|abandoned|retired|deprecated|superseded|supersedes|updated|upgraded|"
    r"upgrade|downgraded|anymore|any more|from \w+ to \w+|new|rewrote|rewritten|ported)\b",
    re.I,
)

# ----------------------------------------------------------------------------- catalogue

ASPECTS: dict[str, dict[str, Any]] = {
    "database": {
        "nouns": ["database", "datastore"],
        "options": ["Postgres", "SQLite", "MySQL", "CockroachDB", "DynamoDB", "MongoDB", "MariaDB"],
    },
    "queue": {
        "nouns": ["message queue", "queue"],
        "options": ["Kafka", "RabbitMQ", "NATS", "SQS", "Pulsar", "Redis Streams"],
    },
    "cache": {"nouns": ["cache", "caching layer"], "options": ["Redis", "Memcached", "Varnish", "Hazelcast", "KeyDB"]},
    "ci": {
        "nouns": ["CI pipeline", "CI"],
        "options": ["GitHub Actions", "GitLab CI", "Jenkins", "CircleCI", "Buildkite", "Drone"],
    },
    "deploy": {
        "nouns": ["deployment platform", "hosting"],
        "options": ["Kubernetes", "Nomad", "ECS", "Fly.io", "Cloud Run", "Heroku"],
    },
    "auth": {
        "nouns": ["auth provider", "login provider"],
        "options": ["Auth0", "Keycloak", "Cognito", "Okta", "Ory Kratos"],
    },
    "search": {
        "nouns": ["search engine", "search backend"],
        "options": ["Elasticsearch", "OpenSearch", "Meilisearch", "Typesense", "Solr"],
    },
    "storage": {
        "nouns": ["object storage", "blob store"],
        "options": ["S3", "GCS", "MinIO", "Azure Blob", "Backblaze B2"],
    },
    "flags": {
        "nouns": ["feature flag service", "flag service"],
        "options": ["LaunchDarkly", "Unleash", "Flagsmith", "ConfigCat", "GrowthBook"],
    },
    "scheduler": {
        "nouns": ["job scheduler", "scheduler"],
        "options": ["cron", "Airflow", "Prefect", "Dagster", "Temporal"],
    },
    "metrics": {
        "nouns": ["metrics stack", "monitoring"],
        "options": ["Prometheus", "Datadog", "Dynatrace", "VictoriaMetrics", "Honeycomb"],
    },
    "email": {
        "nouns": ["email provider", "mail service"],
        "options": ["SendGrid", "Mailgun", "SES", "Postmark", "Resend"],
    },
    "format": {
        "nouns": ["wire format", "serialization format"],
        "options": ["JSON", "Protobuf", "MessagePack", "Avro", "CBOR"],
    },
    "secrets": {
        "nouns": ["secrets manager", "secret store"],
        "options": ["Vault", "AWS Secrets Manager", "Doppler", "SOPS", "Infisical"],
    },
}

COMPONENTS = [
    "ledger",
    "billing service",
    "checkout",
    "notification worker",
    "search api",
    "reporting pipeline",
    "user service",
    "inventory service",
    "admin dashboard",
    "mobile backend",
    "audit log",
    "order service",
    "recommendation engine",
    "webhook relay",
    "analytics exporter",
    "payments gateway",
    "catalog service",
    "shipping service",
]

REASONS = [
    "it is cheaper to run",
    "the team already knows it well",
    "it cut p99 latency in the load test",
    "it has managed backups",
    "it needs no extra server",
    "it scales horizontally",
    "it keeps on-call simple",
    "its licence fits our policy",
    "it was already in the stack",
    "it has first-class Python support",
    "the vendor offered a better SLA",
    "it keeps the setup in one place",
    "it passed the security review",
    "it halves the monthly bill",
]
COMPLAINTS = [
    "was overkill",
    "kept timing out under load",
    "cost too much",
    "was painful to operate",
    "lost data during the March outage",
    "lacked the features we needed",
    "was hard to debug",
    "had a licensing problem",
    "needed too much tuning",
    "did not survive the failover drill",
]

SCOPES: list[dict[str, str]] = [
    {"label": "staging", "lead": "In staging", "ask": "in staging"},
    {"label": "analytics", "lead": "For the analytics replica", "ask": "for the analytics replica"},
    {"label": "eu-west", "lead": "In the EU region", "ask": "in the EU region"},
    {"label": "mobile", "lead": "For the mobile app", "ask": "for the mobile app"},
    {"label": "tests", "lead": "In the test suite", "ask": "in the test suite"},
    {"label": "dev", "lead": "For local development", "ask": "for local development"},
    {"label": "on-prem", "lead": "For the on-prem install", "ask": "for the on-prem install"},
    {"label": "load-test", "lead": "In the load-test environment", "ask": "in the load-test environment"},
]

# Templates. Fields: {comp} {Comp} {noun} {opt} {Opt} {prev} {Prev} {reason} {complaint} {lead} {n}.
# {reason} expands to "" or " because <reason>" (decided per note, recorded as has_reason).
INITIAL = [
    "We picked {opt} for the {comp} {noun}{reason}.",
    "Decision: the {comp} uses {opt} as its {noun}{reason}.",
    "{Comp} {noun}: going with {opt}{reason}.",
    "After comparing options we chose {opt} for the {comp} {noun}{reason}.",
    "The {comp} will run on {opt} for its {noun}{reason}.",
    "Agreed in the design review: {opt} is the {comp} {noun}{reason}.",
]
CHANGE = [
    "We moved the {comp} {noun} from {prev} to {opt}{reason}.",
    "Switched the {comp} to {opt} for the {noun}; {prev} {complaint}.",
    "Replacing {prev} with {opt} as the {comp} {noun}{reason}.",
    "The {comp} {noun} migrated to {opt} this week{reason}.",
    "{Comp}: {prev} is no longer the {noun}, we use {opt} instead{reason}.",
    "Changed the {comp} {noun} to {opt}; {prev} {complaint}.",
]
IMPLICIT = [
    "{Comp} runs on {opt}; {prev} {complaint}.",
    "From here on the {comp} runs on {opt}{reason}.",
    "Going forward the {comp} {noun} is {opt}; {prev} {complaint}.",
    "{Comp} {noun} is {opt} as of this sprint{reason}.",
    "Settled: {opt} for the {comp}. {Prev} {complaint}.",
    "The {comp} team went with {opt} after {prev} {complaint}.",
]
REVERT = [
    "We went back to {opt} for the {comp} {noun}; {prev} {complaint}.",
    "Reverted the {comp} {noun} to {opt}{reason}.",
    "Rolled back the {comp} to {opt}; {prev} {complaint}.",
]
REVERT_IMPLICIT = [
    "{Opt} is back as the {comp} {noun}; {prev} {complaint}.",
    "Back on {opt} for the {comp}: {prev} {complaint}.",
    "{Comp} returns to {opt}{reason}.",
]
CONTEXT = [
    "{Comp} {opt} backups took {n} minutes last night.",
    "Load test: the {comp} on {opt} handled {n}0 requests per second.",
    "Incident review for the {comp}: {opt} latency spiked to {n} ms during the deploy.",
    "{Opt} version pinning for the {comp} is tracked in the ops wiki.",
    "The {comp} {noun} dashboard shows {n} alerts this week.",
]
NOISE = [
    "Sprint planning moved to Tuesdays.",
    "The on-call rotation now includes the data team.",
    "Quarterly security review is scheduled for the {n}th.",
    "Reminder: update the runbook links before the audit.",
    "Design docs live in the shared drive under /architecture.",
    "New hires get read access to the staging dashboards.",
    "Retro notes: we need fewer meetings and shorter standups.",
]
SCOPE_DECISION = [
    "{lead}, the {comp} uses {opt} as its {noun}{reason}.",
    "{lead} the {comp} {noun} is {opt}, and it stays that way.",
    "{lead}, the {comp} keeps {opt} for its {noun}{reason}.",
]
SCOPE_DECISION_BAIT = [
    "{lead} we switched the {comp} {noun} to {opt}{reason}.",
    "{lead}, the {comp} moved to {opt} for its {noun}.",
    "{lead}, we now run the {comp} {noun} on {opt} instead{reason}.",
]
SCOPE_NOTE = [
    "{lead}, the {comp} on {opt} passed the weekly checks.",
    "{lead}, {opt} for the {comp} {noun} is sized at {n} GB.",
    "{lead}, the {comp} {noun} ({opt}) had no incidents this month.",
]
SCOPE_NOTE_BAIT = [
    "{lead}, we moved the {comp} {opt} {noun} to a bigger disk; it stays on {opt}.",
    "{lead}, the {comp} {noun} was upgraded to the latest {opt} release.",
    "{lead}, switched the {comp} {opt} backups to a new bucket.",
]
QUESTION_BAIT = [
    "What {noun} does the {comp} use? Is it still {old}?",
    "Is the {comp} still on {old} for its {noun}?",
    "I need to tune {old} for the {comp} {noun}. Which {noun} does the {comp} run on?",
    "Which {noun} should the {comp} use ({old}, right)?",
    "Why did we pick {old} for the {comp} {noun}, and is that still the setup?",
    "Writing the {comp} runbook: does the {comp} {noun} run on {old}?",
]
QUESTION_NEUTRAL = [
    "What {noun} does the {comp} use?",
    "Which {noun} is the {comp} on?",
    "Setting up a fresh {comp} environment: which {noun} should I configure?",
]
QUESTION_SCOPE = [
    "Which {noun} does the {comp} use {ask}?",
    "What is the {comp} {noun} {ask}?",
    "{Ask}, is the {comp} {noun} {main} as well?",
]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


@dataclass
class Note:
    text: str
    kind: str  # decision | scope_decision | scope_note | distractor | context | noise
    topic: str | None
    component: str | None
    aspect: str | None
    scope: str | None
    option: str | None
    version: int | None
    supersedes: Any = None  # a Note object while building, an index once written
    valid_at_question: bool = True
    wording: str = ""
    has_reason: bool = False
    mentions: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class _Builder:
    """Draws one scenario; every random choice goes through ``self.rng``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.texts: set[str] = set()

    def pick(self, seq: list[Any]) -> Any:
        return seq[self.rng.randrange(len(seq))]

    def reason(self, p: float = 0.6) -> tuple[str, bool]:
        if self.rng.random() < p:
            return f" {self.pick(['because', 'since'])} {self.pick(REASONS)}", True
        return "", False

    def fill(self, templates: list[str], **kw: Any) -> tuple[str, bool]:
        """Fill a template; retry another one if the text already exists in the scenario."""
        for _ in range(12):
            tpl = self.pick(templates)
            reason, has_reason = self.reason() if "{reason}" in tpl else ("", False)
            values = {**kw, "reason": reason, "complaint": self.pick(COMPLAINTS), "n": self.rng.randint(2, 95)}
            for key in ("comp", "opt", "prev", "ask"):
                if key in values:
                    values[_cap(key)] = _cap(str(values[key]))
            text = tpl.format(**values)
            if text not in self.texts:
                self.texts.add(text)
                return text, has_reason and reason in text
        raise RuntimeError("could not draw a unique note text")  # pragma: no cover - 12 draws always suffice

    # ---------------------------------------------------------------- chains

    def options_chain(self, aspect: str, n: int) -> tuple[list[str], list[bool]]:
        """Options of n versions, and which versions are reverts (back to an earlier option)."""
        opts = ASPECTS[aspect]["options"]
        chain = [self.pick(opts)]
        reverts = [False]
        for v in range(1, n):
            earlier = [o for o in dict.fromkeys(chain[:-1]) if o != chain[-1]]
            fresh = [o for o in opts if o not in chain]
            if v >= 2 and earlier and (not fresh or self.rng.random() < 0.3):
                chain.append(self.pick(earlier))
                reverts.append(True)
            else:
                chain.append(self.pick(fresh))
                reverts.append(False)
        return chain, reverts

    def main_chain(self, comp: str, aspect: str, n: int) -> list[Note]:
        chain, reverts = self.options_chain(aspect, n)
        topic = f"{comp}/{aspect}"
        nouns = ASPECTS[aspect]["nouns"]
        notes: list[Note] = []
        for v, (opt, rev) in enumerate(zip(chain, reverts, strict=True)):
            kw = {"comp": comp, "noun": self.pick(nouns), "opt": opt}
            if v == 0:
                wording, templates = "initial", INITIAL
            else:
                kw["prev"] = chain[v - 1]
                explicit = self.rng.random() < 0.5
                if rev:
                    wording, templates = ("revert", REVERT) if explicit else ("revert_implicit", REVERT_IMPLICIT)
                else:
                    wording, templates = ("change_words", CHANGE) if explicit else ("implicit", IMPLICIT)
            text, has_reason = self.fill(templates, **kw)
            notes.append(
                Note(
                    text,
                    "decision",
                    topic,
                    comp,
                    aspect,
                    None,
                    opt,
                    v + 1,
                    supersedes=notes[-1] if notes else None,
                    valid_at_question=(v == n - 1),
                    wording=wording,
                    has_reason=has_reason,
                )
            )
        return notes

    # ---------------------------------------------------------------- fillers

    def distractor(self, comp: str, aspect: str, bait: str, used: set[str]) -> Note:
        for _ in range(50):
            if self.rng.random() < 0.5:
                d_comp, d_aspect = self.pick([c for c in COMPONENTS if c != comp]), aspect
            else:
                d_comp, d_aspect = comp, self.pick([a for a in ASPECTS if a != aspect])
            topic = f"{d_comp}/{d_aspect}"
            if topic not in used:
                break
        used.add(topic)
        opts = ASPECTS[d_aspect]["options"]
        opt = bait if (bait in opts and self.rng.random() < 0.6) else self.pick(opts)
        text, has_reason = self.fill(INITIAL, comp=d_comp, noun=self.pick(ASPECTS[d_aspect]["nouns"]), opt=opt)
        return Note(text, "distractor", topic, d_comp, d_aspect, None, opt, 1, wording="initial", has_reason=has_reason)

    def context(self, comp: str, aspect: str, opt: str) -> Note:
        text, _ = self.fill(CONTEXT, comp=comp, noun=self.pick(ASPECTS[aspect]["nouns"]), opt=opt)
        return Note(
            text, "context", f"{comp}/{aspect}", comp, aspect, None, None, None, wording="context", mentions=opt
        )

    def noise(self) -> Note:
        text, _ = self.fill(NOISE)
        return Note(text, "noise", None, None, None, None, None, None, wording="noise")


def _date(start: dt.date, days: int) -> str:
    return (start + dt.timedelta(days=days)).isoformat()


def _layout(b: _Builder, main: list[Note], slots: dict[int, list[Note]], lead: list[Note]) -> list[Note]:
    """Main versions in order; ``slots[j]`` go right after version j; ``lead`` before v1."""
    out = list(lead)
    for j, note in enumerate(main):
        out.append(note)
        out.extend(slots.get(j, []))
    return out


def _finish(b: _Builder, notes: list[Note], questions: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    start = dt.date(2023, 1, 2) + dt.timedelta(days=b.rng.randint(0, 400))
    day = 0
    index = {id(n): i for i, n in enumerate(notes)}
    rows: list[dict[str, Any]] = []
    for i, n in enumerate(notes):
        day += b.rng.randint(1, 21)
        rows.append(
            {
                "i": i,
                "text": n.text,
                "date": _date(start, day),
                "kind": n.kind,
                "topic": n.topic,
                "component": n.component,
                "aspect": n.aspect,
                "scope": n.scope,
                "option": n.option,
                "version": n.version,
                "supersedes": index[id(n.supersedes)] if n.supersedes is not None else None,
                "valid_at_question": n.valid_at_question,
                "wording": n.wording,
                "change_words": bool(CHANGE_WORDS.search(n.text)),
                "has_reason": n.has_reason,
                "mentions": n.mentions,
            }
        )
    q_date = _date(start, day + b.rng.randint(1, 30))
    for q in questions:
        q["date"] = q_date
        q["gold_note"] = index[id(q.pop("_gold"))]
        q.update(_diagnostics(rows, q))
    return {**meta, "notes": rows, "questions": questions}


def _diagnostics(rows: list[dict[str, Any]], q: dict[str, Any]) -> dict[str, Any]:
    """How hard plain BM25 makes the question (recorded for the report, never used to judge)."""
    ranked = [i for i, _ in BM25([r["text"] for r in rows]).top(q["text"], len(rows))]
    mine = [
        i
        for i in ranked
        if rows[i]["topic"] == q["topic"] and rows[i]["scope"] == q["scope"] and rows[i]["option"] is not None
    ]
    first = mine[0] if mine else None
    return {
        "bm25_first_topic_note_obsolete": first is not None and rows[first]["option"] in q["obsolete_options"],
        "bm25_current_in_top_k": q["gold_note"] in ranked[:K],
    }


def odr_scenario(rng: random.Random, index: int, seed: int, n_versions: int) -> dict[str, Any]:
    b = _Builder(rng)
    comp = b.pick(COMPONENTS)
    aspect = b.pick(list(ASPECTS))
    main = b.main_chain(comp, aspect, n_versions)
    current = main[-1].option
    obsolete = [o for o in dict.fromkeys(n.option for n in main[:-1]) if o != current]
    bait = main[0].option if main[0].option != current else b.pick(obsolete)
    used = {f"{comp}/{aspect}"}
    slots: dict[int, list[Note]] = {}
    lead: list[Note] = []
    for _ in range(b.rng.randint(3, 7)):
        r = b.rng.random()
        j = b.rng.randrange(-1, n_versions)
        if r < 0.5:
            note = b.distractor(comp, aspect, bait, used)
        elif r < 0.8:
            j = max(j, 0)
            note = b.context(comp, aspect, main[j].option or "")
        else:
            note = b.noise()
        (lead if j < 0 else slots.setdefault(j, [])).append(note)
    notes = _layout(b, main, slots, lead)
    noun = b.pick(ASPECTS[aspect]["nouns"])
    if b.rng.random() < 0.75:
        q_text = b.pick(QUESTION_BAIT).format(comp=comp, noun=noun, old=bait)
        q_wording = "bait"
    else:
        q_text = b.pick(QUESTION_NEUTRAL).format(comp=comp, noun=noun)
        q_wording = "neutral"
    question = {
        "id": "q0",
        "kind": "main",
        "text": _cap(q_text),
        "wording": q_wording,
        "topic": f"{comp}/{aspect}",
        "scope": None,
        "gold_option": current,
        "obsolete_options": obsolete,
        "wrong_scope_options": [],
        "bait_option": bait if q_wording == "bait" else None,
        "_gold": main[-1],
    }
    meta = {
        "id": f"odr-{seed}-{index:03d}",
        "set": "odr",
        "index": index,
        "seed": seed,
        "generator": GENERATOR,
        "topic": f"{comp}/{aspect}",
        "component": comp,
        "aspect": aspect,
        "n_versions": n_versions,
        "reverts": sum(1 for n in main if n.wording.startswith("revert")),
    }
    return _finish(b, notes, [question], meta)


def vdr_scenario(rng: random.Random, index: int, seed: int, n_versions: int, bait: bool) -> dict[str, Any]:
    b = _Builder(rng)
    comp = b.pick(COMPONENTS)
    aspect = b.pick(list(ASPECTS))
    main = b.main_chain(comp, aspect, n_versions)
    scope = b.pick(SCOPES)
    nouns = ASPECTS[aspect]["nouns"]
    s_opt = b.pick([o for o in ASPECTS[aspect]["options"] if o not in {n.option for n in main}])
    topic = f"{comp}/{aspect}"
    text, has_reason = b.fill(
        SCOPE_DECISION_BAIT if bait else SCOPE_DECISION, lead=scope["lead"], comp=comp, noun=b.pick(nouns), opt=s_opt
    )
    s_dec = Note(
        text,
        "scope_decision",
        topic,
        comp,
        aspect,
        scope["label"],
        s_opt,
        1,
        wording="scope_bait" if bait else "scope",
        has_reason=has_reason,
    )
    j_dec = b.rng.randrange(0, n_versions - 1) if n_versions > 1 else 0
    slots: dict[int, list[Note]] = {j_dec: [s_dec]}
    for _ in range(b.rng.randint(1, 2)):
        text, _ = b.fill(
            SCOPE_NOTE_BAIT if bait else SCOPE_NOTE, lead=scope["lead"], comp=comp, noun=b.pick(nouns), opt=s_opt
        )
        note = Note(
            text,
            "scope_note",
            topic,
            comp,
            aspect,
            scope["label"],
            s_opt,
            None,
            wording="scope_note_bait" if bait else "scope_note",
        )
        slots.setdefault(b.rng.randrange(j_dec, n_versions), []).append(note)
    current = main[-1].option
    obsolete = [o for o in dict.fromkeys(n.option for n in main[:-1]) if o != current]
    bait_opt = main[0].option if main[0].option != current else b.pick(obsolete)
    used = {topic}
    lead: list[Note] = []
    for _ in range(b.rng.randint(2, 5)):
        r = b.rng.random()
        j = b.rng.randrange(-1, n_versions)
        if r < 0.6:
            note = b.distractor(comp, aspect, bait_opt, used)
        elif r < 0.8:
            j = max(j, 0)
            note = b.context(comp, aspect, main[j].option or "")
        else:
            note = b.noise()
        (lead if j < 0 else slots.setdefault(j, [])).append(note)
    notes = _layout(b, main, slots, lead)
    noun = b.pick(nouns)
    if b.rng.random() < 0.6:
        q_main = b.pick(QUESTION_BAIT).format(comp=comp, noun=noun, old=bait_opt)
        q_wording = "bait"
    else:
        q_main = b.pick(QUESTION_NEUTRAL).format(comp=comp, noun=noun)
        q_wording = "neutral"
    q_scope = b.pick(QUESTION_SCOPE).format(
        comp=comp, noun=b.pick(nouns), ask=scope["ask"], Ask=_cap(scope["ask"]), main=current
    )
    questions = [
        {
            "id": "q0",
            "kind": "main",
            "text": _cap(q_main),
            "wording": q_wording,
            "topic": topic,
            "scope": None,
            "gold_option": current,
            "obsolete_options": obsolete,
            "wrong_scope_options": [s_opt],
            "bait_option": bait_opt if q_wording == "bait" else None,
            "_gold": main[-1],
        },
        {
            "id": "q1",
            "kind": "scope",
            "text": _cap(q_scope),
            "wording": "scope",
            "topic": topic,
            "scope": scope["label"],
            "gold_option": s_opt,
            "obsolete_options": obsolete,
            "wrong_scope_options": [current],
            "bait_option": None,
            "_gold": s_dec,
        },
    ]
    meta = {
        "id": f"vdr-{seed}-{index:03d}",
        "set": "vdr",
        "index": index,
        "seed": seed,
        "generator": GENERATOR,
        "topic": topic,
        "component": comp,
        "aspect": aspect,
        "n_versions": n_versions,
        "scope": scope["label"],
        "bait": bait,
        "reverts": sum(1 for n in main if n.wording.startswith("revert")),
    }
    return _finish(b, notes, questions, meta)


def generate(n: int, seed: int, *, vdr: bool = False) -> list[dict[str, Any]]:
    """All scenarios of one set. Versions are balanced (2..6 for ODR, 2..4 for VDR), then shuffled."""
    rng = random.Random(seed)
    levels = [2, 3, 4] if vdr else [2, 3, 4, 5, 6]
    versions = [levels[i % len(levels)] for i in range(n)]
    rng.shuffle(versions)
    baits = [i % 2 == 0 for i in range(n)]
    rng.shuffle(baits)
    out = []
    for i in range(n):
        sub = random.Random(f"{seed}:{i}")  # one stream per scenario: scenario i does not depend on n
        out.append(
            vdr_scenario(sub, i, seed, versions[i], baits[i]) if vdr else odr_scenario(sub, i, seed, versions[i])
        )
    return out


def dumps(scenarios: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(s, ensure_ascii=False, separators=(",", ":")) + "\n" for s in scenarios)


def write(path: str | Path, scenarios: list[dict[str, Any]]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(dumps(scenarios))


def load(path: str | Path) -> list[dict[str, Any]]:
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scenarios", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="JSONL file to write")
    ap.add_argument("--n", type=int, default=None, help="number of scenarios (default 120, or 80 with --vdr)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default 7, or 11 with --vdr)")
    ap.add_argument("--vdr", action="store_true", help="write the VDR set (scoped decisions that stay valid)")
    args = ap.parse_args(argv)
    n = args.n if args.n is not None else (80 if args.vdr else 120)
    seed = args.seed if args.seed is not None else (11 if args.vdr else 7)
    if n < 1:
        ap.error("--n must be at least 1")
    scenarios = generate(n, seed, vdr=args.vdr)
    write(args.out, scenarios)
    print(f"wrote {n} {'VDR' if args.vdr else 'ODR'} scenarios (seed {seed}) to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
