"""The free-port helper that every test and benchmark server starts on."""

from __future__ import annotations

import socket

from procutil import free_ports


def test_ports_asked_together_are_distinct_and_free() -> None:
    """One server given three ports (Triton: gRPC, HTTP, metrics) must never get one twice: the
    kernel can hand a just-released port out again, which failed a CI run."""
    for _ in range(200):
        ports = free_ports(3)
        assert len(set(ports)) == 3
    with socket.socket() as a, socket.socket() as b:
        first, second = free_ports(2)
        a.bind(("127.0.0.1", first))
        b.bind(("127.0.0.1", second))
