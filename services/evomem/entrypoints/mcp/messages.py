"""One JSON-RPC message as a client sent it (a stdio line, an HTTP body), checked before the SDK
parses it: the same answers on every transport.

- held to the limits every transport applies (``limits``): nested deeper than
  ``limits.MAX_DEPTH`` is an invalid request (-32600, id null), refused before any parser
  recurses into it (the size limit is the transport's: a line or a body is cut off unread);
- decoded as strict UTF-8: a bad byte is answered with a JSON-RPC parse error (-32700) that
  names the offset, and the message is not processed (nothing is stored);
- parsed as JSON: not JSON, or a number no JSON reader takes (thousands of digits), is a parse
  error (-32700, id null);
- validated as a JSON-RPC message: a request of the wrong shape (``params`` an array, no
  method, an ``id`` that is neither a string nor an integer, a batch, ...) is an invalid request
  (-32600) with its id when it has one; a lone surrogate escape (``"\\ud800"``, not Unicode
  text) is invalid params (-32602) with its id;
- a malformed notification or response gets no answer (JSON-RPC forbids one), only a log line.

No message makes ``check_message`` raise: one it did not foresee is an invalid request, logged
under a reference.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from evomem.app import incidents
from evomem.entrypoints.mcp import limits

log = logging.getLogger("evomem.messages")

PARSE_ERROR = limits.PARSE_ERROR  # -32700
INVALID_REQUEST = limits.INVALID_REQUEST  # -32600
INVALID_PARAMS = -32602


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _request_id(obj: Any) -> int | str | None:
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            return rid
    return None


def _is_answerable(obj: Any) -> bool:
    """A request (or something that tried to be one): not a notification, not a response."""
    if not isinstance(obj, dict):
        return True  # an array or a scalar: invalid request, id null
    if "result" in obj or "error" in obj:
        return False
    return "id" in obj or "method" not in obj


def check_message(line: bytes) -> tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]:
    """A line of stdin as (the message to serve, None) or (None, the error to answer; None
    when JSON-RPC allows no answer). Blank lines are (None, None). No line raises: one this
    check did not foresee is an invalid request, logged with a reference."""
    try:
        return _check_message(line)
    except Exception as exc:
        ref = incidents.record("a message could not be checked", repr(line[:200]), exc_info=exc, logger=log)
        return None, error(None, INVALID_REQUEST, f"invalid request: the line could not be read (ref {ref})")


def _not_json(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"parse error: the line is not JSON ({exc.msg} at character {exc.pos})"
    return f"parse error: the line cannot be read as JSON ({str(exc)[:120]})"  # a number of thousands of digits


def _check_message(line: bytes) -> tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]:
    line = line.rstrip(b"\r\n")
    if not line.strip():
        return None, None
    deep = limits.too_deep(line)
    if deep is not None:  # refused before any parser recurses into it
        return None, error(None, INVALID_REQUEST, deep)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        guess = line.decode("utf-8", errors="replace")
        try:
            rid = _request_id(json.loads(guess))
        except ValueError:
            rid = None
        return None, error(
            rid,
            PARSE_ERROR,
            f"[invalid_text] the message is not valid UTF-8 (bad byte at offset {exc.start}); it was not "
            "processed and nothing was stored. Send UTF-8 text.",
        )
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        problem = exc
    else:
        if isinstance(message, types.JSONRPCNotification) and '"id"' in text:
            try:
                bad = limits.bad_id(json.loads(text))  # a request whose id is no id is not a notification
            except ValueError as exc:
                return None, error(None, PARSE_ERROR, _not_json(exc))
            if bad is not None:
                return None, error(None, INVALID_REQUEST, bad)
        return message, None
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return None, error(None, PARSE_ERROR, _not_json(exc))
    rid = _request_id(obj)
    bad = limits.bad_id(obj)
    if bad is not None and _is_answerable(obj):
        return None, error(None, INVALID_REQUEST, bad)
    if _has_surrogate(obj):
        if not _is_answerable(obj):
            log.warning("dropped a notification or response with a lone surrogate escape")
            return None, None
        return None, error(
            rid,
            INVALID_PARAMS if rid is not None else PARSE_ERROR,
            "[invalid_text] the message contains a lone surrogate escape (such as \\ud800): that is not valid "
            "Unicode text; it was not processed and nothing was stored",
        )
    if not _is_answerable(obj):
        log.warning("dropped a malformed notification or response: %s", _first_error(problem))
        return None, None
    return None, error(rid, INVALID_REQUEST, f"invalid request: {_first_error(problem)}")


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ())[1:]) or "message"
    return f"{where}: {first.get('msg', 'invalid')}"


def error(rid: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))
