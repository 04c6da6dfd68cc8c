"""The static embedder (EVOMEM_EMBEDDER=static): the table distilled from MiniLM, read with numpy.

It embeds (shape, unit rows, the same vectors every time), the setting wires it behind the
vectors port, and a missing or damaged file is refused with a message that says so.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from evomem.adapters.models.static import (
    DEFAULT_MODEL_DIR,
    DIM,
    StaticEmbedder,
    StaticModelUnavailable,
    read_table,
)
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.bootstrap.embedded import build_embedded
from evomem.bootstrap.vectors import MIN_SIMILARITY, build_vectors, static_problem, vectors_problem
from evomem.ops.runtime import ConfigError
from evomem.settings import Settings, SettingsError

pytestmark = pytest.mark.skipif(
    static_problem() is not None, reason=f"the static model cannot run here: {static_problem()}"
)

TEXTS = [
    "We moved the ledger from Postgres to SQLite.",
    "The bookkeeping entries now live in SQLite instead of Postgres.",
    "Lunch is at noon on Fridays in the big meeting room.",
]


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


def test_rows_are_unit_vectors_of_the_table_dimension(embedder: StaticEmbedder) -> None:
    v = embedder.encode(TEXTS)
    assert v.shape == (3, DIM) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, DIM)


def test_a_paraphrase_is_nearer_than_an_unrelated_note(embedder: StaticEmbedder) -> None:
    v = embedder.encode(TEXTS)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.1


def test_the_same_text_gives_the_same_vector_in_any_batch_and_instance(embedder: StaticEmbedder) -> None:
    alone = embedder.encode([TEXTS[1]])[0]
    batch = embedder.encode(TEXTS)[1]
    other = StaticEmbedder().encode([TEXTS[1]])[0]
    assert np.array_equal(alone, batch) and np.array_equal(alone, other)


def test_a_sentence_is_the_normalised_mean_of_its_token_rows(embedder: StaticEmbedder) -> None:
    from tokenizers import Tokenizer

    table = read_table(DEFAULT_MODEL_DIR / "model.safetensors")
    ids = Tokenizer.from_file(str(DEFAULT_MODEL_DIR / "tokenizer.json")).encode(TEXTS[0], add_special_tokens=False).ids
    want = table[ids].astype(np.float32).mean(axis=0)
    assert np.allclose(embedder.encode([TEXTS[0]])[0], want / np.linalg.norm(want), atol=1e-5)


def test_a_text_with_no_known_token_is_the_zero_vector(embedder: StaticEmbedder) -> None:
    v = embedder.encode(["", "   "])
    assert not v.any()


def test_one_string_is_refused(embedder: StaticEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.encode("one string")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- damaged and missing files


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "static"
    shutil.copytree(DEFAULT_MODEL_DIR, folder)
    return folder


def test_a_damaged_table_is_refused_by_its_sha256(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    emb = StaticEmbedder(folder)
    with pytest.raises(StaticModelUnavailable, match="does not match its pinned sha256"):
        emb.encode(["a note"])
    assert emb.state == "failed" and "sha256" in (emb.load_error or "")


def test_a_missing_table_names_the_file_and_how_to_build_it(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "model.safetensors").unlink()
    with pytest.raises(StaticModelUnavailable, match=r"model\.safetensors not found.*distill-static"):
        StaticEmbedder(folder).load()
    assert "model.safetensors" in (static_problem(str(folder)) or "")


def test_a_folder_without_pins_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "pins.json").unlink()
    with pytest.raises(StaticModelUnavailable, match=r"pins\.json"):
        StaticEmbedder(folder)


def test_a_file_that_is_not_safetensors_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"\x00" * 64)
    with pytest.raises(StaticModelUnavailable, match="not a safetensors file"):
        read_table(bad)


# ---------------------------------------------------------------------------- the setting


def test_the_default_embedder_is_minilm() -> None:
    assert Settings().vectors.embedder == "minilm"
    with pytest.raises(SettingsError):
        Settings(embedder="word2vec")


def test_the_setting_wires_the_static_embedder_into_the_vectors_port(tmp_path: Path) -> None:
    if vectors_problem(embedder="static") is not None:
        pytest.skip(f"no sqlite-vec here: {vectors_problem(embedder='static')}")
    settings = Settings(db=str(tmp_path / "s.db"), vectors="on", embedder="static")
    vectors = build_vectors(settings, SQLiteStore(settings.db_path()))
    assert vectors is not None and isinstance(vectors.embedder, StaticEmbedder)
    assert vectors.min_similarity == MIN_SIMILARITY["static"]
    service = build_embedded(settings)
    try:
        for text in ("Bookkeeping records now live in SQLite.", "The team picked Grafana for dashboards."):
            service.remember(text)
        out = service.recall("where are accounting entries persisted", k=2)  # no word in common with either
        first, _ = out.results[0]
        assert first.head.raw_text.startswith("Bookkeeping") and "vector" in first.best.via
    finally:
        service.close()


def test_the_static_embedder_does_not_run_on_triton(tmp_path: Path) -> None:
    settings = Settings(db=str(tmp_path / "t.db"), vectors="on", embedder="static", embedding_backend="triton")
    with pytest.raises(ConfigError, match="EVOMEM_EMBEDDER=static"):
        build_vectors(settings, SQLiteStore(settings.db_path()))
