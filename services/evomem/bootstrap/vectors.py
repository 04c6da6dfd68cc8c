"""The vectors of a wiring: hybrid recall in the store's own file, when the model and sqlite-vec are here."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.ports import Embedder, Store, Vectors
from evomem.domain.errors import Unavailable
from evomem.ops.runtime import ConfigError
from evomem.settings import Settings, SettingsError

if TYPE_CHECKING:
    from evomem.adapters.vectors.semantic import VectorTable

log = logging.getLogger("evomem.bootstrap")

#: Nearest notes below this cosine similarity are noise for all-MiniLM-L6-v2 (unrelated short
#: sentences score about 0-0.2 against each other); they never enter a recall or a linker.
VECTOR_MIN_SIMILARITY = 0.2
#: The static table's cosines run higher (unrelated development notes: median 0.30 against MiniLM's 0.10;
#: at 0.46 it drops as many of them as MiniLM does at 0.2), but a floor that high also drops paraphrases:
#: on the paraphrase set the agent's hit rate was 0.903 at 0.2, 0.884 at 0.35 and 0.773 at 0.46 (MiniLM
#: 0.912), and the agents' recall if confirmed the same or better at 0.2 (docs/BENCHMARKS.md, "Static
#: embeddings"). So the same floor as MiniLM.
STATIC_MIN_SIMILARITY = 0.2
#: The floor of each embedder (EVOMEM_EMBEDDER).
MIN_SIMILARITY = {"minilm": VECTOR_MIN_SIMILARITY, "static": STATIC_MIN_SIMILARITY}


def vectors_problem(model_dir: str | None = None, embedder: str = "minilm") -> str | None:
    """Why hybrid recall in a SQLite file cannot run here (None when it can): sqlite-vec, then the
    model (``model_problem``). Cheap: finds files, loads nothing big."""
    from evomem.adapters.sqlite.driver import vec_problem

    return vec_problem() or model_problem(model_dir, embedder)


def model_problem(model_dir: str | None = None, embedder: str = "minilm") -> str | None:
    """Why the embedding model cannot run here (None when it can); PostgreSQL needs only this."""
    if embedder == "static":
        return static_problem(model_dir)
    from evomem.adapters.models.embedding import INSTALL_HINT, resolve_model_files

    missing = [m for m in ("numpy", "onnxruntime", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{', '.join(missing)} not installed; " + INSTALL_HINT
    files, looked = resolve_model_files(model_dir)
    if files is None:
        return "no embedding model found (looked at " + "; ".join(looked) + "); " + INSTALL_HINT
    return None


def static_problem(model_dir: str | None = None) -> str | None:
    """Why the static embedder cannot run here (None when it can): numpy, tokenizers, its files."""
    from evomem.adapters.models.static import DEFAULT_MODEL_DIR, FOLDER, HINT

    missing = [m for m in ("numpy", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{', '.join(missing)} not installed; pip install numpy tokenizers"
    folder = Path(model_dir).expanduser() if model_dir else DEFAULT_MODEL_DIR
    absent = [f for f in (*FOLDER.files, *FOLDER.required) if not (folder / f).is_file()]
    return f"no static embedding model in {folder} (missing {', '.join(absent)}); {HINT}" if absent else None


def build_vectors(settings: Settings, store: Store) -> Vectors | None:
    """The ``Vectors`` port in the store's own file (or database), per ``settings.vectors``. Loads no model."""
    vs = settings.vectors
    if vs.mode == "off":
        return None
    if vs.embedder == "static":
        if vs.backend == "triton":
            raise ConfigError("EVOMEM_EMBEDDER=static embeds in process: unset EVOMEM_EMBEDDING_BACKEND=triton")
        if not isinstance(store, SQLiteStore):
            raise ConfigError("EVOMEM_EMBEDDER=static needs the SQLite store (PostgreSQL holds 384-dim MiniLM vectors)")
    problem = (vectors_problem if isinstance(store, SQLiteStore) else model_problem)(vs.model_dir, vs.embedder)
    if problem is not None:
        if vs.mode == "on":
            raise Unavailable(f"vectors on: {problem}")
        log.info("hybrid recall off (BM25 only): %s", problem)
        return None
    from evomem.adapters.vectors.semantic import SemanticIndex

    if vs.embedder == "static":
        from evomem.adapters.models.static import StaticEmbedder

        static = StaticEmbedder(vs.model_dir)
        table = vector_table(store, static.name, settings, static.dim)
        return SemanticIndex(static, table, min_similarity=MIN_SIMILARITY["static"])
    from evomem.adapters.models.embedding import OnnxEmbedder

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
    table = vector_table(store, embedder.name, settings)
    return SemanticIndex(embedder, table, min_similarity=MIN_SIMILARITY["minilm"])


def vector_table(store: Store, model: str, settings: Settings, dim: int = 384) -> VectorTable:
    """Where the vectors live: sqlite-vec tables in the SQLite store's file (searched by the binary
    scan or an HNSW graph per namespace: ``EVOMEM_VECTOR_SEARCH``), or the ``vectors`` table
    (pgvector HNSW) of the PostgreSQL store's database."""
    if isinstance(store, SQLiteStore):
        from evomem.adapters.vectors.index import VectorIndex

        vs = settings.vectors
        return VectorIndex(store.path, model=model, dim=dim, vector_search=vs.search, hnsw_from=vs.hnsw_from)
    from evomem.adapters.postgres.store import PostgresStore
    from evomem.adapters.postgres.vectors import PgVectorIndex

    if not isinstance(store, PostgresStore):  # pragma: no cover - the composition root builds one of the two
        raise ConfigError(f"no vector table for a {type(store).__name__}")
    return PgVectorIndex(store.db, model=model, dim=dim)


def storage_vectors(settings: Settings, store: Store) -> Vectors | None:
    """The storage file's ``Vectors`` per EVOMEM_VECTORS, as the embedded server builds them."""
    try:
        return build_vectors(settings, store)
    except Unavailable as exc:  # EVOMEM_VECTORS=on and no model or sqlite-vec here
        raise ConfigError(f"EVOMEM_VECTORS: {exc.message}") from exc
