"""Adapters: implementations of the ports in ``evomem.ports``."""
