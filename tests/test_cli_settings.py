"""Settings and the ``evomem-mcp`` command line: precedence, bad values, bad paths.

Precedence is flag > ``EVOMEM_*`` environment > default. Bad values stop the command
with exit status 2 and one line on stderr that names what to fix; a database that
cannot be opened stops it with status 1 and a message naming the path.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from evomem.domain.text import DEFAULT_MAX_NOTE_BYTES
from evomem.entrypoints.cli import mcp as cli
from evomem.settings import HNSW_FROM, TANTIVY_FROM, Settings, SettingsError, env_names

EVOMEM_MCP = str(Path(sys.executable).with_name("evomem-mcp"))


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVOMEM_MCP, *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=120
    )


# ---------------------------------------------------------------------------- precedence


def test_defaults_with_an_empty_environment() -> None:
    s = Settings.from_env({})
    assert s.db_path() == str(Path("~/.evomem/evomem.db").expanduser())
    assert s.db_path("/data/evomem.db") == "/data/evomem.db"  # the storage service's default
    assert (s.mcp.transport, s.mcp.host, s.mcp.port) == ("stdio", None, 8765)
    assert (s.linker.auto_supersede, s.memory.namespace, s.memory.author) == ("off", "default", None)
    assert s.memory.max_note_bytes == DEFAULT_MAX_NOTE_BYTES == 1_048_576
    assert (s.logging.level, s.log_format("text"), s.log_format("json")) == ("INFO", "text", "json")
    assert (s.queue.job_visibility_ms, s.queue.job_max_attempts, s.gateway.workers) == (30_000, 5, 2)


EMBEDDED_ENV = {
    "EVOMEM_DB": "/data/e.db",
    "EVOMEM_TRANSPORT": "http",
    "EVOMEM_HOST": "0.0.0.0",
    "EVOMEM_PORT": "9000",
    "EVOMEM_ANSWER_NOTE_CHARS": "500",
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
    "EVOMEM_OFFER_CANDIDATES": "false",
    "EVOMEM_OFFER_MIN_P": "0.4",
    "EVOMEM_RECALL_HINTS": "false",
    "EVOMEM_HINT_MIN_P": "0.95",
    "EVOMEM_LINKER_CROSS_ENCODER": "true",
}
SERVICE_ENV = {
    "EVOMEM_SQLITE_DRIVER": "sqlite3",
    "EVOMEM_WORD_INDEX": "tantivy",
    "EVOMEM_TANTIVY_FROM": "50000",
    "EVOMEM_VECTOR_SEARCH": "hnsw",
    "EVOMEM_HNSW_FROM": "20000",
    "EVOMEM_DATABASE_URL": "postgresql://evomem:pg-secret@db:5432/evomem",
    "EVOMEM_DATABASE_ROLE": "evomem_rw",
    "EVOMEM_DATABASE_PASSWORD_FILE": "/run/secrets/db-password",
    "EVOMEM_DATABASE_POOL": "16",
    "EVOMEM_EMBEDDING_MODEL_DIR": "/models/minilm",
    "EVOMEM_EMBEDDER": "static",
    "EVOMEM_LINKER": "scored",
    "EVOMEM_LINKER_API_KEY": "sk-secret",
    "EVOMEM_CRONISTA_BACKEND": "triton",
    "EVOMEM_CRONISTA_MODEL_DIR": "/models/cronista",
    "EVOMEM_TRITON_URL": "triton:8001",
    "EVOMEM_TRITON_MODEL": "cronista-b",
    "EVOMEM_TRITON_EMBEDDING_MODEL": "minilm",
    "EVOMEM_EMBEDDING_BACKEND": "triton",
    "EVOMEM_TRITON_MODEL_VERSION": "3",
    "EVOMEM_TRITON_TIMEOUT_MS": "750",
    "EVOMEM_TRITON_RETRIES": "4",
    "EVOMEM_TRITON_RETRY_AFTER_S": "9",
    "EVOMEM_STORAGE_ADDR": "storage:50051",
    "EVOMEM_CRONISTA_ADDR": "cronista:50052",
    "EVOMEM_LINKER_ADDR": "linker:50053",
    "EVOMEM_GRPC_HOST": "127.0.0.1",
    "EVOMEM_GRPC_PORT": "50099",
    "EVOMEM_GATEWAY_WORKERS": "4",
    "EVOMEM_ACCESS_LOG": "true",
    "EVOMEM_REDIS_URL": "redis://redis:6379/0",
    "EVOMEM_JOB_VISIBILITY_MS": "1000",
    "EVOMEM_JOB_MAX_ATTEMPTS": "2",
    "EVOMEM_SWEEP_INTERVAL_S": "3",
    "EVOMEM_SWEEP_BATCH": "50",
    "EVOMEM_WORKER_BATCH": "7",
    "EVOMEM_WORKER_CONSUMER": "w-1",
    "EVOMEM_METRICS_PORT": "9464",
    "EVOMEM_DEDUPE_WINDOW_S": "30",
    "EVOMEM_PURGE_RETRY_S": "5",
    "EVOMEM_METRICS_HOST": "0.0.0.0",
    "EVOMEM_METRICS_TOKEN": "scrape-token",
    "EVOMEM_METRICS_TOKEN_FILE": "/run/secrets/evomem-metrics",
    "EVOMEM_METRICS_INSECURE": "false",
    "EVOMEM_AUTH_FILE": "/run/secrets/evomem-tokens",
    "EVOMEM_INSECURE_NO_AUTH": "false",
    "EVOMEM_RESOURCE_URL": "https://memory.example.com/mcp",
    "EVOMEM_AUTH_ISSUER_URL": "https://login.example.com",
    "EVOMEM_ALLOWED_HOSTS": "memory.example.com,gateway:*",
    "EVOMEM_ALLOWED_ORIGINS": "https://memory.example.com",
    "EVOMEM_RATE_REDIS_URL": "redis://redis:6379/1",
    "EVOMEM_GRPC_SECRET": "grpc-secret",
    "EVOMEM_GRPC_SECRET_FILE": "/run/secrets/evomem-grpc",
    "EVOMEM_GRPC_INSECURE": "false",
    "EVOMEM_GRPC_TLS_CA": "/tls/ca.pem",
    "EVOMEM_GRPC_TLS_CERT": "/tls/cert.pem",
    "EVOMEM_GRPC_TLS_KEY": "/tls/key.pem",
    "EVOMEM_JWT_ISSUER": "https://idp.example",
    "EVOMEM_JWT_AUDIENCE": "evomem",
    "EVOMEM_JWT_JWKS": "https://idp.example/.well-known/jwks.json",
    "EVOMEM_JWT_NAME_CLAIM": "email",
    "EVOMEM_JWT_ROLE_CLAIM": "team_role",
    "EVOMEM_JWT_NAMESPACES_CLAIM": "spaces",
}


def test_every_setting_has_an_env_variable() -> None:
    assert env_names() == set(EMBEDDED_ENV) | set(SERVICE_ENV)
    s = Settings.from_env(EMBEDDED_ENV)
    assert s == Settings(
        db="/data/e.db",
        transport="http",
        host="0.0.0.0",
        port=9000,
        answer_note_chars=500,
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
        offer_candidates=False,
        offer_min_p=0.4,
        recall_hints=False,
        hint_min_p=0.95,
        linker_cross_encoder=True,
    )
    assert (s.linker.offer_min_p, s.linker.recall_hints, s.linker.hint_min_p) == (0.4, False, 0.95)
    assert Settings().linker.offer_min_p is None and Settings().linker.recall_hints is True
    assert s.linker.offer_candidates is False and Settings().linker.offer_candidates is True
    assert s.linker.cross_encoder is True and Settings().linker.cross_encoder is False
    assert (s.store.db, s.mcp.transport, s.mcp.port, s.linker.model, s.linker.timeout_s) == (
        "/data/e.db",
        "http",
        9000,
        "tiny",
        3,
    )


def test_the_database_password_comes_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "db-password"
    secret.write_text("p@ss:w/rd\n", encoding="utf-8")
    s = Settings(database_url="postgresql://evomem@db:5432/evomem", database_password_file=str(secret))
    assert s.database_url() == "postgresql://evomem:p%40ss%3Aw%2Frd@db:5432/evomem"
    with pytest.raises(SettingsError, match="with a user and no password"):
        Settings(database_url="postgresql://evomem:x@db/evomem", database_password_file=str(secret)).database_url()
    with pytest.raises(SettingsError, match="cannot read a password"):
        Settings(database_url="postgresql://evomem@db/evomem", database_password_file="/nonexistent").database_url()


def test_every_service_setting_has_an_env_variable() -> None:
    s = Settings.from_env(SERVICE_ENV)
    assert (s.store.sqlite_driver, s.vectors.model_dir) == ("sqlite3", "/models/minilm")
    assert (s.vectors.embedder, Settings().vectors.embedder) == ("static", "minilm")
    assert (s.store.word_index, Settings().store.word_index) == ("tantivy", "auto")
    assert (s.store.tantivy_from, Settings().store.tantivy_from) == (50_000, TANTIVY_FROM)
    assert (s.vectors.search, Settings().vectors.search) == ("hnsw", "auto")
    assert (s.vectors.hnsw_from, Settings().vectors.hnsw_from) == (20_000, HNSW_FROM)
    assert s.store.database_url is not None and "pg-secret" in s.store.database_url.get_secret_value()
    assert Settings().database_url() is None
    assert (s.store.database_role, s.store.database_pool) == ("evomem_rw", 16)
    assert s.store.database_password_file == "/run/secrets/db-password"
    assert "pg-secret" not in repr(s)  # the URL's password never shows
    assert (s.linker.service, s.api_key(), s.cronista.backend) == ("scored", "sk-secret", "triton")
    t = s.triton
    assert (s.cronista.model_dir, t.url, t.model, t.model_version) == (
        "/models/cronista",
        "triton:8001",
        "cronista-b",
        "3",
    )
    assert (t.timeout_ms, t.retries, t.retry_after_s) == (750, 4, 9)
    assert (s.vectors.backend, t.embedding_model) == ("triton", "minilm")
    assert (s.addresses.storage, s.addresses.cronista, s.addresses.linker) == (
        "storage:50051",
        "cronista:50052",
        "linker:50053",
    )
    assert (s.grpc.host, s.grpc.port, s.gateway.workers, s.gateway.access_log) == ("127.0.0.1", 50099, 4, True)
    q = s.queue
    assert (q.redis_url, q.job_visibility_ms, q.job_max_attempts) == ("redis://redis:6379/0", 1000, 2)
    assert (q.sweep_interval_s, q.sweep_batch, q.worker_batch, q.worker_consumer) == (3, 50, 7, "w-1")
    assert (s.metrics.port, s.metrics.host, s.metrics.token_file, s.metrics.insecure) == (
        9464,
        "0.0.0.0",
        "/run/secrets/evomem-metrics",
        False,
    )
    assert s.metrics_token() == "scrape-token"  # the value wins over the file, as for the gRPC secret
    a = s.auth
    assert (a.file, a.insecure_no_auth, a.resource_url, a.issuer_url) == (
        "/run/secrets/evomem-tokens",
        False,
        "https://memory.example.com/mcp",
        "https://login.example.com",
    )
    assert (a.allowed_hosts, a.allowed_origins, a.rate_redis_url, a.grpc_insecure) == (
        "memory.example.com,gateway:*",
        "https://memory.example.com",
        "redis://redis:6379/1",
        False,
    )
    assert s.grpc_secret() == "grpc-secret" and a.grpc_secret_file == "/run/secrets/evomem-grpc"
    assert (a.jwt_issuer, a.jwt_audience, a.jwt_jwks) == (
        "https://idp.example",
        "evomem",
        "https://idp.example/.well-known/jwks.json",
    )
    assert (a.grpc_tls_ca, a.grpc_tls_cert, a.grpc_tls_key) == ("/tls/ca.pem", "/tls/cert.pem", "/tls/key.pem")
    assert (a.jwt_name_claim, a.jwt_role_claim, a.jwt_namespaces_claim) == ("email", "team_role", "spaces")
    assert "grpc-secret" not in repr(s)
    assert "sk-secret" not in repr(s) and "sk-secret" not in str(s.model_dump())  # the key never shows


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("EVOMEM_JOB_VISIBILITY_MS", "0"),
        ("EVOMEM_JOB_MAX_ATTEMPTS", "-1"),
        ("EVOMEM_SWEEP_INTERVAL_S", "0"),
        ("EVOMEM_SWEEP_BATCH", "0"),
        ("EVOMEM_WORKER_BATCH", "0"),
        ("EVOMEM_GATEWAY_WORKERS", "0"),
    ],
)
def test_worker_counts_must_be_positive(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=rf"^{name} must be between 1 and"):
        Settings.from_env({name: value})


@pytest.mark.parametrize(
    ("name", "value", "bounds"),
    [
        ("EVOMEM_TRITON_TIMEOUT_MS", "0", "between 1 and 600000"),
        ("EVOMEM_TRITON_RETRIES", "11", "between 0 and 10"),
        ("EVOMEM_TRITON_RETRY_AFTER_S", "-1", "between 0 and 3600"),
    ],
)
def test_triton_limits_name_the_variable_and_the_bounds(name: str, value: str, bounds: str) -> None:
    with pytest.raises(SettingsError, match=rf"^{name} must be {bounds}, got {value}$"):
        Settings.from_env({name: value})


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("EVOMEM_AUTO_SUPERSEDE", "off, heuristic, scored, pair, llm"),
        ("EVOMEM_LINKER", "off, heuristic, scored, pair, llm"),
        ("EVOMEM_VECTORS", "auto, on, off"),
        ("EVOMEM_TRANSPORT", "stdio, http"),
        ("EVOMEM_LINKER_STRUCTURED", "grammar, json_schema, none"),
        ("EVOMEM_CRONISTA_BACKEND", "lite, onnx, triton"),
        ("EVOMEM_EMBEDDING_BACKEND", "onnx, triton"),
        ("EVOMEM_EMBEDDER", "minilm, static"),
        ("EVOMEM_SQLITE_DRIVER", "sqlean, sqlite3"),
        ("EVOMEM_LOG_FORMAT", "text, json"),
    ],
)
def test_a_misspelt_choice_names_the_variable_and_the_allowed_values(name: str, allowed: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({name: "scroed"})
    assert str(caught.value) == f"{name} must be one of {allowed}, got 'scroed'"


def test_an_unknown_setting_is_refused() -> None:
    with pytest.raises(SettingsError, match="unknown setting 'auto_supercede'"):
        Settings(auto_supercede="scored")


def test_flag_beats_env_beats_default() -> None:
    env = {"EVOMEM_PORT": "9000", "EVOMEM_AUTO_SUPERSEDE": "heuristic", "EVOMEM_DB": "/env/e.db"}
    assert Settings.from_env({}).mcp.port == 8765  # default
    assert Settings.from_env(env).mcp.port == 9000  # env over default
    assert Settings.from_env(env, port=9100).mcp.port == 9100  # flag over env
    assert Settings.from_env(env, port=0).mcp.port == 0  # a falsy flag still wins
    assert Settings.from_env(env, port=None).mcp.port == 9000  # an absent flag does not
    assert Settings.from_env({**env, "EVOMEM_HOST": "::"}, port=1).mcp.host == "::"  # same section, other key
    s = Settings.from_env(env, auto_supersede="off", db="/flag/e.db")
    assert (s.linker.auto_supersede, s.store.db) == ("off", "/flag/e.db")


def test_empty_env_value_means_unset() -> None:
    s = Settings.from_env({"EVOMEM_PORT": "", "EVOMEM_TRANSPORT": "", "EVOMEM_DB": ""})
    assert (s.mcp.port, s.mcp.transport, s.store.db) == (8765, "stdio", None)
    assert s.db_path().endswith("evomem.db")


def test_from_env_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOMEM_NAMESPACE", "from-env")
    monkeypatch.setenv("EVOMEM_PORT", "9001")
    assert Settings.from_env().memory.namespace == "from-env"
    # The command line parses flags over the same environment.
    s = cli.settings_from_args(["--port", "9002", "--db", "/flag/e.db"])
    assert (s.mcp.port, s.memory.namespace, s.store.db) == (9002, "from-env", "/flag/e.db")
    assert cli.settings_from_args([]).mcp.port == 9001


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
    assert db == env_db.name  # the file's name only: clients are not told the server's directories
    assert namespaces == {"from-env": 1}
    assert env_db.exists()

    db, namespaces = anyio.run(server_db, ["--db", str(flag_db), "--namespace", "from-flag"])
    assert db == flag_db.name
    assert namespaces == {"from-flag": 1}


# ---------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("EVOMEM_PORT", "abc", "EVOMEM_PORT must be an integer, got 'abc'"),
        ("EVOMEM_PORT", "70000", "EVOMEM_PORT must be 0-65535, got 70000"),
        ("EVOMEM_PORT", "-1", "EVOMEM_PORT must be 0-65535"),
        ("EVOMEM_MAX_NOTE_BYTES", "1MB", "EVOMEM_MAX_NOTE_BYTES must be an integer"),
        ("EVOMEM_MAX_NOTE_BYTES", "0", "EVOMEM_MAX_NOTE_BYTES must be between 1 and 67108864"),
        ("EVOMEM_ANSWER_NOTE_CHARS", "10", "EVOMEM_ANSWER_NOTE_CHARS must be between 100 and 100000, got 10"),
        ("EVOMEM_TRANSPORT", "nope", "EVOMEM_TRANSPORT must be one of stdio, http, got 'nope'"),
        ("EVOMEM_TRANSPORT", "sse", "EVOMEM_TRANSPORT must be one of stdio, http"),
        ("EVOMEM_AUTO_SUPERSEDE", "maybe", "EVOMEM_AUTO_SUPERSEDE must be one of off, heuristic, scored, pair, llm"),
        ("EVOMEM_LOG_LEVEL", "LOUD", "EVOMEM_LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        ("EVOMEM_LOG_FORMAT", "xml", "EVOMEM_LOG_FORMAT must be one of text, json, got 'xml'"),
        ("EVOMEM_JOB_VISIBILITY_MS", "soon", "EVOMEM_JOB_VISIBILITY_MS must be an integer, got 'soon'"),
        ("EVOMEM_ACCESS_LOG", "loud", "EVOMEM_ACCESS_LOG must be true or false, got 'loud'"),
    ],
)
def test_bad_env_value_is_a_clear_settings_error(name: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({name: value})
    assert expected in str(caught.value)


def test_bad_flag_value_is_a_settings_error_without_env_name() -> None:
    with pytest.raises(SettingsError, match=r"^port must be 0-65535, got 70001$"):
        Settings.from_env({"EVOMEM_PORT": "70000"}, port=70001)  # the flag is the bad one
    with pytest.raises(SettingsError, match=r"^EVOMEM_LOG_LEVEL must be one of"):
        Settings.from_env({"EVOMEM_LOG_LEVEL": "LOUD"}, port=1)  # a good flag, a bad env value


def test_lowercase_log_level_is_accepted() -> None:
    assert Settings.from_env({"EVOMEM_LOG_LEVEL": "debug"}).logging.level == "debug"


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


def test_the_llm_linker_needs_a_model_and_an_endpoint(tmp_path: Path, server_env: dict[str, str]) -> None:
    from evomem.bootstrap.embedded import build_embedded
    from evomem.bootstrap.linkers import linker_for

    with pytest.raises(SettingsError, match="linker-model"):
        build_embedded(Settings(auto_supersede="llm", db=str(tmp_path / "x.db")))
    assert not (tmp_path / "x.db").exists()  # refused before the database is opened
    result = run_cli(["--auto-supersede", "llm", "--db", str(tmp_path / "y.db")], server_env)
    assert result.returncode == 2
    assert "evomem-mcp: auto_supersede llm needs --linker-model and --linker-base-url" in result.stderr
    s = Settings(auto_supersede="llm", linker_model="m", linker_base_url="http://127.0.0.1:1/v1")
    linker = linker_for("llm", s)
    assert linker is not None and "llm" in linker.name
