"""EvoMem: agent memory that stores decisions as a history.

Layout (read docs/ARCHITECTURE.md for the why):

- ``evomem.domain``      plain-Python core: nodes, chains, recall resolution, extraction, linking.
- ``evomem.ports``       ``typing.Protocol``s the core needs: store, extractor, linker, job queue and
                         job source, vectors.
- ``evomem.service``     the application service (remember / recall / ...), written against the ports.
- ``evomem.jobs``        the extraction worker's policy (retries, dead letter, outages, sweeper).
- ``evomem.adapters``    implementations of the ports (SQLite, embeddings, Redis, gRPC, an LLM over HTTP).
- ``evomem.entrypoints`` thin translators: the MCP tools, ``evomem-mcp``, ``evomem-service``, the gateway.
- ``evomem.settings``    the one settings object (flags > ``EVOMEM_*`` > defaults); nothing else reads the environment.
- ``evomem.bootstrap``   the one composition root that builds every wiring from the settings.
- ``evomem.commands``, ``evomem.runtime``  what each service command runs; signals, metrics, the config error.
"""

__version__ = "0.3.0"
