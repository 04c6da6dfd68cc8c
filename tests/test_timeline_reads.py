"""The timeline's reads through the service, in both wirings (``wirings``: embedded, and over the
storage service's gRPC), and as a principal sees them (``GuardedService``): the chains changed
last (``recent``) and the decisions built on a chain (``dependents``), with clear errors for bad
arguments. Then the page's HTML for them (``pages``), without a browser."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.app.access import GuardedService, Principal
from evomem.app.memory import MemoryService
from evomem.domain.errors import Forbidden, InvalidArgument, InvalidId, NotFound
from evomem.domain.model import MemoryNode, ReviewFlag, Status
from evomem.entrypoints.web import pages

SESSIONS = "We keep sessions server-side in the session store."
CACHE = "We cache sessions in Redis, keyed by the session id."
EXPORT = "The session exporter writes the sessions to the data lake."
JWT = "We moved sessions to signed JWT cookies; server-side sessions no longer scale."


def _remember(service: MemoryService, text: str, **kw: object) -> str:
    time.sleep(0.003)  # ids are ULIDs (milliseconds, then random): one per millisecond sorts by time
    return service.remember(text, **kw).node.id  # type: ignore[arg-type]


@pytest.mark.parametrize("wiring", WIRINGS)
def test_recent_and_dependents_through_the_service(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        sessions = _remember(service, SESSIONS, tags=["sessions"])
        cache = _remember(service, CACHE, relations={"depends_on": [sessions]})
        export = _remember(service, EXPORT, relations={"implements": [sessions]}, scope="staging")
        jwt = _remember(service, JWT, supersedes=sessions, tags=["sessions"])
        page = service.recent()
        assert [h.id for h in page.heads] == [jwt, export, cache] and page.more is None
        assert [h.id for h in service.recent(tags=["sessions"]).heads] == [jwt]
        assert [h.id for h in service.recent(scope="prod-eu").heads] == [jwt, cache]  # the default scope's
        first = service.recent(limit=1)
        assert [h.id for h in first.heads] == [jwt] and first.more == jwt
        assert [h.id for h in service.recent(limit=2, before=first.more.lower()).heads] == [export, cache]
        # Built on the chain: by any of its versions' ids, newest first.
        assert [d.id for d in service.dependents(sessions)] == [export, cache]
        assert [d.id for d in service.dependents(jwt)] == [export, cache]
        assert service.dependents(cache) == []
        # Bad arguments are clear errors.
        with pytest.raises(InvalidArgument, match="limit"):
            service.recent(limit=0)
        with pytest.raises(InvalidArgument, match="limit"):
            service.recent(limit=True)  # type: ignore[arg-type]
        with pytest.raises(InvalidId, match="before"):
            service.recent(before="not-an-id")
        with pytest.raises(InvalidId):
            service.dependents("not-an-id")
        with pytest.raises(NotFound):
            service.dependents("01J9ZK3V8W5Q6R7S8T9V0W1X2Y")


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_principal_reads_only_its_namespaces(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ours = _remember(service, SESSIONS, namespace="team-a")
        built = _remember(service, CACHE, namespace="team-a", relations={"depends_on": [ours]})
        theirs = _remember(service, SESSIONS, namespace="team-b")
        rita = GuardedService(service, Principal("rita", "reader", ("team-a",)))
        assert [h.id for h in rita.recent().heads] == [built, ours]  # her first namespace by default
        with pytest.raises(Forbidden, match="team-b"):
            rita.recent("team-b")
        assert [d.id for d in rita.dependents(ours)] == [built]
        with pytest.raises(NotFound):  # another namespace's node answers as one that does not exist
            rita.dependents(theirs)
        admin = GuardedService(service, Principal("ada", "admin", ("team-a",)))
        assert [h.id for h in admin.recent("team-b").heads] == [theirs]


def _node(node_id: str, text: str, **kw: object) -> MemoryNode:
    return MemoryNode(id=node_id, raw_text=text, chain_root=kw.pop("chain_root", node_id), **kw)  # type: ignore[arg-type]


OLD = "01J9ZK3V8W5Q6R7S8T9V0W1X20"
NEW = "01J9ZK3V8W5Q6R7S8T9V0W1X21"
DEP = "01J9ZK3V8W5Q6R7S8T9V0W1X22"


def test_the_listing_page_counts_what_it_hides_and_links_the_next_page() -> None:
    head = _node(NEW, "We moved the ledger to SQLite.", version=2, supersedes=OLD, chain_root=OLD)
    old = _node(OLD, "We picked Postgres.", status=Status.SUPERSEDED, superseded_by=NEW)
    chains = [pages.ChainView(versions=[head, old]), pages.ChainView(versions=[_node(DEP, "Backups copy the file.")])]
    html = pages.search_page(pages.Filters(tag="ledger"), ["default"], chains, nonce="n", more=NEW)
    assert "2 chains changed last, newest first; 1 superseded version hidden" in html
    assert f'id="more" href="/ui?tag=ledger&amp;before={NEW}"' in html
    assert "← newest" not in html
    older = pages.search_page(pages.Filters(before=NEW), ["default"], [], nonce="n")
    assert "No decision matches." in older and 'href="/ui"' in older and 'id="more"' not in older
    empty = pages.search_page(pages.Filters(), ["default"], [], nonce="n")
    assert "Nothing is remembered in this namespace yet." in empty
    # A search keeps its own wording and never pages.
    found = pages.search_page(pages.Filters(q="ledger", before=NEW), ["default"], chains[:1], nonce="n", more=NEW)
    assert "1 chain; 1 superseded version hidden" in found and 'id="more"' not in found


def test_the_chain_page_lists_what_is_built_on_it_escaped() -> None:
    flag = ReviewFlag(replaced=(OLD,), replaced_by=(NEW,), via=(OLD,), flagged_at=1)
    dep = _node(DEP, "<script>x()</script> backups", relations={"depends_on": (OLD,)}, needs_review=flag)
    impl = _node("01J9ZK3V8W5Q6R7S8T9V0W1X23", "The exporter", relations={"implements": (NEW,)})
    head = _node(NEW, "SQLite.", version=2, supersedes=OLD, chain_root=OLD)
    chain = pages.ChainView(versions=[head], dependents=[("implements", impl), ("depends_on", dep)])
    html = pages.chain_page(chain, nonce="n")
    section = html[html.index('id="dependents"') :]
    assert section.index("implemented by") < section.index("depended on by")
    assert f'data-kind="depends_on" data-id="{DEP}"' in section and f"/ui/chain/{DEP}#v-{DEP}" in section
    assert "<script>x()" not in section and "&lt;script&gt;x()" in section
    assert "needs review" in section
    alone = pages.chain_page(pages.ChainView(versions=[head]), nonce="n")
    assert "no decision in force depends on or implements this one" in alone
