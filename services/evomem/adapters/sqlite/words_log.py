"""The log the Tantivy word index reads: which nodes' words may have changed since it last looked.

The store's triggers (``LOG_SQL``, created when a store first opens with ``tantivy``) write the
rowid of every node inserted, deleted, or whose text, namespace, status or purge changed, in the
write's own transaction. ``tantivy_index`` reads it past its watermark and prunes what it has
committed.

A store that settles on FTS5 for an open (``words.settle_log``) keeps it bounded: with no index
folder beside the file nothing will read it, and ``drop_log`` removes the table and its triggers
(the next Tantivy open builds its index from the notes); with a folder, ``trim_log`` keeps the
newest ``LOG_KEEP`` entries. An index further behind then finds a pruned part of the log
(``log_covers``) and is rebuilt, which costs about what reading that many entries would.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    import sqlite3

    from evomem.adapters.sqlite.conn import Connections

#: The log of the nodes whose words may have changed, and the triggers that fill it. Status is
#: logged too: a forgotten or purged note leaves the index, and one restored comes back.
LOG_SQL = (
    "CREATE TABLE IF NOT EXISTS words_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, node_rowid INTEGER NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS words_log_insert AFTER INSERT ON nodes BEGIN "
    "INSERT INTO words_log(node_rowid) VALUES (new.rowid); END",
    "CREATE TRIGGER IF NOT EXISTS words_log_update AFTER UPDATE OF raw_text, change, trigger, "
    "alternatives_tried, consequences, summary, tags, namespace, status, purged_at ON nodes BEGIN "
    "INSERT INTO words_log(node_rowid) VALUES (new.rowid); END",
    "CREATE TRIGGER IF NOT EXISTS words_log_delete AFTER DELETE ON nodes BEGIN "
    "INSERT INTO words_log(node_rowid) VALUES (old.rowid); END",
)


#: ``trim_log`` keeps this many of the newest entries.
LOG_KEEP = 100_000
#: What ``drop_log`` drops: the triggers first, then the table (its ``sqlite_sequence`` row with it).
DROP_SQL = (
    "DROP TRIGGER IF EXISTS words_log_insert",
    "DROP TRIGGER IF EXISTS words_log_update",
    "DROP TRIGGER IF EXISTS words_log_delete",
    "DROP TABLE IF EXISTS words_log",
)


def index_folder(db: Connections) -> str | None:
    """``<db>.words`` beside the store's file, where the Tantivy index lives; None for a store in RAM."""
    if db.memory:
        return None
    path = unquote(urlparse(db.path).path) if db.uri else db.path
    return path + ".words"


def has_log(conn: sqlite3.Connection) -> bool:
    """Whether the file has the log (a store once opened on Tantivy)."""
    sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'words_log'"
    return conn.execute(sql).fetchone() is not None


def drop_log(conn: sqlite3.Connection) -> None:
    """The log and its triggers dropped, in the caller's write transaction."""
    for sql in DROP_SQL:
        conn.execute(sql)


def trim_log(conn: sqlite3.Connection, keep: int | None = None) -> int:
    """The log's entries older than its newest ``keep`` (``LOG_KEEP``) deleted, in the caller's
    write transaction. How many."""
    keep = LOG_KEEP if keep is None else keep
    cur = conn.execute("DELETE FROM words_log WHERE seq <= ?", (log_position(conn) - keep,))
    return int(cur.rowcount)


def log_position(conn: sqlite3.Connection) -> int:
    """The last sequence number ``words_log`` gave out (0: none yet). AUTOINCREMENT never gives
    one out twice, even after the rows below it were pruned."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'words_log'").fetchone()
    return int(row[0]) if row else 0


def log_covers(conn: sqlite3.Connection, watermark: int) -> bool:
    """Whether the log still holds every entry after ``watermark``: not ahead of the log (an index
    from another file, or a newer copy), and none of its rows after it pruned (an older copy)."""
    end = log_position(conn)
    if watermark > end:
        return False
    held = conn.execute("SELECT count(*) FROM words_log WHERE seq > ?", (watermark,)).fetchone()[0]
    return int(held) == end - watermark


def read_log(conn: sqlite3.Connection, after: int, upto: int) -> list[tuple[int, int]]:
    """The log's (seq, node rowid) entries in ``(after, upto]``, in order."""
    rows: Iterable[tuple[int, int]] = conn.execute(
        "SELECT seq, node_rowid FROM words_log WHERE seq > ? AND seq <= ? ORDER BY seq", (after, upto)
    )
    return [(int(s), int(r)) for s, r in rows]
