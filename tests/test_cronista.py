"""The lite cronista: files clauses of a note under trigger / change / alternatives /
consequences by cue words, and assembles a summary from source sentences.

Its contract: every field is made of spans of the source, and the summary is made of whole
source sentences, in source order. It never writes text of its own.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evomem.domain.cronista import SUMMARY_MAX_CHARS, LiteCronista, extract, sentences
from evomem.domain.model import Extraction

FIELDS = ("trigger", "change", "alternatives_tried", "consequences")

LEDGER = (
    "We moved the ledger to SQLite because Postgres was overkill for a single writer. "
    "We tried DuckDB but it lacked concurrent writers. "
    "As a result, backups are now a file copy."
)


def made_of_source_spans(value: str, source: str) -> bool:
    """``value`` is source spans joined by "; " (or by " " after a sentence end), nothing else."""

    @cache
    def ok(i: int) -> bool:
        if i == len(value):
            return True
        for j in range(len(value), i, -1):
            piece = value[i:j]
            if piece not in source:
                continue
            if j == len(value):
                return True
            if value.startswith("; ", j) and ok(j + 2):
                return True
            if piece[-1] in ".!?" and value[j] == " " and ok(j + 1):
                return True
        return False

    return value == "" or ok(0)


def summary_is_source_sentences_in_order(summary: str, source: str) -> bool:
    sents = sentences(source)
    body = summary[:-1] if summary.endswith("…") and len(summary) >= SUMMARY_MAX_CHARS else summary
    truncated = body is not summary

    @cache
    def ok(pos: int, k: int) -> bool:
        if pos >= len(body):
            return True
        for idx in range(k, len(sents)):
            sent = sents[idx]
            if body.startswith(sent, pos) and (pos + len(sent) == len(body) or body[pos + len(sent)] == " "):
                if ok(pos + len(sent) + 1, idx + 1):
                    return True
            elif truncated and sent.startswith(body[pos:]):  # the cut-off last sentence
                return True
        return False

    return summary == "" or ok(0, 0)


def assert_never_invents(text: str, ex: Extraction) -> None:
    for name in FIELDS:
        value = getattr(ex, name)
        assert made_of_source_spans(value, text), f"{name}={value!r} is not made of spans of {text!r}"
    assert summary_is_source_sentences_in_order(ex.summary, text), f"summary {ex.summary!r} of {text!r}"
    assert len(ex.summary) <= SUMMARY_MAX_CHARS
    assert ex.extractor == "lite/1"


# ---------------------------------------------------------------------------- fields


def test_a_reason_clause_is_the_trigger():
    ex = extract(LEDGER)
    assert ex.trigger == "because Postgres was overkill for a single writer."


def test_the_decision_clause_is_the_change():
    ex = extract(LEDGER)
    assert ex.change == "We moved the ledger to SQLite"


def test_what_was_tried_is_an_alternative():
    ex = extract(LEDGER)
    assert ex.alternatives_tried == "We tried DuckDB but it lacked concurrent writers."


def test_a_result_lead_in_files_its_whole_clause_as_a_consequence():
    ex = extract(LEDGER)
    assert ex.consequences == "As a result, backups are now a file copy."
    assert "backups" not in ex.change, "a consequence is not a second decision"


@pytest.mark.parametrize("lead", ["Therefore", "Consequently", "As a result", "Hence", "Thus"])
def test_every_result_connective_keeps_its_clause_together(lead):
    text = f"We switched the HTTP client to httpx. {lead}, retries are now handled by tenacity."
    ex = extract(text)
    assert ex.consequences == f"{lead}, retries are now handled by tenacity."
    assert ex.change == "We switched the HTTP client to httpx."


def test_the_readme_story_files_the_reason_as_the_trigger():
    ex = extract("We moved the ledger from Postgres to SQLite, Postgres was overkill.")
    assert ex.change == "We moved the ledger from Postgres to SQLite"
    assert ex.trigger == "Postgres was overkill."


def test_a_decision_verb_beats_instead_of():
    ex = extract(
        "Decided to use Redis for the job queue instead of RabbitMQ since the team already runs Redis. "
        "This means we need to configure persistence."
    )
    assert ex.change == "Decided to use Redis for the job queue instead of RabbitMQ"
    assert ex.trigger == "since the team already runs Redis."
    assert ex.alternatives_tried == ""
    assert ex.consequences == "This means we need to configure persistence."


def test_semicolons_and_dashes_separate_clauses():
    ex = extract(
        "Switched CI from Jenkins to GitHub Actions due to constant plugin breakage; we considered GitLab CI too. "
        "The downside is vendor lock-in."
    )
    assert ex.change == "Switched CI from Jenkins to GitHub Actions"
    assert ex.trigger == "due to constant plugin breakage"
    assert ex.alternatives_tried == "we considered GitLab CI too."
    assert ex.consequences == "The downside is vendor lock-in."


def test_an_unmarked_clause_follows_the_kind_before_it():
    ex = extract("We rolled back the Kafka upgrade since consumers kept crashing; follow-up: pin the client to 3.6.")
    assert ex.change == "We rolled back the Kafka upgrade"
    assert ex.trigger == "since consumers kept crashing"
    assert ex.consequences == "follow-up: pin the client to 3.6."


def test_several_clauses_of_one_kind_are_joined_without_new_words():
    text = "We tried Memcached. We also evaluated Hazelcast. We picked Redis."
    ex = extract(text)
    assert ex.alternatives_tried == "We tried Memcached. We also evaluated Hazelcast."
    assert ex.change == "We picked Redis."
    assert_never_invents(text, ex)


def test_a_note_without_cues_files_its_first_clause_as_the_change():
    ex = extract("Note: the API base URL is https://api.example.com/v2.")
    assert ex.change == "Note: the API base URL is https://api.example.com/v2."
    assert ex.trigger == ex.alternatives_tried == ex.consequences == ""


# ---------------------------------------------------------------------------- summary


def test_the_summary_is_whole_source_sentences_in_source_order():
    text = "Some background first. " + LEDGER + " Unrelated closing remark about lunch."
    ex = extract(text)
    parts = sentences(ex.summary)
    assert parts, "a decision note has a summary"
    for part in parts:
        assert part in text
    positions = [text.index(p) for p in parts]
    assert positions == sorted(positions)
    assert "lunch" not in ex.summary and "background" not in ex.summary
    assert_never_invents(text, ex)


def test_the_summary_picks_the_sentences_that_carry_the_fields():
    ex = extract(LEDGER)
    assert ex.summary == LEDGER


def test_a_long_summary_is_cut_at_the_limit_with_an_ellipsis():
    pad = " ".join(f"component{i}" for i in range(30))
    text = (
        f"We moved the billing service and {pad} to the new cluster. "
        f"Because the old cluster and {pad} kept failing at night. "
        f"We tried autoscaling the old cluster and {pad} first. "
        f"As a result, the on-call load for {pad} dropped."
    )
    ex = extract(text)
    assert len(ex.summary) <= SUMMARY_MAX_CHARS
    assert ex.summary.endswith("…")
    assert text.startswith(ex.summary[:-1].rstrip()[:200])
    assert_never_invents(text, ex)


# ---------------------------------------------------------------------------- robustness


#: Empty-ish and odd inputs every note-taker must take without crashing or inventing anything.
ODD_TEXTS = [
    "",
    " ",
    "   .  ",
    "\n\n",
    "\t",
    ".",
    "!!!",
    "?",
    "a",
    "ok",
    ";;;",
    ", , ,",
    "- - -",
    "…",
    "💥",
    "因为性能问题，我们改用了 Rust。",
]


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_empty_ish_and_odd_inputs_do_not_crash_and_invent_nothing(text):
    ex = extract(text)
    assert_never_invents(text, ex)
    if not text.strip():
        assert ex == Extraction(extractor="lite/1")


def test_extraction_is_deterministic_and_the_port_matches_the_function():
    assert extract(LEDGER) == extract(LEDGER) == LiteCronista().extract(LEDGER)
    assert LiteCronista.name == "lite/1"


def test_every_field_of_a_remembered_note_comes_from_its_text(service):
    node = service.remember(LEDGER).node
    assert node.extraction_state == "done" and node.extractor == "lite/1"
    assert (node.trigger, node.change, node.alternatives_tried, node.consequences, node.summary) == (
        extract(LEDGER).trigger,
        extract(LEDGER).change,
        extract(LEDGER).alternatives_tried,
        extract(LEDGER).consequences,
        extract(LEDGER).summary,
    )


CLAUSES = [
    "we moved the ledger to SQLite",
    "because Postgres was overkill",
    "we tried DuckDB",
    "as a result backups are simpler",
    "Therefore",
    "we considered Kafka",
    "this means fewer servers",
    "the cache TTL is now 5 minutes",
    "since latency was too high",
    "instead of Redis",
    "which saves money",
    "Mr",
    "v1.2",
    "",
]
SEPARATORS = [". ", ", ", "; ", " - ", " — ", "\n", "! ", "? ", " ", ",", ".\n\n"]


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.tuples(st.sampled_from(CLAUSES), st.sampled_from(SEPARATORS)), max_size=12),
    noise=st.text(max_size=40),
    capitalise=st.booleans(),
)
def test_property_fields_are_source_spans_and_the_summary_is_source_sentences(parts, noise, capitalise):
    text = "".join((c.capitalize() if capitalise else c) + sep for c, sep in parts) + noise
    assert_never_invents(text, extract(text))


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_property_arbitrary_text_never_crashes_nor_invents(text):
    assert_never_invents(text, extract(text))
