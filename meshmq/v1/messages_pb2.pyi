from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RoutingType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROUTING_TYPE_UNSPECIFIED: _ClassVar[RoutingType]
    ANYCAST: _ClassVar[RoutingType]
    MULTICAST: _ClassVar[RoutingType]
ROUTING_TYPE_UNSPECIFIED: RoutingType
ANYCAST: RoutingType
MULTICAST: RoutingType

class Value(_message.Message):
    __slots__ = ("string_value", "int_value", "float_value", "bool_value", "bytes_value")
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    BYTES_VALUE_FIELD_NUMBER: _ClassVar[int]
    string_value: str
    int_value: int
    float_value: float
    bool_value: bool
    bytes_value: bytes
    def __init__(self, string_value: _Optional[str] = ..., int_value: _Optional[int] = ..., float_value: _Optional[float] = ..., bool_value: _Optional[bool] = ..., bytes_value: _Optional[bytes] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("message_id", "address", "body", "properties", "durable", "priority", "timestamp", "expiration", "duplicate_id", "routing_type", "large", "body_size", "node_id", "user_id", "reply_to", "correlation_id", "type", "group_id", "group_seq", "delivery_time", "delivery_delay")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_ID_FIELD_NUMBER: _ClassVar[int]
    ROUTING_TYPE_FIELD_NUMBER: _ClassVar[int]
    LARGE_FIELD_NUMBER: _ClassVar[int]
    BODY_SIZE_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    REPLY_TO_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_SEQ_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_TIME_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_DELAY_FIELD_NUMBER: _ClassVar[int]
    message_id: int
    address: str
    body: bytes
    properties: _containers.MessageMap[str, Value]
    durable: bool
    priority: int
    timestamp: int
    expiration: int
    duplicate_id: str
    routing_type: RoutingType
    large: bool
    body_size: int
    node_id: str
    user_id: str
    reply_to: str
    correlation_id: str
    type: str
    group_id: str
    group_seq: int
    delivery_time: int
    delivery_delay: int
    def __init__(self, message_id: _Optional[int] = ..., address: _Optional[str] = ..., body: _Optional[bytes] = ..., properties: _Optional[_Mapping[str, Value]] = ..., durable: _Optional[bool] = ..., priority: _Optional[int] = ..., timestamp: _Optional[int] = ..., expiration: _Optional[int] = ..., duplicate_id: _Optional[str] = ..., routing_type: _Optional[_Union[RoutingType, str]] = ..., large: _Optional[bool] = ..., body_size: _Optional[int] = ..., node_id: _Optional[str] = ..., user_id: _Optional[str] = ..., reply_to: _Optional[str] = ..., correlation_id: _Optional[str] = ..., type: _Optional[str] = ..., group_id: _Optional[str] = ..., group_seq: _Optional[int] = ..., delivery_time: _Optional[int] = ..., delivery_delay: _Optional[int] = ...) -> None: ...
