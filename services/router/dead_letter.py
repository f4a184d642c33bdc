"""Moving messages to the dead-letter and expiry addresses.

Three steps the broker takes apart from routing: a message that reached
max-delivery-attempts or expired is copied to the dead-letter or expiry
address with the `_AMQ_ORIG_*` properties Artemis sets (its journal
ENQUEUED event names the original, for analytics), and its original
reference released (`move`; `_AMQ_ORIG_ROUTING_TYPE` is the routing type of
the queue it died on, "ANYCAST" or "MULTICAST", so that a retry after that
queue is gone sends it to its address as it had reached it); a message no queue takes is redirected to the
dead-letter address when send-to-dla-on-no-route is set
(`redirect_unroutable`); and such an address that does not exist yet gets an
anycast queue of its own name (`ensure_target`), so a moved message is kept
rather than silently dropped.

`transfer` is the one step that takes a message from one queue to another,
atomically in the journal; the operator's moves and retries
(message_moves.py) use it too.
"""

from __future__ import annotations

from typing import Protocol

from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from .addresses import Address
from .delivery import Delivery
from .large_body import copy_body
from .message import Ref, ServerMessage
from .queue import Queue, now_ms
from .routing import ANYCAST, routing_type_name


class QueueMaker(Protocol):
    """What a redirect asks of the node (broker.py's Broker): its queues, and a new one."""

    addresses: dict[str, Address]
    queues: dict[str, Queue]

    def create_queue(self, name: str, address: str, routing_type: int, filter_text: str = "", *,
                     auto_created: bool = False) -> Queue: ...


class Resending(Protocol):
    """The two steps of the send pipeline (send_pipeline.py) a moved copy takes."""

    def route(self, msg: ServerMessage, *, moved: bool = False) -> list[Queue]: ...

    def stage(self, msg: ServerMessage, queues: list[Queue]) -> list[Ref]: ...


class MovingNode(QueueMaker, Protocol):
    """What moving a message asks of the node (broker.py's Broker)."""

    delivery: Delivery
    sender: Resending
    node_id: str

    def next_message_id(self) -> int: ...


def ensure_target(broker: QueueMaker, address: str) -> None:
    addr = broker.addresses.get(address)
    if (addr is None or not addr.queues) and address not in broker.queues:
        broker.create_queue(address, address, ANYCAST, auto_created=False)


def redirect_unroutable(broker: QueueMaker, msg: ServerMessage, dead_letter_address: str) -> None:
    """Point a message nobody takes at the dead-letter address (routed again by
    the caller). Its routing type goes, as for a moved message: it reaches the
    dead-letter queues whatever it was sent as, and the dead-letter address
    keeps the routing types it was declared with."""
    props = msg.proto.properties
    props["_AMQ_ORIG_ADDRESS"].string_value = msg.address
    if msg.routing_type:
        props["_AMQ_ORIG_ROUTING_TYPE"].string_value = routing_type_name(msg.routing_type)
    msg.proto.address = msg.address = dead_letter_address
    msg.proto.routing_type = msg.routing_type = 0
    ensure_target(broker, dead_letter_address)


def move(broker: MovingNode, ref: Ref, target: str | None, kind: int) -> None:
    """Release `ref` with event `kind` and, when `target` is set, store a copy there."""
    if not target:
        broker.delivery.release(ref, kind)
        return
    src = ref.msg
    copy = copy_message(broker, ref, target)
    props = copy.properties
    # Where it died, even if it had been moved before (retry returns it there).
    props["_AMQ_ORIG_ADDRESS"].string_value = src.address
    props["_AMQ_ORIG_QUEUE"].string_value = ref.queue.name
    props["_AMQ_ORIG_MESSAGE_ID"].int_value = src.id
    props["_AMQ_ORIG_ROUTING_TYPE"].string_value = routing_type_name(ref.queue.routing_type)
    if kind == jpb.EXPIRED:
        props["_AMQ_ACTUAL_EXPIRY"].int_value = now_ms()
    copy.expiration = 0
    moved = server_message(copy)
    # The copy's ENQUEUED names the original (events.from_node_id/from_message_id),
    # so analytics counts it as a copy of that message, not as one more produced.
    moved.origin = (broker.node_id, src.id)
    ensure_target(broker, target)
    broker.delivery.enqueue_when_stored(transfer(broker, ref, moved, broker.sender.route(moved, moved=True), kind))


def copy_message(broker: MovingNode, ref: Ref, address: str) -> mpb.Message:
    """A copy of `ref`'s message for `address`, under a new message id and
    without a routing type (it reaches the queues it is sent to whatever it
    was sent as)."""
    copy = mpb.Message()
    copy.CopyFrom(ref.msg.proto)
    copy.address = address
    copy.routing_type = 0
    copy.message_id = broker.next_message_id()
    return copy


def mark_origin(copy: mpb.Message, ref: Ref) -> None:
    """The `_AMQ_ORIG_*` properties of a message an operator moves, as
    Artemis sets them: the first origin stays (a message moved twice still
    names the queue it was first on)."""
    props = copy.properties
    if "_AMQ_ORIG_QUEUE" not in props:
        props["_AMQ_ORIG_QUEUE"].string_value = ref.queue.name
        props["_AMQ_ORIG_ROUTING_TYPE"].string_value = routing_type_name(ref.queue.routing_type)
    if "_AMQ_ORIG_MESSAGE_ID" not in props:
        props["_AMQ_ORIG_ADDRESS"].string_value = ref.msg.address
        props["_AMQ_ORIG_MESSAGE_ID"].int_value = ref.msg.id


def server_message(copy: mpb.Message) -> ServerMessage:
    return ServerMessage.of(copy, copy.ByteSize() + (copy.body_size if copy.large else 0))


def transfer(broker: MovingNode, ref: Ref, moved: ServerMessage, queues: list[Queue], kind: int) -> list[Ref]:
    """The one way a message changes queue on this node (dead letter, expiry,
    an operator's move or retry): its copy `moved` is staged for `queues` and
    `ref` released with event `kind`, in the same synchronous step, so both
    go into the same journal batch — one transaction: after a crash at any
    moment the message is in exactly one of the two places. Returns the
    copy's references, to enqueue once stored (Delivery.enqueue_when_stored)."""
    if moved.large:  # before the release, which may drop the body it shares
        copy_body(broker, ref.msg, moved)
    staged = broker.sender.stage(moved, queues)
    broker.delivery.release(ref, kind)
    return staged
