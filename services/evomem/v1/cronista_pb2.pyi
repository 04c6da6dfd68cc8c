from evomem.v1 import common_pb2 as _common_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExtractFieldsRequest(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ExtractFieldsResponse(_message.Message):
    __slots__ = ("extraction",)
    EXTRACTION_FIELD_NUMBER: _ClassVar[int]
    extraction: _common_pb2.Extraction
    def __init__(self, extraction: _Optional[_Union[_common_pb2.Extraction, _Mapping]] = ...) -> None: ...
