"""The ``onnx`` cronista: the project's own extraction model on onnxruntime, in process, on CPU.

    cronista = OnnxCronista()                 # free: nothing is imported or read yet
    ex = cronista.extract("We moved the ledger to SQLite because Postgres was overkill.")
    ex.change, ex.trigger, ex.extractor       # spans of the note; "onnx/cronista-minilm-1"
    cronista.analyse(text).spans              # {"subject": "ledger", "option_chosen": "SQLite", ...}

The model (``adapters/models/cronista/``, trained by ``lab/train_cronista.py``, exported by
``lab/export_cronista.py``; see its model card) is all-MiniLM-L6-v2 fine-tuned as a token
tagger with two heads:

- ``role_logits``: per token, BIO tags of the clause roles (trigger, change, alternatives,
  consequences, other). A clause runs from a B tag to the next B tag, O tag or line break, and
  is filed under the role most of its words lean to (``DECODE``); its text is the exact source
  span from its first word to its last.
- ``span_logits``: per token, BIO tags of four spans (subject, option chosen, option left,
  scope); the best-scoring run of each is returned as a source span.

So every field is made of spans of the source, and the summary is assembled from whole source
sentences by the lite cronista's ``assemble_summary``. Nothing is generated.

The ONNX graph (the same ``model.onnx`` Triton serves; tokenization stays here):

    inputs   input_ids       int64  [batch, tokens]   WordPiece ids, [CLS] ... [SEP], 0-padded
             attention_mask  int64  [batch, tokens]   1 for real tokens, 0 for padding
    outputs  role_logits     float  [batch, tokens, 11]   ROLE_LABELS
             span_logits     float  [batch, tokens, 9]    SPAN_LABELS

A note longer than ``MAX_TOKENS`` is cut into windows (at a sentence end where one is near) and
the windows run as one batch. Every file is checked against the sha256 pinned in the folder's
``pins.json`` (for the packaged folder, also in ``MODEL_FILES``) before it loads, by
``evomem.adapters.models.loader``; a file that does not match is refused. Only numpy,
tokenizers and onnxruntime are used here, never torch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evomem.adapters.models.loader import FolderModel, ModelFolder, open_encoder
from evomem.domain.cronista import SUMMARY_MAX_CHARS, assemble_summary, join_clauses, sentences
from evomem.domain.errors import Unavailable
from evomem.domain.model import Extraction

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

NAME = "onnx"
MODEL_NAME = "cronista-minilm"
MODEL_VERSION = "1"
DEFAULT_MODEL_DIR = Path(__file__).parent / "cronista"

#: Roles of the clause tagger, in label order; "alternatives" fills ``alternatives_tried``.
ROLES = ("trigger", "change", "alternatives", "consequences", "other")
FIELD_OF_ROLE = {
    "trigger": "trigger",
    "change": "change",
    "alternatives": "alternatives_tried",
    "consequences": "consequences",
}
SPANS = ("subject", "option_chosen", "option_left", "scope")
ROLE_LABELS = ("O", *(f"{p}-{r}" for r in ROLES for p in ("B", "I")))
SPAN_LABELS = ("O", *(f"{p}-{s}" for s in SPANS for p in ("B", "I")))

INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAMES = ("role_logits", "span_logits")
MAX_TOKENS = 256  # per window, [CLS] and [SEP] included
CLS_ID, SEP_ID, PAD_ID = 101, 102, 0
_SENTENCE_END = {".", "!", "?", ";"}

#: The files of the model folder and their pinned sha256 (``model.onnx`` is the int8 graph,
#: committed; ``model.fp32.onnx`` is rebuilt by ``make -C lab train-cronista`` and pinned in the card).
MODEL_FILES = {
    "model.onnx": "52c84bfdf00b3a14920439e46c69ef98af20dfaf530f7a0079cd892d1f8f014d",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}


class CronistaModelUnavailable(Unavailable):
    """The model files are missing, damaged or do not match their pinned sha256."""


#: The model folder: its files, their pins (``pins.json``; for the packaged folder, ``MODEL_FILES``
#: too) and what its errors say.
REBUILD = "make -C lab train-cronista, then make -C lab handoff"
FOLDER = ModelFolder(
    CronistaModelUnavailable,
    ("model.onnx", "tokenizer.json"),
    missing="{path} not found; build the model with: " + REBUILD,
    unreadable="{path} is missing or unreadable ({exc}); rebuild the model with: " + REBUILD,
    mismatch="{path} does not match its pinned sha256 (got {got:.12}..., pinned {want:.12}...): the file is "
    "damaged or was replaced; restore it from the repository or rebuild it with: " + REBUILD,
    packaged=DEFAULT_MODEL_DIR,
    compiled=MODEL_FILES,
)


# ---------------------------------------------------------------------------- tokens and windows


@dataclass(frozen=True, slots=True)
class Window:
    """One row of the batch: token ids and, per token, its character span and word number."""

    ids: list[int]  # without [CLS]/[SEP]
    offsets: list[tuple[int, int]]
    words: list[int]  # global word index of each token (-1 for none)


def windows(tokenizer: Any, text: str, max_tokens: int = MAX_TOKENS) -> list[Window]:
    """Tokenize ``text`` and cut it into windows of at most ``max_tokens`` (with [CLS]/[SEP]).

    A cut falls after the last sentence-ending token of the window's second half when there is
    one, else at the limit. Windows do not overlap; each token is in exactly one.
    """
    enc = tokenizer.encode(text, add_special_tokens=False)
    ids, offsets = list(enc.ids), [tuple(o) for o in enc.offsets]
    words = [-1 if w is None else int(w) for w in enc.word_ids]
    room = max_tokens - 2
    out: list[Window] = []
    start = 0
    while start < len(ids):
        end = min(start + room, len(ids))
        if end < len(ids):
            for i in range(end - 1, start + room // 2, -1):
                if (
                    text[offsets[i][0] : offsets[i][1]] in _SENTENCE_END
                    or "\n" in text[offsets[i][1] : offsets[i + 1][0]]
                ):
                    end = i + 1
                    break
            # never cut inside a word: move the cut back to the word's first token
            while start + 1 < end < len(ids) and words[end] == words[end - 1] and words[end] >= 0:
                end -= 1
        out.append(Window(ids[start:end], offsets[start:end], words[start:end]))
        start = end
    return out


def batch_arrays(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """[CLS] ids [SEP], zero-padded to the longest row: (input_ids, attention_mask), int64."""
    import numpy as np

    width = max((len(r) for r in rows), default=0) + 2
    ids = np.full((len(rows), width), PAD_ID, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, 0] = CLS_ID
        ids[i, 1 : len(row) + 1] = row
        ids[i, len(row) + 1] = SEP_ID
        mask[i, : len(row) + 2] = 1
    return ids, mask


# ---------------------------------------------------------------------------- decoding


@dataclass(frozen=True, slots=True)
class Clause:
    start: int
    end: int
    role: str
    text: str


@dataclass(frozen=True, slots=True)
class Analysis:
    """What the model read: the clauses with their roles, the four spans, and the extraction."""

    extraction: Extraction
    clauses: tuple[Clause, ...] = ()
    spans: dict[str, str | None] = field(default_factory=dict)


def _word_runs(
    win_words: list[tuple[int, int, int]], labels: list[int], label_names: Sequence[str]
) -> list[tuple[str, int, int, list[int]]]:
    """BIO runs over words: (kind, first word, last word, the words' positions in the list)."""
    runs: list[tuple[str, int, int, list[int]]] = []
    cur: list[Any] | None = None
    for pos, lab in enumerate(labels):
        name = label_names[lab]
        if name == "O":
            cur = None
            continue
        tag, kind = name.split("-", 1)
        if tag == "B" or cur is None or cur[0] != kind:
            cur = [kind, pos, pos, [pos]]
            runs.append(cur)  # type: ignore[arg-type]
        else:
            cur[2] = pos
            cur[3].append(pos)
    return [(r[0], r[1], r[2], r[3]) for r in runs]


def _vote_runs(role_prob: list[np.ndarray], line_starts: set[int]) -> list[tuple[str, int, int]]:
    """Clauses by vote: a clause runs from a B tag (or the first tagged word after an O or a line
    break) to the word before the next B, O or line break, whatever role each word leans to; its
    role is the one with the largest probability mass (B and I together) summed over its words.
    (No labelled clause of the training notes crosses a line break.)"""
    import numpy as np

    n_roles = len(ROLES)
    out: list[tuple[str, int, int]] = []
    start: int | None = None
    for pos, p in enumerate([*role_prob, None]):
        lab = ROLE_LABELS[int(np.argmax(p))] if p is not None else "O"
        if start is not None and (lab == "O" or lab.startswith("B-") or pos in line_starts):
            mass = np.sum([q[1:].reshape(n_roles, 2).sum(-1) for q in role_prob[start:pos]], axis=0)
            out.append((ROLES[int(np.argmax(mass))], start, pos - 1))
            start = None
        if lab != "O" and start is None:
            start = pos
    return out


#: How clauses are cut from the role tags: "runs" (a new clause wherever the tagged role changes)
#: or "vote" (clauses cut at B and O tags and line breaks only, each filed under its majority
#: role). Chosen on a development split of the training notes (lab/cronista_decode_dev.py).
DECODE = "vote"


def decode(
    text: str,
    wins: Sequence[Window],
    role_logits: Sequence[np.ndarray],
    span_logits: Sequence[np.ndarray],
    mode: str | None = None,
) -> tuple[list[Clause], dict[str, str | None]]:
    """Turn per-token logits into source-span clauses and spans (word level: a word's label is
    its first token's). ``role_logits[i]`` holds window i's rows for its tokens, [CLS] excluded."""
    import numpy as np

    mode = mode or DECODE
    words: list[tuple[int, int, int]] = []  # (word index, char start, char end)
    role_prob: list[np.ndarray] = []
    role_lab: list[int] = []
    span_lab: list[int] = []
    span_prob: list[np.ndarray] = []
    for win, rl, sl in zip(wins, role_logits, span_logits, strict=True):
        for t, (w, (a, b)) in enumerate(zip(win.words, win.offsets, strict=True)):
            if words and w >= 0 and words[-1][0] == w:
                words[-1] = (w, words[-1][1], b)  # a continuation token widens its word
                continue
            words.append((w, a, b))
            r = np.exp(rl[t] - rl[t].max())
            role_prob.append(r / r.sum())
            role_lab.append(int(np.argmax(rl[t])))
            s = sl[t] - sl[t].max()
            p = np.exp(s) / np.exp(s).sum()
            span_prob.append(p)
            span_lab.append(int(np.argmax(p)))
    if mode == "vote":
        line_starts = {i for i in range(1, len(words)) if "\n" in text[words[i - 1][2] : words[i][1]]}
        cuts = _vote_runs(role_prob, line_starts)
    elif mode == "runs":
        cuts = [(kind, a, b) for kind, a, b, _ in _word_runs(words, role_lab, ROLE_LABELS)]
    else:
        raise ValueError(f"unknown decode mode {mode!r} (runs or vote)")
    clauses = [Clause(words[a][1], words[b][2], kind, text[words[a][1] : words[b][2]]) for kind, a, b in cuts]
    spans: dict[str, str | None] = dict.fromkeys(SPANS)
    best: dict[str, float] = {}
    for kind, a, b, members in _word_runs(words, span_lab, SPAN_LABELS):
        score = float(np.mean([span_prob[m][span_lab[m]] for m in members]))
        if score > best.get(kind, -1.0):
            best[kind] = score
            spans[kind] = text[words[a][1] : words[b][2]]
    return clauses, spans


def fields_of(clauses: Sequence[Clause]) -> dict[str, str]:
    found: dict[str, list[str]] = {f: [] for f in FIELD_OF_ROLE.values()}
    for c in clauses:
        name = FIELD_OF_ROLE.get(c.role)
        if name is not None and c.text not in found[name]:
            found[name].append(c.text)
    return {name: join_clauses(values) for name, values in found.items()}


# ---------------------------------------------------------------------------- the backend


def pinned_hashes(model_dir: Path) -> dict[str, str]:
    """The sha256 each file of ``model_dir`` must have: ``pins.json`` of the folder, which for the
    packaged model must agree with the pins compiled into this module."""
    return FOLDER.hashes(model_dir)


class OnnxCronista(FolderModel):
    """The ``onnx`` Extractor (see ``evomem.app.ports.Extractor``). Thread-safe; loads on first use."""

    name = f"{NAME}/{MODEL_NAME}-{MODEL_VERSION}"
    default_dir = DEFAULT_MODEL_DIR

    @property
    def _session(self) -> Any:
        value = self._model.value
        return value[0] if value is not None else None

    @property
    def _tokenizer(self) -> Any:
        value = self._model.value
        return value[1] if value is not None else None

    def _open(self) -> tuple[Any, Any]:
        """(session, tokenizer) of the model folder, its files checked against their pins."""
        model, tok = FOLDER.paths(self.model_dir)
        if self.verify:
            FOLDER.verify(self.model_dir, pinned_hashes(self.model_dir))
        return open_encoder(model, tok, self.threads, INPUT_NAMES, OUTPUT_NAMES, CronistaModelUnavailable)

    def _loaded(self, seconds: float) -> None:
        log.info("cronista model %s loaded from %s in %.2fs", self.name, self.model_dir, seconds)

    def infer(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run the graph on one batch (what a Triton client sends): role and span logits."""
        self.load()
        role, span = self._session.run(list(OUTPUT_NAMES), {"input_ids": input_ids, "attention_mask": attention_mask})
        return role, span

    def analyse(self, text: str) -> Analysis:
        if not isinstance(text, str):
            raise TypeError(f"extract takes a string, got {type(text).__name__}")
        if not text.strip():
            return Analysis(Extraction(extractor=self.name), (), dict.fromkeys(SPANS))
        self.load()
        wins = windows(self._tokenizer, text)
        if not wins:
            return Analysis(Extraction(extractor=self.name), (), dict.fromkeys(SPANS))
        ids, mask = batch_arrays([w.ids for w in wins])
        role, span = self.infer(ids, mask)
        clauses, spans = decode(
            text,
            wins,
            [role[i, 1 : len(w.ids) + 1] for i, w in enumerate(wins)],
            [span[i, 1 : len(w.ids) + 1] for i, w in enumerate(wins)],
        )
        fields = fields_of(clauses)
        summary = assemble_summary(fields, sentences(text))
        assert len(summary) <= SUMMARY_MAX_CHARS
        return Analysis(Extraction(summary=summary, extractor=self.name, **fields), tuple(clauses), spans)

    def extract(self, text: str) -> Extraction:
        return self.analyse(text).extraction

    def check(self) -> str | None:
        """Never degraded: in process, the model answers or the call fails."""
        return None

    def close(self) -> None:
        """The onnxruntime session is released with the object."""
