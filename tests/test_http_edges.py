"""The embedded HTTP server's rough edges (issue 12): a huge note, a huge body, a busy port."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from test_mcp_transports import HttpServer, http_server  # noqa: F401 - the fixture

from evomem.entrypoints.mcp.limits import DEFAULT_MESSAGE_LIMIT, message_limit

EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_body_limit_leaves_room_for_an_escaped_note() -> None:
    assert message_limit(None) == DEFAULT_MESSAGE_LIMIT
    assert message_limit(1_048_576) >= 6 * 1_048_576  # every character escaped as \uXXXX still fits
    assert message_limit(1024) == DEFAULT_MESSAGE_LIMIT


async def test_a_10_mib_note_over_http_is_note_too_large_not_a_bare_413(http_server: HttpServer) -> None:  # noqa: F811
    async with Client(http_server.url) as client:
        result = await client.call_tool("remember", {"raw_text": "x" * (10 * 1024 * 1024)})
        assert result.is_error
        text = " ".join(getattr(p, "text", "") for p in result.content)
        assert "[note_too_large]" in text and "10,485,760 bytes" in text
        stats = await client.call_tool("stats", {})
        assert stats.structured_content["nodes"] == 0


def test_a_body_over_the_limit_gets_a_json_rpc_error_that_names_the_limit(http_server: HttpServer) -> None:  # noqa: F811
    # The server answers from the declared length, before reading the body (a client that keeps
    # sending is then reset), so the request announces 18 MiB and the answer is read at once.
    size = 18 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", http_server.port), timeout=30) as conn:
        conn.sendall(
            (
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {size}\r\n\r\n"
            ).encode()
        )
        conn.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"x": "')
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    error = json.loads(body)["error"]
    assert error["message"].startswith("[note_too_large] the message is over")


def test_a_busy_port_is_one_clear_line_not_a_traceback(tmp_path: Path, server_env: dict[str, str]) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = subprocess.run(
            [EVOMEM_MCP, "--db", str(tmp_path / "e.db"), "--transport", "http", "--port", str(port)],
            capture_output=True,
            text=True,
            env=server_env,
            timeout=60,
        )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [lines[-1]] or all("cannot listen" not in line for line in lines[:-1])
    assert lines[-1].startswith(f"evomem-mcp: cannot listen on 127.0.0.1:{port}: ")
    assert "--port" in lines[-1]
