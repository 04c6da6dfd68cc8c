"""The write audit log's entries and queries <-> protobuf (StorageService.AppendAudit, ListAudit)."""

from __future__ import annotations

from evomem.domain.audit import AuditEntry, AuditQuery
from evomem.v1 import storage_pb2


def entry_to_pb(e: AuditEntry) -> storage_pb2.AuditEntry:
    return storage_pb2.AuditEntry(
        seq=e.seq,
        at_ms=e.at,
        identity=e.identity,
        role=e.role,
        tool=e.tool,
        namespace=e.namespace,
        ids=list(e.ids),
        outcome=e.outcome,
        on_behalf_of=e.on_behalf_of,
        detail=e.detail,
    )


def entry_from_pb(m: storage_pb2.AuditEntry) -> AuditEntry:
    return AuditEntry(
        seq=m.seq,
        at=m.at_ms,
        identity=m.identity,
        role=m.role,
        tool=m.tool,
        namespace=m.namespace if m.HasField("namespace") else None,
        ids=tuple(m.ids),
        outcome=m.outcome,
        on_behalf_of=m.on_behalf_of if m.HasField("on_behalf_of") else None,
        detail=m.detail if m.HasField("detail") else None,
    )


def query_to_pb(q: AuditQuery) -> storage_pb2.ListAuditRequest:
    return storage_pb2.ListAuditRequest(
        namespace=q.namespace, since_ms=q.since_ms, until_ms=q.until_ms, before_seq=q.before_seq, limit=q.limit
    )


def query_from_pb(m: storage_pb2.ListAuditRequest) -> AuditQuery:
    return AuditQuery(
        namespace=m.namespace if m.HasField("namespace") else None,
        since_ms=m.since_ms if m.HasField("since_ms") else None,
        until_ms=m.until_ms if m.HasField("until_ms") else None,
        before_seq=m.before_seq if m.HasField("before_seq") else None,
        limit=m.limit,
    )
