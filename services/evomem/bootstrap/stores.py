"""The store of a wiring: the SQLite file (the default), or PostgreSQL when a database URL is set."""

from __future__ import annotations

from evomem.adapters.sqlite.driver import select_driver
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.ports import Store
from evomem.domain.errors import InvalidArgument, Unavailable
from evomem.ops.runtime import ConfigError
from evomem.settings import Settings


def open_store(settings: Settings, default_db: str) -> Store:
    """``PostgresStore`` at ``--database-url`` / ``EVOMEM_DATABASE_URL`` (migrated at start), else
    ``SQLiteStore`` at ``settings.db_path(default_db)``. A malformed URL, a database that cannot be
    reached, or one without the migrations is a ``ConfigError`` of one line (exit status 2)."""
    url = settings.database_url()
    if url is None:
        select_driver(settings.store.sqlite_driver)  # one SQLite library per process, before any file
        try:
            return SQLiteStore(
                settings.db_path(default_db),
                purge_retry_s=settings.store.purge_retry_s,
                word_index=settings.store.word_index,
                tantivy_from=settings.store.tantivy_from,
            )
        except ImportError as exc:  # EVOMEM_WORD_INDEX=tantivy without the package (auto takes FTS5 then)
            raise ConfigError(str(exc)) from None
    try:
        from evomem.adapters.postgres.store import PostgresStore
    except ImportError as exc:  # pragma: no cover - psycopg is imported lazily inside
        raise ConfigError(f"EVOMEM_DATABASE_URL: {exc}; pip install 'evomem-mcp[postgres]'") from exc
    try:
        return PostgresStore(
            url,
            role=settings.store.database_role or None,
            pool_size=settings.store.database_pool,
            purge_retry_s=settings.store.purge_retry_s,
        )
    except (InvalidArgument, Unavailable) as exc:
        raise ConfigError(f"EVOMEM_DATABASE_URL: {exc.message}") from None


def store_name(store: Store) -> str:
    """What a log line or ``stats`` names the store by: the SQLite file's path, or the database's
    URL without its password."""
    return str(getattr(store, "path", type(store).__name__))


def open_location(location: str) -> Store:
    """A store named by a URL, for ``evomem-admin``: ``sqlite:///PATH`` (or a plain path) or
    ``postgresql://...``. ``ConfigError`` (one line) when it cannot be opened. A SQLite store is
    opened on its FTS5 table whatever its size: a one-shot command (export, import, backup) has no
    use for a Tantivy index to build, nor for the running server's writer (the server's index
    reads what the command wrote from the log at its next write or open)."""
    from evomem.settings import Settings

    if location.startswith(("postgresql://", "postgres://")):
        return open_store(Settings(database_url=location), "")
    path = location.removeprefix("sqlite://") if location.startswith("sqlite://") else location
    if not path:
        raise ConfigError(f"{location!r}: name a SQLite file (sqlite:///path/to/evomem.db) or a postgresql:// URL")
    try:
        return open_store(Settings(db=path, word_index="fts5"), path)
    except Exception as exc:  # a bad path, a read-only directory, not a database
        raise ConfigError(f"cannot open the SQLite file {path}: {exc}") from None
