from evomem.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProposeLinkRequest(_message.Message):
    __slots__ = ("text", "scope", "candidates")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    text: str
    scope: str
    candidates: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryNode]
    def __init__(self, text: _Optional[str] = ..., scope: _Optional[str] = ..., candidates: _Optional[_Iterable[_Union[_common_pb2.MemoryNode, _Mapping]]] = ...) -> None: ...

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
