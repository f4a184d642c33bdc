"""The meshmq Python client SDK.

    async with await connect("meshmq://127.0.0.1:61616") as conn:
        session = await conn.session()
        producer = await session.create_producer("orders")
        await producer.send(b"hello", properties={"kind": "greeting"})

`meshmq.client.blocking` has the same API without async/await.
"""

from meshmq.errors import (
    AuthenticationError,
    ConnectionFailedError,
    ScaledDownError,
    NotActiveError,
    AddressFullError,
    GroupingUnavailableError,
    PermissionDeniedError,
    DuplicateIdError,
    InvalidRequestError,
    InvalidSelectorError,
    MeshMQError,
    MessageTooLargeError,
    QueueExistsError,
    QueueNotFoundError,
    SlowConsumerError,
    TransactionRolledBackError,
    UnblockedError,
)

from .browser import BrowsedMessage, QueueBrowser
from .connection import Admin, Connection, connect
from .consumer import Consumer
from .failover import FailoverEventType
from .message import ReceivedMessage
from .producer import Producer
from .session import Session
from .temporary_queue import TemporaryQueue
from .options import ClientOptions
from .uri import parse_uri

__all__ = [
    "Admin",
    "AuthenticationError",
    "BrowsedMessage",
    "ClientOptions",
    "Connection",
    "ConnectionFailedError",
    "ScaledDownError",
    "NotActiveError",
    "Consumer",
    "AddressFullError",
    "GroupingUnavailableError",
    "PermissionDeniedError",
    "DuplicateIdError",
    "InvalidRequestError",
    "InvalidSelectorError",
    "MeshMQError",
    "MessageTooLargeError",
    "Producer",
    "QueueBrowser",
    "QueueExistsError",
    "QueueNotFoundError",
    "ReceivedMessage",
    "Session",
    "SlowConsumerError",
    "TemporaryQueue",
    "TransactionRolledBackError",
    "UnblockedError",
    "FailoverEventType",
    "connect",
    "parse_uri",
]
