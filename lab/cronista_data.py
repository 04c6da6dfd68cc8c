"""Labelled notes for the cronista model: the hand-written corpus, gold fields, and generated notes.

A labelled note (the format of ``lab/cronista/*.jsonl``)::

    {"id", "style", "text", "clauses": [{"text", "role"}],
     "spans": {"subject", "option_chosen", "option_left", "scope"}}

Every clause text and span is a substring of ``text``; roles are trigger, change, alternatives,
consequences, other. ``lab/cronista/train_notes.jsonl`` may be trained on;
``lab/cronista/eval_notes.jsonl`` is held out (scored by ``lab.cronista_eval`` only).

``generated(seed, n)`` builds more labelled notes from the project's generators
(``bench.scenarios`` and ``bench.paraphrase``): their decision notes carry gold metadata
(component, option, the option replaced, the reason), from which the clause roles and spans
follow by construction; context and noise notes decide nothing (role other). Some notes get an
alternative tried, a consequence or an unrelated remark added from the small template lists
below, so every role occurs. The lite cronista's output is never a label.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evomem.domain.cronista import join_clauses

ROLES = ("trigger", "change", "alternatives", "consequences", "other")
SPAN_KINDS = ("subject", "option_chosen", "option_left", "scope")
FIELD_OF_ROLE = {
    "trigger": "trigger",
    "change": "change",
    "alternatives": "alternatives_tried",
    "consequences": "consequences",
}
HERE = Path(__file__).parent / "cronista"
TRAIN = HERE / "train_notes.jsonl"
EVAL = HERE / "eval_notes.jsonl"


def load_notes(path: str | Path) -> list[dict[str, Any]]:
    """The labelled notes of a JSONL file (a truncated last line, from a file still being written, is skipped)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def clause_spans(note: dict[str, Any]) -> list[tuple[int, int, str]]:
    """(start, end, role) of each labelled clause, found in order in the note's text."""
    text = note["text"]
    out: list[tuple[int, int, str]] = []
    pos = 0
    for c in note["clauses"]:
        i = text.find(c["text"], pos)
        if i < 0:
            i = text.find(c["text"])
        if i < 0 or not c["text"]:
            continue
        out.append((i, i + len(c["text"]), c["role"]))
        pos = i + len(c["text"])
    return sorted(out)


def span_positions(note: dict[str, Any]) -> dict[str, tuple[int, int] | None]:
    """Where each labelled span is: its first occurrence (exact case first, then any case)."""
    text = note["text"]
    out: dict[str, tuple[int, int] | None] = {}
    for kind in SPAN_KINDS:
        value = (note.get("spans") or {}).get(kind)
        if not value:
            out[kind] = None
            continue
        i = text.find(value)
        if i < 0:
            i = text.lower().find(value.lower())
        out[kind] = (i, i + len(value)) if i >= 0 else None
    return out


def gold_fields(note: dict[str, Any]) -> dict[str, str]:
    """The four fields as a perfect cronista would file them: the clauses of each role, in source
    order, joined the way the lite cronista joins clauses."""
    found: dict[str, list[str]] = {f: [] for f in FIELD_OF_ROLE.values()}
    text = note["text"]
    for a, b, role in clause_spans(note):
        name = FIELD_OF_ROLE.get(role)
        if name and text[a:b] not in found[name]:
            found[name].append(text[a:b])
    return {k: join_clauses(v) for k, v in found.items()}


# ---------------------------------------------------------------------------- generated notes

ALTERNATIVES = [
    "We also tried {alt}, but it {complaint}.",
    "{Alt} was considered too, but it {complaint}.",
    "We looked at {alt} first.",
    "Evaluated {alt} as well; it {complaint}.",
    "{Alt} was ruled out early.",
    "A spike with {alt} did not go well: it {complaint}.",
    "We benchmarked {alt} against it.",
]
CONSEQUENCES = [
    "As a result, the {comp} runbook needs an update.",
    "This means the {comp} deploy takes {n} minutes longer.",
    "Downside: we have to migrate the existing data by Friday.",
    "The old {prev} setup will be shut down next month.",
    "Every client of the {comp} has to update its library.",
    "So on-call has one system less to watch.",
    "The monthly bill should drop by about {n} percent.",
    "Follow-up: update the dashboards and alerts.",
    "Expect a short read-only window during the cut-over.",
]
LEADS_OTHER = [
    "Quick update from the {comp} team.",
    "Context: this came up in the weekly sync.",
    "FYI for everyone on the {comp} rotation.",
    "Thanks to everyone who reviewed the proposal.",
]


def _find_ci(text: str, value: str | None, start: int = 0) -> tuple[int, int] | None:
    if not value:
        return None
    i = text.lower().find(value.lower(), start)
    return (i, i + len(value)) if i >= 0 else None


def _label_generated(row: dict[str, Any], prev: str | None, names: tuple[str, ...]) -> dict[str, Any] | None:
    """Clause roles and spans of one generator note, from its metadata."""
    from bench.scenarios import COMPLAINTS, SCOPES

    text = row["text"]
    kind = row["kind"]
    spans: dict[str, str | None] = dict.fromkeys(SPAN_KINDS)
    if kind not in ("decision", "distractor", "scope_decision"):
        return {"text": text, "clauses": [{"text": text, "role": "other"}], "spans": spans}
    cut = len(text)
    trigger: tuple[int, int] | None = None
    m = re.search(r" (because|since) ", text)
    if m:
        trigger, cut = (m.start() + 1, len(text)), m.start()
    else:
        for complaint in COMPLAINTS:
            i = text.find(complaint)
            if i < 0 or not prev:
                continue
            j = text.lower().rfind(prev.lower(), 0, i)
            if j < 0:
                continue
            if text[max(0, j - 6) : j] == "after ":
                j -= 6
            trigger = (j, len(text))
            cut = j
            break
    change_end = cut
    while change_end > 0 and text[change_end - 1] in " ;:,.":
        change_end -= 1
    if change_end > 0 and text[change_end - 1].isalnum() and trigger is None:
        pass
    change_text = text[:change_end]
    if trigger is None and text.endswith("."):
        change_text = text  # the whole sentence, with its full stop
    clauses = [{"text": change_text, "role": "change"}]
    if trigger:
        clauses.append({"text": text[trigger[0] : trigger[1]], "role": "trigger"})
    comp = next((n for n in names if _find_ci(change_text, n)), None)
    if comp:
        a, b = _find_ci(text, comp)  # type: ignore[misc]
        spans["subject"] = text[a:b]
    opt = _find_ci(change_text, row.get("option"))
    if opt:
        spans["option_chosen"] = text[opt[0] : opt[1]]
    left = _find_ci(text, prev)
    if left and prev and prev.lower() != (row.get("option") or "").lower():
        spans["option_left"] = text[left[0] : left[1]]
    if row.get("scope"):
        for s in SCOPES:
            if s["label"] == row["scope"] and _find_ci(text, s["lead"]):
                a, b = _find_ci(text, s["lead"])  # type: ignore[misc]
                spans["scope"] = text[a:b]
    return {"text": text, "clauses": clauses, "spans": spans}


def _scenario_rows(seed: int, n: int) -> Iterator[tuple[dict[str, Any], str | None, tuple[str, ...], str]]:
    from bench import paraphrase, scenarios

    sets = [
        scenarios.generate(n, seed),
        scenarios.generate(max(1, n // 2), seed + 1, vdr=True),
        paraphrase.generate(max(1, n // 2), seed + 2),
    ]
    for scens in sets:
        for sc in scens:
            notes = sc["notes"]
            for row in notes:
                prev = notes[row["supersedes"]]["option"] if row.get("supersedes") is not None else None
                comp = row.get("component")
                names: tuple[str, ...] = ()
                if comp:
                    names = (*paraphrase.COMPONENT_NAMES.get(comp, ()), comp)
                yield row, prev, names, row.get("aspect") or ""


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def generated(seed: int = 2026, n: int = 40) -> list[dict[str, Any]]:
    """Labelled notes from the project's generators (deterministic for a seed)."""
    from bench.scenarios import ASPECTS, COMPLAINTS

    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for k, (row, prev, names, aspect) in enumerate(_scenario_rows(seed, n)):
        if row["text"] in seen:
            continue
        seen.add(row["text"])
        base = _label_generated(row, prev, names)
        if base is None:
            continue
        parts: list[tuple[str, str]] = [(c["text"], c["role"]) for c in base["clauses"]]
        text = base["text"]
        if base["clauses"][0]["role"] != "change" or rng.random() < 0.35:
            out.append({"id": f"gen-{seed}-{k}", "style": "generated", **base})
            continue
        # A decision note grows into a short story: maybe a lead, maybe an alternative, maybe a consequence.
        comp = names[-1] if names else "service"
        opts = [o for o in ASPECTS.get(aspect, {}).get("options", []) if o not in (row.get("option"), prev)]
        values = {
            "comp": comp,
            "prev": prev or "old",
            "complaint": rng.choice(COMPLAINTS),
            "n": rng.randint(2, 40),
            "alt": rng.choice(opts) if opts else "the managed offering",
        }
        values["Alt"] = _cap(values["alt"])
        story: list[tuple[str, str]] = []
        if rng.random() < 0.2:
            story.append((rng.choice(LEADS_OTHER).format(**values), "other"))
        story.append((text, "note"))
        if rng.random() < 0.55:
            story.insert(len(story) - (rng.random() < 0.3), (rng.choice(ALTERNATIVES).format(**values), "alternatives"))
        if rng.random() < 0.6 or len(story) == 1:
            story.append((rng.choice(CONSEQUENCES).format(**values), "consequences"))
        sep = rng.choice([" ", " ", "\n", "\n- "])
        pieces, clauses = [], []
        for s, role in story:
            pieces.append(s)
            if role == "note":
                clauses.extend({"text": t, "role": r} for t, r in parts)
            else:
                clauses.append({"text": s, "role": role})
        full = ("- " if sep == "\n- " else "") + sep.join(pieces)
        out.append(
            {"id": f"gen-{seed}-{k}", "style": "generated", "text": full, "clauses": clauses, "spans": base["spans"]}
        )
    return out


if __name__ == "__main__":  # a look at what the generator makes
    notes = generated()
    print(len(notes))
    for note in random.Random(0).sample(notes, 8):
        print(json.dumps(note, ensure_ascii=False))
