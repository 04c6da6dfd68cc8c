"""The log the Tantivy word index reads: which nodes' words may have changed since it last looked.

The store's triggers (``LOG_SQL``, created when a store first opens with ``tantivy``) write the
rowid of every node inserted, deleted, or whose text, namespace, status or purge changed, in the
write's own transaction. ``tantivy_index`` reads it past its watermark and prunes what it has
committed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

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
