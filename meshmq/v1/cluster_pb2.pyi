from meshmq.v1 import messages_pb2 as _messages_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ForgetCopyRequest(_message.Message):
    __slots__ = ("target_node_id", "copy_id")
    TARGET_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    COPY_ID_FIELD_NUMBER: _ClassVar[int]
    target_node_id: str
    copy_id: str
    def __init__(self, target_node_id: _Optional[str] = ..., copy_id: _Optional[str] = ...) -> None: ...

class ForgetCopyReply(_message.Message):
    __slots__ = ("node_id", "members", "voted_for_copy")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    VOTED_FOR_COPY_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    members: _containers.RepeatedCompositeFieldContainer[ClusterMember]
    voted_for_copy: bool
    def __init__(self, node_id: _Optional[str] = ..., members: _Optional[_Iterable[_Union[ClusterMember, _Mapping]]] = ..., voted_for_copy: _Optional[bool] = ...) -> None: ...

class MembersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MembersReply(_message.Message):
    __slots__ = ("node_id", "members")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    members: _containers.RepeatedCompositeFieldContainer[ClusterMember]
    def __init__(self, node_id: _Optional[str] = ..., members: _Optional[_Iterable[_Union[ClusterMember, _Mapping]]] = ...) -> None: ...

class VoteRequest(_message.Message):
    __slots__ = ("target_node_id", "request_to_stay_active", "copy_id")
    TARGET_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_TO_STAY_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    COPY_ID_FIELD_NUMBER: _ClassVar[int]
    target_node_id: str
    request_to_stay_active: bool
    copy_id: str
    def __init__(self, target_node_id: _Optional[str] = ..., request_to_stay_active: _Optional[bool] = ..., copy_id: _Optional[str] = ...) -> None: ...

class VoteReply(_message.Message):
    __slots__ = ("node_id", "node_name", "vote", "connector", "members")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    VOTE_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    vote: bool
    connector: str
    members: _containers.RepeatedCompositeFieldContainer[ClusterMember]
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., vote: _Optional[bool] = ..., connector: _Optional[str] = ..., members: _Optional[_Iterable[_Union[ClusterMember, _Mapping]]] = ...) -> None: ...

class LinkRequest(_message.Message):
    __slots__ = ("hello", "forward", "declare", "chunk")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    FORWARD_FIELD_NUMBER: _ClassVar[int]
    DECLARE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    hello: LinkHello
    forward: ForwardBatch
    declare: DeclareQueues
    chunk: ForwardChunk
    def __init__(self, hello: _Optional[_Union[LinkHello, _Mapping]] = ..., forward: _Optional[_Union[ForwardBatch, _Mapping]] = ..., declare: _Optional[_Union[DeclareQueues, _Mapping]] = ..., chunk: _Optional[_Union[ForwardChunk, _Mapping]] = ...) -> None: ...

class ForwardChunk(_message.Message):
    __slots__ = ("batch_id", "data", "last")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    batch_id: int
    data: bytes
    last: bool
    def __init__(self, batch_id: _Optional[int] = ..., data: _Optional[bytes] = ..., last: _Optional[bool] = ...) -> None: ...

class QueueDeclaration(_message.Message):
    __slots__ = ("name", "address", "routing_type", "filter", "durable")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    routing_type: _messages_pb2.RoutingType
    filter: str
    durable: bool
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ..., routing_type: _Optional[_Union[_messages_pb2.RoutingType, str]] = ..., filter: _Optional[str] = ..., durable: _Optional[bool] = ...) -> None: ...

class DeclareQueues(_message.Message):
    __slots__ = ("queues",)
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedCompositeFieldContainer[QueueDeclaration]
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueDeclaration, _Mapping]]] = ...) -> None: ...

class LinkResponse(_message.Message):
    __slots__ = ("welcome", "bindings", "confirm", "ping")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    CONFIRM_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    welcome: LinkWelcome
    bindings: BindingsSnapshot
    confirm: ForwardConfirm
    ping: LinkPing
    def __init__(self, welcome: _Optional[_Union[LinkWelcome, _Mapping]] = ..., bindings: _Optional[_Union[BindingsSnapshot, _Mapping]] = ..., confirm: _Optional[_Union[ForwardConfirm, _Mapping]] = ..., ping: _Optional[_Union[LinkPing, _Mapping]] = ...) -> None: ...

class LinkPing(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LinkHello(_message.Message):
    __slots__ = ("cluster_connection", "node_id", "node_name", "max_hops", "scale_down", "check_period_ms", "connector")
    CLUSTER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_HOPS_FIELD_NUMBER: _ClassVar[int]
    SCALE_DOWN_FIELD_NUMBER: _ClassVar[int]
    CHECK_PERIOD_MS_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    cluster_connection: str
    node_id: str
    node_name: str
    max_hops: int
    scale_down: bool
    check_period_ms: int
    connector: str
    def __init__(self, cluster_connection: _Optional[str] = ..., node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., max_hops: _Optional[int] = ..., scale_down: _Optional[bool] = ..., check_period_ms: _Optional[int] = ..., connector: _Optional[str] = ...) -> None: ...

class LinkWelcome(_message.Message):
    __slots__ = ("node_id", "node_name", "group_name")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    group_name: str
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., group_name: _Optional[str] = ...) -> None: ...

class ClusterBinding(_message.Message):
    __slots__ = ("node_id", "node_name", "queue", "address", "routing_type", "filter", "consumer_filters", "hops")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FILTERS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    queue: str
    address: str
    routing_type: _messages_pb2.RoutingType
    filter: str
    consumer_filters: _containers.RepeatedScalarFieldContainer[str]
    hops: int
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., queue: _Optional[str] = ..., address: _Optional[str] = ..., routing_type: _Optional[_Union[_messages_pb2.RoutingType, str]] = ..., filter: _Optional[str] = ..., consumer_filters: _Optional[_Iterable[str]] = ..., hops: _Optional[int] = ...) -> None: ...

class ClusterMember(_message.Message):
    __slots__ = ("node_id", "node_name", "connector")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    connector: str
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., connector: _Optional[str] = ...) -> None: ...

class BindingsSnapshot(_message.Message):
    __slots__ = ("bindings", "members")
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    bindings: _containers.RepeatedCompositeFieldContainer[ClusterBinding]
    members: _containers.RepeatedCompositeFieldContainer[ClusterMember]
    def __init__(self, bindings: _Optional[_Iterable[_Union[ClusterBinding, _Mapping]]] = ..., members: _Optional[_Iterable[_Union[ClusterMember, _Mapping]]] = ...) -> None: ...

class ForwardedMessage(_message.Message):
    __slots__ = ("message", "route_to", "bridge_duplicate_id", "delivery_count")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ROUTE_TO_FIELD_NUMBER: _ClassVar[int]
    BRIDGE_DUPLICATE_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    message: _messages_pb2.Message
    route_to: _containers.RepeatedScalarFieldContainer[str]
    bridge_duplicate_id: str
    delivery_count: int
    def __init__(self, message: _Optional[_Union[_messages_pb2.Message, _Mapping]] = ..., route_to: _Optional[_Iterable[str]] = ..., bridge_duplicate_id: _Optional[str] = ..., delivery_count: _Optional[int] = ...) -> None: ...

class ForwardBatch(_message.Message):
    __slots__ = ("batch_id", "messages")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    batch_id: int
    messages: _containers.RepeatedCompositeFieldContainer[ForwardedMessage]
    def __init__(self, batch_id: _Optional[int] = ..., messages: _Optional[_Iterable[_Union[ForwardedMessage, _Mapping]]] = ...) -> None: ...

class ForwardConfirm(_message.Message):
    __slots__ = ("batch_id", "refused")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    batch_id: int
    refused: str
    def __init__(self, batch_id: _Optional[int] = ..., refused: _Optional[str] = ...) -> None: ...

class BackupRequest(_message.Message):
    __slots__ = ("node_id", "node_name", "journal_url", "kind", "connector")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    JOURNAL_URL_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    journal_url: str
    kind: str
    connector: str
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., journal_url: _Optional[str] = ..., kind: _Optional[str] = ..., connector: _Optional[str] = ...) -> None: ...

class BackupReply(_message.Message):
    __slots__ = ("accepted", "reason", "backup_connector", "node_name")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    BACKUP_CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    reason: str
    backup_connector: str
    node_name: str
    def __init__(self, accepted: _Optional[bool] = ..., reason: _Optional[str] = ..., backup_connector: _Optional[str] = ..., node_name: _Optional[str] = ...) -> None: ...
