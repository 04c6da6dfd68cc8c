"""How the vector index stores a vector: int8 scaled per vector, sign bits, or float32.

    scan_blob(unit, "binary")            # what the scan table (vec0) holds: 1 bit a dimension
    item_blob(unit, "int8")              # what vec_items holds for rescoring
    decode_items(blobs, "int8", 384)     # back to unit rows, for exact cosine rescoring

``unit`` is an L2-normalised float32 vector (``VectorIndex._unit``). numpy is imported when a
function runs: a server that never embeds never pays for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def quantize_int8(vector: np.ndarray) -> np.ndarray:
    """A vector as int8, scaled so its largest component is +-127.

    Only the direction matters for cosine, so the scale is not kept: this uses all 8 bits,
    where sqlite-vec's ``vec_quantize_int8(v, 'unit')`` (x * 127) leaves a 384-dim unit vector
    (components around +-0.05) with about 5, enough to flip near-ties.
    """
    import numpy as np

    v = np.asarray(vector, dtype=np.float32)
    peak = float(np.abs(v).max()) if v.size else 0.0
    if peak == 0.0:
        return np.zeros(v.shape, dtype=np.int8)
    return np.clip(np.rint(v * (127.0 / peak)), -127, 127).astype(np.int8)


def scan_blob(unit: np.ndarray, scan: str) -> bytes:
    """``unit`` as the scan table of a ``scan`` index holds it (``binary``: its sign bits, little-endian)."""
    import numpy as np

    if scan == "binary":
        return np.packbits(unit > 0, bitorder="little").tobytes()
    if scan == "int8":
        return quantize_int8(unit).tobytes()
    return unit.astype(np.float32).tobytes()


def item_blob(unit: np.ndarray, rescore: str) -> bytes:
    """``unit`` as ``vec_items`` holds it for rescoring (``rescore``: int8 or float32)."""
    import numpy as np

    return quantize_int8(unit).tobytes() if rescore == "int8" else unit.astype(np.float32).tobytes()


def decode_items(blobs: Sequence[bytes], rescore: str, dim: int) -> np.ndarray:
    """``vec_items`` blobs back to rows of unit vectors (float32), one per blob."""
    import numpy as np

    dtype = np.int8 if rescore == "int8" else np.float32
    mat = np.frombuffer(b"".join(blobs), dtype=dtype).reshape(len(blobs), dim).astype(np.float32)
    return mat / np.clip(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12, None)
