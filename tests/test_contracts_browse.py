"""Contract tests of the timeline's reads, on every wiring of the records (``contract_support``:
SQLite, the in-memory store, PostgreSQL, ``LocalStorage`` and ``GrpcStorage``):

- ``recent_heads``: the heads in force of a namespace, newest first, a page at a time with a
  cursor, filtered by scope and tags as recall filters them;
- ``dependents``: the active nodes that depend on or implement any version of a chain.

Each wiring must give the answer computed here from what was written (the in-memory store reads
the port plainly, with no index and no scan bound, so it checks the SQL of the others too).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from contract_support import AGENT, STORAGES, STORES, UNKNOWN_ID, Wiring, note, open_wiring, raises_exactly

from evomem.domain.browse import RecentQuery
from evomem.domain.errors import InvalidArgument
from evomem.domain.model import MemoryNode, NewNote


@pytest.fixture(params=STORES + STORAGES)
def records(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Wiring]:
    with open_wiring(request.param, tmp_path) as w:
        yield w


def _write(w: Wiring, new: NewNote, supersedes: str | None = None) -> MemoryNode:
    """A note whose id sorts after every earlier one (ids are ULIDs: milliseconds, then random)."""
    time.sleep(0.003)
    return w.insert(new, supersedes=supersedes, link=AGENT if supersedes else None)


def _ids(nodes: list[MemoryNode]) -> list[str]:
    return [n.id for n in nodes]


def test_recent_heads_pages_the_chains_changed_last(records: Wiring) -> None:
    port = records.port
    ledger = _write(records, note("We picked Postgres for the ledger.", tags=("ledger",)))
    staging = _write(records, note("Staging runs the ledger on one node.", scope="staging", tags=("ledger", "ops")))
    eu = _write(records, note("The EU region keeps its own ledger copy.", scope="eu-west"))
    gone = _write(records, note("We tried a nightly ledger export."))
    port.forget(gone.id)
    _write(records, note("Another team's ledger runs on MySQL.", namespace="team-b"))
    moved = _write(records, note("We moved the ledger from Postgres to SQLite.", tags=("ledger",)), ledger.id)
    assert moved.chain_root == ledger.chain_root
    # Newest first: the chain the move changed is on top; replaced, forgotten and other namespaces' are not.
    everything = port.recent_heads(RecentQuery("default", limit=10))
    assert _ids(everything.heads) == [moved.id, eu.id, staging.id]
    assert everything.more is None
    assert [h.version for h in everything.heads] == [2, 1, 1]
    # One page at a time: the cursor is the last head shown, and the pages add up to the whole.
    first = port.recent_heads(RecentQuery("default", limit=2))
    assert _ids(first.heads) == [moved.id, eu.id] and first.more == eu.id
    second = port.recent_heads(RecentQuery("default", limit=2, before=first.more))
    assert _ids(second.heads) == [staging.id] and second.more is None
    exact = port.recent_heads(RecentQuery("default", limit=3))
    assert len(exact.heads) == 3 and exact.more is None  # no dangling "more" when nothing follows
    # Filters are recall's: a scope lists its own decisions and the default scope's; tags must all be there.
    in_staging = port.recent_heads(RecentQuery("default", scope="staging", limit=10))
    assert _ids(in_staging.heads) == [moved.id, staging.id]
    tagged = port.recent_heads(RecentQuery("default", tags=("ledger", "ops"), limit=10))
    assert _ids(tagged.heads) == [staging.id]
    assert port.recent_heads(RecentQuery("default", tags=("nothing",), limit=10)).heads == []
    assert _ids(port.recent_heads(RecentQuery("team-b", limit=10)).heads) != []
    assert port.recent_heads(RecentQuery("nobody-here", limit=10)).heads == []


def test_dependents_are_who_builds_on_any_version_of_a_chain(records: Wiring) -> None:
    port = records.port
    sessions = _write(records, note("We keep sessions server-side."))
    cache = _write(records, note("We cache sessions in Redis.", relations={"depends_on": (sessions.id,)}))
    jwt = _write(records, note("Sessions are signed JWT cookies now."), sessions.id)
    exporter = _write(records, note("The session exporter reads JWT claims.", relations={"implements": (jwt.id,)}))
    ttl = _write(records, note("Cache entries expire after 30 minutes.", relations={"depends_on": (cache.id,)}))
    _write(records, note("Sessions were discussed in the review.", relations={"related": (sessions.id,)}))
    dropped = _write(records, note("A session audit job.", relations={"depends_on": (sessions.id,)}))
    port.forget(dropped.id)
    old = _write(records, note("Logins read the session row.", relations={"depends_on": (sessions.id,)}))
    _write(records, note("Logins read the JWT; nothing else."), old.id)
    # Every version of the chain answers the same: the active nodes that name one of its versions.
    assert _ids(port.dependents(sessions.id)) == [exporter.id, cache.id]
    assert _ids(port.dependents(jwt.id)) == [exporter.id, cache.id]
    built = {n.id: n for n in port.dependents(sessions.id)}
    assert built[cache.id].relations == {"depends_on": (sessions.id,)}
    assert built[cache.id].needs_review is not None  # the node as stored, its flag included
    assert _ids(port.dependents(sessions.id, limit=1)) == [exporter.id]
    # Direct only (the page of each links to the next), and none for a leaf or an unknown id.
    assert _ids(port.dependents(cache.id)) == [ttl.id]
    assert port.dependents(ttl.id) == []
    assert port.dependents(UNKNOWN_ID) == []


def test_the_wire_refuses_bad_sizes_and_cursors(tmp_path: Path) -> None:
    """The storage service checks what arrives over the wire (the stores trust the service)."""
    with open_wiring("grpc", tmp_path) as w:
        raises_exactly(InvalidArgument, lambda: w.port.recent_heads(RecentQuery("default", limit=0)))
        raises_exactly(InvalidArgument, lambda: w.port.recent_heads(RecentQuery("default", limit=101)))
        raises_exactly(InvalidArgument, lambda: w.port.recent_heads(RecentQuery("default", before="nope")))
        raises_exactly(InvalidArgument, lambda: w.port.recent_heads(RecentQuery("default", history_depth=51)))
        raises_exactly(InvalidArgument, lambda: w.port.dependents(UNKNOWN_ID, limit=1000))
        assert w.port.recent_heads(RecentQuery("default", limit=100)).heads == []


def test_a_page_carries_its_heads_earlier_versions_when_asked(records: Wiring) -> None:
    """``history_depth``: each head's earlier versions, newest first, read with the page (the
    timeline's listing in one storage call); heads without any and depth 0 carry none."""
    port = records.port
    first = _write(records, note("We picked Postgres for the ledger."))
    second = _write(records, note("We moved the ledger from Postgres to SQLite."), first.id)
    third = _write(records, note("We moved the ledger from SQLite to DuckDB."), second.id)
    alone = _write(records, note("The queue runs on Redis streams."))
    page = port.recent_heads(RecentQuery("default", limit=10, history_depth=5))
    assert _ids(page.heads) == [alone.id, third.id]
    assert {k: _ids(v) for k, v in page.histories.items()} == {third.id: [second.id, first.id]}
    assert page.histories[third.id][0].raw_text == second.raw_text  # whole nodes, as chain() reads them
    one = port.recent_heads(RecentQuery("default", limit=10, history_depth=1))
    assert {k: _ids(v) for k, v in one.histories.items()} == {third.id: [second.id]}
    assert port.recent_heads(RecentQuery("default", limit=10)).histories == {}
