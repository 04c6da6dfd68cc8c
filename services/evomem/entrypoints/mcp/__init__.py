"""entrypoints/mcp"""
