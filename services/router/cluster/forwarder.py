"""The forwarding half of a link: one store-and-forward queue sent to the
node at the other end, within a confirmation window, with duplicate ids.

Every link that carries messages has one: a cluster connection's bridge
(bridge.py, the side that dials), and both ends of a duplex network link
(services/router/network/), which forward over the stream they share. The
forwarder is a consumer of its store-and-forward queue like any other
(`DeliveryTarget`): the queue hands it messages while it has credit, and its
credit is the confirmation window (bytes sent and not yet confirmed). Each
event-loop turn's deliveries go as one ForwardBatch; the other end confirms
a batch once it is committed, and only then are the messages acknowledged
here — so a message is in the other node's store or in ours, never in
neither. A link that breaks gives its unconfirmed messages back to the head
of the queue, uncounted (the application never saw them), and they go again
on the next link with the same duplicate id: the other end drops what it
already has.

Frames are built with the class of the stream's direction (`frame`:
LinkRequest from the dialer, LinkResponse from the acceptor: both have
`forward` and `chunk`), and written by `write_frames`, the one writer of a
link's stream, which keeps a large message's chunks right after its batch.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import messages_pb2 as mpb

from ..consumer import ServerConsumer
from ..large_body import send_body, send_bytes
from ..message import Ref
from ..routing import ANYCAST, ROUTE_SEP, ROUTE_TO
from .bindings import TEMPORARY_MARK

if TYPE_CHECKING:
    from ..broker import Broker

# A moved message's delivery count, on its store-and-forward copy (scale-down).
DELIVERY_COUNT = "_MQ_DELIVERY_COUNT"
# At most this many messages in one ForwardBatch (the window bounds the bytes).
MAX_BATCH_MESSAGES = 1000

Write = Callable[[Any], Awaitable[Any]]


@dataclass(slots=True)
class Outgoing:
    """A ForwardBatch on its way out: written, then (a large message) its body
    in chunks; the forwarder is told once it is all written, because the
    confirm's deadline (call-timeout) runs from then."""

    frame: Any
    forwarder: Forwarder
    ref: Ref | None = None
    inline: bytes | None = None


async def write_frames(out: asyncio.Queue, write: Write) -> None:
    """Write what `out` holds, in order, until None: frames as they are,
    forwards with their bodies right after them."""
    while True:
        item = await out.get()
        if item is None:
            return
        if not isinstance(item, Outgoing):
            await write(item)
            continue
        await write(item.frame)
        batch_id = item.frame.forward.batch_id
        if item.ref is not None:
            await item.forwarder.write_body(write, batch_id, item.ref, item.inline)
        item.forwarder.written(batch_id)


class Forwarder(ABC):
    """Forwards the store-and-forward queue named by `sf_name()` over a link
    stream (`attach`), `window` bytes unconfirmed at most (<= 0: unbounded)."""

    def __init__(self, broker: Broker, name: str, client_id: str, *, frame: type, window: int,
                 min_large_message_size: int, duplicate_ids: bool) -> None:
        self.broker = broker
        self.name = name
        # DeliveryTarget: what management shows for the sf queue's consumer.
        self.id = f"bridge {name}"
        self.client_id = client_id
        self.frame = frame
        self.window = window
        self.min_large_message_size = min_large_message_size
        self.duplicate_ids = duplicate_ids
        self.target_node_id = ""
        # Counters shown by management.
        self.routed = 0  # messages routed into the sf queue for this link
        self.forwarded = 0
        self.batches = 0  # ForwardBatch frames sent
        self.confirmed = 0
        self._sf = None
        self._consumer: ServerConsumer | None = None
        self._sink: asyncio.Queue | None = None
        self._unconfirmed: dict[int, list[int]] = {}
        # When each unconfirmed batch was fully written (monotonic s): call-timeout runs from there.
        self._written_at: dict[int, float] = {}
        self._next_batch = 1
        self._flush_scheduled = False

    @property
    def local_node_id(self) -> str:
        return self.broker.node_id

    @property
    def pending(self) -> int:
        """Messages waiting in, or forwarded and unconfirmed from, the sf queue."""
        q = self._sf
        return 0 if q is None else q.waiting + q.delivering + q.incoming + q.paged_messages

    @abstractmethod
    def sf_name(self) -> str:
        """The store-and-forward queue's name (it names the target node: known once linked)."""

    def store_and_forward_queue(self):
        """This link's queue: messages routed to the target wait here until confirmed."""
        if self._sf is None or self._sf.deleted:
            name = self.sf_name()
            q = self.broker.queues.get(name)
            if q is None:
                q = self.broker.create_queue(name, name, ANYCAST)
            self._sf = q
        return self._sf

    def forget_queue(self) -> None:
        """The target is another node now: its queue is another one."""
        self._sf = None

    # ------------------------------------------------------------ the link's life

    def attach(self, out: asyncio.Queue) -> None:
        """Start forwarding into `out` (the link's writer drains it, `write_frames`)."""
        q = self.store_and_forward_queue()
        self._sink = out
        self._unconfirmed.clear()
        self._written_at.clear()
        self._consumer = ServerConsumer(self, 0, q, None, "", self.window if self.window > 0 else -1)
        q.add_consumer(self._consumer)
        self.broker.delivery.schedule_dispatch(q)

    def detach(self) -> None:
        """Take back what was forwarded and not confirmed: to the head of the queue, uncounted."""
        c = self._consumer
        if c is not None:
            self._consumer = None
            c.closed = True
            q = c.queue
            if c in q.consumers:
                q.consumers.remove(c)
            self.broker.delivery.cancel_in_order(c.take_back(0))
        self._unconfirmed.clear()
        self._written_at.clear()
        self._sink = None

    def written(self, batch_id: int) -> None:
        self._written_at[batch_id] = time.monotonic()

    def overdue(self, timeout_s: float) -> int | None:
        """The oldest batch written more than `timeout_s` ago and not confirmed, if any."""
        if not self._written_at:
            return None
        batch_id, written = min(self._written_at.items(), key=lambda item: item[1])
        return batch_id if time.monotonic() - written > timeout_s else None

    # ------------------------------------------------------------ forwarding (DeliveryTarget)

    def delivered(self, consumer: ServerConsumer, delivery_id: int, ref: Ref) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def queue_deleted(self, consumer: ServerConsumer) -> None:
        consumer.closed = True
        self._sf = None

    def _flush(self) -> None:
        """This turn's deliveries as ForwardBatches; a large message (or one
        bigger than min-large-message-size) alone, its body in chunks after it."""
        self._flush_scheduled = False
        c = self._consumer
        if c is None or not c.pending or self._sink is None:
            return
        pending, c.pending = c.pending, []
        run: list[tuple[int, Ref]] = []
        for item in pending:
            msg = item[1].msg
            if msg.large or msg.size > self.min_large_message_size:
                self._send_batch(run)
                run = []
                self._send_large(item)
            else:
                run.append(item)
                if len(run) >= MAX_BATCH_MESSAGES:
                    self._send_batch(run)
                    run = []
        self._send_batch(run)

    def stamp(self, message: mpb.Message) -> None:
        """Mark a message on its way out (a network link adds this node to its path)."""

    def order_version(self) -> int:
        """The version a batch holding a request carries: the target takes it
        once it has what this node offered it up to that version (a cluster
        bridge: this node's bindings, bindings_order.py; a network link
        overrides it with its demand, network/demand_order.py)."""
        return self.broker.bindings_version

    def _forwarded(self, fwd: cpb.ForwardedMessage, ref: Ref) -> bool:
        """Fill `fwd` from `ref`; whether the target must have this node's bindings
        as new as now before taking it (bindings_order.py): a request (its reply
        queue must be known there), or a message to a temporary queue there —
        whose copy of a connection's temporary queue here may just have gone,
        which the target must know before its redistribution could send the
        message straight back."""
        m = fwd.message
        m.CopyFrom(ref.msg.proto)
        ordered = bool(m.reply_to)
        route = m.properties.pop(ROUTE_TO, None)
        if route is not None:
            keys = route.string_value
            fwd.route_to.extend(keys.split(ROUTE_SEP))
            ordered = ordered or TEMPORARY_MARK in keys
        count = m.properties.pop(DELIVERY_COUNT, None)
        if count is not None:
            fwd.delivery_count = count.int_value
        if self.duplicate_ids:
            fwd.bridge_duplicate_id = f"{self.broker.node_id}:{ref.msg.id}"
        self.stamp(m)
        return ordered

    def _new_batch(self, items: list[tuple[int, Ref]]) -> cpb.ForwardBatch:
        batch = cpb.ForwardBatch(batch_id=self._next_batch)
        self._next_batch += 1
        self._unconfirmed[batch.batch_id] = [did for did, _ in items]
        self.forwarded += len(items)
        self.batches += 1
        return batch

    def _send_batch(self, items: list[tuple[int, Ref]]) -> None:
        if not items:
            return
        batch = self._new_batch(items)
        ordered = False
        for _, ref in items:
            ordered |= self._forwarded(batch.messages.add(), ref)
        if ordered:
            batch.bindings_version = self.order_version()
        self._sink.put_nowait(Outgoing(self.frame(forward=batch), self))

    def _send_large(self, item: tuple[int, Ref]) -> None:
        ref = item[1]
        batch = self._new_batch([item])
        fwd = batch.messages.add()
        if self._forwarded(fwd, ref):
            batch.bindings_version = self.order_version()
        m = fwd.message
        inline = None
        if not m.large:  # an ordinary message over min-large-message-size: its body goes in chunks too
            inline = m.body
            m.large = True
            m.body_size = len(inline)
            m.ClearField("body")
        self._sink.put_nowait(Outgoing(self.frame(forward=batch), self, ref, inline))

    async def write_body(self, write: Write, batch_id: int, ref: Ref, inline: bytes | None) -> None:
        """A large message's body after its header, by the large-body transfer
        (HTTP/2 flow control paces its reads); an ordinary message's body
        (`inline`) in pieces of min-large-message-size."""
        frame = self.frame

        async def chunk(data: bytes, last: bool) -> bool:
            await write(frame(chunk=cpb.ForwardChunk(batch_id=batch_id, data=data, last=last)))
            return True

        if inline is None:
            await send_body(self.broker, ref.msg, chunk)
        else:
            await send_bytes(inline, self.min_large_message_size, chunk)

    def take_confirm(self, confirm: cpb.ForwardConfirm) -> None:
        """The other end stored a batch: acknowledge its messages here."""
        self._written_at.pop(confirm.batch_id, None)
        dids = self._unconfirmed.pop(confirm.batch_id, None)
        c = self._consumer
        if dids is None or c is None:
            return
        if confirm.refused:
            raise ConnectionError(f"the target refused a batch: {confirm.refused}")
        for did in dids:
            ref = c.delivering.pop(did, None)
            if ref is None:
                continue
            self.broker.delivery.acknowledge(ref)
            c.grant(ref.msg.size)
            self.confirmed += 1
            self.settled(ref)
        self.broker.delivery.schedule_dispatch(c.queue)

    def settled(self, ref: Ref) -> None:
        """`ref`'s message is stored at the other end (a network subscription
        counts its messages in flight by this)."""
