"""One logging set-up for every process: stderr only (stdout is the MCP stdio channel).

``configure`` puts one handler on the root logger (text, or JSON with a ``severity`` field) and
routes the servers' own loggers through it: uvicorn's (``uvicorn``, ``uvicorn.error``; the
embedded HTTP server passes ``log_config=None``, so ``uvicorn.access`` has no handler and
reaches the root one too) and gunicorn's error log in a gateway worker (the access log stays
gunicorn's, on or off with ``EVOMEM_ACCESS_LOG``). The gunicorn master is configured by ``docker/gunicorn-logging.json``
(``--log-config-json``), which uses the same ``JsonFormatter``.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

#: Fields a log call may pass in ``extra`` that the JSON format writes as fields of their own.
FIELDS = ("service", "node_id", "job", "latency_ms", "tool", "outcome", "ids")
#: Loggers that install handlers of their own; ``configure`` sends them to the root handler.
SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "gunicorn.error")


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with a ``severity`` field (as log collectors expect)."""

    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "severity": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        for key in FIELDS:
            if hasattr(record, key):
                payload[key] = getattr(record, key)
        return json.dumps(payload, ensure_ascii=False, default=str)


def configure(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in SERVER_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
