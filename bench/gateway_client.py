"""Talking to an MCP server over HTTP from the gateway benchmarks: the official client, and a health probe."""

from __future__ import annotations

import urllib.request
from typing import Any


def client(url: str, token: str | None = None) -> Any:
    """The official client, with ``Authorization: Bearer <token>`` when a token is given."""
    from mcp import Client

    if not token:
        return Client(url)
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http))


def healthy(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as r:
        return r.status == 200
