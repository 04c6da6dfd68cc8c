"""The pair linker's weights file: read, checked against its pinned sha256, and made a ``PairModel``.

The shipped model is ``pair/pair_model.json`` beside this module, written by ``make -C lab
train-linker`` (``lab/train_linker.py``) and put here by ``python -m lab.handoff``, which writes
``pair/pins.json`` next to it: the file's ``sha256`` and ``bytes``, and its ``provenance`` (the make
target and script that made it, each data file it was trained on with its sha256). A weights file
whose sha256 is not the pinned one (damaged, or replaced without a hand-over) is refused with an
error naming it (``evomem.adapters.models.loader.ModelFolder``).

    model = shipped_pair_model()                       # the packaged model, read and checked once
    model = load_pair_model(path, verify=False)        # a lab file (a held-out model), no pins

Each file version is read once per process (its path, modification time and size), so the trees
are compiled once, not once per linker: the benchmark builds a service per scenario.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

from evomem.adapters.models.loader import PINS_FILE, ModelFolder
from evomem.domain.errors import Unavailable
from evomem.domain.linkers.pair_model import PairModel

MODEL_DIR = Path(__file__).with_name("pair")
MODEL_FILE = MODEL_DIR / "pair_model.json"

_LOADED: dict[tuple[str, int, int, bool], PairModel] = {}
_LOCK = threading.Lock()


class PairModelFileUnavailable(Unavailable):
    """The pair model's weights file is missing, unreadable, or not the one its pins name."""


FOLDER = ModelFolder(
    PairModelFileUnavailable,
    (MODEL_FILE.name,),
    missing="{path} not found; hand the pair model over with: python -m lab.handoff",
    unreadable="{path} is missing or unreadable ({exc}); hand the pair model over with: python -m lab.handoff",
    mismatch="{path} does not match its pinned sha256 (got {got:.12}..., pinned {want:.12}...): the file is "
    "damaged or was replaced; restore it from the repository or hand a new one over with: python -m lab.handoff",
    required=(PINS_FILE,),
)


def shipped_pair_model() -> PairModel:
    """The packaged pair model (``pair/pair_model.json``), checked against ``pair/pins.json``;
    the same instance on every call while the file is unchanged."""
    return load_pair_model(MODEL_FILE)


def load_pair_model(path: Path | str = MODEL_FILE, *, verify: bool = True) -> PairModel:
    """The pair model in ``path``. ``verify``: its sha256 must be the one ``pins.json`` beside it
    pins (a missing ``pins.json`` is refused too); without it, any weights file of this linker's
    features is read (the lab's held-out models)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise PairModelFileUnavailable(FOLDER.missing.format(path=p)) from exc
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size, verify)
    with _LOCK:
        model = _LOADED.get(key)
        if model is None:
            if verify:
                folder = dataclasses.replace(FOLDER, files=(p.name,))
                folder.paths(p.parent)
                folder.verify(p.parent, folder.hashes(p.parent))
            model = _LOADED[key] = _read(p)
    return model


def _read(path: Path) -> PairModel:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PairModelFileUnavailable(f"{path}: the pair model's weights file is unreadable ({exc})") from exc
    try:
        return PairModel.from_dict(data)
    except ValueError as exc:  # the features of another version of the linker
        raise ValueError(f"{path}: {exc}") from exc
