from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LinkProvenance(_message.Message):
    __slots__ = ("method", "confidence", "by", "evidence", "requested_id", "created_at")
    METHOD_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    method: str
    confidence: float
    by: str
    evidence: _containers.RepeatedScalarFieldContainer[str]
    requested_id: str
    created_at: int
    def __init__(self, method: _Optional[str] = ..., confidence: _Optional[float] = ..., by: _Optional[str] = ..., evidence: _Optional[_Iterable[str]] = ..., requested_id: _Optional[str] = ..., created_at: _Optional[int] = ...) -> None: ...

class Extraction(_message.Message):
    __slots__ = ("trigger", "change", "alternatives_tried", "consequences", "summary", "extractor")
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    ALTERNATIVES_TRIED_FIELD_NUMBER: _ClassVar[int]
    CONSEQUENCES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    EXTRACTOR_FIELD_NUMBER: _ClassVar[int]
    trigger: str
    change: str
    alternatives_tried: str
    consequences: str
    summary: str
    extractor: str
    def __init__(self, trigger: _Optional[str] = ..., change: _Optional[str] = ..., alternatives_tried: _Optional[str] = ..., consequences: _Optional[str] = ..., summary: _Optional[str] = ..., extractor: _Optional[str] = ...) -> None: ...

class ReviewFlag(_message.Message):
    __slots__ = ("replaced", "replaced_by", "via", "flagged_at")
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    REPLACED_BY_FIELD_NUMBER: _ClassVar[int]
    VIA_FIELD_NUMBER: _ClassVar[int]
    FLAGGED_AT_FIELD_NUMBER: _ClassVar[int]
    replaced: _containers.RepeatedScalarFieldContainer[str]
    replaced_by: _containers.RepeatedScalarFieldContainer[str]
    via: _containers.RepeatedScalarFieldContainer[str]
    flagged_at: int
    def __init__(self, replaced: _Optional[_Iterable[str]] = ..., replaced_by: _Optional[_Iterable[str]] = ..., via: _Optional[_Iterable[str]] = ..., flagged_at: _Optional[int] = ...) -> None: ...

class IdList(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ...) -> None: ...

class MemoryNode(_message.Message):
    __slots__ = ("id", "raw_text", "namespace", "scope", "trigger", "change", "alternatives_tried", "consequences", "summary", "tags", "session", "author", "created_at", "relations", "status", "supersedes", "superseded_by", "chain_root", "version", "link", "extraction_state", "extractor", "extraction_error", "extraction_attempts", "forgotten_at", "purged_at", "scope_source", "scope_evidence", "possible_supersedes", "file_erased_at", "needs_review")
    class RelationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: IdList
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[IdList, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    RAW_TEXT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    ALTERNATIVES_TRIED_FIELD_NUMBER: _ClassVar[int]
    CONSEQUENCES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    CHAIN_ROOT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_STATE_FIELD_NUMBER: _ClassVar[int]
    EXTRACTOR_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_ERROR_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    FORGOTTEN_AT_FIELD_NUMBER: _ClassVar[int]
    PURGED_AT_FIELD_NUMBER: _ClassVar[int]
    SCOPE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    POSSIBLE_SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    FILE_ERASED_AT_FIELD_NUMBER: _ClassVar[int]
    NEEDS_REVIEW_FIELD_NUMBER: _ClassVar[int]
    id: str
    raw_text: str
    namespace: str
    scope: str
    trigger: str
    change: str
    alternatives_tried: str
    consequences: str
    summary: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    session: str
    author: str
    created_at: int
    relations: _containers.MessageMap[str, IdList]
    status: str
    supersedes: str
    superseded_by: str
    chain_root: str
    version: int
    link: LinkProvenance
    extraction_state: str
    extractor: str
    extraction_error: str
    extraction_attempts: int
    forgotten_at: int
    purged_at: int
    scope_source: str
    scope_evidence: str
    possible_supersedes: _containers.RepeatedScalarFieldContainer[str]
    file_erased_at: int
    needs_review: ReviewFlag
    def __init__(self, id: _Optional[str] = ..., raw_text: _Optional[str] = ..., namespace: _Optional[str] = ..., scope: _Optional[str] = ..., trigger: _Optional[str] = ..., change: _Optional[str] = ..., alternatives_tried: _Optional[str] = ..., consequences: _Optional[str] = ..., summary: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., session: _Optional[str] = ..., author: _Optional[str] = ..., created_at: _Optional[int] = ..., relations: _Optional[_Mapping[str, IdList]] = ..., status: _Optional[str] = ..., supersedes: _Optional[str] = ..., superseded_by: _Optional[str] = ..., chain_root: _Optional[str] = ..., version: _Optional[int] = ..., link: _Optional[_Union[LinkProvenance, _Mapping]] = ..., extraction_state: _Optional[str] = ..., extractor: _Optional[str] = ..., extraction_error: _Optional[str] = ..., extraction_attempts: _Optional[int] = ..., forgotten_at: _Optional[int] = ..., purged_at: _Optional[int] = ..., scope_source: _Optional[str] = ..., scope_evidence: _Optional[str] = ..., possible_supersedes: _Optional[_Iterable[str]] = ..., file_erased_at: _Optional[int] = ..., needs_review: _Optional[_Union[ReviewFlag, _Mapping]] = ...) -> None: ...

class NewNote(_message.Message):
    __slots__ = ("raw_text", "namespace", "scope", "tags", "session", "author", "relations", "extraction", "scope_source", "scope_evidence", "possible_supersedes", "possible_supersedes_why", "possible_supersedes_confidence")
    class RelationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: IdList
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[IdList, _Mapping]] = ...) -> None: ...
    RAW_TEXT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_FIELD_NUMBER: _ClassVar[int]
    SCOPE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    POSSIBLE_SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    POSSIBLE_SUPERSEDES_WHY_FIELD_NUMBER: _ClassVar[int]
    POSSIBLE_SUPERSEDES_CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    raw_text: str
    namespace: str
    scope: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    session: str
    author: str
    relations: _containers.MessageMap[str, IdList]
    extraction: Extraction
    scope_source: str
    scope_evidence: str
    possible_supersedes: _containers.RepeatedScalarFieldContainer[str]
    possible_supersedes_why: _containers.RepeatedScalarFieldContainer[str]
    possible_supersedes_confidence: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, raw_text: _Optional[str] = ..., namespace: _Optional[str] = ..., scope: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., session: _Optional[str] = ..., author: _Optional[str] = ..., relations: _Optional[_Mapping[str, IdList]] = ..., extraction: _Optional[_Union[Extraction, _Mapping]] = ..., scope_source: _Optional[str] = ..., scope_evidence: _Optional[str] = ..., possible_supersedes: _Optional[_Iterable[str]] = ..., possible_supersedes_why: _Optional[_Iterable[str]] = ..., possible_supersedes_confidence: _Optional[_Iterable[float]] = ...) -> None: ...

class SearchHit(_message.Message):
    __slots__ = ("node_id", "chain_root", "score")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CHAIN_ROOT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    chain_root: str
    score: float
    def __init__(self, node_id: _Optional[str] = ..., chain_root: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...
