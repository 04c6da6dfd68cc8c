"""One error vocabulary for every wiring.

Each error has a stable ``code``. Entry points translate codes, never messages:
the MCP tools turn them into tool errors ("[code] message"), gRPC servicers into
status codes (see ``GRPC_STATUS``). Messages are written for the agent reading
them: what was wrong, and what to do instead.
"""

from __future__ import annotations


class EvoMemError(Exception):
    """Base class. ``code`` is stable and machine-readable."""

    code = "internal"

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class InvalidArgument(EvoMemError):
    code = "invalid_argument"


class EmptyNote(InvalidArgument):
    code = "empty_note"


class NoteTooLarge(InvalidArgument):
    code = "note_too_large"


class InvalidText(InvalidArgument):
    code = "invalid_text"


class InvalidId(InvalidArgument):
    code = "invalid_id"


class NotFound(EvoMemError):
    code = "not_found"


class Forgotten(EvoMemError):
    code = "forgotten"


class Purged(EvoMemError):
    code = "purged"


class NamespaceMismatch(EvoMemError):
    code = "namespace_mismatch"


class ScopeMismatch(EvoMemError):
    code = "scope_mismatch"


class CycleError(EvoMemError):
    code = "cycle"


class Conflict(EvoMemError):
    """A concurrent writer changed what this call relied on; retrying is safe."""

    code = "conflict"


class NotHead(Conflict):
    """``remember(supersedes=id, if_head=true)``: ``id`` is no longer the head of its chain (another
    writer replaced it first). ``head``: the version in force now, to read before trying again."""

    def __init__(self, target: str, head: str, version: int) -> None:
        super().__init__(
            f"supersedes: {target} is no longer the head of its chain; the head is {head} (v{version}). "
            "Nothing was stored: read the head (get_node), then supersede it if your note still replaces it",
            head=head,
        )
        self.head = head


#: Why a search by meaning was skipped while the embedding model loads in the background
#: (``adapters/vectors/semantic.py`` raises it; recall answers by BM25 and says so in its notes).
MODEL_LOADING = "the embedding model has not loaded yet"


class Unavailable(EvoMemError):
    code = "unavailable"


class Forbidden(EvoMemError):
    """The caller's role or namespaces do not allow this call (team gateway, ``evomem.app.access``)."""

    code = "forbidden"


# Translation table used by gRPC servicers and clients (names of grpc.StatusCode members,
# kept as strings so the domain does not import grpc).
GRPC_STATUS: dict[str, str] = {
    "internal": "INTERNAL",
    "invalid_argument": "INVALID_ARGUMENT",
    "empty_note": "INVALID_ARGUMENT",
    "note_too_large": "INVALID_ARGUMENT",
    "invalid_text": "INVALID_ARGUMENT",
    "invalid_id": "INVALID_ARGUMENT",
    "not_found": "NOT_FOUND",
    "forgotten": "FAILED_PRECONDITION",
    "purged": "FAILED_PRECONDITION",
    "namespace_mismatch": "FAILED_PRECONDITION",
    "scope_mismatch": "FAILED_PRECONDITION",
    "cycle": "FAILED_PRECONDITION",
    "conflict": "ABORTED",
    "unavailable": "UNAVAILABLE",
    "forbidden": "PERMISSION_DENIED",
}

ERRORS_BY_CODE: dict[str, type[EvoMemError]] = {
    cls.code: cls
    for cls in (
        EvoMemError,
        InvalidArgument,
        EmptyNote,
        NoteTooLarge,
        InvalidText,
        InvalidId,
        NotFound,
        Forgotten,
        Purged,
        NamespaceMismatch,
        ScopeMismatch,
        CycleError,
        Conflict,
        Unavailable,
        Forbidden,
    )
}
