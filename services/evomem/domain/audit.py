"""The write audit log's records: who did which write, to which ids, when, and how it ended.

Plain data. ``evomem.app.access`` writes one ``AuditEntry`` per write call (remember, supersede,
unlink, review, forget, purge) made through the team gateway or the embedded HTTP server with
authentication on; the store keeps them (``AuditLog`` port). An entry never holds note text:
only ids, names and outcome codes, so a purge leaves nothing readable behind in the log.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The tools whose calls are audited ("purge" is forget(purge=True)).
AUDITED_TOOLS = ("remember", "supersede", "unlink", "review", "forget", "purge")

#: Most entries one ``audit`` call returns.
AUDIT_PAGE_MAX = 500


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One write. ``seq`` is 0 until the store assigns it; ``at`` is milliseconds since the epoch.

    ``identity``: the authenticated caller. ``on_behalf_of``: the ``author`` an admin named.
    ``outcome``: ``ok`` or the error code the call ended with (``forbidden``, ``not_found``...).
    ``ids``: the node ids involved (the new node first, then what it linked or restored).
    """

    at: int
    identity: str
    role: str
    tool: str
    namespace: str | None
    ids: tuple[str, ...]
    outcome: str
    on_behalf_of: str | None = None
    detail: str | None = None
    seq: int = 0


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """A page of the log, newest first: entries with ``since_ms <= at < until_ms`` in
    ``namespace`` (None: every namespace), below ``before_seq`` (the previous page's cursor)."""

    namespace: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    before_seq: int | None = None
    limit: int = 50
