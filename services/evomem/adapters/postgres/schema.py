"""The PostgreSQL store's schema: named migrations, applied in order and recorded in the database.

    migrate(conn, role="evomem_app")   # every migration the database has not had yet, in one transaction
    schema_version(conn)               # the last one it has had (0: none)
    pending(conn)                      # the names of those it has not had

The same discipline as the SQLite file's (``adapters/sqlite/schema.py``): ``schema_migrations``
holds (version, name, applied_at) for each one applied; append only, never edit one that has
shipped. All pending migrations run in one transaction under a transaction-scoped advisory lock,
so one that fails changes nothing and records nothing, and two storage replicas starting on a new
database apply each migration once.

What the schema holds (the columns are the SQLite table's, so ``adapters/sqlite/codec.py`` maps
a node to a row for both):

- ``nodes``: one row per node, keyed by (namespace, id); a generated ``tsvector`` (``search``)
  with a GIN index over (namespace, search) (``btree_gin``). The chain invariants are the
  database's: a node is superseded at most once (unique (namespace, supersedes) and (namespace,
  superseded_by)), a chain has one head (the partial unique index ``nodes_one_head``), versions
  are unique per chain and never below 1, and both links name a row of the same namespace
  (deferred foreign keys). The writes take an advisory lock on the chain (``chains.py``).
- ``vectors``: one embedding per node (``halfvec(384)``, all-MiniLM-L6-v2's size) with the model
  that made it, an HNSW index (cosine), deleted with the node's purge.
- ``link_audit``, ``write_audit``, ``remember_keys``, ``offers``: as in SQLite, each with its
  namespace.

Every table carries the namespace, and every key and unique index starts with it, so the tables
can be distributed by namespace (Citus) without a change of shape, and no query joins across
namespaces. Row-level security: every table has a policy that shows a transaction only the rows
of the namespace it set (``SET LOCAL evomem.namespace``, ``db.py``), or every row when it set
``*`` (a read by id, the admin's export); nothing when it set nothing. The policies are forced
on the tables' owner too, and the store's connections run as ``role`` (``SET ROLE``), a role
that owns nothing and may only read and write rows.
"""

from __future__ import annotations

from typing import Any

from evomem.domain.model import now_ms

#: The role the store's connections run as (``SET ROLE``): it owns no table, RLS applies to it.
APP_ROLE = "evomem_app"
#: The advisory lock the migrations run under (any constant no other code takes).
MIGRATION_LOCK = 0x45564F4D454D  # "EVOMEM"
#: The tables under row-level security, every one with a ``namespace`` column.
TABLES = ("nodes", "vectors", "link_audit", "write_audit", "remember_keys", "offers")
#: The embedding size the ``vectors`` table holds (all-MiniLM-L6-v2).
VECTOR_DIM = 384

_VISIBLE = "(namespace = current_setting('evomem.namespace', true) OR current_setting('evomem.namespace', true) = '*')"


def _policies() -> str:
    return "\n".join(
        f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;\n"
        f"ALTER TABLE {t} FORCE ROW LEVEL SECURITY;\n"
        f"CREATE POLICY {t}_namespace ON {t} USING {_VISIBLE} WITH CHECK {_VISIBLE};"
        for t in TABLES
    )


# Append only; never edit one that has shipped. Statements are separated by lines that hold only ";".
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_nodes_chains_search",
        """
        CREATE EXTENSION IF NOT EXISTS btree_gin
        ;
        CREATE TABLE nodes (
            seq                 bigint GENERATED ALWAYS AS IDENTITY,
            id                  text NOT NULL,
            namespace           text NOT NULL DEFAULT 'default',
            scope               text,
            raw_text            text NOT NULL,
            trigger             text NOT NULL DEFAULT '',
            change              text NOT NULL DEFAULT '',
            alternatives_tried  text NOT NULL DEFAULT '',
            consequences        text NOT NULL DEFAULT '',
            summary             text NOT NULL DEFAULT '',
            tags                text NOT NULL DEFAULT '[]',
            session             text,
            author              text,
            created_at          bigint NOT NULL,
            relations           text NOT NULL DEFAULT '{}',
            status              text NOT NULL CHECK (status IN ('active', 'superseded', 'forgotten')),
            supersedes          text,
            superseded_by       text,
            chain_root          text NOT NULL,
            version             integer NOT NULL CHECK (version >= 1),
            link_method         text,
            link_confidence     double precision,
            link_by             text,
            link_evidence       text,
            link_requested_id   text,
            link_created_at     bigint,
            extraction_state    text NOT NULL CHECK (extraction_state IN ('pending', 'done', 'failed')),
            extractor           text NOT NULL DEFAULT '',
            extraction_error    text,
            extraction_attempts integer NOT NULL DEFAULT 0,
            forgotten_at        bigint,
            purged_at           bigint,
            scope_source        text,
            scope_evidence      text,
            possible_supersedes text NOT NULL DEFAULT '[]',
            file_erased_at      bigint,
            -- Full-text search: four weight classes (ts_rank's A-D) for FTS5's seven column weights
            -- (change 2.0; tags 1.5; raw text and trigger 1.0; alternatives, consequences, summary).
            search tsvector GENERATED ALWAYS AS (
                setweight(to_tsvector('english', change), 'A')
                || setweight(to_tsvector('english', tags), 'B')
                || setweight(to_tsvector('english', raw_text || ' ' || trigger), 'C')
                || setweight(to_tsvector('english', alternatives_tried || ' ' || consequences || ' ' || summary), 'D')
            ) STORED,
            PRIMARY KEY (namespace, id),
            FOREIGN KEY (namespace, supersedes) REFERENCES nodes (namespace, id) DEFERRABLE INITIALLY DEFERRED,
            FOREIGN KEY (namespace, superseded_by) REFERENCES nodes (namespace, id) DEFERRABLE INITIALLY DEFERRED
        )
        ;
        -- A node is replaced by at most one node, a chain has exactly one head, versions are unique.
        CREATE UNIQUE INDEX nodes_supersedes_once ON nodes (namespace, supersedes)
        ;
        CREATE UNIQUE INDEX nodes_superseded_by_once ON nodes (namespace, superseded_by)
        ;
        CREATE UNIQUE INDEX nodes_one_head ON nodes (namespace, chain_root) WHERE superseded_by IS NULL
        ;
        CREATE UNIQUE INDEX nodes_chain_version ON nodes (namespace, chain_root, version)
        ;
        -- Reads by id alone (get, chain): ULIDs never repeat, so the namespace is not needed to find one.
        CREATE INDEX nodes_id ON nodes (id)
        ;
        CREATE INDEX nodes_chain_root ON nodes (chain_root) WHERE superseded_by IS NULL
        ;
        CREATE INDEX nodes_seq ON nodes (seq)
        ;
        CREATE INDEX nodes_namespace_status ON nodes (namespace, status)
        ;
        CREATE INDEX nodes_extraction_open ON nodes (seq) WHERE extraction_state = 'pending' AND purged_at IS NULL
        ;
        CREATE INDEX nodes_purge_pending ON nodes (purged_at) WHERE purged_at IS NOT NULL AND file_erased_at IS NULL
        ;
        CREATE INDEX nodes_search ON nodes USING gin (namespace, search)
        ;
        CREATE TABLE link_audit (
            seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            namespace   text NOT NULL,
            at          bigint NOT NULL,
            action      text NOT NULL,
            node_id     text NOT NULL,
            target_id   text,
            method      text,
            by          text,
            confidence  double precision,
            detail      text
        )
        ;
        CREATE INDEX link_audit_node ON link_audit (namespace, node_id)
        ;
        CREATE INDEX link_audit_target ON link_audit (namespace, target_id)
        ;
        CREATE TABLE write_audit (
            seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            namespace     text,
            at            bigint NOT NULL,
            identity      text NOT NULL,
            role          text NOT NULL,
            tool          text NOT NULL,
            ids           text NOT NULL DEFAULT '[]',
            outcome       text NOT NULL,
            on_behalf_of  text,
            detail        text
        )
        ;
        CREATE INDEX write_audit_namespace_at ON write_audit (namespace, at)
        ;
        CREATE INDEX write_audit_at ON write_audit (at)
        ;
        CREATE TABLE remember_keys (
            namespace   text NOT NULL,
            key_hash    text NOT NULL,
            node_id     text NOT NULL,
            text_hash   text,
            created_at  bigint NOT NULL,
            PRIMARY KEY (namespace, key_hash)
        )
        ;
        CREATE INDEX remember_keys_node ON remember_keys (namespace, node_id)
        ;
        CREATE TABLE offers (
            namespace     text NOT NULL,
            candidate_id  text NOT NULL,
            node_id       text NOT NULL,
            reason        text,
            confidence    double precision,
            position      integer NOT NULL DEFAULT 0,
            PRIMARY KEY (namespace, candidate_id, node_id)
        )
        ;
        CREATE INDEX offers_node ON offers (namespace, node_id)
        ;
        -- The OR of many text-search queries (one per search term): search.py.
        CREATE AGGREGATE evomem_tsquery_or(tsquery) (SFUNC = tsquery_or, STYPE = tsquery)
        """,
    ),
    (
        "0002_vectors_hnsw",
        f"""
        CREATE EXTENSION IF NOT EXISTS vector
        ;
        CREATE TABLE vectors (
            namespace  text NOT NULL,
            node_id    text NOT NULL,
            model      text NOT NULL,
            embedding  halfvec({VECTOR_DIM}) NOT NULL,
            PRIMARY KEY (namespace, node_id),
            FOREIGN KEY (namespace, node_id) REFERENCES nodes (namespace, id) ON DELETE CASCADE
        )
        ;
        CREATE INDEX vectors_hnsw ON vectors USING hnsw (embedding halfvec_cosine_ops)
        """,
    ),
    (
        "0003_row_level_security",
        _policies().replace(";\n", "\n;\n"),
    ),
    (
        "0004_needs_review",
        """
        -- A decision built on another (relations depends_on, implements) is flagged when that one is
        -- replaced, directly or through a chain of dependencies (evomem.domain.dependencies): the
        -- replaced versions, what replaced each, the dependency it leads through (JSON lists), when.
        -- NULL: not flagged. Cleared by the review tool, or when the node is itself replaced.
        ALTER TABLE nodes ADD COLUMN needs_review_replaced text,
            ADD COLUMN needs_review_replaced_by text,
            ADD COLUMN needs_review_via text,
            ADD COLUMN needs_review_flagged_at bigint
        ;
        -- The active notes that name dependencies, read when a decision of their namespace is replaced.
        CREATE INDEX nodes_dependent ON nodes (namespace) WHERE status = 'active'
            AND (strpos(relations, '"depends_on"') > 0 OR strpos(relations, '"implements"') > 0)
        ;
        CREATE INDEX nodes_needs_review ON nodes (namespace) WHERE needs_review_replaced IS NOT NULL
        """,
    ),
    (
        "0005_heads_recent",
        """
        -- The heads in force of a namespace by id (ULIDs sort by time): the chains changed last,
        -- newest first, one page at a time (the timeline's listing, Store.recent_heads).
        CREATE INDEX nodes_heads_recent ON nodes (namespace, id) WHERE superseded_by IS NULL AND status = 'active'
        """,
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)


def statements(script: str) -> list[str]:
    """A migration's statements: separated by lines that hold only ``;`` (a function body may hold
    semicolons of its own)."""
    out, buf = [], []
    for line in script.splitlines():
        if line.strip() == ";":
            out.append("\n".join(buf))
            buf = []
        elif not line.strip().startswith("--"):
            buf.append(line)
    out.append("\n".join(buf))
    return [s.strip().rstrip(";") for s in out if s.strip()]


def _grants(role: str) -> list[str]:
    """The app role: created when missing (roles are the cluster's, so another database may have
    made it), allowed to read and write rows, never to own or alter a table."""
    return [
        "DO $$ BEGIN "
        f"IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN CREATE ROLE {role} NOLOGIN; END IF; "
        "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$",
        f"GRANT {role} TO CURRENT_USER",
        f"GRANT USAGE ON SCHEMA public TO {role}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        f"REVOKE UPDATE, DELETE ON schema_migrations FROM {role}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
    ]


def migrate(conn: Any, role: str = APP_ROLE) -> list[str]:
    """Apply and record every migration of ``MIGRATIONS`` the database has not had, in order, in
    one transaction (the caller's connection, not in autocommit). Returns the names applied."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)"
        )
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        applied = []
        for version, (name, sql) in enumerate(MIGRATIONS, start=1):
            if version in done:
                continue
            for statement in statements(sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                (version, name, now_ms()),
            )
            applied.append(name)
        if applied or not _role_ready(conn, role):
            for statement in _grants(role):
                conn.execute(statement)
    return applied


def _role_ready(conn: Any, role: str) -> bool:
    row = conn.execute(
        "SELECT has_table_privilege(%s, 'nodes', 'SELECT, INSERT, UPDATE, DELETE') FROM pg_roles WHERE rolname = %s",
        (role, role),
    ).fetchone()
    return bool(row and row[0])


def schema_version(conn: Any) -> int:
    """The last migration the database has had (0: none, or no ``schema_migrations`` table)."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
    if not exists:
        return 0
    return int(conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0])


def pending(conn: Any) -> list[str]:
    """The names of the migrations the database has not had."""
    have = schema_version(conn)
    return [name for name, _ in MIGRATIONS[have:]]
