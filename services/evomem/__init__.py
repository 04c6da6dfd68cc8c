"""EvoMem: agent memory that stores decisions as a history.

The layers, inner first (docs/ARCHITECTURE.md for the why). An inner layer never imports an
outer one; tests/test_layers.py holds the rule.

- ``evomem.domain``       plain Python: nodes, chains, recall resolution, the lite cronista, the linkers.
- ``evomem.app``          the application: the ports (``app.ports``), remember / recall / ... (``app.memory``),
                          who may do what (``app.access``), the extraction worker's policy (``app.jobs``).
- ``evomem.adapters``     outbound: SQLite, vectors, model files and runtimes, Redis, the LLM, gRPC clients.
- ``evomem.entrypoints``  inbound, thin: the MCP tools and transports, the gRPC servicers, the commands.
- ``evomem.security``     tokens, JWTs, rate limits, the HTTP gate, gRPC peer authentication.
- ``evomem.ops``          process plumbing: logging, signals, the metrics registry.
- ``evomem.settings``     the one settings object (flags > ``EVOMEM_*`` > defaults); nothing else reads the environment.
- ``evomem.bootstrap``    the composition root: every wiring, built from one settings object.
"""

__version__ = "0.3.0"
