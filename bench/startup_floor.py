"""The start-up floor: a minimal MCP server with one no-op tool, on the same MCP SDK as EvoMem.

    python -m bench.startup_floor        # speaks MCP on stdio, as evomem-mcp does

``bench/startup.py`` spawns it with the same client as ``evomem-mcp`` and times the first tool
result of each: what EvoMem adds to a client's start is the difference.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server: MCPServer = MCPServer("floor")


@server.tool()
def noop() -> str:
    """Do nothing."""
    return "ok"


if __name__ == "__main__":
    server.run("stdio")
