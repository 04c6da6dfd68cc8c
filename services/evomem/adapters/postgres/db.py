"""Connections to PostgreSQL: a pool, one transaction per call, the namespace set in each.

    db = Database("postgresql://evomem@db/evomem", role="evomem_app")
    with db.transaction("team-a") as conn:       # SET LOCAL evomem.namespace = 'team-a'
        conn.execute("SELECT ...")                # RLS shows team-a's rows only
    with db.transaction() as conn:                # "*": every namespace (a read by id)
        ...
    db.close()

Every connection of the pool runs as ``role`` (``SET ROLE`` when it is made: a role that owns no
table, so the row-level security policies of ``schema.py`` apply to it) and every transaction
sets ``evomem.namespace`` with ``SET LOCAL`` (``set_config(..., true)``): it ends with the
transaction, so a connection handed back to the pool carries nothing to the next caller, and a
transaction that set nothing sees no row. A call costs three round trips: BEGIN with the
namespace (one message), its statements, COMMIT; a connection idle for a while is tried first.

Failures of the database itself (refused, reset, restarted, no connection free in time) become
``Unavailable`` with a message that says so: the storage service answers UNAVAILABLE, never
crashes, and the next call gets a fresh connection (the pool checks each one it lends).
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
import weakref
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from evomem.domain.errors import Conflict, InvalidArgument, Unavailable

log = logging.getLogger("evomem.store")

CONNECT_TIMEOUT_S = 5
CHECK_IDLE_S = 2.0  # a pooled connection idle longer than this is tried before it is lent
POOL_TIMEOUT_S = 5.0  # how long a call waits for a connection (the database down: then Unavailable)
ALL = "*"  # the namespace setting that shows every namespace

_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # the postgres extra is not installed
        raise Unavailable(f"PostgreSQL needs psycopg: pip install 'evomem-mcp[postgres]' ({exc})") from exc
    return psycopg


def check_url(url: str) -> str:
    """``url`` if it names a PostgreSQL database, else ``InvalidArgument`` saying what is wrong
    (never echoing a password)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidArgument(f"the database URL is malformed: {exc}") from None
    if parts.scheme not in ("postgresql", "postgres"):
        got = parts.scheme + "://" if parts.scheme else "no scheme"
        raise InvalidArgument(f"the database URL must start with postgresql:// (got {got})")
    if not parts.hostname and "host=" not in parts.query:
        raise InvalidArgument("the database URL names no host: postgresql://USER:PASSWORD@HOST:PORT/DATABASE")
    if port == 0:
        raise InvalidArgument("the database URL's port must be 1-65535")
    return url


def redact(url: str) -> str:
    """The URL without its password, for logs and messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://…"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the database could not be reached or went away (not a bad statement)."""
    psycopg = _psycopg()
    from psycopg_pool import PoolTimeout

    if isinstance(exc, PoolTimeout | psycopg.OperationalError | psycopg.InterfaceError):
        return True
    # 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now, 08*: connection exceptions
    state = getattr(exc, "sqlstate", None) or ""
    return state.startswith(("08", "57P"))


class Database:
    """A pool of connections to one database, each running as ``role``."""

    def __init__(
        self,
        url: str,
        *,
        role: str | None = "evomem_app",
        min_size: int = 1,
        max_size: int = 8,
        timeout_s: float = POOL_TIMEOUT_S,
    ) -> None:
        psycopg = _psycopg()
        from psycopg_pool import ConnectionPool

        self.url = check_url(url)
        if role is not None and not _ROLE.match(role):
            raise InvalidArgument(f"database role {role!r}: lowercase letters, digits and _ only")
        self.role = role
        self.where = redact(url)
        self._psycopg = psycopg
        self._last_used: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout_s,
            open=False,
            configure=self._configure,
            check=self._check,
            reset=self._returned,
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "evomem"},
            name="evomem",
        )

    def open(self) -> None:
        """Start the pool (after the migrations: its connections SET ROLE to a role they create)."""
        self.pool.open(wait=False)

    def _configure(self, conn: Any) -> None:
        if self.role is not None:
            conn.execute(f"SET ROLE {self.role}")  # checked above: a plain identifier
        from pgvector.psycopg import register_vector

        register_vector(conn)  # vector/halfvec values in and out (the extension: migration 0002)
        conn.commit()
        # ``transaction`` sends BEGIN and the namespace in one message, and COMMIT itself.
        conn.autocommit = True

    def _returned(self, conn: Any) -> None:
        self._last_used[conn] = time.monotonic()

    def _check(self, conn: Any) -> None:
        """A connection idle for a while is tried before it is lent (the server may have restarted
        since); one used a moment ago is lent as it is (a round trip saved on every call)."""
        if time.monotonic() - self._last_used.get(conn, 0.0) > CHECK_IDLE_S:
            from psycopg_pool import ConnectionPool

            ConnectionPool.check_connection(conn)

    def connect(self, **kwargs: Any) -> Any:
        """A connection of its own, outside the pool, as the URL's user (migrations, VACUUM)."""
        try:
            return self._psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S, **kwargs)
        except self._psycopg.Error as exc:
            raise self.unavailable(exc) from None

    def unavailable(self, exc: BaseException) -> Unavailable:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Unavailable(f"the database at {self.where} cannot be reached: {detail}; retry when it is back")

    @contextlib.contextmanager
    def transaction(self, namespace: str = ALL, *, snapshot: bool = False) -> Iterator[Any]:
        """One transaction on a pooled connection, which sees ``namespace`` (``*``: every one);
        committed when the block ends, rolled back when it raises. ``snapshot``: one read-only
        snapshot for the whole transaction (REPEATABLE READ), for an export of a live store."""
        from psycopg import sql

        begin = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY" if snapshot else "BEGIN"
        start = sql.SQL(begin + "; SELECT set_config('evomem.namespace', {}, true)").format(sql.Literal(namespace))
        try:
            with self.pool.connection() as conn:
                conn.execute(start)  # one message: no parameters, so the simple protocol takes both
                try:
                    yield conn
                except BaseException:
                    with contextlib.suppress(Exception):  # a broken connection: the pool discards it
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
        except self._psycopg.errors.UniqueViolation as exc:
            raise Conflict(f"a concurrent write changed the same rows ({_constraint(exc)}); retry") from None
        except Exception as exc:
            if is_outage(exc):
                raise self.unavailable(exc) from None
            raise

    def ping(self) -> None:
        with self.transaction() as conn:
            conn.execute("SELECT 1").fetchone()

    def close(self) -> None:
        self.pool.close()


def _constraint(exc: Any) -> str:
    diag = getattr(exc, "diag", None)
    return getattr(diag, "constraint_name", None) or "a unique index"
