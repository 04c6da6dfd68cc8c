"""Seeded generator of the frozen paraphrase set ``para`` (JSONL, one scenario a line).

    python -m bench.paraphrase --out bench/data/para.jsonl --n 72 --seed 13

Like ``bench.scenarios`` (same note and question fields, same byte-for-byte determinism), but
every version of the decision is worded with *other words*: each component and each aspect
has three hand-written names that share no word stem with each other ("ledger", "bookkeeping
entries", "financial journal"; "database", "persistence layer", "system of record"). Version 1
uses one name of each, the version in force another; a replacing note often has no change
cue at all ("For the bookkeeping entries, SQLite serves as the persistence layer."), and names
the option it leaves only in one note in five. So BM25 can find the replacing note only
through the option names, and an automatic linker has to know that the two notes are about the
same thing.

Each scenario (2 or 3 versions; with 3, the middle version mixes the two vocabularies) asks
three questions on the decision in force, one per ``wording``:

- ``old_words``: the names version 1 used ("Which database does the ledger use?");
- ``new_words``: the names of the version in force;
- ``neither``: the third names, used by no version of the decision.

Questions never name an option. Distractors use every name: decisions of the same component on
other aspects, of other components on the same aspect, a context note on the topic that decides
nothing, and unrelated noise; so a question's words also match notes it is not about.

Every replacing note records ``shared_words``: how many content-word stems it shares with the
note it replaces (a crude suffix-stripping stemmer, for the report only).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from dataclasses import dataclass
from typing import Any

from bench import scenarios as scen
from bench.scenarios import COMPLAINTS, REASONS, Note, _Builder, _cap, _finish, _layout

GENERATOR = "bench.paraphrase/1"
SET = "para"
WORDINGS = ("old_words", "new_words", "neither")

#: Three names per component; the names of one component share no word stem (a test checks it
#: with SQLite's porter tokenizer, the one recall uses).
COMPONENT_NAMES: dict[str, tuple[str, str, str]] = {
    "ledger": ("ledger", "bookkeeping entries", "financial journal"),
    "billing service": ("billing service", "invoicing backend", "charges subsystem"),
    "checkout": ("checkout", "purchase flow", "basket confirmation page"),
    "notification worker": ("notification worker", "pager daemon", "push dispatcher"),
    "user service": ("user service", "account administration", "member directory"),
    "inventory service": ("inventory service", "stock keeping", "warehouse counts"),
    "audit log": ("audit log", "compliance trail", "access history"),
    "order service": ("order service", "sales intake", "fulfilment requests"),
    "webhook relay": ("webhook relay", "callback forwarder", "outbound hooks proxy"),
    "reporting pipeline": ("reporting pipeline", "BI exports", "executive summaries"),
    "admin dashboard": ("admin dashboard", "back-office console", "operator panel"),
    "payments gateway": ("payments gateway", "card processing", "acquirer connector"),
    "shipping service": ("shipping service", "parcel logistics", "freight tracker"),
}

#: Three names per aspect (no shared stem among them, none with any component name), and its
#: options (none of them a word of a name: "GitLab CI", "Vault" and "AWS Secrets Manager" are left out).
ASPECT_NAMES: dict[str, dict[str, Any]] = {
    "database": {
        "names": ("database", "persistence layer", "system of record"),
        "options": ["Postgres", "SQLite", "MySQL", "CockroachDB", "DynamoDB", "MongoDB", "MariaDB"],
    },
    "queue": {
        "names": ("message queue", "event bus", "async broker"),
        "options": ["Kafka", "RabbitMQ", "NATS", "SQS", "Pulsar"],
    },
    "cache": {
        "names": ("cache", "in-memory store", "hot-data tier"),
        "options": ["Redis", "Memcached", "Varnish", "Hazelcast", "KeyDB"],
    },
    "ci": {
        "names": ("CI", "build server", "continuous integration"),
        "options": ["GitHub Actions", "Jenkins", "CircleCI", "Buildkite", "Drone"],
    },
    "deploy": {
        "names": ("deployment platform", "hosting", "container orchestrator"),
        "options": ["Kubernetes", "Nomad", "ECS", "Fly.io", "Heroku"],
    },
    "auth": {
        "names": ("auth provider", "single sign-on", "identity vendor"),
        "options": ["Auth0", "Keycloak", "Cognito", "Okta"],
    },
    "search": {
        "names": ("search engine", "full-text index", "lookup cluster"),
        "options": ["Elasticsearch", "OpenSearch", "Meilisearch", "Typesense", "Solr"],
    },
    "metrics": {
        "names": ("metrics stack", "monitoring", "observability tooling"),
        "options": ["Prometheus", "Datadog", "Dynatrace", "VictoriaMetrics", "Honeycomb"],
    },
    "secrets": {
        "names": ("secrets manager", "credentials vault", "password safe"),
        "options": ["Doppler", "SOPS", "Infisical", "Akeyless", "Conjur"],
    },
    "scheduler": {
        "names": ("job scheduler", "batch runner", "timed workflows"),
        "options": ["Airflow", "Prefect", "Dagster", "Temporal"],
    },
}

# Fields: {comp} {Comp} {asp} {Asp} {opt} {Opt} {prev} {reason} {complaint} {n}.
INITIAL = [
    "We picked {opt} as the {asp} of the {comp}{reason}.",
    "Decision: the {comp} keeps its {asp} in {opt}{reason}.",
    "{Comp} {asp}: going with {opt}{reason}.",
    "Agreed in the design review that {opt} is the {asp} for the {comp}{reason}.",
    "After comparing options we chose {opt} for the {comp} {asp}{reason}.",
]
CUE = [
    "The {comp} {asp} moved to {opt}{reason}.",
    "We switched the {asp} behind the {comp} to {opt}{reason}.",
    "{Comp}: the {asp} is now {opt}{reason}.",
    "Migrated the {comp} {asp} over to {opt} this week{reason}.",
]
NO_CUE = [
    "{Opt} is what the {comp} {asp} runs on{reason}.",
    "For the {comp}, {opt} serves as the {asp}{reason}.",
    "{Comp} {asp}: {opt}{reason}.",
    "The {asp} of the {comp} is {opt}{reason}.",
]
NAMES_OLD = [
    "{Opt} took over from {prev} as the {comp} {asp}.",
    "The {comp} {asp} is {opt}; {prev} {complaint}.",
]
CONTEXT = [
    "The {comp} {asp} graphs showed {n} alerts this week.",
    "Incident review for the {comp}: the {asp} was slow for {n} minutes during the release.",
    "Capacity planning: the {comp} {asp} needs {n} GB more by spring.",
]
NOISE = [
    "Sprint planning moved to Tuesdays.",
    "The on-call rotation now includes the mobile team.",
    "Quarterly security review is scheduled for the {n}th.",
    "Reminder: update the runbook links before the offsite.",
    "Design docs live in the shared drive under /architecture.",
    "New hires get read permissions on the staging graphs.",
    "Retro notes: we need fewer meetings and shorter standups.",
]
QUESTIONS = [
    "Which {asp} does the {comp} use?",
    "What is the {comp} {asp}?",
    "Setting up a fresh {comp} environment: which {asp} should I configure?",
    "Writing the {comp} runbook: what do we run as its {asp}?",
]

_STOP = frozenset(
    """a an the and or not of to in on at for from by with as is are was were be been it its we our
    this that what which who how do does did should i over after week into because since""".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")


def stem(word: str) -> str:
    """A crude suffix stripper, for the ``shared_words`` diagnostic only (recall uses porter)."""
    for suffix in ("ations", "ation", "ments", "ment", "ings", "ing", "ers", "er", "ies", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_stems(text: str) -> set[str]:
    return {stem(w) for w in _TOKEN.findall(text.lower()) if w not in _STOP}


def _without(texts: list[str], stems: set[str]) -> list[str]:
    """The texts that share no content-word stem with ``stems`` (the names of a topic)."""
    return [t for t in texts if not content_stems(t) & stems]


@dataclass
class _Pools:
    """The reasons (drawn without replacement) and complaints a scenario may use."""

    reasons: list[str]
    complaints: list[str]


def _fill(
    b: _Builder, templates: list[str], pools: _Pools, used: set[str] | None = None, **kw: str
) -> tuple[str, bool]:
    """Fill a template (a reason drawn without replacement, so two notes never share one).

    ``used``: templates already taken by this chain, not drawn again while others are left
    (two versions of one decision are never worded alike); the one drawn is added."""
    fresh = [t for t in templates if used is None or t not in used] or templates
    for _ in range(12):
        tpl = b.pick(fresh)
        reason = ""
        if "{reason}" in tpl and pools.reasons and b.rng.random() < 0.4:
            reason = f" {b.pick(['because', 'since'])} {b.pick(pools.reasons)}"
        values = {**kw, "reason": reason, "complaint": b.pick(pools.complaints), "n": str(b.rng.randint(2, 95))}
        for key in ("comp", "asp", "opt"):
            if key in values:
                values[_cap(key)] = _cap(values[key])
        text = tpl.format(**values)
        if text not in b.texts:
            b.texts.add(text)
            if used is not None:
                used.add(tpl)
            if reason:
                pools.reasons.remove(reason.split(" ", 2)[2])
            return text, bool(reason)
    raise RuntimeError("could not draw a unique note text")  # pragma: no cover - 12 draws always suffice


def para_scenario(rng: random.Random, index: int, seed: int, n_versions: int) -> dict[str, Any]:
    b = _Builder(rng)
    comp = b.pick(list(COMPONENT_NAMES))
    aspect = b.pick(list(ASPECT_NAMES))
    topic = f"{comp}/{aspect}"
    c_names = list(COMPONENT_NAMES[comp])
    a_names = list(ASPECT_NAMES[aspect]["names"])
    # reasons, complaints and noise never carry a word of the topic's names
    names = content_stems(" ".join(c_names + a_names))
    pools = _Pools(_without(REASONS, names), _without(COMPLAINTS, names))
    rng.shuffle(c_names)
    rng.shuffle(a_names)
    # (component name, aspect name) of each version: old names first, new names last
    forms = [(c_names[0], a_names[0])]
    if n_versions == 3:
        forms.append((c_names[0], a_names[1]) if rng.random() < 0.5 else (c_names[1], a_names[0]))
    forms.append((c_names[1], a_names[1]))
    options = list(ASPECT_NAMES[aspect]["options"])
    rng.shuffle(options)
    chain = options[:n_versions]
    main: list[Note] = []
    chain_templates: set[str] = set()
    for v, ((c, a), opt) in enumerate(zip(forms, chain, strict=True)):
        if v == 0:
            wording, templates = "initial", INITIAL
        else:
            r = rng.random()
            wording = "cue" if r < 0.4 else "no_cue" if r < 0.8 else "names_old"
            templates = {"cue": CUE, "no_cue": NO_CUE, "names_old": NAMES_OLD}[wording]
        prev = chain[v - 1] if v else ""
        text, has_reason = _fill(b, templates, pools, chain_templates, comp=c, asp=a, opt=opt, prev=prev)
        note = Note(
            text,
            "decision",
            topic,
            comp,
            aspect,
            None,
            opt,
            v + 1,
            supersedes=main[-1] if main else None,
            valid_at_question=(v == n_versions - 1),
            wording=wording,
            has_reason=has_reason,
        )
        if main:
            note.extra["shared_words"] = len(content_stems(text) & content_stems(main[-1].text))
        main.append(note)
    slots: dict[int, list[Note]] = {}
    lead: list[Note] = []

    def place(note: Note, anywhere: bool = True) -> None:
        j = rng.randrange(-1 if anywhere else 0, n_versions)
        (lead if j < 0 else slots.setdefault(j, [])).append(note)

    others = [a for a in ASPECT_NAMES if a != aspect]
    for d_aspect in rng.sample(others, rng.randint(3, 4)):  # the same component, other aspects
        d_opt = b.pick(ASPECT_NAMES[d_aspect]["options"])
        d_names = list(ASPECT_NAMES[d_aspect]["names"])
        text, _ = _fill(b, INITIAL + NO_CUE, pools, comp=b.pick(c_names), asp=b.pick(d_names), opt=d_opt)
        place(Note(text, "distractor", f"{comp}/{d_aspect}", comp, d_aspect, None, d_opt, 1, wording="initial"))
    for d_comp in rng.sample([c for c in COMPONENT_NAMES if c != comp], rng.randint(3, 4)):  # other components
        d_opt = b.pick(ASPECT_NAMES[aspect]["options"])
        text, _ = _fill(
            b, INITIAL + NO_CUE, pools, comp=b.pick(list(COMPONENT_NAMES[d_comp])), asp=b.pick(a_names), opt=d_opt
        )
        place(Note(text, "distractor", f"{d_comp}/{aspect}", d_comp, aspect, None, d_opt, 1, wording="initial"))
    if rng.random() < 0.6:
        text, _ = _fill(b, CONTEXT, pools, comp=b.pick(c_names), asp=b.pick(a_names))
        place(Note(text, "context", topic, comp, aspect, None, None, None, wording="context"), anywhere=False)
    for _ in range(rng.randint(1, 2)):
        text, _ = b.fill(_without(NOISE, names))
        place(Note(text, "noise", None, None, None, None, None, None, wording="noise"))
    notes = _layout(b, main, slots, lead)
    current = chain[-1]
    obsolete = [o for o in chain[:-1] if o != current]
    questions: list[dict[str, Any]] = []
    templates = list(QUESTIONS)
    rng.shuffle(templates)
    for qi, (wording, c, a) in enumerate(zip(WORDINGS, c_names, a_names, strict=True)):
        questions.append(
            {
                "id": f"q{qi}",
                "kind": "main",
                "text": _cap(templates[qi].format(comp=c, asp=a)),
                "wording": wording,
                "topic": topic,
                "scope": None,
                "gold_option": current,
                "obsolete_options": obsolete,
                "wrong_scope_options": [],
                "bait_option": None,
                "_gold": main[-1],
            }
        )
    meta = {
        "id": f"{SET}-{seed}-{index:03d}",
        "set": SET,
        "index": index,
        "seed": seed,
        "generator": GENERATOR,
        "topic": topic,
        "component": comp,
        "aspect": aspect,
        "n_versions": n_versions,
        "reverts": 0,
        "names": {"component": c_names, "aspect": a_names},
    }
    out = _finish(b, notes, questions, meta)
    for row, note in zip(out["notes"], notes, strict=True):
        if "shared_words" in note.extra:
            row["shared_words"] = note.extra["shared_words"]
    return out


def generate(n: int, seed: int) -> list[dict[str, Any]]:
    """All scenarios: two versions in two scenarios of three, three versions in the third."""
    rng = random.Random(seed)
    versions = [3 if i % 3 == 2 else 2 for i in range(n)]
    rng.shuffle(versions)
    return [para_scenario(random.Random(f"{SET}:{seed}:{i}"), i, seed, versions[i]) for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.paraphrase", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="JSONL file to write")
    ap.add_argument("--n", type=int, default=72, help="number of scenarios (default 72)")
    ap.add_argument("--seed", type=int, default=13, help="random seed (default 13)")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error("--n must be at least 1")
    scen.write(args.out, generate(args.n, args.seed))
    print(f"wrote {args.n} paraphrase scenarios (seed {args.seed}) to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
