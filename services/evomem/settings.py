"""Settings: one validated object for every wiring, from flags and ``EVOMEM_*`` environment variables.

Precedence: flag > environment > default. The object has one section per concern (``mcp``,
``memory``, ``store``, ``vectors``, ``linker``, ``cronista``, ``triton``, ``addresses``, ``grpc``,
``gateway``, ``queue``, ``metrics``, ``logging``, ``auth``); each leaf names its variable (its
``alias``), so ``env_names()`` lists every variable any EvoMem process reads. A value that
is not allowed (``EVOMEM_AUTO_SUPERSEDE=scroed``) fails at start-up with the variable's name
and the allowed values. This is the only module that reads the environment.

A setting whose default depends on the wiring (the database path, the HTTP bind address,
the log format, the gRPC port) is ``None`` here and resolved by ``evomem.bootstrap``.

Flat keywords are accepted too: ``Settings(db=..., auto_supersede=...)`` and
``Settings.from_env(env, port=...)`` take each setting by its variable's name without the
``EVOMEM_`` prefix, lowercased (what the ``evomem-mcp`` flags are called).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, ValidationError

from evomem.domain.text import DEFAULT_MAX_NOTE_BYTES

AUTO_SUPERSEDE = ("off", "heuristic", "scored", "pair", "llm")
TRANSPORTS = ("stdio", "http")
VECTORS = ("auto", "on", "off")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")
LINKER_STRUCTURED = ("grammar", "json_schema", "none")
CRONISTA_BACKENDS = ("lite", "onnx", "triton")
EMBEDDING_BACKENDS = ("onnx", "triton")
EMBEDDERS = ("minilm", "static")
SQLITE_DRIVERS = ("sqlean", "sqlite3")
WORD_INDEXES = ("auto", "fts5", "tantivy")
#: ``EVOMEM_WORD_INDEX=auto``: Tantivy from this many notes in the store at open (docs/BENCHMARKS.md
#: "The automatic word index": where Tantivy's recall and remember beat FTS5's clearly).
TANTIVY_FROM = 10_000
VECTOR_SEARCHES = ("auto", "scan", "hnsw")
HNSW_FROM = 20_000  #: EVOMEM_HNSW_FROM: graph.HNSW_FROM (a test keeps them equal; profile.md "speed19")
PREFIX = "EVOMEM_"

#: The embedded server's database when none is given.
EMBEDDED_DB = "~/.evomem/evomem.db"


class SettingsError(ValueError):
    """A setting that is missing or not allowed. The message names what to fix."""


# ----------------------------------------------------------------------------- value checks


def _one_of(*allowed: str, case_insensitive: bool = False) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is None:
            return value
        probe = value.upper() if case_insensitive else value
        if probe not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, got {value!r}")
        return value

    return check


def _between(low: int, high: int, *, dash: bool = False) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is not None and not low <= value <= high:
            span = f"{low}-{high}" if dash else f"between {low} and {high}"
            raise ValueError(f"must be {span}, got {value}")
        return value

    return check


def _choice(*allowed: str, case_insensitive: bool = False) -> Any:
    return Annotated[str, AfterValidator(_one_of(*allowed, case_insensitive=case_insensitive))]


Port = Annotated[int, AfterValidator(_between(0, 65535, dash=True))]
Positive = Annotated[int, AfterValidator(_between(1, 2**31 - 1))]


def _var(name: str, default: Any = None, help: str = "", choices: tuple[str, ...] | None = None) -> Any:
    """A leaf setting read from ``EVOMEM_<NAME>`` (``choices``: shown by ``--help``)."""
    extra = {"choices": list(choices)} if choices else None
    return Field(default, alias=PREFIX + name, description=help, json_schema_extra=extra)


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")


# ----------------------------------------------------------------------------- sections


class McpSettings(_Section):
    """The MCP endpoint (embedded server and gateway)."""

    transport: _choice(*TRANSPORTS) = _var(
        "TRANSPORT", "stdio", "embedded: stdio or http (streamable HTTP)", TRANSPORTS
    )
    host: str | None = _var("HOST", None, "HTTP bind address (default 127.0.0.1; containers: 0.0.0.0)")
    port: Port = _var("PORT", 8765, "HTTP port (0 picks a free one)")
    answer_note_chars: Annotated[int, AfterValidator(_between(100, 100_000))] = _var(
        "ANSWER_NOTE_CHARS", 2000, "longest note text a tool answer shows; get_node(full_text=true) pages the rest"
    )


class MemorySettings(_Section):
    """What ``MemoryService`` applies to every call."""

    namespace: str = _var("NAMESPACE", "default", "namespace for calls that name none")
    author: str | None = _var("AUTHOR", None, "author recorded on notes and links")
    max_note_bytes: Annotated[int, AfterValidator(_between(1, 64 * 1024 * 1024))] = _var(
        "MAX_NOTE_BYTES", DEFAULT_MAX_NOTE_BYTES, "largest note accepted, in UTF-8 bytes"
    )
    dedupe_window_s: Annotated[int, AfterValidator(_between(0, 86_400))] = _var(
        "DEDUPE_WINDOW_S", 120, "remember without a key: an identical active note this recent is returned, not copied"
    )


class StoreSettings(_Section):
    db: str | None = _var("DB", None, "SQLite file (embedded: ~/.evomem/evomem.db, storage: /data/evomem.db)")
    database_url: SecretStr | None = _var(
        "DATABASE_URL",
        None,
        "postgresql://USER:PASSWORD@HOST:PORT/DB: PostgreSQL with pgvector instead of the SQLite file (a team store)",
    )
    database_password_file: str | None = _var(
        "DATABASE_PASSWORD_FILE",
        None,
        "PostgreSQL: a file whose first line is the password, for a URL without one (a Compose or Kubernetes secret)",
    )
    database_role: str = _var(
        "DATABASE_ROLE", "evomem_app", "PostgreSQL: the role the store's connections run as (owns no table; RLS)"
    )
    database_pool: Annotated[int, AfterValidator(_between(1, 200))] = _var(
        "DATABASE_POOL", 8, "PostgreSQL: connections each process keeps at most"
    )
    sqlite_driver: _choice(*SQLITE_DRIVERS) | None = _var(
        "SQLITE_DRIVER", None, "force the SQLite library: sqlean or sqlite3 (default: sqlean when installed)"
    )
    purge_retry_s: Annotated[int, AfterValidator(_between(1, 3600))] = _var(
        "PURGE_RETRY_S", 2, "a purge a reader kept from the file: seconds between retries of the checkpoint"
    )
    word_index: _choice(*WORD_INDEXES) = _var(
        "WORD_INDEX",
        "auto",
        "the SQLite store's word index: auto (tantivy when the store holds EVOMEM_TANTIVY_FROM notes at open, "
        "else fts5), fts5 (in the file) or tantivy (a folder beside it, <db>.words)",
        WORD_INDEXES,
    )
    tantivy_from: Annotated[int, AfterValidator(_between(0, 2**62))] = _var(
        "TANTIVY_FROM",
        TANTIVY_FROM,
        "EVOMEM_WORD_INDEX=auto: the store's notes at open from which its word index is Tantivy (FTS5 below)",
    )


class VectorSettings(_Section):
    mode: _choice(*VECTORS) = _var("VECTORS", "auto", "hybrid recall: auto, on or off (BM25 only)", VECTORS)
    backend: _choice(*EMBEDDING_BACKENDS) = _var(
        "EMBEDDING_BACKEND",
        "onnx",
        "where storage embeds: onnx (in process) or triton (EVOMEM_TRITON_URL; in process when Triton cannot answer)",
        EMBEDDING_BACKENDS,
    )
    embedder: _choice(*EMBEDDERS) = _var(
        "EMBEDDER",
        "minilm",
        "the embedding model: minilm (all-MiniLM-L6-v2, int8 ONNX) or static (a token table distilled from it,"
        " numpy only; SQLite store, onnx backend)",
        EMBEDDERS,
    )
    search: _choice(*VECTOR_SEARCHES) = _var("VECTOR_SEARCH", "auto", "vector search: auto|scan|hnsw", VECTOR_SEARCHES)
    hnsw_from: Annotated[int, AfterValidator(_between(0, 2**62))] = _var(
        "HNSW_FROM", HNSW_FROM, "EVOMEM_VECTOR_SEARCH=auto: the vectors from which a namespace is searched by HNSW"
    )
    model_dir: str | None = _var(
        "EMBEDDING_MODEL_DIR",
        None,
        "a folder with model.onnx and tokenizer.json (static: model.safetensors, tokenizer.json, pins.json)"
        " instead of the packaged model",
    )


class LinkerSettings(_Section):
    auto_supersede: _choice(*AUTO_SUPERSEDE) = _var(
        "AUTO_SUPERSEDE", "off", "link notes to the decision they replace", AUTO_SUPERSEDE
    )
    service: _choice(*AUTO_SUPERSEDE) = _var("LINKER", "heuristic", "the linker service's linker")
    offer_candidates: bool = _var(
        "OFFER_CANDIDATES",
        True,
        "with auto_supersede off, remember lists up to 3 likely predecessors (the pair linker, no LLM)",
    )
    offer_min_p: Annotated[float | None, AfterValidator(_between(0, 1))] = _var(
        "OFFER_MIN_P",
        None,
        "the probability (calibrated) from which remember offers a predecessor (default: the pair model's, "
        "chosen on development data)",
    )
    recall_hints: bool = _var(
        "RECALL_HINTS", True, "recall marks a hit a newer note may replace (maybe_replaced_by), above hint_min_p"
    )
    hint_min_p: Annotated[float | None, AfterValidator(_between(0, 1))] = _var(
        "HINT_MIN_P",
        None,
        "the probability from which recall shows maybe_replaced_by (default: the pair model's hint_at, and its "
        "hint_at_shown for a successor that is itself a result)",
    )
    cross_encoder: bool = _var(
        "LINKER_CROSS_ENCODER",
        False,
        "pair and llm linkers: a cross-encoder (onnx, in process) reads the candidates the pair model is unsure of",
    )
    model: str | None = _var("LINKER_MODEL", None, "llm linker: the model name at the endpoint")
    base_url: str | None = _var("LINKER_BASE_URL", None, "llm linker: OpenAI-compatible base URL")
    api_key: SecretStr | None = _var("LINKER_API_KEY", None, "llm linker: bearer token, if the endpoint needs one")
    timeout_s: Annotated[int, AfterValidator(_between(1, 600))] = _var(
        "LINKER_TIMEOUT_S", 10, "llm linker: seconds per call"
    )
    structured: _choice(*LINKER_STRUCTURED) = _var(
        "LINKER_STRUCTURED", "grammar", "llm linker: grammar (llama.cpp), json_schema or none", LINKER_STRUCTURED
    )


class CronistaSettings(_Section):
    backend: _choice(*CRONISTA_BACKENDS) = _var(
        "CRONISTA_BACKEND", "lite", "the cronista's extractor: lite, onnx (in process) or triton", CRONISTA_BACKENDS
    )
    model_dir: str | None = _var(
        "CRONISTA_MODEL_DIR", None, "the cronista model folder (tokenizer.json, pins.json) instead of the packaged one"
    )


class TritonSettings(_Section):
    """The Triton Inference Server the ``triton`` cronista (and embedding) backends call (gRPC)."""

    url: str | None = _var("TRITON_URL", None, "Triton's gRPC address host:port (the triton backends)")
    model: str = _var("TRITON_MODEL", "cronista", "the cronista model's name in Triton's model repository")
    embedding_model: str = _var(
        "TRITON_EMBEDDING_MODEL", "embedding", "the embedding model's name in Triton's model repository"
    )
    model_version: str = _var("TRITON_MODEL_VERSION", "", "the model version to call (empty: the server's latest)")
    timeout_ms: Annotated[int, AfterValidator(_between(1, 600_000))] = _var(
        "TRITON_TIMEOUT_MS", 2000, "deadline of one extraction on Triton, retries included; then lite"
    )
    retries: Annotated[int, AfterValidator(_between(0, 10))] = _var(
        "TRITON_RETRIES", 2, "retries (exponential backoff) of a call Triton could not answer"
    )
    retry_after_s: Annotated[int, AfterValidator(_between(0, 3600))] = _var(
        "TRITON_RETRY_AFTER_S", 5, "after a failure, seconds of lite-only extraction before Triton is tried again"
    )


class AddressSettings(_Section):
    """Where the services are (host:port), for the processes that call them."""

    storage: str | None = _var("STORAGE_ADDR", None, "storage service (gateway, worker, linker)")
    cronista: str | None = _var("CRONISTA_ADDR", None, "cronista service (worker)")
    linker: str | None = _var("LINKER_ADDR", None, "linker service (gateway, when auto_supersede is not off)")


class GrpcSettings(_Section):
    host: str = _var("GRPC_HOST", "127.0.0.1", "gRPC bind address of a service (containers: 0.0.0.0)")
    port: Port | None = _var("GRPC_PORT", None, "gRPC port (storage 50051, cronista 50052, linker 50053)")


class GatewaySettings(_Section):
    workers: Positive = _var("GATEWAY_WORKERS", 2, "gunicorn worker processes")
    access_log: bool = _var("ACCESS_LOG", False, "gunicorn access log on stdout")


class QueueSettings(_Section):
    redis_url: str | None = _var("REDIS_URL", None, "Redis for the extraction queue (gateway, worker)")
    job_visibility_ms: Positive = _var("JOB_VISIBILITY_MS", 30_000, "a job not acknowledged in this time is retried")
    job_max_attempts: Positive = _var("JOB_MAX_ATTEMPTS", 5, "attempts before a job is dead-lettered")
    sweep_interval_s: Positive = _var("SWEEP_INTERVAL_S", 10, "seconds between sweeps for pending nodes")
    sweep_batch: Positive = _var("SWEEP_BATCH", 1000, "pending nodes listed per sweep")
    worker_batch: Positive = _var("WORKER_BATCH", 10, "jobs read per call")
    worker_consumer: str = _var("WORKER_CONSUMER", "", "consumer name (default: hostname-pid)")


class MetricsSettings(_Section):
    port: Port = _var("METRICS_PORT", 0, "Prometheus /metrics port of a service (0: off)")
    host: str = _var("METRICS_HOST", "127.0.0.1", "bind address of /metrics (containers: 0.0.0.0)")
    token: SecretStr | None = _var("METRICS_TOKEN", None, "bearer token /metrics demands (a scraper sends it)")
    token_file: str | None = _var("METRICS_TOKEN_FILE", None, "file holding the /metrics bearer token")
    insecure: bool = _var(
        "METRICS_INSECURE", False, "allow /metrics on a non-loopback address without a token (warns at every start)"
    )


class AuthSettings(_Section):
    """Who may call the HTTP transports (embedded HTTP and gateway) and the gRPC services."""

    file: str | None = _var("AUTH_FILE", None, "TOML token file: [[tokens]] name, sha256, role, namespaces, rate")
    insecure_no_auth: bool = _var(
        "INSECURE_NO_AUTH", False, "allow HTTP on a non-loopback address without tokens (warns at every start)"
    )
    resource_url: str | None = _var(
        "RESOURCE_URL", None, "public URL of the MCP endpoint (protected-resource metadata; default: the bind URL)"
    )
    issuer_url: str | None = _var(
        "AUTH_ISSUER_URL", None, "authorization server named in the metadata (default: the resource URL's origin)"
    )
    allowed_hosts: str | None = _var(
        "ALLOWED_HOSTS", None, "comma-separated Host headers accepted besides loopback (host:port or host:*)"
    )
    allowed_origins: str | None = _var(
        "ALLOWED_ORIGINS", None, "comma-separated Origin headers accepted besides loopback (http://host:*)"
    )
    rate_redis_url: str | None = _var(
        "RATE_REDIS_URL", None, "Redis for per-token rate limits (gateway default: EVOMEM_REDIS_URL; else in-process)"
    )
    grpc_secret: SecretStr | None = _var("GRPC_SECRET", None, "shared secret every gRPC call carries (metadata)")
    grpc_secret_file: str | None = _var("GRPC_SECRET_FILE", None, "file holding the gRPC shared secret")
    grpc_tls_ca: str | None = _var("GRPC_TLS_CA", None, "mutual TLS between services: the CA (PEM) signing every peer")
    grpc_tls_cert: str | None = _var("GRPC_TLS_CERT", None, "mutual TLS: this process's certificate chain (PEM)")
    grpc_tls_key: str | None = _var("GRPC_TLS_KEY", None, "mutual TLS: this process's private key (PEM)")
    grpc_insecure: bool = _var(
        "GRPC_INSECURE", False, "allow a gRPC service on a non-loopback address without a secret (warns)"
    )
    jwt_issuer: str | None = _var("JWT_ISSUER", None, "accept JWTs from this issuer (iss), with _AUDIENCE and _JWKS")
    jwt_audience: str | None = _var("JWT_AUDIENCE", None, "the audience (aud) JWTs must name")
    jwt_jwks: str | None = _var("JWT_JWKS", None, "the issuer's keys: a JWKS URL or a JSON file")
    jwt_name_claim: str = _var("JWT_NAME_CLAIM", "sub", "JWT claim holding the identity")
    jwt_role_claim: str = _var("JWT_ROLE_CLAIM", "evomem_role", "JWT claim holding the role (reader, writer, admin)")
    jwt_namespaces_claim: str = _var(
        "JWT_NAMESPACES_CLAIM", "evomem_namespaces", "JWT claim holding the namespaces (a list, or space-separated)"
    )


class LoggingSettings(_Section):
    level: _choice(*LOG_LEVELS, case_insensitive=True) = _var("LOG_LEVEL", "INFO", "DEBUG, INFO, WARNING or ERROR")
    format: _choice(*LOG_FORMATS) | None = _var(
        "LOG_FORMAT", None, "text or json (embedded: text, services: json)", LOG_FORMATS
    )


# ----------------------------------------------------------------------------- the object

_ENV: ContextVar[Mapping[str, str] | None] = ContextVar("evomem_settings_env", default=None)


def _env_values() -> dict[str, dict[str, str]]:
    """``EVOMEM_*`` variables (an empty value means unset), nested into their sections: from
    the mapping ``from_env`` was given, else the process environment."""
    env = _ENV.get()
    if env is None:
        env = os.environ
    out: dict[str, dict[str, str]] = {}
    for section, name, var in _leaves():
        raw = env.get(var)
        if raw is not None and raw != "":
            out.setdefault(section, {})[name] = raw
    return out


class Settings(BaseModel):
    """Every setting of every wiring. Build it with ``Settings.from_env(**flags)``.

    A plain pydantic model: the environment is read by ``_env_values`` (below the given values,
    section by section), not by pydantic-settings, whose import cost every start (about 25 ms)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mcp: McpSettings = McpSettings()
    memory: MemorySettings = MemorySettings()
    store: StoreSettings = StoreSettings()
    vectors: VectorSettings = VectorSettings()
    linker: LinkerSettings = LinkerSettings()
    cronista: CronistaSettings = CronistaSettings()
    triton: TritonSettings = TritonSettings()
    addresses: AddressSettings = AddressSettings()
    grpc: GrpcSettings = GrpcSettings()
    gateway: GatewaySettings = GatewaySettings()
    queue: QueueSettings = QueueSettings()
    metrics: MetricsSettings = MetricsSettings()
    logging: LoggingSettings = LoggingSettings()
    auth: AuthSettings = AuthSettings()

    SECTIONS: ClassVar[tuple[str, ...]] = ()  # the field names above, set below

    def __init__(self, **values: Any) -> None:
        # A section is given as a mapping or a model; ``vectors`` and ``linker`` are also the
        # flat keys of EVOMEM_VECTORS and EVOMEM_LINKER, given as plain values.
        def is_section(k: str, v: Any) -> bool:
            return k in self.SECTIONS and isinstance(v, Mapping | BaseModel)

        flags = {k: v for k, v in values.items() if not is_section(k, v)}
        nested: dict[str, Any] = {
            k: v.model_dump() if isinstance(v, BaseModel) else dict(v) for k, v in values.items() if is_section(k, v)
        }
        by_key = {_key(var): (section, name) for section, name, var in _leaves()}
        for key, value in flags.items():
            if key not in by_key:
                raise SettingsError(f"unknown setting {key!r}")
            section, name = by_key[key]
            nested.setdefault(section, {})[name] = value
        for section, from_env in _env_values().items():  # flag or given value > environment > default
            nested[section] = {**from_env, **nested.get(section, {})}
        try:
            super().__init__(**nested)
        except ValidationError as exc:
            raise SettingsError(_explain(exc, given=set(flags))) from None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **flags: Any) -> Settings:
        """``EVOMEM_*`` from ``env`` (default: the process environment), then the non-None ``flags``."""
        token = _ENV.set(env)
        try:
            return cls(**{k: v for k, v in flags.items() if v is not None})
        finally:
            _ENV.reset(token)

    # -- values that depend on the wiring, and checks a wiring needs

    def db_path(self, default: str = EMBEDDED_DB) -> str:
        return str(Path(self.store.db or default).expanduser())

    def database_url(self) -> str | None:
        """The PostgreSQL URL (None: the SQLite file), with the password of
        EVOMEM_DATABASE_PASSWORD_FILE when the URL has none."""
        raw = self.store.database_url
        url = raw.get_secret_value() if raw is not None and raw.get_secret_value() else None
        if url is None or not self.store.database_password_file:
            return url
        from urllib.parse import quote, urlsplit

        where = self.store.database_password_file
        try:
            password = Path(where).expanduser().read_text(encoding="utf-8").splitlines()[0].strip()
        except (OSError, IndexError) as exc:
            raise SettingsError(f"EVOMEM_DATABASE_PASSWORD_FILE: cannot read a password from {where}: {exc}") from None
        parts = urlsplit(url)
        if parts.password is not None or "@" not in parts.netloc:
            raise SettingsError(
                "EVOMEM_DATABASE_PASSWORD_FILE needs EVOMEM_DATABASE_URL with a user and no password "
                "(postgresql://USER@HOST:PORT/DB)"
            )
        user, host = parts.netloc.rsplit("@", 1)
        return parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}").geturl()

    def log_format(self, default: str) -> str:
        return self.logging.format or default

    def require(self, section: str, name: str) -> str:
        """A setting a wiring cannot run without: its value, or a ``SettingsError`` naming the variable."""
        value = getattr(getattr(self, section), name)
        if value is None or value == "":
            raise SettingsError(f"{var_name(section, name)} must be set (see compose.cpu.yaml for an example)")
        return str(value)

    def require_llm(self, what: str) -> tuple[str, str]:
        """The llm linker's model and endpoint, or a ``SettingsError`` that says how to set them."""
        if not (self.linker.model and self.linker.base_url):
            raise SettingsError(
                f"{what} llm needs --linker-model and --linker-base-url (or EVOMEM_LINKER_MODEL and "
                "EVOMEM_LINKER_BASE_URL); the API key, if any, comes from EVOMEM_LINKER_API_KEY"
            )
        return self.linker.model, self.linker.base_url

    def api_key(self) -> str | None:
        return self.linker.api_key.get_secret_value() if self.linker.api_key else None

    def grpc_secret(self) -> str | None:
        """The gRPC shared secret: EVOMEM_GRPC_SECRET, else the first line of EVOMEM_GRPC_SECRET_FILE."""
        return _secret(self.auth.grpc_secret, self.auth.grpc_secret_file, "EVOMEM_GRPC_SECRET_FILE")

    def metrics_token(self) -> str | None:
        """The token /metrics demands: EVOMEM_METRICS_TOKEN, else the first line of EVOMEM_METRICS_TOKEN_FILE."""
        return _secret(self.metrics.token, self.metrics.token_file, "EVOMEM_METRICS_TOKEN_FILE")


def _secret(value: SecretStr | None, file: str | None, name: str) -> str | None:
    """A secret given as a value, else the first line of its file (an unreadable or empty file is an error)."""
    if value is not None and value.get_secret_value():
        return value.get_secret_value()
    if file:
        try:
            text = Path(file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SettingsError(f"{name}: cannot read {file}: {exc}") from None
        if not text:
            raise SettingsError(f"{name}: {file} is empty")
        return text.splitlines()[0].strip()
    return None


Settings.SECTIONS = tuple(Settings.model_fields)


def _leaves() -> Iterator[tuple[str, str, str]]:
    """(section, field, variable) for every leaf setting."""
    for section in Settings.SECTIONS:
        model = Settings.model_fields[section].annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        for name, info in model.model_fields.items():
            assert info.alias is not None
            yield section, name, info.alias


def _key(var: str) -> str:
    return var.removeprefix(PREFIX).lower()


def var_name(section: str, name: str) -> str:
    """The ``EVOMEM_*`` variable of ``settings.<section>.<name>``."""
    info = Settings.model_fields[section].annotation.model_fields[name]  # type: ignore[union-attr]
    assert info.alias is not None
    return info.alias


def env_names() -> frozenset[str]:
    """Every ``EVOMEM_*`` variable the settings model reads."""
    return frozenset(var for _, _, var in _leaves())


def describe() -> list[tuple[str, str, Any, str]]:
    """(variable, section.field, default, help) for every setting, in section order (for docs)."""
    out = []
    for section, name, var in _leaves():
        info = Settings.model_fields[section].annotation.model_fields[name]  # type: ignore[union-attr]
        out.append((var, f"{section}.{name}", info.default, info.description or ""))
    return out


def _explain(exc: ValidationError, *, given: set[str]) -> str:
    """The first problem, as one line: ``EVOMEM_PORT must be 0-65535, got 70000``.

    A bad value from a flag is named by its setting only (``port must be ...``)."""
    err = exc.errors()[0]
    loc = err["loc"]
    if len(loc) >= 2 and isinstance(loc[0], str) and isinstance(loc[1], str) and loc[0] in Settings.SECTIONS:
        try:
            var = var_name(loc[0], loc[1])
        except KeyError:
            var = PREFIX + str(loc[1]).upper()
    else:
        var = PREFIX + "_".join(str(p) for p in loc).upper()
    key = _key(var)
    from_flag = key in given
    kind = err["type"]
    if kind in ("int_parsing", "int_from_float"):
        return f"{key if from_flag else var} must be an integer, got {err.get('input')!r}"
    if kind == "bool_parsing":
        return f"{key if from_flag else var} must be true or false, got {err.get('input')!r}"
    if kind == "extra_forbidden":
        return f"unknown setting {key!r}"
    message = str(err["msg"]).removeprefix("Value error, ")
    return f"{key if from_flag else var} {message}"


# ----------------------------------------------------------------------------- command-line flags


def add_flags(parser: Any, keys: tuple[str, ...]) -> None:
    """One ``--flag`` per setting in ``keys`` (``auto_supersede`` -> ``--auto-supersede``), with
    the setting's help, choices, variable and default."""
    by_key = {_key(var): (section, name) for section, name, var in _leaves()}
    for key in keys:
        section, name = by_key[key]
        info = Settings.model_fields[section].annotation.model_fields[name]  # type: ignore[union-attr]
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        default = "" if info.default is None else f", default {info.default}"
        parser.add_argument(
            "--" + key.replace("_", "-"),
            dest=key,
            type=int if isinstance(info.default, int) and not isinstance(info.default, bool) else None,
            choices=extra.get("choices"),
            help=f"{info.description} ({info.alias}{default})",
        )


def from_flags(args: Any, keys: tuple[str, ...]) -> Settings:
    """The settings with the parsed ``args`` (flags left out stay unset) over the environment."""
    return Settings.from_env(**{key: getattr(args, key) for key in keys})


def env_only_epilog(names: tuple[str, ...]) -> str:
    """``--help``'s list of the settings ``names`` that have no flag (read from the environment only)."""
    rows = {var: (default, help_) for var, _path, default, help_ in describe()}
    lines = ["settings read from the environment only:"]
    for var in names:
        default, help_ = rows[var]
        lines.append(f"  {var:<28}{help_}" + ("" if default in (None, "") else f" (default {default})"))
    lines += [
        "",
        "Every flag also has its EVOMEM_* variable (shown after each flag); a flag wins over the",
        "environment. Clients launch `evomem-mcp --db PATH` over stdio; README: client set-up.",
    ]
    return "\n".join(lines)
