"""kill -9 during a stream of keyed remembers, with retries: 0 missing, 0 duplicates.

A writer process (the real ``MemoryService`` over the real SQLite file) remembers N notes,
each with its own idempotency key, and prints each answer as it gets it. The test kills it
with SIGKILL at a random moment, checks the file (``PRAGMA integrity_check``, the chain
invariants), and starts it again: as an agent that lost answers would, it retries every key
from the first, so some retries replay acknowledged notes and some replay notes committed
whose answer the kill lost. After the rounds a last writer runs to the end. Every key must
have exactly one node, with its text, and every answer for a key must name the same node.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from evomem.adapters.sqlite.driver import sqlite as sqlite3
from evomem.adapters.sqlite.store import SQLiteStore

NOTES = 1000
ROUNDS = 5
SEED = 12

WRITER = r"""
import os
import signal
import sys
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.domain.cronista import LiteCronista
from evomem.app.memory import MemoryService

db, n, die_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
service = MemoryService.local(SQLiteStore(db), extractor=LiteCronista())
for i in range(n):
    out = service.remember(
        f"Decision {i}: the batch job {i} retries failed uploads {i % 7 + 1} times because the network is flaky.",
        idempotency_key=f"job-{i}",
        tags=["crash"],
    )
    if i == die_at and out.outcome == "inserted":  # committed, and killed before the answer leaves
        os.kill(os.getpid(), signal.SIGKILL)
    print(f"job-{i} {out.node.id} {out.outcome}", flush=True)
print("done", flush=True)
"""


def text_of(i: int) -> str:
    return f"Decision {i}: the batch job {i} retries failed uploads {i % 7 + 1} times because the network is flaky."


def run_writer(
    db: Path, kill_after: float | None, answers: dict[str, set[str]], outcomes: dict[str, int], die_at: int = -1
) -> tuple[int, bool]:
    """One writer; SIGKILL it ``kill_after`` seconds after its first answer (None: let it finish),
    or it kills itself right after committing note ``die_at``, before answering. Returns
    (answers read, finished)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(NOTES), str(die_at)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    read, finished, first = 0, False, None
    try:
        os.set_blocking(proc.stdout.fileno(), True)
        for line in proc.stdout:
            if first is None:
                first = time.monotonic()
            if line.strip() == "done":
                finished = True
                break
            key, node_id, outcome = line.split()
            answers[key].add(node_id)
            outcomes[outcome] += 1
            read += 1
            if kill_after is not None and time.monotonic() - first >= kill_after:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        if proc.poll() is None and not finished:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        err = proc.stderr.read() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
    assert finished or proc.returncode == -signal.SIGKILL, err
    return read, finished


def node_count(db: Path) -> int:
    raw = sqlite3.connect(db)
    try:
        return raw.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]
    finally:
        raw.close()


def check_file(db: Path) -> None:
    raw = sqlite3.connect(db)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        raw.close()
    store = SQLiteStore(db)
    try:
        assert store.check_invariants() == []
    finally:
        store.close()


def test_kill_9_during_keyed_remembers_with_retries_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    db = tmp_path / "crash.db"
    answers: dict[str, set[str]] = defaultdict(set)
    outcomes: dict[str, int] = defaultdict(int)
    killed_rounds = lost_answers = 0
    for round_no in range(ROUNDS):
        # Odd rounds: the writer dies right after a commit (an answer surely lost); even rounds:
        # killed from outside at a random moment (wherever it is: mid-transaction, mid-answer).
        # (Notes are stored in order, so the next new one is number node_count(db).)
        die_at = min(NOTES - 1, node_count(db) + rng.randrange(0, 20)) if round_no % 2 else -1
        _, finished = run_writer(db, rng.uniform(0.05, 0.3) if die_at < 0 else None, answers, outcomes, die_at)
        killed_rounds += not finished
        check_file(db)
        lost_answers += node_count(db) - len(answers)  # committed, answer killed with the writer
    run_writer(db, None, answers, outcomes)  # the last retry runs to the end
    check_file(db)

    raw = sqlite3.connect(db)
    try:
        rows = raw.execute("SELECT id, raw_text FROM nodes").fetchall()
        keys = raw.execute("SELECT COUNT(*) FROM remember_keys").fetchone()[0]
    finally:
        raw.close()
    texts = defaultdict(list)
    for node_id, raw_text in rows:
        texts[raw_text].append(node_id)
    missing = [i for i in range(NOTES) if text_of(i) not in texts]
    duplicates = {t: ids for t, ids in texts.items() if len(ids) > 1}
    forked = {k: ids for k, ids in answers.items() if len(ids) != 1}
    print(
        f"crash test: {ROUNDS} rounds ({killed_rounds} killed mid-stream), "
        f"{sum(outcomes.values())} remembers ({outcomes['replayed']} retries answered from the key), "
        f"{lost_answers} answers lost to a kill (then retried), {len(rows)} nodes, "
        f"{len(missing)} missing, {len(duplicates)} duplicated, {len(forked)} keys answered with two ids"
    )
    assert killed_rounds >= 1, "no round was killed mid-stream: the test proved nothing"
    assert outcomes["replayed"] > 0 and lost_answers >= ROUNDS // 2, "retries of lost answers were exercised"
    assert missing == [] and duplicates == {} and forked == {}
    assert len(rows) == NOTES == keys
    by_key = {k: next(iter(ids)) for k, ids in answers.items()}
    assert {by_key[f"job-{i}"] for i in range(NOTES)} == {r[0] for r in rows}
