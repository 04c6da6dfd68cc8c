"""Hybrid recall: BM25 and vector hits fused by rank, then resolved to the version in force.

Real parts: SQLite files on disk (sqlean + sqlite-vec, vectors in the store's own file) and the
real offline ONNX model. The fake embedder appears only where a failure must be provoked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path

import pytest

from evomem.adapters.models.embedding import OnnxEmbedder
from evomem.adapters.sqlite.driver import sqlite, vec_problem
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.adapters.vectors.index import VectorIndex
from evomem.adapters.vectors.semantic import MAX_EMBED_CHARS, SemanticIndex
from evomem.app.background import start_background
from evomem.app.memory import MemoryService
from evomem.bootstrap.embedded import build_embedded
from evomem.bootstrap.vectors import vectors_problem
from evomem.domain.errors import Unavailable
from evomem.domain.linkers.decision_text import search_text
from evomem.domain.model import SearchHit
from evomem.domain.recall import fuse
from evomem.domain.remember import ContextQuery
from evomem.domain.text import query_terms
from evomem.settings import Settings

pytestmark = pytest.mark.skipif(
    vectors_problem() is not None, reason=f"hybrid recall cannot run here: {vectors_problem()}"
)

OLD = "We keep the ledger in Postgres."
NEW = "Bookkeeping records now live in SQLite."
DISTRACTORS = [
    "The team picked Grafana for dashboards.",
    "Deploys go out on Tuesdays after the standup.",
    "The mobile app uses Kotlin for Android.",
]
PARAPHRASE_QUERY = "where are accounting entries persisted"  # no word in common with OLD or NEW


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    e = OnnxEmbedder()
    e.load()
    return e


def hybrid(path: Path | str, embedder: OnnxEmbedder, **kw: object) -> MemoryService:
    store = SQLiteStore(path)
    vectors = SemanticIndex(embedder, VectorIndex(store.path, model=embedder.name), min_similarity=0.2)
    return MemoryService.local(store, vectors=vectors, **kw)  # type: ignore[arg-type]


@pytest.fixture
def svc(tmp_path: Path, embedder: OnnxEmbedder) -> Iterator[MemoryService]:
    s = hybrid(tmp_path / "h.db", embedder)
    yield s
    s.vectors.close()  # type: ignore[union-attr]
    s.close()


def texts(out: object) -> list[str]:
    return [e.head.raw_text for e, _ in out.results]  # type: ignore[attr-defined]


def link_candidates(svc: MemoryService, text: str) -> list[str]:
    """The ids of the linker's candidates for a note of ``text``, as ``remember`` reads them
    (``Storage.remember_context``, sized by the service's config)."""
    config = svc.config
    query = ContextQuery(
        text=text,
        namespace="default",
        candidates=True,
        search_terms=tuple(query_terms(search_text(text))),
        limit=config.link_candidates,
        vector_limit=config.link_vector_candidates if config.vectors else 0,
    )
    return [c.id for c in svc.storage.remember_context(query).candidates]


# ---------------------------------------------------------------------- fusion (pure)


def hit(i: str, via: str = "bm25") -> SearchHit:
    return SearchHit(node_id=i, chain_root=i, score=0.0, via=(via,))


def test_rrf_puts_a_hit_found_by_both_searches_first() -> None:
    bm25 = [hit("A"), hit("B"), hit("C")]
    vec = [hit("C", "vector"), hit("D", "vector")]
    fused = fuse(bm25, vec)
    assert [h.node_id for h in fused] == ["C", "A", "B", "D"]  # B and D tie (rank 2 each): first ranking first
    assert fused[0].via == ("bm25", "vector")
    assert fused[3].via == ("vector",)
    assert fused[0].score == pytest.approx(1 / 63 + 1 / 61, abs=1e-6)


def test_rrf_ties_keep_the_first_rankings_order() -> None:
    fused = fuse([hit("A")], [hit("B", "vector")])
    assert [h.node_id for h in fused] == ["A", "B"]
    assert fuse([], []) == []


# ---------------------------------------------------------------------- recall


def test_paraphrase_is_found_only_with_vectors(tmp_path: Path, svc: MemoryService) -> None:
    for t in DISTRACTORS:
        svc.remember(t)
    old = svc.remember(OLD).node
    svc.remember(NEW, supersedes=old.id)
    out = svc.recall(PARAPHRASE_QUERY, k=3)
    assert texts(out)[0] == NEW  # the version in force, whichever version the vector matched
    assert "vector" in out.results[0][0].best.via
    assert "bm25" not in out.results[0][0].best.via

    bm25_only = MemoryService.local(SQLiteStore(svc.storage.store.path))  # same file, vectors off
    try:
        assert NEW not in texts(bm25_only.recall(PARAPHRASE_QUERY, k=3))
    finally:
        bm25_only.close()


def test_old_version_found_by_meaning_resolves_to_the_head(svc: MemoryService) -> None:
    old = svc.remember("Payments are reconciled nightly by a cron job in Postgres.").node
    new = svc.remember("We moved it to an event-driven reconciler.", supersedes=old.id).node
    for t in DISTRACTORS:
        svc.remember(t)
    out = svc.recall("when does money matching with the bank happen", k=2)
    first, _ = out.results[0]
    assert first.head.id == new.id
    assert any(m.node_id == old.id and "vector" in m.via for m in first.matches)


def test_forgotten_notes_are_not_found_by_meaning(svc: MemoryService) -> None:
    n = svc.remember(NEW).node
    svc.remember(DISTRACTORS[0])
    svc.forget(n.id)
    assert NEW not in texts(svc.recall(PARAPHRASE_QUERY, k=5))


def test_unrelated_query_gets_no_vector_noise(svc: MemoryService) -> None:
    for t in DISTRACTORS:
        svc.remember(t)
    out = svc.recall("quantum chromodynamics lattice gluon", k=5)
    assert out.results == []


def test_bm25_hits_keep_their_place_when_vectors_agree(svc: MemoryService) -> None:
    svc.remember(OLD)
    svc.remember(DISTRACTORS[0])
    out = svc.recall("ledger Postgres", k=2)
    assert texts(out)[0] == OLD
    assert out.results[0][0].best.via == ["bm25", "vector"]


# ---------------------------------------------------------------------- storage


def test_vectors_live_in_the_store_file_and_purge_clears_them(tmp_path: Path, svc: MemoryService) -> None:
    secret = svc.remember("The vault root token rotates every 30 days.").node
    svc.remember(DISTRACTORS[0])
    assert svc.vectors is not None and svc.vectors.settle()  # the index write comes after the answer
    with closing(sqlite.connect(svc.storage.store.path)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM vec_items").fetchone()[0] == 2
        assert conn.execute("SELECT COUNT(*) FROM vec_items WHERE node_id = ?", (secret.id,)).fetchone()[0] == 1
    assert list(tmp_path.glob("*.vec.db")) == []  # no sibling file
    svc.forget(secret.id, purge=True)
    with closing(sqlite.connect(svc.storage.store.path)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM vec_items WHERE node_id = ?", (secret.id,)).fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM vec_items").fetchone()[0] == 1
        vec_rows = conn.execute("SELECT COUNT(*) FROM vec_scan_rowids").fetchone()[0]
    assert vec_rows == 1
    near = svc.vectors.nearest("vault token rotation", namespace="default", limit=5)  # type: ignore[union-attr]
    assert secret.id not in {i for i, _ in near}


def test_purge_without_sqlite_vec_fails_and_changes_nothing(tmp_path: Path, svc: MemoryService) -> None:
    n = svc.remember("The vault root token rotates every 30 days.").node
    svc.storage.store.vec_loaded = False  # type: ignore[attr-defined]  # as a process without sqlite-vec sees it
    with pytest.raises(Unavailable, match="sqlite-vec"):
        svc.forget(n.id, purge=True)
    node = svc.storage.store.get(n.id)
    assert node is not None and not node.purged and node.raw_text.startswith("The vault")


def test_backfill_embeds_notes_written_with_vectors_off(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    path = tmp_path / "b.db"
    plain = MemoryService.local(SQLiteStore(path))
    for t in [*DISTRACTORS, NEW]:
        plain.remember(t)
    plain.close()
    s = hybrid(path, embedder)
    try:
        assert NEW not in texts(s.recall(PARAPHRASE_QUERY, k=3))  # no vectors yet
        progress: list[int] = []
        assert s.vectors.backfill(batch=2, progress=progress.append) == 4  # type: ignore[union-attr]
        assert progress == [2, 4]
        assert texts(s.recall(PARAPHRASE_QUERY, k=3))[0] == NEW
        assert s.vectors.backfill() == 0  # type: ignore[union-attr]
    finally:
        s.vectors.close()  # type: ignore[union-attr]
        s.close()


def test_start_background_loads_and_backfills(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    plain = MemoryService.local(SQLiteStore(path))
    plain.remember(NEW)
    plain.close()
    s = build_embedded(Settings(db=str(path), vectors="on"))
    try:
        assert not s.vectors.embedder.loaded  # type: ignore[union-attr]  # building loads nothing
        for t in start_background(s):
            t.join(120)
        assert s.vectors.embedder.loaded  # type: ignore[union-attr]
        assert texts(s.recall(PARAPHRASE_QUERY, k=1)) == [NEW]
    finally:
        s.close()


# ---------------------------------------------------------------------- failure and settings


class BrokenEmbedder:
    name = "broken"
    dim = 384
    state = "loaded"  # an ``EmbeddingModel`` whose model loads, and whose every encode fails
    load_error = None

    def load(self) -> None:
        pass

    def encode(self, texts: Sequence[str]) -> object:
        raise RuntimeError("onnxruntime exploded")


def test_embedding_failure_loses_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SQLiteStore(tmp_path / "f.db")
    s = MemoryService.local(store, vectors=SemanticIndex(BrokenEmbedder(), VectorIndex(store.path, model="broken")))  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        out = s.remember(OLD)
        got = s.recall("ledger", k=1)
    assert any("meaning" in w for w in out.warnings)
    assert texts(got) == [OLD]  # BM25 still answers
    assert s.storage.store.get(out.node.id) is not None
    assert "vector search failed" in caplog.text
    store.close()


class LoadingEmbedder(BrokenEmbedder):
    state = "loading"  # loading in the background: searches by meaning wait for nothing, they fail fast


class CountedTable:
    def __init__(self) -> None:
        self.caught_up: list[str] = []

    def catch_up(self, namespace: str) -> None:
        self.caught_up.append(namespace)


def test_catch_up_reads_nothing_ahead_while_the_model_loads_in_the_background() -> None:
    table, embedder = CountedTable(), LoadingEmbedder()
    vectors = SemanticIndex(embedder, table)  # type: ignore[arg-type]
    vectors.catch_up("default")  # wait_for_model: a search would load the model and follow
    assert table.caught_up == ["default"]
    vectors.load_in_background()
    vectors.catch_up("default")  # no search by meaning follows: recall answers by words, at once
    assert table.caught_up == ["default"]
    embedder.state = "loaded"
    vectors.catch_up("default")
    assert table.caught_up == ["default", "default"]


def test_vectors_on_without_a_model_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOMEM_EMBEDDING_MODEL_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(Unavailable, match=r"model\.onnx"):
        build_embedded(Settings(db=str(tmp_path / "x.db"), vectors="on"))
    auto = build_embedded(Settings(db=str(tmp_path / "y.db"), vectors="auto"))
    assert auto.vectors is None  # auto: BM25 only, said in the log
    auto.close()


def test_lite_mode_turns_vectors_off(tmp_path: Path) -> None:
    s = build_embedded(Settings(db=str(tmp_path / "l.db"), vectors="off"))
    try:
        assert s.vectors is None
        s.remember(NEW)
        with closing(sqlite.connect(s.storage.store.path)) as conn:
            assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vec_items'").fetchone() is None
    finally:
        s.close()


def test_settings_refuse_an_unknown_vectors_mode() -> None:
    from evomem.settings import SettingsError

    with pytest.raises(SettingsError, match="vectors must be one of auto, on, off"):
        Settings(vectors="maybe")
    assert Settings.from_env({"EVOMEM_VECTORS": "off"}).vectors.mode == "off"


def test_huge_note_is_embedded_from_its_beginning(svc: MemoryService) -> None:
    big = NEW + " " + ("filler words " * 70_000)  # ~0.9 MB, under the 1 MiB default limit
    out = svc.remember(big)
    assert out.warnings == [] or all("meaning" not in w for w in out.warnings)
    assert len(big) > MAX_EMBED_CHARS
    assert out.node.id in {i for i, _ in svc.vectors.nearest(NEW, namespace="default", limit=3)}  # type: ignore[union-attr]


def test_linker_candidates_include_paraphrases(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    s = hybrid(tmp_path / "c.db", embedder)
    try:
        old = s.remember(OLD).node
        for t in DISTRACTORS:
            s.remember(t)
        assert old.id in link_candidates(s, "Accounting entries are persisted in SQLite from now on.")
        bm25_only = MemoryService.local(s.storage.store)
        assert old.id not in link_candidates(bm25_only, "Accounting entries are persisted in SQLite from now on.")
    finally:
        s.vectors.close()  # type: ignore[union-attr]
        s.close()


def test_superseded_versions_do_not_crowd_the_decision_in_force_out_of_the_linkers_neighbours(
    tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    """The vector index holds every version. A long history of notes nearer the new one than the
    real predecessor, all superseded, filled the linker's few neighbours, which it then dropped
    as inactive: the predecessor (no word in common) was never a candidate."""
    from evomem.app.memory import ServiceConfig

    s = hybrid(tmp_path / "crowd.db", embedder, config=ServiceConfig(link_vector_candidates=2))
    try:
        old = s.remember(OLD).node
        for t in DISTRACTORS:
            s.remember(t)
        prev = None
        for db in ("MySQL", "MariaDB", "Oracle", "DB2", "SQL Server", "Firebird"):
            prev = s.remember(f"Accounting entries are persisted in {db}.", supersedes=prev).node.id
        s.remember("Release notes are written by the release captain.", supersedes=prev)
        note = "Accounting entries are persisted in SQLite from now on."
        nearest = s.vectors.nearest(note, namespace="default", limit=2)  # type: ignore[union-attr]
        assert all(s.storage.store.get(i).status == "superseded" for i, _ in nearest)  # type: ignore[union-attr]
        assert old.id in link_candidates(s, note)
    finally:
        s.vectors.close()  # type: ignore[union-attr]
        s.close()


def test_vec_problem_is_none_here() -> None:
    assert vec_problem() is None  # the test environment installs the vectors extra


def test_bm25_and_the_vector_search_run_at_the_same_time(svc: MemoryService) -> None:
    """The vector half of a search runs on a pool thread while BM25 runs in the caller's, so
    hybrid recall costs about the slower of the two; the answer is the same as one after the other."""
    import threading

    for t in (OLD, NEW, *DISTRACTORS):
        svc.remember(t)
    seen: dict[str, str] = {}
    search, nearest = svc.storage.store.search, svc.vectors.nearest  # type: ignore[union-attr]

    def bm25(*a: object, **kw: object) -> object:
        seen["bm25"] = threading.current_thread().name
        return search(*a, **kw)  # type: ignore[arg-type]

    def near(*a: object, **kw: object) -> object:
        seen["vector"] = threading.current_thread().name
        return nearest(*a, **kw)  # type: ignore[arg-type]

    svc.storage.store.search, svc.vectors.nearest = bm25, near  # type: ignore[method-assign, union-attr]
    out = svc.recall("ledger accounting entries", k=3)
    assert seen["bm25"] == threading.current_thread().name
    assert seen["vector"].startswith("evomem-nearest") and seen["vector"] != seen["bm25"]
    assert texts(out) and texts(out)[0] in (OLD, NEW)

    class Inline:  # one search after the other, in the caller's thread
        def submit(self, fn: object, *a: object) -> object:
            from concurrent.futures import Future

            f: Future[object] = Future()
            f.set_result(fn(*a))  # type: ignore[operator]
            return f

    svc.storage._pool = Inline  # type: ignore[attr-defined]  # the pool recall's vector half runs on
    serial = svc.recall("ledger accounting entries", k=3)
    assert [(e.head.id, e.best.node_id, e.best.via) for e, _ in serial.results] == [
        (e.head.id, e.best.node_id, e.best.via) for e, _ in out.results
    ]
