"""What the MCP tools tell operators: one log line and two metrics per tool call, and /metrics.

    logged = telemetry.instrument("recall", body)            # server.published: each tool's body, once
    page, content_type = telemetry.render_metrics(service)   # the /metrics page

Per call: one INFO line on the ``evomem.calls`` logger with the tool, the outcome (``ok`` or the
error's stable code, e.g. ``not_found``), the latency and the node ids involved, never the
note text nor any other argument (the JSON log format carries them as fields: ``tool``,
``outcome``, ``latency_ms``, ``ids``); ``evomem_tool_calls_total{tool,outcome}`` and
``evomem_tool_latency_seconds{tool}`` in the process's Prometheus registry
(``runtime.metric``), counted only where ``enable_metrics()`` was called (the HTTP servers
that serve /metrics; over stdio nothing would read them, and importing prometheus_client
would only slow the first call).

``render_metrics`` adds, read at scrape time from the service: notes by status
(``evomem_notes``), the extraction backlog (``evomem_extraction_backlog``: notes whose
extraction is pending) and extraction states, and the embedding model's load state
(``evomem_embedding_model_state``).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

log = logging.getLogger("evomem.calls")

#: Set once the first tool call has been answered (``evomem-mcp`` starts loading the model then).
FIRST_CALL = threading.Event()

_CODE = re.compile(r"\[([a-z_]+)\]")
_ID_KEYS = ("id", "node_id", "supersedes", "restored_head", "current_head", "replaced_by")
_METRICS_ON = False
MODEL_STATES = ("off", "not_loaded", "loading", "loaded", "failed", "remote")
#: What /metrics adds when the store did not answer in time.
STORE_DOWN = (
    b"# HELP evomem_store_up 1 when the last read of the store's counts succeeded\n"
    b"# TYPE evomem_store_up gauge\nevomem_store_up 0.0\n"
)


def enable_metrics() -> None:
    """Count tool calls in the Prometheus registry from now on (a server that serves /metrics)."""
    global _METRICS_ON
    _METRICS_ON = True
    _metrics()  # registered now: /metrics lists them (at zero) before the first call


def _metrics() -> tuple[Any, Any]:
    from evomem.ops.runtime import metric

    calls = metric("counter", "evomem_tool_calls", "MCP tool calls by tool and outcome", ("tool", "outcome"))
    latency = metric("histogram", "evomem_tool_latency_seconds", "MCP tool call latency", ("tool",))
    return calls, latency


def outcome_of(exc: BaseException) -> str:
    """The stable code an error carries (``[not_found] ...`` -> ``not_found``), else ``internal``."""
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code:
        return code
    match = _CODE.search(str(exc))
    return match.group(1) if match else "internal"


def _fields(obj: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        yield from obj.items()
    else:
        for key in (*_ID_KEYS, "node", "results", "structured_content"):
            value = getattr(obj, key, None)
            if value is not None:
                yield key, value


def ids_of(arguments: dict[str, Any], result: Any = None, limit: int = 20) -> list[str]:
    """The node ids a call named or returned (arguments ``node_id``/``supersedes``; the result's
    ids, its node's and its hits'), in order, without repeats. Nothing else is read."""
    found: list[str] = []

    def add(value: Any) -> None:
        if isinstance(value, str) and value and value not in found and len(found) < limit:
            found.append(value)

    for key in ("node_id", "supersedes"):
        add(arguments.get(key))

    def walk(obj: Any, depth: int) -> None:
        if obj is None or depth > 3:
            return
        for key, value in _fields(obj):
            if key in _ID_KEYS:
                add(value)
            elif key in ("node", "structured_content"):
                walk(value, depth + 1)
            elif key == "results" and isinstance(value, list | tuple):
                for hit in value[:limit]:
                    walk(hit, depth + 1)

    walk(result, 0)
    return found


def record(tool: str, outcome: str, seconds: float, ids: Iterable[str]) -> None:
    """The call's log line and, where enabled, its metrics."""
    ms = round(seconds * 1000, 3)
    id_list = list(ids)
    log.info(
        "tool %s %s %.1f ms%s",
        tool,
        outcome,
        ms,
        f" ids={','.join(id_list)}" if id_list else "",
        extra={"tool": tool, "outcome": outcome, "latency_ms": ms, "ids": id_list},
    )
    if _METRICS_ON:
        calls, latency = _metrics()
        if calls is not None:
            calls.labels(tool=tool, outcome=outcome).inc()
            latency.labels(tool=tool).observe(seconds)


def instrument(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a tool body) with its call logged and counted. Same signature, same result."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        outcome, result = "ok", None
        try:
            result = fn(*args, **kwargs)
            return result
        except BaseException as exc:
            outcome = outcome_of(exc)
            raise
        finally:
            try:
                record(name, outcome, time.perf_counter() - started, ids_of(kwargs, result))
            finally:
                FIRST_CALL.set()

    return call


# ----------------------------------------------------------------------------- /metrics


def model_state(service: Any) -> str:
    """The embedding model's state as storage reports it: ``off`` (no vectors), ``remote`` (vectors
    served by the storage service), else the embedder's ``not_loaded|loading|loaded|failed``."""
    state = service.storage.model_state()
    return state if state in (*MODEL_STATES,) else "remote"


def _service_families(service: Any) -> list[Any]:
    from prometheus_client.core import GaugeMetricFamily

    families = []
    state = model_state(service)
    model = GaugeMetricFamily(
        "evomem_embedding_model_state", "The embedding model's load state (1 for the current one)", labels=["state"]
    )
    for name in MODEL_STATES:
        model.add_metric([name], 1.0 if name == state else 0.0)
    families.append(model)
    up = GaugeMetricFamily("evomem_store_up", "1 when the last read of the store's counts succeeded")
    try:
        stats = service.stats()
    except Exception as exc:  # the database (or storage) is down: say so, keep the page
        log.warning("metrics: cannot read the store's counts: %s", exc)
        up.add_metric([], 0.0)
        return [*families, up]
    up.add_metric([], 1.0)
    notes = GaugeMetricFamily("evomem_notes", "Notes by status", labels=["status"])
    for status, count in sorted(stats.by_status.items()):
        notes.add_metric([status], float(count))
    notes.add_metric(["purged"], float(stats.purged))
    extraction = GaugeMetricFamily("evomem_extraction", "Notes by extraction state", labels=["state"])
    for name, count in sorted(stats.extraction.items()):
        extraction.add_metric([name], float(count))
    backlog = GaugeMetricFamily("evomem_extraction_backlog", "Notes whose extraction is still pending")
    backlog.add_metric([], float(stats.extraction.get("pending", 0)))
    chains = GaugeMetricFamily("evomem_chains", "Decision chains")
    chains.add_metric([], float(stats.chains))
    size = GaugeMetricFamily("evomem_db_bytes", "Size of the database file")
    size.add_metric([], float(stats.db_bytes))
    return [*families, up, notes, extraction, backlog, chains, size]


class _Collector:
    def __init__(self, service: Any) -> None:
        self.service = service

    def collect(self) -> list[Any]:
        return _service_families(self.service)


def render_metrics(service: Any | None) -> tuple[bytes, str]:
    """The Prometheus text page: the process's registry plus the service's gauges."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

    body = generate_latest(REGISTRY)
    if service is not None:
        scrape = CollectorRegistry(auto_describe=False)
        scrape.register(_Collector(service))
        body += generate_latest(scrape)
    return body, CONTENT_TYPE_LATEST
