"""Input validation and normalisation, shared by every entry point.

Every public string passes through here before it reaches a store, so the rules are
the same in the embedded server, the gateway and the gRPC services.
"""

from __future__ import annotations

import re
import unicodedata

from evomem.domain.errors import EmptyNote, InvalidArgument, InvalidText, NoteTooLarge
from evomem.domain.linkers.vocabulary import QUERY_STOPWORDS, words
from evomem.domain.model import Extraction

DEFAULT_MAX_NOTE_BYTES = 1_048_576  # 1 MiB of UTF-8

# C0 controls except tab, newline and carriage return; DEL; C1 controls.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_LABEL = re.compile(r"^[a-z0-9][a-z0-9._:/@-]{0,63}$")

MAX_TAGS = 32
MAX_QUERY_TERMS = 64
MAX_KEY_CHARS = 200
EXTRACTION_FIELDS = ("trigger", "change", "alternatives_tried", "consequences", "summary")


def clean_note(text: object, max_bytes: int = DEFAULT_MAX_NOTE_BYTES) -> tuple[str, list[str]]:
    """Validate a note's raw text. Returns the text to store and human-readable warnings.

    - not a string, invalid UTF-8 (lone surrogates), empty, or over ``max_bytes``: an error;
    - control characters (other than tab/newline/CR) are removed, with a warning;
    - the text is otherwise stored exactly as given (no trimming inside).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidText(
                f"raw_text is not valid UTF-8 (bad byte at offset {exc.start}); send text, not binary data",
                offset=exc.start,
            ) from exc
    if not isinstance(text, str):
        raise InvalidArgument(f"raw_text must be a string, got {type(text).__name__}")
    bad = _SURROGATE.search(text)
    if bad:
        raise InvalidText(
            f"raw_text is not valid UTF-8: lone surrogate U+{ord(bad.group()):04X} at character {bad.start()}; "
            "re-encode the note as UTF-8",
            offset=bad.start(),
        )
    warnings: list[str] = []
    removed = len(_CONTROL.findall(text))
    if removed:
        text = _CONTROL.sub("", text)
        warnings.append(f"removed {removed} control character(s) from raw_text")
    stripped = text.strip()
    if not stripped:
        raise EmptyNote("raw_text is empty; a note needs some text to remember")
    size = len(stripped.encode("utf-8"))
    if size > max_bytes:
        raise NoteTooLarge(
            f"raw_text is {size:,} bytes; the limit is {max_bytes:,} bytes "
            "(EVOMEM_MAX_NOTE_BYTES / --max-note-bytes). Store a summary, or split the note.",
            size=size,
            limit=max_bytes,
        )
    return stripped, warnings


def clean_free_text(value: str) -> str:
    """Make any string safe to search or display: drop surrogates and control characters."""
    value = _SURROGATE.sub(" ", value)
    return _CONTROL.sub(" ", value)


def clean_label(value: object, what: str, *, required: bool = False) -> str | None:
    """Namespace, scope: short lowercase labels (``eu-west``, ``team/ledger``)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise InvalidArgument(f"{what} must not be empty")
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string")
    label = unicodedata.normalize("NFKC", value).strip().lower()
    if not _LABEL.match(label):
        raise InvalidArgument(
            f"{what} {value!r} is not a valid label: use 1-64 characters from a-z, 0-9 and . _ : / @ -, "
            "starting with a letter or digit"
        )
    return label


def clean_tags(tags: object) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list | tuple):
        raise InvalidArgument("tags must be a list of strings")
    if len(tags) > MAX_TAGS:
        raise InvalidArgument(f"at most {MAX_TAGS} tags per note, got {len(tags)}")
    out: list[str] = []
    for tag in tags:
        label = clean_label(tag, "tag")
        if label and label not in out:
            out.append(label)
    return tuple(out)


def clean_short(value: object, what: str, limit: int = 200) -> str | None:
    """Session ids, authors: free text, one line, bounded."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string")
    value = " ".join(clean_free_text(value).split())
    if len(value) > limit:
        raise InvalidArgument(f"{what} is longer than {limit} characters")
    return value or None


def query_terms(query: object) -> list[str]:
    """Words of a search query, lowercased. Any string is accepted: operators and quotes
    are just punctuation here, so FTS syntax in a question can never become an error.

    Function words carry no topic; dropping them (``vocabulary.QUERY_STOPWORDS``) keeps BM25
    from scoring every note that says "the". A query made only of them is searched as it is."""
    if not isinstance(query, str):
        raise InvalidArgument("query must be a string")
    terms: list[str] = []
    for word in words(clean_free_text(query)):
        if word not in terms:
            terms.append(word)
    content = [t for t in terms if t not in QUERY_STOPWORDS]
    return (content or terms)[:MAX_QUERY_TERMS]


def clean_key(value: object) -> str | None:
    """remember's idempotency key: any 1-200 characters of printable text (a UUID, a hash, a
    task id). Compared exactly, after trimming the ends; None or "" means no key."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InvalidArgument("idempotency_key must be a string")
    if _SURROGATE.search(value) or _CONTROL.search(value) or "\n" in value or "\t" in value or "\r" in value:
        raise InvalidArgument("idempotency_key must be printable text on one line (no control characters)")
    key = value.strip()
    if len(key) > MAX_KEY_CHARS:
        raise InvalidArgument(f"idempotency_key is longer than {MAX_KEY_CHARS} characters")
    return key


def check_span(text: str, value: object, what: str, *, source: set[str] | None = None) -> str:
    """``value`` must be text taken from ``text``: a string whose every word occurs in it."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string")
    if _SURROGATE.search(value) or _CONTROL.search(value):
        raise InvalidArgument(f"{what} contains control characters or invalid UTF-8")
    if len(value) > 2 * len(text) + 64:
        raise InvalidArgument(f"{what} is longer than the note it was taken from")
    vocabulary = source if source is not None else set(words(text))
    extra = [w for w in words(value) if w not in vocabulary]
    if extra:
        raise InvalidArgument(
            f"{what} is not taken from the note's text (e.g. {extra[0][:40]!r}); every extracted field is a "
            "span of the note"
        )
    return value


def check_extraction(text: str, extraction: Extraction) -> Extraction:
    """An extraction for ``text``, checked as the cronista makes them: every field a span of
    the text, the extractor's name one short line. A field not taken from the note (a forged
    or mixed-up result) is an ``InvalidArgument``."""
    source = set(words(text))
    for name in EXTRACTION_FIELDS:
        check_span(text, getattr(extraction, name), f"extraction.{name}", source=source)
    extractor = clean_short(extraction.extractor, "extraction.extractor", limit=100) or ""
    return Extraction(**{n: getattr(extraction, n) for n in EXTRACTION_FIELDS}, extractor=extractor)
