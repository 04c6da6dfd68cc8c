"""The SQLite store's Tantivy word index (``EVOMEM_WORD_INDEX=tantivy``), on real stores and files:
searchable the moment a write returns, in step with forget, purge, supersede, unlink and
extraction, caught up or rebuilt from SQLite at open (a crash, a deleted or broken index, writes
made while no index was open), ``:memory:`` and namespaces, one writer per folder."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evomem.adapters.sqlite import tantivy_index, tantivy_tail
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.memory import MemoryService
from evomem.bootstrap.stores import open_store
from evomem.domain.cronista import LiteCronista
from evomem.domain.model import Extraction, ExtractionState, LinkProvenance, NewNote
from evomem.ops.runtime import ConfigError
from evomem.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
LINK = LinkProvenance(method="agent", by="t")


def found(store: SQLiteStore, *terms: str, namespace: str = "default", active_only: bool = False) -> list[str]:
    return [h.node_id for h in store.search(list(terms), namespace=namespace, limit=20, active_only=active_only)]


@pytest.fixture
def slow_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The committer never commits on its own: what a search finds comes from the tail."""
    monkeypatch.setattr(tantivy_index, "COMMIT_AFTER_S", 3600.0)


@pytest.fixture
def store(tmp_path: Path, slow_commits: None) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "w.db", word_index="tantivy")
    try:
        yield s
    finally:
        s.close()


def words(store: SQLiteStore) -> tantivy_index.TantivyWords:
    index = store._words  # the adapter behind the port: the tail or a commit
    assert isinstance(index, tantivy_index.TantivyWords)
    return index


def test_the_index_lives_beside_the_file(store: SQLiteStore, tmp_path: Path) -> None:
    assert store.word_index == "tantivy"
    assert (tmp_path / "w.db.words").is_dir() and any((tmp_path / "w.db.words").iterdir())


def test_a_note_is_searchable_the_moment_remember_returns(store: SQLiteStore) -> None:
    service = MemoryService.local(store, extractor=LiteCronista())
    first = service.remember("We keep the billing ledger in PostgreSQL because of its transactions.")
    other = service.remember("The deploy pipeline runs on GitHub Actions.")
    assert words(store).indexed_rowids() == set()  # nothing committed yet: the tail answers
    assert found(store, "ledger") == [first.node.id]
    heads = [r.head.id for r, _ in service.recall("where is the billing ledger?").results]
    assert heads == [first.node.id]
    words(store).flush()
    assert len(words(store).indexed_rowids()) == 2
    assert found(store, "ledger") == [first.node.id] and found(store, "pipeline") == [other.node.id]


def test_the_tail_scores_as_the_committed_index(store: SQLiteStore) -> None:
    """A node scored in the tail (before the commit) and by Tantivy (after) rank alike."""
    texts = [f"note {i}: queue {'ledger ' * (i % 4)}billing retries {'cache ' * (i % 3)}" for i in range(60)]
    for text in texts[:50]:
        store.insert(NewNote(raw_text=text))
    words(store).flush()
    fresh = [store.insert(NewNote(raw_text=t)).id for t in texts[50:]]
    before = {h.node_id: h.score for h in store.search(["ledger", "cache"], namespace="default", limit=60)}
    words(store).flush()
    after = {h.node_id: h.score for h in store.search(["ledger", "cache"], namespace="default", limit=60)}
    scored = [i for i in fresh if i in after]
    assert scored and all(i in before for i in scored)
    for i in scored:
        assert before[i] == pytest.approx(after[i], rel=0.05)


def test_forget_supersede_unlink_and_extraction_keep_the_index_in_step(store: SQLiteStore) -> None:
    old = store.insert(NewNote(raw_text="Payments settle through the Stripe gateway nightly."))
    new = store.insert(NewNote(raw_text="Payments settle through Adyen from now on."), supersedes=old.id, link=LINK)
    assert set(found(store, "payments")) == {old.id, new.id}
    assert found(store, "payments", active_only=True) == [new.id]  # the superseded version is not active
    store.unlink(new.id)
    assert set(found(store, "payments", active_only=True)) == {old.id, new.id}
    store.forget(new.id)
    assert found(store, "adyen") == []
    words(store).flush()
    assert found(store, "adyen") == [] and found(store, "stripe") == [old.id]

    pending = store.insert(NewNote(raw_text="Reports go out weekly."))
    extraction = Extraction(change="switch the reports to Metabase", summary="reports", extractor="test")
    store.set_extraction(pending.id, extraction, ExtractionState.DONE)
    assert found(store, "metabase") == [pending.id]  # a word only the extraction holds
    words(store).flush()
    assert found(store, "metabase") == [pending.id]


def test_purge_takes_the_text_out_of_the_index_before_forget_returns(store: SQLiteStore) -> None:
    keep = store.insert(NewNote(raw_text="The VPN certificate rotates every ninety days."))
    gone = store.insert(NewNote(raw_text="The VPN root password is hunter2."))
    words(store).flush()
    rowid = store._conn().execute("SELECT rowid FROM nodes WHERE id = ?", (gone.id,)).fetchone()[0]
    assert rowid in words(store).indexed_rowids()
    store.forget(gone.id, purge=True)
    assert rowid not in words(store).indexed_rowids()  # committed without it: no commit thread ran
    assert found(store, "hunter2") == [] and found(store, "vpn") == [keep.id]


def segments(folder: Path) -> set[str]:
    return {p.name.split(".")[0] for p in folder.iterdir() if p.suffix == ".term"}


def test_a_purged_notes_segment_is_rewritten_and_its_files_dropped(store: SQLiteStore, tmp_path: Path) -> None:
    """A delete only marks a document; ``erase_purged`` (the committer runs it) rewrites the
    segment that held a purged note, so the files that hold its words are deleted."""
    folder = tmp_path / "w.db.words"
    ids = [store.insert(NewNote(raw_text=f"release {i} ships on Friday")).id for i in range(5)]
    gone = store.insert(NewNote(raw_text="The staging password is swordfish."))
    also = store.insert(NewNote(raw_text="The backup key is kept in a drawer."))
    words(store).flush()  # one commit: one segment holds all seven
    before = segments(folder)
    store.forget(gone.id, purge=True)
    store.forget(also.id, purge=True)  # two purges queued: the segment is rewritten once
    assert found(store, "swordfish") == [] and found(store, "drawer") == []
    assert words(store).erase_purged() == 5  # the five others, added again
    after = segments(folder)
    assert before and not before & after  # the old segment's files are gone
    assert sorted(found(store, "release")) == sorted(ids)
    store.forget(ids[0])  # forgetting is not purging: nothing to rewrite
    words(store).flush()
    assert words(store).erase_purged() == 0 and sorted(found(store, "release")) == sorted(ids[1:])


def test_the_committer_rewrites_a_purged_notes_segment_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    monkeypatch.setattr(tantivy_index, "COMMIT_AFTER_S", 0.05)
    store = SQLiteStore(tmp_path / "c.db", word_index="tantivy")
    try:
        keep = store.insert(NewNote(raw_text="Logs are kept for thirty days."))
        gone = store.insert(NewNote(raw_text="The admin token is abc123xyz."))
        words(store).flush()
        before = segments(tmp_path / "c.db.words")
        store.forget(gone.id, purge=True)
        deadline = time.monotonic() + 10
        while before & segments(tmp_path / "c.db.words") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not before & segments(tmp_path / "c.db.words")
        assert found(store, "logs") == [keep.id] and found(store, "abc123xyz") == []
    finally:
        store.close()


def test_namespaces_are_kept_apart(store: SQLiteStore) -> None:
    a = store.insert(NewNote(raw_text="Kafka carries the audit events.", namespace="team-a"))
    b = store.insert(NewNote(raw_text="Kafka was dropped for NATS.", namespace="team-b"))
    assert found(store, "kafka", namespace="team-a") == [a.id]
    assert found(store, "kafka", namespace="team-b") == [b.id]
    words(store).flush()
    assert found(store, "kafka", namespace="team-a") == [a.id] and found(store, "kafka", namespace="nobody") == []


def test_a_namespace_of_nearly_every_note_is_filtered_on_the_rows(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace holding >= 90 % of the index is searched without the namespace clause (the
    rows' filter drops the others' notes, over-fetching as needed); a small one with it."""
    mine = [store.insert(NewNote(raw_text=f"nightly export {i} to the warehouse")).id for i in range(40)]
    theirs = [store.insert(NewNote(raw_text="export export export warehouse", namespace="x")).id for _ in range(3)]
    words(store).flush()
    asked: list[str | None] = []
    query = words(store)._query
    monkeypatch.setattr(words(store), "_query", lambda tokens, ns: asked.append(ns) or query(tokens, ns))
    best = found(store, "export", "warehouse")  # 20 asked: the others' notes would rank first
    assert len(best) == 20 and set(best) <= set(mine)
    assert sorted(found(store, "export", namespace="x")) == sorted(theirs)
    hits = store.search(["export"], namespace="default", limit=2)  # the others' notes rank first
    assert len(hits) == 2 and {h.node_id for h in hits} <= set(mine)
    assert asked == [None, "x", None]  # 40 of 44 documents (the meta one too): broad


def test_a_memory_store_keeps_its_index_in_ram() -> None:
    store = SQLiteStore(":memory:", word_index="tantivy")
    try:
        note = store.insert(NewNote(raw_text="Feature flags live in LaunchDarkly."))
        assert words(store).folder is None
        assert found(store, "launchdarkly") == [note.id]
        words(store).flush()
        assert found(store, "flags") == [note.id]
    finally:
        store.close()


def test_search_over_fetches_past_hits_the_filters_drop(store: SQLiteStore) -> None:
    """The best Tantivy hits are superseded notes: ``active_only`` still finds ``limit`` heads."""
    heads = []
    for i in range(30):
        v1 = store.insert(NewNote(raw_text=f"service {i} cache cache cache cache redis redis redis"))
        heads.append(store.insert(NewNote(raw_text=f"service {i} uses a cache now"), supersedes=v1.id, link=LINK).id)
    words(store).flush()
    hits = store.search(["cache", "redis"], namespace="default", limit=20, active_only=True)
    assert len(hits) == 20 and {h.node_id for h in hits} <= set(heads)


def test_writes_made_while_no_index_was_open_are_caught_up(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    SQLiteStore(db, word_index="tantivy").close()  # the log's triggers are in the file from now on
    plain = SQLiteStore(db)  # fts5: this process never opens the index
    added = plain.insert(NewNote(raw_text="Terraform state lives in an S3 bucket."))
    plain.forget(plain.insert(NewNote(raw_text="Terraform runs from a laptop.")).id)
    plain.close()
    store = SQLiteStore(db, word_index="tantivy")
    try:
        assert words(store).indexed_rowids() == {1}  # caught up and committed at open
        assert found(store, "terraform") == [added.id]
    finally:
        store.close()


def test_a_missing_or_broken_index_is_rebuilt_from_the_store(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=tantivy_tail.__name__)
    db = tmp_path / "w.db"
    store = SQLiteStore(db, word_index="tantivy")
    ids = [store.insert(NewNote(raw_text=f"runbook {i} for the billing queue")).id for i in range(5)]
    store.close()
    folder = tmp_path / "w.db.words"
    for path in folder.iterdir():  # every file of the index garbled
        if path.is_file():
            path.write_bytes(b"\x00garbage")
    again = SQLiteStore(db, word_index="tantivy")
    try:
        assert sorted(found(again, "runbook")) == sorted(ids)
    finally:
        again.close()
    import shutil

    shutil.rmtree(folder)
    tantivy_index.PROGRESS_FROM, saved = 1, tantivy_index.PROGRESS_FROM
    try:
        rebuilt = SQLiteStore(db, word_index="tantivy")
    finally:
        tantivy_index.PROGRESS_FROM = saved
    try:
        assert len(words(rebuilt).indexed_rowids()) == 5
        assert sorted(found(rebuilt, "billing")) == sorted(ids)
    finally:
        rebuilt.close()
    # the progress: a bar on a terminal's stderr, else a log line every tenth
    assert any(r.getMessage().startswith("word index: building 100%") for r in caplog.records)


CRASH = """
import os, sys
sys.path[:0] = [{services!r}, {root!r}]
from evomem.adapters.sqlite import tantivy_index
tantivy_index.COMMIT_AFTER_S = 3600.0
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.model import NewNote
store = SQLiteStore({db!r}, word_index="tantivy")
node = store.insert(NewNote(raw_text="The cron jobs moved to Temporal workflows."))
assert [h.node_id for h in store.search(["temporal"], namespace="default", limit=5)] == [node.id]
print(node.id, flush=True)
os._exit(0)  # a crash: SQLite committed, the index never did
"""


def test_a_crash_between_sqlite_and_the_index_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    SQLiteStore(db, word_index="tantivy").close()
    script = CRASH.format(services=str(ROOT / "services"), root=str(ROOT), db=str(db))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    node_id = out.stdout.strip()
    store = SQLiteStore(db, word_index="tantivy")
    try:
        assert found(store, "temporal") == [node_id]
        assert len(words(store).indexed_rowids()) == 1  # from the log, at open
    finally:
        store.close()


def test_a_second_store_on_the_file_searches_fts5_and_the_first_reads_its_writes(store: SQLiteStore) -> None:
    second = SQLiteStore(store.path, word_index="tantivy")
    try:
        assert second.word_index == "fts5"  # the folder's writer is taken
        note = second.insert(NewNote(raw_text="Grafana dashboards are provisioned from Git."))
        assert found(second, "grafana") == [note.id]
        assert found(store, "grafana") == [note.id]  # read from the log at the search
    finally:
        second.close()


def test_the_setting_chooses_the_index_and_says_when_tantivy_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings.from_env({"EVOMEM_WORD_INDEX": "tantivy", "EVOMEM_DB": str(tmp_path / "s.db")})
    store = open_store(settings, "")
    try:
        assert isinstance(store, SQLiteStore) and store.word_index == "tantivy"
    finally:
        store.close()
    monkeypatch.setitem(sys.modules, "tantivy", None)  # as a machine without the package
    with pytest.raises(ConfigError, match="needs the tantivy package: pip install tantivy"):
        open_store(settings, "")
    assert os.path.exists(tmp_path / "s.db")


def test_many_writes_at_once_are_committed_straight(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """More than ``BIG_GAP`` new log entries (an import, another process's writes) are indexed and
    committed by the search that finds them, not scored from the tail."""
    monkeypatch.setattr(tantivy_index, "BIG_GAP", 3)
    tail = store.insert(NewNote(raw_text="Backups are copied to a second region."))
    other = SQLiteStore(store.path)  # fts5: its writes reach the index through the log only
    try:
        ids = [other.insert(NewNote(raw_text=f"backup job {i} runs hourly")).id for i in range(6)]
    finally:
        other.close()
    assert sorted(found(store, "backup")) == sorted([tail.id, *ids])
    assert len(words(store).indexed_rowids()) == 7 and not words(store)._tail


def test_writers_and_searchers_on_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes, searches and the committer (every 10 ms here) on several threads: every note is
    found by its own word once its write returned, and the index ends with all of them."""
    import threading

    monkeypatch.setattr(tantivy_index, "COMMIT_AFTER_S", 0.01)
    store = SQLiteStore(tmp_path / "t.db", word_index="tantivy")
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(25):
                node = store.insert(NewNote(raw_text=f"worker{t}x{i} wrote note {i} about queues"))
                assert found(store, f"worker{t}x{i}") == [node.id]
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    try:
        assert not errors, errors[0]
        assert len(store.search(["queues"], namespace="default", limit=200)) == 100
        words(store).flush()
        assert len(words(store).indexed_rowids()) == 100
    finally:
        store.close()


def test_an_index_ahead_of_a_restored_file_is_rebuilt(tmp_path: Path) -> None:
    """A file restored from a backup beside a newer index: the index's watermark is past the log,
    so it is rebuilt, and a rowid given out again does not answer for the lost note's words."""
    import shutil

    db = tmp_path / "w.db"
    store = SQLiteStore(db, word_index="tantivy")
    kept = store.insert(NewNote(raw_text="Secrets live in Vault."))
    store.checkpoint()
    store.close()
    shutil.copyfile(db, tmp_path / "backup.db")
    store = SQLiteStore(db, word_index="tantivy")
    store.insert(NewNote(raw_text="Zebra is the codename of the new billing engine."))
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(tmp_path / "backup.db", db)
    restored = SQLiteStore(db, word_index="tantivy")
    try:
        assert words(restored).indexed_rowids() == {1}  # rebuilt: the lost note's document is gone
        assert found(restored, "zebra") == [] and found(restored, "vault") == [kept.id]
        again = restored.insert(NewNote(raw_text="Giraffe is the codename now."))
        assert found(restored, "giraffe") == [again.id] and found(restored, "zebra") == []
    finally:
        restored.close()


def test_an_import_into_the_store_is_searchable(tmp_path: Path) -> None:
    source = SQLiteStore(tmp_path / "a.db")
    note = source.insert(NewNote(raw_text="Incident reviews happen every Thursday."))
    records = list(source.export_records())
    source.close()
    target = SQLiteStore(tmp_path / "b.db", word_index="tantivy")
    try:
        target.import_records(records)
        assert found(target, "incident") == [note.id]
    finally:
        target.close()


def _rows_before(conn: object, ranked: list[tuple[float, int]], namespace: str, limit: int, active_only: bool) -> list:
    """``TantivyWords._rows`` as it was: every ranked rowid read, then the first ``limit`` that pass."""
    status = "status = 'active'" if active_only else "status != 'forgotten'"
    marks = ",".join("?" * len(ranked))
    sql = (
        f"SELECT rowid, id, chain_root FROM nodes WHERE rowid IN ({marks}) "
        f"AND namespace = ? AND {status} AND purged_at IS NULL"
    )
    keep = {r[0]: (r[1], r[2]) for r in conn.execute(sql, (*[r for _, r in ranked], namespace))}  # type: ignore[attr-defined]
    return [(keep[r][0], keep[r][1], s) for s, r in ranked if r in keep][:limit]


def test_the_ranked_rows_are_read_in_rank_order_as_far_as_the_answer_needs(store: SQLiteStore) -> None:
    """Superseded, forgotten and other namespaces' notes among the ranked rowids, at every place:
    the hits are those reading every ranked rowid gave, in the same order."""
    import random

    for i in range(60):
        ns = "other" if i % 7 == 0 else "default"
        v1 = store.insert(NewNote(raw_text=f"ledger {i} on Postgres", namespace=ns))
        if i % 3 == 0:
            store.insert(NewNote(raw_text=f"ledger {i} on SQLite", namespace=ns), supersedes=v1.id, link=LINK)
        if i % 5 == 0:
            store.forget(v1.id)
    conn = store._conn()
    rowids = [r[0] for r in conn.execute("SELECT rowid FROM nodes")]
    rng = random.Random(4)
    for _ in range(40):
        rng.shuffle(rowids)
        ranked = [(float(len(rowids) - k), r) for k, r in enumerate(rowids[: rng.randint(0, len(rowids))])]
        for namespace in ("default", "other"):
            for limit in (1, 5, 20, 200):
                for active_only in (True, False):
                    got = words(store)._rows(conn, ranked, namespace, limit, active_only)
                    want = _rows_before(conn, ranked, namespace, limit, active_only)
                    assert [(h.node_id, h.chain_root, h.score) for h in got] == want


def _score_tail_before(
    index: tantivy_index.TantivyWords, searcher: object, tail: dict, tokens: list[str], ns: str
) -> list:
    """``TantivyWords._score_tail`` as it was: every field of every tail node, each token's idf looked up."""
    import math

    k1, b, weights = tantivy_tail.K1, tantivy_tail.B, tantivy_tail.WEIGHTS
    docs = [(r, p) for r, p in tail.items() if p.namespace == ns]
    n = max(searcher.num_docs, 1)  # type: ignore[attr-defined]
    idf: dict[tuple[str, str], float] = {}
    out = []
    for rowid, pending in docs:
        score = 0.0
        for field, counts in pending.terms.items():
            length = sum(counts.values())
            norm = k1 * (1 - b + b * length / index._avg[field])
            for token in tokens:
                tf = counts.get(token, 0)
                if not tf:
                    continue
                if (field, token) not in idf:
                    df = searcher.doc_freq(field, token)  # type: ignore[attr-defined]
                    idf[(field, token)] = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += weights[field] * idf[(field, token)] * (k1 + 1) * tf / (tf + norm)
        if score > 0:
            out.append((score, rowid))
    return out


def test_the_tail_is_scored_to_the_bit_as_before(store: SQLiteStore) -> None:
    """Tail nodes with extracted fields, tags, repeated words and other namespaces, queries of
    words they have and lack: the same scores, to the last bit, in the same order."""
    import random

    rng = random.Random(8)
    vocab = ["ledger", "queue", "billing", "cache", "redis", "postgres", "retries", "nightly", "kafka", "sqlite"]
    for _ in range(40):
        store.insert(NewNote(raw_text=" ".join(rng.choices(vocab, k=rng.randint(3, 12))), namespace="default"))
    words(store).flush()
    cronista = LiteCronista()
    for i in range(80):
        text = " ".join(rng.choices(vocab, k=rng.randint(1, 15))) + f". Moved {i} from A to B because of retries."
        ns = "other" if i % 9 == 0 else "default"
        note = NewNote(raw_text=text, namespace=ns, tags=tuple(rng.sample(vocab, 2)), extraction=cronista.extract(text))
        store.insert(note)
    index = words(store)
    index._catch_up(store._conn())
    assert len(index._tail) >= 80
    searcher = index._index.searcher()
    scored = 0
    for _ in range(30):
        tokens = rng.sample([*vocab, "absent", "moved", "because"], rng.randint(1, 8))
        for ns in ("default", "other"):
            got = index._score_tail(searcher, dict(index._tail), tokens, ns)
            assert got == _score_tail_before(index, searcher, dict(index._tail), tokens, ns)
            scored += len(got)
    assert scored > 1000


def _postings_of(index: tantivy_index.TantivyWords) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for rowid, pending in index._tail.items():
        for word in pending.words:
            out.setdefault(word, set()).add(rowid)
    return out


def test_the_tails_postings_follow_its_writes_and_commits(store: SQLiteStore) -> None:
    """Each word of the tail lists the tail's nodes with it (what a search scores, not the whole
    tail), through inserts, a node logged again with other words (forgotten: none), and commits."""
    index = words(store)
    first = store.insert(NewNote(raw_text="The ledger queue retries nightly."))
    second = store.insert(NewNote(raw_text="Billing moved to the ledger service."))
    index._catch_up(store._conn())
    assert index._postings == _postings_of(index) and len(index._postings["ledger"]) == 2
    store.forget(first.id)
    index._catch_up(store._conn())
    assert index._postings == _postings_of(index) and "queue" not in index._postings
    assert found(store, "ledger") == [second.id] and found(store, "queue") == []
    index.flush()
    assert index._tail == {} and index._postings == {}
    assert found(store, "ledger") == [second.id]


def test_a_tokens_query_clauses_are_kept_and_bounded(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Queries reuse each token's clauses (kept for ``CLAUSES_KEPT`` tokens, then begun again): the
    same answers as clauses built afresh."""
    monkeypatch.setattr(tantivy_index, "CLAUSES_KEPT", 3)
    ids = [store.insert(NewNote(raw_text=t)).id for t in ("ledger queue", "queue cache", "cache ledger retries")]
    words(store).flush()
    asked = [("ledger",), ("queue", "cache"), ("retries", "ledger"), ("ledger",), ("cache",)]
    first = [found(store, *terms) for terms in asked]
    assert len(words(store)._clauses) <= 3
    words(store)._clauses = {}
    assert [found(store, *terms) for terms in asked] == first
    assert sorted(first[1]) == sorted(ids)


def test_a_search_reads_limit_rows_first_and_twice_as_many_for_active_only(store: SQLiteStore) -> None:
    """The index holds no forgotten note, so recall's search (not ``active_only``) reads the first
    ``limit`` ranked rowids' rows; ``active_only`` (a superseded note fails it) reads ``2 * limit``."""
    for i in range(40):
        store.insert(NewNote(raw_text=f"ledger {i} on Postgres"))
    words(store).flush()
    read: list[int] = []

    def trace(sql: str) -> None:
        if "FROM nodes NOT INDEXED WHERE rowid IN" in sql:
            read.append(sql.split("rowid IN (", 1)[1].split(")", 1)[0].count(",") + 1)

    conn = store._conn()
    conn.set_trace_callback(trace)
    try:
        assert len(store.search(["ledger"], namespace="default", limit=5)) == 5
        assert read == [5]
        read.clear()
        assert len(store.search(["ledger"], namespace="default", limit=5, active_only=True)) == 5
        assert read == [10]
    finally:
        conn.set_trace_callback(None)
