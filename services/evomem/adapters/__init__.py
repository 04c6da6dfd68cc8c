"""Adapters: implementations of the ports in ``evomem.app.ports``."""
