"""One named test per bad input, through the official MCP client (in-process server).

Every test checks three things: the call fails (or, for queries, succeeds) with a stable
error code in the text ("Error executing tool NAME: [code] message") and a message that
says what to do; and nothing was lost: the stats are unchanged and the notes stored
before the bad call are still recalled as they were.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.domain import text as textrules
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import InvalidArgument, InvalidText
from evomem.domain.model import new_id
from evomem.entrypoints.mcp.server import build_mcp_server

pytestmark = pytest.mark.anyio

POSTGRES = "We picked Postgres for the ledger"
SQLITE = "We moved the ledger from Postgres to SQLite, Postgres was overkill"
PAYMENTS = "Retry failed payments three times with exponential backoff"
UNKNOWN_ID = new_id(0)  # well-formed (a ULID from 1970), never stored


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ---------------------------------------------------------------------------- helpers


@dataclass
class Seed:
    postgres: str  # v1, superseded
    sqlite: str  # v2, the head in force
    payments: str  # an unrelated decision


@pytest.fixture
def seed(service: MemoryService) -> Seed:
    """Notes stored before every bad call; they must survive it."""
    first = service.remember(POSTGRES, tags=["ledger"]).node.id
    second = service.remember(SQLITE, supersedes=first, tags=["ledger"]).node.id
    payments = service.remember(PAYMENTS, tags=["payments"]).node.id
    return Seed(first, second, payments)


@asynccontextmanager
async def connect(service: MemoryService) -> AsyncIterator[Client]:
    async with Client(build_mcp_server(lambda: service)) as client:
        yield client


DETAILED = {"remember", "recall", "get_node", "supersede", "unlink"}


async def call_ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The structured content, with every field (``detail="full"``) where the tool has it."""
    if tool in DETAILED:
        args = {"detail": "full", **args}
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool} failed: {result.content}"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _text(result: Any) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


async def call_err(client: Client, tool: str, args: dict[str, Any], code: str) -> str:
    """Expect a tool error with a stable ``[code]``; return the message after the code."""
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} should have failed, got {result.structured_content}"
    assert result.structured_content is None
    text = _text(result)
    prefix = f"Error executing tool {tool}: [{code}] "
    assert text.startswith(prefix), f"expected {prefix!r}, got {text!r}"
    message = text[len(prefix) :]
    assert len(message) > 15, f"unhelpful message: {message!r}"
    return message


async def call_invalid_schema(client: Client, tool: str, args: dict[str, Any], field: str, reason: str) -> str:
    """Arguments the input schema rejects: ``[invalid_argument] field: reason``, as every other error."""
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} should have rejected {args}"
    text = _text(result)
    prefix = f"Error executing tool {tool}: [invalid_argument] {field}: "
    assert text.startswith(prefix), f"expected {prefix!r}, got {text!r}"
    assert reason in text, f"{reason!r} not in {text!r}"
    assert "pydantic" not in text and "validation error" not in text, text
    return text


async def snapshot(client: Client) -> dict[str, Any]:
    stats = await call_ok(client, "stats", {})
    return {k: stats[k] for k in ("nodes", "by_status", "purged", "chains", "namespaces")}


async def assert_intact(client: Client, before: dict[str, Any], seed: Seed, *, payments: bool = True) -> None:
    """Nothing was lost: same counts, and the seeded decisions still recall as before."""
    assert await snapshot(client) == before
    ledger = await call_ok(client, "recall", {"query": "ledger database", "include_history": True})
    top = ledger["results"][0]
    assert top["id"] == seed.sqlite
    assert top["raw_text"] == SQLITE
    assert top["status"] == "active"
    assert [step["id"] for step in top["history"]] == [seed.postgres]
    assert top["history"][0]["status"] == "superseded"
    if payments:
        pay = await call_ok(client, "recall", {"query": "payments retry"})
        assert pay["results"][0]["id"] == seed.payments
        assert pay["results"][0]["raw_text"] == PAYMENTS


# ---------------------------------------------------------------------------- notes


async def test_empty_note_is_rejected(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        message = await call_err(c, "remember", {"raw_text": ""}, "empty_note")
        assert "raw_text is empty" in message
        await assert_intact(c, before, seed)


async def test_whitespace_only_note_is_rejected(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        for blank in ("   ", "\n\t \r\n", "\u00a0\u2003"):
            message = await call_err(c, "remember", {"raw_text": blank}, "empty_note")
            assert "needs some text" in message
        # Nothing left once the control characters are removed: empty too.
        await call_err(c, "remember", {"raw_text": "\x00\x07 \x1b"}, "empty_note")
        await assert_intact(c, before, seed)


async def test_note_over_size_limit_is_rejected(store: SQLiteStore, tmp_path: Path) -> None:
    small = MemoryService.local(store, extractor=LiteCronista(), config=ServiceConfig(max_note_bytes=100))
    seed = Seed(
        small.remember(POSTGRES).node.id,
        "",
        small.remember(PAYMENTS).node.id,
    )
    seed.sqlite = small.remember(SQLITE, supersedes=seed.postgres).node.id
    async with connect(small) as c:
        before = await snapshot(c)
        message = await call_err(c, "remember", {"raw_text": "x" * 101}, "note_too_large")
        assert "101 bytes" in message
        assert "limit is 100 bytes" in message
        assert "--max-note-bytes" in message  # says how to raise it
        # The limit is in UTF-8 bytes, not characters: 51 × "é" is 102 bytes.
        message = await call_err(c, "remember", {"raw_text": "é" * 51}, "note_too_large")
        assert "102 bytes" in message
        await assert_intact(c, before, seed)
        # Exactly at the limit is fine (surrounding whitespace does not count).
        ok = await call_ok(c, "remember", {"raw_text": "  " + "y" * 100 + "\n"})
        assert ok["raw_text"] == "y" * 100

    # A 10 MB note against the default 1 MiB limit.
    big_store = SQLiteStore(tmp_path / "default-limit.db")
    try:
        default = MemoryService.local(big_store, extractor=LiteCronista())
        assert default.config.max_note_bytes == textrules.DEFAULT_MAX_NOTE_BYTES == 1_048_576
        seed = Seed(default.remember(POSTGRES).node.id, "", default.remember(PAYMENTS).node.id)
        seed.sqlite = default.remember(SQLITE, supersedes=seed.postgres).node.id
        async with connect(default) as c:
            before = await snapshot(c)
            message = await call_err(c, "remember", {"raw_text": "ledger " * 1_500_000}, "note_too_large")
            assert "10,499,999 bytes" in message
            assert "limit is 1,048,576 bytes" in message
            await assert_intact(c, before, seed)
    finally:
        big_store.close()


# ---------------------------------------------------------------------------- ids


async def test_unknown_id_get_node(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        message = await call_err(c, "get_node", {"node_id": UNKNOWN_ID}, "not_found")
        assert UNKNOWN_ID in message
        await call_err(c, "forget", {"node_id": UNKNOWN_ID}, "not_found")
        await call_err(c, "forget", {"node_id": UNKNOWN_ID, "purge": True}, "not_found")
        await call_err(c, "supersede", {"node_id": UNKNOWN_ID, "supersedes": seed.sqlite}, "not_found")
        await assert_intact(c, before, seed)


@pytest.mark.parametrize(
    "bad",
    [
        "nope",
        "01J9ZK3V8W5Q6R7S8T9V0W1X2",  # 25 characters
        "01J9ZK3V8W5Q6R7S8T9V0W1X2YZ",  # 27 characters
        "01J9ZK3V8W5Q6R7S8T9V0W1X2U",  # U is not Crockford base32
        "' OR 1=1 --",
        "   ",
        "01J9ZK3V8W5Q6R7S8T9V0W1X2Y\n01J9ZK3V8W5Q6R7S8T9V0W1X2Y",
    ],
)
async def test_malformed_id(service: MemoryService, seed: Seed, bad: str) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        message = await call_err(c, "get_node", {"node_id": bad}, "invalid_id")
        assert "node id" in message
        assert "26 characters" in message or "such as" in message
        await call_err(c, "forget", {"node_id": bad}, "invalid_id")
        await call_err(c, "supersede", {"node_id": bad, "supersedes": seed.sqlite}, "invalid_id")
        await call_err(c, "supersede", {"node_id": seed.payments, "supersedes": bad}, "invalid_id")
        message = await call_err(c, "remember", {"raw_text": "Use Redis", "supersedes": bad}, "invalid_id")
        assert message.startswith("supersedes")
        await assert_intact(c, before, seed)


async def test_forgotten_id_get_node_returns_forgotten_status(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        forgot = await call_ok(c, "forget", {"node_id": seed.payments})
        assert forgot["status"] == "forgotten"
        before = await snapshot(c)
        got = await call_ok(c, "get_node", {"node_id": seed.payments})
        assert got["status"] == "forgotten"
        assert got["forgotten_at"]
        assert got["raw_text"] == PAYMENTS  # soft forget keeps the text
        assert got["in_force"] is False
        # Forgetting again is not an error: nothing changes.
        again = await c.call_tool("forget", {"node_id": seed.payments})
        assert again.structured_content["changed"] is False
        assert "already forgotten" in _text(again)
        await assert_intact(c, before, seed, payments=False)
        assert (await call_ok(c, "recall", {"query": "payments retry"}))["count"] == 0


async def test_purged_id_get_node_is_clear_error(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        purged = await call_ok(c, "forget", {"node_id": seed.payments, "purge": True})
        assert purged["purged"] is True
        before = await snapshot(c)
        message = await call_err(c, "get_node", {"node_id": seed.payments}, "purged")
        assert seed.payments in message
        assert "gone for good" in message
        await assert_intact(c, before, seed, payments=False)


async def test_forget_purged_again(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        await call_ok(c, "forget", {"node_id": seed.payments, "purge": True})
        before = await snapshot(c)
        for purge in (True, False):
            message = await call_err(c, "forget", {"node_id": seed.payments, "purge": purge}, "purged")
            assert "already purged" in message
        await assert_intact(c, before, seed, payments=False)


# ---------------------------------------------------------------------------- supersedes


async def test_supersedes_unknown_id(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        message = await call_err(c, "remember", {"raw_text": "Use Redis", "supersedes": UNKNOWN_ID}, "not_found")
        assert message.startswith("supersedes")
        assert UNKNOWN_ID in message
        await call_err(c, "supersede", {"node_id": seed.payments, "supersedes": UNKNOWN_ID}, "not_found")
        await assert_intact(c, before, seed)  # the note was not stored half-linked


async def test_supersedes_forgotten_head(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        await call_ok(c, "forget", {"node_id": seed.payments})
        before = await snapshot(c)
        message = await call_err(
            c, "remember", {"raw_text": "Retry payments five times", "supersedes": seed.payments}, "forgotten"
        )
        assert "was forgotten" in message
        assert "without supersedes" in message  # what to do instead
        fresh = service.remember("Payments are retried by the queue, not the caller").node.id
        await call_err(c, "supersede", {"node_id": fresh, "supersedes": seed.payments}, "forgotten")
        service.forget(fresh, purge=True)  # undo the extra note before comparing
        after = await snapshot(c)
        assert after["nodes"] == before["nodes"] + 1
        assert after["purged"] == before["purged"] + 1
        assert "superseded_by" not in (await call_ok(c, "get_node", {"node_id": seed.payments}))


async def test_supersedes_purged(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        await call_ok(c, "forget", {"node_id": seed.payments, "purge": True})
        before = await snapshot(c)
        message = await call_err(
            c, "remember", {"raw_text": "Retry payments five times", "supersedes": seed.payments}, "purged"
        )
        assert "was purged" in message
        # The purged node cannot be linked either way.
        await call_err(c, "supersede", {"node_id": seed.payments, "supersedes": seed.sqlite}, "purged")
        await call_err(c, "supersede", {"node_id": seed.postgres, "supersedes": seed.payments}, "purged")
        await assert_intact(c, before, seed, payments=False)


async def test_supersedes_purged_old_version(service: MemoryService, seed: Seed) -> None:
    """Purging an old version of a chain: naming it is refused, naming the head still works."""
    async with connect(service) as c:
        await call_ok(c, "forget", {"node_id": seed.postgres, "purge": True})
        message = await call_err(c, "remember", {"raw_text": "Ledger on DuckDB", "supersedes": seed.postgres}, "purged")
        assert "live node of that chain" in message
        ok = await call_ok(c, "remember", {"raw_text": "Ledger on DuckDB", "supersedes": seed.sqlite})
        assert ok["version"] == 3


async def test_supersedes_other_namespace(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        other = await call_ok(c, "remember", {"raw_text": "Team B keeps its ledger in MySQL", "namespace": "team-b"})
        before = await snapshot(c)
        message = await call_err(
            c, "remember", {"raw_text": "Ledger moves to MySQL", "supersedes": other["id"]}, "namespace_mismatch"
        )
        assert "'team-b'" in message
        assert "own namespace" in message
        await call_err(c, "supersede", {"node_id": other["id"], "supersedes": seed.sqlite}, "namespace_mismatch")
        await call_err(c, "supersede", {"node_id": seed.payments, "supersedes": other["id"]}, "namespace_mismatch")
        await call_err(
            c,
            "remember",
            {"raw_text": "Ledger moves to MySQL", "relations": {"caused_by": [other["id"]]}},
            "namespace_mismatch",
        )
        await assert_intact(c, before, seed)
        team_b = await call_ok(c, "recall", {"query": "ledger", "namespace": "team-b"})
        assert [hit["id"] for hit in team_b["results"]] == [other["id"]]


async def test_cycle_attempt_via_supersede_tool(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        # v1 cannot supersede v2 of its own chain.
        message = await call_err(c, "supersede", {"node_id": seed.postgres, "supersedes": seed.sqlite}, "cycle")
        assert "same chain" in message
        # v2 already replaces v1: a version replaces exactly one earlier version.
        message = await call_err(
            c, "supersede", {"node_id": seed.sqlite, "supersedes": seed.payments}, "invalid_argument"
        )
        assert "already supersedes" in message
        await assert_intact(c, before, seed)

        # A longer loop: payments joins the ledger chain, then the ledger's root tries to replace it.
        joined = await call_ok(c, "supersede", {"node_id": seed.payments, "supersedes": seed.sqlite})
        assert joined["version"] == 3
        message = await call_err(c, "supersede", {"node_id": seed.postgres, "supersedes": seed.payments}, "cycle")
        assert "cycle" in message
        chain = await call_ok(c, "get_node", {"node_id": seed.payments, "include_history": True})
        assert [s["id"] for s in chain["history"]] == [seed.sqlite, seed.postgres]
        assert chain["in_force"] is True


async def test_supersede_self(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        for node_id in (seed.payments, seed.postgres):
            message = await call_err(c, "supersede", {"node_id": node_id, "supersedes": node_id.lower()}, "cycle")
            assert "cannot supersede itself" in message
        await assert_intact(c, before, seed)


# ---------------------------------------------------------------------------- queries


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "NEAR(",
        "*",
        "OR",
        "AND NOT",
        "(((",
        'ledger"',
        "col:val",
        "^x",
        "-x",
        "",
        "   ",
        # beyond the FTS5 syntax: other text that must never become an error
        "ledger NEAR/2 postgres",
        '"ledger" AND "postgres" NOT',
        "raw_text:ledger",
        "\x00\x1b[31m ledger",
        "\ud800 ledger",
        "ledger " * 500,
    ],
)
async def test_fts_syntax_in_query(service: MemoryService, seed: Seed, query: str) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        found = await call_ok(c, "recall", {"query": query})
        assert found["count"] == len(found["results"])
        assert all(hit["status"] == "active" for hit in found["results"])
        if not found["terms"]:
            assert found["count"] == 0
            assert any("no searchable words" in note for note in found["notes"])
        if "ledger" in found["terms"]:
            assert found["results"][0]["id"] == seed.sqlite
        await assert_intact(c, before, seed)


# ---------------------------------------------------------------------------- text


async def test_invalid_utf8_lone_surrogate(service: MemoryService, seed: Seed) -> None:
    """A lone surrogate is not text. Over JSON transports the SDK refuses it before the tool
    (see test_mcp_transports); in-process it reaches the tool, which refuses it with a code."""
    async with connect(service) as c:
        before = await snapshot(c)
        message = await call_err(c, "remember", {"raw_text": "ledger \ud800 notes"}, "invalid_text")
        assert "U+D800" in message
        assert "character 7" in message
        await call_err(c, "remember", {"raw_text": "\udcff"}, "invalid_text")  # a surrogateescape'd byte
        await assert_intact(c, before, seed)

    # The service itself, for callers that do not go through JSON (gRPC, Python).
    with pytest.raises(InvalidText) as caught:
        service.remember("ok \udc80")
    assert caught.value.code == "invalid_text"
    assert caught.value.details["offset"] == 3

    # Bytes that are not UTF-8.
    for raw, offset in ((b"ok \xff\xfe", 3), (b"\xed\xa0\x80 encoded surrogate", 0), (b"caf\xe9", 3)):
        with pytest.raises(InvalidText) as caught:
            textrules.clean_note(raw)
        assert f"offset {offset}" in str(caught.value)
        assert str(caught.value).startswith("[invalid_text] raw_text is not valid UTF-8")
    assert textrules.clean_note("café ledger".encode()) == ("café ledger", [])
    with pytest.raises(InvalidArgument, match="must be a string"):
        textrules.clean_note(12345)


async def test_control_characters_are_removed_with_warning(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        raw = "Ledger\x00 on SQLite\x07 now\x1b[0m.\tReason:\nsize\r\nok \x7f\x85"
        out = await call_ok(c, "remember", {"raw_text": raw})
        stored = out["raw_text"]
        assert stored == "Ledger on SQLite now[0m.\tReason:\nsize\r\nok"
        assert out["warnings"] == ["removed 5 control character(s) from raw_text"]
        got = await call_ok(c, "get_node", {"node_id": out["id"]})
        assert got["raw_text"] == stored
        # Clean text gives no warning.
        clean = await call_ok(c, "remember", {"raw_text": "Tabs\tand\nnewlines stay"})
        assert "warnings" not in clean  # empty fields are dropped
        assert clean["raw_text"] == "Tabs\tand\nnewlines stay"
        # Control characters in short fields are blanked too.
        tidy = await call_ok(c, "remember", {"raw_text": "Session note", "session": "s\x001", "author": "a\x1bna"})
        assert tidy["session"] == "s 1"
        assert tidy["author"] == "a na"


# ---------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("k", "kind"), [(0, "must be from 1 to 100, got 0"), (101, "must be from 1 to 100, got 101"), (-1, "got -1")]
)
async def test_k_out_of_range(service: MemoryService, seed: Seed, k: int, kind: str) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        text = await call_invalid_schema(c, "recall", {"query": "ledger", "k": k}, "k", kind)
        assert ("1" if k < 1 else "100") in text
        await assert_intact(c, before, seed)
        for edge in (1, 100):
            assert (await call_ok(c, "recall", {"query": "ledger", "k": edge}))["count"] >= 1
    # The service enforces the same range for callers that skip the schema.
    with pytest.raises(InvalidArgument, match=r"k must be an integer from 1 to 100") as caught:
        service.recall("ledger", k=k)
    assert caught.value.code == "invalid_argument"


@pytest.mark.parametrize(("depth", "kind"), [(-1, "must be from 0 to 50, got -1"), (51, "must be from 0 to 50")])
async def test_history_depth_out_of_range(service: MemoryService, seed: Seed, depth: int, kind: str) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        await call_invalid_schema(c, "recall", {"query": "ledger", "history_depth": depth}, "history_depth", kind)
        await call_invalid_schema(
            c, "get_node", {"node_id": seed.sqlite, "history_depth": depth}, "history_depth", kind
        )
        await assert_intact(c, before, seed)
        for edge in (0, 50):
            found = await call_ok(c, "recall", {"query": "ledger", "include_history": True, "history_depth": edge})
            assert len(found["results"][0].get("history", [])) == min(edge, 1)
    for bad in (depth, True, "5"):
        with pytest.raises(InvalidArgument, match=r"history_depth must be an integer from 0 to 50"):
            service.recall("ledger", history_depth=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument, match=r"history_depth must be an integer from 0 to 50"):
            service.get_node(seed.sqlite, history_depth=bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- relations, labels, tags


async def test_bad_relations(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        note = "Ledger writes go through one queue"
        message = await call_err(
            c, "remember", {"raw_text": note, "relations": {"caused_by": [UNKNOWN_ID]}}, "not_found"
        )
        assert message.startswith("relations.caused_by")
        assert UNKNOWN_ID in message
        for kind in ("Caused By", "caused-by", "1st", "x" * 40, ""):
            message = await call_err(
                c, "remember", {"raw_text": note, "relations": {kind: [seed.sqlite]}}, "invalid_argument"
            )
            assert "snake_case" in message
        await call_err(c, "remember", {"raw_text": note, "relations": {"caused_by": ["nope"]}}, "invalid_id")
        many = {f"rel_{i}": [seed.sqlite] for i in range(17)}
        message = await call_err(c, "remember", {"raw_text": note, "relations": many}, "invalid_argument")
        assert "at most 16 relation types" in message
        message = await call_err(
            c, "remember", {"raw_text": note, "relations": {"caused_by": [seed.sqlite] * 65}}, "invalid_argument"
        )
        assert "at most 64 ids" in message
        # A relation that is not a list of ids fails the input schema.
        await call_invalid_schema(
            c,
            "remember",
            {"raw_text": note, "relations": {"caused_by": {"id": seed.sqlite}}},
            "relations.caused_by",
            "must be an array",
        )
        await assert_intact(c, before, seed)
        # A purged target is refused too.
        await call_ok(c, "forget", {"node_id": seed.payments, "purge": True})
        await call_err(c, "remember", {"raw_text": note, "relations": {"caused_by": [seed.payments]}}, "purged")
        # A good relation, for contrast (ids are normalised and de-duplicated).
        ok = await call_ok(
            c, "remember", {"raw_text": note, "relations": {"caused_by": [seed.sqlite.lower(), seed.sqlite]}}
        )
        assert ok["relations"] == {"caused_by": [seed.sqlite]}


@pytest.mark.parametrize(
    "label", ["Bad Label!", "eu west", "-leading-dash", "x" * 65, "naïve space ", "a\nb", "ns;drop"]
)
async def test_bad_namespace_and_scope_labels(service: MemoryService, seed: Seed, label: str) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        for field in ("namespace", "scope"):
            message = await call_err(c, "remember", {"raw_text": "Ledger on SQLite", field: label}, "invalid_argument")
            assert message.startswith(f"{field} ")
            assert "not a valid label" in message
            assert "a-z, 0-9" in message  # says what is allowed
            await call_err(c, "recall", {"query": "ledger", field: label}, "invalid_argument")
        await call_err(c, "stats", {"namespace": label}, "invalid_argument")
        message = await call_err(
            c, "remember", {"raw_text": "Ledger on SQLite", "tags": ["ok", label]}, "invalid_argument"
        )
        assert message.startswith("tag ")
        await assert_intact(c, before, seed)


async def test_labels_are_normalised_not_rejected(service: MemoryService, seed: Seed) -> None:
    """For contrast: case and surrounding spaces are normalised; empty means the default."""
    async with connect(service) as c:
        out = await call_ok(c, "remember", {"raw_text": "EU ledger", "namespace": " Team-B ", "scope": "EU-West"})
        assert (out["namespace"], out["scope"]) == ("team-b", "eu-west")
        out = await call_ok(c, "remember", {"raw_text": "Default ledger", "namespace": "", "scope": "  "})
        assert (out["namespace"], out.get("scope")) == ("default", None)
        stats = await call_ok(c, "stats", {"namespace": " Team-B "})
        assert (stats["namespace"], stats["nodes"]) == ("team-b", 1)  # echoes what it counted
        assert "namespace" not in (await call_ok(c, "stats", {"namespace": ""}))  # all namespaces


async def test_too_many_tags(service: MemoryService, seed: Seed) -> None:
    async with connect(service) as c:
        before = await snapshot(c)
        tags = [f"t{i}" for i in range(33)]
        message = await call_err(c, "remember", {"raw_text": "Ledger on SQLite", "tags": tags}, "invalid_argument")
        assert "at most 32 tags per note, got 33" in message
        await call_err(c, "recall", {"query": "ledger", "tags": tags}, "invalid_argument")
        await assert_intact(c, before, seed)
        ok = await call_ok(c, "remember", {"raw_text": "Ledger on SQLite", "tags": tags[:32]})
        assert len(ok["tags"]) == 32


def test_seed_is_one_chain_and_one_decision(service: MemoryService, seed: Seed) -> None:
    """Guards the fixture the tests above lean on."""
    heads = service.storage.heads([seed.postgres, seed.payments])
    assert {node.id for node in heads.values()} == {seed.sqlite, seed.payments}
