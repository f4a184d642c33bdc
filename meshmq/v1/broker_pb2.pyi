from meshmq.v1 import messages_pb2 as _messages_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionRequest(_message.Message):
    __slots__ = ("open", "create_producer", "send", "large_chunk", "create_consumer", "flow", "ack", "nack", "close_consumer", "close_producer", "commit", "rollback", "unsubscribe", "create_temporary_queue", "delete_temporary_queue")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    CREATE_PRODUCER_FIELD_NUMBER: _ClassVar[int]
    SEND_FIELD_NUMBER: _ClassVar[int]
    LARGE_CHUNK_FIELD_NUMBER: _ClassVar[int]
    CREATE_CONSUMER_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    NACK_FIELD_NUMBER: _ClassVar[int]
    CLOSE_CONSUMER_FIELD_NUMBER: _ClassVar[int]
    CLOSE_PRODUCER_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    ROLLBACK_FIELD_NUMBER: _ClassVar[int]
    UNSUBSCRIBE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TEMPORARY_QUEUE_FIELD_NUMBER: _ClassVar[int]
    DELETE_TEMPORARY_QUEUE_FIELD_NUMBER: _ClassVar[int]
    open: OpenSession
    create_producer: CreateProducer
    send: SendBatch
    large_chunk: LargeChunk
    create_consumer: CreateConsumer
    flow: Flow
    ack: AckBatch
    nack: NackBatch
    close_consumer: CloseConsumer
    close_producer: CloseProducer
    commit: TxRequest
    rollback: TxRequest
    unsubscribe: Unsubscribe
    create_temporary_queue: CreateTemporaryQueue
    delete_temporary_queue: DeleteTemporaryQueue
    def __init__(self, open: _Optional[_Union[OpenSession, _Mapping]] = ..., create_producer: _Optional[_Union[CreateProducer, _Mapping]] = ..., send: _Optional[_Union[SendBatch, _Mapping]] = ..., large_chunk: _Optional[_Union[LargeChunk, _Mapping]] = ..., create_consumer: _Optional[_Union[CreateConsumer, _Mapping]] = ..., flow: _Optional[_Union[Flow, _Mapping]] = ..., ack: _Optional[_Union[AckBatch, _Mapping]] = ..., nack: _Optional[_Union[NackBatch, _Mapping]] = ..., close_consumer: _Optional[_Union[CloseConsumer, _Mapping]] = ..., close_producer: _Optional[_Union[CloseProducer, _Mapping]] = ..., commit: _Optional[_Union[TxRequest, _Mapping]] = ..., rollback: _Optional[_Union[TxRequest, _Mapping]] = ..., unsubscribe: _Optional[_Union[Unsubscribe, _Mapping]] = ..., create_temporary_queue: _Optional[_Union[CreateTemporaryQueue, _Mapping]] = ..., delete_temporary_queue: _Optional[_Union[DeleteTemporaryQueue, _Mapping]] = ...) -> None: ...

class SessionResponse(_message.Message):
    __slots__ = ("opened", "confirm", "consumer_created", "deliveries", "large_chunk", "tx_result", "error", "producer_created", "redirect", "unsubscribed", "temporary_queue_created", "temporary_queue_deleted", "consumer_closed")
    OPENED_FIELD_NUMBER: _ClassVar[int]
    CONFIRM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_CREATED_FIELD_NUMBER: _ClassVar[int]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    LARGE_CHUNK_FIELD_NUMBER: _ClassVar[int]
    TX_RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_CREATED_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_FIELD_NUMBER: _ClassVar[int]
    UNSUBSCRIBED_FIELD_NUMBER: _ClassVar[int]
    TEMPORARY_QUEUE_CREATED_FIELD_NUMBER: _ClassVar[int]
    TEMPORARY_QUEUE_DELETED_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_CLOSED_FIELD_NUMBER: _ClassVar[int]
    opened: SessionOpened
    confirm: SendConfirm
    consumer_created: ConsumerCreated
    deliveries: DeliveryBatch
    large_chunk: LargeChunk
    tx_result: TxResult
    error: SessionError
    producer_created: ProducerCreated
    redirect: Redirect
    unsubscribed: Unsubscribed
    temporary_queue_created: TemporaryQueueCreated
    temporary_queue_deleted: TemporaryQueueDeleted
    consumer_closed: ConsumerClosed
    def __init__(self, opened: _Optional[_Union[SessionOpened, _Mapping]] = ..., confirm: _Optional[_Union[SendConfirm, _Mapping]] = ..., consumer_created: _Optional[_Union[ConsumerCreated, _Mapping]] = ..., deliveries: _Optional[_Union[DeliveryBatch, _Mapping]] = ..., large_chunk: _Optional[_Union[LargeChunk, _Mapping]] = ..., tx_result: _Optional[_Union[TxResult, _Mapping]] = ..., error: _Optional[_Union[SessionError, _Mapping]] = ..., producer_created: _Optional[_Union[ProducerCreated, _Mapping]] = ..., redirect: _Optional[_Union[Redirect, _Mapping]] = ..., unsubscribed: _Optional[_Union[Unsubscribed, _Mapping]] = ..., temporary_queue_created: _Optional[_Union[TemporaryQueueCreated, _Mapping]] = ..., temporary_queue_deleted: _Optional[_Union[TemporaryQueueDeleted, _Mapping]] = ..., consumer_closed: _Optional[_Union[ConsumerClosed, _Mapping]] = ...) -> None: ...

class Redirect(_message.Message):
    __slots__ = ("node_id", "connector", "reason")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    connector: str
    reason: str
    def __init__(self, node_id: _Optional[str] = ..., connector: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class OpenSession(_message.Message):
    __slots__ = ("client_id", "transacted", "protocol_version", "connection_id")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    TRANSACTED_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_ID_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    transacted: bool
    protocol_version: int
    connection_id: str
    def __init__(self, client_id: _Optional[str] = ..., transacted: _Optional[bool] = ..., protocol_version: _Optional[int] = ..., connection_id: _Optional[str] = ...) -> None: ...

class SessionOpened(_message.Message):
    __slots__ = ("node_id", "session_id", "version", "protocol_version", "min_protocol_version")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    MIN_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    session_id: str
    version: str
    protocol_version: int
    min_protocol_version: int
    def __init__(self, node_id: _Optional[str] = ..., session_id: _Optional[str] = ..., version: _Optional[str] = ..., protocol_version: _Optional[int] = ..., min_protocol_version: _Optional[int] = ...) -> None: ...

class CreateProducer(_message.Message):
    __slots__ = ("producer_id", "address", "window_size")
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_SIZE_FIELD_NUMBER: _ClassVar[int]
    producer_id: int
    address: str
    window_size: int
    def __init__(self, producer_id: _Optional[int] = ..., address: _Optional[str] = ..., window_size: _Optional[int] = ...) -> None: ...

class ProducerCreated(_message.Message):
    __slots__ = ("producer_id",)
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    producer_id: int
    def __init__(self, producer_id: _Optional[int] = ...) -> None: ...

class CloseProducer(_message.Message):
    __slots__ = ("producer_id",)
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    producer_id: int
    def __init__(self, producer_id: _Optional[int] = ...) -> None: ...

class SendBatch(_message.Message):
    __slots__ = ("producer_id", "batch_id", "messages")
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    producer_id: int
    batch_id: int
    messages: _containers.RepeatedCompositeFieldContainer[_messages_pb2.Message]
    def __init__(self, producer_id: _Optional[int] = ..., batch_id: _Optional[int] = ..., messages: _Optional[_Iterable[_Union[_messages_pb2.Message, _Mapping]]] = ...) -> None: ...

class LargeChunk(_message.Message):
    __slots__ = ("producer_id", "batch_id", "consumer_id", "delivery_id", "data", "last")
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    producer_id: int
    batch_id: int
    consumer_id: int
    delivery_id: int
    data: bytes
    last: bool
    def __init__(self, producer_id: _Optional[int] = ..., batch_id: _Optional[int] = ..., consumer_id: _Optional[int] = ..., delivery_id: _Optional[int] = ..., data: _Optional[bytes] = ..., last: _Optional[bool] = ...) -> None: ...

class SendConfirm(_message.Message):
    __slots__ = ("producer_id", "batch_id", "rejections")
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    REJECTIONS_FIELD_NUMBER: _ClassVar[int]
    producer_id: int
    batch_id: int
    rejections: _containers.RepeatedCompositeFieldContainer[Rejection]
    def __init__(self, producer_id: _Optional[int] = ..., batch_id: _Optional[int] = ..., rejections: _Optional[_Iterable[_Union[Rejection, _Mapping]]] = ...) -> None: ...

class Rejection(_message.Message):
    __slots__ = ("index", "reason", "detail")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    index: int
    reason: str
    detail: str
    def __init__(self, index: _Optional[int] = ..., reason: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class CreateConsumer(_message.Message):
    __slots__ = ("consumer_id", "queue", "address", "subscription", "filter", "window_size", "routing_type", "shared", "durable", "temporary")
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    WINDOW_SIZE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPE_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    TEMPORARY_FIELD_NUMBER: _ClassVar[int]
    consumer_id: int
    queue: str
    address: str
    subscription: str
    filter: str
    window_size: int
    routing_type: _messages_pb2.RoutingType
    shared: bool
    durable: bool
    temporary: bool
    def __init__(self, consumer_id: _Optional[int] = ..., queue: _Optional[str] = ..., address: _Optional[str] = ..., subscription: _Optional[str] = ..., filter: _Optional[str] = ..., window_size: _Optional[int] = ..., routing_type: _Optional[_Union[_messages_pb2.RoutingType, str]] = ..., shared: _Optional[bool] = ..., durable: _Optional[bool] = ..., temporary: _Optional[bool] = ...) -> None: ...

class Unsubscribe(_message.Message):
    __slots__ = ("request_id", "subscription")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    subscription: str
    def __init__(self, request_id: _Optional[int] = ..., subscription: _Optional[str] = ...) -> None: ...

class CreateTemporaryQueue(_message.Message):
    __slots__ = ("request_id", "queue")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    queue: str
    def __init__(self, request_id: _Optional[int] = ..., queue: _Optional[str] = ...) -> None: ...

class TemporaryQueueCreated(_message.Message):
    __slots__ = ("request_id", "queue", "existed")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    EXISTED_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    queue: str
    existed: bool
    def __init__(self, request_id: _Optional[int] = ..., queue: _Optional[str] = ..., existed: _Optional[bool] = ...) -> None: ...

class DeleteTemporaryQueue(_message.Message):
    __slots__ = ("request_id", "queue")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    queue: str
    def __init__(self, request_id: _Optional[int] = ..., queue: _Optional[str] = ...) -> None: ...

class TemporaryQueueDeleted(_message.Message):
    __slots__ = ("request_id", "queue", "messages_removed")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    queue: str
    messages_removed: int
    def __init__(self, request_id: _Optional[int] = ..., queue: _Optional[str] = ..., messages_removed: _Optional[int] = ...) -> None: ...

class Unsubscribed(_message.Message):
    __slots__ = ("request_id", "queue", "messages_removed")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    queue: str
    messages_removed: int
    def __init__(self, request_id: _Optional[int] = ..., queue: _Optional[str] = ..., messages_removed: _Optional[int] = ...) -> None: ...

class ConsumerCreated(_message.Message):
    __slots__ = ("consumer_id", "queue")
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    consumer_id: int
    queue: str
    def __init__(self, consumer_id: _Optional[int] = ..., queue: _Optional[str] = ...) -> None: ...

class Flow(_message.Message):
    __slots__ = ("consumer_id", "credits")
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    consumer_id: int
    credits: int
    def __init__(self, consumer_id: _Optional[int] = ..., credits: _Optional[int] = ...) -> None: ...

class Delivery(_message.Message):
    __slots__ = ("delivery_id", "delivery_count", "message")
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    delivery_id: int
    delivery_count: int
    message: _messages_pb2.Message
    def __init__(self, delivery_id: _Optional[int] = ..., delivery_count: _Optional[int] = ..., message: _Optional[_Union[_messages_pb2.Message, _Mapping]] = ...) -> None: ...

class DeliveryBatch(_message.Message):
    __slots__ = ("consumer_id", "deliveries")
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    consumer_id: int
    deliveries: _containers.RepeatedCompositeFieldContainer[Delivery]
    def __init__(self, consumer_id: _Optional[int] = ..., deliveries: _Optional[_Iterable[_Union[Delivery, _Mapping]]] = ...) -> None: ...

class AckBatch(_message.Message):
    __slots__ = ("consumer_id", "delivery_ids")
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_IDS_FIELD_NUMBER: _ClassVar[int]
    consumer_id: int
    delivery_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, consumer_id: _Optional[int] = ..., delivery_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class NackBatch(_message.Message):
    __slots__ = ("consumer_id", "delivery_ids")
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_IDS_FIELD_NUMBER: _ClassVar[int]
    consumer_id: int
    delivery_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, consumer_id: _Optional[int] = ..., delivery_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class CloseConsumer(_message.Message):
    __slots__ = ("consumer_id", "last_handed_delivery_id", "keep_handed", "answer")
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_HANDED_DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    KEEP_HANDED_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    consumer_id: int
    last_handed_delivery_id: int
    keep_handed: bool
    answer: bool
    def __init__(self, consumer_id: _Optional[int] = ..., last_handed_delivery_id: _Optional[int] = ..., keep_handed: _Optional[bool] = ..., answer: _Optional[bool] = ...) -> None: ...

class ConsumerClosed(_message.Message):
    __slots__ = ("consumer_id",)
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    consumer_id: int
    def __init__(self, consumer_id: _Optional[int] = ...) -> None: ...

class TxRequest(_message.Message):
    __slots__ = ("request_id", "handed")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    HANDED_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    handed: _containers.RepeatedCompositeFieldContainer[HandedPosition]
    def __init__(self, request_id: _Optional[int] = ..., handed: _Optional[_Iterable[_Union[HandedPosition, _Mapping]]] = ...) -> None: ...

class HandedPosition(_message.Message):
    __slots__ = ("consumer_id", "last_handed_delivery_id")
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_HANDED_DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    consumer_id: int
    last_handed_delivery_id: int
    def __init__(self, consumer_id: _Optional[int] = ..., last_handed_delivery_id: _Optional[int] = ...) -> None: ...

class TxResult(_message.Message):
    __slots__ = ("request_id", "committed")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    committed: bool
    def __init__(self, request_id: _Optional[int] = ..., committed: _Optional[bool] = ...) -> None: ...

class SessionError(_message.Message):
    __slots__ = ("request_id", "producer_id", "consumer_id", "reason", "message", "fatal")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FATAL_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    producer_id: int
    consumer_id: int
    reason: str
    message: str
    fatal: bool
    def __init__(self, request_id: _Optional[int] = ..., producer_id: _Optional[int] = ..., consumer_id: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., fatal: _Optional[bool] = ...) -> None: ...
