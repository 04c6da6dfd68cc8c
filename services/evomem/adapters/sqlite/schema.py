"""The store's schema: named migrations, applied in order and recorded in the file.

    migrate(conn)            # in a write transaction: every migration the file has not had yet
    schema_version(conn)     # the last one it has had

Small, named, recorded migrations: ``schema_migrations`` holds (version, name, applied_at) for
each one applied. Append only; never edit one that has shipped. A migration runs in the
opener's write transaction, so one that fails changes nothing and records nothing, and two
processes opening a new file together apply each migration once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evomem.adapters.sqlite import driver
from evomem.domain.model import now_ms

if TYPE_CHECKING:
    import sqlite3

#: ``nodes_fts``'s columns, in the table's order (migration 0001), and bm25's weight for each (the
#: search's ranking, the term bounds' weighted frequencies and Tantivy's field boosts read these).
FTS_COLUMNS = ("raw_text", "change", "trigger", "alternatives_tried", "consequences", "summary", "tags")
FTS_WEIGHTS = (1.0, 2.0, 1.0, 0.75, 0.75, 0.5, 1.5)

# Append only; never edit one that has shipped.
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_nodes_chains_fts",
        """
        CREATE TABLE nodes (
            rowid               INTEGER PRIMARY KEY,
            id                  TEXT NOT NULL UNIQUE,
            namespace           TEXT NOT NULL DEFAULT 'default',
            scope               TEXT,
            raw_text            TEXT NOT NULL,
            trigger             TEXT NOT NULL DEFAULT '',
            change              TEXT NOT NULL DEFAULT '',
            alternatives_tried  TEXT NOT NULL DEFAULT '',
            consequences        TEXT NOT NULL DEFAULT '',
            summary             TEXT NOT NULL DEFAULT '',
            tags                TEXT NOT NULL DEFAULT '[]',
            session             TEXT,
            author              TEXT,
            created_at          INTEGER NOT NULL,
            relations           TEXT NOT NULL DEFAULT '{}',
            status              TEXT NOT NULL CHECK (status IN ('active', 'superseded', 'forgotten')),
            supersedes          TEXT REFERENCES nodes(id) DEFERRABLE INITIALLY DEFERRED,
            superseded_by       TEXT REFERENCES nodes(id) DEFERRABLE INITIALLY DEFERRED,
            chain_root          TEXT NOT NULL,
            version             INTEGER NOT NULL CHECK (version >= 1),
            link_method         TEXT,
            link_confidence     REAL,
            link_by             TEXT,
            link_evidence       TEXT,
            link_requested_id   TEXT,
            link_created_at     INTEGER,
            extraction_state    TEXT NOT NULL CHECK (extraction_state IN ('pending', 'done', 'failed')),
            extractor           TEXT NOT NULL DEFAULT '',
            extraction_error    TEXT,
            extraction_attempts INTEGER NOT NULL DEFAULT 0,
            forgotten_at        INTEGER,
            purged_at           INTEGER
        );
        -- A node is replaced by at most one node, and a chain has exactly one head.
        -- (Full, not partial, indexes: SQLite also uses them for the foreign-key checks;
        -- NULLs are distinct in a unique index.)
        CREATE UNIQUE INDEX nodes_supersedes_once ON nodes(supersedes);
        CREATE UNIQUE INDEX nodes_superseded_by_once ON nodes(superseded_by);
        CREATE UNIQUE INDEX nodes_one_head ON nodes(chain_root) WHERE superseded_by IS NULL;
        CREATE UNIQUE INDEX nodes_chain_version ON nodes(chain_root, version);
        CREATE INDEX nodes_namespace_status ON nodes(namespace, status);
        CREATE INDEX nodes_extraction_open ON nodes(extraction_state) WHERE extraction_state != 'done';

        CREATE VIRTUAL TABLE nodes_fts USING fts5(
            raw_text, change, trigger, alternatives_tried, consequences, summary, tags,
            content='nodes', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER nodes_fts_insert AFTER INSERT ON nodes BEGIN
            INSERT INTO nodes_fts(rowid, raw_text, change, trigger, alternatives_tried, consequences, summary, tags)
            VALUES (new.rowid, new.raw_text, new.change, new.trigger, new.alternatives_tried,
                    new.consequences, new.summary, new.tags);
        END;
        CREATE TRIGGER nodes_fts_delete AFTER DELETE ON nodes BEGIN
            INSERT INTO nodes_fts(nodes_fts, rowid, raw_text, change, trigger, alternatives_tried,
                                  consequences, summary, tags)
            VALUES ('delete', old.rowid, old.raw_text, old.change, old.trigger, old.alternatives_tried,
                    old.consequences, old.summary, old.tags);
        END;
        CREATE TRIGGER nodes_fts_update AFTER UPDATE OF raw_text, change, trigger, alternatives_tried,
                consequences, summary, tags ON nodes BEGIN
            INSERT INTO nodes_fts(nodes_fts, rowid, raw_text, change, trigger, alternatives_tried,
                                  consequences, summary, tags)
            VALUES ('delete', old.rowid, old.raw_text, old.change, old.trigger, old.alternatives_tried,
                    old.consequences, old.summary, old.tags);
            INSERT INTO nodes_fts(rowid, raw_text, change, trigger, alternatives_tried, consequences, summary, tags)
            VALUES (new.rowid, new.raw_text, new.change, new.trigger, new.alternatives_tried,
                    new.consequences, new.summary, new.tags);
        END;
        """,
    ),
    (
        "0002_link_audit",
        """
        -- Every change to a chain, for audit and for undoing a wrong link.
        CREATE TABLE link_audit (
            seq         INTEGER PRIMARY KEY,
            at          INTEGER NOT NULL,
            action      TEXT NOT NULL,
            node_id     TEXT NOT NULL,
            target_id   TEXT,
            method      TEXT,
            by          TEXT,
            confidence  REAL,
            detail      TEXT
        );
        CREATE INDEX link_audit_node ON link_audit(node_id);
        """,
    ),
    (
        "0003_scope_provenance_possible_links",
        """
        -- Where a scope came from (explicit or inferred, and the span it was inferred from),
        -- and the candidates a linker abstained on, for the agent to confirm.
        ALTER TABLE nodes ADD COLUMN scope_source TEXT;
        ALTER TABLE nodes ADD COLUMN scope_evidence TEXT;
        ALTER TABLE nodes ADD COLUMN possible_supersedes TEXT NOT NULL DEFAULT '[]';
        UPDATE nodes SET scope_source = 'explicit' WHERE scope IS NOT NULL;
        """,
    ),
    (
        "0004_idempotency_keys_file_erasure",
        """
        -- When a purge's bytes were gone from every file (NULL: not yet, or a purge made
        -- before this column existed: the next checkpoint that finishes records it).
        ALTER TABLE nodes ADD COLUMN file_erased_at INTEGER;
        CREATE INDEX nodes_purge_file_pending ON nodes(purged_at)
            WHERE purged_at IS NOT NULL AND file_erased_at IS NULL;
        -- remember's idempotency keys: a hash of (namespace, key), never the key itself, and a
        -- hash of the note's text to tell a retry from a conflict (NULL once the note is purged).
        CREATE TABLE remember_keys (
            key_hash    TEXT PRIMARY KEY,
            node_id     TEXT NOT NULL,
            text_hash   TEXT,
            created_at  INTEGER NOT NULL
        );
        CREATE INDEX remember_keys_node ON remember_keys(node_id);
        -- The dedupe window reads a namespace's recent notes (ULIDs sort by time).
        CREATE INDEX nodes_namespace_recent ON nodes(namespace, id);
        """,
    ),
    (
        "0005_write_audit",
        """
        -- Every write call made with authentication on (evomem.app.access): who, which tool, which
        -- ids, when, how it ended. Never any note text, so a purge leaves nothing readable here.
        CREATE TABLE write_audit (
            seq           INTEGER PRIMARY KEY,
            at            INTEGER NOT NULL,
            identity      TEXT NOT NULL,
            role          TEXT NOT NULL,
            tool          TEXT NOT NULL,
            namespace     TEXT,
            ids           TEXT NOT NULL DEFAULT '[]',
            outcome       TEXT NOT NULL,
            on_behalf_of  TEXT,
            detail        TEXT
        );
        CREATE INDEX write_audit_namespace_at ON write_audit(namespace, at);
        CREATE INDEX write_audit_at ON write_audit(at);
        """,
    ),
    (
        "0006_offers",
        """
        -- The reverse of possible_supersedes: node_id (a note a linker abstained on) may replace
        -- candidate_id. Recall reads it by candidate (the heads it answers) to show the newer
        -- note beside the old one. Kept by the store with the column: written with the note,
        -- dropped when the note is linked, forgotten or purged (and when the candidate is).
        -- reason: the linker's few words (scores, no note text).
        CREATE TABLE offers (
            candidate_id  TEXT NOT NULL,
            node_id       TEXT NOT NULL,
            namespace     TEXT NOT NULL,
            reason        TEXT,
            PRIMARY KEY (candidate_id, node_id)
        ) WITHOUT ROWID;
        CREATE INDEX offers_node ON offers(node_id);
        -- Notes stored before this table: their possible_supersedes, without reasons (never stored).
        INSERT OR IGNORE INTO offers(candidate_id, node_id, namespace)
            SELECT j.value, n.id, n.namespace FROM nodes n, json_each(n.possible_supersedes) j
            WHERE n.possible_supersedes != '[]' AND n.status != 'forgotten' AND n.purged_at IS NULL
                AND j.value != n.id;
        """,
    ),
    (
        "0007_offer_position",
        """
        -- How likely the offering note replaces the candidate: its linker's confidence (NULL:
        -- not stored, offers made before this column) and where the note listed it among its
        -- possible_supersedes (0: first). Recall shows a head's likeliest successors first, not
        -- the newest: a newer note that replaces nothing may still list an old decision as a
        -- distant guess, ahead of the version that does replace it.
        ALTER TABLE offers ADD COLUMN confidence REAL;
        ALTER TABLE offers ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
        UPDATE offers SET position = coalesce((
            SELECT min(CAST(j.key AS INTEGER)) FROM nodes n, json_each(n.possible_supersedes) j
            WHERE n.id = offers.node_id AND j.value = offers.candidate_id
        ), 0);
        """,
    ),
    (
        "0008_needs_review",
        """
        -- A decision built on another (relations depends_on, implements) is flagged when that one is
        -- replaced, directly or through a chain of dependencies (evomem.domain.dependencies): the
        -- replaced versions, what replaced each, the dependency it leads through (JSON lists), when.
        -- NULL: not flagged. Cleared by the review tool, or when the node is itself replaced.
        ALTER TABLE nodes ADD COLUMN needs_review_replaced TEXT;
        ALTER TABLE nodes ADD COLUMN needs_review_replaced_by TEXT;
        ALTER TABLE nodes ADD COLUMN needs_review_via TEXT;
        ALTER TABLE nodes ADD COLUMN needs_review_flagged_at INTEGER;
        -- The active notes that name dependencies, read when a decision of their namespace is replaced.
        CREATE INDEX nodes_dependent ON nodes(namespace) WHERE status = 'active'
            AND (instr(relations, '"depends_on"') > 0 OR instr(relations, '"implements"') > 0);
        CREATE INDEX nodes_needs_review ON nodes(namespace) WHERE needs_review_replaced IS NOT NULL;
        """,
    ),
    (
        "0009_heads_recent",
        """
        -- The heads in force of a namespace by id (ULIDs sort by time): the chains changed last,
        -- newest first, one page at a time (the timeline's listing, Store.recent_heads).
        CREATE INDEX nodes_heads_recent ON nodes(namespace, id) WHERE superseded_by IS NULL AND status = 'active';
        """,
    ),
    (
        "0010_term_bounds",
        """
        -- Each FTS5 token's largest weighted frequency in a row and smallest row length over it
        -- (evomem.adapters.sqlite.term_bounds): the bounds the pruned search leaves rows out with.
        -- term_bounds.ensure, at every open, creates the triggers that write it in each write's
        -- transaction (a row at a time, through a one-row contentless FTS5 table with the same
        -- tokenizer) and fills it from the FTS index when stale (rows = -1: not maintained; else
        -- the FTS rows the triggers have seen, compared with FTS5's own count).
        CREATE TABLE term_bounds (
            term       TEXT PRIMARY KEY,
            max_f      REAL NOT NULL,
            min_ratio  REAL NOT NULL,
            docs       INTEGER NOT NULL  -- the rows that have it (FTS5's count for its idf)
        ) WITHOUT ROWID;
        CREATE TABLE term_bounds_state (rows INTEGER NOT NULL);
        INSERT INTO term_bounds_state(rows) VALUES (-1);
        CREATE VIRTUAL TABLE nodes_fts_instances USING fts5vocab(nodes_fts, instance);
        CREATE VIRTUAL TABLE term_probe USING fts5(
            raw_text, change, trigger, alternatives_tried, consequences, summary, tags,
            content='', tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE term_probe_instances USING fts5vocab(term_probe, instance);
        """,
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> None:
    """Apply and record every migration of ``MIGRATIONS`` the file has not had, in order, in the
    caller's write transaction (``MIGRATIONS`` is read now: tests pin older versions)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    for version, (name, sql) in enumerate(MIGRATIONS, start=1):
        if version in done:
            continue
        for statement in split_sql(sql):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
            (version, name, now_ms()),
        )


def schema_version(conn: sqlite3.Connection) -> int:
    """The last migration the file has had (0: none)."""
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buf: list[str] = []
    for line in script.strip().splitlines():
        if line.strip().startswith("--") or not line.strip():
            continue
        buf.append(line)
        text = "\n".join(buf).strip()
        if text.endswith(";") and driver.sqlite.complete_statement(text):
            statements.append(text)
            buf = []
    if buf and "\n".join(buf).strip():
        statements.append("\n".join(buf).strip())
    return statements
