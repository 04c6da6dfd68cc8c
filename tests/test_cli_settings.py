"""Settings and the ``evomem-mcp`` command line: precedence, bad values, bad paths.

Precedence is flag > ``EVOMEM_*`` environment > default. Bad values stop the command
with exit status 2 and one line on stderr that names what to fix; a database that
cannot be opened stops it with status 1 and a message naming the path.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from evomem.domain.text import DEFAULT_MAX_NOTE_BYTES
from evomem.entrypoints import cli
from evomem.settings import Settings, SettingsError

EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVOMEM_MCP, *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=120
    )


# ---------------------------------------------------------------------------- precedence


def test_defaults_with_an_empty_environment() -> None:
    s = Settings.from_env({})
    assert s.db == str(Path("~/.evomem/evomem.db").expanduser())
    assert (s.transport, s.host, s.port) == ("stdio", "127.0.0.1", 8765)
    assert (s.auto_supersede, s.namespace, s.author) == ("off", "default", None)
    assert s.max_note_bytes == DEFAULT_MAX_NOTE_BYTES == 1_048_576
    assert (s.log_level, s.log_format) == ("INFO", "text")


def test_every_setting_has_an_env_variable() -> None:
    env = {
        "EVOMEM_DB": "/data/e.db",
        "EVOMEM_TRANSPORT": "http",
        "EVOMEM_HOST": "0.0.0.0",
        "EVOMEM_PORT": "9000",
        "EVOMEM_AUTO_SUPERSEDE": "heuristic",
        "EVOMEM_NAMESPACE": "team-b",
        "EVOMEM_AUTHOR": "ana",
        "EVOMEM_MAX_NOTE_BYTES": "2048",
        "EVOMEM_LOG_LEVEL": "DEBUG",
        "EVOMEM_LOG_FORMAT": "json",
        "EVOMEM_LINKER_MODEL": "tiny",
        "EVOMEM_LINKER_BASE_URL": "http://127.0.0.1:8080/v1",
        "EVOMEM_LINKER_TIMEOUT_S": "3",
        "EVOMEM_LINKER_STRUCTURED": "json_schema",
        "EVOMEM_VECTORS": "off",
    }
    assert {f"EVOMEM_{f.name.upper()}" for f in fields(Settings)} == set(env)
    s = Settings.from_env(env)
    assert s == Settings(
        db="/data/e.db",
        transport="http",
        host="0.0.0.0",
        port=9000,
        auto_supersede="heuristic",
        namespace="team-b",
        author="ana",
        max_note_bytes=2048,
        log_level="DEBUG",
        log_format="json",
        linker_model="tiny",
        linker_base_url="http://127.0.0.1:8080/v1",
        vectors="off",
        linker_timeout_s=3,
        linker_structured="json_schema",
    )


def test_flag_beats_env_beats_default() -> None:
    env = {"EVOMEM_PORT": "9000", "EVOMEM_AUTO_SUPERSEDE": "heuristic", "EVOMEM_DB": "/env/e.db"}
    assert Settings.from_env({}).port == 8765  # default
    assert Settings.from_env(env).port == 9000  # env over default
    assert Settings.from_env(env, port=9100).port == 9100  # flag over env
    assert Settings.from_env(env, port=0).port == 0  # a falsy flag still wins
    assert Settings.from_env(env, port=None).port == 9000  # an absent flag does not
    s = Settings.from_env(env, auto_supersede="off", db="/flag/e.db")
    assert (s.auto_supersede, s.db) == ("off", "/flag/e.db")


def test_empty_env_value_means_unset() -> None:
    s = Settings.from_env({"EVOMEM_PORT": "", "EVOMEM_TRANSPORT": "", "EVOMEM_DB": ""})
    assert (s.port, s.transport) == (8765, "stdio")
    assert s.db.endswith("evomem.db")


def test_from_env_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOMEM_NAMESPACE", "from-env")
    monkeypatch.setenv("EVOMEM_PORT", "9001")
    assert Settings.from_env().namespace == "from-env"
    # The command line parses flags over the same environment.
    s = cli.settings_from_args(["--port", "9002", "--db", "/flag/e.db"])
    assert (s.port, s.namespace, s.db) == (9002, "from-env", "/flag/e.db")
    assert cli.settings_from_args([]).port == 9001


def test_flag_beats_env_in_the_running_server(tmp_path: Path, server_env: dict[str, str]) -> None:
    """End to end: EVOMEM_DB is used without --db, and --db wins over it."""
    env_db, flag_db = tmp_path / "env.db", tmp_path / "flag.db"
    env = {**server_env, "EVOMEM_DB": str(env_db), "EVOMEM_NAMESPACE": "from-env"}

    async def server_db(args: list[str]) -> tuple[str, dict[str, int]]:
        params = StdioServerParameters(command=EVOMEM_MCP, args=args, env=env)
        async with Client(params) as client:
            remembered = await client.call_tool("remember", {"raw_text": "Ledger on SQLite"})
            assert not remembered.is_error, remembered.content
            stats = await client.call_tool("stats", {})
            assert stats.structured_content is not None
            return stats.structured_content["server"]["db"], stats.structured_content["namespaces"]

    db, namespaces = anyio.run(server_db, [])
    assert db == str(env_db)
    assert namespaces == {"from-env": 1}
    assert env_db.exists()

    db, namespaces = anyio.run(server_db, ["--db", str(flag_db), "--namespace", "from-flag"])
    assert db == str(flag_db)
    assert namespaces == {"from-flag": 1}


# ---------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("EVOMEM_PORT", "abc", "EVOMEM_PORT must be an integer, got 'abc'"),
        ("EVOMEM_PORT", "70000", "EVOMEM_PORT: port must be 0-65535, got 70000"),
        ("EVOMEM_PORT", "-1", "EVOMEM_PORT: port must be 0-65535"),
        ("EVOMEM_MAX_NOTE_BYTES", "1MB", "EVOMEM_MAX_NOTE_BYTES must be an integer"),
        ("EVOMEM_MAX_NOTE_BYTES", "0", "EVOMEM_MAX_NOTE_BYTES: max_note_bytes must be between 1 and 67108864"),
        ("EVOMEM_TRANSPORT", "nope", "EVOMEM_TRANSPORT: transport must be one of stdio, http, got 'nope'"),
        ("EVOMEM_TRANSPORT", "sse", "transport must be one of stdio, http"),
        ("EVOMEM_AUTO_SUPERSEDE", "maybe", "EVOMEM_AUTO_SUPERSEDE: auto_supersede must be one of off, heuristic"),
        ("EVOMEM_LOG_LEVEL", "LOUD", "EVOMEM_LOG_LEVEL: log_level 'LOUD' is not a logging level"),
        ("EVOMEM_LOG_FORMAT", "xml", "EVOMEM_LOG_FORMAT: log_format must be text or json"),
    ],
)
def test_bad_env_value_is_a_clear_settings_error(name: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({name: value})
    assert expected in str(caught.value)


def test_bad_flag_value_is_a_settings_error_without_env_name() -> None:
    with pytest.raises(SettingsError, match=r"^port must be 0-65535, got 70001$"):
        Settings.from_env({"EVOMEM_PORT": "70000"}, port=70001)  # the flag is the bad one
    with pytest.raises(SettingsError, match=r"^EVOMEM_LOG_LEVEL: "):
        Settings.from_env({"EVOMEM_LOG_LEVEL": "LOUD"}, port=1)  # a good flag, a bad env value


def test_lowercase_log_level_is_accepted() -> None:
    assert Settings.from_env({"EVOMEM_LOG_LEVEL": "debug"}).log_level == "debug"


def test_bad_env_value_exits_2_with_one_line(server_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli([], {**server_env, "EVOMEM_PORT": "abc"})
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip() == "evomem-mcp: EVOMEM_PORT must be an integer, got 'abc'"
    # main() in-process says the same, without starting anything.
    assert cli.main(["--max-note-bytes", "0"]) == 2
    assert "max_note_bytes must be between 1 and 67108864" in capsys.readouterr().err


def test_unknown_transport_exits_2(server_env: dict[str, str]) -> None:
    result = run_cli(["--transport", "nope"], server_env)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "invalid choice: 'nope'" in result.stderr
    assert "stdio" in result.stderr and "http" in result.stderr


@pytest.mark.parametrize(
    "args",
    [["--port", "abc"], ["--auto-supersede", "sometimes"], ["--log-format", "xml"], ["--no-such-flag"]],
)
def test_bad_flags_exit_2(server_env: dict[str, str], args: list[str]) -> None:
    result = run_cli(args, server_env)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage: evomem-mcp" in result.stderr


# ---------------------------------------------------------------------------- bad database paths


def _bad_paths(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    a_dir = tmp_path / "a-dir"
    a_dir.mkdir()
    return {
        "parent is a file": a_file / "e.db",
        "path is a directory": a_dir,
        "unwritable location": Path("/proc/evomem-test/e.db"),
        "not a database": a_file,
    }


@pytest.mark.parametrize("case", ["parent is a file", "path is a directory", "unwritable location", "not a database"])
def test_bad_db_path_exits_nonzero_with_clear_message(tmp_path: Path, server_env: dict[str, str], case: str) -> None:
    db = _bad_paths(tmp_path)[case]
    result = run_cli(["--db", str(db)], server_env)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""  # stdout is the protocol channel: nothing on it
    assert f"cannot open the memory database {db}" in result.stderr
    assert "--db or EVOMEM_DB" in result.stderr  # says what to do
    assert "Traceback" not in result.stderr
    if case == "not a database":
        assert db.read_text() == "not a directory"  # a file that is not ours is left alone


def test_bad_db_path_from_env(tmp_path: Path, server_env: dict[str, str]) -> None:
    db = _bad_paths(tmp_path)["parent is a file"]
    result = run_cli([], {**server_env, "EVOMEM_DB": str(db)})
    assert result.returncode == 1
    assert f"cannot open the memory database {db}" in result.stderr


def test_db_directory_is_created(tmp_path: Path, server_env: dict[str, str]) -> None:
    """A missing parent directory is not an error: it is created (like ~/.evomem on first run)."""
    db = tmp_path / "new" / "nested" / "e.db"

    async def remember() -> None:
        params = StdioServerParameters(command=EVOMEM_MCP, args=["--db", str(db)], env=server_env)
        async with Client(params) as client:
            result = await client.call_tool("remember", {"raw_text": "Ledger on SQLite"})
            assert not result.is_error

    anyio.run(remember)
    assert db.exists()


def test_the_llm_linker_needs_a_model_and_an_endpoint() -> None:
    with pytest.raises(SettingsError, match="linker-model"):
        Settings(auto_supersede="llm")
    s = Settings(auto_supersede="llm", linker_model="m", linker_base_url="http://127.0.0.1:1/v1")
    from evomem.bootstrap import build_linker

    linker = build_linker("llm", s)
    assert linker is not None and "llm" in linker.name
