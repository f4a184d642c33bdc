"""What an application receives: a message with its delivery handle."""

from __future__ import annotations

from typing import Protocol

from meshmq.properties import PropertyValue, properties_dict
from meshmq.v1 import messages_pb2 as mpb


class Settler(Protocol):
    """What a message needs from the consumer that delivered it (consumer.py's
    Consumer): where its ack or nack goes."""

    def ack(self, msg: ReceivedMessage) -> None: ...

    def nack(self, msg: ReceivedMessage) -> None: ...


class ReceivedMessage:
    __slots__ = ("_consumer", "delivery_id", "delivery_count", "proto", "body", "size", "_props", "incarnation")

    def __init__(self, consumer: Settler, delivery_id: int, delivery_count: int, proto: mpb.Message, body: bytes,
                 incarnation: int = 0):
        self._consumer = consumer
        self.delivery_id = delivery_id
        self.delivery_count = delivery_count
        self.proto = proto
        self.body = body
        self.size = proto.ByteSize() + (proto.body_size if proto.large else 0)
        self._props: dict[str, PropertyValue] | None = None
        self.incarnation = incarnation  # the consumer's stream it came on (consumer.py)

    @property
    def message_id(self) -> int:
        return self.proto.message_id

    @property
    def node_id(self) -> str:
        return self.proto.node_id

    @property
    def address(self) -> str:
        return self.proto.address

    @property
    def properties(self) -> dict[str, PropertyValue]:
        if self._props is None:
            self._props = properties_dict(self.proto.properties)
        return self._props

    @property
    def durable(self) -> bool:
        return self.proto.durable

    @property
    def priority(self) -> int:
        return self.proto.priority

    @property
    def timestamp(self) -> int:
        return self.proto.timestamp

    @property
    def expiration(self) -> int:
        return self.proto.expiration

    @property
    def duplicate_id(self) -> str:
        return self.proto.duplicate_id

    @property
    def reply_to(self) -> str:
        """JMSReplyTo: the address a reply goes to ("" if none)."""
        return self.proto.reply_to

    @property
    def correlation_id(self) -> str:
        """JMSCorrelationID: ties a reply to its request ("" if none)."""
        return self.proto.correlation_id

    @property
    def type(self) -> str:
        """JMSType: the application's name for the kind of message ("" if none)."""
        return self.proto.type

    @property
    def group_id(self) -> str:
        """JMSXGroupID: the message group ("" if none)."""
        return self.proto.group_id

    @property
    def group_seq(self) -> int:
        """JMSXGroupSeq: the message's place in its group (0 if unset)."""
        return self.proto.group_seq

    @property
    def delivery_time(self) -> int:
        """When the message was scheduled for (ms since the epoch, the
        router's clock; `_AMQ_SCHED_DELIVERY`); 0 if it was not scheduled."""
        return self.proto.delivery_time

    def ack(self) -> None:
        """Acknowledge this message (sent with the next batch of acks, without waiting)."""
        self._consumer.ack(self)

    def nack(self) -> None:
        """Give the message back for redelivery (its delivery count rises)."""
        self._consumer.nack(self)

    def __repr__(self) -> str:
        return f"ReceivedMessage(id={self.message_id}, address={self.address!r}, {len(self.body)} bytes)"
