"""The lab's one door into the product: model files, each with its sha256 and the data it came from.

    python -m lab.handoff                    # every model built under build/lab/ goes in
    python -m lab.handoff --model pair       # one of them
    python -m lab.handoff --check            # the product's files are what their pins say

The trainers (``make -C lab train-linker``, ``train-cronista``, ``train-cross``, ``distill-static``) write into
``build/lab/<model>/`` and never into the product. This copies a built model's files into its
folder of ``services/evomem/adapters/models/`` and writes that folder's ``pins.json``:

- ``sha256`` and ``bytes`` of every file the product loads (the loader refuses any other file);
- ``provenance``: the make target and script that made it, each data file it was trained or
  calibrated on with its sha256, the commit the lab ran at and when the model was handed over.

Whatever else the exporter wrote into ``pins.json`` (inputs, outputs, calibration) is kept.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evomem.adapters.models.loader import sha256_file as sha256

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "lab"
PRODUCT = ROOT / "services" / "evomem" / "adapters" / "models"


@dataclass(frozen=True)
class Model:
    name: str  # the folder under build/lab/ and under the product's models/
    files: tuple[str, ...]  # what the product loads, pinned by sha256
    target: str  # the lab's make target that builds it
    script: str
    also: tuple[str, ...] = ()  # copied, not pinned (a model card)
    compiled: str | None = None  # a product module that compiles the pin of model.onnx in too


MODELS = {
    m.name: m
    for m in (
        Model("pair", ("pair_model.json",), "train-linker", "lab/train_linker.py"),
        Model(
            "cronista",
            ("model.onnx", "tokenizer.json"),
            "train-cronista",
            "lab/train_cronista.py",
            ("README.md",),
            compiled="services/evomem/adapters/models/onnx_cronista.py",
        ),
        Model("pair-cross", ("model.onnx", "tokenizer.json"), "train-cross", "lab/train_cross.py", ("README.md",)),
        Model("static", ("model.safetensors", "tokenizer.json"), "distill-static", "lab/distill_static.py"),
    )
}


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def data_files(model: Model, folder: Path) -> dict[str, str]:
    """The data files a built model names (its training sources), each with its sha256 now."""
    if model.name == "pair":
        meta = json.loads((folder / "pair_model.json").read_text(encoding="utf-8"))
        sources = meta.get("training", {}).get("sources", {})
        names = [s.get("file") or name for name, s in sources.items()]
    else:
        training = _read_pins(folder).get("training", {})
        names = [*training.get("data_files", []), *training.get("sources", [])]
        # a model made from another model, not from data (the static table): that model's file and sha256
        return {**{name: _data_sha(name) for name in names}, **training.get("base", {})}
    return {name: _data_sha(name) for name in names}


def _data_sha(name: str) -> str:
    """A data file's sha256; a source named without a file is looked up among the development and
    benchmark sets, and a generated one (``gen-*``: made by a seeded generator) says so."""
    for path in (ROOT / name, ROOT / "lab" / "devdata" / f"{name}.jsonl", ROOT / "bench" / "data" / f"{name}.jsonl"):
        if path.is_file():
            return sha256(path)
    return "generated from its seed" if name.startswith("gen-") else "missing"


def _read_pins(folder: Path) -> dict[str, Any]:
    path = folder / "pins.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def hand_over(model: Model, built: Path, dest: Path) -> dict[str, Any]:
    """Copy ``built``'s files into ``dest`` and write ``dest/pins.json``. Refuses a build that lacks a file."""
    missing = [f for f in model.files if not (built / f).is_file()]
    if missing:
        raise SystemExit(
            f"lab.handoff: {model.name}: {built} lacks {', '.join(missing)}; run make -C lab {model.target}"
        )
    dest.mkdir(parents=True, exist_ok=True)
    pins = _read_pins(built)
    for f in (*model.files, *model.also):
        if (built / f).is_file():
            shutil.copyfile(built / f, dest / f)
    pins["sha256"] = {**pins.get("sha256", {}), **{f: sha256(dest / f) for f in model.files}}
    pins["bytes"] = {**pins.get("bytes", {}), **{f: (dest / f).stat().st_size for f in model.files}}
    pins["provenance"] = {
        "made_by": f"make -C lab {model.target}",
        "script": model.script,
        "data": data_files(model, built),
        "commit": _commit(),
        "handed_over": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    (dest / "pins.json").write_text(json.dumps(pins, indent=2) + "\n", encoding="utf-8")
    if model.compiled is not None and dest == PRODUCT / model.name:
        pin_compiled(ROOT / model.compiled, pins["sha256"]["model.onnx"])
    return pins


def pin_compiled(module: Path, sha: str) -> None:
    """The packaged model's pin is compiled into its adapter too (``MODEL_FILES``), so that swapping
    the folder's model *and* pins.json is still caught: rewrite it to the model handed over."""
    code = module.read_text(encoding="utf-8")
    new = re.sub(r'"model\.onnx": "[0-9a-f]*"', f'"model.onnx": "{sha}"', code, count=1)
    if new != code:
        module.write_text(new, encoding="utf-8")
        print(f"pinned model.onnx in {module.relative_to(ROOT)}")


def check(dest_root: Path = PRODUCT) -> list[str]:
    """Every pinned product file matches its sha256, and every model names its provenance."""
    problems = []
    for model in MODELS.values():
        folder = dest_root / model.name
        pins = _read_pins(folder)
        if not pins:
            problems.append(f"{model.name}: no pins.json in {folder}")
            continue
        for f in model.files:
            want = pins.get("sha256", {}).get(f)
            path = folder / f
            if not path.is_file():
                problems.append(f"{model.name}/{f}: missing")
            elif want != sha256(path):
                problems.append(f"{model.name}/{f}: sha256 is not the pinned one (hand it over with lab.handoff)")
        prov = pins.get("provenance", {})
        if not prov.get("made_by") or not prov.get("data"):
            problems.append(f"{model.name}: pins.json names no provenance (made_by, data)")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.handoff", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), action="append", help="only these (default: every one built)")
    ap.add_argument("--check", action="store_true", help="verify the product's model files against their pins")
    args = ap.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(p, file=sys.stderr)
        print("model files match their pins" if not problems else f"{len(problems)} problem(s)")
        return 1 if problems else 0
    names = args.model or [n for n in MODELS if (BUILD / n).is_dir()]
    if not names:
        print(f"nothing built under {BUILD}: run make -C lab train-linker (or train-cronista, train-cross, ...)")
        return 1
    for name in names:
        pins = hand_over(MODELS[name], BUILD / name, PRODUCT / name)
        files = ", ".join(f"{f} {h[:12]}" for f, h in pins["sha256"].items() if f in MODELS[name].files)
        print(f"{name}: {files}; data: {len(pins['provenance']['data'])} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
