"""What a message may be before any parser looks at it: the same limits on every transport.

- **Size**: a message (a stdio line, an HTTP body) is at most ``message_limit(max_note_bytes)``
  bytes: 4 MiB, or more when the note limit needs it (JSON escaping can grow a note: ``\\uXXXX`` is
  6 bytes per character), so a note over the note limit still reaches ``remember``, which answers
  ``[note_too_large]`` itself. Over it: a JSON-RPC error, and the process goes on.
- **Depth**: JSON nested more than ``MAX_DEPTH`` levels (arrays and objects) is refused before it
  is parsed. No tool's arguments come near it (the deepest, ``relations``, is 3 levels inside the
  request), and a parser given ``[[[[...]]]]`` a few hundred levels deep runs out of stack.
- **Ids**: a request's ``id`` is a string or an integer (MCP: never null, never a fraction); any
  other value makes it an invalid request, answered with id null, never a notification dropped.

Answers use JSON-RPC's codes: -32700 (not JSON, not UTF-8), -32600 (an invalid request: too big,
too deep, a bad id).
"""

from __future__ import annotations

import json
from typing import Any

#: The SDK's default request body limit, and this server's least message limit.
DEFAULT_MESSAGE_LIMIT = 4 * 1024 * 1024
#: The deepest JSON accepted, arrays and objects counted.
MAX_DEPTH = 64

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def message_limit(max_note_bytes: int | None) -> int:
    """The most bytes one message may have, for notes of up to ``max_note_bytes``."""
    if max_note_bytes is None:
        return DEFAULT_MESSAGE_LIMIT
    return max(DEFAULT_MESSAGE_LIMIT, 16 * max_note_bytes + 1024 * 1024)


def too_large(limit: int) -> str:
    return (
        f"[note_too_large] the message is over {limit:,} bytes, the most this server reads; notes are limited "
        "by --max-note-bytes. Store a summary, or split it."
    )


def nesting_depth(text: str | bytes, stop_at: int = MAX_DEPTH + 1) -> int:
    """How deep arrays and objects nest in the JSON ``text`` (strings skipped), counting up to
    ``stop_at`` at most: linear, no recursion, whatever the input."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest >= stop_at:
                    return deepest
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest


def too_deep(text: str | bytes) -> str | None:
    """Why ``text`` is refused for its depth, or None."""
    if nesting_depth(text) > MAX_DEPTH:
        return f"invalid request: the message nests more than {MAX_DEPTH} levels of arrays and objects"
    return None


def bad_id(obj: Any) -> str | None:
    """Why a parsed message's ``id`` makes it an invalid request, or None (MCP: a string or an
    integer; a message without one is a notification)."""
    if isinstance(obj, dict) and "id" in obj:
        rid = obj["id"]
        if isinstance(rid, bool) or not isinstance(rid, str | int):
            return f"invalid request: id must be a string or an integer, got {json.dumps(rid)[:40]}"
    return None
