from meshmq.v1 import journal_pb2 as _journal_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReplicaMessage(_message.Message):
    __slots__ = ("hello", "ack", "failback")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    FAILBACK_FIELD_NUMBER: _ClassVar[int]
    hello: ReplicaHello
    ack: ReplicaAck
    failback: ReplicaFailback
    def __init__(self, hello: _Optional[_Union[ReplicaHello, _Mapping]] = ..., ack: _Optional[_Union[ReplicaAck, _Mapping]] = ..., failback: _Optional[_Union[ReplicaFailback, _Mapping]] = ...) -> None: ...

class ReplicaFailback(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReplicaHello(_message.Message):
    __slots__ = ("node_name", "instance_id", "group_name", "connector")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    instance_id: str
    group_name: str
    connector: str
    def __init__(self, node_name: _Optional[str] = ..., instance_id: _Optional[str] = ..., group_name: _Optional[str] = ..., connector: _Optional[str] = ...) -> None: ...

class ReplicaAck(_message.Message):
    __slots__ = ("sequence",)
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    def __init__(self, sequence: _Optional[int] = ...) -> None: ...

class PrimaryMessage(_message.Message):
    __slots__ = ("welcome", "snapshot", "append", "ping")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    APPEND_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    welcome: PrimaryWelcome
    snapshot: SnapshotChunk
    append: ReplicatedAppend
    ping: ReplicationPing
    def __init__(self, welcome: _Optional[_Union[PrimaryWelcome, _Mapping]] = ..., snapshot: _Optional[_Union[SnapshotChunk, _Mapping]] = ..., append: _Optional[_Union[ReplicatedAppend, _Mapping]] = ..., ping: _Optional[_Union[ReplicationPing, _Mapping]] = ...) -> None: ...

class PrimaryWelcome(_message.Message):
    __slots__ = ("node_id", "node_name", "coordination_id", "copy_id")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    COORDINATION_ID_FIELD_NUMBER: _ClassVar[int]
    COPY_ID_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    coordination_id: str
    copy_id: str
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., coordination_id: _Optional[str] = ..., copy_id: _Optional[str] = ...) -> None: ...

class SnapshotChunk(_message.Message):
    __slots__ = ("data", "last", "epoch")
    DATA_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    last: bool
    epoch: int
    def __init__(self, data: _Optional[bytes] = ..., last: _Optional[bool] = ..., epoch: _Optional[int] = ...) -> None: ...

class ReplicatedAppend(_message.Message):
    __slots__ = ("sequence", "request")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    request: _journal_pb2.AppendRequest
    def __init__(self, sequence: _Optional[int] = ..., request: _Optional[_Union[_journal_pb2.AppendRequest, _Mapping]] = ...) -> None: ...

class ReplicationPing(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
