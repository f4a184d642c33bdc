"""Message groups on one queue: Artemis's `JMSXGroupID` / `_AMQ_GROUP_ID`.

Messages with the same group id go to one consumer of the queue, in order.
The first message of a group is dispatched as any other (round robin,
consumer priority, filters); the group is then pinned to the consumer that
took it, and the group's later messages go to that consumer only: while it
has no credit they wait (other groups and ungrouped messages pass them), so
a group is never reordered. A message with group sequence -1
(`JMSXGroupSeq` / `_AMQ_GROUP_SEQUENCE`) closes its group once delivered:
the next message of that id picks a consumer afresh.

A consumer that closes (or whose session dies) hands its groups on: its
unacknowledged messages come back to the head of the queue in their order
(Delivery.cancel_in_order) and the first of each group pins it again at the
next dispatch. The pins to a closed consumer are dropped when it is seen
closed (`pick`) and when it leaves the queue (`drop_closed`).

The queue attributes, with Artemis's names and defaults (address settings
`default-group-*` give a queue created without them its values):

- `group-buckets` (-1): -1 tracks every group id (memory grows with the
  ids seen while their consumers live); N > 0 hashes ids into N buckets
  (CRC-32, stable across restarts), a bucket pinned as a group is, so
  memory is bounded and groups sharing a bucket share a consumer; 0
  disables grouping on the queue (group ids are ignored).
- `group-rebalance` (false): a consumer joining resets every group, so
  they spread over all consumers again (Artemis's note holds: a message of
  a group may then be in flight to the old consumer while the next goes to
  the new one); `group-rebalance-pause-dispatch` (false) avoids that by
  dispatching nothing until the in-flight messages are settled. In flight
  means every message of the queue being delivered, grouped or not, as
  Artemis's QueueImpl counts it (`inFlightMessages`, every consumer's
  deliveries). Dispatch resumes as soon as the last is acknowledged or
  returned: the ack or return itself asks for a dispatch (Delivery.settled,
  once per batch), so a queue never waits for an unrelated event (a send,
  a consumer, a credit grant a window -1 consumer never sends).
- `group-first-key` (none): the first message a consumer gets of a group
  newly pinned to it carries this property set to true (e.g.
  `JMSXGroupFirstForConsumer`), on that delivery only, large messages
  included (their header carries it; the stored message is unchanged). A
  message forwarded to another node (cluster bridge, network connector)
  leaves from an internal queue, which does not group: the queue on the
  far node that groups it for its consumer marks it there.

Pins are memory only, as in Artemis: after a restart groups pin afresh.
The attributes are stored with the queue (journal `queues.group_*`) and come
back with it.
Exclusive and non-destructive queues do not group (one consumer already
receives everything in order / every consumer reads everything), nor do the
router's internal queues.

Cost: the queue asks `msg.group` once per dispatched message (queue.py);
only a message with a group id comes here. Acks and returns ask
`q.groups.paused` once per batch (Delivery.settled), never per message.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import TYPE_CHECKING

from meshmq.config.address_settings import ResolvedAddressSettings
from meshmq.v1 import messages_pb2 as mpb

from .queue import NO_CREDIT, PARK, Queue, QueueAttributes

if TYPE_CHECKING:
    from .message import Ref

# JMSXGroupSeq -1: the group closes once this message is delivered.
CLOSES_GROUP = -1


def recovered(attributes: QueueAttributes, settings: ResolvedAddressSettings, internal: bool) -> QueueAttributes:
    """A queue read back from a journal that did not record its group
    attributes (stored before schema version 6 kept them): the address
    settings' defaults now; the router's own queues do not group. A queue
    stored since comes back with the attributes it was created with."""
    if internal:
        return dataclasses.replace(attributes, group_buckets=0)
    return dataclasses.replace(
        attributes, group_rebalance=settings.default_group_rebalance,
        group_rebalance_pause_dispatch=settings.default_group_rebalance_pause_dispatch,
        group_buckets=settings.default_group_buckets, group_first_key=settings.default_group_first_key,
    )


def groups_on(attributes: QueueAttributes) -> bool:
    """Whether a queue of these attributes groups messages."""
    return attributes.group_buckets != 0 and not attributes.exclusive and not attributes.non_destructive


def bucket_of(group_id: str, buckets: int) -> int:
    return zlib.crc32(group_id.encode()) % buckets


class MessageGroups:
    """One queue's pins: group id (or bucket) -> consumer. The consumers are
    the queue's own (queue.ServerConsumer)."""

    def __init__(self, q: Queue, attributes: QueueAttributes) -> None:
        self.q = q
        self.buckets = attributes.group_buckets
        self.first_key = attributes.group_first_key
        self.rebalance = attributes.group_rebalance
        self.pause_dispatch = attributes.group_rebalance_pause_dispatch
        self.pins: dict = {}
        # group-rebalance-pause-dispatch: set by a rebalance while messages are in flight.
        self.paused = False

    def __len__(self) -> int:
        return len(self.pins)

    @property
    def count(self) -> int:
        """Groups (buckets) pinned to a live consumer (Artemis's GroupCount)."""
        self.drop_closed()
        return len(self.pins)

    def pick(self, ref: Ref):
        """The consumer for `ref` (which has a group id), as Queue.pick answers."""
        q = self.q
        msg = ref.msg
        group = msg.group
        key = group if self.buckets < 0 else bucket_of(group, self.buckets)
        pins = self.pins
        c = pins.get(key)
        if c is not None and c.closed:
            del pins[key]
            c = None
        if c is None:
            c = q.pick(ref)
            if c is NO_CREDIT or c is None or c is PARK:
                return c  # nobody to take it now (or parked): no pin
            if msg.proto.group_seq == CLOSES_GROUP:
                return c
            pins[key] = c
            return c if self.first_key is None else _FirstFor(c, self.first_key)
        # Pinned: only its consumer takes it, when that has credit and accepts it.
        if not c.ready:
            return None if any(o.ready for o in q.consumers) else NO_CREDIT
        if c.selector is not None and not c.selector.matches(msg.lookup):
            return None  # it waits for its consumer, as in Artemis
        if msg.proto.group_seq == CLOSES_GROUP:
            del pins[key]
        return c

    def reset(self) -> int:
        """Forget every pin (Artemis's resetAllGroups); returns how many there were."""
        n = len(self.pins)
        self.pins.clear()
        return n

    def consumer_added(self) -> None:
        """group-rebalance: a new consumer resets the groups."""
        if self.rebalance and self.pins:
            self.reset()
            if self.pause_dispatch and self.q.delivering:
                self.paused = True

    def drop_closed(self) -> None:
        """Forget the pins to consumers that have closed."""
        pins = self.pins
        if pins:
            gone = [k for k, c in pins.items() if c.closed]
            for k in gone:
                del pins[k]


class _FirstFor:
    """A consumer as dispatch sees it for the first message of a group newly
    pinned to it: the delivery carries group-first-key."""

    __slots__ = ("consumer", "key")

    def __init__(self, consumer, key: str) -> None:
        self.consumer = consumer
        self.key = key

    def deliver(self, ref: Ref) -> None:
        self.consumer.deliver_first(ref, self.key)


class FirstOfGroup:
    """What a client is sent for a delivery marked first of its group: the
    message with `key` set true (a copy: the stored message is unchanged)."""

    __slots__ = ("ref", "msg")

    def __init__(self, ref: Ref, key: str) -> None:
        proto = mpb.Message()
        proto.CopyFrom(ref.msg.proto)
        proto.properties[key].bool_value = True
        self.ref = ref
        self.msg = _Shown(proto)

    @property
    def delivery_count(self) -> int:
        return self.ref.delivery_count


class _Shown:
    __slots__ = ("proto",)

    def __init__(self, proto: mpb.Message) -> None:
        self.proto = proto


def install(q: Queue, attributes: QueueAttributes) -> None:
    """Give `q` grouping (or none, `groups_on`): called after queue_kinds.install."""
    q.attributes = attributes
    if not groups_on(attributes):
        q.pick_grouped = q.pick
        q.groups = None
        return
    groups = MessageGroups(q, attributes)
    q.groups = groups
    q.pick_grouped = groups.pick
    if attributes.group_rebalance:
        plain_add_consumer = q.add_consumer

        def add_consumer(consumer) -> None:
            plain_add_consumer(consumer)
            groups.consumer_added()

        q.add_consumer = add_consumer
    if attributes.group_rebalance_pause_dispatch:
        plain_dispatch = q.dispatch

        def dispatch(expire):
            if groups.paused:
                if q.delivering:
                    return None
                groups.paused = False
            return plain_dispatch(expire)

        q.dispatch = dispatch
