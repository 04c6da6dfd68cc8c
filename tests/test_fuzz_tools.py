"""A seeded, bounded fuzz of the MCP tools over stdio, streamable HTTP and the team gateway.

7,800 tool calls (2,600 per door, each in one client session: a spawned ``evomem-mcp`` over
stdio, one over HTTP, and the team gateway's app with a writer's bearer token over a storage
gRPC server and Redis), with arguments built from each tool's *published* input schema: valid values
mixed with hostile ones (a string for a boolean, a boolean or a float for an integer, JSON in a
string, nulls, huge numbers, control characters, FTS syntax, 10,000-character strings, unknown
arguments, missing required ones, ids that do not exist or are not ids). Every call is checked
against that schema with ``jsonschema`` and its answer classified:

- crash: the client raised, the call hung, or the answer is the SDK's bare ``Error executing tool
  NAME`` (an unexpected exception in the server);
- unclear error: any other error whose text is not ``Error executing tool NAME: [code] message``
  (before strict arguments, pydantic's multi-line text with a URL was one);
- schema-violating call accepted: the schema refuses the arguments and the call succeeded;
- refused by the schema with another code than ``invalid_argument``;
- a leak: an answer (text or structured content, the call's own arguments taken out) that names
  an IP address, a host and port, a file path under a system folder, or a stack trace.

Then the database, read directly after the server stopped: every acknowledged ``remember`` is
there with its text (cleaned as the service cleans it), purged where a purge was acknowledged,
and ``check_invariants`` finds no broken chain. All of it must be 0.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from test_team_gateway import TeamGateway

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain import text as textrules
from evomem.domain.model import new_id
from tests.test_mcp_transports import EVOMEM_MCP, _wait_for_url, _wait_healthy, stdio_params

pytestmark = pytest.mark.anyio

SEED = 20261202
CALLS_PER_TRANSPORT = 2600
CLEAR_ERROR = re.compile(r"^Error executing tool (\w+): \[([a-z_]+)\] (.{10,})", re.DOTALL)
#: What no answer may name: this test's own pattern, not the server's (``app.incidents``).
LEAK = re.compile(
    r"\b\d{1,3}(?:\.\d{1,3}){3}\b|\blocalhost\b|\[::1\]|\b[a-z][\w.-]*:\d{4,5}\b"
    r"|(?<![\w.])/(?:tmp|home|work|root|run|var|usr|etc|opt|srv|data|proc)/|Traceback|File \"[^\"]+\", line"
)
WEIGHTS = {
    "remember": 30, "recall": 25, "get_node": 15, "forget": 7, "supersede": 8, "unlink": 5, "stats": 5,
    "check": 4, "review": 3,
}  # fmt: skip
WORDS = "ledger postgres sqlite queue cache billing moved because overkill staging production retry".split()
HOSTILE: list[Any] = [
    "true", "false", "yes", "no", "1", "0", 1, 0, -1, 1.5, 2**70, -(2**70), 1e308, None, True, False,
    [], {}, [1, 2], {"a": 1}, "", " ", "\x00", "\x1b[31m", "💥" * 3, "a" * 10_000, '["ledger"]',
    '{"caused_by": []}', "NEAR(ledger", '"unbalanced', "*", "ledger OR 1=1; DROP TABLE nodes", "\u202e",
]  # fmt: skip


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Tally:
    calls: int = 0
    schema_invalid: int = 0
    accepted: int = 0
    refused: int = 0
    service_errors: int = 0
    crashes: list[str] = field(default_factory=list)
    unclear: list[str] = field(default_factory=list)
    invalid_accepted: list[str] = field(default_factory=list)
    wrong_code: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    acked: dict[str, str] = field(default_factory=dict)  # id -> the text as stored
    purged: set[str] = field(default_factory=set)


class Fuzzer:
    def __init__(self, rng: random.Random, schemas: dict[str, dict[str, Any]]) -> None:
        self.rng = rng
        self.schemas = schemas
        self.validators = {name: Draft202012Validator(schema) for name, schema in schemas.items()}
        self.ids: list[str] = []

    def text(self) -> str:
        r = self.rng
        kind = r.random()
        if kind < 0.7:
            return " ".join(r.choice(WORDS) for _ in range(r.randint(1, 14)))
        if kind < 0.9:
            return r.choice(HOSTILE[17:]) if r.random() < 0.5 else "ledger \t\n\x07 " + "é" * r.randint(0, 50)
        return "".join(chr(r.randint(32, 0x2FFF)) for _ in range(r.randint(0, 40)))

    def node_id(self) -> str:
        r = self.rng
        kind = r.random()
        if self.ids and kind < 0.7:
            chosen = r.choice(self.ids)
            return chosen.lower() if r.random() < 0.1 else chosen
        if kind < 0.85:
            return new_id(r.randint(0, 2**40))  # well-formed, never stored
        return r.choice(["nope", "", " ", "0" * 26, "I" * 26, "01J9ZK3V8W5Q6R7S8T9V0W1X2Y!"])

    def valid(self, name: str, schema: dict[str, Any]) -> Any:
        r = self.rng
        if name in ("node_id", "supersedes"):
            return self.node_id() if name == "node_id" or r.random() < 0.7 else None
        if name in ("raw_text", "query", "statement"):
            return self.text()
        if name == "relations":
            return {r.choice(["caused_by", "depends_on"]): [self.node_id()]} if r.random() < 0.5 else None
        if name == "superseded_by":
            return self.node_id()
        if name == "statement":
            return self.text()
        if name == "tags":
            return [r.choice([*WORDS, "Bad Tag!", ""]) for _ in range(r.randint(0, 4))]
        if name in ("scope", "namespace"):
            return r.choice([None, "staging", "production", "team-a", "", "Bad Label!", "eu-west"])
        if name in ("author", "session"):
            return r.choice([None, "ana", "agent-7", "x" * 300, "\x00"])
        if name == "purge":
            return r.random() < 0.3
        if name == "if_head":  # true holds only with a supersedes that is still the head
            return r.random() < 0.1

        types = schema.get("type")
        if "enum" in schema:
            return r.choice(schema["enum"])
        if types == "boolean":
            return r.random() < 0.5
        if types == "integer":
            low, high = schema.get("minimum", 0), schema.get("maximum", 1000)
            return r.choice([low, high, r.randint(low, high)])
        return self.text()

    def arguments(self, tool: str) -> dict[str, Any]:
        r = self.rng
        schema = self.schemas[tool]
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        args: dict[str, Any] = {}
        hostile = r.random() < 0.45
        for name, prop in props.items():
            if name not in required and r.random() < 0.5:
                continue
            if hostile and r.random() < 0.4:
                args[name] = r.choice(HOSTILE)
            else:
                args[name] = self.valid(name, prop)
        if hostile and required and r.random() < 0.15:
            args.pop(r.choice(sorted(required)), None)
        if hostile and r.random() < 0.1:
            args[r.choice(["supersede", "id", "text", "k ", "purged"])] = r.choice(HOSTILE)
        return args

    async def call(self, client: Client, tool: str, args: dict[str, Any], tally: Tally) -> None:
        valid = self.validators[tool].is_valid(args)
        tally.calls += 1
        tally.schema_invalid += not valid
        what = f"{tool}({_short(args)})"
        try:
            with anyio.fail_after(60):
                result = await client.call_tool(tool, args)
        except Exception as exc:  # the transport or the client's output-schema check failed
            tally.crashes.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")
            return
        self.check_leaks(what, args, result, tally)
        if result.is_error:
            text = "".join(getattr(part, "text", "") for part in result.content)
            match = CLEAR_ERROR.match(text)
            if text.strip() == f"Error executing tool {tool}":  # what the SDK says of an unexpected exception
                tally.crashes.append(f"{what}: {text[:200]}")
            elif not match or match.group(1) != tool:
                tally.unclear.append(f"{what}: {text[:200]}")
            elif not valid:
                tally.refused += 1
                if match.group(2) != "invalid_argument":
                    tally.wrong_code.append(f"{what}: {text[:200]}")
            else:
                tally.service_errors += 1
            return
        if not valid:
            tally.invalid_accepted.append(what)
            return
        tally.accepted += 1
        data = result.structured_content or {}
        if tool == "remember":
            stored, _ = textrules.clean_note(args["raw_text"])
            tally.acked[data["id"]] = stored
            self.ids.append(data["id"])
        elif tool == "forget" and data.get("purged"):
            tally.purged.add(data["id"])

    @staticmethod
    def check_leaks(what: str, args: dict[str, Any], result: Any, tally: Tally) -> None:
        answer = "".join(getattr(part, "text", "") for part in result.content)
        answer += json.dumps(result.structured_content or {}, ensure_ascii=False)
        for value in args.values():  # the caller's own words may come back (a query, a note)
            for part in value if isinstance(value, list) else [value]:
                if isinstance(part, str) and part:
                    answer = answer.replace(part, "").replace(json.dumps(part, ensure_ascii=False)[1:-1], "")
        found = LEAK.search(answer)
        if found:
            tally.leaks.append(
                f"{what}: {found.group(0)!r} in {answer[max(0, found.start() - 80) : found.end() + 80]!r}"
            )

    async def run(self, client: Client, n: int, tally: Tally) -> None:
        tools = (await client.list_tools()).tools
        assert set(WEIGHTS) <= {t.name for t in tools}  # the gateway adds the admin's audit
        names, weights = list(WEIGHTS), list(WEIGHTS.values())
        for _ in range(n):
            tool = self.rng.choices(names, weights)[0]
            await self.call(client, tool, self.arguments(tool), tally)


def _short(args: dict[str, Any]) -> str:
    text = repr(args)
    return text if len(text) < 160 else text[:157] + "..."


async def published_schemas(client: Client) -> dict[str, dict[str, Any]]:
    return {t.name: t.input_schema for t in (await client.list_tools()).tools}


def check_database(db: Path, tally: Tally) -> tuple[list[str], list[str]]:
    """(acknowledged notes missing or changed, broken-chain findings), read from the file."""
    store = SQLiteStore(db)
    try:
        found = store.get_many(list(tally.acked))
        missing = []
        for node_id, text in tally.acked.items():
            node = found.get(node_id)
            if node is None:
                missing.append(f"{node_id}: not in the database")
            elif node_id in tally.purged:
                if not node.purged or node.raw_text:
                    missing.append(f"{node_id}: a purge was acknowledged, the text is still there")
            elif node.raw_text != text and not node.purged:
                missing.append(f"{node_id}: text changed")
        return missing, list(store.check_invariants())
    finally:
        store.close()


def report(name: str, tally: Tally, missing: list[str], broken: list[str]) -> None:
    print(
        f"\nfuzz {name}: {tally.calls} calls, {tally.schema_invalid} schema-invalid ({tally.refused} refused), "
        f"{tally.accepted} accepted, {tally.service_errors} service errors; crashes {len(tally.crashes)}, "
        f"unclear {len(tally.unclear)}, schema-violating accepted {len(tally.invalid_accepted)}, "
        f"wrong code {len(tally.wrong_code)}, leaks {len(tally.leaks)}, acknowledged notes {len(tally.acked)} "
        f"({len(tally.purged)} purged), missing {len(missing)}, broken chains {len(broken)}"
    )
    assert tally.calls == CALLS_PER_TRANSPORT
    assert tally.schema_invalid >= CALLS_PER_TRANSPORT // 5, "too few hostile calls to prove anything"
    assert len(tally.acked) >= CALLS_PER_TRANSPORT // 20, "too few notes stored to prove anything"
    assert tally.crashes == [], tally.crashes[:5]
    assert tally.unclear == [], tally.unclear[:5]
    assert tally.invalid_accepted == [], tally.invalid_accepted[:5]
    assert tally.wrong_code == [], tally.wrong_code[:5]
    assert tally.leaks == [], tally.leaks[:5]
    assert missing == [], missing[:5]
    assert broken == [], broken[:5]


async def test_fuzz_over_stdio(tmp_path: Path, server_env: dict[str, str]) -> None:
    db = tmp_path / "fuzz.db"
    tally = Tally()
    env = {**server_env, "EVOMEM_VECTORS": "off", "EVOMEM_LOG_LEVEL": "ERROR"}
    async with Client(stdio_params(db, env), read_timeout_seconds=60) as client:
        fuzzer = Fuzzer(random.Random(SEED), await published_schemas(client))
        await fuzzer.run(client, CALLS_PER_TRANSPORT, tally)
    report("stdio", tally, *check_database(db, tally))


async def test_fuzz_over_http(tmp_path: Path, server_env: dict[str, str]) -> None:
    db = tmp_path / "fuzz.db"
    stderr = tmp_path / "http.log"
    env = {**server_env, "EVOMEM_VECTORS": "off", "EVOMEM_LOG_LEVEL": "ERROR"}
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [EVOMEM_MCP, "--db", str(db), "--transport", "http", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    tally = Tally()
    try:
        url, port = _wait_for_url(proc, stderr)
        _wait_healthy(proc, port, stderr)
        async with Client(url, read_timeout_seconds=60) as client:
            fuzzer = Fuzzer(random.Random(SEED + 1), await published_schemas(client))
            await fuzzer.run(client, CALLS_PER_TRANSPORT, tally)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    report("http", tally, *check_database(db, tally))


async def test_fuzz_through_the_gateway(team_gateway: TeamGateway) -> None:
    """The gateway path: HTTP -> gateway (token, namespaces, its own validation and error mapping)
    -> gRPC -> storage. A writer of team-a and shared: other namespaces are refused (forbidden)."""
    tally = Tally()
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {team_gateway.token('alice')}"}, timeout=60)
    async with Client(streamable_http_client(team_gateway.url, http_client=http), read_timeout_seconds=60) as client:
        fuzzer = Fuzzer(random.Random(SEED + 2), await published_schemas(client))
        await fuzzer.run(client, CALLS_PER_TRANSPORT, tally)
    report("gateway", tally, *check_database(team_gateway.db, tally))
