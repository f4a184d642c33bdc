"""A network subscription: a peer's demand, held on this node as a consumer.

When a peer's consumers want a destination (the demand decider,
demand.py, says which), this node holds a consumer for them: on the queue
itself for queue demand — it competes with local consumers, at its priority
(`decreaseNetworkConsumerPriority`), taking only what its filter (the OR of
the peer's selectors, the message's path and hops) accepts — or on an
internal subscription of the address for topic demand, so that each
published message gets one copy for the peer (a conduit subscription).

What it takes moves to the link's store-and-forward queue, in the same
journal batch as its release here (as redistribution moves a message), and
the link forwards it with its duplicate id: a broken link never leaves a
message in both places. `prefetchSize` bounds the messages moved and not yet
stored at the peer: beyond it the subscription takes nothing more, and the
rest stay on the queue for local consumers or other links.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import TYPE_CHECKING, Protocol

from meshmq.routing_names import INTERNAL_PREFIX
from meshmq.selector import Selector, compile_selector
from meshmq.v1 import journal_pb2 as jpb

from ..consumer import ServerConsumer
from ..message import Ref
from ..routing import ANYCAST, MULTICAST
from .demand import QUEUE, Subscription
from .path import forwarding_filter, not_been_to

if TYPE_CHECKING:
    from ..broker import Broker
    from ..queue import Queue

log = logging.getLogger("meshmq.network")


def subscription_queue_prefix(link_name: str) -> str:
    """Where a link's topic subscriptions live: internal multicast queues under this prefix."""
    return f"{INTERNAL_PREFIX}net.{link_name}."


def is_local_consumer(consumer: ServerConsumer) -> bool:
    """An application's consumer, not a link's (local demand, replay)."""
    return not getattr(consumer.target, "network", False)


class SubscriptionLink(Protocol):
    """What a subscription asks of its link (link.py's NetworkLink)."""

    broker: Broker
    name: str
    client_id: str
    target_node_id: str
    prefetch: int
    message_ttl: int | None
    replay: bool

    def track(self, message_id: int, sub: NetworkSubscription) -> None:
        """Tell `sub` when the copy `message_id` is stored at the peer."""


class _ReplaySelector:
    """`replayWhenNoConsumers`: a message that came from the peer may go back
    to it while this queue has no local consumer (its demand left here)."""

    def __init__(self, strict: Selector, loose: Selector | None, queue: Queue) -> None:
        self._strict = strict
        self._loose = loose
        self._queue = queue

    def matches(self, lookup) -> bool:
        if self._strict.matches(lookup):
            return True
        if any(is_local_consumer(c) for c in self._queue.consumers):
            return False
        return self._loose is None or self._loose.matches(lookup)


class NetworkSubscription:
    """One subscription of `link` (a DeliveryTarget of a consumer on this node)."""

    network = True

    def __init__(self, link: SubscriptionLink, sub: Subscription) -> None:
        self.link = link
        self.sub = sub
        self.id = f"network {link.name}"
        self.client_id = link.client_id
        self.in_flight = 0
        self.consumer: ServerConsumer | None = None
        self._flush_scheduled = False

    # ------------------------------------------------------------ opening and closing

    def open(self) -> None:
        b = self.link.broker
        sub = self.sub
        text = forwarding_filter(sub.selector, self.link.target_node_id, self.link.message_ttl)
        if sub.destination.kind == QUEUE:
            q = self._queue_for(sub.destination.name)
            selector: Selector | _ReplaySelector = compile_selector(text)
            if sub.replay:  # a moved leaf's return: back up, but never twice from this node (loop-free)
                loose_text = " AND ".join([*([f"({sub.selector})"] if sub.selector else []), not_been_to(b.node_id)])
                selector = _ReplaySelector(selector, compile_selector(loose_text), q)
            elif self.link.replay:
                loose = compile_selector(sub.selector) if sub.selector else None
                selector = _ReplaySelector(selector, loose, q)
            consumer = ServerConsumer(self, 0, q, selector, text, 1, priority=sub.priority)
        else:
            q = self._topic_queue(sub.destination.name, text)
            consumer = ServerConsumer(self, 0, q, None, "", 1, priority=sub.priority)
        self.consumer = consumer
        q.add_consumer(consumer)
        b.consumer_attached(q)
        b.delivery.schedule_dispatch(q)

    def _queue_for(self, name: str) -> Queue:
        """The queue the peer's consumers want, created here as ActiveMQ does when missing."""
        b = self.link.broker
        q = b.queues.get(name)
        if q is None:
            b.ensure_address(name, ANYCAST, auto_created=True)
            q = b.create_queue(name, name, ANYCAST, auto_created=True)
        return q

    def queue_name(self) -> str:
        """The internal subscription of a topic subscription (one per conduit, or per remote consumer)."""
        sub = self.sub
        name = subscription_queue_prefix(self.link.name) + sub.destination.name
        if sub.key != f"topic:{sub.destination.name}":  # not a conduit: one per remote consumer
            name += "." + hashlib.sha1(sub.key.encode()).hexdigest()[:12]
        return name

    def _topic_queue(self, address: str, text: str) -> Queue:
        b = self.link.broker
        name = self.queue_name()
        q = b.queues.get(name)
        if q is None:
            b.ensure_address(address, MULTICAST, auto_created=True)
            q = b.create_queue(name, address, MULTICAST, text)
        elif q.filter_text != text:  # the conduit's selectors changed: what comes next is filtered anew
            q.filter_text, q.selector = text, compile_selector(text)
        return q

    def update(self, sub: Subscription) -> None:
        """The demand changed (another selector joined the conduit, a shorter route)."""
        self.close(keep_queue=True)
        self.sub = sub
        self.open()

    def close(self, keep_queue: bool = False) -> None:
        """The demand left: no more is taken (topic: its subscription goes, with
        what it held, as an ActiveMQ network subscription does)."""
        c = self.consumer
        if c is None:
            return
        self._flush()
        self.consumer = None
        c.closed = True
        q = c.queue
        b = self.link.broker
        if c in q.consumers:
            q.consumers.remove(c)
        if self.sub.destination.kind != QUEUE and not keep_queue and not q.deleted:
            b.delete_queue(q.name, force=True)
        elif not q.deleted:
            b.consumer_detached(q)

    # ------------------------------------------------------------ DeliveryTarget

    def delivered(self, consumer: ServerConsumer, delivery_id: int, ref: Ref) -> None:
        self.in_flight += 1
        self._set_credit()
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def queue_deleted(self, consumer: ServerConsumer) -> None:
        consumer.closed = True
        if consumer is self.consumer:
            self.consumer = None

    def _set_credit(self) -> None:
        c = self.consumer
        if c is not None:
            c.credits = 1 if self.in_flight < self.link.prefetch else 0

    def settled(self) -> None:
        """One of its messages is stored at the peer: room for another."""
        self.in_flight -= 1
        c = self.consumer
        if c is not None and c.credits <= 0 and self.in_flight < self.link.prefetch:
            c.credits = 1
            self.link.broker.delivery.schedule_dispatch(c.queue)

    def _flush(self) -> None:
        """Move this turn's deliveries to the link's store-and-forward queue:
        each a copy stored with the release of the original (one batch)."""
        self._flush_scheduled = False
        c = self.consumer
        if c is None or not c.pending:
            return
        pending, c.pending = c.pending, []
        b = self.link.broker
        q = c.queue
        keys = [f"{self.link.target_node_id}/{q.name}"] if self.sub.destination.kind == QUEUE else []
        staged = []
        for did, ref in pending:
            c.delivering.pop(did, None)
            q.delivering -= 1
            msg = ref.msg
            msg.forwards = {self.link: keys}
            copies = b.sender.stage(msg, [])
            for copy in copies:
                self.link.track(copy.msg.id, self)
            staged.extend(copies)
            b.delivery.release(ref, jpb.REMOVED)
        b.delivery.enqueue_when_stored(staged)
