"""Typed dependencies (depends_on, implements) and needs_review, in both wirings.

When a decision is replaced (remember with supersedes, the supersede tool), every active decision
built on it, directly or through a chain of dependencies, is flagged needs_review naming the
replaced version and what replaced it; get_node and recall show the flag; review clears it (still
valid) or replaces the node in the same call; a dependency that would lead back into the note's
own chain is refused with [cycle]."""

from __future__ import annotations

from pathlib import Path

import pytest
from wirings import WIRINGS, wired

from evomem.app.memory import MemoryService
from evomem.domain.errors import CycleError, InvalidArgument, NotFound

SESSIONS = "We keep sessions server-side in the session store."
CACHE = "We cache sessions in Redis, keyed by the session id."
TTL = "Session cache entries expire after 30 minutes of inactivity."
WARMUP = "The login service warms the session cache on deploy."
UNRELATED = "Frontend bundles are built with webpack and served from the CDN."
JWT = "We moved sessions to signed JWT cookies; server-side sessions no longer scale."


def _story(service: MemoryService) -> dict[str, str]:
    ids = {"sessions": service.remember(SESSIONS).node.id}
    ids["cache"] = service.remember(CACHE, relations={"depends_on": [ids["sessions"]]}).node.id
    ids["ttl"] = service.remember(TTL, relations={"depends_on": [ids["cache"]]}).node.id
    ids["warmup"] = service.remember(WARMUP, relations={"implements": [ids["ttl"]]}).node.id
    ids["other"] = service.remember(UNRELATED, relations={"caused_by": [ids["sessions"]]}).node.id
    return ids


def _flag(service: MemoryService, node_id: str):
    node = service.get_node(node_id)[0]
    return node.needs_review


@pytest.mark.parametrize("wiring", WIRINGS)
def test_replacing_a_decision_flags_what_depends_on_it_three_hops_deep(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _story(service)
        assert all(_flag(service, i) is None for i in ids.values())
        jwt = service.remember(JWT, supersedes=ids["sessions"]).node.id
        cache, ttl, warmup = (_flag(service, ids[k]) for k in ("cache", "ttl", "warmup"))
        assert cache is not None and cache.replaced == (ids["sessions"],) and cache.replaced_by == (jwt,)
        assert cache.via == (ids["sessions"],) and cache.flagged_at > 0
        assert ttl is not None and ttl.replaced == (ids["sessions"],) and ttl.via == (ids["cache"],)
        assert warmup is not None and warmup.replaced_by == (jwt,) and warmup.via == (ids["ttl"],)
        assert _flag(service, ids["other"]) is None  # caused_by is not a dependency
        assert _flag(service, jwt) is None and _flag(service, ids["sessions"]) is None
        # recall shows the flag on the hit in force
        hit = next(h for h, _ in service.recall("session cache Redis").results if h.head.id == ids["cache"])
        assert hit.head.needs_review is not None


@pytest.mark.parametrize("wiring", WIRINGS)
def test_the_supersede_tool_flags_too_and_a_second_change_adds_to_the_flag(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _story(service)
        jwt = service.remember(JWT).node.id  # stored unlinked, then confirmed
        assert _flag(service, ids["cache"]) is None
        service.supersede(jwt, ids["sessions"])
        assert _flag(service, ids["cache"]).replaced_by == (jwt,)
        paseto = service.remember("We moved session tokens from JWT to PASETO.", supersedes=jwt).node.id
        flag = _flag(service, ids["cache"])
        assert flag.replaced == (ids["sessions"], jwt) and flag.replaced_by == (jwt, paseto)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_review_clears_the_flag_or_replaces_the_node_and_a_later_change_flags_again(
    tmp_path: Path, wiring: str
) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _story(service)
        jwt = service.remember(JWT, supersedes=ids["sessions"]).node.id
        out = service.review(ids["cache"])
        assert out.changed and out.cleared is not None and out.cleared.replaced_by == (jwt,)
        assert _flag(service, ids["cache"]) is None
        assert _flag(service, ids["ttl"]) is not None  # each node is reviewed on its own
        again = service.review(ids["cache"])
        assert not again.changed  # not flagged: nothing to clear
        # replaced in the same call: the TTL decision is replaced by a new note, in force now
        new_ttl = service.remember("Session entries now live as long as the JWT, 12 hours.").node.id
        replaced = service.review(ids["ttl"], still_valid=False, superseded_by=new_ttl)
        assert replaced.replaced_by is not None and replaced.replaced_by.id == new_ttl
        old = service.get_node(ids["ttl"])[0]
        assert str(old.status) == "superseded" and old.needs_review is None
        # what implements the TTL decision now names that change too
        assert _flag(service, ids["warmup"]).replaced[-1] == ids["ttl"]
        # the reviewed cache decision is flagged again when its dependency changes again
        service.remember("Sessions went back to the server-side store.", supersedes=jwt)
        assert _flag(service, ids["cache"]) is not None


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_dependency_cycle_is_refused_and_nothing_is_stored(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _story(service)
        before = service.stats().by_status
        with pytest.raises(CycleError, match=r"relations\.depends_on: a dependency cycle"):
            service.remember(JWT, supersedes=ids["sessions"], relations={"depends_on": [ids["ttl"]]})
        with pytest.raises(CycleError, match="cycle"):
            service.remember(JWT, supersedes=ids["sessions"], relations={"depends_on": [ids["sessions"]]})
        with pytest.raises(CycleError, match="cycle"):  # the cache decision replacing what it depends on
            service.supersede(ids["cache"], ids["sessions"])
        assert service.stats().by_status == before
        assert str(service.get_node(ids["sessions"])[0].status) == "active"
        assert _flag(service, ids["cache"]) is None


@pytest.mark.parametrize("wiring", WIRINGS)
def test_review_refuses_bad_input_with_clear_errors(tmp_path: Path, wiring: str) -> None:
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _story(service)
        with pytest.raises(NotFound, match="no node with id"):
            service.review("01J9ZK3V8W5Q6R7S8T9V0W1X2Y")
        with pytest.raises(InvalidArgument, match="still_valid=false needs superseded_by"):
            service.review(ids["cache"], still_valid=False)
        with pytest.raises(InvalidArgument, match="not a valid node id"):
            service.review("nope")
        jwt = service.remember(JWT, supersedes=ids["sessions"]).node.id
        with pytest.raises(InvalidArgument, match="only a decision in force is reviewed"):
            service.review(ids["sessions"])
        assert jwt


def test_the_memory_store_keeps_the_same_rules() -> None:
    """The in-memory Store of the unit tests flags, clears and refuses cycles as the engines do."""
    from memory_store import MemoryStore

    service = MemoryService.local(MemoryStore())
    ids = _story(service)
    with pytest.raises(CycleError):
        service.remember(JWT, supersedes=ids["sessions"], relations={"depends_on": [ids["ttl"]]})
    jwt = service.remember(JWT, supersedes=ids["sessions"]).node.id
    assert _flag(service, ids["warmup"]).replaced_by == (jwt,)
    assert service.review(ids["warmup"]).changed and _flag(service, ids["warmup"]) is None


def test_review_needs_the_writer_role_and_an_id_of_the_callers_namespaces(tmp_path: Path) -> None:
    """Under the team gateway's rules (GuardedService): a reader may not review; an id of another
    namespace answers as an unknown one."""
    from evomem.adapters.sqlite.store import SQLiteStore
    from evomem.app.access import GuardedService, Principal
    from evomem.domain.audit import AuditQuery
    from evomem.domain.errors import Forbidden

    store = SQLiteStore(tmp_path / "m.db")
    try:
        service = MemoryService.local(store)
        ids = _story(service)
        service.remember(JWT, supersedes=ids["sessions"])
        theirs = service.remember(CACHE + " (team b)", namespace="b").node.id
        reader = GuardedService(service, Principal("rita", "reader", ("default",)), store)
        with pytest.raises(Forbidden, match="review needs the writer role"):
            reader.review(ids["cache"])
        writer = GuardedService(service, Principal("wes", "writer", ("default",)), store)
        with pytest.raises(NotFound, match="no node with id"):
            writer.review(theirs)
        out = writer.review(ids["cache"])
        assert out.changed and store.get(ids["cache"]).needs_review is None
        entry = store.audit_page(AuditQuery(limit=5))[0]
        assert entry.tool == "review" and entry.identity == "wes" and entry.detail == "cleared"
    finally:
        store.close()


@pytest.mark.parametrize("wiring", WIRINGS)
def test_a_note_built_on_a_stale_decision_starts_flagged(tmp_path: Path, wiring: str) -> None:
    """Built on a decision already flagged, or on a version already replaced, a new note needs
    review from the start, naming what was replaced."""
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _story(service)
        jwt = service.remember(JWT, supersedes=ids["sessions"]).node.id
        on_flagged = service.remember(
            "Session cache hit rates are reported daily.", relations={"depends_on": [ids["cache"]]}
        )
        assert on_flagged.node.needs_review is not None  # flagged in the write that stored it
        flag = _flag(service, on_flagged.node.id)
        assert flag.replaced == (ids["sessions"],) and flag.replaced_by == (jwt,) and flag.via == (ids["cache"],)
        on_old = service.remember(
            "Session ids are 128-bit random.", relations={"depends_on": [ids["sessions"]]}
        ).node.id
        assert _flag(service, on_old).replaced_by == (jwt,)
        fresh = service.remember("JWT cookies are signed with Ed25519.", relations={"depends_on": [jwt]}).node.id
        assert _flag(service, fresh) is None


def test_a_link_made_by_the_automatic_linker_flags_too(linking_service: MemoryService) -> None:
    """The third way a decision is replaced: remember without supersedes, linked by the linker."""
    old = linking_service.remember("We picked Postgres for the ledger because the team knew it well.").node.id
    built = linking_service.remember(
        "Ledger reports are written as Postgres materialized views.", relations={"depends_on": [old]}
    ).node.id
    new = linking_service.remember("We moved the ledger from Postgres to SQLite, because Postgres was overkill.")
    assert new.node.supersedes == old and new.link is not None and new.link.method != "agent"
    flag = _flag(linking_service, built)
    assert flag is not None and flag.replaced == (old,) and flag.replaced_by == (new.node.id,)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_unlinking_the_change_puts_the_flags_it_raised_away(tmp_path: Path, wiring: str) -> None:
    """A wrong link undone: the version it replaced is in force again, so what depends on it
    no longer needs review for that change (other entries stay)."""
    with wired(wiring, tmp_path / "m.db") as service:
        ids = _story(service)
        jwt = service.remember(JWT, supersedes=ids["sessions"]).node.id
        assert _flag(service, ids["warmup"]) is not None
        service.unlink(jwt)
        assert all(_flag(service, ids[k]) is None for k in ("cache", "ttl", "warmup"))


def test_the_memory_store_puts_them_away_too() -> None:
    from memory_store import MemoryStore

    service = MemoryService.local(MemoryStore())
    ids = _story(service)
    jwt = service.remember(JWT, supersedes=ids["sessions"]).node.id
    service.unlink(jwt)
    assert _flag(service, ids["cache"]) is None


def test_the_part_of_the_graph_read_for_a_change_answers_as_the_whole_graph() -> None:
    """``dependencies.reaching`` reads only the dependents a replaced chain can reach, a layer at a
    time; ``stale`` on that part is ``stale`` on every dependent of the namespace (random graphs)."""
    import random

    from evomem.domain import dependencies as deps

    rng = random.Random(5)
    for _ in range(200):
        chains = [f"c{i}" for i in range(12)]
        versions = {c: [f"{c}v{j}" for j in range(rng.randint(1, 3))] for c in chains}
        roots = {v: c for c, vs in versions.items() for v in vs}
        graph = [
            deps.Dependent(
                versions[c][-1], c, tuple(rng.choice(versions[t]) for t in rng.sample(chains, rng.randint(0, 3)))
            )
            for c in chains
            if rng.random() < 0.7
        ]
        asked: list[set[str]] = []

        def dependents_of(
            wanted: set[str],
            graph: list[deps.Dependent] = graph,
            roots: dict[str, str] = roots,
            asked: list[set[str]] = asked,
        ) -> list[deps.Dependent]:
            asked.append(set(wanted))
            return [d for d in graph if any(roots[t] in wanted for t in d.targets)]

        replaced = rng.choice(chains)
        part = deps.reaching(replaced, dependents_of)
        assert deps.stale(replaced, part, roots) == deps.stale(replaced, graph, roots)
        assert len(part) <= len(graph)
        assert all(len(a & b) == 0 for i, a in enumerate(asked) for b in asked[i + 1 :])  # each chain asked once
