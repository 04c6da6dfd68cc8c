"""A Tantivy word index beside the SQLite file (``EVOMEM_WORD_INDEX=tantivy``); SQLite stays the truth.

    words = TantivyWords(conns)    # opens <db>.words/ (a ":memory:" store: an index in RAM)
    words.search(conn, ["ledger", "queue"], namespace="default", limit=20, active_only=False)

What it keeps, and how:

- **One document per live node** (not forgotten, not purged): its ``rowid`` (the key), its
  namespace, and the FTS5 table's seven text fields, each analysed like FTS5's ``porter unicode61
  remove_diacritics`` (split on non-alphanumerics, lowercased, ASCII-folded, English stemmer)
  and boosted by ``FTS_WEIGHTS`` at query time: BM25 per field, summed (Tantivy's ranking, not
  FTS5's, so the order of close hits differs). The query is the OR of the terms, in the namespace
  (unless it holds ``NARROW_BELOW`` of the documents: then only the rows' filter checks it).
- **The log** (``LOG_SQL``): every write of the store logs the rowids whose words may have
  changed, in its own transaction. A write reads the log into the *tail* (the nodes changed since
  the index's last commit) before it returns, so a note is searchable the moment ``remember``
  returns; a thread commits the tail (``COMMIT_EVERY`` nodes or ``COMMIT_AFTER_S``), since a
  Tantivy commit syncs its files (~70 ms on this machine's disk: more than a whole remember).
- **Search** = the committed index's best hits (those of nodes in the tail left out) merged with
  the tail's nodes scored the same way in Python (BM25 with the index's document frequencies and
  the average field lengths of recent notes), then the rows read from SQLite and filtered by
  namespace and status as FTS5's search does; over-fetched (``OVERFETCH``, then ``WIDEN`` times,
  then every match) until ``limit`` pass. A tail hit counts only when no hit left unfetched could
  rank above it, so the merge is exact up to the tail's scoring. The tail's postings (word ->
  rowids) give the tail nodes a query can match; each token's clauses are built once. The log's
  position is read after Tantivy's first search (``search``: why), and a moved log starts it again.
- **The watermark**: each commit holds a meta document with the log position it has indexed up
  to, committed atomically with the documents. At open the index reads the log from there (a
  crash between SQLite's commit and the index's loses only the tail, which the log still holds);
  an index that is missing, unreadable, of another ``FORMAT``, ahead of the log or behind a
  pruned part of it is rebuilt from SQLite (a progress bar from ``PROGRESS_FROM`` notes).
- **Purge**: the note's document is deleted and committed before ``forget`` returns. A delete
  only marks a document, so the committer then rewrites the segment that held it
  (``erase_purged``: its other documents added again from SQLite, a commit per
  ``REWRITE_BATCH``); with no live document left, Tantivy drops the segment's files.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import tantivy

from evomem.adapters.sqlite.conn import in_chunks
from evomem.adapters.sqlite.search import FTS_COLUMNS
from evomem.adapters.sqlite.tantivy_folder import (
    FORMAT,
    META,
    BuildStopped,
    IndexBusy,
    clear_folder,
    lock_folder,
    read_meta,
)
from evomem.adapters.sqlite.tantivy_tail import WEIGHTS, Pending, Progress, score_tail
from evomem.adapters.sqlite.words_log import LOG_SQL, index_folder, log_covers, log_position, read_log
from evomem.domain.model import SearchHit

if TYPE_CHECKING:
    import sqlite3

    from evomem.adapters.sqlite.conn import Connections

log = logging.getLogger(__name__)

ANALYZER = "evomem_words"
#: The committer commits the tail when it holds this many nodes, or its oldest is this old.
COMMIT_EVERY = 512
COMMIT_AFTER_S = 1.0
#: ``search`` first fetches this many times ``limit`` hits, then ``WIDEN`` times as many, then all.
OVERFETCH = 4
WIDEN = 8
#: ``search`` asks Tantivy for the namespace only when it holds less than this share of the documents.
NARROW_BELOW = 0.9
#: A write or search that finds more than this many new log entries indexes and commits them at once.
BIG_GAP = 5000
#: The log rows below the watermark are deleted once this many have gathered.
PRUNE_EVERY = 1000
#: Rebuilds and catch-ups of at least this many notes draw a progress bar on stderr.
PROGRESS_FROM = 20_000
#: The tail is scored with the average field lengths of about this many of the newest notes.
AVERAGE_OVER = 500
WRITER_HEAP = 64_000_000
#: ``erase_purged`` rewrites a segment this many documents per commit.
REWRITE_BATCH = 20_000
BATCH = 2000
#: A query's clauses are kept for this many tokens (``_clauses_of``).
CLAUSES_KEPT = 4096

NODE_FIELDS = "rowid, namespace, status, purged_at, " + ", ".join(FTS_COLUMNS)


def analyzer() -> Any:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def build_schema() -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("rowid", indexed=True, fast=True)
    sb.add_text_field("namespace", tokenizer_name="raw")
    for field in FTS_COLUMNS:
        sb.add_text_field(field, tokenizer_name=ANALYZER)
    sb.add_integer_field("meta", indexed=True)
    sb.add_integer_field("watermark", stored=True)
    sb.add_integer_field("format", stored=True)
    return sb.build()


class TantivyWords:
    """The ``WordIndex`` on Tantivy (module docstring). Thread-safe; one writer per index folder
    (``IndexBusy`` in a second process)."""

    name = "tantivy"
    fts5_bounds = False

    def __init__(
        self, db: Connections, *, commit_after_s: float | None = None, stop: threading.Event | None = None
    ) -> None:
        """Open (or build) the index and catch it up with the log; ``stop`` set (``words.BuildingWords``
        closes) ends a build with ``BuildStopped`` every ``BATCH`` notes, nothing committed."""
        self._db = db
        self.folder = index_folder(db)
        self._schema = build_schema()
        self._analyzer = analyzer()
        self._tail: dict[int, Pending] = {}
        self._postings: dict[str, set[int]] = {}  # word -> the tail's rowids with it (``_tail_put``)
        self._clauses: dict[str, list[tuple[Any, Any]]] = {}  # token -> its query clauses (``_clauses_of``)
        self._tail_seq = 0  # the log is read into the tail up to here
        self._committed = 0  # the watermark of the index's last commit
        self._pruned = 0
        self._erase: list[tuple[Any, set[int]]] = []  # (searcher, segments) holding purged words
        self._tail_lock = threading.Lock()  # the tail, and which searcher goes with it
        self._writer_lock = threading.Lock()  # the writer: adds, deletes, commits
        self._commit_after_s = COMMIT_AFTER_S if commit_after_s is None else commit_after_s
        self._avg_n = 0  # the average field lengths the tail is scored with (``_count_lengths``)
        self._avg = dict.fromkeys(FTS_COLUMNS, 1.0)
        self._stop_build = stop
        conn = db.get()
        # the folder made and held before the log: an FTS5 open drops a log with no folder beside it
        self._held = lock_folder(self.folder) if self.folder is not None else None
        try:
            with db.write() as w:
                for sql in LOG_SQL:
                    w.execute(sql)
            watermark = self._open(conn)
            self._committed = self._tail_seq = self._catch_up_at_open(conn, watermark)
        except BaseException:
            if hasattr(self, "_writer"):  # dropped uncommitted: what it was given is discarded
                self._writer.wait_merging_threads()  # releases the writer's lock
                del self._writer
            if self._held is not None:
                self._held.close()
            raise
        self._average_lengths(conn)
        self._prune()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._committer, name="evomem-words", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ opening

    def _open(self, conn: sqlite3.Connection) -> int:
        """Open the folder's index (or rebuild it); the writer taken. Returns its watermark."""
        if self.folder is None:
            return self._rebuild(conn)
        if os.path.isdir(self.folder) and tantivy.Index.exists(self.folder):
            reason, opened = "", False
            try:
                index = tantivy.Index.open(self.folder)
                opened = True
                index.register_tokenizer(ANALYZER, self._analyzer)
                meta = read_meta(index)
            except (OSError, ValueError, RuntimeError) as exc:
                meta, reason = None, f"unreadable ({exc})"
            if meta is not None:
                watermark, fmt = meta
                if fmt != FORMAT:
                    reason = f"format {fmt}, not {FORMAT}"
                elif not log_covers(conn, watermark):
                    reason = f"its watermark {watermark} does not match the log ({log_position(conn)})"
                else:
                    self._index, self._writer = index, take_writer(index, self.folder)
                    return watermark
            elif not reason:
                reason = "no watermark"
            if opened:  # another process may be using it, or building it (IndexBusy): not ours to wipe
                take_writer(index, self.folder).wait_merging_threads()
            log.warning("word index %s: %s; rebuilding it from the store", self.folder, reason)
        return self._rebuild(conn)

    def _rebuild(self, conn: sqlite3.Connection) -> int:
        """A new index of every live node, read in one snapshot with the log's position."""
        if self.folder is None:
            self._index = tantivy.Index(self._schema)
        else:
            clear_folder(self.folder)  # the folder stays: an FTS5 open keeps the log while it is there
            self._index = tantivy.Index(self._schema, path=self.folder)
        self._index.register_tokenizer(ANALYZER, self._analyzer)
        self._writer = take_writer(self._index, self.folder)
        conn.execute("BEGIN")
        try:
            seq = log_position(conn)
            total = conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
            bar = Progress(total, "word index: building") if total >= PROGRESS_FROM else None
            for n, row in enumerate(conn.execute(f"SELECT {NODE_FIELDS} FROM nodes")):
                if n % BATCH == 0:
                    self._check_stop()
                doc = self._pending(0, row, scored=False).doc
                if doc is not None:
                    self._writer.add_document(doc)
                if bar is not None:
                    bar.step()
        finally:
            conn.execute("COMMIT")
        self._commit(seq)
        return seq

    def _catch_up_at_open(self, conn: sqlite3.Connection, watermark: int) -> int:
        """The log after ``watermark`` (rows written while no index read it) indexed and
        committed. Returns the new watermark."""
        end = log_position(conn)
        if end > watermark:
            self._index_log(conn, watermark, end)
            self._commit(end)
        return max(end, watermark)

    def _index_log(self, conn: sqlite3.Connection, start: int, end: int) -> None:
        """The log's entries in ``(start, end]`` written to the writer (not committed), a batch
        at a time; a progress bar when they are many."""
        bar = Progress(end - start, "word index: catching up") if end - start >= PROGRESS_FROM else None
        seq = start
        while seq < end:
            self._check_stop()
            entries = read_log(conn, seq, min(end, seq + BATCH))
            for rowid, pending in self._read_pending(conn, entries, scored=False).items():
                self._apply(rowid, pending)
            seq = min(end, seq + BATCH)
            if bar is not None:
                bar.step(len(entries))

    def _check_stop(self) -> None:
        if self._stop_build is not None and self._stop_build.is_set():
            raise BuildStopped(f"word index {self.folder or 'in memory'}: build stopped")

    # ------------------------------------------------------------------ writes

    def after_write(self, conn: sqlite3.Connection) -> None:
        """Read the log into the tail: what the write changed is searchable from now on. A
        failure is logged, not raised (the write is committed; the next search retries)."""
        try:
            self._catch_up(conn)
        except Exception:
            log.exception("word index: reading the log failed; the next search retries")

    def flush(self) -> None:
        """Commit the tail now (a purge: the text leaves the index before ``forget`` returns)."""
        self._commit_tail()

    def _catch_up(self, conn: sqlite3.Connection) -> None:
        end = log_position(conn)
        if end <= self._tail_seq:
            return
        if end - self._tail_seq > BIG_GAP:  # an import, or another process's many writes
            self._commit_gap(conn, end)
            return
        with self._tail_lock:
            start = self._tail_seq
            if end <= start:
                return
            for rowid, pending in self._read_pending(conn, read_log(conn, start, end)).items():
                self._tail_put(rowid, pending)
            self._tail_seq = end
            full = len(self._tail) >= COMMIT_EVERY
        if full:
            self._wake.set()

    def _commit_gap(self, conn: sqlite3.Connection, end: int) -> None:
        """Index the log up to ``end`` straight into the writer and commit, the tail with it:
        more than ``BIG_GAP`` entries would not be worth scoring in Python."""
        with self._writer_lock:
            with self._tail_lock:
                start, items = self._tail_seq, list(self._tail.items())
            if end <= start:
                return
            for rowid, pending in items:  # older than the log's entries after ``start``
                self._apply(rowid, pending)
            self._index_log(conn, start, end)
            self._commit(end)
            with self._tail_lock:
                for rowid, pending in items:
                    self._tail_drop(rowid, pending)
                self._tail_seq = max(self._tail_seq, end)

    def _tail_put(self, rowid: int, pending: Pending) -> None:
        """``pending`` into the tail, in place of the node's older entry; its words posted (the
        tail lock held)."""
        old = self._tail.get(rowid)
        if old is not None:
            self._unpost(rowid, old)
        self._tail[rowid] = pending
        for word in pending.words:
            self._postings.setdefault(word, set()).add(rowid)

    def _tail_drop(self, rowid: int, pending: Pending) -> None:
        """The node out of the tail if ``pending`` is still its entry (the tail lock held)."""
        if self._tail.get(rowid) is pending:
            del self._tail[rowid]
            self._unpost(rowid, pending)

    def _unpost(self, rowid: int, pending: Pending) -> None:
        for word in pending.words:
            rowids = self._postings.get(word)
            if rowids is not None:
                rowids.discard(rowid)
                if not rowids:
                    del self._postings[word]

    def _read_pending(
        self, conn: sqlite3.Connection, entries: list[tuple[int, int]], *, scored: bool = True
    ) -> dict[int, Pending]:
        last = {rowid: seq for seq, rowid in entries}  # a node logged twice: its last entry
        rows: dict[int, Any] = {}
        for chunk, marks in in_chunks(list(last)):
            rows.update(
                (r[0], r) for r in conn.execute(f"SELECT {NODE_FIELDS} FROM nodes WHERE rowid IN ({marks})", chunk)
            )
        return {rowid: self._pending(seq, rows.get(rowid), scored=scored) for rowid, seq in last.items()}

    def _pending(self, seq: int, row: Any, *, scored: bool = True) -> Pending:
        if row is None or row[2] == "forgotten" or row[3] is not None:
            return Pending(seq, None, None, {}, purged=row is not None and row[3] is not None)
        texts = {f: row[4 + i] or "" for i, f in enumerate(FTS_COLUMNS)}
        doc = tantivy.Document(rowid=int(row[0]), namespace=row[1], **{f: t for f, t in texts.items() if t})
        terms = {f: Counter(self._analyzer.analyze(t)) for f, t in texts.items() if t and scored}
        if scored:
            self._count_lengths({f: sum(c.values()) for f, c in terms.items()})
        return Pending(seq, row[1], doc, terms)

    def _count_lengths(self, lengths: dict[str, int]) -> None:
        """Move the average field lengths towards a new note's (a mean of the last ~500)."""
        n = self._avg_n
        for f in FTS_COLUMNS:
            self._avg[f] = max(1.0, (self._avg[f] * n + lengths.get(f, 0)) / (n + 1))
        self._avg_n = min(n + 1, AVERAGE_OVER)

    def _apply(self, rowid: int, pending: Pending) -> None:
        self._writer.delete_documents_by_term("rowid", rowid)
        if pending.doc is not None:
            self._writer.add_document(pending.doc)

    def _commit(self, watermark: int) -> None:
        self._writer.delete_documents_by_term("meta", META)
        self._writer.add_document(tantivy.Document(meta=META, watermark=watermark, format=FORMAT))
        self._writer.commit()
        self._index.reload()
        self._committed = watermark

    def _commit_tail(self) -> None:
        with self._writer_lock:
            with self._tail_lock:
                upto, items = self._tail_seq, list(self._tail.items())
            if upto <= self._committed:
                return
            self._note_purged_segments([r for r, p in items if p.purged])
            for rowid, pending in items:
                self._apply(rowid, pending)
            self._commit(upto)
            with self._tail_lock:  # a searcher taken from now on holds what the tail held
                for rowid, pending in items:
                    self._tail_drop(rowid, pending)
        if self._committed - self._pruned >= PRUNE_EVERY:
            self._prune()

    def _prune(self) -> None:
        upto = self._committed
        with self._db.write() as conn:
            conn.execute("DELETE FROM words_log WHERE seq <= ?", (upto,))
        self._pruned = upto

    def _committer(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._commit_after_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                if self._tail:
                    self._commit_tail()
                if self._erase:
                    self.erase_purged()
            except Exception:
                log.exception("word index: commit failed; retrying")

    # ------------------------------------------------------------------ erasing purged words

    def _note_purged_segments(self, rowids: list[int]) -> None:
        """Before a commit deletes purged nodes' documents: which segments hold them (in the
        searcher of the last commit, kept for ``erase_purged``). A delete only marks a document;
        its words stay in the segment's files until the segment is dropped."""
        if not rowids:
            return
        searcher = self._index.searcher()
        query = tantivy.Query.term_set_query(self._schema, "rowid", rowids)
        hits = searcher.search(query, max(len(rowids) * 4, 10), count=False).hits
        segments = {addr.segment_ord for _, addr in hits}
        if segments:
            self._erase.append((searcher, segments))  # the committer's next round rewrites them

    def erase_purged(self) -> int:
        """Rewrite every segment that held a purged node's document: its live documents are
        deleted and added again from SQLite (into a new segment), so no live document is left in
        it and Tantivy drops its files at the commit. Runs on the committer thread; the cost is
        the segment's size (a store built at once may be one large segment). Returns the
        documents added again."""
        conn = self._db.get()
        done = 0
        while self._erase:
            queued, self._erase = self._erase, []
            wanted: set[int] = set()  # every purge queued since: one rewrite of each segment
            for searcher, segments in queued:
                wanted |= rowids_of(searcher, [a for a in every_doc(searcher) if a.segment_ord in segments])
            rowids = sorted(wanted)
            for start in range(0, len(rowids), REWRITE_BATCH):  # a commit each: others' commits between
                entries = [(0, r) for r in rowids[start : start + REWRITE_BATCH]]
                with self._writer_lock:
                    for rowid, pending in self._read_pending(conn, entries, scored=False).items():
                        self._apply(rowid, pending)  # the purged ones: deleted (again), not added
                        done += pending.doc is not None
                    self._commit(self._committed)  # the meta document moves out of the segment too
            with self._writer_lock:
                self._writer.garbage_collect_files()
        return done

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join()
        try:
            self._commit_tail()
        finally:
            with self._writer_lock:
                self._writer.wait_merging_threads()  # releases the writer's lock
                del self._writer
            if self._held is not None:
                self._held.close()  # and the folder's

    # ------------------------------------------------------------------ search

    def search(
        self, conn: sqlite3.Connection, terms: Sequence[str], *, namespace: str, limit: int, active_only: bool, **_: Any
    ) -> list[SearchHit]:
        """The ``limit`` best notes of ``namespace`` for ``terms`` (OR-ed), best first; exact (no ``prune``).

        The log is read after the index's first search, not before it: the search runs without the
        GIL, beside what the caller's other threads do (the linker reads the note meanwhile), and a
        read of SQLite before it was where the calling thread waited for them. When the log moved
        since the tail was read (another connection's writes), the tail catches up and the search
        starts again, so it sees every write committed before it began, as when it read the log first."""
        if limit < 1:
            return []
        tokens = list(dict.fromkeys(t for term in terms for t in self._analyzer.analyze(term)))
        if not tokens:
            return []
        want = OVERFETCH * limit
        for caught_up in (False, True):
            with self._tail_lock:
                searcher, seen, tail = self._index.searcher(), self._tail_seq, frozenset(self._tail)
                posted = set().union(*(self._postings.get(t, ()) for t in tokens))
                matching = {r: self._tail[r] for r in posted}  # the tail's nodes with one of the tokens
            total = max(searcher.num_docs, 1)
            # A namespace of nearly every document is left to the rows' filter: intersecting its
            # posting list doubled the search's cost at 1M notes, and the scores do not change.
            narrow = searcher.doc_freq("namespace", namespace) < NARROW_BELOW * total
            query = self._query(tokens, namespace if narrow else None)
            hits = searcher.search(query, want, count=False).hits
            if caught_up or log_position(conn) <= seen:
                break
            self._catch_up(conn)
        fresh = self._score_tail(searcher, matching, tokens, namespace)
        while True:
            rowids = searcher.fast_field_values("rowid", [a for _, a in hits]) if hits else []
            found = [(s, r) for (s, _), r in zip(hits, rowids, strict=True) if r not in tail]
            complete = len(hits) < want or want >= total
            floor = -math.inf if complete else hits[-1][0]  # an unfetched hit scores at most this
            merged = sorted(found + [x for x in fresh if x[0] >= floor], key=lambda x: (-x[0], x[1]))
            out = self._rows(conn, merged, namespace, limit, active_only)
            if len(out) >= limit or complete:
                return out
            want = min(want * WIDEN, total)
            hits = searcher.search(query, want, count=False).hits

    def _query(self, tokens: list[str], namespace: str | None) -> Any:
        """The OR of every token in every field, boosted by the field's weight; in ``namespace``
        (scored 0) unless it is None. Each token's clauses are built once (``_clauses``)."""
        q = tantivy.Query
        should = [clause for t in tokens for clause in self._clauses_of(t)]
        if namespace is None:
            return q.boolean_query(should)
        return q.boolean_query(
            [
                (tantivy.Occur.Must, q.const_score_query(q.term_query(self._schema, "namespace", namespace), 0.0)),
                (tantivy.Occur.Must, q.boolean_query(should)),
            ]
        )

    def _clauses_of(self, token: str) -> list[tuple[Any, Any]]:
        """``token``'s term in every field, boosted by the field's weight, as Should clauses: kept
        for the next query with it (queries are immutable; ``CLAUSES_KEPT`` tokens, then begun again)."""
        clauses = self._clauses.get(token)
        if clauses is None:
            if len(self._clauses) >= CLAUSES_KEPT:
                self._clauses = {}
            q = tantivy.Query
            clauses = self._clauses[token] = [
                (tantivy.Occur.Should, q.boost_query(q.term_query(self._schema, f, token), WEIGHTS[f]))
                for f in FTS_COLUMNS
            ]
        return clauses

    def _score_tail(
        self, searcher: Any, tail: dict[int, Pending], tokens: list[str], namespace: str
    ) -> list[tuple[float, int]]:
        """The tail's nodes of ``namespace`` scored as Tantivy scores them (``tantivy_tail.score_tail``);
        ``search`` passes only those with one of the tokens (the tail's postings), not the whole tail."""
        return score_tail(searcher, tail, tokens, namespace, self._avg)

    def _rows(
        self, conn: sqlite3.Connection, ranked: list[tuple[float, int]], namespace: str, limit: int, active_only: bool
    ) -> list[SearchHit]:
        """The first ``limit`` ranked rowids' nodes that pass the namespace and status, in rank order,
        read ``limit`` rowids (``2 * limit`` for ``active_only``) and then twice as many at a time until
        ``limit`` pass. The index holds no forgotten or purged note, and leaves the namespace to this
        filter only where it holds nearly every note, so the first ``limit`` nearly always pass; a
        superseded note fails ``active_only`` (about a third of the bench's notes), hence its margin.
        Reading ``2 * limit`` rows for recall's 50 hits was ~15 % of a recall at 1M notes."""
        status = "status = 'active'" if active_only else "status != 'forgotten'"
        hits: list[SearchHit] = []
        start, size = 0, 2 * limit if active_only else limit
        while start < len(ranked) and len(hits) < limit:
            part = ranked[start : start + size]
            keep: dict[int, tuple[str, str]] = {}
            for chunk, marks in in_chunks([r for _, r in part]):
                sql = (
                    # NOT INDEXED: rowid lookups; with (namespace, status) the planner scanned the namespace
                    f"SELECT rowid, id, chain_root FROM nodes NOT INDEXED WHERE rowid IN ({marks}) "
                    f"AND namespace = ? AND {status} AND purged_at IS NULL"
                )
                keep.update((r[0], (r[1], r[2])) for r in conn.execute(sql, (*chunk, namespace)))
            hits += [SearchHit(node_id=keep[r][0], chain_root=keep[r][1], score=s) for s, r in part if r in keep]
            start, size = start + size, 2 * size
        return hits[:limit]

    def _average_lengths(self, conn: sqlite3.Connection) -> None:
        """Each field's average length in tokens, from the ``AVERAGE_OVER`` newest live notes."""
        rows = conn.execute(
            f"SELECT {', '.join(FTS_COLUMNS)} FROM nodes WHERE status != 'forgotten' AND purged_at IS NULL "
            "ORDER BY rowid DESC LIMIT ?",
            (AVERAGE_OVER,),
        ).fetchall()
        for row in reversed(rows):
            self._count_lengths({f: len(self._analyzer.analyze(row[i])) for i, f in enumerate(FTS_COLUMNS) if row[i]})

    def indexed_rowids(self) -> set[int]:
        """Every rowid the committed index holds (tests, diagnostics)."""
        searcher = self._index.searcher()
        return rowids_of(searcher, every_doc(searcher))


def every_doc(searcher: Any) -> list[Any]:
    """The address of every document ``searcher`` sees (the meta document's too)."""
    return [a for _, a in searcher.search(tantivy.Query.all_query(), max(searcher.num_docs, 1), count=False).hits]


def rowids_of(searcher: Any, addrs: list[Any]) -> set[int]:
    """The node rowids of the documents at ``addrs`` (the meta document has none)."""
    return {r for r in searcher.fast_field_values("rowid", addrs) if r is not None} if addrs else set()


def take_writer(index: Any, folder: str | None) -> Any:
    try:
        return index.writer(heap_size=WRITER_HEAP, num_threads=1)
    except ValueError as exc:
        if "lock" in str(exc).lower():
            raise IndexBusy(f"{folder} is held by another process") from None
        raise
