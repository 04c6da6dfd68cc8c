"""A seeded, bounded fuzz of the protocol itself: raw stdio lines and raw HTTP bodies (issue 34).

Below the tools, a client writes bytes. Each example is one line (stdio) or one body (HTTP),
drawn by hypothesis from what a broken or hostile client sends: JSON nested thousands of levels
deep, numbers of thousands of digits, invalid UTF-8, ids that are objects, arrays, fractions,
booleans, null or huge integers, batches, truncated JSON, stray bytes, valid requests with
hostile arguments, and a few lines over the message size limit. After each one a ``ping``
probe must be answered. Counted, and each must be 0:

- dead: the process exited (stdio) or the server stopped answering (HTTP);
- unanswered: a line that is a request (it has an ``id``, whatever its value, or it is not a
  notification) got no answer, or an HTTP body that is one got 202 (accepted, never answered);
- server errors: an HTTP status of 500 or more, or a JSON-RPC error -32603 (internal error);
- answers with an id that no request had.

Three doors: ``evomem-mcp`` over stdio, ``evomem-mcp --transport http`` (a session), and the
team gateway's app (stateless, with a bearer token) over storage on gRPC.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from test_team_gateway import TeamGateway

from evomem.domain.text import DEFAULT_MAX_NOTE_BYTES
from evomem.entrypoints.mcp import limits

EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "400"))  # per door
PROTOCOL = "2025-06-18"
ANSWER_S = 60.0
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
OK_CODES = {-32700, -32600, -32601, -32602}  # parse error, invalid request, no such method, invalid params


def request(rid: Any, method: str, params: Any = None, *, with_id: bool = True) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if with_id:
        msg["id"] = rid
    if params is not None:
        msg["params"] = params
    return msg


INIT = request(
    0, "initialize", {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "f", "version": "0"}}
)


# ---------------------------------------------------------------------------- what a client sends


@dataclass
class Sent:
    """One line or body, and what its sender may expect: ``ids``, the ids that must be answered
    (the valid ones); ``answered``: whether anything at all must be answered."""

    data: bytes
    answered: bool
    ids: list[Any] = field(default_factory=list)
    what: str = ""


odd_ids = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    st.just({"a": 1}),
    st.just([1]),
    st.just({}),
)
good_ids = st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=20))
hostile_text = st.one_of(
    st.text(max_size=200),
    st.sampled_from(["", "\x00", "💥" * 50, "NEAR(ledger", '"', "\\", "a" * 20_000, "\u202e", "ledger OR 1=1"]),
)
tool_args = st.fixed_dictionaries(
    {},
    optional={
        "raw_text": hostile_text,
        "query": hostile_text,
        "node_id": st.one_of(hostile_text, st.integers()),
        "k": st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=5)),
        "supersedes": st.one_of(st.none(), hostile_text),
        "tags": st.one_of(st.lists(hostile_text, max_size=5), hostile_text),
    },
)
tools = st.sampled_from(["remember", "recall", "get_node", "forget", "stats", "supersede", "unlink", "nope", ""])


@st.composite
def sent(draw: st.DrawFn) -> Sent:
    kind = draw(
        st.sampled_from(
            ["deep", "huge_number", "bad_utf8", "odd_id", "batch", "truncated", "bytes", "tool_call", "method", "note"]
        )
    )
    rid = draw(good_ids)
    if kind == "deep":  # [[[[...]]]] or {"a":{"a":...}} inside a request, or alone
        depth = draw(st.integers(limits.MAX_DEPTH - 3, 5000))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        inner = opener * depth + "1" + closer * depth
        if draw(st.booleans()):
            return Sent(inner.encode(), True, what=f"deep {depth}")
        body = json.dumps(request(rid, "tools/call", {"name": "recall", "arguments": {"query": "x"}}))
        return Sent(body.replace('"x"', inner).encode(), True, what=f"deep {depth} in a request")
    if kind == "huge_number":
        digits = draw(st.integers(300, 20_000))
        number = draw(st.sampled_from(["1" * digits, "-" + "9" * digits, f"1e{digits}", f"0.{'1' * digits}"]))
        place = draw(st.sampled_from(["id", "k", "raw_text"]))
        msg = request(rid, "tools/call", {"name": "recall", "arguments": {"query": "ledger", "k": 1}})
        text = json.dumps(msg)
        if place == "id":
            text = text.replace(json.dumps(rid), number, 1) if not isinstance(rid, str) else text
            return Sent(text.encode(), True, what=f"huge id ({digits} digits)")
        text = text.replace('"k": 1', f'"k": {number}') if place == "k" else text.replace('"ledger"', number)
        # Answered, though perhaps with id null: a number no JSON reader takes is a parse error.
        return Sent(text.encode(), True, what=f"huge number in {place}")
    if kind == "bad_utf8":
        msg = json.dumps(request(rid, "tools/call", {"name": "remember", "arguments": {"raw_text": "We picked X."}}))
        junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80", b"\xf4\x90\x80\x80"]))
        at = draw(st.integers(0, len(msg)))
        return Sent(msg.encode()[:at] + junk + msg.encode()[at:], True, what="invalid UTF-8")
    if kind == "odd_id":
        oid = draw(odd_ids)
        msg = request(oid, draw(st.sampled_from(["ping", "tools/list", "tools/call"])), None)
        return Sent(json.dumps(msg).encode(), True, what=f"id {json.dumps(oid)}")
    if kind == "batch":
        items = draw(st.lists(st.sampled_from([request(rid, "ping"), request(None, "ping"), 1, "x", []]), max_size=4))
        return Sent(json.dumps(items).encode(), True, what=f"batch of {len(items)}")
    if kind == "truncated":
        msg = json.dumps(request(rid, "tools/call", {"name": "stats", "arguments": {}}))
        cut = draw(st.integers(1, len(msg) - 1))
        return Sent(msg[:cut].encode(), True, what=f"cut at {cut}")
    if kind == "bytes":
        data = draw(st.binary(min_size=1, max_size=300)).replace(b"\n", b" ").replace(b"\r", b" ")
        return Sent(data, True, what="random bytes") if data.strip() else Sent(b"x", True, what="x")
    if kind == "tool_call":
        args = draw(st.one_of(tool_args, st.just([]), st.just("x"), st.none()))
        msg = request(rid, "tools/call", {"name": draw(tools), "arguments": args})
        return Sent(json.dumps(msg).encode(), True, [rid], what="tool call")
    if kind == "method":
        method = draw(
            st.one_of(st.sampled_from(["ping", "tools/list", "initialize", "resources/list"]), st.text(max_size=30))
        )
        params = draw(st.one_of(st.none(), st.just({}), st.just([1, 2]), st.just("p"), st.just({"_meta": {"x": [1]}})))
        msg = request(rid, method, params)
        return Sent(json.dumps(msg).encode(), True, [rid], what=f"method {method!r}")
    # A notification (no id): never answered, whatever it holds.
    msg = request(
        None, draw(st.sampled_from(["notifications/initialized", "notifications/x", "x"])), None, with_id=False
    )
    return Sent(json.dumps(msg).encode(), False, what="notification")


# ---------------------------------------------------------------------------- the tally


@dataclass
class Tally:
    sent: int = 0
    dead: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)

    def check(self, item: Sent, answers: list[dict[str, Any]]) -> None:
        self.sent += 1
        key = item.what.split(" ")[0]
        self.kinds[key] = self.kinds.get(key, 0) + 1
        for answer in answers:
            error = answer.get("error") if isinstance(answer, dict) else None
            if error is not None and error.get("code") not in OK_CODES:
                self.server_errors.append(f"{item.what}: {json.dumps(answer)[:200]}")
            result = answer.get("result") if isinstance(answer, dict) else None
            if isinstance(result, dict) and result.get("isError"):
                text = "".join(c.get("text", "") for c in result.get("content", []))
                if re.fullmatch(r"Error executing tool \S*|.*\[internal\].*", text, re.DOTALL):  # a crash
                    self.server_errors.append(f"{item.what}: {text[:200]}")
        got = {json.dumps(a.get("id")) for a in answers if isinstance(a, dict)}
        missing = [i for i in item.ids if json.dumps(i) not in got]
        if missing or (item.answered and not answers):
            self.unanswered.append(f"{item.what}: {item.data[:120]!r}")
        if not item.answered and answers:
            self.stray.append(f"{item.what}: answered {json.dumps(answers)[:200]}")

    def assert_clean(self, name: str) -> None:
        print(
            f"\nprotocol fuzz {name}: {self.sent} sent {sorted(self.kinds.items())}; dead {len(self.dead)}, "
            f"unanswered {len(self.unanswered)}, server errors {len(self.server_errors)}, stray {len(self.stray)}"
        )
        assert self.dead == [], self.dead[:3]
        assert self.unanswered == [], self.unanswered[:5]
        assert self.server_errors == [], self.server_errors[:5]
        assert self.stray == [], self.stray[:5]
        assert self.sent >= EXAMPLES // 2, "too few examples to prove anything"


def fuzz(door: Any, tally: Tally, seed_value: int) -> None:
    """Send each drawn line through ``door`` (``send(Sent) -> answers``), then a few oversized ones."""

    @seed(seed_value)
    @settings(
        max_examples=EXAMPLES, deadline=None, derandomize=False, suppress_health_check=list(HealthCheck), database=None
    )
    @given(sent())
    def one(item: Sent) -> None:
        if tally.dead:
            return
        tally.check(item, door.send(item))

    one()
    limit = limits.message_limit(DEFAULT_MAX_NOTE_BYTES)  # every door's, with the default note limit
    for size in (limit + 1, limit * 2):
        body = json.dumps(request(7, "tools/call", {"name": "remember", "arguments": {"raw_text": "x"}}))
        big = Sent(body.replace('"x"', json.dumps("y" * size)).encode(), True, what=f"oversized {size:,} bytes")
        tally.check(big, door.send(big))


# ---------------------------------------------------------------------------- stdio


class StdioDoor:
    def __init__(self, db: Path, env: dict[str, str], tally: Tally) -> None:
        self.tally = tally
        self.stderr = db.with_suffix(".log")
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                [EVOMEM_MCP, "--db", str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
            )
        self.buffer = b""
        self.probes = 0
        self.write(json.dumps(INIT).encode())
        assert self.read_until({"0"}), "no answer to initialize"
        self.write(json.dumps(request(None, "notifications/initialized", with_id=False)).encode())

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def read_until(self, ids: set[str] | None) -> list[dict[str, Any]] | None:
        """Answers read until every id in ``ids`` (JSON-encoded) is among them (None: until one
        answer); None if the process died or ``ANSWER_S`` passed first."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        answers: list[dict[str, Any]] = []
        seen: set[str] = set()
        deadline = time.monotonic() + ANSWER_S

        def done() -> bool:
            return bool(answers) if ids is None else ids <= seen

        while not done():
            while b"\n" in self.buffer:
                line, _, self.buffer = self.buffer.partition(b"\n")
                answer = json.loads(line)
                answers.append(answer)
                seen.add(json.dumps(answer.get("id")))
            if done():
                break
            if time.monotonic() > deadline or self.proc.poll() is not None:
                return None
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                self.buffer += chunk
        return answers

    def send(self, item: Sent) -> list[dict[str, Any]]:
        self.probes += 1
        probe = f"probe-{self.probes}"
        try:
            self.write(item.data)
            self.write(json.dumps(request(probe, "ping")).encode())
        except BrokenPipeError:
            self.tally.dead.append(f"{item.what}: stdin closed (exit {self.proc.poll()})")
            return []
        answers = self.read_until({json.dumps(probe)})
        if answers is None:
            self.tally.dead.append(f"{item.what}: no answer to the probe (exit {self.proc.poll()}): {item.data[:80]!r}")
            return []
        # A tool call may be answered after the ping (the SDK serves requests concurrently).
        answers = [a for a in answers if a.get("id") != probe]
        missing = {json.dumps(i) for i in item.ids} - {json.dumps(a.get("id")) for a in answers}
        if missing or (item.answered and not answers):
            answers += self.read_until(missing or None) or []
        return answers

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def test_protocol_fuzz_over_stdio(tmp_path: Path, server_env: dict[str, str]) -> None:
    tally = Tally()
    door = StdioDoor(tmp_path / "stdio.db", {**server_env, "EVOMEM_VECTORS": "off", "EVOMEM_LOG_LEVEL": "ERROR"}, tally)
    try:
        fuzz(door, tally, 20261206)
        alive = door.proc.poll() is None
    finally:
        door.close()
    tally.assert_clean("stdio")
    assert alive, door.stderr.read_text()[-3000:]


# ---------------------------------------------------------------------------- HTTP


def _answers(resp: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an HTTP answer: a JSON body, or an event stream's data lines."""
    text = resp.text
    if not text.strip():
        return []
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in text.split("\n") if line.startswith("data:") and line[5:].strip()]
    try:
        data = json.loads(text)
    except ValueError:
        return []
    return data if isinstance(data, list) else [data]


class HttpDoor:
    """POSTs each body to ``url``; a body that is a request must not get 202, nothing may get 5xx,
    and /healthz must answer after each."""

    def __init__(self, url: str, tally: Tally, headers: dict[str, str], *, session: bool) -> None:
        self.url, self.tally = url, tally
        self.http = httpx2.Client(timeout=ANSWER_S, headers={**HEADERS, **headers})
        self.health = url.rsplit("/mcp", 1)[0] + "/healthz"
        if session:
            init = self.http.post(url, content=json.dumps(INIT))
            assert init.status_code == 200, init.text
            self.http.headers["mcp-session-id"] = init.headers["mcp-session-id"]
            self.http.headers["mcp-protocol-version"] = PROTOCOL
            done = self.http.post(url, content=json.dumps(request(None, "notifications/initialized", with_id=False)))
            assert done.status_code == 202

    def send(self, item: Sent) -> list[dict[str, Any]]:
        try:
            resp = self.http.post(self.url, content=item.data)
        except httpx2.TransportError as exc:
            self.tally.dead.append(f"{item.what}: {type(exc).__name__}: {exc}")
            return []
        if resp.status_code >= 500:
            self.tally.server_errors.append(f"{item.what}: HTTP {resp.status_code} {resp.text[:200]}")
        answers = _answers(resp)
        if resp.status_code == 202 and item.answered:
            answers = []  # accepted, never answered
        elif resp.status_code >= 400 and not answers:
            answers = [{"id": None, "error": {"code": -32600, "message": f"HTTP {resp.status_code}"}}]  # a plain 4xx
        try:
            alive = self.http.get(self.health, timeout=10).status_code == 200
        except httpx2.TransportError:
            alive = False
        if not alive:
            self.tally.dead.append(f"{item.what}: /healthz stopped answering")
        return answers

    def close(self) -> None:
        self.http.close()


def test_protocol_fuzz_over_http(tmp_path: Path, server_env: dict[str, str]) -> None:
    from test_mcp_transports import _wait_for_url, _wait_healthy

    stderr = tmp_path / "http.log"
    env = {**server_env, "EVOMEM_VECTORS": "off", "EVOMEM_LOG_LEVEL": "ERROR"}
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [EVOMEM_MCP, "--db", str(tmp_path / "http.db"), "--transport", "http", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    tally = Tally()
    try:
        url, port = _wait_for_url(proc, stderr)
        _wait_healthy(proc, port, stderr)
        door = HttpDoor(url, tally, {}, session=True)
        try:
            fuzz(door, tally, 20261207)
        finally:
            door.close()
        assert proc.poll() is None, "the server exited"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    tally.assert_clean("http")


def test_protocol_fuzz_through_the_gateway(team_gateway: TeamGateway) -> None:
    tally = Tally()
    door = HttpDoor(team_gateway.url, tally, {"Authorization": f"Bearer {team_gateway.token('alice')}"}, session=False)
    try:
        fuzz(door, tally, 20261208)
    finally:
        door.close()
    tally.assert_clean("gateway")
