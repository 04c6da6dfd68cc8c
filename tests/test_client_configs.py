"""The client configurations in README.md are valid in each client's own format, and launch EvoMem.

Each block is parsed as its client parses it (JSON for Claude Desktop, Cursor and VS Code, TOML for
Codex), read with the keys that client uses (``mcpServers``; VS Code's ``servers`` with
``type: stdio``; Codex's ``[mcp_servers.<name>]``), and the command it names is run the way the
client would, with ``uvx`` replaced by this environment's ``evomem-mcp`` (no network here): it
must answer ``--help`` and accept the ``--db`` it is given.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))


def _client_part() -> str:
    start = README.index("## Add it to an MCP client")
    return README[start : README.index("\n## ", start + 1)]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", _client_part(), flags=re.MULTILINE | re.DOTALL)


def _servers() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for block in _blocks("json"):
        data = json.loads(block)
        if "mcpServers" in data:  # Claude Desktop, Cursor
            found.append(("mcpServers", data["mcpServers"]["evomem"]))
        else:  # VS Code
            entry = data["servers"]["evomem"]
            assert entry["type"] == "stdio"
            found.append(("servers", entry))
    for block in _blocks("toml"):
        found.append(("mcp_servers", tomllib.loads(block)["mcp_servers"]["evomem"]))
    return found


def test_every_client_format_is_in_the_readme() -> None:
    kinds = [kind for kind, _ in _servers()]
    assert kinds.count("mcpServers") >= 2  # Claude Desktop and Cursor
    assert "servers" in kinds and "mcp_servers" in kinds  # VS Code and Codex
    part = _client_part()
    for client in ("Claude Code", "Claude Desktop", "Cursor", "VS Code", "Codex"):
        assert f"**{client}**" in part, client
    for path in ("~/Library/Application Support/Claude/claude_desktop_config.json", "%APPDATA%\\Claude\\",
                 "~/.config/Claude/claude_desktop_config.json", "~/.cursor/mcp.json", ".vscode/mcp.json",
                 "~/.codex/config.toml"):  # fmt: skip
        assert path in part, path


@pytest.mark.parametrize(("kind", "entry"), _servers())
def test_each_configuration_launches_evomem(kind: str, entry: dict[str, Any], tmp_path: Path) -> None:
    command, args = entry["command"], list(entry["args"])
    assert command == "uvx" and args[0] == "evomem-mcp", (kind, entry)
    argv = [EVOMEM_MCP, *args[1:]]
    assert "--db" in argv
    db = argv.index("--db") + 1
    assert argv[db].startswith("~/"), "the README's paths rely on EvoMem expanding ~"
    argv[db] = str(tmp_path / Path(argv[db]).name)
    out = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    from evomem.entrypoints.cli.mcp import settings_from_args

    assert settings_from_args(args[1:]).db_path() == str(Path.home() / args[args.index("--db") + 1][2:])
