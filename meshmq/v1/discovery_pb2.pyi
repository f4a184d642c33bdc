from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NodeRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_ROLE_UNSPECIFIED: _ClassVar[NodeRole]
    NODE_ROLE_LIVE: _ClassVar[NodeRole]
    NODE_ROLE_BACKUP: _ClassVar[NodeRole]

class NodeEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_EVENT_KIND_UNSPECIFIED: _ClassVar[NodeEventKind]
    NODE_UP: _ClassVar[NodeEventKind]
    NODE_UPDATED: _ClassVar[NodeEventKind]
    NODE_DOWN: _ClassVar[NodeEventKind]
NODE_ROLE_UNSPECIFIED: NodeRole
NODE_ROLE_LIVE: NodeRole
NODE_ROLE_BACKUP: NodeRole
NODE_EVENT_KIND_UNSPECIFIED: NodeEventKind
NODE_UP: NodeEventKind
NODE_UPDATED: NodeEventKind
NODE_DOWN: NodeEventKind

class ClusterNode(_message.Message):
    __slots__ = ("node_id", "cluster_name", "node_name", "connector", "backup_connector", "role", "group_name", "instance_id", "announced_at_ms", "static")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    BACKUP_CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    ANNOUNCED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    STATIC_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    cluster_name: str
    node_name: str
    connector: str
    backup_connector: str
    role: NodeRole
    group_name: str
    instance_id: str
    announced_at_ms: int
    static: bool
    def __init__(self, node_id: _Optional[str] = ..., cluster_name: _Optional[str] = ..., node_name: _Optional[str] = ..., connector: _Optional[str] = ..., backup_connector: _Optional[str] = ..., role: _Optional[_Union[NodeRole, str]] = ..., group_name: _Optional[str] = ..., instance_id: _Optional[str] = ..., announced_at_ms: _Optional[int] = ..., static: _Optional[bool] = ...) -> None: ...

class AnnounceRequest(_message.Message):
    __slots__ = ("join", "keep_alive", "update", "leave")
    class Join(_message.Message):
        __slots__ = ("node", "broadcast_period_ms", "refresh_timeout_ms")
        NODE_FIELD_NUMBER: _ClassVar[int]
        BROADCAST_PERIOD_MS_FIELD_NUMBER: _ClassVar[int]
        REFRESH_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
        node: ClusterNode
        broadcast_period_ms: int
        refresh_timeout_ms: int
        def __init__(self, node: _Optional[_Union[ClusterNode, _Mapping]] = ..., broadcast_period_ms: _Optional[int] = ..., refresh_timeout_ms: _Optional[int] = ...) -> None: ...
    class KeepAlive(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class Update(_message.Message):
        __slots__ = ("node",)
        NODE_FIELD_NUMBER: _ClassVar[int]
        node: ClusterNode
        def __init__(self, node: _Optional[_Union[ClusterNode, _Mapping]] = ...) -> None: ...
    class Leave(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    JOIN_FIELD_NUMBER: _ClassVar[int]
    KEEP_ALIVE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    LEAVE_FIELD_NUMBER: _ClassVar[int]
    join: AnnounceRequest.Join
    keep_alive: AnnounceRequest.KeepAlive
    update: AnnounceRequest.Update
    leave: AnnounceRequest.Leave
    def __init__(self, join: _Optional[_Union[AnnounceRequest.Join, _Mapping]] = ..., keep_alive: _Optional[_Union[AnnounceRequest.KeepAlive, _Mapping]] = ..., update: _Optional[_Union[AnnounceRequest.Update, _Mapping]] = ..., leave: _Optional[_Union[AnnounceRequest.Leave, _Mapping]] = ...) -> None: ...

class AnnounceResponse(_message.Message):
    __slots__ = ("joined", "keep_alive_ack", "updated", "left")
    class Joined(_message.Message):
        __slots__ = ("lease_ttl_ms",)
        LEASE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
        lease_ttl_ms: int
        def __init__(self, lease_ttl_ms: _Optional[int] = ...) -> None: ...
    class KeepAliveAck(_message.Message):
        __slots__ = ("ok", "message")
        OK_FIELD_NUMBER: _ClassVar[int]
        MESSAGE_FIELD_NUMBER: _ClassVar[int]
        ok: bool
        message: str
        def __init__(self, ok: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...
    class Updated(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    class Left(_message.Message):
        __slots__ = ()
        def __init__(self) -> None: ...
    JOINED_FIELD_NUMBER: _ClassVar[int]
    KEEP_ALIVE_ACK_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    LEFT_FIELD_NUMBER: _ClassVar[int]
    joined: AnnounceResponse.Joined
    keep_alive_ack: AnnounceResponse.KeepAliveAck
    updated: AnnounceResponse.Updated
    left: AnnounceResponse.Left
    def __init__(self, joined: _Optional[_Union[AnnounceResponse.Joined, _Mapping]] = ..., keep_alive_ack: _Optional[_Union[AnnounceResponse.KeepAliveAck, _Mapping]] = ..., updated: _Optional[_Union[AnnounceResponse.Updated, _Mapping]] = ..., left: _Optional[_Union[AnnounceResponse.Left, _Mapping]] = ...) -> None: ...

class ListNodesRequest(_message.Message):
    __slots__ = ("cluster_name",)
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    def __init__(self, cluster_name: _Optional[str] = ...) -> None: ...

class ListNodesResponse(_message.Message):
    __slots__ = ("nodes", "available", "message")
    NODES_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[ClusterNode]
    available: bool
    message: str
    def __init__(self, nodes: _Optional[_Iterable[_Union[ClusterNode, _Mapping]]] = ..., available: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class WatchNodesRequest(_message.Message):
    __slots__ = ("cluster_name",)
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    def __init__(self, cluster_name: _Optional[str] = ...) -> None: ...

class NodeEvent(_message.Message):
    __slots__ = ("kind", "node")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    kind: NodeEventKind
    node: ClusterNode
    def __init__(self, kind: _Optional[_Union[NodeEventKind, str]] = ..., node: _Optional[_Union[ClusterNode, _Mapping]] = ...) -> None: ...

class ClusterSnapshot(_message.Message):
    __slots__ = ("nodes", "available", "message")
    NODES_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[ClusterNode]
    available: bool
    message: str
    def __init__(self, nodes: _Optional[_Iterable[_Union[ClusterNode, _Mapping]]] = ..., available: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class DiscoveryStatus(_message.Message):
    __slots__ = ("available", "message")
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    available: bool
    message: str
    def __init__(self, available: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class WatchNodesResponse(_message.Message):
    __slots__ = ("snapshot", "event", "status")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    snapshot: ClusterSnapshot
    event: NodeEvent
    status: DiscoveryStatus
    def __init__(self, snapshot: _Optional[_Union[ClusterSnapshot, _Mapping]] = ..., event: _Optional[_Union[NodeEvent, _Mapping]] = ..., status: _Optional[_Union[DiscoveryStatus, _Mapping]] = ...) -> None: ...
