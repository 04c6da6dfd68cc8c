"""The LLM linker: asks an OpenAI-compatible chat endpoint whether a note replaces a candidate.

    linker = LLMLinker(model="qwen2.5-3b-instruct", base_url="http://127.0.0.1:8080/v1")
    decision = linker.decide(text, scope, candidates)   # LinkDecision: link | abstain | none
    proposal = linker.propose(text, scope, candidates)  # the Linker port: LinkProposal or None

What it sends: one ``/chat/completions`` request with ``temperature: 0`` and a compact prompt
that lists only the eligible candidates (active, scope-compatible; ids, scopes and texts) and
the note. The answer is constrained to ``{"decision", "target_id", "confidence", "evidence"}``:

* ``structured="grammar"`` (default): a GBNF grammar in the request's ``grammar`` field, which
  llama.cpp servers (``llama-server`` and ``llama-cpp-python``) enforce while sampling. The
  grammar allows only the offered ids as ``target_id``, a number in [0, 1], at most three
  bounded evidence strings without control characters, so even a bad model answers in shape.
* ``structured="json_schema"``: OpenAI's ``response_format: {"type": "json_schema"}`` for
  servers that support it (llama-cpp-python answers it with HTTP 500: abstain).
* ``structured="none"``: no constraint; for servers that reject both.

What it trusts: nothing. The reply is parsed strictly (``json.loads`` on the stripped content,
one optional Markdown fence) and validated: a known decision, a ``target_id`` that is one of
the offered candidates (never an unknown id, never one in an incompatible scope), a numeric
confidence in [0, 1], evidence that is a list of strings. Evidence spans that are not
substrings of the note or a candidate are dropped. A timeout, a refused connection, an HTTP
error, garbage, an unknown id or a low confidence make it *abstain*: it never guesses. An
abstention carries the candidate ids, so the caller can mark the note ``possible_supersedes``.

This module is the adapter only: the prompt, the HTTP call and the validation of the answer.
When to ask the LLM is policy: ``evomem.domain.linkers.cascade.CascadeLinker`` puts the pair
linker in front and asks the LLM only when it is unsure (``pair_unsure``), which is what
``--auto-supersede llm`` wires (``evomem.bootstrap.linkers.linker_for``).

Only the standard library is used (``http.client``); the API key comes from
``EVOMEM_LINKER_API_KEY`` and is sent as ``Authorization: Bearer``.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from evomem.domain.linkers.cascade import MAX_OFFERED, eligible_candidates
from evomem.domain.model import LinkDecision, LinkKind, LinkProposal, MemoryNode
from evomem.domain.scope import compatible as scopes_compatible

log = logging.getLogger(__name__)

METHOD = "llm"
API_KEY_ENV = "EVOMEM_LINKER_API_KEY"
STRUCTURED_MODES = ("grammar", "json_schema", "none")
DECISIONS = ("supersedes", "none", "unsure")

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_CANDIDATES = MAX_OFFERED
DEFAULT_MAX_TOKENS = 512
DEFAULT_MIN_CONFIDENCE = 0.5
MAX_NOTE_CHARS = 2000
MAX_CANDIDATE_CHARS = 800
MAX_EVIDENCE = 3
MAX_EVIDENCE_CHARS = 200
GRAMMAR_EVIDENCE_CHARS = 80  # the grammar's bound on one evidence string
MAX_RESPONSE_BYTES = 1 << 20
RAW_KEEP_CHARS = 500  # how much of a bad reply a decision keeps, for logs and tests

SYSTEM_PROMPT = (
    "You maintain a memory of engineering decisions. Decide whether the NEW NOTE replaces "
    "(supersedes) one of the CANDIDATE decisions: it does only if it says that this same "
    "decision changed (moved, switched, replaced, reverted, dropped ...). Sharing a topic is "
    "not enough. Use only a candidate id listed below.\n"
    "Answer with one JSON object and nothing else:\n"
    '{"decision": "supersedes" | "none" | "unsure", "target_id": "<candidate id>" or null, '
    '"confidence": <number from 0 to 1>, "evidence": [<up to 3 short exact quotes from the note '
    "or the candidate>]}"
)


@dataclass(frozen=True, slots=True)
class LLMLinkDecision(LinkDecision):
    """``evomem.domain.model.LinkDecision`` plus what the LLM linker knows about the call.

    ``kind``: ``"link"`` (``proposal`` says which node it supersedes, how sure, why),
    ``"abstain"`` (it could not decide safely: ``candidates`` are the ``(id, score)`` pairs it
    would have to choose between, for ``possible_supersedes``; the score is the model's
    confidence where the model named that id, else 0.0), or ``"none"`` (replaces nothing).
    ``answer`` is the model's validated ``decision`` word, or ``None`` when no valid answer
    came back (transport error, garbage) or no model was asked; ``raw`` the start of the reply.
    """

    answer: str | None = None
    latency_ms: float = 0.0
    raw: str | None = field(default=None, repr=False)

    @property
    def candidate_ids(self) -> tuple[str, ...]:
        return tuple(cid for cid, _ in self.candidates)


class LinkerTransportError(Exception):
    """The endpoint could not be reached, timed out, or answered with an HTTP error."""


class LinkerAnswerError(Exception):
    """The endpoint answered, but not with a valid decision."""


# ----------------------------------------------------------------------------- helpers


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def build_messages(text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> list[dict[str, str]]:
    """The chat messages: instructions, then the note and the offered candidates only."""
    lines = [f"NEW NOTE (scope: {scope or '-'}):", _clip(text, MAX_NOTE_CHARS), "", "CANDIDATES:"]
    for cand in candidates:
        lines.append(f"- id={cand.id} scope={cand.scope or '-'}: {_clip(cand.raw_text, MAX_CANDIDATE_CHARS)}")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


def _gbnf_literal(value: str) -> str:
    """A GBNF string literal matching ``value`` exactly."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def build_grammar(candidate_ids: Sequence[str]) -> str:
    """GBNF for the answer object; ``target_id`` may only be null or one of ``candidate_ids``."""
    ids = [_gbnf_literal(json.dumps(cid, ensure_ascii=True)) for cid in candidate_ids]
    target = " | ".join(['"null"', *ids])
    n = GRAMMAR_EVIDENCE_CHARS
    return "\n".join(
        [
            'root ::= "{" ws "\\"decision\\":" ws decision "," ws "\\"target_id\\":" ws target "," ws '
            '"\\"confidence\\":" ws confidence "," ws "\\"evidence\\":" ws evidence ws "}"',
            'decision ::= "\\"supersedes\\"" | "\\"none\\"" | "\\"unsure\\""',
            f"target ::= {target}",
            'confidence ::= "0" ("." [0-9] [0-9]? [0-9]?)? | "1" (".0")?',
            f'evidence ::= "[" ws "]" | "[" ws span (ws "," ws span){{0,{MAX_EVIDENCE - 1}}} ws "]"',
            f'span ::= "\\"" spanchar{{1,{n}}} "\\""',
            'spanchar ::= [^"\\\\\\x00-\\x1F\\x7F]',
            'ws ::= " "?',
        ]
    )


def build_json_schema(candidate_ids: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": list(DECISIONS)},
            "target_id": {"anyOf": [{"type": "string", "enum": list(candidate_ids)}, {"type": "null"}]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "evidence": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_EVIDENCE},
        },
        "required": ["decision", "target_id", "confidence", "evidence"],
        "additionalProperties": False,
    }


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S | re.I)


def parse_answer(content: object) -> dict[str, Any]:
    """Strict JSON object out of the model's message content, or ``LinkerAnswerError``."""
    if not isinstance(content, str) or not content.strip():
        raise LinkerAnswerError("empty answer")
    body = content.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body)  # strict: raw control characters inside strings are an error
    except (ValueError, RecursionError) as exc:
        raise LinkerAnswerError(f"answer is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise LinkerAnswerError(f"answer is a JSON {type(value).__name__}, not an object")
    return value


def validate_confidence(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LinkerAnswerError(f"confidence is not a number: {value!r}")
    conf = float(value)
    if math.isnan(conf) or not 0.0 <= conf <= 1.0:
        raise LinkerAnswerError(f"confidence out of range [0, 1]: {value!r}")
    return conf


def validate_evidence(value: object, sources: Sequence[str]) -> tuple[str, ...]:
    """Keep the spans that really occur in the note or a candidate (whitespace-normalised)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LinkerAnswerError("evidence is not a list of strings")
    haystacks = [" ".join(s.split()) for s in sources]
    kept: list[str] = []
    for span in value:
        norm = " ".join(span.split())
        if len(norm) < 2 or len(norm) > MAX_EVIDENCE_CHARS or norm in kept:
            continue
        if any(norm in h for h in haystacks):
            kept.append(norm)
        if len(kept) >= MAX_EVIDENCE:
            break
    return tuple(kept)


# ----------------------------------------------------------------------------- the linker


class LLMLinker:
    """Asks an OpenAI-compatible chat endpoint; validates; abstains on anything doubtful."""

    abstains = True

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        structured: str = "grammar",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        connect_timeout_s: float | None = None,
        read_timeout_s: float | None = None,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("linker model must be a non-empty string")
        if structured not in STRUCTURED_MODES:
            raise ValueError(f"structured must be one of {', '.join(STRUCTURED_MODES)}, got {structured!r}")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"linker base URL must be http(s)://host[:port][/path], got {base_url!r}")
        if not 0.0 <= min_confidence <= 1.0:
            raise ValueError("min_confidence must be in [0, 1]")
        self.model = model.strip()
        self.name = f"{METHOD}/{self.model}"
        self.structured = structured
        self.base_url = base_url
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        path = parts.path.rstrip("/")
        self._path = path if path.endswith("/chat/completions") else f"{path}/chat/completions"
        self.connect_timeout_s = float(connect_timeout_s if connect_timeout_s is not None else timeout_s)
        self.read_timeout_s = float(read_timeout_s if read_timeout_s is not None else timeout_s)
        if self.connect_timeout_s <= 0 or self.read_timeout_s <= 0:
            raise ValueError("linker timeouts must be positive")
        self.max_candidates = max(1, int(max_candidates))
        self.max_tokens = max(16, int(max_tokens))
        self.min_confidence = float(min_confidence)
        self._api_key = api_key or None  # from the settings (EVOMEM_LINKER_API_KEY), never read here
        self._extra_headers = dict(extra_headers or {})

    def __repr__(self) -> str:  # never shows the key
        return f"LLMLinker(model={self.model!r}, base_url={self.base_url!r}, structured={self.structured!r})"

    # -- the Linker port

    def prepare(self, text: str) -> None:
        """Nothing to do on the note alone: the whole question is one request in ``decide``."""

    def wants_candidates(self, text: str) -> bool:
        """Always: the model judges every note against its candidates."""
        return True

    def propose(self, text: str, scope: str | None, candidates: Sequence[MemoryNode]) -> LinkProposal | None:
        """The ``Linker`` protocol: a proposal only for a validated link; abstain and none are ``None``."""
        return self.decide(text, scope, candidates).proposal

    # -- the full answer

    def build_request(self, text: str, scope: str | None, offered: Sequence[MemoryNode]) -> dict[str, Any]:
        ids = [c.id for c in offered]
        body: dict[str, Any] = {
            "model": self.model,
            "messages": build_messages(text, scope, offered),
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        if self.structured == "grammar":
            body["grammar"] = build_grammar(ids)
        elif self.structured == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "link_decision", "strict": True, "schema": build_json_schema(ids)},
            }
        return body

    def decide(
        self,
        text: str,
        scope: str | None,
        candidates: Sequence[MemoryNode],
        similarities: Mapping[str, float] | None = None,
        scope_inferred: bool = False,
        earlier: Mapping[str, MemoryNode] | None = None,
    ) -> LLMLinkDecision:
        """The model's answer, validated. The model reads the note and the eligible candidates
        only: ``similarities``, ``scope_inferred`` and ``earlier`` are not read."""
        started = time.perf_counter()
        offered = eligible_candidates(scope, candidates, self.max_candidates)
        offered_ids = tuple(c.id for c in offered)
        if not offered:
            return LLMLinkDecision(kind=LinkKind.NONE, reason="no eligible candidates")
        everyone = tuple((cid, 0.0) for cid in offered_ids)  # no score: the model named none of them

        def finish(kind: LinkKind, reason: str, **kw: Any) -> LLMLinkDecision:
            ms = round((time.perf_counter() - started) * 1000, 3)
            if kind is LinkKind.ABSTAIN:
                log.info("llm linker abstains (%s) after %.1f ms", reason, ms)
            return LLMLinkDecision(kind=kind, reason=reason, latency_ms=ms, **kw)

        try:
            content = self._complete(self.build_request(text, scope, offered))
        except LinkerTransportError as exc:
            return finish(LinkKind.ABSTAIN, f"transport: {exc}", candidates=everyone)
        raw = content[:RAW_KEEP_CHARS] if isinstance(content, str) else None
        try:
            answer = parse_answer(content)
            decision = answer.get("decision")
            if decision not in DECISIONS:
                raise LinkerAnswerError(f"unknown decision {decision!r}")
            confidence = validate_confidence(answer.get("confidence"))
            target = answer.get("target_id")
            if target is not None and not isinstance(target, str):
                raise LinkerAnswerError(f"target_id is not a string: {target!r}")
            if target == "":
                target = None
            if target is not None and target not in offered_ids:
                known = {c.id: c for c in candidates}
                if target in known:
                    compatible = scopes_compatible(scope, known[target].scope)
                    why = "not offered" if compatible else "in an incompatible scope"
                    raise LinkerAnswerError(f"target_id {target!r} is a candidate {why}")
                raise LinkerAnswerError(f"unknown target_id {target!r}")
            sources = [text, *(c.raw_text for c in offered)]
            evidence = validate_evidence(answer.get("evidence"), sources)
        except LinkerAnswerError as exc:
            return finish(LinkKind.ABSTAIN, f"invalid answer: {exc}", candidates=everyone, raw=raw)

        said = {"answer": decision, "raw": raw}
        named = ((target, round(confidence, 3)),) if target else everyone
        if decision == "none":
            return finish(LinkKind.NONE, f"model: none (confidence {confidence:g})", **said)
        if decision == "unsure":
            return finish(LinkKind.ABSTAIN, f"model: unsure (confidence {confidence:g})", candidates=named, **said)
        if target is None:
            return finish(LinkKind.ABSTAIN, "model: supersedes without a target_id", candidates=everyone, **said)
        if confidence < self.min_confidence:
            why = f"model: supersedes with confidence {confidence:g} < {self.min_confidence:g}"
            return finish(LinkKind.ABSTAIN, why, candidates=named, **said)
        proposal = LinkProposal(
            target_id=target,
            confidence=round(confidence, 3),
            method=METHOD,
            evidence=evidence,
            by=self.name,
        )
        return finish(LinkKind.LINK, f"model: supersedes (confidence {confidence:g})", proposal=proposal, **said)

    # -- HTTP

    def _headers(self, body: bytes) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Content-Length": str(len(body)),
            "User-Agent": "evomem-llm-linker",
            **self._extra_headers,
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _complete(self, request: dict[str, Any]) -> object:
        """POST the request; the first choice's message content. Transport problems raise
        ``LinkerTransportError``; a 2xx reply of the wrong shape raises it too (nothing to parse)."""
        body = json.dumps(request, ensure_ascii=False).encode("utf-8")
        conn_cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(self._host, self._port, timeout=self.connect_timeout_s)
        deadline = time.monotonic() + self.connect_timeout_s + self.read_timeout_s
        try:
            try:
                conn.connect()
                conn.sock.settimeout(self.read_timeout_s)
                conn.request("POST", self._path, body=body, headers=self._headers(body))
                resp = conn.getresponse()
                payload = self._read_body(conn, resp, deadline)
            except TimeoutError:
                raise LinkerTransportError("timed out") from None
            except (OSError, http.client.HTTPException) as exc:  # ssl.SSLError is an OSError
                raise LinkerTransportError(f"{type(exc).__name__}: {exc}") from None
        finally:
            conn.close()
        if not 200 <= resp.status < 300:
            snippet = payload[:200].decode("utf-8", "replace").replace("\n", " ")
            raise LinkerTransportError(f"HTTP {resp.status}: {snippet}")
        try:
            data = json.loads(payload)
            return data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LinkerTransportError(f"not a chat completion response: {type(exc).__name__}") from None

    def _read_body(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, deadline: float) -> bytes:
        """Read the whole body, bounded in size and by one overall deadline (a trickling
        server cannot hold the caller longer than connect + read timeout, plus one read)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if conn.sock is not None:
                conn.sock.settimeout(min(self.read_timeout_s, left))
            chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise LinkerTransportError(f"response larger than {MAX_RESPONSE_BYTES} bytes")
            chunks.append(chunk)
