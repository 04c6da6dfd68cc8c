"""Small helpers shared by the test fixtures that run real servers (one implementation, in
``bench.procs``, for the tests and the benchmarks)."""

from __future__ import annotations

from bench.procs import free_port, free_ports, stop_process

__all__ = ["free_port", "free_ports", "stop_process"]
