"""Moving messages to the dead-letter and expiry addresses.

Three steps the broker takes apart from routing: a message that reached
max-delivery-attempts or expired is copied to the dead-letter or expiry
address with the `_AMQ_ORIG_*` properties Artemis sets, and its original
reference released (`move`); a message no queue takes is redirected to the
dead-letter address when send-to-dla-on-no-route is set
(`redirect_unroutable`); and such an address that does not exist yet gets an
anycast queue of its own name (`ensure_target`), so a moved message is kept
rather than silently dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from .message import Ref, ServerMessage
from .queue import now_ms
from .routing import ANYCAST

if TYPE_CHECKING:
    from .broker import Broker


def ensure_target(broker: Broker, address: str) -> None:
    addr = broker.addresses.get(address)
    if (addr is None or not addr.queues) and address not in broker.queues:
        broker.create_queue(address, address, ANYCAST, auto_created=False)


def redirect_unroutable(broker: Broker, msg: ServerMessage, dead_letter_address: str) -> None:
    """Point a message nobody takes at the dead-letter address (routed again by
    the caller). Its routing type goes, as for a moved message: it reaches the
    dead-letter queues whatever it was sent as, and the dead-letter address
    keeps the routing types it was declared with."""
    msg.proto.properties["_AMQ_ORIG_ADDRESS"].string_value = msg.address
    msg.proto.address = msg.address = dead_letter_address
    msg.proto.routing_type = msg.routing_type = 0
    ensure_target(broker, dead_letter_address)


def move(broker: Broker, ref: Ref, target: str | None, kind: int) -> None:
    """Release `ref` with event `kind` and, when `target` is set, store a copy there."""
    src = ref.msg
    broker.release(ref, kind)
    if not target:
        return
    copy = mpb.Message()
    copy.CopyFrom(src.proto)
    props = copy.properties
    props["_AMQ_ORIG_ADDRESS"].string_value = src.address
    props["_AMQ_ORIG_QUEUE"].string_value = ref.queue.name
    props["_AMQ_ORIG_MESSAGE_ID"].int_value = src.id
    if kind == jpb.EXPIRED:
        props["_AMQ_ACTUAL_EXPIRY"].int_value = now_ms()
    copy.address = target
    copy.expiration = 0
    copy.routing_type = 0
    copy.message_id = broker.next_message_id()
    moved = ServerMessage(copy, copy.ByteSize() + (copy.body_size if copy.large else 0))
    ensure_target(broker, target)
    queues = broker.route(moved, moved=True)
    if moved.large:
        broker.copy_large_body(src, moved)
    broker.enqueue_when_stored(broker.stage(moved, queues))
