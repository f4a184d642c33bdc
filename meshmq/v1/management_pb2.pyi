from meshmq.v1 import messages_pb2 as _messages_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResetAllGroupsRequest(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class ResetAllGroupsResponse(_message.Message):
    __slots__ = ("groups_reset",)
    GROUPS_RESET_FIELD_NUMBER: _ClassVar[int]
    groups_reset: int
    def __init__(self, groups_reset: _Optional[int] = ...) -> None: ...

class CreateAddressRequest(_message.Message):
    __slots__ = ("name", "routing_types")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPES_FIELD_NUMBER: _ClassVar[int]
    name: str
    routing_types: _containers.RepeatedScalarFieldContainer[_messages_pb2.RoutingType]
    def __init__(self, name: _Optional[str] = ..., routing_types: _Optional[_Iterable[_Union[_messages_pb2.RoutingType, str]]] = ...) -> None: ...

class DeleteAddressRequest(_message.Message):
    __slots__ = ("name", "force")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    force: bool
    def __init__(self, name: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class DeleteAddressResponse(_message.Message):
    __slots__ = ("messages_removed",)
    MESSAGES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    messages_removed: int
    def __init__(self, messages_removed: _Optional[int] = ...) -> None: ...

class BrowseMessagesRequest(_message.Message):
    __slots__ = ("queue", "offset", "limit", "body_preview_bytes", "filter")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BODY_PREVIEW_BYTES_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    queue: str
    offset: int
    limit: int
    body_preview_bytes: int
    filter: str
    def __init__(self, queue: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ..., body_preview_bytes: _Optional[int] = ..., filter: _Optional[str] = ...) -> None: ...

class BrowsedMessage(_message.Message):
    __slots__ = ("message", "state", "delivery_count", "body_size")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    BODY_SIZE_FIELD_NUMBER: _ClassVar[int]
    message: _messages_pb2.Message
    state: str
    delivery_count: int
    body_size: int
    def __init__(self, message: _Optional[_Union[_messages_pb2.Message, _Mapping]] = ..., state: _Optional[str] = ..., delivery_count: _Optional[int] = ..., body_size: _Optional[int] = ...) -> None: ...

class BrowseMessagesResponse(_message.Message):
    __slots__ = ("messages", "total")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[BrowsedMessage]
    total: int
    def __init__(self, messages: _Optional[_Iterable[_Union[BrowsedMessage, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...

class BrowseQueueRequest(_message.Message):
    __slots__ = ("queue", "filter", "page_size")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    filter: str
    page_size: int
    def __init__(self, queue: _Optional[str] = ..., filter: _Optional[str] = ..., page_size: _Optional[int] = ...) -> None: ...

class BrowsePage(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[BrowsedMessage]
    def __init__(self, messages: _Optional[_Iterable[_Union[BrowsedMessage, _Mapping]]] = ...) -> None: ...

class MoveMessagesRequest(_message.Message):
    __slots__ = ("queue", "to_queue", "filter", "limit")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    TO_QUEUE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    queue: str
    to_queue: str
    filter: str
    limit: int
    def __init__(self, queue: _Optional[str] = ..., to_queue: _Optional[str] = ..., filter: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class RetryMessagesRequest(_message.Message):
    __slots__ = ("queue", "filter", "message_id")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    queue: str
    filter: str
    message_id: int
    def __init__(self, queue: _Optional[str] = ..., filter: _Optional[str] = ..., message_id: _Optional[int] = ...) -> None: ...

class MessageOutcome(_message.Message):
    __slots__ = ("message_id", "result", "address", "queues", "address_created", "queues_created", "reason", "detail", "new_message_id")
    class Result(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        RESULT_UNSPECIFIED: _ClassVar[MessageOutcome.Result]
        RETURNED: _ClassVar[MessageOutcome.Result]
        SENT_TO_ADDRESS: _ClassVar[MessageOutcome.Result]
        KEPT: _ClassVar[MessageOutcome.Result]
    RESULT_UNSPECIFIED: MessageOutcome.Result
    RETURNED: MessageOutcome.Result
    SENT_TO_ADDRESS: MessageOutcome.Result
    KEPT: MessageOutcome.Result
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_CREATED_FIELD_NUMBER: _ClassVar[int]
    QUEUES_CREATED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    NEW_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    message_id: int
    result: MessageOutcome.Result
    address: str
    queues: _containers.RepeatedScalarFieldContainer[str]
    address_created: bool
    queues_created: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    detail: str
    new_message_id: int
    def __init__(self, message_id: _Optional[int] = ..., result: _Optional[_Union[MessageOutcome.Result, str]] = ..., address: _Optional[str] = ..., queues: _Optional[_Iterable[str]] = ..., address_created: _Optional[bool] = ..., queues_created: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ..., detail: _Optional[str] = ..., new_message_id: _Optional[int] = ...) -> None: ...

class OperationProgress(_message.Message):
    __slots__ = ("done", "total", "finished", "kept", "outcomes")
    DONE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    KEPT_FIELD_NUMBER: _ClassVar[int]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    done: int
    total: int
    finished: bool
    kept: int
    outcomes: _containers.RepeatedCompositeFieldContainer[MessageOutcome]
    def __init__(self, done: _Optional[int] = ..., total: _Optional[int] = ..., finished: _Optional[bool] = ..., kept: _Optional[int] = ..., outcomes: _Optional[_Iterable[_Union[MessageOutcome, _Mapping]]] = ...) -> None: ...

class PauseQueueRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetClusterStateRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BridgeInfo(_message.Message):
    __slots__ = ("cluster_connection", "endpoint", "target_node_id", "target_node_name", "state", "problem", "routed", "forwarded", "confirmed", "pending", "retries", "store_and_forward_queue", "batches", "kind", "direction", "duplex", "role", "demand_sent", "demand_received", "subscriptions")
    CLUSTER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    TARGET_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    ROUTED_FIELD_NUMBER: _ClassVar[int]
    FORWARDED_FIELD_NUMBER: _ClassVar[int]
    CONFIRMED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    STORE_AND_FORWARD_QUEUE_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    DUPLEX_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    DEMAND_SENT_FIELD_NUMBER: _ClassVar[int]
    DEMAND_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    cluster_connection: str
    endpoint: str
    target_node_id: str
    target_node_name: str
    state: str
    problem: str
    routed: int
    forwarded: int
    confirmed: int
    pending: int
    retries: int
    store_and_forward_queue: str
    batches: int
    kind: str
    direction: str
    duplex: bool
    role: str
    demand_sent: int
    demand_received: int
    subscriptions: int
    def __init__(self, cluster_connection: _Optional[str] = ..., endpoint: _Optional[str] = ..., target_node_id: _Optional[str] = ..., target_node_name: _Optional[str] = ..., state: _Optional[str] = ..., problem: _Optional[str] = ..., routed: _Optional[int] = ..., forwarded: _Optional[int] = ..., confirmed: _Optional[int] = ..., pending: _Optional[int] = ..., retries: _Optional[int] = ..., store_and_forward_queue: _Optional[str] = ..., batches: _Optional[int] = ..., kind: _Optional[str] = ..., direction: _Optional[str] = ..., duplex: _Optional[bool] = ..., role: _Optional[str] = ..., demand_sent: _Optional[int] = ..., demand_received: _Optional[int] = ..., subscriptions: _Optional[int] = ...) -> None: ...

class RemoteBindingInfo(_message.Message):
    __slots__ = ("node_id", "node_name", "queue", "address", "routing_type", "filter", "consumer_filters", "hops", "via")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FILTERS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    VIA_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    queue: str
    address: str
    routing_type: _messages_pb2.RoutingType
    filter: str
    consumer_filters: _containers.RepeatedScalarFieldContainer[str]
    hops: int
    via: str
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., queue: _Optional[str] = ..., address: _Optional[str] = ..., routing_type: _Optional[_Union[_messages_pb2.RoutingType, str]] = ..., filter: _Optional[str] = ..., consumer_filters: _Optional[_Iterable[str]] = ..., hops: _Optional[int] = ..., via: _Optional[str] = ...) -> None: ...

class ClusterState(_message.Message):
    __slots__ = ("node_id", "node_name", "bridges", "remote_bindings")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    BRIDGES_FIELD_NUMBER: _ClassVar[int]
    REMOTE_BINDINGS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    node_name: str
    bridges: _containers.RepeatedCompositeFieldContainer[BridgeInfo]
    remote_bindings: _containers.RepeatedCompositeFieldContainer[RemoteBindingInfo]
    def __init__(self, node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., bridges: _Optional[_Iterable[_Union[BridgeInfo, _Mapping]]] = ..., remote_bindings: _Optional[_Iterable[_Union[RemoteBindingInfo, _Mapping]]] = ...) -> None: ...

class WatchTopologyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TopologyMember(_message.Message):
    __slots__ = ("node_id", "name", "connector", "backup_connector", "group_name")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    BACKUP_CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    name: str
    connector: str
    backup_connector: str
    group_name: str
    def __init__(self, node_id: _Optional[str] = ..., name: _Optional[str] = ..., connector: _Optional[str] = ..., backup_connector: _Optional[str] = ..., group_name: _Optional[str] = ...) -> None: ...

class Topology(_message.Message):
    __slots__ = ("members", "version", "rebalance")
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[TopologyMember]
    version: int
    rebalance: int
    def __init__(self, members: _Optional[_Iterable[_Union[TopologyMember, _Mapping]]] = ..., version: _Optional[int] = ..., rebalance: _Optional[int] = ...) -> None: ...

class GetNodeInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NodeInfo(_message.Message):
    __slots__ = ("node_id", "name", "version", "started_at", "journal", "epoch", "ha_policy", "group_name", "backup_connector", "event_log_enabled", "event_retention", "events_kept_from", "events_pruned", "global_max_size", "memory_bytes", "memory_alarm", "disk_alarm", "max_disk_usage", "disk_used_percent", "disk_free_bytes", "disk_total_bytes", "journal_bytes", "disk_scanned_at", "disk_alarm_reason")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    JOURNAL_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    HA_POLICY_FIELD_NUMBER: _ClassVar[int]
    GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    BACKUP_CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    EVENT_LOG_ENABLED_FIELD_NUMBER: _ClassVar[int]
    EVENT_RETENTION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_KEPT_FROM_FIELD_NUMBER: _ClassVar[int]
    EVENTS_PRUNED_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_MAX_SIZE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ALARM_FIELD_NUMBER: _ClassVar[int]
    DISK_ALARM_FIELD_NUMBER: _ClassVar[int]
    MAX_DISK_USAGE_FIELD_NUMBER: _ClassVar[int]
    DISK_USED_PERCENT_FIELD_NUMBER: _ClassVar[int]
    DISK_FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    DISK_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    JOURNAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    DISK_SCANNED_AT_FIELD_NUMBER: _ClassVar[int]
    DISK_ALARM_REASON_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    name: str
    version: str
    started_at: int
    journal: str
    epoch: int
    ha_policy: str
    group_name: str
    backup_connector: str
    event_log_enabled: bool
    event_retention: int
    events_kept_from: int
    events_pruned: int
    global_max_size: int
    memory_bytes: int
    memory_alarm: bool
    disk_alarm: bool
    max_disk_usage: int
    disk_used_percent: float
    disk_free_bytes: int
    disk_total_bytes: int
    journal_bytes: int
    disk_scanned_at: int
    disk_alarm_reason: str
    def __init__(self, node_id: _Optional[str] = ..., name: _Optional[str] = ..., version: _Optional[str] = ..., started_at: _Optional[int] = ..., journal: _Optional[str] = ..., epoch: _Optional[int] = ..., ha_policy: _Optional[str] = ..., group_name: _Optional[str] = ..., backup_connector: _Optional[str] = ..., event_log_enabled: _Optional[bool] = ..., event_retention: _Optional[int] = ..., events_kept_from: _Optional[int] = ..., events_pruned: _Optional[int] = ..., global_max_size: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., memory_alarm: _Optional[bool] = ..., disk_alarm: _Optional[bool] = ..., max_disk_usage: _Optional[int] = ..., disk_used_percent: _Optional[float] = ..., disk_free_bytes: _Optional[int] = ..., disk_total_bytes: _Optional[int] = ..., journal_bytes: _Optional[int] = ..., disk_scanned_at: _Optional[int] = ..., disk_alarm_reason: _Optional[str] = ...) -> None: ...

class ListAddressesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AddressInfo(_message.Message):
    __slots__ = ("name", "routing_types", "queues", "auto_created", "memory_messages", "memory_bytes", "messages_dropped", "paging")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPES_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    AUTO_CREATED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    PAGING_FIELD_NUMBER: _ClassVar[int]
    name: str
    routing_types: _containers.RepeatedScalarFieldContainer[_messages_pb2.RoutingType]
    queues: _containers.RepeatedScalarFieldContainer[str]
    auto_created: bool
    memory_messages: int
    memory_bytes: int
    messages_dropped: int
    paging: bool
    def __init__(self, name: _Optional[str] = ..., routing_types: _Optional[_Iterable[_Union[_messages_pb2.RoutingType, str]]] = ..., queues: _Optional[_Iterable[str]] = ..., auto_created: _Optional[bool] = ..., memory_messages: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., messages_dropped: _Optional[int] = ..., paging: _Optional[bool] = ...) -> None: ...

class ListAddressesResponse(_message.Message):
    __slots__ = ("addresses",)
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedCompositeFieldContainer[AddressInfo]
    def __init__(self, addresses: _Optional[_Iterable[_Union[AddressInfo, _Mapping]]] = ...) -> None: ...

class ListQueuesRequest(_message.Message):
    __slots__ = ("address",)
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    address: str
    def __init__(self, address: _Optional[str] = ...) -> None: ...

class QueueInfo(_message.Message):
    __slots__ = ("name", "address", "routing_type", "filter", "durable", "temporary", "auto_created", "message_count", "consumer_count", "delivering_count", "messages_added", "messages_acknowledged", "messages_expired", "messages_killed", "paged_count", "paged_bytes", "scheduled_count", "paused", "last_value_key", "non_destructive", "exclusive", "group_rebalance", "group_rebalance_pause_dispatch", "group_buckets", "group_first_key", "group_count", "messages_delivered")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    TEMPORARY_FIELD_NUMBER: _ClassVar[int]
    AUTO_CREATED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_COUNT_FIELD_NUMBER: _ClassVar[int]
    DELIVERING_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_ADDED_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_ACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_EXPIRED_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_KILLED_FIELD_NUMBER: _ClassVar[int]
    PAGED_COUNT_FIELD_NUMBER: _ClassVar[int]
    PAGED_BYTES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_COUNT_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    LAST_VALUE_KEY_FIELD_NUMBER: _ClassVar[int]
    NON_DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    GROUP_REBALANCE_FIELD_NUMBER: _ClassVar[int]
    GROUP_REBALANCE_PAUSE_DISPATCH_FIELD_NUMBER: _ClassVar[int]
    GROUP_BUCKETS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIRST_KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_DELIVERED_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    routing_type: _messages_pb2.RoutingType
    filter: str
    durable: bool
    temporary: bool
    auto_created: bool
    message_count: int
    consumer_count: int
    delivering_count: int
    messages_added: int
    messages_acknowledged: int
    messages_expired: int
    messages_killed: int
    paged_count: int
    paged_bytes: int
    scheduled_count: int
    paused: bool
    last_value_key: str
    non_destructive: bool
    exclusive: bool
    group_rebalance: bool
    group_rebalance_pause_dispatch: bool
    group_buckets: int
    group_first_key: str
    group_count: int
    messages_delivered: int
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ..., routing_type: _Optional[_Union[_messages_pb2.RoutingType, str]] = ..., filter: _Optional[str] = ..., durable: _Optional[bool] = ..., temporary: _Optional[bool] = ..., auto_created: _Optional[bool] = ..., message_count: _Optional[int] = ..., consumer_count: _Optional[int] = ..., delivering_count: _Optional[int] = ..., messages_added: _Optional[int] = ..., messages_acknowledged: _Optional[int] = ..., messages_expired: _Optional[int] = ..., messages_killed: _Optional[int] = ..., paged_count: _Optional[int] = ..., paged_bytes: _Optional[int] = ..., scheduled_count: _Optional[int] = ..., paused: _Optional[bool] = ..., last_value_key: _Optional[str] = ..., non_destructive: _Optional[bool] = ..., exclusive: _Optional[bool] = ..., group_rebalance: _Optional[bool] = ..., group_rebalance_pause_dispatch: _Optional[bool] = ..., group_buckets: _Optional[int] = ..., group_first_key: _Optional[str] = ..., group_count: _Optional[int] = ..., messages_delivered: _Optional[int] = ...) -> None: ...

class ListQueuesResponse(_message.Message):
    __slots__ = ("queues",)
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedCompositeFieldContainer[QueueInfo]
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueInfo, _Mapping]]] = ...) -> None: ...

class ListConsumersRequest(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class ConsumerInfo(_message.Message):
    __slots__ = ("session_id", "consumer_id", "queue", "filter", "delivering_count", "messages_acknowledged", "credits", "client_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    DELIVERING_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_ACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    consumer_id: int
    queue: str
    filter: str
    delivering_count: int
    messages_acknowledged: int
    credits: int
    client_id: str
    def __init__(self, session_id: _Optional[str] = ..., consumer_id: _Optional[int] = ..., queue: _Optional[str] = ..., filter: _Optional[str] = ..., delivering_count: _Optional[int] = ..., messages_acknowledged: _Optional[int] = ..., credits: _Optional[int] = ..., client_id: _Optional[str] = ...) -> None: ...

class ListConsumersResponse(_message.Message):
    __slots__ = ("consumers",)
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    consumers: _containers.RepeatedCompositeFieldContainer[ConsumerInfo]
    def __init__(self, consumers: _Optional[_Iterable[_Union[ConsumerInfo, _Mapping]]] = ...) -> None: ...

class CreateQueueRequest(_message.Message):
    __slots__ = ("name", "address", "routing_type", "filter", "durable", "last_value_key", "last_value", "non_destructive", "exclusive", "group_rebalance", "group_rebalance_pause_dispatch", "group_buckets", "group_first_key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    LAST_VALUE_KEY_FIELD_NUMBER: _ClassVar[int]
    LAST_VALUE_FIELD_NUMBER: _ClassVar[int]
    NON_DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    GROUP_REBALANCE_FIELD_NUMBER: _ClassVar[int]
    GROUP_REBALANCE_PAUSE_DISPATCH_FIELD_NUMBER: _ClassVar[int]
    GROUP_BUCKETS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIRST_KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    routing_type: _messages_pb2.RoutingType
    filter: str
    durable: bool
    last_value_key: str
    last_value: bool
    non_destructive: bool
    exclusive: bool
    group_rebalance: bool
    group_rebalance_pause_dispatch: bool
    group_buckets: int
    group_first_key: str
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ..., routing_type: _Optional[_Union[_messages_pb2.RoutingType, str]] = ..., filter: _Optional[str] = ..., durable: _Optional[bool] = ..., last_value_key: _Optional[str] = ..., last_value: _Optional[bool] = ..., non_destructive: _Optional[bool] = ..., exclusive: _Optional[bool] = ..., group_rebalance: _Optional[bool] = ..., group_rebalance_pause_dispatch: _Optional[bool] = ..., group_buckets: _Optional[int] = ..., group_first_key: _Optional[str] = ...) -> None: ...

class DeleteQueueRequest(_message.Message):
    __slots__ = ("name", "force")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    force: bool
    def __init__(self, name: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class DeleteQueueResponse(_message.Message):
    __slots__ = ("messages_removed",)
    MESSAGES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    messages_removed: int
    def __init__(self, messages_removed: _Optional[int] = ...) -> None: ...

class PurgeQueueRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class PurgeQueueResponse(_message.Message):
    __slots__ = ("messages_removed",)
    MESSAGES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    messages_removed: int
    def __init__(self, messages_removed: _Optional[int] = ...) -> None: ...

class SetMaxDiskUsageRequest(_message.Message):
    __slots__ = ("max_disk_usage",)
    MAX_DISK_USAGE_FIELD_NUMBER: _ClassVar[int]
    max_disk_usage: int
    def __init__(self, max_disk_usage: _Optional[int] = ...) -> None: ...

class ListConnectionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConnectionSession(_message.Message):
    __slots__ = ("session_id", "client_id", "producers", "consumers", "credits", "in_flight", "transacted", "since")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCERS_FIELD_NUMBER: _ClassVar[int]
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    TRANSACTED_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    client_id: str
    producers: int
    consumers: int
    credits: int
    in_flight: int
    transacted: bool
    since: int
    def __init__(self, session_id: _Optional[str] = ..., client_id: _Optional[str] = ..., producers: _Optional[int] = ..., consumers: _Optional[int] = ..., credits: _Optional[int] = ..., in_flight: _Optional[int] = ..., transacted: _Optional[bool] = ..., since: _Optional[int] = ...) -> None: ...

class ConnectionInfo(_message.Message):
    __slots__ = ("connection_id", "client_address", "user", "node_id", "node_name", "client_id", "session_count", "producers", "consumers", "credits", "in_flight", "since", "sessions")
    CONNECTION_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_COUNT_FIELD_NUMBER: _ClassVar[int]
    PRODUCERS_FIELD_NUMBER: _ClassVar[int]
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    connection_id: str
    client_address: str
    user: str
    node_id: str
    node_name: str
    client_id: str
    session_count: int
    producers: int
    consumers: int
    credits: int
    in_flight: int
    since: int
    sessions: _containers.RepeatedCompositeFieldContainer[ConnectionSession]
    def __init__(self, connection_id: _Optional[str] = ..., client_address: _Optional[str] = ..., user: _Optional[str] = ..., node_id: _Optional[str] = ..., node_name: _Optional[str] = ..., client_id: _Optional[str] = ..., session_count: _Optional[int] = ..., producers: _Optional[int] = ..., consumers: _Optional[int] = ..., credits: _Optional[int] = ..., in_flight: _Optional[int] = ..., since: _Optional[int] = ..., sessions: _Optional[_Iterable[_Union[ConnectionSession, _Mapping]]] = ...) -> None: ...

class ListConnectionsResponse(_message.Message):
    __slots__ = ("connections",)
    CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    connections: _containers.RepeatedCompositeFieldContainer[ConnectionInfo]
    def __init__(self, connections: _Optional[_Iterable[_Union[ConnectionInfo, _Mapping]]] = ...) -> None: ...

class CloseConnectionRequest(_message.Message):
    __slots__ = ("connection_id",)
    CONNECTION_ID_FIELD_NUMBER: _ClassVar[int]
    connection_id: str
    def __init__(self, connection_id: _Optional[str] = ...) -> None: ...

class CloseConnectionResponse(_message.Message):
    __slots__ = ("sessions_closed",)
    SESSIONS_CLOSED_FIELD_NUMBER: _ClassVar[int]
    sessions_closed: int
    def __init__(self, sessions_closed: _Optional[int] = ...) -> None: ...

class SendMessageRequest(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: _messages_pb2.Message
    def __init__(self, message: _Optional[_Union[_messages_pb2.Message, _Mapping]] = ...) -> None: ...

class SendMessageResponse(_message.Message):
    __slots__ = ("message_id", "queues")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    message_id: int
    queues: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, message_id: _Optional[int] = ..., queues: _Optional[_Iterable[str]] = ...) -> None: ...

class GetAddressSettingsRequest(_message.Message):
    __slots__ = ("address",)
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    address: str
    def __init__(self, address: _Optional[str] = ...) -> None: ...

class EffectiveSetting(_message.Message):
    __slots__ = ("name", "value_json", "match")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    name: str
    value_json: str
    match: str
    def __init__(self, name: _Optional[str] = ..., value_json: _Optional[str] = ..., match: _Optional[str] = ...) -> None: ...

class AddressSettingsInfo(_message.Message):
    __slots__ = ("address", "matched", "settings")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    address: str
    matched: _containers.RepeatedScalarFieldContainer[str]
    settings: _containers.RepeatedCompositeFieldContainer[EffectiveSetting]
    def __init__(self, address: _Optional[str] = ..., matched: _Optional[_Iterable[str]] = ..., settings: _Optional[_Iterable[_Union[EffectiveSetting, _Mapping]]] = ...) -> None: ...

class ListLinkConfigurationsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LinkConfiguration(_message.Message):
    __slots__ = ("kind", "name", "parameters_json", "changed_keys", "connectors")
    class ConnectorsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_JSON_FIELD_NUMBER: _ClassVar[int]
    CHANGED_KEYS_FIELD_NUMBER: _ClassVar[int]
    CONNECTORS_FIELD_NUMBER: _ClassVar[int]
    kind: str
    name: str
    parameters_json: str
    changed_keys: _containers.RepeatedScalarFieldContainer[str]
    connectors: _containers.ScalarMap[str, str]
    def __init__(self, kind: _Optional[str] = ..., name: _Optional[str] = ..., parameters_json: _Optional[str] = ..., changed_keys: _Optional[_Iterable[str]] = ..., connectors: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ListLinkConfigurationsResponse(_message.Message):
    __slots__ = ("links",)
    LINKS_FIELD_NUMBER: _ClassVar[int]
    links: _containers.RepeatedCompositeFieldContainer[LinkConfiguration]
    def __init__(self, links: _Optional[_Iterable[_Union[LinkConfiguration, _Mapping]]] = ...) -> None: ...
