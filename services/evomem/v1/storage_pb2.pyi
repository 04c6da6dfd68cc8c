from evomem.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PrepareRememberRequest(_message.Message):
    __slots__ = ("text", "namespace", "node_ids", "candidates", "search_terms", "scope", "scope_inferred", "limit", "vector_limit", "vectors_required", "earlier_depth")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    SEARCH_TERMS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_INFERRED_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    VECTOR_LIMIT_FIELD_NUMBER: _ClassVar[int]
    VECTORS_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    EARLIER_DEPTH_FIELD_NUMBER: _ClassVar[int]
    text: str
    namespace: str
    node_ids: _containers.RepeatedScalarFieldContainer[str]
    candidates: bool
    search_terms: _containers.RepeatedScalarFieldContainer[str]
    scope: str
    scope_inferred: bool
    limit: int
    vector_limit: int
    vectors_required: bool
    earlier_depth: int
    def __init__(self, text: _Optional[str] = ..., namespace: _Optional[str] = ..., node_ids: _Optional[_Iterable[str]] = ..., candidates: _Optional[bool] = ..., search_terms: _Optional[_Iterable[str]] = ..., scope: _Optional[str] = ..., scope_inferred: _Optional[bool] = ..., limit: _Optional[int] = ..., vector_limit: _Optional[int] = ..., vectors_required: _Optional[bool] = ..., earlier_depth: _Optional[int] = ...) -> None: ...

class NearestHit(_message.Message):
    __slots__ = ("node_id", "similarity")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    similarity: float
    def __init__(self, node_id: _Optional[str] = ..., similarity: _Optional[float] = ...) -> None: ...

class PrepareRememberResponse(_message.Message):
    __slots__ = ("nodes", "candidates", "similarities", "earlier", "vector_problem")
    NODES_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    SIMILARITIES_FIELD_NUMBER: _ClassVar[int]
    EARLIER_FIELD_NUMBER: _ClassVar[int]
    VECTOR_PROBLEM_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    candidates: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    similarities: _containers.RepeatedCompositeFieldContainer[NearestHit]
    earlier: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    vector_problem: str
    def __init__(self, nodes: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ..., candidates: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ..., similarities: _Optional[_Iterable[_Union[NearestHit, _Mapping]]] = ..., earlier: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ..., vector_problem: _Optional[str] = ...) -> None: ...

class RememberNoteRequest(_message.Message):
    __slots__ = ("note", "supersedes", "link", "idempotency_key", "dedupe_window_ms", "vectors", "vectors_required", "audit", "if_head")
    NOTE_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    DEDUPE_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    VECTORS_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    AUDIT_FIELD_NUMBER: _ClassVar[int]
    IF_HEAD_FIELD_NUMBER: _ClassVar[int]
    note: _common_pb2.NewNote
    supersedes: str
    link: _common_pb2.LinkProvenance
    idempotency_key: str
    dedupe_window_ms: int
    vectors: bool
    vectors_required: bool
    audit: AuditEntry
    if_head: bool
    def __init__(self, note: _Optional[_Union[_common_pb2.NewNote, _Mapping]] = ..., supersedes: _Optional[str] = ..., link: _Optional[_Union[_common_pb2.LinkProvenance, _Mapping]] = ..., idempotency_key: _Optional[str] = ..., dedupe_window_ms: _Optional[int] = ..., vectors: _Optional[bool] = ..., vectors_required: _Optional[bool] = ..., audit: _Optional[_Union[AuditEntry, _Mapping]] = ..., if_head: _Optional[bool] = ...) -> None: ...

class RememberNoteResponse(_message.Message):
    __slots__ = ("node", "outcome", "vector_problem", "head_was_forgotten")
    NODE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    VECTOR_PROBLEM_FIELD_NUMBER: _ClassVar[int]
    HEAD_WAS_FORGOTTEN_FIELD_NUMBER: _ClassVar[int]
    node: _common_pb2.MemoryNode
    outcome: str
    vector_problem: str
    head_was_forgotten: bool
    def __init__(self, node: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ..., outcome: _Optional[str] = ..., vector_problem: _Optional[str] = ..., head_was_forgotten: _Optional[bool] = ...) -> None: ...

class LinkNodesRequest(_message.Message):
    __slots__ = ("node_id", "supersedes", "link")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    supersedes: str
    link: _common_pb2.LinkProvenance
    def __init__(self, node_id: _Optional[str] = ..., supersedes: _Optional[str] = ..., link: _Optional[_Union[_common_pb2.LinkProvenance, _Mapping]] = ...) -> None: ...

class LinkNodesResponse(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: _common_pb2.MemoryNode
    def __init__(self, node: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ...) -> None: ...

class UnlinkNodeRequest(_message.Message):
    __slots__ = ("node_id", "by")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    by: str
    def __init__(self, node_id: _Optional[str] = ..., by: _Optional[str] = ...) -> None: ...

class UnlinkNodeResponse(_message.Message):
    __slots__ = ("node", "restored")
    NODE_FIELD_NUMBER: _ClassVar[int]
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    node: _common_pb2.MemoryNode
    restored: _common_pb2.MemoryNode
    def __init__(self, node: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ..., restored: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ...) -> None: ...

class ReviewNodeRequest(_message.Message):
    __slots__ = ("node_id", "by")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    by: str
    def __init__(self, node_id: _Optional[str] = ..., by: _Optional[str] = ...) -> None: ...

class ReviewNodeResponse(_message.Message):
    __slots__ = ("node", "changed")
    NODE_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    node: _common_pb2.MemoryNode
    changed: bool
    def __init__(self, node: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ..., changed: _Optional[bool] = ...) -> None: ...

class GetNodeRequest(_message.Message):
    __slots__ = ("node_id",)
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    def __init__(self, node_id: _Optional[str] = ...) -> None: ...

class GetNodeResponse(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: _common_pb2.MemoryNode
    def __init__(self, node: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ...) -> None: ...

class GetHeadsRequest(_message.Message):
    __slots__ = ("chain_roots",)
    CHAIN_ROOTS_FIELD_NUMBER: _ClassVar[int]
    chain_roots: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, chain_roots: _Optional[_Iterable[str]] = ...) -> None: ...

class GetHeadsResponse(_message.Message):
    __slots__ = ("heads",)
    HEADS_FIELD_NUMBER: _ClassVar[int]
    heads: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    def __init__(self, heads: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ...) -> None: ...

class GetChainRequest(_message.Message):
    __slots__ = ("node_id", "depth")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    depth: int
    def __init__(self, node_id: _Optional[str] = ..., depth: _Optional[int] = ...) -> None: ...

class GetChainResponse(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    def __init__(self, nodes: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ...) -> None: ...

class ListRecentHeadsRequest(_message.Message):
    __slots__ = ("namespace", "scope", "tags", "limit", "before", "history_depth")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_DEPTH_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    scope: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    before: str
    history_depth: int
    def __init__(self, namespace: _Optional[str] = ..., scope: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ..., before: _Optional[str] = ..., history_depth: _Optional[int] = ...) -> None: ...

class HeadHistory(_message.Message):
    __slots__ = ("head_id", "versions")
    HEAD_ID_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    head_id: str
    versions: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    def __init__(self, head_id: _Optional[str] = ..., versions: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ...) -> None: ...

class ListRecentHeadsResponse(_message.Message):
    __slots__ = ("heads", "more", "histories")
    HEADS_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    HISTORIES_FIELD_NUMBER: _ClassVar[int]
    heads: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    more: str
    histories: _containers.RepeatedCompositeFieldContainer[HeadHistory]
    def __init__(self, heads: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ..., more: _Optional[str] = ..., histories: _Optional[_Iterable[_Union[HeadHistory, _Mapping]]] = ...) -> None: ...

class ListDependentsRequest(_message.Message):
    __slots__ = ("node_id", "limit")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    limit: int
    def __init__(self, node_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListDependentsResponse(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    def __init__(self, nodes: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ...) -> None: ...

class ForgetNodeRequest(_message.Message):
    __slots__ = ("node_id", "purge")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PURGE_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    purge: bool
    def __init__(self, node_id: _Optional[str] = ..., purge: _Optional[bool] = ...) -> None: ...

class ForgetNodeResponse(_message.Message):
    __slots__ = ("node", "changed")
    NODE_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    node: _common_pb2.MemoryNode
    changed: bool
    def __init__(self, node: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ..., changed: _Optional[bool] = ...) -> None: ...

class SetExtractionRequest(_message.Message):
    __slots__ = ("node_id", "extraction", "state", "error")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    extraction: _common_pb2.Extraction
    state: str
    error: str
    def __init__(self, node_id: _Optional[str] = ..., extraction: _Optional[_Union[_common_pb2.Extraction, _Mapping]] = ..., state: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class SetExtractionResponse(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: _common_pb2.MemoryNode
    def __init__(self, node: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ...) -> None: ...

class ListPendingExtractionsRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListPendingExtractionsResponse(_message.Message):
    __slots__ = ("node_ids",)
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    node_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetStatsRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class GetStatsResponse(_message.Message):
    __slots__ = ("by_status", "purged", "chains", "extraction", "namespaces", "db_bytes", "schema_version", "purges_file_pending", "last_file_erased_at")
    class ByStatusEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class ExtractionEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class NamespacesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    BY_STATUS_FIELD_NUMBER: _ClassVar[int]
    PURGED_FIELD_NUMBER: _ClassVar[int]
    CHAINS_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    DB_BYTES_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    PURGES_FILE_PENDING_FIELD_NUMBER: _ClassVar[int]
    LAST_FILE_ERASED_AT_FIELD_NUMBER: _ClassVar[int]
    by_status: _containers.ScalarMap[str, int]
    purged: int
    chains: int
    extraction: _containers.ScalarMap[str, int]
    namespaces: _containers.ScalarMap[str, int]
    db_bytes: int
    schema_version: int
    purges_file_pending: int
    last_file_erased_at: int
    def __init__(self, by_status: _Optional[_Mapping[str, int]] = ..., purged: _Optional[int] = ..., chains: _Optional[int] = ..., extraction: _Optional[_Mapping[str, int]] = ..., namespaces: _Optional[_Mapping[str, int]] = ..., db_bytes: _Optional[int] = ..., schema_version: _Optional[int] = ..., purges_file_pending: _Optional[int] = ..., last_file_erased_at: _Optional[int] = ...) -> None: ...

class RecallNodesRequest(_message.Message):
    __slots__ = ("terms", "text", "namespace", "k", "limit", "vector_limit", "vectors_required", "scope", "tags", "include_history", "history_depth")
    TERMS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    VECTOR_LIMIT_FIELD_NUMBER: _ClassVar[int]
    VECTORS_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_HISTORY_FIELD_NUMBER: _ClassVar[int]
    HISTORY_DEPTH_FIELD_NUMBER: _ClassVar[int]
    terms: _containers.RepeatedScalarFieldContainer[str]
    text: str
    namespace: str
    k: int
    limit: int
    vector_limit: int
    vectors_required: bool
    scope: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    include_history: bool
    history_depth: int
    def __init__(self, terms: _Optional[_Iterable[str]] = ..., text: _Optional[str] = ..., namespace: _Optional[str] = ..., k: _Optional[int] = ..., limit: _Optional[int] = ..., vector_limit: _Optional[int] = ..., vectors_required: _Optional[bool] = ..., scope: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., include_history: _Optional[bool] = ..., history_depth: _Optional[int] = ...) -> None: ...

class RecallMatch(_message.Message):
    __slots__ = ("node_id", "version", "score", "is_head", "fields", "terms", "via")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    IS_HEAD_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    VIA_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    version: int
    score: float
    is_head: bool
    fields: _containers.RepeatedScalarFieldContainer[str]
    terms: _containers.RepeatedScalarFieldContainer[str]
    via: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node_id: _Optional[str] = ..., version: _Optional[int] = ..., score: _Optional[float] = ..., is_head: _Optional[bool] = ..., fields: _Optional[_Iterable[str]] = ..., terms: _Optional[_Iterable[str]] = ..., via: _Optional[_Iterable[str]] = ...) -> None: ...

class RecalledChain(_message.Message):
    __slots__ = ("head", "score", "matches", "scope_match", "history", "maybe_replaced_by")
    HEAD_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_MATCH_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    MAYBE_REPLACED_BY_FIELD_NUMBER: _ClassVar[int]
    head: _common_pb2.MemoryNode
    score: float
    matches: _containers.RepeatedCompositeFieldContainer[RecallMatch]
    scope_match: str
    history: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    maybe_replaced_by: _containers.RepeatedCompositeFieldContainer[PossibleSuccessor]
    def __init__(self, head: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ..., score: _Optional[float] = ..., matches: _Optional[_Iterable[_Union[RecallMatch, _Mapping]]] = ..., scope_match: _Optional[str] = ..., history: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ..., maybe_replaced_by: _Optional[_Iterable[_Union[PossibleSuccessor, _Mapping]]] = ...) -> None: ...

class PossibleSuccessor(_message.Message):
    __slots__ = ("node", "reason", "result", "position", "confidence")
    NODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    node: _common_pb2.MemoryNode
    reason: str
    result: int
    position: int
    confidence: float
    def __init__(self, node: _Optional[_Union[_common_pb2.MemoryNode, _Mapping]] = ..., reason: _Optional[str] = ..., result: _Optional[int] = ..., position: _Optional[int] = ..., confidence: _Optional[float] = ...) -> None: ...

class RecallNodesResponse(_message.Message):
    __slots__ = ("results", "hidden_forgotten", "vector_problem")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FORGOTTEN_FIELD_NUMBER: _ClassVar[int]
    VECTOR_PROBLEM_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[RecalledChain]
    hidden_forgotten: int
    vector_problem: str
    def __init__(self, results: _Optional[_Iterable[_Union[RecalledChain, _Mapping]]] = ..., hidden_forgotten: _Optional[int] = ..., vector_problem: _Optional[str] = ...) -> None: ...

class AuditEntry(_message.Message):
    __slots__ = ("seq", "at_ms", "identity", "role", "tool", "namespace", "ids", "outcome", "on_behalf_of", "detail")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    ON_BEHALF_OF_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    seq: int
    at_ms: int
    identity: str
    role: str
    tool: str
    namespace: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    outcome: str
    on_behalf_of: str
    detail: str
    def __init__(self, seq: _Optional[int] = ..., at_ms: _Optional[int] = ..., identity: _Optional[str] = ..., role: _Optional[str] = ..., tool: _Optional[str] = ..., namespace: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., outcome: _Optional[str] = ..., on_behalf_of: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class AppendAuditRequest(_message.Message):
    __slots__ = ("entry",)
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    entry: AuditEntry
    def __init__(self, entry: _Optional[_Union[AuditEntry, _Mapping]] = ...) -> None: ...

class AppendAuditResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListAuditRequest(_message.Message):
    __slots__ = ("namespace", "since_ms", "until_ms", "before_seq", "limit")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    UNTIL_MS_FIELD_NUMBER: _ClassVar[int]
    BEFORE_SEQ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    since_ms: int
    until_ms: int
    before_seq: int
    limit: int
    def __init__(self, namespace: _Optional[str] = ..., since_ms: _Optional[int] = ..., until_ms: _Optional[int] = ..., before_seq: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ListAuditResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[AuditEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[AuditEntry, _Mapping]]] = ...) -> None: ...
