"""A message inside the router, and its reference in one queue.

One `ServerMessage` exists per accepted message however many queues hold it
(multicast); each queue holds a `Ref` carrying the per-queue delivery count.
The router keeps the client's protobuf as the payload, so delivering a message
is a copy of that object, not a rebuild.
"""

from __future__ import annotations

from meshmq.properties import PropertyValue, value_of
from meshmq.v1 import messages_pb2 as mpb


class ServerMessage:
    __slots__ = (
        "id",
        "proto",
        "address",
        "routing_type",
        "priority",
        "durable",
        "expiration",
        "timestamp",
        "size",
        "large",
        "refs",
        "persisted",
        "inline",
        "chunks",
        "forwards",
        "origin",
        "deliver_at",
        "group",
        "_props",
    )

    def __init__(self, proto: mpb.Message, size: int, message_id: int, address: str, routing_type: int,
                 priority: int, durable: bool, expiration: int, timestamp: int, large: bool, group: str,
                 deliver_at: int) -> None:
        """A message from its header fields as the caller has read them from
        `proto` (each read of a protobuf field is a call into upb: a client's
        send has read most of them already, `SendPipeline.accept`); `of` reads
        them all."""
        self.proto = proto
        self.id: int = message_id
        self.address: str = address
        self.routing_type: int = routing_type
        self.priority: int = priority
        self.durable: bool = durable
        self.expiration: int = expiration
        self.timestamp: int = timestamp
        self.large: bool = large
        # JMSXGroupID ("" when none): the one thing dispatch asks of every message (message_groups.py).
        self.group: str = group
        self.size = size
        # Live queue references; the stored message is deleted when the last goes.
        self.refs = 0
        # True while the message row is (or is being) written to the journal.
        self.persisted = False
        # True when its only stored queue reference lives on the message row.
        self.inline = False
        # A large message's body when it is held in memory instead of the
        # journal (persistence-enabled: false); None otherwise.
        self.chunks: list[bytes] | None = None
        # (node id, message id) on the node that forwarded it here (links only):
        # written on its ENQUEUED events so analytics can follow it across nodes.
        self.origin: tuple[str, int] | None = None
        # Set by cluster routing: the links that get a copy, each with the
        # bindings ("node_id/queue") it was routed to there (SendPipeline.stage copies it).
        self.forwards: dict | None = None
        self._props: dict[str, PropertyValue | None] | None = None
        # Not to be delivered before this time, ms since the epoch; 0: at once (scheduled.py).
        self.deliver_at: int = deliver_at

    @classmethod
    def of(cls, proto: mpb.Message, size: int, scheduled_at: int | None = None) -> ServerMessage:
        """The message `proto` holds, its header read from it. `scheduled_at`:
        its delivery time when the caller has it (a copy), else read too (a
        stored or forwarded message)."""
        return cls(proto, size, proto.message_id, proto.address, proto.routing_type, proto.priority, proto.durable,
                   proto.expiration, proto.timestamp, proto.large, proto.group_id,
                   proto.delivery_time if scheduled_at is None else scheduled_at)

    def lookup(self, name: str) -> PropertyValue | None:
        """Selector identifier lookup: header fields first, then properties."""
        header = _HEADERS.get(name)
        if header is not None:
            return header(self)
        return self.property_value(name)

    def property_value(self, name: str) -> PropertyValue | None:
        props = self._props
        if props is None:
            props = self._props = {k: value_of(v) for k, v in self.proto.properties.items()}
        return props.get(name)


def _durable_word(m: ServerMessage, yes: str, no: str) -> str:
    return yes if m.durable else no


def _field(name: str, field: str):
    """A request-reply or group header: the message's field, or, when the field
    is unset, the property `name` that Artemis's core protocol carries it in
    (`JMSCorrelationID`, `JMSType`, `JMSReplyTo`, `_AMQ_GROUP_ID`,
    `_AMQ_GROUP_SEQUENCE`), so a client that sends the header as a property
    is selected the same way."""

    def look(m: ServerMessage) -> PropertyValue | None:
        return getattr(m.proto, field) or m.property_value(name)

    return look


_HEADERS = {
    "AMQPriority": lambda m: m.priority,
    "JMSPriority": lambda m: m.priority,
    "AMQTimestamp": lambda m: m.timestamp,
    "JMSTimestamp": lambda m: m.timestamp,
    "AMQExpiration": lambda m: m.expiration,
    "JMSExpiration": lambda m: m.expiration,
    "AMQDurable": lambda m: _durable_word(m, "DURABLE", "NON_DURABLE"),
    "JMSDeliveryMode": lambda m: _durable_word(m, "PERSISTENT", "NON_PERSISTENT"),
    "AMQSize": lambda m: m.size,
    "AMQUserID": lambda m: m.proto.user_id or None,
    "AMQAddress": lambda m: m.address,
    "JMSMessageID": lambda m: f"ID:{m.proto.node_id}:{m.id}",
    "JMSCorrelationID": _field("JMSCorrelationID", "correlation_id"),
    "JMSType": _field("JMSType", "type"),
    "JMSReplyTo": _field("JMSReplyTo", "reply_to"),
    "JMSXGroupID": _field("_AMQ_GROUP_ID", "group_id"),
    "_AMQ_GROUP_ID": _field("_AMQ_GROUP_ID", "group_id"),
    "JMSXGroupSeq": _field("_AMQ_GROUP_SEQUENCE", "group_seq"),
    "_AMQ_GROUP_SEQUENCE": _field("_AMQ_GROUP_SEQUENCE", "group_seq"),
    "_AMQ_SCHED_DELIVERY": lambda m: m.deliver_at or None,
}


class Ref:
    """A message's place in one queue."""

    __slots__ = ("msg", "queue", "delivery_count", "persisted", "seq", "paged")

    def __init__(self, msg: ServerMessage, queue, delivery_count: int = 0, persisted: bool = False) -> None:
        self.msg = msg
        self.queue = queue
        self.delivery_count = delivery_count
        self.persisted = persisted
        # Arrival order in its queue (set by Queue.add; kept when it comes back).
        self.seq = 0
        # Stored as a paged message (paged_messages), not as a message row or reference.
        self.paged = False
