"""Thin entry points: they translate between a protocol and ``MemoryService``."""
