"""What the tools answer: compact, bounded, said once, described as wired, strict about arguments.

Through the official MCP client (in-process server unless the test says otherwise).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import bench.answers
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.domain.cronista import LiteCronista
from evomem.entrypoints.mcp.answers import ANSWER_MAX_BYTES, PAGE_CHARS
from evomem.entrypoints.mcp.server import INSTRUCTIONS, build_mcp_server
from tests.test_mcp_transports import stdio_params

pytestmark = pytest.mark.anyio

POSTGRES = "We picked Postgres for the ledger because the team knew it well."
SQLITE = "We moved the ledger from Postgres to SQLite, because Postgres was overkill for our load."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def both(result: Any) -> str:
    return text_of(result) + json.dumps(result.structured_content, ensure_ascii=False)


async def ok(client: Client, tool: str, args: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    return result


# ---------------------------------------------------------------------------- sizes


async def test_recall_and_tools_list_within_the_size_targets(tmp_path: Path) -> None:
    """The fixed store of bench.answers (10 chains of 3 versions): recall(k=5) returns at most
    1.5 x its notes' text + 100 characters per hit (text and structured content together), and
    tools/list is at most 10 KB."""
    run = await bench.answers.measure(tmp_path / "answers.db")
    recall = run["tools"]["recall"]
    assert recall["calls"] == 10 and recall["within_recall_target"], recall
    assert recall["returned_per_call"] <= recall["budget_per_call"]
    assert run["tools_list_chars"] <= 11_000, run["tools_list_chars"]
    # remember no longer returns the node (the caller just sent it): under 500 characters a call here.
    assert run["tools"]["remember"]["returned_per_call"] < 500


async def test_the_text_renders_the_decision_and_the_structured_content_has_no_note_text(
    service: MemoryService,
) -> None:
    async with Client(build_mcp_server(lambda: service)) as client:
        first = (await ok(client, "remember", {"raw_text": POSTGRES, "scope": "production"})).structured_content
        second = await ok(client, "remember", {"raw_text": SQLITE, "supersedes": first["id"]})
        assert POSTGRES not in both(second) and SQLITE not in both(second)  # not echoed
        new = second.structured_content
        assert "node" not in new and new["supersedes"] == first["id"] and new["version"] == 2
        assert text_of(second).splitlines()[1] == f"  replaces {first['id']} (v1, now superseded)"

        for args in ({"query": "ledger postgres"}, {"query": "ledger postgres", "include_history": True}):
            for detail in ("brief", "full"):
                result = await ok(client, "recall", {**args, "detail": detail})
                history = args.get("include_history", False)
                # Every note's text travels exactly once per answer.
                assert both(result).count(SQLITE) == 1, (args, detail)
                assert both(result).count(POSTGRES) == (1 if history else 0), (args, detail)
                where = text_of(result) if detail == "brief" else json.dumps(result.structured_content)
                assert SQLITE in where
                lines = text_of(result).splitlines()
                assert lines[0].startswith(f"{new['id']} active v2, ")
                assert any(line.startswith("  matched") for line in lines)
        for detail in ("brief", "full"):
            got = await ok(client, "get_node", {"node_id": first["id"], "detail": detail, "include_history": False})
            assert both(got).count(POSTGRES) == 1
            assert text_of(got).startswith(f"{first['id']} superseded v1, production, ")
            assert f"in force: {new['id']} active v2" in text_of(got)
        brief = (await ok(client, "get_node", {"node_id": first["id"]})).structured_content
        assert brief == {
            "id": first["id"],
            "status": "superseded",
            "version": 1,
            "in_force": False,
            "current_head": {"id": new["id"], "status": "active", "version": 2},
        }


async def test_instructions_say_how_to_use_the_memory(service: MemoryService) -> None:
    async with Client(build_mcp_server(lambda: service)) as client:
        assert client.instructions == INSTRUCTIONS
    lines = INSTRUCTIONS.strip().splitlines()
    assert len(lines) <= 8
    for words in ("call recall", "supersedes=", "possible_supersedes", "supersede(node_id, supersedes)", "purge=true"):
        assert words in INSTRUCTIONS, words


# ---------------------------------------------------------------------------- descriptions as wired


async def _recall_description(server: Any) -> tuple[str, str]:
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    recall = tools["recall"]
    return recall.description or "", recall.input_schema["properties"]["scope"]["description"]


async def test_recall_description_follows_the_vectors_setting(service: MemoryService) -> None:
    on, _ = await _recall_description(build_mcp_server(lambda: service, hybrid=True))
    off, _ = await _recall_description(build_mcp_server(lambda: service, hybrid=False))
    auto, _ = await _recall_description(build_mcp_server(lambda: service, hybrid=None))
    assert "Hybrid search" in on and "meaning" in on
    assert "BM25 search over the words (vectors are off)" in off and "Hybrid" not in off
    assert "when vectors are loaded, else BM25" in auto


async def test_evomem_mcp_describes_recall_as_its_settings_wire_it(tmp_path: Path, server_env: dict[str, str]) -> None:
    """``--vectors off``: BM25. ``--vectors on`` (when the model is installed): hybrid."""
    from evomem.bootstrap.vectors import vectors_problem

    async with Client(stdio_params(tmp_path / "off.db", server_env, "--vectors", "off")) as client:
        recall = {t.name: t for t in (await client.list_tools()).tools}["recall"]
    assert "BM25 search over the words (vectors are off)" in (recall.description or "")
    if vectors_problem() is not None:
        pytest.skip(f"hybrid recall cannot run here: {vectors_problem()}")
    async with Client(stdio_params(tmp_path / "on.db", server_env, "--vectors", "on")) as client:
        recall = {t.name: t for t in (await client.list_tools()).tools}["recall"]
    assert "Hybrid search" in (recall.description or "")


async def test_the_scope_description_says_what_recall_does(service: MemoryService) -> None:
    """The scope's own decisions first, then default-scope ones; other scopes are left out."""
    _, scope = await _recall_description(build_mcp_server(lambda: service))
    assert "that scope's own first, then the default scope's" in scope and "Other scopes are left out" in scope
    default = service.remember("The ledger uses Postgres in every region.").node
    staging = service.remember("In staging, the ledger uses SQLite.", scope="staging").node
    other = service.remember("For the EU region, the ledger uses MySQL.", scope="eu-west").node
    async with Client(build_mcp_server(lambda: service)) as client:
        found = (await ok(client, "recall", {"query": "ledger uses", "scope": "staging"})).structured_content
    assert [(h["id"], h["scope_match"]) for h in found["results"]] == [(staging.id, "exact"), (default.id, "default")]
    assert other.id not in {h["id"] for h in found["results"]}


# ---------------------------------------------------------------------------- bounded answers


async def test_notes_are_cut_at_the_setting_and_the_full_text_comes_in_pages(store: SQLiteStore) -> None:
    service = MemoryService.local(store, extractor=LiteCronista(), config=ServiceConfig(max_note_bytes=1_048_576))
    long = "Ledger note." + "".join(f" word{i}" for i in range(40_000))  # about 390,000 characters
    assert len(long) > 2 * PAGE_CHARS
    async with Client(build_mcp_server(lambda: service, note_chars=100)) as client:
        node_id = (await ok(client, "remember", {"raw_text": long})).structured_content["id"]
        got = await ok(client, "get_node", {"node_id": node_id})
        assert got.structured_content["truncated"] is True and got.structured_content["text_chars"] == len(long)
        assert long[:100] in text_of(got) and long[:101] not in text_of(got)
        assert "get_node(full_text=true)" in text_of(got)
        full = (await ok(client, "get_node", {"node_id": node_id, "detail": "full"})).structured_content
        assert full["raw_text"] == long[:100] and full["truncated"] is True
        hit = (await ok(client, "recall", {"query": "ledger word7"})).structured_content["results"][0]
        assert hit == {"id": node_id, "version": 1, "truncated": True}

        pages, offset = [], 0
        while True:
            page = await ok(client, "get_node", {"node_id": node_id, "full_text": True, "offset": offset})
            pages.append(text_of(page))
            assert page.structured_content["total_chars"] == len(long)
            if "next_offset" not in page.structured_content:
                break
            offset = page.structured_content["next_offset"]
            assert offset == len("".join(pages))
        assert len(pages) == -(-len(long) // PAGE_CHARS) and "".join(pages) == long
        end = await ok(client, "get_node", {"node_id": node_id, "full_text": True, "offset": len(long)})
        assert text_of(end) == "" and "next_offset" not in end.structured_content
        past = await client.call_tool("get_node", {"node_id": node_id, "full_text": True, "offset": len(long) + 1})
        assert past.is_error
        assert text_of(past).startswith("Error executing tool get_node: [invalid_argument] offset: past the end")


async def test_a_recall_that_would_exceed_the_bound_is_cut_and_says_so(store: SQLiteStore) -> None:
    """40 chains of 3 versions of 8,000-character notes: k=100 with history would be about 1 MB."""
    service = MemoryService.local(store, extractor=LiteCronista())
    for chain in range(40):
        previous = None
        for version in range(3):
            text = f"Ledger chain{chain} version{version}. " + f"detail{chain}x{version} " * 600
            previous = service.remember(text[:8000], supersedes=previous).node.id
    async with Client(build_mcp_server(lambda: service, note_chars=100_000)) as client:
        result = await ok(client, "recall", {"query": "ledger", "k": 100, "include_history": True})
        size = len(json.dumps(text_of(result))) + len(json.dumps(result.structured_content))
        assert size <= ANSWER_MAX_BYTES
        data = result.structured_content
        assert len(data["results"]) == 40
        assert any(note.startswith("answer cut to fit 512 KiB") for note in data["notes"])
        assert data["results"][0]["truncated"] is True
        small = await ok(client, "recall", {"query": "ledger", "k": 3})
        assert "notes" not in small.structured_content  # a small answer is not cut


async def test_the_note_chars_setting_reaches_the_server(tmp_path: Path, server_env: dict[str, str]) -> None:
    env = {**server_env, "EVOMEM_ANSWER_NOTE_CHARS": "150"}
    async with Client(stdio_params(tmp_path / "e.db", env)) as client:
        node_id = (await ok(client, "remember", {"raw_text": "x" * 400})).structured_content["id"]
        got = await ok(client, "get_node", {"node_id": node_id})
    assert got.structured_content["text_chars"] == 400
    assert "x" * 150 in text_of(got) and "x" * 151 not in text_of(got)


# ---------------------------------------------------------------------------- strict arguments


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("forget", {"purge": "true"}, 'purge: must be a boolean (true or false), got "true"'),
        ("forget", {"purge": 1}, "purge: must be a boolean (true or false), got 1"),
        ("forget", {"purge": "yes"}, "purge: must be a boolean"),
        ("recall", {"query": "ledger", "k": True}, "k: must be an integer, got true"),
        ("recall", {"query": "ledger", "k": 0}, "k: must be from 1 to 100, got 0"),
        ("recall", {"query": "ledger", "k": "5"}, 'k: must be an integer, got "5"'),
        ("recall", {"query": "ledger", "include_history": "yes"}, "include_history: must be a boolean"),
        ("recall", {"query": "ledger", "tags": "ledger"}, "tags: must be an array or null"),
        ("recall", {"query": ["ledger"]}, "query: must be a string"),
        ("recall", {}, "query: is required"),
        ("recall", {"query": "ledger", "detail": "everything"}, "detail: must be one of brief, full"),
        ("remember", {"raw_text": "Ledger on SQLite", "supersede": "x"}, "supersede: not an argument of this tool"),
        ("remember", {"raw_text": "Ledger on SQLite", "relations": '{"caused_by": []}'}, "relations: must be"),
        ("get_node", {"history_depth": 2.5}, "history_depth: must be an integer"),
        ("get_node", {"offset": -1}, "offset: must be"),
    ],
)
async def test_arguments_are_checked_strictly_against_the_schema(
    service: MemoryService, tool: str, args: dict[str, Any], expected: str
) -> None:
    note = service.remember(POSTGRES).node
    if tool in ("forget", "get_node"):
        args = {"node_id": note.id, **args}
    async with Client(build_mcp_server(lambda: service)) as client:
        result = await client.call_tool(tool, args)
        assert result.is_error, f"{tool}({args}) was accepted"
        assert text_of(result).startswith(f"Error executing tool {tool}: [invalid_argument] {expected}"), text_of(
            result
        )
        assert "pydantic" not in text_of(result)
        stats = (await ok(client, "stats", {})).structured_content
    assert stats["nodes"] == 1 and stats["purged"] == 0  # nothing stored, nothing purged
    assert service.storage.get(note.id).raw_text == POSTGRES  # type: ignore[union-attr]


async def test_a_refused_value_is_not_echoed_whole(service: MemoryService) -> None:
    async with Client(build_mcp_server(lambda: service)) as client:
        result = await client.call_tool("recall", {"query": "ledger", "k": "9" * 10_000})
    assert result.is_error and len(text_of(result)) < 200


async def test_whole_node_answers_stay_within_the_bound(store: SQLiteStore) -> None:
    """detail=full of a chain of three 800 kB notes (4-byte characters), notes shown up to 100,000
    characters: about 1.2 MB of text fields; they are shortened to fit, not emptied."""
    service = MemoryService.local(store, extractor=LiteCronista(), config=ServiceConfig(max_note_bytes=1_048_576))
    previous = None
    for version in range(3):
        note = f"Ledger version {version}. " + "\U0001f4be" * 200_000
        previous = service.remember(note, supersedes=previous).node.id
    async with Client(build_mcp_server(lambda: service, note_chars=100_000)) as client:
        answers = [
            await ok(client, "get_node", {"node_id": previous, "detail": "full", "include_history": True}),
            await ok(client, "recall", {"query": "ledger", "detail": "full", "include_history": True}),
            await ok(client, "remember", {"raw_text": "Ledger. " + "\U0001f4be" * 250_000, "detail": "full"}),
        ]
    for result in answers:
        data = result.structured_content
        size = len(json.dumps(text_of(result), ensure_ascii=False).encode())
        size += len(json.dumps(data, ensure_ascii=False).encode())
        assert size <= ANSWER_MAX_BYTES, size
        node = data["results"][0] if "results" in data else data
        assert node["truncated"] is True and 1_000 <= len(node["raw_text"]) < 100_000


async def test_a_huge_one_word_query_is_not_echoed(service: MemoryService) -> None:
    service.remember(POSTGRES)
    async with Client(build_mcp_server(lambda: service)) as client:
        for detail in ("brief", "full"):
            result = await ok(client, "recall", {"query": "q" * 200_000, "detail": detail})
            assert len(both(result)) < 1_000, detail
