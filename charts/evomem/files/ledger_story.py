"""The ledger story against a running gateway, with the official MCP client: `helm test`.

    python ledger_story.py http://<release>-evomem-gateway:8765/mcp [timeout_s]

Remembers a decision, supersedes it, checks that recall answers with the version in force and
its history, waits for the worker to extract both notes, then purges them. Runs in a namespace
of its own (``helm-test-<random>``), so it never reads or changes anyone's memories. Prints PASS
and exits 0, or prints what failed and exits 1.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from typing import Any

import anyio
from mcp import Client

POSTGRES = "We picked Postgres for the ledger because the team knows it well."
SQLITE = "We moved the ledger from Postgres to SQLite, because Postgres was overkill for one writer."


class StoryFailed(AssertionError):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise StoryFailed(message)


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    text = " ".join(getattr(block, "text", "") for block in result.content).strip()
    check(not result.is_error, f"{tool} failed: {text}")
    check(isinstance(result.structured_content, dict), f"{tool} returned no structured content")
    return result.structured_content


async def story(url: Any, timeout_s: float) -> None:
    """``url``: the MCP endpoint, or anything else `mcp.Client` accepts (a server object, in tests)."""
    namespace = f"helm-test-{uuid.uuid4().hex[:12]}"
    token = os.environ.get("LEDGER_TOKEN")  # the gateway's bearer token (the chart's helm-test identity)
    if isinstance(url, str) and token:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        url = streamable_http_client(url, http_client=http)
    async with Client(url) as client:
        first = await call(client, "remember", {"raw_text": POSTGRES, "tags": ["ledger"], "namespace": namespace})
        second = await call(
            client,
            "remember",
            {"raw_text": SQLITE, "tags": ["ledger"], "supersedes": first["id"], "namespace": namespace},
        )
        try:
            check(second["supersedes"] == first["id"], f"the second note does not supersede the first: {second}")
            check(second["version"] == 2, f"the second note is not version 2: {second}")

            found = await call(
                client, "recall", {"query": "ledger postgres", "include_history": True, "namespace": namespace}
            )
            check(bool(found["results"]), "recall found nothing")
            top = found["results"][0]
            check(top["id"] == second["id"], "recall did not answer with the version in force")
            history = [step["id"] for step in top.get("history", [])]
            check(history == [first["id"]], f"the history is not the first decision: {history}")

            deadline = time.monotonic() + timeout_s
            while True:
                nodes = [
                    await call(client, "get_node", {"node_id": nid, "detail": "full"})
                    for nid in (first["id"], second["id"])
                ]
                states = [node["extraction"]["state"] for node in nodes]
                if all(state == "done" for state in states):
                    break
                check("failed" not in states, f"extraction failed: {states}")
                check(time.monotonic() < deadline, f"not extracted after {timeout_s:.0f} s: {states}")
                await anyio.sleep(1)
            check(
                "SQLite" in nodes[1].get("change", ""),
                f"the change extracted is not the move to SQLite: {nodes[1]['change']!r}",
            )
        finally:
            for node_id in (second["id"], first["id"]):
                with anyio.move_on_after(10):  # best effort: a failure above is what gets reported
                    await client.call_tool("forget", {"node_id": node_id, "purge": True})


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print("usage: ledger_story.py MCP_URL [TIMEOUT_S]", file=sys.stderr)
        return 2
    url, timeout_s = argv[0], float(argv[1]) if len(argv) > 1 else 180.0
    try:
        anyio.run(story, url, timeout_s)
    except StoryFailed as exc:
        print(f"FAIL {exc}")
        return 1
    except Exception as exc:  # the gateway is down, or answers something else than MCP
        print(f"FAIL {type(exc).__name__}: {exc}")
        return 1
    print(f"PASS the ledger story against {url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
