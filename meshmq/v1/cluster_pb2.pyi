from meshmq.v1 import messages_pb2 as _messages_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GroupProposal(_message.Message):
    __slots__ = ("address", "group_id", "node_id", "replace_node_id", "proposer_node_id")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    REPLACE_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PROPOSER_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    address: str
    group_id: str
    node_id: str
    replace_node_id: str
    proposer_node_id: str
    def __init__(self, address: _Optional[str] = ..., group_id: _Optional[str] = ..., node_id: _Optional[str] = ..., replace_node_id: _Optional[str] = ..., proposer_node_id: _Optional[str] = ...) -> None: ...

class GroupDecision(_message.Message):
    __slots__ = ("group_id", "node_id")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    node_id: str
    def __init__(self, group_id: _Optional[str] = ..., node_id: _Optional[str] = ...) -> None: ...

class GroupsRemoved(_message.Message):
    __slots__ = ("address", "group_ids")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    GROUP_IDS_FIELD_NUMBER: _ClassVar[int]
    address: str
    group_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, address: _Optional[str] = ..., group_ids: _Optional[_Iterable[str]] = ...) -> None: ...

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
    __slots__ = ("hello", "forward", "declare", "chunk", "confirm", "demand")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    FORWARD_FIELD_NUMBER: _ClassVar[int]
    DECLARE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    CONFIRM_FIELD_NUMBER: _ClassVar[int]
    DEMAND_FIELD_NUMBER: _ClassVar[int]
    hello: LinkHello
    forward: ForwardBatch
    declare: DeclareQueues
    chunk: ForwardChunk
    confirm: ForwardConfirm
    demand: DemandUpdate
    def __init__(self, hello: _Optional[_Union[LinkHello, _Mapping]] = ..., forward: _Optional[_Union[ForwardBatch, _Mapping]] = ..., declare: _Optional[_Union[DeclareQueues, _Mapping]] = ..., chunk: _Optional[_Union[ForwardChunk, _Mapping]] = ..., confirm: _Optional[_Union[ForwardConfirm, _Mapping]] = ..., demand: _Optional[_Union[DemandUpdate, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("welcome", "bindings", "confirm", "ping", "demand", "forward", "chunk", "groups_removed")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    CONFIRM_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    DEMAND_FIELD_NUMBER: _ClassVar[int]
    FORWARD_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    GROUPS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    welcome: LinkWelcome
    bindings: BindingsSnapshot
    confirm: ForwardConfirm
    ping: LinkPing
    demand: DemandUpdate
    forward: ForwardBatch
    chunk: ForwardChunk
    groups_removed: GroupsRemoved
    def __init__(self, welcome: _Optional[_Union[LinkWelcome, _Mapping]] = ..., bindings: _Optional[_Union[BindingsSnapshot, _Mapping]] = ..., confirm: _Optional[_Union[ForwardConfirm, _Mapping]] = ..., ping: _Optional[_Union[LinkPing, _Mapping]] = ..., demand: _Optional[_Union[DemandUpdate, _Mapping]] = ..., forward: _Optional[_Union[ForwardBatch, _Mapping]] = ..., chunk: _Optional[_Union[ForwardChunk, _Mapping]] = ..., groups_removed: _Optional[_Union[GroupsRemoved, _Mapping]] = ...) -> None: ...

class LinkPing(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LinkHello(_message.Message):
    __slots__ = ("cluster_connection", "node_id", "node_name", "max_hops", "scale_down", "check_period_ms", "connector", "network")
    CLUSTER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_HOPS_FIELD_NUMBER: _ClassVar[int]
    SCALE_DOWN_FIELD_NUMBER: _ClassVar[int]
    CHECK_PERIOD_MS_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    cluster_connection: str
    node_id: str
    node_name: str
    max_hops: int
    scale_down: bool
    check_period_ms: int
    connector: str
    network: NetworkHello
    def __init__(self, cluster_connection: _Optional[str] = ..., node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., max_hops: _Optional[int] = ..., scale_down: _Optional[bool] = ..., check_period_ms: _Optional[int] = ..., connector: _Optional[str] = ..., network: _Optional[_Union[NetworkHello, _Mapping]] = ...) -> None: ...

class LinkWelcome(_message.Message):
    __slots__ = ("node_id", "node_name", "group_name", "tree_node_type", "grouping_local_address")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    TREE_NODE_TYPE_FIELD_NUMBER: _ClassVar[int]
    GROUPING_LOCAL_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    group_name: str
    tree_node_type: str
    grouping_local_address: str
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., group_name: _Optional[str] = ..., tree_node_type: _Optional[str] = ..., grouping_local_address: _Optional[str] = ...) -> None: ...

class NetworkHello(_message.Message):
    __slots__ = ("kind", "duplex", "node_type", "policy")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        NETWORK_CONNECTOR: _ClassVar[NetworkHello.Kind]
        TREE_CONNECTOR: _ClassVar[NetworkHello.Kind]
    NETWORK_CONNECTOR: NetworkHello.Kind
    TREE_CONNECTOR: NetworkHello.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    DUPLEX_FIELD_NUMBER: _ClassVar[int]
    NODE_TYPE_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    kind: NetworkHello.Kind
    duplex: bool
    node_type: str
    policy: NetworkPolicy
    def __init__(self, kind: _Optional[_Union[NetworkHello.Kind, str]] = ..., duplex: _Optional[bool] = ..., node_type: _Optional[str] = ..., policy: _Optional[_Union[NetworkPolicy, _Mapping]] = ...) -> None: ...

class NetworkPolicy(_message.Message):
    __slots__ = ("consumer_ttl", "message_ttl", "conduit_subscriptions", "dynamic_only", "decrease_network_consumer_priority", "suppress_duplicate_queue_subscriptions", "suppress_duplicate_topic_subscriptions", "bridge_temp_destinations", "prefetch_size", "replay_when_no_consumers", "included_queues", "included_topics", "excluded_queues", "excluded_topics", "static_queues", "static_topics")
    CONSUMER_TTL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_TTL_FIELD_NUMBER: _ClassVar[int]
    CONDUIT_SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_ONLY_FIELD_NUMBER: _ClassVar[int]
    DECREASE_NETWORK_CONSUMER_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_DUPLICATE_QUEUE_SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_DUPLICATE_TOPIC_SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    BRIDGE_TEMP_DESTINATIONS_FIELD_NUMBER: _ClassVar[int]
    PREFETCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    REPLAY_WHEN_NO_CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    INCLUDED_QUEUES_FIELD_NUMBER: _ClassVar[int]
    INCLUDED_TOPICS_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_QUEUES_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_TOPICS_FIELD_NUMBER: _ClassVar[int]
    STATIC_QUEUES_FIELD_NUMBER: _ClassVar[int]
    STATIC_TOPICS_FIELD_NUMBER: _ClassVar[int]
    consumer_ttl: int
    message_ttl: int
    conduit_subscriptions: bool
    dynamic_only: bool
    decrease_network_consumer_priority: bool
    suppress_duplicate_queue_subscriptions: bool
    suppress_duplicate_topic_subscriptions: bool
    bridge_temp_destinations: bool
    prefetch_size: int
    replay_when_no_consumers: bool
    included_queues: _containers.RepeatedScalarFieldContainer[str]
    included_topics: _containers.RepeatedScalarFieldContainer[str]
    excluded_queues: _containers.RepeatedScalarFieldContainer[str]
    excluded_topics: _containers.RepeatedScalarFieldContainer[str]
    static_queues: _containers.RepeatedScalarFieldContainer[str]
    static_topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, consumer_ttl: _Optional[int] = ..., message_ttl: _Optional[int] = ..., conduit_subscriptions: _Optional[bool] = ..., dynamic_only: _Optional[bool] = ..., decrease_network_consumer_priority: _Optional[bool] = ..., suppress_duplicate_queue_subscriptions: _Optional[bool] = ..., suppress_duplicate_topic_subscriptions: _Optional[bool] = ..., bridge_temp_destinations: _Optional[bool] = ..., prefetch_size: _Optional[int] = ..., replay_when_no_consumers: _Optional[bool] = ..., included_queues: _Optional[_Iterable[str]] = ..., included_topics: _Optional[_Iterable[str]] = ..., excluded_queues: _Optional[_Iterable[str]] = ..., excluded_topics: _Optional[_Iterable[str]] = ..., static_queues: _Optional[_Iterable[str]] = ..., static_topics: _Optional[_Iterable[str]] = ...) -> None: ...

class DemandUpdate(_message.Message):
    __slots__ = ("added", "removed", "full", "moved", "version")
    class MovedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    MOVED_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    added: _containers.RepeatedCompositeFieldContainer[NetworkDemand]
    removed: _containers.RepeatedScalarFieldContainer[str]
    full: bool
    moved: _containers.ScalarMap[str, int]
    version: int
    def __init__(self, added: _Optional[_Iterable[_Union[NetworkDemand, _Mapping]]] = ..., removed: _Optional[_Iterable[str]] = ..., full: _Optional[bool] = ..., moved: _Optional[_Mapping[str, int]] = ..., version: _Optional[int] = ...) -> None: ...

class NetworkDemand(_message.Message):
    __slots__ = ("key", "kind", "destination", "selector", "path", "hops", "origins", "attached")
    class AttachedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    ORIGINS_FIELD_NUMBER: _ClassVar[int]
    ATTACHED_FIELD_NUMBER: _ClassVar[int]
    key: str
    kind: str
    destination: str
    selector: str
    path: _containers.RepeatedScalarFieldContainer[str]
    hops: int
    origins: _containers.RepeatedScalarFieldContainer[str]
    attached: _containers.ScalarMap[str, int]
    def __init__(self, key: _Optional[str] = ..., kind: _Optional[str] = ..., destination: _Optional[str] = ..., selector: _Optional[str] = ..., path: _Optional[_Iterable[str]] = ..., hops: _Optional[int] = ..., origins: _Optional[_Iterable[str]] = ..., attached: _Optional[_Mapping[str, int]] = ...) -> None: ...

class ClusterBinding(_message.Message):
    __slots__ = ("node_id", "node_name", "queue", "address", "routing_type", "filter", "consumer_filters", "hops", "temporary")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FILTERS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    TEMPORARY_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    queue: str
    address: str
    routing_type: _messages_pb2.RoutingType
    filter: str
    consumer_filters: _containers.RepeatedScalarFieldContainer[str]
    hops: int
    temporary: bool
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., queue: _Optional[str] = ..., address: _Optional[str] = ..., routing_type: _Optional[_Union[_messages_pb2.RoutingType, str]] = ..., filter: _Optional[str] = ..., consumer_filters: _Optional[_Iterable[str]] = ..., hops: _Optional[int] = ..., temporary: _Optional[bool] = ...) -> None: ...

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
    __slots__ = ("bindings", "members", "version")
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    bindings: _containers.RepeatedCompositeFieldContainer[ClusterBinding]
    members: _containers.RepeatedCompositeFieldContainer[ClusterMember]
    version: int
    def __init__(self, bindings: _Optional[_Iterable[_Union[ClusterBinding, _Mapping]]] = ..., members: _Optional[_Iterable[_Union[ClusterMember, _Mapping]]] = ..., version: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("batch_id", "messages", "bindings_version")
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_VERSION_FIELD_NUMBER: _ClassVar[int]
    batch_id: int
    messages: _containers.RepeatedCompositeFieldContainer[ForwardedMessage]
    bindings_version: int
    def __init__(self, batch_id: _Optional[int] = ..., messages: _Optional[_Iterable[_Union[ForwardedMessage, _Mapping]]] = ..., bindings_version: _Optional[int] = ...) -> None: ...

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
