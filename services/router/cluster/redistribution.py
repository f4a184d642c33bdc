"""Message redistribution (address setting `redistribution-delay`).

A queue's messages are left behind when no local consumer will take them —
the queue has no local consumer, or its consumers' filters all refuse them
(those are parked, services/router/queue.py) — while another node of the
cluster offers the queue of the same name with a consumer. Only with
message-load-balancing ON_DEMAND or OFF_WITH_REDISTRIBUTION.

The need is noticed on events: the queue's last local consumer leaving, the
address's remote bindings changing (a consumer appearing elsewhere), the
queue being created, a dispatch parking a message. After the delay (-1 =
never, 0 = at once; always 0 for a connection's temporary queue, which
exists on each node its connection consumes it on) the queue redistributes until a local consumer attaches,
as the redistributor Artemis adds to such a queue does: whatever it holds
then and whatever joins it later moves, in order, each message to a node
with a matching consumer (round robin); with local consumers, only the
parked messages move. A local consumer that comes back within the delay
cancels the move.

Whether a queue redistributes does not depend on what it holds when the
event happens. A consumer that closes, a session that ends, a client whose
connection drops all give their unacknowledged deliveries back after the
consumer is gone (to the head of the queue, in their original order), and
so do a rollback and a redelivery-delay running out. Deciding on the queue's
content when its last consumer left missed exactly those messages (issue
25): now they move as they come back.

Paged messages follow a page at a time, in order: the node reads the next
page of a redistributing queue as it would for a consumer.

A moved message is a copy in the link's store-and-forward queue, stored in
the same journal batch as the release of the original (event REMOVED, with
the delivery count reached here), so a crash leaves it in one place or the
other. Its delivery count starts again on the target.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from meshmq.config.address_settings import ResolvedAddressSettings
from meshmq.v1 import journal_pb2 as jpb

from ..delivery import Delivery
from ..queue import Queue
from ..send_pipeline import SendPipeline
from .balancing import OFF_WITH_REDISTRIBUTION, ON_DEMAND

log = logging.getLogger("meshmq.cluster")
REDISTRIBUTING_MODES = (ON_DEMAND, OFF_WITH_REDISTRIBUTION)


class RedistributingNode(Protocol):
    """What redistribution asks of the node (broker.py's Broker, which builds it)."""

    settings: Callable[[str], ResolvedAddressSettings]
    delivery: Delivery
    sender: SendPipeline


class Redistribution:
    def __init__(self, broker: RedistributingNode) -> None:
        self.broker = broker
        self._timers: dict[Queue, asyncio.TimerHandle] = {}
        # Queues whose delay has passed with no local consumer: they redistribute as things change.
        self.active: set[Queue] = set()

    def _wanted_elsewhere(self, q: Queue) -> bool:
        addr = q.home
        group = addr.remote.get(q.name) if addr is not None else None
        return bool(group) and group[0].link.load_balancing in REDISTRIBUTING_MODES and any(
            rb.consumer_filters for rb in group)

    @staticmethod
    def _left_behind(q: Queue) -> bool:
        """No local consumer takes (some of) its messages: it has none, or some are parked."""
        return not q.consumers or q.has_parked

    def consider(self, q: Queue) -> None:
        """Something changed for `q` (its last consumer left, a remote consumer
        came, it was created, a message was parked): start its delay if its
        messages may now be left behind here and wanted elsewhere. A
        non-destructive queue's messages stay for every reader: never moved."""
        if q.deleted or q.non_destructive or q in self.active or q in self._timers or not self._left_behind(q):
            return
        if not self._wanted_elsewhere(q):
            return
        # A connection's temporary queue exists on each node the connection consumes it on
        # (client_connections.py): what waits where none of its consumers are moves at once.
        connection_queue = q.owner is not None and q.owner.connection is not None
        delay = 0 if connection_queue else self.broker.settings(q.address).redistribution_delay
        if delay < 0:
            return
        if delay == 0:
            self._start(q)
        else:
            self._timers[q] = asyncio.get_running_loop().call_later(delay / 1000, self._start, q)

    def parked(self, q: Queue, refs: list) -> None:
        """A dispatch of `q` parked `refs`: none of its local consumers takes them."""
        if q in self.active:
            self._move(q, refs)
        else:
            self.consider(q)

    def consumer_attached(self, q: Queue) -> None:
        timer = self._timers.pop(q, None)
        if timer is not None:
            timer.cancel()
        self.active.discard(q)

    def _start(self, q: Queue) -> None:
        self._timers.pop(q, None)
        if q.deleted or not self._left_behind(q):
            return
        self.active.add(q)
        self.run(q)
        # Paged messages follow a page at a time: the dispatch reads the next
        # page of a redistributing queue as it reads one for a consumer.
        self.broker.delivery.schedule_dispatch(q)

    def run(self, q: Queue) -> None:
        """Look at every message of `q` that no local consumer takes (with
        none, every waiting one; else the parked ones) and move those a remote
        consumer would take."""
        self._move(q, q.iter_parked() if q.consumers else q.iter_waiting())

    def run_new(self, q: Queue) -> None:
        """The dispatch of a redistributing queue: with no local consumer, look
        at what joined it since the last look (the rest is parked); with
        consumers, `parked` is told what there is to look at."""
        if not q.consumers:
            self._move(q, q.iter_unparked())

    def _move(self, q: Queue, candidates) -> None:
        if q.deleted:
            self.active.discard(q)
            return
        addr = q.home
        group = addr.remote.get(q.name) if addr is not None else None
        if not group:
            return
        moving = []
        grouping = getattr(self.broker, "grouping", None)
        for ref in candidates:
            msg = ref.msg
            if grouping is not None and grouping.group_for(msg.proto, msg.address):
                continue  # clustered grouping: the group's messages stay on the node decided for it
            takers = [rb for rb in group if rb.accepts(msg) and rb.has_consumer_for(msg)]
            if takers:
                moving.append((ref, _next(addr.cluster_round_robin, q.name, takers)))
        if moving:
            self._send_away(q, moving)
            log.info("redistributed %d messages of queue %s", len(moving), q.name)
        if not q.consumers:
            # What no node takes now is set aside until the bindings change or
            # a consumer attaches: later dispatches look only at what is new.
            q.park_all()

    def _send_away(self, q: Queue, moving: list) -> None:
        """Move each (message, remote binding) of `moving` out of `q` to that binding's node."""
        q.remove_waiting({id(ref) for ref, _ in moving})
        b = self.broker
        staged = []
        for ref, rb in moving:
            msg = ref.msg
            msg.forwards = {rb.link: [rb.key]}
            staged.extend(b.sender.stage(msg, []))
            b.delivery.release(ref, jpb.REMOVED)
        # All at once, after the commit: a non-durable copy must not overtake a durable one.
        b.delivery.enqueue_when_stored(staged)

    def hand_over(self, q: Queue) -> int:
        """`q` is about to be deleted while what it holds is still wanted: a
        connection's temporary queue whose last session on this node ended
        while the connection holds copies of it on other nodes
        (client_connections.py). Move every message waiting in it to those
        copies, in order — to one whose consumers take it when there is one,
        else to any — and say how many moved (none without a copy elsewhere)."""
        addr = q.home
        group = addr.remote.get(q.name) if addr is not None else None
        if not group:
            return 0
        moving = []
        for ref in q.iter_waiting():
            msg = ref.msg
            takers = [rb for rb in group if rb.accepts(msg) and rb.has_consumer_for(msg)] or [
                rb for rb in group if rb.accepts(msg)]
            if takers:
                moving.append((ref, _next(addr.cluster_round_robin, q.name, takers)))
        if moving:
            self._send_away(q, moving)
            log.info("handed %d messages of temporary queue %s to its copies on other nodes", len(moving), q.name)
        return len(moving)

    def forget(self, q: Queue) -> None:
        self.consumer_attached(q)


def _next(positions: dict[str, int], name: str, takers: list):
    """The next of `takers` for queue `name`, round robin (the address's cluster positions)."""
    position = positions.get(name, 0)
    positions[name] = position + 1
    return takers[position % len(takers)]
