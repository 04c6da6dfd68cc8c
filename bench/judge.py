"""Judges: read what a memory returned and name the option an agent would act on.

A memory answers a question with a list of :class:`Item` (the note text, and when the
memory has them, a status and a date). A judge turns that list into a :class:`Verdict`:

- ``correct``: the option in force for the asked topic and scope;
- ``obsolete``: an option that was replaced before the question (the ODR event);
- ``wrong_scope``: the option of the same component in another scope (VDR);
- ``miss``: nothing of the asked topic was returned, so the agent has nothing to act on;
- ``other``: any other answer (only the LLM judge can give one).

The deterministic judge (default) maps each returned text back to the scenario's note (exact
text) to learn its topic, scope and option, and then does what a careful agent does:

1. it keeps the notes of the asked topic *and scope* that decide an option, and drops every
   item marked ``superseded`` or ``forgotten``;
2. if the kept items carry dates, it acts on the newest one (ties: the better ranked);
   otherwise on the first one, in the memory's order.

So a flat memory without dates acts on its best-ranked note of the topic, and flat-with-dates
acts on the newest note it returned: the fair baseline. It is perfectly scope-aware, so scope
confusion (acting on staging's decision when asked about production) only shows with the LLM
judge.

The LLM judge sends the question, the returned items (with status and date when present)
and the options of the topic to any OpenAI-compatible ``/chat/completions`` endpoint at
temperature 0, and reads back the option it names.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

OUTCOMES = ("correct", "obsolete", "wrong_scope", "miss", "other")
HIDDEN_STATUSES = frozenset({"superseded", "forgotten"})
API_KEY_ENV = "EVOMEM_JUDGE_API_KEY"


@dataclass(frozen=True, slots=True)
class Item:
    """One thing a memory returned: the text, and its status and date when the memory has them."""

    text: str
    status: str | None = None
    date: str | None = None
    # the scenario note's own text, when the memory knows which note this is (by its id): what the
    # deterministic judge maps by. A memory may show a long note cut (EvoMem's answers cut at
    # ``note_chars``, 2,000 characters); the note is the same one.
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: str
    option: str | None
    note: int | None = None  # index of the note acted on (deterministic judge), when known
    rank: int | None = None  # 0-based position of that item in the returned list
    raw: str | None = None  # the LLM's reply, verbatim


class Judge(Protocol):
    name: str

    def judge(self, scenario: Mapping[str, Any], question: Mapping[str, Any], items: Sequence[Item]) -> Verdict: ...


def classify(option: str | None, question: Mapping[str, Any]) -> str:
    """The outcome of acting on ``option`` for ``question``."""
    if option is None:
        return "miss"
    if option == question["gold_option"]:
        return "correct"
    if option in question.get("obsolete_options", ()):
        return "obsolete"
    if option in question.get("wrong_scope_options", ()):
        return "wrong_scope"
    return "other"


def note_index(scenario: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Text -> note (texts are unique within a scenario), stripped as the judge strips what it
    reads: a note written with a trailing newline is still that note."""
    return {n["text"].strip(): n for n in scenario["notes"]}


class DeterministicJudge:
    name = "deterministic"

    def judge(self, scenario: Mapping[str, Any], question: Mapping[str, Any], items: Sequence[Item]) -> Verdict:
        by_text = note_index(scenario)
        kept: list[tuple[int, Item, Mapping[str, Any]]] = []
        for rank, item in enumerate(items):
            note = by_text.get((item.source or item.text).strip())
            if note is None or note["option"] is None:
                continue
            if note["topic"] != question["topic"] or note["scope"] != question["scope"]:
                continue
            if item.status in HIDDEN_STATUSES:
                continue
            kept.append((rank, item, note))
        if not kept:
            return Verdict("miss", None)
        dated = [k for k in kept if k[1].date]
        rank, _, note = max(dated, key=lambda k: (k[1].date, -k[0])) if dated else kept[0]
        return Verdict(classify(note["option"], question), note["option"], note=note["i"], rank=rank)


# ----------------------------------------------------------------------------- LLM judge


class JudgeError(RuntimeError):
    """The LLM judge could not get an answer (endpoint down, bad reply, ...)."""


SYSTEM_PROMPT = """\
You are a software engineering assistant about to act on a question from your team. Your only \
knowledge of the project is what the memory returned below. Each memory item may carry a date \
and a status. Decide which option you would act on to answer the question. If none of the items \
tells you, answer NONE. Reply with JSON only: {"option": "<one of the listed options, or NONE>"}."""


def candidate_options(question: Mapping[str, Any]) -> list[str]:
    opts = {question["gold_option"], *question.get("obsolete_options", ()), *question.get("wrong_scope_options", ())}
    return sorted(opts, key=str.lower)


def render_prompt(question: Mapping[str, Any], items: Sequence[Item]) -> str:
    lines = [f"Question: {question['text']}", "", "Memory returned:"]
    if not items:
        lines.append("(nothing)")
    for n, item in enumerate(items, start=1):
        tags = []
        if item.date:
            tags.append(f"date: {item.date}")
        if item.status:
            tags.append(f"status: {item.status}")
        prefix = f"[{n}]" + (f" ({', '.join(tags)})" if tags else "")
        lines.append(f"{prefix} {item.text}")
    lines += ["", "Options: " + ", ".join(candidate_options(question)) + ", NONE"]
    return "\n".join(lines)


def parse_option(reply: str, options: Sequence[str]) -> str | None:
    """The option named in the reply: the JSON ``option`` field, else the longest option mentioned."""
    named: str | None = None
    match = re.search(r"\{.*?\}", reply, re.S)
    if match:
        try:
            value = json.loads(match.group(0)).get("option")
            named = value.strip() if isinstance(value, str) else None
        except (json.JSONDecodeError, AttributeError):
            named = None
    if named is not None:
        if named.upper() == "NONE":
            return None
        for opt in options:
            if opt.lower() == named.lower():
                return opt
    text = reply.lower()
    for opt in sorted(options, key=len, reverse=True):
        if re.search(r"(?<!\w)" + re.escape(opt.lower()) + r"(?!\w)", text):
            return opt
    return None


class LLMJudge:
    """Any OpenAI-compatible chat endpoint (llama.cpp, vLLM, Ollama, OpenAI, ...), temperature 0."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 2,
        max_tokens: int = 256,
    ) -> None:
        if not model:
            raise JudgeError("--judge-model is required with --judge llm")
        if not base_url:
            raise JudgeError("--judge-base-url is required with --judge llm (e.g. http://localhost:8080/v1)")
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self.timeout = timeout
        self.retries = retries
        self.max_tokens = max_tokens
        self.name = f"llm:{model}"
        self._cache: dict[str, str] = {}

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:300]
                if exc.code in (401, 403):
                    raise JudgeError(
                        f"judge endpoint {self.url} refused the request (HTTP {exc.code}); "
                        f"set {API_KEY_ENV}. Reply: {detail}"
                    ) from exc
                if exc.code not in (408, 429) and exc.code < 500:
                    raise JudgeError(f"judge endpoint {self.url} answered HTTP {exc.code}: {detail}") from exc
                last = JudgeError(f"judge endpoint {self.url} answered HTTP {exc.code}: {detail}")
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                reason = getattr(exc, "reason", exc)
                last = JudgeError(f"cannot reach judge endpoint {self.url} within {self.timeout:g} s: {reason}")
            except json.JSONDecodeError as exc:
                raise JudgeError(f"judge endpoint {self.url} did not answer JSON: {exc}") from exc
            if attempt < self.retries:
                time.sleep(2**attempt)
        assert last is not None
        raise last

    def complete(self, prompt: str) -> str:
        if prompt in self._cache:
            return self._cache[prompt]
        data = self._post(
            {
                "model": self.model,
                "temperature": 0,
                "max_tokens": self.max_tokens,
                "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
            }
        )
        try:
            content = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise JudgeError(
                f"judge endpoint {self.url} returned no choices[0].message.content: {data!r:.300}"
            ) from exc
        self._cache[prompt] = content
        return content

    def judge(self, scenario: Mapping[str, Any], question: Mapping[str, Any], items: Sequence[Item]) -> Verdict:
        reply = self.complete(render_prompt(question, items))
        option = parse_option(reply, candidate_options(question))
        return Verdict(classify(option, question), option, raw=reply)
