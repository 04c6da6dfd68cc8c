"""``python -m evomem.entrypoints.cli.worker``: the same as ``evomem-service worker``.

The worker's policy (retries, dead letter, outages, the sweeper) is ``evomem.app.jobs``; the
Redis Streams protocol is ``evomem.adapters.redis_queue``; ``evomem.bootstrap.services.build_worker``
wires them and ``evomem.entrypoints.cli.commands.serve_worker`` runs it until SIGTERM/SIGINT.
"""

from __future__ import annotations

from evomem.entrypoints.cli.commands import run_command


def main() -> int:
    return run_command("worker")


if __name__ == "__main__":  # pragma: no cover - exercised by the tests as a subprocess
    raise SystemExit(main())
