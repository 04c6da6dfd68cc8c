"""What a caller reads of a failure, and what an operator reads.

A caller (an agent over MCP, the gateway over gRPC, a probe) gets an error that names what it
may act on: the code, a sentence, and for a failure on the server's side (``internal``,
``unavailable``) a short reference, ``(ref 1a2b3c4d)``. The operator finds the whole story in the
log under that reference: the peer's address, the status, the exception and its stack. No text
a caller reads names a host, a port, a URL or a file path (``leaks``): one that would is
replaced by the code's plain sentence, and logged.
"""

from __future__ import annotations

import logging
import re
import secrets

from evomem.domain.errors import EvoMemError

log = logging.getLogger("evomem.incidents")

#: Codes of failures on the server's side: always logged, always answered with a reference.
SERVER_SIDE = frozenset({"internal", "unavailable"})
#: What a caller reads of a code whose own message would leak.
PLAIN = {
    "internal": "the server failed on this call; it is safe to retry",
    "unavailable": "a part of the server is unavailable; retry in a few seconds",
}
REF = re.compile(r"\(ref [0-9a-f]{8}\)")
LEAK = re.compile(
    r"""
      \b\d{1,3}(?:\.\d{1,3}){3}\b                      # an IPv4 address
    | \[[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\](?::\d+)?       # a bracketed IPv6 address
    | \b(?:localhost|[A-Za-z][\w-]*(?:\.[\w-]+)*):\d{2,5}\b   # host:port
    | \b[a-z][a-z0-9+.-]*://                           # a URL (http, redis, unix, file...)
    | (?<![\w.:/])/(?:[\w.@~+-]+/)+[\w.@~+-]*          # an absolute path of two parts or more
    | \b[A-Za-z]:\\                                    # a Windows drive
    | Traceback\ \(most\ recent\ call\ last\)
    | \bFile\ "[^"]*",\ line\ \d+
    """,
    re.VERBOSE,
)


def reference() -> str:
    """A new reference: 8 hex digits, unique enough to find one call in a day of logs."""
    return secrets.token_hex(4)


def record(
    summary: str,
    detail: str = "",
    *,
    exc_info: BaseException | None = None,
    logger: logging.Logger | None = None,
    level: int = logging.ERROR,
) -> str:
    """Log ``summary`` and its ``detail`` (and ``exc_info``'s stack) under a new reference; return it."""
    ref = reference()
    (logger or log).log(level, "%s [ref %s]%s", summary, ref, f": {detail}" if detail else "", exc_info=exc_info)
    return ref


def leaks(text: str) -> bool:
    """Whether ``text`` names a host, a port, a URL, a file path or a stack."""
    return LEAK.search(text) is not None


def for_caller(exc: EvoMemError, *, logger: logging.Logger | None = None) -> str:
    """The ``[code] message`` a caller reads of ``exc``. A caller's own mistake passes as written;
    a failure on the server's side is logged and carries its reference (one that carries it
    already was logged where it arose); a message that would leak is replaced by its code's
    plain sentence, and logged."""
    text = str(exc)
    leaky = leaks(exc.message)
    if not leaky and (exc.code not in SERVER_SIDE or REF.search(exc.message)):
        return text
    ref = record(f"a call failed with [{exc.code}]", exc.message, logger=logger)
    message = PLAIN.get(exc.code, "the call failed; the server's log has the reason") if leaky else exc.message
    return f"[{exc.code}] {message} (ref {ref})"


def unexpected(what: str, exc: BaseException, *, logger: logging.Logger | None = None) -> str:
    """The ``[internal] ...`` text a caller reads of an exception nobody expected; the exception
    and its stack are logged under the reference it carries."""
    ref = record(f"{what} failed unexpectedly", f"{type(exc).__name__}: {exc}", exc_info=exc, logger=logger)
    return f"[internal] {PLAIN['internal']} (ref {ref})"
