"""EvoMem: agent memory that stores decisions as a history.

Layout (read docs/ARCHITECTURE.md for the why):

- ``evomem.domain``      plain-Python core: nodes, chains, recall resolution, extraction, linking.
- ``evomem.ports``       ``typing.Protocol``s the core needs: store, extractor, linker, job queue.
- ``evomem.service``     the application service (remember / recall / ...), written against the ports.
- ``evomem.adapters``    implementations of the ports (SQLite, in-memory, ...).
- ``evomem.entrypoints`` thin translators: the MCP tools and the ``evomem-mcp`` command.
- ``evomem.bootstrap``   the one composition root that builds a wiring from settings.
"""

__version__ = "0.3.0"
