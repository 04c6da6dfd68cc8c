from evomem.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LinkDecisionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LINK_DECISION_KIND_UNSPECIFIED: _ClassVar[LinkDecisionKind]
    LINK_DECISION_KIND_LINK: _ClassVar[LinkDecisionKind]
    LINK_DECISION_KIND_ABSTAIN: _ClassVar[LinkDecisionKind]
    LINK_DECISION_KIND_NONE: _ClassVar[LinkDecisionKind]
LINK_DECISION_KIND_UNSPECIFIED: LinkDecisionKind
LINK_DECISION_KIND_LINK: LinkDecisionKind
LINK_DECISION_KIND_ABSTAIN: LinkDecisionKind
LINK_DECISION_KIND_NONE: LinkDecisionKind

class ProposeLinkRequest(_message.Message):
    __slots__ = ("text", "scope", "candidates", "scope_inferred", "earlier")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_INFERRED_FIELD_NUMBER: _ClassVar[int]
    EARLIER_FIELD_NUMBER: _ClassVar[int]
    text: str
    scope: str
    candidates: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    scope_inferred: bool
    earlier: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    def __init__(self, text: _Optional[str] = ..., scope: _Optional[str] = ..., candidates: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ..., scope_inferred: _Optional[bool] = ..., earlier: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ...) -> None: ...

class LinkProposal(_message.Message):
    __slots__ = ("target_id", "confidence", "method", "evidence", "by")
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    target_id: str
    confidence: float
    method: str
    evidence: _containers.RepeatedScalarFieldContainer[str]
    by: str
    def __init__(self, target_id: _Optional[str] = ..., confidence: _Optional[float] = ..., method: _Optional[str] = ..., evidence: _Optional[_Iterable[str]] = ..., by: _Optional[str] = ...) -> None: ...

class ProposeLinkResponse(_message.Message):
    __slots__ = ("proposal", "linker")
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    LINKER_FIELD_NUMBER: _ClassVar[int]
    proposal: LinkProposal
    linker: str
    def __init__(self, proposal: _Optional[_Union[LinkProposal, _Mapping]] = ..., linker: _Optional[str] = ...) -> None: ...

class LinkCandidate(_message.Message):
    __slots__ = ("node_id", "score")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    score: float
    def __init__(self, node_id: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class DecideLinkResponse(_message.Message):
    __slots__ = ("kind", "proposal", "candidates", "reason", "linker")
    KIND_FIELD_NUMBER: _ClassVar[int]
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    LINKER_FIELD_NUMBER: _ClassVar[int]
    kind: LinkDecisionKind
    proposal: LinkProposal
    candidates: _containers.RepeatedCompositeFieldContainer[LinkCandidate]
    reason: str
    linker: str
    def __init__(self, kind: _Optional[_Union[LinkDecisionKind, str]] = ..., proposal: _Optional[_Union[LinkProposal, _Mapping]] = ..., candidates: _Optional[_Iterable[_Union[LinkCandidate, _Mapping]]] = ..., reason: _Optional[str] = ..., linker: _Optional[str] = ...) -> None: ...
