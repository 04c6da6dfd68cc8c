"""``lab.handoff``: the product's model files are what their pins say, and a handover pins what it copies."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lab import handoff


def test_every_product_model_matches_its_pins_and_names_its_provenance() -> None:
    # The pair model's folder is written by a change under way; until it lands, it is the only
    # model allowed to be absent (every model whose folder is there is checked in full).
    absent = {name for name in handoff.MODELS if not (handoff.PRODUCT / name).is_dir()}
    assert absent <= {"pair"}
    assert {"cronista", "pair-cross"} <= set(handoff.MODELS)
    problems = [p for p in handoff.check() if not any(p.startswith(f"{name}:") for name in absent)]
    assert problems == []


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


FAKE = handoff.Model("fake", ("weights.bin", "tokenizer.json"), "train-fake", "lab/train_fake.py", ("README.md",))


def _built(tmp_path: Path) -> Path:
    built = tmp_path / "build" / "fake"
    built.mkdir(parents=True)
    (built / "weights.bin").write_bytes(bytes(range(256)) * 4)
    (built / "tokenizer.json").write_text('{"model": "fake"}\n')
    (built / "README.md").write_text("# fake (model card)\n")
    pins = {
        "model": "fake-1",
        "sha256": {"model.fp32.onnx": "f" * 64},  # a file the product does not load: kept as it is
        "weight": 0.5,
        "link_score": 3.25,
        "training": {"data_files": ["lab/cronista/train_notes.jsonl"], "sources": ["dev-a", "gen-odr-7", "nowhere"]},
    }
    (built / "pins.json").write_text(json.dumps(pins))
    return built


def test_a_handover_copies_the_files_and_pins_their_sha256_and_provenance(tmp_path: Path) -> None:
    built = _built(tmp_path)
    dest = tmp_path / "product" / "fake"
    handoff.hand_over(FAKE, built, dest)
    pins = json.loads((dest / "pins.json").read_text())
    for name in FAKE.files:
        assert (dest / name).read_bytes() == (built / name).read_bytes()
        assert pins["sha256"][name] == _sha(dest / name)
        assert pins["bytes"][name] == (dest / name).stat().st_size
    assert (dest / "README.md").is_file() and "README.md" not in pins["sha256"]  # copied, not pinned
    # what the exporter wrote is kept: the calibration the product reads, the other pins
    assert (pins["weight"], pins["link_score"], pins["model"]) == (0.5, 3.25, "fake-1")
    assert pins["sha256"]["model.fp32.onnx"] == "f" * 64
    prov = pins["provenance"]
    assert prov["made_by"] == "make -C lab train-fake" and prov["script"] == "lab/train_fake.py"
    assert prov["data"] == {
        "lab/cronista/train_notes.jsonl": _sha(handoff.ROOT / "lab" / "cronista" / "train_notes.jsonl"),
        "dev-a": _sha(handoff.ROOT / "lab" / "devdata" / "dev-a.jsonl"),
        "gen-odr-7": "generated from its seed",
        "nowhere": "missing",
    }
    assert "commit" in prov and prov["handed_over"]


def test_check_finds_a_file_that_is_not_the_pinned_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    product = tmp_path / "product"
    handoff.hand_over(FAKE, _built(tmp_path), product / "fake")
    monkeypatch.setattr(handoff, "MODELS", {"fake": FAKE})
    assert handoff.check(product) == []
    (product / "fake" / "weights.bin").write_bytes(b"another model")
    assert handoff.check(product) == ["fake/weights.bin: sha256 is not the pinned one (hand it over with lab.handoff)"]


def test_a_build_without_its_files_is_refused(tmp_path: Path) -> None:
    built = _built(tmp_path)
    (built / "weights.bin").unlink()
    with pytest.raises(SystemExit, match=r"lacks weights\.bin"):
        handoff.hand_over(FAKE, built, tmp_path / "product" / "fake")
    assert not (tmp_path / "product" / "fake").exists()
