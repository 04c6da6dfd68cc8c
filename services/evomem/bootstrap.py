"""The composition root: the one place that turns the settings object into a wiring.

Every builder takes one ``Settings`` (``evomem.settings``) and nothing else:

* ``build_embedded``: one process (SQLite in-process, lite cronista inline, the linker of
  ``auto_supersede``, vectors in the same file).
* ``build_gateway``: the same ``MemoryService`` over gRPC clients and the Redis queue.
* ``build_storage``, ``build_cronista``, ``build_linker``: a ``GrpcService`` each (the
  servicer, its health and the process's resources), which the entrypoint starts and stops.
* ``build_worker``: the extraction worker (``evomem.app.jobs``) over the Redis job source.

Nothing connects to anything at import time; a gRPC server binds only in ``GrpcService.start``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService, ServiceConfig
from evomem.app.ports import Embedder, Extractor, Linker, Store, Vectors
from evomem.domain.cronista import LiteCronista
from evomem.domain.errors import Unavailable
from evomem.ops.runtime import GRACE_S, ConfigError, start_metrics
from evomem.settings import Settings, SettingsError

if TYPE_CHECKING:
    from evomem.app.jobs import ExtractionWorker
    from evomem.entrypoints.grpc.server import RunningServer
    from evomem.security.gate import Gate

log = logging.getLogger("evomem.bootstrap")

#: Nearest notes below this cosine similarity are noise for all-MiniLM-L6-v2 (unrelated short
#: sentences score about 0-0.2 against each other); they never enter a recall or a linker.
VECTOR_MIN_SIMILARITY = 0.2


#: The storage service's database when EVOMEM_DB is not set (the image's volume).
STORAGE_DB = "/data/evomem.db"
GRPC_PORTS = {"storage": 50051, "cronista": 50052, "linker": 50053}


def vectors_problem(model_dir: str | None = None) -> str | None:
    """Why hybrid recall cannot run here (None when it can). Cheap: finds files, loads nothing big."""
    from evomem.adapters.models.embedding import INSTALL_HINT, resolve_model_files
    from evomem.adapters.sqlite.driver import vec_problem

    problem = vec_problem()
    if problem is not None:
        return problem
    missing = [m for m in ("numpy", "onnxruntime", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{', '.join(missing)} not installed; " + INSTALL_HINT
    files, looked = resolve_model_files(model_dir)
    if files is None:
        return "no embedding model found (looked at " + "; ".join(looked) + "); " + INSTALL_HINT
    return None


def build_vectors(settings: Settings, store: SQLiteStore) -> Vectors | None:
    """The ``Vectors`` port in the store's own file, per ``settings.vectors``. Loads no model."""
    if settings.vectors.mode == "off":
        return None
    problem = vectors_problem(settings.vectors.model_dir)
    if problem is not None:
        if settings.vectors.mode == "on":
            raise Unavailable(f"vectors on: {problem}")
        log.info("hybrid recall off (BM25 only): %s", problem)
        return None
    from evomem.adapters.models.embedding import OnnxEmbedder
    from evomem.adapters.vectors.index import VectorIndex
    from evomem.adapters.vectors.semantic import SemanticIndex

    # One thread per call: a note or a query is one short sequence, where a second thread buys
    # little and concurrent calls would oversubscribe the cores (measured on 2 busy cores:
    # 7.5 ms per query with one thread, 16 ms with onnxruntime's default).
    embedder: Embedder = OnnxEmbedder(settings.vectors.model_dir, threads=1)
    if settings.vectors.backend == "triton":
        # The encoder on Triton (the same pinned file), in process when Triton cannot answer.
        from evomem.adapters.models.triton import FallbackEmbedder, TritonEmbedder, TritonModel

        if settings.vectors.model_dir:
            raise ConfigError(
                "EVOMEM_EMBEDDING_BACKEND=triton serves the packaged model: unset EVOMEM_EMBEDDING_MODEL_DIR"
            )
        try:
            url = settings.require("triton", "url")
        except SettingsError as exc:
            raise ConfigError(f"EVOMEM_EMBEDDING_BACKEND=triton: {exc}") from exc
        t = settings.triton
        model = TritonModel(url, t.embedding_model, timeout_s=t.timeout_ms / 1000, retries=t.retries)
        embedder = FallbackEmbedder(TritonEmbedder(model), embedder)
    return SemanticIndex(embedder, VectorIndex(store.path, model=embedder.name), min_similarity=VECTOR_MIN_SIMILARITY)


class _Stopped(Exception):
    pass


def start_background(
    target: MemoryService | Vectors | None,
    *,
    stop: threading.Event | None = None,
    after: threading.Event | None = None,
    after_s: float = 0.0,
) -> list[threading.Thread]:
    """Work that must not hold up a server's start: load the embedding model, then embed the
    notes that have no vector yet (written with vectors off, or before a crash).

    ``target``: the embedded ``MemoryService`` (its vectors), or the ``Vectors`` itself (the
    storage service, which has no ``MemoryService``). Vectors that cannot backfill (None, or a
    gRPC client) start nothing. ``stop``: set it, then join the threads, before the process
    exits: the backfill stops after its current batch (the next start continues it). A
    process that exits while onnxruntime is still loading the model aborts (SIGABRT).

    From here on no call waits for the model (``SemanticIndex.wait_for_model``): recall answers
    by BM25 until it has loaded and says so. ``after``/``after_s``: start loading once ``after``
    is set or ``after_s`` seconds have passed, whichever comes first (``evomem-mcp``: after the
    first tool call is answered, so loading the model never competes with it)."""
    vectors = target.vectors if isinstance(target, MemoryService) else target
    backfill = getattr(vectors, "backfill", None)
    load = getattr(getattr(vectors, "embedder", None), "load", None)
    if vectors is None or backfill is None:
        return []
    if hasattr(vectors, "wait_for_model"):
        vectors.wait_for_model = False

    def progress(n: int) -> None:
        if stop is not None and stop.is_set():
            raise _Stopped
        if n % 1024 == 0:
            log.info("embedded %d earlier notes", n)

    def run() -> None:
        if after is not None:
            after.wait(after_s)
        if stop is not None and stop.is_set():
            return
        try:
            if load is not None:
                load()
            if stop is not None and stop.is_set():
                return
            done = backfill(progress=progress)
            if done:
                log.info("embedded %d notes that had no vector", done)
        except _Stopped:
            log.info("embedding earlier notes stopped (shutting down); the next start goes on")
        except Exception as exc:  # recall keeps working on BM25; the next start retries
            log.warning("embedding model or backfill failed (BM25 still works): %s", exc)

    thread = threading.Thread(target=run, name="evomem-vectors", daemon=True)
    thread.start()
    return [thread]


def linker_for(
    mode: str, settings: Settings | None = None, store: Store | None = None, embedder: Embedder | None = None
) -> Linker | None:
    """The linker called ``mode`` (an ``AUTO_SUPERSEDE`` value). ``store``: lets the scored
    linker read the earlier versions of a candidate's chain (what a terse "Ledger runs on
    SQLite" is about). ``llm`` takes its model, endpoint and key from ``settings``."""
    if mode == "off":
        return None
    from evomem.domain.linkers.scored import ScoredLinker  # here: a server without a linker never imports one

    if mode == "llm":
        from evomem.adapters.llm_linker import LLMLinker
        from evomem.domain.linkers.cascade import CascadeLinker, pair_unsure

        settings = settings if settings is not None else Settings()
        model, base_url = settings.require_llm("auto_supersede")
        # The LLM behind the pair linker, asked whenever that one is unsure about a plausible
        # candidate (it abstained). The pair linker, not the scored one, because on the held-out
        # development halves it lists the true predecessor for 82-89 % of the replacing notes
        # (what the LLM is shown), where the scored linker's gate rarely opens (docs/BENCHMARKS.md).
        return CascadeLinker(
            pair_linker(store, embedder, cross=settings.linker.cross_encoder),
            LLMLinker(
                model,
                base_url,
                structured=settings.linker.structured,
                timeout_s=float(settings.linker.timeout_s),
                api_key=settings.api_key(),
            ),
            pair_unsure,
        )
    if mode == "heuristic":
        from evomem.domain.linkers.heuristic import HeuristicLinker

        return HeuristicLinker()
    if mode == "scored":
        return ScoredLinker(lookup=store.get_many if store is not None else None, embedder=embedder)
    if mode == "pair":
        settings = settings if settings is not None else Settings()
        return pair_linker(store, embedder, cross=settings.linker.cross_encoder)
    raise ValueError(f"unknown linker {mode!r}")  # pragma: no cover - Settings validates


def pair_linker(store: Store | None = None, embedder: Embedder | None = None, *, cross: bool = False) -> Linker:
    """The pair linker (``evomem.domain.linkers.pair``) with the shipped ``pair_model.json``:
    ``embedder`` for its similarity features (the service passes the search's cosines, so it
    embeds only what the search did not), ``store`` to read a candidate's earlier versions.
    ``cross``: with the packaged cross-encoder (``evomem.adapters.models.onnx_pair``), which reads the
    plausible candidates the pair model is unsure of (when onnxruntime or the model is missing,
    the pair model's answer stands)."""
    from evomem.domain.linkers.pair import PairLinker

    scorer = None
    if cross:
        from evomem.adapters.models.onnx_pair import OnnxPairScorer

        scorer = OnnxPairScorer.shared()
    return PairLinker(embedder, lookup=store.get_many if store is not None else None, cross=scorer)


class LazyLinker:
    """A linker built on first use: the pair linker's module and weights (tens of ms) load at
    the first ``remember`` that needs them, not before a server's first answer. It reads as the
    linker it builds (attributes, ``isinstance``)."""

    def __init__(self, build: Callable[[], Linker]) -> None:
        self._build = build
        self._linker: Linker | None = None
        self._lock = threading.Lock()

    def built(self) -> Linker:
        if self._linker is None:
            with self._lock:
                if self._linker is None:
                    self._linker = self._build()
        return self._linker

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(offerer, PairLinker) holds, as for the linker itself
        return type(self.built())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.built(), name)


def offerer_for(
    settings: Settings, store: Store | None = None, embedder: Embedder | None = None, *, lazy: bool = False
) -> Linker | None:
    """With ``auto_supersede`` off and ``offer_candidates`` on: the pair linker, whose decision
    ``remember`` only offers (``possible_supersedes``, up to 3), never links. No LLM.
    ``lazy``: built at the first ``remember`` (``LazyLinker``; the embedded server's start)."""
    if settings.linker.auto_supersede != "off" or not settings.linker.offer_candidates:
        return None
    if lazy:
        return LazyLinker(lambda: pair_linker(store, embedder))  # type: ignore[return-value]
    return pair_linker(store, embedder)


def _service_config(settings: Settings, *, extract_inline: bool, vectors_required: bool = False) -> ServiceConfig:
    return ServiceConfig(
        default_namespace=settings.memory.namespace,
        max_note_bytes=settings.memory.max_note_bytes,
        default_author=settings.memory.author,
        extract_inline=extract_inline,
        vectors_required=vectors_required,  # recall then logs each time storage skips the vector half
        dedupe_window_ms=settings.memory.dedupe_window_s * 1000,
    )


# ----------------------------------------------------------------------------- the embedded wiring


def build_embedded(settings: Settings) -> MemoryService:
    if settings.linker.auto_supersede == "llm":
        settings.require_llm("auto_supersede")  # before the database is opened
    store = SQLiteStore(settings.db_path(), purge_retry_s=settings.store.purge_retry_s)
    try:
        vectors = build_vectors(settings, store)
    except BaseException:
        store.close()
        raise
    return MemoryService(
        store,
        extractor=LiteCronista(),
        linker=linker_for(settings.linker.auto_supersede, settings, store=store, embedder=vectors),
        offerer=offerer_for(settings, store, vectors, lazy=True),
        vectors=vectors,
        config=_service_config(settings, extract_inline=True),
    )


def server_info(settings: Settings, service: MemoryService) -> dict[str, str]:
    """What the embedded server reports about itself (``stats``' ``server``) and logs at start."""
    vectors = getattr(service.vectors, "name", None) or "off"
    auto = settings.linker.auto_supersede
    # The file's name only: a client has no business knowing the server's directory layout.
    db = os.path.basename(settings.db_path()) or settings.db_path()
    return {"db": db, "auto_supersede": auto, "vectors": vectors, "wiring": "embedded"}


def embedded_mcp_server(settings: Settings, service: MemoryService, *, gate: Gate | None = None) -> Any:
    """The MCP server of ``evomem-mcp`` (either transport) over the embedded ``service``:
    its descriptions say hybrid when the vectors are wired, answers show ``answer_note_chars``."""
    from evomem.entrypoints.mcp.server import build_mcp_server

    return build_mcp_server(
        lambda: service,
        server_info=server_info(settings, service),
        gate=gate,
        hybrid=service.vectors is not None,
        note_chars=settings.mcp.answer_note_chars,
    )


def run_embedded(
    service: MemoryService, serve: Callable[[], None], *, after: threading.Event | None = None, after_s: float = 0.0
) -> int:
    """Run ``serve`` (a transport's loop) until the client leaves or Ctrl-C, the model loading
    and earlier notes embedding in the background meanwhile (``start_background``: ``after``,
    ``after_s``); then stop the backfill after its batch, close the store and leave the process
    (``runtime.exit_process``). The exit status: 0, or 1 when serving failed (a port taken)."""
    from evomem.ops.runtime import exit_process

    stop = threading.Event()
    background = start_background(service, stop=stop, after=after, after_s=after_s)
    status = 0
    try:
        serve()
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # the port is taken, the address is not this machine's
        log.error("%s", exc)
        status = 1
    finally:
        stop.set()  # the backfill stops after its batch; the next start goes on
        service.store.close()
    return exit_process(status, background)


# ----------------------------------------------------------------------------- who may call (HTTP)


def build_http_front(settings: Settings, host: str) -> tuple[Any, Any, dict[str, Any]]:
    """What stands before the embedded server's HTTP app: the gate (tokens, rate limits; None
    without a token file), the socket bound first (``PortInUse`` when the port is taken), and
    ``build_http_app``'s gate and allowed lists. SIGHUP re-reads the token file."""
    from evomem.entrypoints.mcp.http import bind
    from evomem.security.tokens import install_reload_signal

    gate = build_gate(settings, host, settings.mcp.port)  # refuses non-loopback without auth
    sock = bind(host, settings.mcp.port)
    if gate is not None:
        if settings.mcp.port == 0 and not settings.auth.resource_url:  # the real port, now that it is known
            gate = build_gate(settings, host, sock.getsockname()[1])
            assert gate is not None
        if gate.verifier.registry is not None:
            install_reload_signal(gate.verifier.registry)
    lists = {
        "allowed_hosts": allowed(settings.auth.allowed_hosts),
        "allowed_origins": allowed(settings.auth.allowed_origins),
    }
    return gate, sock, {"gate": gate, **lists}


def build_gate(settings: Settings, host: str, port: int) -> Gate | None:
    """The auth gate of an HTTP wiring (embedded HTTP or gateway) bound to ``host:port``, or
    None when no token file is set. Without one, a non-loopback ``host`` is refused unless
    EVOMEM_INSECURE_NO_AUTH is set, and then warned about at every start."""
    from evomem.security.gate import Gate, is_loopback

    jwt_on = bool(settings.auth.jwt_issuer or settings.auth.jwt_audience or settings.auth.jwt_jwks)
    if not settings.auth.file and not jwt_on:
        if not is_loopback(host):
            if not settings.auth.insecure_no_auth:
                raise ConfigError(
                    f"refusing to serve MCP on {host}, a non-loopback address, without authentication: "
                    "set --auth-file / EVOMEM_AUTH_FILE (see README, Share one memory across a team), "
                    "bind 127.0.0.1, or pass --insecure-no-auth / EVOMEM_INSECURE_NO_AUTH=true"
                )
            log.warning(
                "INSECURE: serving MCP on %s without authentication (--insecure-no-auth): anyone who can "
                "reach this port can read, rewrite and purge every namespace",
                host,
            )
        return None
    from evomem.security.tokens import AuthFileError, TokenRegistry, TokenVerifier

    try:
        registry = TokenRegistry(settings.auth.file) if settings.auth.file else None
    except AuthFileError as exc:
        raise ConfigError(str(exc)) from None
    jwt = _jwt_verifier(settings) if jwt_on else None
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    resource = settings.auth.resource_url or f"http://{shown}:{port}/mcp"
    issuer = settings.auth.issuer_url or _origin(resource)
    from evomem.security.ratelimit import build_limiter

    # Tokens with a ``rate`` are limited; the file may gain one at the next SIGHUP, so always built.
    limiter = build_limiter(settings.auth.rate_redis_url or settings.queue.redis_url)
    if registry is not None:
        log.info("authentication on: %d identities from %s", len(registry), settings.auth.file)
    if jwt is not None:
        log.info("authentication on: JWTs from %s for %s", settings.auth.jwt_issuer, settings.auth.jwt_audience)
    return Gate(TokenVerifier(registry, resource=resource, jwt=jwt), resource, issuer, limiter)


def _jwt_verifier(settings: Settings) -> Any:
    from evomem.security.jwt import JwtVerifier

    a = settings.auth
    if not (a.jwt_issuer and a.jwt_audience and a.jwt_jwks):
        raise ConfigError("JWTs need all three of EVOMEM_JWT_ISSUER, EVOMEM_JWT_AUDIENCE and EVOMEM_JWT_JWKS")
    try:
        return JwtVerifier(
            a.jwt_issuer,
            a.jwt_audience,
            a.jwt_jwks,
            name_claim=a.jwt_name_claim,
            role_claim=a.jwt_role_claim,
            namespaces_claim=a.jwt_namespaces_claim,
        )
    except (OSError, ValueError) as exc:
        raise ConfigError(f"EVOMEM_JWT_JWKS {a.jwt_jwks}: {exc}") from None


def _origin(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def allowed(value: str | None) -> list[str]:
    """A comma-separated setting (EVOMEM_ALLOWED_HOSTS, _ORIGINS) as a list."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]


# ----------------------------------------------------------------------------- the multi-service wiring


def build_gateway(settings: Settings) -> MemoryService:
    """The multi-service wiring of the same ``MemoryService``: storage over gRPC, extraction
    queued on Redis (the worker runs it), automatic linking over gRPC when
    ``auto_supersede`` is not ``off`` (then the linker's address is required).

    Hybrid recall: the vectors live in storage's file and storage embeds them, so the gateway
    only holds a ``GrpcVectors``. ``vectors``: ``auto`` (hybrid when storage has vectors, BM25
    quietly when it answers that it has none), ``on`` (a storage without vectors is an error
    each call: logged, and ``remember`` warns), ``off`` (BM25 only, no vector calls).

    Linking is synchronous here: the linker answers before ``remember`` writes, so a link
    exists from the moment the note does and no recall can show the replaced decision as
    active. Extraction is asynchronous: the note is stored (and searchable by its raw text)
    with extraction ``pending`` and a job is queued.
    """
    from evomem.adapters.grpc.clients import GrpcLinker, GrpcStore, GrpcVectors
    from evomem.adapters.redis_queue import RedisQueue

    storage_addr, redis_url, linker_addr = gateway_peers(settings)
    mode = settings.vectors.mode
    peer = grpc_peer(settings)  # every gRPC call carries the secret, over mutual TLS when set
    store = GrpcStore(storage_addr, **peer)
    return MemoryService(
        store,
        extractor=None,
        linker=GrpcLinker(linker_addr, **peer) if linker_addr else None,
        # Offering runs in the gateway, on the candidates it fetched, with storage's vector-search
        # cosines (the gateway holds no embedding model): no linker service is needed for it.
        offerer=offerer_for(settings, store),
        vectors=GrpcVectors(storage_addr, required=mode == "on", **peer) if mode != "off" else None,
        queue=RedisQueue(redis_url),
        config=_service_config(settings, extract_inline=False, vectors_required=mode == "on"),
    )


def gateway_peers(settings: Settings) -> tuple[str, str, str | None]:
    """The gateway's storage address, Redis URL and linker address (None when linking is off),
    or a ``SettingsError`` naming the one that is missing."""
    linking = settings.linker.auto_supersede != "off"
    if linking and not settings.addresses.linker:
        raise SettingsError("EVOMEM_AUTO_SUPERSEDE is on: set EVOMEM_LINKER_ADDR to the linker service")
    storage_addr = settings.require("addresses", "storage")
    redis_url = settings.require("queue", "redis_url")
    return storage_addr, redis_url, settings.addresses.linker if linking else None


def gateway_command(settings: Settings) -> list[str]:
    """gunicorn with uvicorn workers, serving ``evomem.entrypoints.mcp.gateway:create_app()``.
    Checks the gateway's settings first, so a missing address stops the command at once."""
    gateway_peers(settings)
    host = settings.mcp.host or "127.0.0.1"
    build_gate(settings, host, settings.mcp.port)  # a bad token file, or no auth off loopback, stops here
    return [
        "gunicorn",
        "--worker-class",
        "uvicorn_worker.UvicornWorker",
        "--workers",
        str(settings.gateway.workers),
        "--bind",
        f"{host}:{settings.mcp.port}",
        "--graceful-timeout",
        str(int(GRACE_S)),
        "--access-logfile",
        "-" if settings.gateway.access_log else "/dev/null",
        "evomem.entrypoints.mcp.gateway:create_app()",
    ]


@dataclass
class GrpcService:
    """One gRPC service process, built but not yet listening. ``start`` binds
    EVOMEM_GRPC_HOST:EVOMEM_GRPC_PORT (default: the service's port), starts the metrics
    endpoint, warms up, reports SERVING and starts ``background``; ``stop`` drains and closes."""

    settings: Settings
    kind: str  # storage | cronista | linker
    name: str  # the gRPC service name its health reports
    register: Callable[[Any], None]
    description: str
    warm: Callable[[], None] | None = None  # once, before SERVING
    probe: Callable[[], None] | None = None  # every 5 s: raising turns health NOT_SERVING
    # every probe_interval_s: a reason (str) turns the service's own name NOT_SERVING while ""
    # stays SERVING (degraded: it answers through a fallback); None: SERVING
    degraded: Callable[[], str | None] | None = None
    probe_interval_s: float = 5.0
    background: Callable[[threading.Event], list[threading.Thread]] | None = None
    close: list[Callable[[], None]] = field(default_factory=list)
    running: RunningServer | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> RunningServer:
        from evomem.entrypoints.grpc.server import create_server

        port = self.settings.grpc.port if self.settings.grpc.port is not None else GRPC_PORTS[self.kind]
        try:
            peer = grpc_listen_peer(self.settings)
            running = create_server(f"{self.settings.grpc.host}:{port}", self.register, (self.name,), **peer)
        except BaseException:
            self._close()
            raise
        self.running = running
        start_metrics(self.settings.metrics.port, self.settings.metrics.host)
        if self.warm is not None:
            self.warm()
        running.set_serving(True)
        if self.probe is not None or self.degraded is not None:
            threading.Thread(target=self._probe, args=(running,), daemon=True, name="health-probe").start()
        if self.background is not None:
            self._threads = self.background(self._stopping)
        log.info("%s serving on port %d, %s", self.kind, running.port, self.description)
        return running

    def _probe(self, running: RunningServer) -> None:
        # Health is the real state: a check that fails turns the service NOT_SERVING.
        while not self._stopping.wait(self.probe_interval_s):
            try:
                if self.probe is not None:
                    self.probe()
                reason = self.degraded() if self.degraded is not None else None
                if reason:
                    running.set_degraded(True)
                else:
                    running.set_serving(True)
            except Exception as exc:  # pragma: no cover - exercised by killing the volume
                log.error("%s health check failed: %s", self.kind, exc)
                running.set_serving(False)

    def stop(self) -> None:
        """Drain the server, wait for the background work, close: each step logged with its time,
        so a slow stop says which step was slow."""
        started = time.monotonic()
        self._stopping.set()
        if self.running is not None:
            self.running.stop()
        drained = time.monotonic()
        for thread in self._threads:  # exiting while onnxruntime loads the model would abort
            thread.join(GRACE_S)
        joined = time.monotonic()
        self._close()
        log.info(
            "%s stopped: drained in %.1f s, background work in %.1f s, closed in %.1f s",
            self.kind, drained - started, joined - drained, time.monotonic() - joined,
        )  # fmt: skip

    def _close(self) -> None:
        for close in self.close:
            close()


def grpc_peer(settings: Settings) -> dict[str, Any]:
    """How this process authenticates to (and as) a gRPC peer: ``secret`` (EVOMEM_GRPC_SECRET or
    _FILE) and ``tls`` (EVOMEM_GRPC_TLS_CA, _CERT, _KEY: all three, or none)."""
    from evomem.security.peer import TlsFiles

    a = settings.auth
    files = (a.grpc_tls_ca, a.grpc_tls_cert, a.grpc_tls_key)
    tls = None
    if any(files):
        if not all(files):
            raise ConfigError(
                "mutual TLS needs all three of EVOMEM_GRPC_TLS_CA, EVOMEM_GRPC_TLS_CERT and EVOMEM_GRPC_TLS_KEY"
            )
        try:
            tls = TlsFiles.load(*files)  # type: ignore[arg-type]
        except OSError as exc:
            raise ConfigError(f"EVOMEM_GRPC_TLS_*: cannot read {exc.filename}: {exc.strerror}") from None
    return {"secret": settings.grpc_secret(), "tls": tls}


def grpc_listen_secret(settings: Settings) -> str | None:
    """The secret a gRPC service demands of its callers (``grpc_listen_peer`` without TLS)."""
    return grpc_listen_peer(settings)["secret"]


def grpc_listen_peer(settings: Settings) -> dict[str, Any]:
    """What a gRPC service demands of its callers: the secret and/or mutual TLS. With neither,
    a non-loopback bind address is refused unless EVOMEM_GRPC_INSECURE is set (then warned at
    every start)."""
    from evomem.security.gate import is_loopback

    peer = grpc_peer(settings)
    host = settings.grpc.host
    if peer["secret"] is None and peer["tls"] is None and not is_loopback(host):
        if not settings.auth.grpc_insecure:
            raise ConfigError(
                f"refusing to serve gRPC on {host}, a non-loopback address, without EVOMEM_GRPC_SECRET "
                "(or EVOMEM_GRPC_SECRET_FILE): anyone reaching the port could read and purge every namespace. "
                "Set a secret, bind 127.0.0.1, or set EVOMEM_GRPC_INSECURE=true"
            )
        log.warning("INSECURE: gRPC on %s accepts calls without a secret (EVOMEM_GRPC_INSECURE)", host)
    return peer


def storage_vectors(settings: Settings, store: SQLiteStore) -> Vectors | None:
    """The storage file's ``Vectors`` per EVOMEM_VECTORS, as the embedded server builds them."""
    try:
        return build_vectors(settings, store)
    except Unavailable as exc:  # EVOMEM_VECTORS=on and no model or sqlite-vec here
        raise ConfigError(f"EVOMEM_VECTORS: {exc.message}") from exc


def build_storage(settings: Settings) -> GrpcService:
    """The StorageService over the SQLite file (its only writer), with the file's vectors."""
    from evomem.entrypoints.grpc.servicers import StorageServicer
    from evomem.v1 import storage_pb2_grpc

    store = SQLiteStore(settings.db_path(STORAGE_DB), purge_retry_s=settings.store.purge_retry_s)
    try:
        vectors = storage_vectors(settings, store)
    except BaseException:
        store.close()
        raise
    closers: list[Callable[[], None]] = [vectors.close] if vectors is not None else []  # type: ignore[attr-defined]
    return GrpcService(
        settings,
        "storage",
        "evomem.v1.StorageService",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(
            StorageServicer(store, vectors, _service_config(settings, extract_inline=False)), s
        ),
        f"db {store.path}, " + (f"vectors {vectors.name}" if vectors is not None else "no vectors (BM25 only)"),
        warm=store.stats,
        probe=store.ping,  # every 5 s: one cheap read (stats would count every row)
        # The model loads and notes without a vector are embedded in the background; until
        # then NearestNodes answers UNAVAILABLE ("has not loaded yet") at once and RecallNodes
        # answers by BM25 with a note saying so: no call waits for the model.
        background=lambda stop: start_background(vectors, stop=stop),
        close=[*closers, store.close],
    )


def _warm_up(extractor: Extractor) -> None:
    extractor.extract("warm-up: we picked the lite cronista because it is fast.")


def build_extractor(settings: Settings) -> Extractor:
    """The cronista of EVOMEM_CRONISTA_BACKEND: ``lite``; ``onnx`` (the project's model on
    onnxruntime in process, EVOMEM_CRONISTA_MODEL_DIR or the packaged folder); ``triton`` (the
    same model on the Triton server at EVOMEM_TRITON_URL, the lite cronista when Triton cannot
    answer)."""
    backend = settings.cronista.backend
    if backend == "onnx":
        from evomem.adapters.models.onnx_cronista import OnnxCronista

        return OnnxCronista(settings.cronista.model_dir)
    if backend == "triton":
        try:
            from evomem.adapters.models.triton import TritonModel
            from evomem.adapters.models.triton_cronista import TritonCronista
        except ImportError as exc:
            raise ConfigError(f"EVOMEM_CRONISTA_BACKEND=triton: {exc}; pip install 'evomem-mcp[triton]'") from exc
        try:
            url = settings.require("triton", "url")
        except SettingsError as exc:
            raise ConfigError(f"EVOMEM_CRONISTA_BACKEND=triton: {exc}") from exc
        t = settings.triton
        model = TritonModel(url, t.model, t.model_version, timeout_s=t.timeout_ms / 1000, retries=t.retries)
        return TritonCronista(model, settings.cronista.model_dir, retry_after_s=float(t.retry_after_s))
    return LiteCronista()


def build_cronista(settings: Settings) -> GrpcService:
    """The CronistaService with the extractor of EVOMEM_CRONISTA_BACKEND. With ``triton`` the
    health of ``evomem.v1.CronistaService`` is NOT_SERVING while it extracts through its lite
    fallback (Triton down), "" stays SERVING; the state is probed every second."""
    from evomem.entrypoints.grpc.servicers import CronistaServicer
    from evomem.v1 import cronista_pb2_grpc

    extractor = build_extractor(settings)
    load = getattr(extractor, "load", None)
    if load is not None:
        try:
            load()  # the tokenizer, pinned: a missing or wrong file stops the start
        except Unavailable as exc:
            raise ConfigError(f"EVOMEM_CRONISTA_BACKEND={settings.cronista.backend}: {exc.message}") from exc
    check = getattr(extractor, "check", None)
    service = GrpcService(
        settings,
        "cronista",
        "evomem.v1.CronistaService",
        lambda s: cronista_pb2_grpc.add_CronistaServiceServicer_to_server(CronistaServicer(extractor), s),
        f"backend {extractor.name}",
        warm=lambda: _warm_up(extractor),
        degraded=check,
        probe_interval_s=1.0 if check is not None else 5.0,
        close=[extractor.close] if hasattr(extractor, "close") else [],
    )
    if hasattr(extractor, "on_change"):

        def tell(reason: str | None) -> None:
            if service.running is not None:
                service.running.set_degraded(reason is not None)

        extractor.on_change = tell
    return service


def build_linker(settings: Settings) -> GrpcService:
    """The LinkerService with the linker of EVOMEM_LINKER; with EVOMEM_STORAGE_ADDR the
    scored linker reads earlier versions of a candidate's chain from storage."""
    from evomem.adapters.grpc.clients import GrpcStore
    from evomem.entrypoints.grpc.servicers import LinkerServicer
    from evomem.v1 import linker_pb2_grpc

    mode = settings.linker.service
    if mode == "off":
        raise ConfigError("EVOMEM_LINKER=off: do not start the linker service; set EVOMEM_AUTO_SUPERSEDE=off")
    if mode == "llm":
        try:
            settings.require_llm("auto_supersede")
        except SettingsError as exc:
            raise ConfigError(f"EVOMEM_LINKER=llm: {exc}") from exc
    peer = grpc_peer(settings)
    store = GrpcStore(settings.addresses.storage, **peer) if settings.addresses.storage else None
    linker = linker_for(mode, settings, store)
    assert linker is not None
    return GrpcService(
        settings,
        "linker",
        "evomem.v1.LinkerService",
        lambda s: linker_pb2_grpc.add_LinkerServiceServicer_to_server(LinkerServicer(linker), s),
        f"linker {linker.name}",
        close=[store.close] if store is not None else [],
    )


def worker_service(
    storage_addr: str, cronista_addr: str, *, timeout_s: float | None = None, **peer: Any
) -> MemoryService:
    """The worker's ``MemoryService``: storage and cronista over gRPC, nothing inline."""
    from evomem.adapters.grpc.clients import GrpcExtractor, GrpcStore

    t = {} if timeout_s is None else {"timeout_s": timeout_s}
    store = GrpcStore(storage_addr, **peer, **t)
    extractor = GrpcExtractor(cronista_addr, **peer, **t)
    return MemoryService(store, extractor=extractor, config=ServiceConfig(extract_inline=False))


def build_worker(settings: Settings, *, stop: threading.Event | None = None) -> ExtractionWorker:
    """The extraction worker: jobs from the Redis stream, storage and cronista over gRPC."""
    from evomem.adapters.redis_queue import RedisJobSource, connect
    from evomem.app.jobs import ExtractionWorker, WorkerConfig, default_consumer

    redis_url = settings.require("queue", "redis_url")
    storage_addr = settings.require("addresses", "storage")
    cronista_addr = settings.require("addresses", "cronista")
    q = settings.queue
    config = WorkerConfig(
        consumer=q.worker_consumer,
        visibility_ms=q.job_visibility_ms,
        max_attempts=q.job_max_attempts,
        sweep_interval_s=q.sweep_interval_s,
        sweep_batch=q.sweep_batch,
        batch=q.worker_batch,
    )
    source = RedisJobSource(
        connect(redis_url), q.worker_consumer or default_consumer(), visibility_ms=q.job_visibility_ms
    )
    service = worker_service(storage_addr, cronista_addr, **grpc_peer(settings))
    return ExtractionWorker(service, source, config, stop=stop)


BUILDERS: dict[str, Callable[[Settings], GrpcService]] = {
    "storage": build_storage,
    "cronista": build_cronista,
    "linker": build_linker,
}
