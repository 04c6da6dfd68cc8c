"""An honest, fast start: no call waits for the model; recall says when it answered by words only.

Real parts: the embedded wiring (``build_embedded``) over a SQLite file, the packaged model,
``start_background`` holding the load back until told (as ``evomem-mcp`` does until its first
tool call is answered). Timing is never asserted here (``bench/startup.py`` measures it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evomem.app.background import start_background
from evomem.bootstrap.embedded import build_embedded
from evomem.bootstrap.vectors import vectors_problem
from evomem.domain.errors import MODEL_LOADING
from evomem.entrypoints.cli import mcp as cli
from evomem.entrypoints.cli import service as services
from evomem.settings import Settings, env_names

OLD = "We keep the ledger in Postgres."
NEW = "Bookkeeping records now live in SQLite."
PARAPHRASE = "where are accounting entries persisted"  # no word in common with OLD or NEW

needs_vectors = pytest.mark.skipif(vectors_problem() is not None, reason=f"no hybrid recall here: {vectors_problem()}")


def texts(outcome) -> list[str]:  # type: ignore[no-untyped-def]
    return [entry.head.raw_text for entry, _history in outcome.results]


@needs_vectors
def test_recall_answers_by_words_while_the_model_waits_then_by_meaning(tmp_path: Path) -> None:
    service = build_embedded(Settings(db=str(tmp_path / "s.db")))
    go = threading.Event()
    try:
        threads = start_background(service, after=go, after_s=600)
        assert service.vectors is not None and service.vectors.model_state == "not_loaded"  # type: ignore[attr-defined]
        old = service.remember(OLD).node
        new = service.remember(NEW, supersedes=old.id)
        assert new.warnings == []  # the vector is left to the backfill, silently
        by_words = service.recall("ledger postgres")
        assert texts(by_words) == [NEW]  # BM25 on the old version, resolved to the head
        assert any(MODEL_LOADING in n for n in by_words.notes), by_words.notes
        assert texts(service.recall(PARAPHRASE)) == []  # no meaning yet, and no waiting for it
        assert service.vectors.model_state == "not_loaded"  # type: ignore[attr-defined]  # nothing loaded it inline
        go.set()
        for thread in threads:
            thread.join(120)
        assert service.vectors.model_state == "loaded"  # type: ignore[attr-defined]
        by_meaning = service.recall(PARAPHRASE, k=3)
        assert texts(by_meaning)[0] == NEW  # the backfill embedded both notes after the load
        assert not any(MODEL_LOADING in n for n in by_meaning.notes)
    finally:
        go.set()
        service.vectors.close()  # type: ignore[union-attr]
        service.close()


def test_evomem_mcp_help_lists_every_flag_and_the_environment_only_settings(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for key in cli.FLAGS:
        assert "--" + key.replace("_", "-") in out
    for var in cli.ENV_ONLY:
        assert var in out and var in env_names()


def test_evomem_service_help_exits_0_and_lists_every_variable(capsys: pytest.CaptureFixture[str]) -> None:
    assert services.main(["--help"]) == 0
    out = capsys.readouterr().out
    missing = sorted(v for v in env_names() if v not in out)
    assert not missing, missing
    assert services.main(["nonsense"]) == 2


def test_the_server_imports_no_linker_jsonschema_numpy_or_model_runtime_at_start(tmp_path: Path) -> None:
    """What evomem-mcp imports up to its first answer (a recall): the heavy modules stay out."""
    code = (
        "import sys, anyio; from evomem.entrypoints.cli import mcp as cli; "
        "from evomem.bootstrap import embedded as bootstrap; from evomem.app.background import start_background; "
        f"st = cli.settings_from_args(['--db', {str(tmp_path / 'i.db')!r}]); s = bootstrap.build_embedded(st); "
        "server = bootstrap.embedded_mcp_server(st, s); "
        "import threading; start_background(s, after=threading.Event(), after_s=600); "  # as evomem-mcp
        "assert not anyio.run(server.call_tool, 'recall', {'query': 'ledger', 'k': 5}).is_error; "
        "print(sorted(m for m in ('numpy', 'onnxruntime', 'tokenizers', 'sqlite_vec', 'prometheus_client', "
        "'evomem.domain.linkers.scored', 'evomem.domain.linkers.heuristic', 'evomem.domain.linkers.pair', "
        "'grpc', 'jsonschema', 'pydantic_settings') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_vectors_on_without_sqlite_vec_is_one_line_saying_what_to_install(tmp_path: Path) -> None:
    import sqlite3

    if hasattr(sqlite3.connect(":memory:"), "enable_load_extension"):
        pytest.skip("this Python's sqlite3 loads extensions: vectors work with it")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    env["EVOMEM_SQLITE_DRIVER"] = "sqlite3"
    evomem_mcp = str(Path(sys.executable).with_name("evomem-mcp"))
    out = subprocess.run(
        [evomem_mcp, "--db", str(tmp_path / "v.db"), "--vectors", "on"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evomem-mcp: vectors on: "), out.stderr
    assert "pip install" in lines[0] and "Traceback" not in out.stderr
