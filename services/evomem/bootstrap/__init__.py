"""The composition root: the one place that turns the settings object into a wiring.

Every builder takes one ``Settings`` (``evomem.settings``) and nothing else:

* ``embedded.build_embedded``: one process (SQLite in-process, lite cronista inline, the linker of
  ``auto_supersede``, vectors in the same file); ``embedded.embedded_mcp_server``: its MCP server.
* ``services.build_gateway``: the same ``MemoryService`` over gRPC clients and the Redis queue;
  ``services.gateway_app``: the gateway's ASGI app (what gunicorn serves).
* ``services.build_storage``, ``build_cronista``, ``build_linker``: a ``GrpcService`` each (the
  servicer, its health and the process's resources), which the entrypoint starts and stops.
* ``services.build_worker``: the extraction worker (``evomem.app.jobs``) over the Redis job source.
* ``http``: the gate of both HTTP wirings (tokens, JWTs, rate limits); ``http_front``, the one HTTP
  front of both; ``embedded_http_front``, the embedded server's (the socket bound first).
* ``linkers``, ``vectors``: the parts the wirings share.

Nothing connects to anything at import time; a gRPC server binds only in ``GrpcService.start``.
"""
