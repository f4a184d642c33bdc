from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_KIND_UNSPECIFIED: _ClassVar[EventKind]
    ENQUEUED: _ClassVar[EventKind]
    DELIVERED: _ClassVar[EventKind]
    ACKNOWLEDGED: _ClassVar[EventKind]
    EXPIRED: _ClassVar[EventKind]
    DEAD_LETTERED: _ClassVar[EventKind]
    REMOVED: _ClassVar[EventKind]
EVENT_KIND_UNSPECIFIED: EventKind
ENQUEUED: EventKind
DELIVERED: EventKind
ACKNOWLEDGED: EventKind
EXPIRED: EventKind
DEAD_LETTERED: EventKind
REMOVED: EventKind

class OpenRequest(_message.Message):
    __slots__ = ("node_name",)
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    def __init__(self, node_name: _Optional[str] = ...) -> None: ...

class OpenResponse(_message.Message):
    __slots__ = ("node_id", "epoch", "next_message_id", "store", "schema_version", "events_kept_from")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    NEXT_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_KEPT_FROM_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    epoch: int
    next_message_id: int
    store: str
    schema_version: int
    events_kept_from: int
    def __init__(self, node_id: _Optional[str] = ..., epoch: _Optional[int] = ..., next_message_id: _Optional[int] = ..., store: _Optional[str] = ..., schema_version: _Optional[int] = ..., events_kept_from: _Optional[int] = ...) -> None: ...

class ActivateRequest(_message.Message):
    __slots__ = ("epoch",)
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    def __init__(self, epoch: _Optional[int] = ...) -> None: ...

class ActivateResponse(_message.Message):
    __slots__ = ("epoch",)
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    def __init__(self, epoch: _Optional[int] = ...) -> None: ...

class LoadRequest(_message.Message):
    __slots__ = ("epoch",)
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    def __init__(self, epoch: _Optional[int] = ...) -> None: ...

class LoadResponse(_message.Message):
    __slots__ = ("addresses", "queues", "duplicate_ids", "messages", "refs", "paged", "group_bindings")
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_IDS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    REFS_FIELD_NUMBER: _ClassVar[int]
    PAGED_FIELD_NUMBER: _ClassVar[int]
    GROUP_BINDINGS_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedCompositeFieldContainer[AddressRecord]
    queues: _containers.RepeatedCompositeFieldContainer[QueueRecord]
    duplicate_ids: _containers.RepeatedCompositeFieldContainer[DuplicateIdRecord]
    messages: _containers.RepeatedCompositeFieldContainer[StoredMessage]
    refs: _containers.RepeatedCompositeFieldContainer[MessageRef]
    paged: _containers.RepeatedCompositeFieldContainer[PagedQueue]
    group_bindings: _containers.RepeatedCompositeFieldContainer[GroupBindingRecord]
    def __init__(self, addresses: _Optional[_Iterable[_Union[AddressRecord, _Mapping]]] = ..., queues: _Optional[_Iterable[_Union[QueueRecord, _Mapping]]] = ..., duplicate_ids: _Optional[_Iterable[_Union[DuplicateIdRecord, _Mapping]]] = ..., messages: _Optional[_Iterable[_Union[StoredMessage, _Mapping]]] = ..., refs: _Optional[_Iterable[_Union[MessageRef, _Mapping]]] = ..., paged: _Optional[_Iterable[_Union[PagedQueue, _Mapping]]] = ..., group_bindings: _Optional[_Iterable[_Union[GroupBindingRecord, _Mapping]]] = ...) -> None: ...

class AddressRecord(_message.Message):
    __slots__ = ("name", "routing_types", "auto_created")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPES_FIELD_NUMBER: _ClassVar[int]
    AUTO_CREATED_FIELD_NUMBER: _ClassVar[int]
    name: str
    routing_types: int
    auto_created: bool
    def __init__(self, name: _Optional[str] = ..., routing_types: _Optional[int] = ..., auto_created: _Optional[bool] = ...) -> None: ...

class QueueRecord(_message.Message):
    __slots__ = ("queue_id", "name", "address", "routing_type", "filter", "auto_created", "last_value_key", "non_destructive", "exclusive", "group_buckets", "group_rebalance", "group_rebalance_pause_dispatch", "group_first_key")
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    AUTO_CREATED_FIELD_NUMBER: _ClassVar[int]
    LAST_VALUE_KEY_FIELD_NUMBER: _ClassVar[int]
    NON_DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    GROUP_BUCKETS_FIELD_NUMBER: _ClassVar[int]
    GROUP_REBALANCE_FIELD_NUMBER: _ClassVar[int]
    GROUP_REBALANCE_PAUSE_DISPATCH_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIRST_KEY_FIELD_NUMBER: _ClassVar[int]
    queue_id: int
    name: str
    address: str
    routing_type: int
    filter: str
    auto_created: bool
    last_value_key: str
    non_destructive: bool
    exclusive: bool
    group_buckets: int
    group_rebalance: bool
    group_rebalance_pause_dispatch: bool
    group_first_key: str
    def __init__(self, queue_id: _Optional[int] = ..., name: _Optional[str] = ..., address: _Optional[str] = ..., routing_type: _Optional[int] = ..., filter: _Optional[str] = ..., auto_created: _Optional[bool] = ..., last_value_key: _Optional[str] = ..., non_destructive: _Optional[bool] = ..., exclusive: _Optional[bool] = ..., group_buckets: _Optional[int] = ..., group_rebalance: _Optional[bool] = ..., group_rebalance_pause_dispatch: _Optional[bool] = ..., group_first_key: _Optional[str] = ...) -> None: ...

class StoredMessage(_message.Message):
    __slots__ = ("message_id", "data", "address", "size", "timestamp", "large", "queue_id", "delivery_count")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    LARGE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    message_id: int
    data: bytes
    address: str
    size: int
    timestamp: int
    large: bool
    queue_id: int
    delivery_count: int
    def __init__(self, message_id: _Optional[int] = ..., data: _Optional[bytes] = ..., address: _Optional[str] = ..., size: _Optional[int] = ..., timestamp: _Optional[int] = ..., large: _Optional[bool] = ..., queue_id: _Optional[int] = ..., delivery_count: _Optional[int] = ...) -> None: ...

class MessageRef(_message.Message):
    __slots__ = ("queue_id", "message_id", "delivery_count")
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    queue_id: int
    message_id: int
    delivery_count: int
    def __init__(self, queue_id: _Optional[int] = ..., message_id: _Optional[int] = ..., delivery_count: _Optional[int] = ...) -> None: ...

class DuplicateIdRecord(_message.Message):
    __slots__ = ("address", "duplicate_id", "position")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    address: str
    duplicate_id: str
    position: int
    def __init__(self, address: _Optional[str] = ..., duplicate_id: _Optional[str] = ..., position: _Optional[int] = ...) -> None: ...

class LargeMessageChunk(_message.Message):
    __slots__ = ("message_id", "seq", "data")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    message_id: int
    seq: int
    data: bytes
    def __init__(self, message_id: _Optional[int] = ..., seq: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("timestamp", "kind", "address", "queue", "message_id", "size", "delivery_count", "message_timestamp", "from_node_id", "from_message_id")
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    FROM_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    timestamp: int
    kind: EventKind
    address: str
    queue: str
    message_id: int
    size: int
    delivery_count: int
    message_timestamp: int
    from_node_id: str
    from_message_id: int
    def __init__(self, timestamp: _Optional[int] = ..., kind: _Optional[_Union[EventKind, str]] = ..., address: _Optional[str] = ..., queue: _Optional[str] = ..., message_id: _Optional[int] = ..., size: _Optional[int] = ..., delivery_count: _Optional[int] = ..., message_timestamp: _Optional[int] = ..., from_node_id: _Optional[str] = ..., from_message_id: _Optional[int] = ...) -> None: ...

class AppendRequest(_message.Message):
    __slots__ = ("request_id", "epoch", "reserve_message_ids_to", "add_addresses", "add_queues", "add_messages", "add_refs", "add_large_chunks", "add_duplicate_ids", "delete_duplicate_ids", "update_delivery_counts", "delete_refs", "delete_messages", "delete_queues", "delete_addresses", "events", "copy_large_messages", "delete_large_messages", "add_paged", "delete_paged", "update_paged_delivery_counts", "purge_paged", "prune_events", "add_group_bindings", "delete_group_bindings")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    RESERVE_MESSAGE_IDS_TO_FIELD_NUMBER: _ClassVar[int]
    ADD_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    ADD_QUEUES_FIELD_NUMBER: _ClassVar[int]
    ADD_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    ADD_REFS_FIELD_NUMBER: _ClassVar[int]
    ADD_LARGE_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    ADD_DUPLICATE_IDS_FIELD_NUMBER: _ClassVar[int]
    DELETE_DUPLICATE_IDS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_DELIVERY_COUNTS_FIELD_NUMBER: _ClassVar[int]
    DELETE_REFS_FIELD_NUMBER: _ClassVar[int]
    DELETE_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    DELETE_QUEUES_FIELD_NUMBER: _ClassVar[int]
    DELETE_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    COPY_LARGE_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    DELETE_LARGE_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    ADD_PAGED_FIELD_NUMBER: _ClassVar[int]
    DELETE_PAGED_FIELD_NUMBER: _ClassVar[int]
    UPDATE_PAGED_DELIVERY_COUNTS_FIELD_NUMBER: _ClassVar[int]
    PURGE_PAGED_FIELD_NUMBER: _ClassVar[int]
    PRUNE_EVENTS_FIELD_NUMBER: _ClassVar[int]
    ADD_GROUP_BINDINGS_FIELD_NUMBER: _ClassVar[int]
    DELETE_GROUP_BINDINGS_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    epoch: int
    reserve_message_ids_to: int
    add_addresses: _containers.RepeatedCompositeFieldContainer[AddressRecord]
    add_queues: _containers.RepeatedCompositeFieldContainer[QueueRecord]
    add_messages: _containers.RepeatedCompositeFieldContainer[StoredMessage]
    add_refs: _containers.RepeatedCompositeFieldContainer[MessageRef]
    add_large_chunks: _containers.RepeatedCompositeFieldContainer[LargeMessageChunk]
    add_duplicate_ids: _containers.RepeatedCompositeFieldContainer[DuplicateIdRecord]
    delete_duplicate_ids: _containers.RepeatedCompositeFieldContainer[DuplicateIdRecord]
    update_delivery_counts: _containers.RepeatedCompositeFieldContainer[MessageRef]
    delete_refs: _containers.RepeatedCompositeFieldContainer[MessageRef]
    delete_messages: _containers.RepeatedScalarFieldContainer[int]
    delete_queues: _containers.RepeatedScalarFieldContainer[int]
    delete_addresses: _containers.RepeatedScalarFieldContainer[str]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    copy_large_messages: _containers.RepeatedCompositeFieldContainer[CopyLargeMessage]
    delete_large_messages: _containers.RepeatedScalarFieldContainer[int]
    add_paged: _containers.RepeatedCompositeFieldContainer[PagedMessage]
    delete_paged: _containers.RepeatedCompositeFieldContainer[MessageRef]
    update_paged_delivery_counts: _containers.RepeatedCompositeFieldContainer[MessageRef]
    purge_paged: _containers.RepeatedScalarFieldContainer[int]
    prune_events: PruneEvents
    add_group_bindings: _containers.RepeatedCompositeFieldContainer[GroupBindingRecord]
    delete_group_bindings: _containers.RepeatedCompositeFieldContainer[GroupBindingRecord]
    def __init__(self, request_id: _Optional[int] = ..., epoch: _Optional[int] = ..., reserve_message_ids_to: _Optional[int] = ..., add_addresses: _Optional[_Iterable[_Union[AddressRecord, _Mapping]]] = ..., add_queues: _Optional[_Iterable[_Union[QueueRecord, _Mapping]]] = ..., add_messages: _Optional[_Iterable[_Union[StoredMessage, _Mapping]]] = ..., add_refs: _Optional[_Iterable[_Union[MessageRef, _Mapping]]] = ..., add_large_chunks: _Optional[_Iterable[_Union[LargeMessageChunk, _Mapping]]] = ..., add_duplicate_ids: _Optional[_Iterable[_Union[DuplicateIdRecord, _Mapping]]] = ..., delete_duplicate_ids: _Optional[_Iterable[_Union[DuplicateIdRecord, _Mapping]]] = ..., update_delivery_counts: _Optional[_Iterable[_Union[MessageRef, _Mapping]]] = ..., delete_refs: _Optional[_Iterable[_Union[MessageRef, _Mapping]]] = ..., delete_messages: _Optional[_Iterable[int]] = ..., delete_queues: _Optional[_Iterable[int]] = ..., delete_addresses: _Optional[_Iterable[str]] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., copy_large_messages: _Optional[_Iterable[_Union[CopyLargeMessage, _Mapping]]] = ..., delete_large_messages: _Optional[_Iterable[int]] = ..., add_paged: _Optional[_Iterable[_Union[PagedMessage, _Mapping]]] = ..., delete_paged: _Optional[_Iterable[_Union[MessageRef, _Mapping]]] = ..., update_paged_delivery_counts: _Optional[_Iterable[_Union[MessageRef, _Mapping]]] = ..., purge_paged: _Optional[_Iterable[int]] = ..., prune_events: _Optional[_Union[PruneEvents, _Mapping]] = ..., add_group_bindings: _Optional[_Iterable[_Union[GroupBindingRecord, _Mapping]]] = ..., delete_group_bindings: _Optional[_Iterable[_Union[GroupBindingRecord, _Mapping]]] = ...) -> None: ...

class GroupBindingRecord(_message.Message):
    __slots__ = ("handler", "group_id", "node_id")
    HANDLER_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    handler: str
    group_id: str
    node_id: str
    def __init__(self, handler: _Optional[str] = ..., group_id: _Optional[str] = ..., node_id: _Optional[str] = ...) -> None: ...

class PruneEvents(_message.Message):
    __slots__ = ("before_ts", "max_rows")
    BEFORE_TS_FIELD_NUMBER: _ClassVar[int]
    MAX_ROWS_FIELD_NUMBER: _ClassVar[int]
    before_ts: int
    max_rows: int
    def __init__(self, before_ts: _Optional[int] = ..., max_rows: _Optional[int] = ...) -> None: ...

class PagedMessage(_message.Message):
    __slots__ = ("queue_id", "message_id", "size", "delivery_count", "data", "timestamp")
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    queue_id: int
    message_id: int
    size: int
    delivery_count: int
    data: bytes
    timestamp: int
    def __init__(self, queue_id: _Optional[int] = ..., message_id: _Optional[int] = ..., size: _Optional[int] = ..., delivery_count: _Optional[int] = ..., data: _Optional[bytes] = ..., timestamp: _Optional[int] = ...) -> None: ...

class ReadPageRequest(_message.Message):
    __slots__ = ("queue_id", "after_message_id", "max_messages", "max_bytes")
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    queue_id: int
    after_message_id: int
    max_messages: int
    max_bytes: int
    def __init__(self, queue_id: _Optional[int] = ..., after_message_id: _Optional[int] = ..., max_messages: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class ReadPageResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[PagedMessage]
    def __init__(self, messages: _Optional[_Iterable[_Union[PagedMessage, _Mapping]]] = ...) -> None: ...

class PagedQueue(_message.Message):
    __slots__ = ("queue_id", "messages", "bytes")
    QUEUE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    queue_id: int
    messages: int
    bytes: int
    def __init__(self, queue_id: _Optional[int] = ..., messages: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class CopyLargeMessage(_message.Message):
    __slots__ = ("from_message_id", "to_message_id")
    FROM_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TO_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    from_message_id: int
    to_message_id: int
    def __init__(self, from_message_id: _Optional[int] = ..., to_message_id: _Optional[int] = ...) -> None: ...

class AppendResponse(_message.Message):
    __slots__ = ("request_id", "ok", "reason", "message", "pruned_events", "events_kept_from")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PRUNED_EVENTS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_KEPT_FROM_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    ok: bool
    reason: str
    message: str
    pruned_events: int
    events_kept_from: int
    def __init__(self, request_id: _Optional[int] = ..., ok: _Optional[bool] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., pruned_events: _Optional[int] = ..., events_kept_from: _Optional[int] = ...) -> None: ...

class ReadLargeMessageRequest(_message.Message):
    __slots__ = ("message_id", "from_seq", "max_chunks")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    message_id: int
    from_seq: int
    max_chunks: int
    def __init__(self, message_id: _Optional[int] = ..., from_seq: _Optional[int] = ..., max_chunks: _Optional[int] = ...) -> None: ...
