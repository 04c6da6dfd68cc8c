"""A namespace's binary vectors in memory, for the vector index's shortlist scan (``Bits``).

    bits = Bits(384, rowids, blobs)        # the namespace's rowids (sorted) and packed bits
    bits.apply(changed, rowids, blobs)     # rowids changed or gone, and the current bits of some
    bits.snapshot().nearest(query, 160)    # the rowids nearest by Hamming distance

``VectorIndex`` (index.py) loads one per namespace the first time it is searched and keeps it in
step with the file through ``vec_log``; a scan XORs and popcounts in numpy, which yields the
same shortlist as a ``vec0`` scan (at the cut-off distance the smaller rowids).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


class Bits:
    """One namespace's binary vectors in memory, for the shortlist scan.

    Column-major: ``words[w, i]`` is the w-th machine word of slot i, so a scan XORs and
    popcounts one contiguous row per word (0.8 ms for 100k vectors; row-major with a sum over
    the short axis was 8 ms). Slots are never rewritten for a live vector: a changed or
    removed rowid is marked dead (``live`` is copied, then replaced) and its bits zeroed, and
    its new bits, if any, go to a fresh slot past ``n``. A scan therefore works on a snapshot
    (the arrays and ``n``) without the lock. ``rowids[:base]`` is sorted and unique, for
    ``searchsorted``; later slots (re-added or moved vectors) are searched directly. Dead
    slots and the unsorted tail are folded back by a rebuild once they grow.

    Memory: ``dim / 8`` bytes of bits, 8 of rowid and 1 of flag per slot, plus up to 1/8 spare:
    57 bytes a vector at 384 dims, ~57 MB (64 MB with the spare) for 1M.
    """

    # A rebuild comes once the spare slots run out, or the tail or the dead slots pass these
    # (or 1/16 and 1/4 of the slots): O(n), but amortised over as many changes.
    SPARE = 256
    TAIL = 1024
    DEAD = 1024

    def __init__(self, dim: int, rowids: np.ndarray, blobs: bytes) -> None:
        import numpy as np

        self.dim = dim
        self.dtype = next(
            t for b, t in ((64, np.uint64), (32, np.uint32), (16, np.uint16), (8, np.uint8)) if dim % b == 0
        )
        self.width = dim // (8 * np.dtype(self.dtype).itemsize)
        self.seen = 0
        self.rebuilds = -1  # the first _rebuild is the load
        self._rebuild(rowids, np.frombuffer(blobs, self.dtype).reshape(len(rowids), self.width).T)

    def _rebuild(self, rowids: np.ndarray, words: np.ndarray) -> None:
        import numpy as np

        m = len(rowids)
        cap = m + max(self.SPARE, m // 8)
        self.rowids = np.zeros(cap, np.int64)
        self.rowids[:m] = rowids
        self.words = np.zeros((self.width, cap), self.dtype)
        self.words[:, :m] = words
        self.live = np.zeros(cap, bool)
        self.live[:m] = True
        self.n = self.base = m
        self.dead = 0
        self.rebuilds += 1

    @property
    def size(self) -> int:
        return self.n - self.dead

    def snapshot(self) -> Bits:
        """A copy that shares the arrays: safe to scan while the original takes changes."""
        snap = object.__new__(Bits)
        snap.__dict__.update(self.__dict__)
        return snap

    def apply(self, changed: Sequence[int], rowids: Sequence[int], blobs: Sequence[bytes]) -> None:
        """The ``changed`` rowids now hold ``blobs`` (``rowids``), or are gone from the namespace."""
        import numpy as np

        gone = np.asarray(sorted(set(changed)), dtype=np.int64)
        slots = []
        if self.base and len(gone):
            pos = np.minimum(np.searchsorted(self.rowids[: self.base], gone), self.base - 1)
            slots.append(pos[self.rowids[pos] == gone])
        if self.n > self.base and len(gone):
            slots.append(self.base + np.flatnonzero(np.isin(self.rowids[self.base : self.n], gone)))
        dead = np.concatenate(slots) if slots else np.zeros(0, np.int64)
        dead = dead[self.live[dead]]
        if len(dead):
            live = self.live.copy()
            live[dead] = False
            self.words[:, dead] = 0  # a purged vector's bits leave memory too
            self.live, self.dead = live, self.dead + len(dead)
        if not rowids:
            new_ids = np.zeros(0, np.int64)
        else:
            order = np.argsort(np.asarray(rowids, dtype=np.int64), kind="stable")
            new_ids = np.asarray(rowids, dtype=np.int64)[order]
        m = len(new_ids)
        new_words = np.frombuffer(b"".join(blobs), self.dtype).reshape(m, self.width)[order].T if m else None
        tail = self.n - self.base
        if (
            self.n + m > len(self.rowids)
            or tail + m > max(self.TAIL, self.n // 16)
            or self.dead > max(self.DEAD, self.n // 4)
        ):
            keep = np.flatnonzero(self.live[: self.n])
            ids = self.rowids[keep]
            words = self.words[:, keep]
            if m:
                ids = np.concatenate([ids, new_ids])
                words = np.concatenate([words, new_words], axis=1)
            by_id = np.argsort(ids, kind="stable")
            self._rebuild(ids[by_id], words[:, by_id])
            return
        if not m:
            return
        lo, hi = self.n, self.n + m
        self.words[:, lo:hi] = new_words
        self.rowids[lo:hi] = new_ids
        self.live[lo:hi] = True
        sorted_after = self.base == self.n and (self.n == 0 or new_ids[0] > self.rowids[self.n - 1])
        self.n = hi
        if sorted_after:
            self.base = hi

    def nearest(self, query: bytes, want: int) -> list[int]:
        """The rowids of the ``want`` live slots nearest ``query`` by Hamming distance; at the
        cut-off distance the smallest rowids, so the answer does not depend on slot order."""
        import numpy as np

        n = self.n
        if n == 0:
            return []
        q = np.frombuffer(query, self.dtype)
        words = self.words
        dist = np.bitwise_count(words[0, :n] ^ q[0]).astype(np.uint16)
        for w in range(1, self.width):
            dist += np.bitwise_count(words[w, :n] ^ q[w])
        over = self.dim + 1
        if self.dead:
            dist[~self.live[:n]] = over
        if want >= n:
            pick = np.flatnonzero(dist < over)
        else:
            # The want-th smallest distance from a histogram (distances are 0..dim), not a sort.
            cut = int(np.searchsorted(np.cumsum(np.bincount(dist, minlength=over + 1)), want))
            if cut >= over:
                pick = np.flatnonzero(dist < over)
            else:
                below = np.flatnonzero(dist < cut)
                ties = np.flatnonzero(dist == cut)
                need = want - len(below)
                if len(ties) > need:
                    ties = ties[np.argsort(self.rowids[ties], kind="stable")[:need]]
                pick = np.concatenate([below, ties])
        return self.rowids[pick].tolist()
