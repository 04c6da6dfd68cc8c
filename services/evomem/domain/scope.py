"""Scope: where a decision applies. Explicit (given by the caller) or inferred from the text.

A scope is a short label. When ``remember`` gets no scope, ``infer_scope`` looks for a
*scope phrase*: an environment, region, product surface or audience named as the place
the decision applies ("In staging, ...", "for the EU region", "in the mobile app", "in
the test suite"). Component names that merely contain such a word ("the mobile backend",
"the analytics exporter", "the test runner service") are not scopes, so the patterns
require the phrasing of a place, not a bare word.

The default scope is *unscoped*. ``production`` is treated as the default scope too:
a decision for production (or for no scope) stays in force everywhere until a scoped
decision overrides it in that scope alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evomem.domain.linkers.decision_text import search_text

DEFAULT_SCOPES = frozenset({None, "production"})

_P = r"(?:in|for|on|within|inside|across|under)\s+(?:the\s+|our\s+|all\s+)?"

# (label, pattern). Order matters: the first family that matches wins.
FAMILIES: list[tuple[str, re.Pattern[str]]] = [
    ("staging", re.compile(rf"\b{_P}(?:staging|stage|pre-?prod(?:uction)?)\b(?!\s+(?:service|team))", re.I)),
    ("production", re.compile(rf"\b{_P}(?:production|prod)\b(?:\s+(?:environment|cluster|env))?", re.I)),
    (
        "analytics",
        re.compile(
            rf"\b{_P}(?:analytics|data[- ]warehouse|warehouse|bi)\s+"
            r"(?:replica|cluster|environment|env|stack|side|workloads?|copy)\b",
            re.I,
        ),
    ),
    (
        "eu",
        re.compile(
            rf"\b{_P}(?:eu|europe(?:an)?|eu-\w+(?:-\d)?|frankfurt|dublin|ireland)\b"
            r"(?:\s+(?:region|regions|deployment|data ?cent(?:er|re)|cluster|tenants?|customers?))?",
            re.I,
        ),
    ),
    ("us", re.compile(rf"\b{_P}(?:us|north america|us-\w+-\d)\s+(?:region|deployment|cluster|tenants?)\b", re.I)),
    ("apac", re.compile(rf"\b{_P}(?:apac|asia(?:-pacific)?|ap-\w+-\d)\b(?:\s+region)?", re.I)),
    (
        "mobile",
        re.compile(rf"\b{_P}(?:mobile\s+(?:app|apps|client|clients)|ios(?:\s+app)?|android(?:\s+app)?)\b", re.I),
    ),
    ("web", re.compile(rf"\b{_P}(?:web\s+(?:app|client|frontend)|browser\s+client)\b", re.I)),
    (
        "tests",
        re.compile(
            rf"\b(?:{_P}(?:test\s+suites?|unit\s+tests|integration\s+tests|e2e\s+tests|test\s+environment|tests?)|"
            # "In CI, ..." is a place; "GitLab CI for the CI" is the thing decided, not a scope.
            r"(?:in|on|within|inside|under)\s+(?:the\s+|our\s+)?ci)\b"
            r"(?!\s+(?:service|team|runner service|pipeline|pipelines|server|runners?|jobs?))",
            re.I,
        ),
    ),
    (
        "load-test",
        re.compile(
            rf"\b{_P}(?:load[- ]?tests?|perf(?:ormance)?[- ]tests?|benchmark)\s*(?:environment|env|runs?)?\b", re.I
        ),
    ),
    (
        "dev",
        re.compile(
            rf"\b{_P}(?:local\s+dev(?:elopment)?|dev(?:elopment)?\s+(?:environment|env|setup|machines?)|dev)\b", re.I
        ),
    ),
    # "acceptance" is a place only as an environment's name ("on the acceptance environment"): "deposit 20% on
    # acceptance" is a moment (of an offer, a quote), not a scope.
    (
        "qa",
        re.compile(
            rf"\b{_P}(?:(?:qa|uat)\b(?:\s+(?:environment|env))?|acceptance\s+(?:environment|env|stage|servers?)\b)",
            re.I,
        ),
    ),
    (
        "on-prem",
        re.compile(
            rf"\b{_P}(?:on-?prem(?:ises)?|self-hosted)\s*(?:install(?:ation)?s?|deployments?|customers?|edition)?\b",
            re.I,
        ),
    ),
    ("sandbox", re.compile(rf"\b{_P}sandbox\b", re.I)),
]

ALIASES = {"prod": "production", "stage": "staging", "preprod": "staging", "pre-prod": "staging"}


@dataclass(frozen=True, slots=True)
class InferredScope:
    scope: str
    evidence: str  # the span of the note the scope was read from
    family: str


# A reason clause says why, not where: "because it cut latency in the load test" is no scope.
_REASON_CLAUSE = re.compile(r"\b(?:because|since|due to|as it|after it|given that)\b[^.;:]*", re.I)


def infer_scope(text: str) -> InferredScope | None:
    """The scope a note's own words place it in, or None when it names no place."""
    masked = _REASON_CLAUSE.sub(lambda m: " " * len(m.group(0)), text)
    best: tuple[int, str, re.Match[str]] | None = None
    for label, pattern in FAMILIES:
        m = pattern.search(masked)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), label, m)
    if best is None:
        return None
    _, label, m = best
    return InferredScope(scope=label, evidence=text[m.start() : m.end()].strip(), family=label)


def infer_note_scope(text: str) -> InferredScope | None:
    """``infer_scope`` over what a note decides: a short note whole, a long document by its title
    and decision part (``decision_text.search_text``). A place its background or consequences
    name in passing is not where the decision applies: on the long notes of the development
    sets, reading the whole text gave 33 scopes the note does not have (of 345), the decision
    part 11, for one more scope missed (8 against 7)."""
    return infer_scope(search_text(text))


def normalise(scope: str | None) -> str | None:
    if scope is None:
        return None
    return ALIASES.get(scope, scope)


def is_default(scope: str | None) -> bool:
    return normalise(scope) in DEFAULT_SCOPES


def compatible(a: str | None, b: str | None) -> bool:
    """Whether a decision in scope ``a`` can replace one in scope ``b``.

    Same scope, or both in the default scope (unscoped or production). A staging decision
    never replaces a default one, and the reverse: they coexist, each in force in its place.
    """
    a, b = normalise(a), normalise(b)
    if a == b:
        return True
    return is_default(a) and is_default(b)


def may_list(a: str | None, b: str | None, *, a_inferred: bool, b_inferred: bool) -> bool:
    """Whether a candidate in scope ``b`` may be shown to the agent as a possible predecessor of a
    note in scope ``a``: compatible scopes, or a difference that rests on a scope inferred from
    either text. ``infer_scope`` is a fixed list of place phrases, and a passing mention trips it
    ("runs only in CI", "on the test block", a long document's "in the web app"), so an inferred
    scope is a guess: it may keep the server from linking the pair (``compatible`` decides that),
    never from offering it. Two scopes that callers gave never meet."""
    return compatible(a, b) or a_inferred or b_inferred
