"""The gateway as it recalled before ``RecallNodes``: one storage call per step.

    gunicorn -k uvicorn_worker.UvicornWorker "bench.gateway_steps:create_app()"

The same app as ``evomem.entrypoints.mcp.gateway:create_app()``, except that its ``MemoryService``
recalls with ``LocalRecall`` over its gRPC ports: search (SearchNodes), nearest (NearestNodes)
and their nodes (GetNodes), heads (GetHeads), the kept nodes (GetNodes) and a chain per result
(GetChain), each a round trip. ``bench/gateway.py --recall-paths`` measures it against the
gateway as it is, in the same run. For benchmarks only.
"""

from __future__ import annotations

from typing import Any


def create_app() -> Any:
    from evomem.app.recall import LocalRecall
    from evomem.bootstrap import services as bootstrap
    from evomem.entrypoints.mcp import gateway

    build = bootstrap.build_gateway

    def build_steps(**kwargs: Any) -> Any:
        service = build(**kwargs)
        service.node_recall = LocalRecall(service.store, service.vectors)
        return service

    bootstrap.build_gateway = build_steps  # type: ignore[assignment]
    return gateway.create_app()
