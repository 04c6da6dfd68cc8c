"""Loading a model: its files checked against their pinned sha256, loaded once under a lock.

Every model the product loads goes through here: the cronista and the pair cross-encoder on
onnxruntime, the sentence embedder, and the tokenizers of the Triton clients.

    FOLDER = ModelFolder(CronistaModelUnavailable, ("model.onnx", "tokenizer.json"), missing=..., ...)
    model, tok = FOLDER.paths(folder)              # each file is there, or the error says how to build it
    FOLDER.verify(folder, FOLDER.hashes(folder))   # each file is the one pins.json pins
    session, tokenizer = open_encoder(model, tok, 1, inputs, outputs, CronistaModelUnavailable)

    loader = Loader(build)                         # nothing is read until get()
    loader.get(); loader.state                     # not_loaded, loading, loaded, failed (loader.error)

An adapter derives from ``FolderModel`` (a folder of pinned files: ``model_dir``, ``threads``,
``verify``; it builds its model in ``_open``) or from ``LoadsOnce``, and so has ``load()``,
``loaded``, ``state``, ``load_error`` and ``load_seconds``.

A model folder holds ``pins.json``, written by the lab (``lab/handoff.py``): ``sha256`` of each
file the product loads, and whatever else the exporter wrote (a calibration, its provenance).
For a folder shipped in the package, the sums compiled into the adapter must agree with
``pins.json``, so that replacing a model file *and* its pins is caught too. A file that does not
match its pin is refused. onnxruntime and tokenizers are imported only when a model is opened:
importing this module, or building an adapter, stays cheap.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

PINS_FILE = "pins.json"

T = TypeVar("T")


def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in blocks (models are tens of MB)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_sha256(path: Path, want: str | None, error: type[Exception], message: str) -> None:
    """Raise ``error(message)`` unless ``path`` has the sha256 ``want``. ``message`` is a template
    (``str.format``) of ``{path}``, ``{got}`` and ``{want}``."""
    got = sha256_file(path)
    if got != want:
        raise error(message.format(path=path, got=got, want=want))


# ---------------------------------------------------------------------------- a model folder and its pins


@dataclass(frozen=True, slots=True)
class ModelFolder:
    """A model's folder: the files the product loads, the sums they are pinned to, what its errors say.

    The messages are templates (``str.format``): ``missing`` of ``{path}``, ``unreadable`` of
    ``{path}`` and ``{exc}``, ``mismatch`` of ``{path}``, ``{got}`` and ``{want}``."""

    error: type[Exception]
    files: tuple[str, ...]  # loaded, each pinned by sha256
    missing: str  # a file is not there
    unreadable: str  # pins.json cannot be read
    mismatch: str  # a file is not the pinned one
    required: tuple[str, ...] = ()  # other files that must be there before anything is read
    packaged: Path | None = None  # the folder shipped in the package ...
    compiled: Mapping[str, str] = field(default_factory=dict)  # ... and the sums its pins.json must agree with

    def paths(self, folder: Path) -> list[Path]:
        """The paths of ``files`` in ``folder``; raises ``missing`` for the first one (of ``files``,
        then ``required``) that is not there."""
        for name in (*self.files, *self.required):
            if not (folder / name).is_file():
                raise self.error(self.missing.format(path=folder / name))
        return [folder / name for name in self.files]

    def read_pins(self, folder: Path) -> dict[str, Any]:
        """The folder's ``pins.json`` (it must hold ``sha256``); for the packaged folder its sums
        must be the compiled ones."""
        path = folder / PINS_FILE
        try:
            pins = json.loads(path.read_text())
            sha = pins["sha256"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise self.error(self.unreadable.format(path=path, exc=exc)) from exc
        if self.packaged is not None and folder.resolve() == self.packaged.resolve():
            for name, want in self.compiled.items():
                if want and sha.get(name) != want:
                    raise self.error(f"{path} pins {name} to {sha.get(name)}, but this release expects {want}")
        return pins

    def hashes(self, folder: Path) -> dict[str, str]:
        """The sha256 each file of ``folder`` must have (``read_pins``); every file of ``files`` must have one."""
        sha = self.read_pins(folder)["sha256"]
        for name in self.files:
            if not sha.get(name):
                raise self.error(f"{folder / PINS_FILE} pins no sha256 for {name}")
        return {k: str(v) for k, v in sha.items()}

    def verify(self, folder: Path, sha: Mapping[str, Any]) -> None:
        """Each of ``files`` has the sha256 ``sha`` pins for it; raises ``mismatch`` for the first that has not."""
        for name in self.files:
            check_sha256(folder / name, sha.get(name), self.error, self.mismatch)


# ---------------------------------------------------------------------------- load once, with a state


class Loader(Generic[T]):
    """A model loaded once, on first use, under a lock, with its load state.

    ``get()`` returns what ``build`` built, building it on the first call; threads that call at the
    same time wait on the lock and share it. A load that fails raises, leaves ``state`` at
    ``failed`` with ``error`` saying why, and is tried again on the next call. ``on_loaded`` is told
    the seconds a load took (for the adapter's log line)."""

    def __init__(self, build: Callable[[], T], on_loaded: Callable[[float], None] | None = None) -> None:
        self._build = build
        self._on_loaded = on_loaded
        self._lock = threading.Lock()
        self._value: T | None = None
        self._loading = False
        self.error: str | None = None  # why the last failed load failed (None: none failed)
        self.seconds: float | None = None  # how long the load took

    @property
    def value(self) -> T | None:
        """What was loaded (None until it is)."""
        return self._value

    @property
    def loaded(self) -> bool:
        return self._value is not None

    @property
    def state(self) -> str:
        """``not_loaded``, ``loading`` (a thread is in ``get``), ``loaded`` or ``failed``."""
        if self._value is not None:
            return "loaded"
        if self._loading:
            return "loading"
        return "failed" if self.error is not None else "not_loaded"

    def get(self) -> T:
        """The loaded model, loaded now if it is not yet (idempotent, thread-safe)."""
        value = self._value
        if value is not None:
            return value
        with self._lock:
            if self._value is not None:
                return self._value
            started = time.perf_counter()
            self._loading = True
            try:
                value = self._build()
            except Exception as exc:
                self.error = str(exc) or type(exc).__name__
                raise
            finally:
                self._loading = False
            self.seconds = seconds = time.perf_counter() - started
            self._value = value  # last: other threads see a fully built model
        if self._on_loaded is not None:
            self._on_loaded(seconds)
        return value


class LoadsOnce:
    """The load surface of a model adapter whose model is a ``Loader`` (``self._model``, set by the
    adapter): ``load()``, ``loaded``, ``state``, ``load_error`` and ``load_seconds``."""

    _model: Loader[Any]

    def load(self) -> None:
        """Load the model now, its files checked against their pins (idempotent, thread-safe)."""
        self._model.get()

    @property
    def loaded(self) -> bool:
        return self._model.loaded

    @property
    def state(self) -> str:
        """``not_loaded``, ``loading`` (a thread is in ``load``), ``loaded`` or ``failed``."""
        return self._model.state

    @property
    def load_error(self) -> str | None:
        """Why the last load failed (None: it did not fail)."""
        return self._model.error

    @property
    def load_seconds(self) -> float | None:
        return self._model.seconds


class FolderModel(LoadsOnce):
    """A model adapter over a folder of pinned files (the cronista, the pair cross-encoder):
    ``model_dir`` (``default_dir``, the packaged folder, when not given), ``threads`` for
    onnxruntime, ``verify`` (check the files against their pins). Nothing is read until the first
    use; the adapter opens the model in ``_open`` and may log the load in ``_loaded``."""

    default_dir: Path

    def __init__(
        self, model_dir: str | os.PathLike[str] | None = None, threads: int = 1, *, verify: bool = True
    ) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self.model_dir = Path(model_dir).expanduser() if model_dir is not None else self.default_dir
        self.threads = threads
        self.verify = verify
        self._model = Loader(self._open, self._loaded)

    def _open(self) -> Any:
        """The loaded model (called once, under the lock)."""
        raise NotImplementedError

    def _loaded(self, seconds: float) -> None:
        """Told how long the load took."""


# ---------------------------------------------------------------------------- onnxruntime and tokenizers


def require(module: str, error: type[Exception], hint: str) -> Any:
    """Import ``module``; raises ``error`` naming the missing package, then ``hint`` (what to install)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise error(f"{exc.name} is not installed; {hint}") from exc


def runtime(error: type[Exception], hint: str) -> Any:
    """The ``onnxruntime`` module, once it and ``tokenizers`` are known to import (``require``)."""
    ort = require("onnxruntime", error, hint)
    require("tokenizers", error, hint)
    return ort


def open_tokenizer(path: Path, max_length: int | None = None) -> Any:
    """The tokenizer of ``path``: without truncation or padding, or (``max_length``) truncated at
    ``max_length`` and padded with ``[PAD]`` (id 0) to the longest text of a batch."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    if max_length is None:
        tokenizer.no_truncation()
        tokenizer.no_padding()
    else:
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def open_session(ort: Any, model: Path, threads: int | None) -> Any:
    """An onnxruntime session of ``model`` on the CPU: all graph optimisations, one inter-op thread,
    ``threads`` intra-op threads (None: onnxruntime's default)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    options.inter_op_num_threads = 1
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])


ENCODER_HINT = "pip install 'evomem-mcp' (onnxruntime, tokenizers, numpy)"


def open_encoder(
    model: Path,
    tokenizer_file: Path,
    threads: int,
    inputs: Sequence[str],
    outputs: Sequence[str],
    unavailable: type[Exception],
) -> tuple[Any, Any]:
    """(onnxruntime session on the CPU, tokenizer without truncation or padding) of an encoder the
    project trained (the cronista, the pair cross-encoder). Raises ``unavailable`` with what to
    install when onnxruntime or tokenizers is missing, and when the graph's tensor names are not
    ``inputs`` -> ``outputs``."""
    ort = runtime(unavailable, ENCODER_HINT)
    tokenizer = open_tokenizer(tokenizer_file)
    session = open_session(ort, model, threads)
    names_in = tuple(i.name for i in session.get_inputs())
    names_out = tuple(o.name for o in session.get_outputs())
    if names_in != tuple(inputs) or names_out != tuple(outputs):
        raise unavailable(
            f"{model} has inputs {names_in} and outputs {names_out}; expected {tuple(inputs)} -> {tuple(outputs)}"
        )
    return session, tokenizer
