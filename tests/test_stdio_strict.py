"""stdio with strict input: bad lines get a JSON-RPC error, never silence or U+FFFD.

A real ``evomem-mcp`` process is driven with raw lines on its stdin (what a careless or
hostile client writes), and every answer is read from its stdout by id.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from evomem.entrypoints.mcp.messages import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from evomem.entrypoints.mcp.messages import check_message as check_line

EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def remember(rid: int, text: str) -> bytes:
    msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "remember", "arguments": {}}}
    msg["params"]["arguments"]["raw_text"] = text
    return json.dumps(msg).encode()


def test_check_line_answers_each_kind_of_bad_line() -> None:
    assert check_line(b"\n") == (None, None)
    msg, err = check_line(b"this is not json\n")
    assert msg is None and err is not None and (err.id, err.error.code) == (None, PARSE_ERROR)
    msg, err = check_line(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": [1, 2]}')
    assert err is not None and (err.id, err.error.code) == (3, INVALID_REQUEST) and "params" in err.error.message
    msg, err = check_line(remember(4, "caf\udce9").replace(b"\\udce9", b"\\ud800"))
    assert err is not None and (err.id, err.error.code) == (4, INVALID_PARAMS) and "[invalid_text]" in err.error.message
    msg, err = check_line(remember(5, "caf").replace(b"caf", b"caf\xe9"))
    assert err is not None and (err.id, err.error.code) == (5, PARSE_ERROR)
    assert "not valid UTF-8 (bad byte at offset" in err.error.message
    # A malformed notification gets no answer (JSON-RPC forbids one).
    assert check_line(b'{"jsonrpc": "2.0", "method": "notifications/x", "params": [1]}') == (None, None)
    msg, err = check_line(json.dumps(INIT).encode())
    assert err is None and msg is not None


def test_a_real_server_answers_every_bad_line_and_stores_only_the_good_note(tmp_path: Path, server_env) -> None:
    lines = [
        json.dumps(INIT).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        b"not json at all",
        b'{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": ["remember"]}',
        remember(11, "We picked Postgres").replace(b"Postgres", b"Postgr\xe9s"),  # invalid UTF-8
        remember(12, "We picked X").replace(b"X", b"\\ud800"),  # a lone surrogate escape
        remember(13, "We picked SQLite for the ledger."),
        json.dumps(
            {"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": "stats", "arguments": {}}}
        ).encode(),
    ]
    proc = subprocess.Popen(
        [EVOMEM_MCP, "--db", str(tmp_path / "m.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[dict] = []
    raw_out: list[bytes] = []
    try:
        deadline = time.monotonic() + 60

        def read_until(rid: int) -> None:
            while rid not in {a.get("id") for a in answers} and time.monotonic() < deadline:
                out = proc.stdout.readline()  # type: ignore[union-attr]
                if not out:
                    break
                raw_out.append(out)
                answers.append(json.loads(out))

        # Requests run concurrently: stats is sent once the remember has answered.
        for line in lines[:-1]:
            proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        read_until(13)
        proc.stdin.write(lines[-1] + b"\n")
        proc.stdin.flush()
        read_until(14)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    by_id = {a.get("id"): a for a in answers}
    assert by_id[None]["error"]["code"] == PARSE_ERROR  # "not json at all"
    assert by_id[10]["error"]["code"] == INVALID_REQUEST
    assert by_id[11]["error"]["code"] == PARSE_ERROR and "UTF-8" in by_id[11]["error"]["message"]
    assert by_id[12]["error"]["code"] == INVALID_PARAMS and "surrogate" in by_id[12]["error"]["message"]
    assert not by_id[13]["result"].get("isError") and by_id[13]["result"]["structuredContent"]["id"]
    stats = by_id[14]["result"]["structuredContent"]
    assert stats["nodes"] == 1, "only the valid note was stored (no U+FFFD copy)"
    assert "\ufffd" not in b"".join(raw_out).decode("utf-8")
