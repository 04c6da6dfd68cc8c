"""EvoMem benchmarks: quality (ODR / VDR, external sets) and speed.

Quality: ``python -m bench.scenarios`` writes the frozen scenario files,
``python -m bench.quality`` runs every memory on them, ``python -m bench.external``
runs the external sets. See bench/README.md.
"""
