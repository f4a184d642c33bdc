from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class QuorumKey(_message.Message):
    __slots__ = ("namespace", "coordination_id", "instance")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    COORDINATION_ID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    coordination_id: str
    instance: str
    def __init__(self, namespace: _Optional[str] = ..., coordination_id: _Optional[str] = ..., instance: _Optional[str] = ...) -> None: ...

class QuorumState(_message.Message):
    __slots__ = ("coordination_id", "sequence", "holder", "live_connector", "in_sync_replica")
    COORDINATION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    LIVE_CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    IN_SYNC_REPLICA_FIELD_NUMBER: _ClassVar[int]
    coordination_id: str
    sequence: int
    holder: str
    live_connector: str
    in_sync_replica: str
    def __init__(self, coordination_id: _Optional[str] = ..., sequence: _Optional[int] = ..., holder: _Optional[str] = ..., live_connector: _Optional[str] = ..., in_sync_replica: _Optional[str] = ...) -> None: ...

class QuorumActivateRequest(_message.Message):
    __slots__ = ("key", "at_least", "replica_epoch", "connector", "session_ms")
    KEY_FIELD_NUMBER: _ClassVar[int]
    AT_LEAST_FIELD_NUMBER: _ClassVar[int]
    REPLICA_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    SESSION_MS_FIELD_NUMBER: _ClassVar[int]
    key: QuorumKey
    at_least: int
    replica_epoch: int
    connector: str
    session_ms: int
    def __init__(self, key: _Optional[_Union[QuorumKey, _Mapping]] = ..., at_least: _Optional[int] = ..., replica_epoch: _Optional[int] = ..., connector: _Optional[str] = ..., session_ms: _Optional[int] = ...) -> None: ...

class QuorumActivateReply(_message.Message):
    __slots__ = ("granted", "sequence", "lease_id", "refusal")
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    granted: bool
    sequence: int
    lease_id: int
    refusal: str
    def __init__(self, granted: _Optional[bool] = ..., sequence: _Optional[int] = ..., lease_id: _Optional[int] = ..., refusal: _Optional[str] = ...) -> None: ...

class SetInSyncRequest(_message.Message):
    __slots__ = ("key", "replica_instance")
    KEY_FIELD_NUMBER: _ClassVar[int]
    REPLICA_INSTANCE_FIELD_NUMBER: _ClassVar[int]
    key: QuorumKey
    replica_instance: str
    def __init__(self, key: _Optional[_Union[QuorumKey, _Mapping]] = ..., replica_instance: _Optional[str] = ...) -> None: ...

class SetInSyncReply(_message.Message):
    __slots__ = ("done",)
    DONE_FIELD_NUMBER: _ClassVar[int]
    done: bool
    def __init__(self, done: _Optional[bool] = ...) -> None: ...

class KeepAliveRequest(_message.Message):
    __slots__ = ("lease_id",)
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    lease_id: int
    def __init__(self, lease_id: _Optional[int] = ...) -> None: ...

class KeepAliveReply(_message.Message):
    __slots__ = ("ttl",)
    TTL_FIELD_NUMBER: _ClassVar[int]
    ttl: int
    def __init__(self, ttl: _Optional[int] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("lease_id",)
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    lease_id: int
    def __init__(self, lease_id: _Optional[int] = ...) -> None: ...

class ReleaseReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListQuorumsRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class ListQuorumsReply(_message.Message):
    __slots__ = ("quorums",)
    QUORUMS_FIELD_NUMBER: _ClassVar[int]
    quorums: _containers.RepeatedCompositeFieldContainer[QuorumState]
    def __init__(self, quorums: _Optional[_Iterable[_Union[QuorumState, _Mapping]]] = ...) -> None: ...
