"""A store's whole content as records, ids kept: what ``evomem-admin export``, ``import`` and
``migrate`` move between stores of either kind (``app/transfer.py`` writes and reads them as JSONL).

Plain data. A node is a ``MemoryNode`` (every field, the chain's links and their provenance, the
purge tombstones); the other records are what a store keeps beside its nodes:

- ``Offer``: a note listed ``candidate_id`` among its possible predecessors (``possible_supersedes``),
  with the linker's reason, confidence and the position it was listed at;
- ``KeyRecord``: an idempotency key (its hash: the key itself is never stored) and the node it
  answers, with the text's hash (None once that note is purged);
- ``ChainChange``: one row of the chain audit (link, unlink, forget, purge);
- ``AuditEntry`` (``domain/audit.py``): one row of the write audit;
- ``VectorRef``: that a node had a vector, and of which model (vectors are derived data: the
  target store embeds the text again; a vector of another model is never compared).
"""

from __future__ import annotations

from dataclasses import dataclass

from evomem.domain.audit import AuditEntry
from evomem.domain.model import MemoryNode


@dataclass(frozen=True, slots=True)
class Offer:
    namespace: str
    candidate_id: str
    node_id: str
    reason: str | None = None
    confidence: float | None = None
    position: int = 0


@dataclass(frozen=True, slots=True)
class KeyRecord:
    namespace: str
    key_hash: str
    node_id: str
    text_hash: str | None
    created_at: int


@dataclass(frozen=True, slots=True)
class ChainChange:
    namespace: str
    at: int
    action: str
    node_id: str
    target_id: str | None = None
    method: str | None = None
    by: str | None = None
    confidence: float | None = None
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class VectorRef:
    namespace: str
    node_id: str
    model: str


#: Every kind of record, in the order a store exports them (nodes first: the others name them).
Record = MemoryNode | Offer | KeyRecord | ChainChange | AuditEntry | VectorRef
