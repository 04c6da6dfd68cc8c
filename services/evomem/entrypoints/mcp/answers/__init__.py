"""What the tools answer: a short text an agent reads, and compact structured content.

Every answer is an ``Answer``: ``text`` (the MCP text content) and ``data`` (the structured
content, checked by the client against the tool's published output schema, ``OUTPUT``).

- ``detail="brief"`` (default): the text renders the decisions (id, status, version, scope,
  date, the note, what matched, history lines); the structured content carries the ids and
  versions a program needs to act, and no note text.
- ``detail="full"``: the structured content carries every non-empty field of every node
  (note text included); the text then renders the same lines without the note text.

So a note's text travels once per answer, whichever the detail. Empty fields are dropped.
Note text is cut to ``note_chars`` characters (``truncated: true``; ``get_node(id,
full_text=true)`` pages the whole text), and no answer exceeds ``ANSWER_MAX_BYTES`` of JSON:
a recall that would is answered with shorter notes, then without history, then with fewer hits,
and says so in ``notes``.

Modules: ``core`` (``Answer``, the limits, a node's fields and lines, ``fit``), ``reads``
(recall, get_node), ``premise`` (check), ``writes`` (remember, supersede, unlink, forget, stats) and ``output`` (the
published output schemas). Their public names are importable from here.
"""

from evomem.entrypoints.mcp.answers.core import (
    ANSWER_MAX_BYTES,
    DEFAULT_NOTE_CHARS,
    DETAILS,
    PAGE_CHARS,
    Answer,
    full_node,
    link_fields,
)
from evomem.entrypoints.mcp.answers.output import OUTPUT
from evomem.entrypoints.mcp.answers.premise import check_answer
from evomem.entrypoints.mcp.answers.reads import get_node_answer, page_answer, recall_answer
from evomem.entrypoints.mcp.answers.writes import (
    forget_answer,
    remember_answer,
    review_answer,
    stats_answer,
    supersede_answer,
    unlink_answer,
)

__all__ = [
    "ANSWER_MAX_BYTES",
    "DEFAULT_NOTE_CHARS",
    "DETAILS",
    "OUTPUT",
    "PAGE_CHARS",
    "Answer",
    "check_answer",
    "forget_answer",
    "full_node",
    "get_node_answer",
    "link_fields",
    "page_answer",
    "recall_answer",
    "remember_answer",
    "review_answer",
    "stats_answer",
    "supersede_answer",
    "unlink_answer",
]
