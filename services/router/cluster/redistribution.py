"""Message redistribution (address setting `redistribution-delay`).

A queue whose messages no local consumer will take — its last consumer left,
or none of its consumers' filters matches — while a node of the cluster has
a consumer for them on the queue of the same name: after the delay
(-1 = never, 0 = at once), its waiting messages move there, in order, each to
a node with a matching consumer (round robin). A local consumer that comes
back within the delay cancels the move. As long as the queue stays without
a local consumer, messages that arrive later and consumers that appear
elsewhere later are redistributed too (Artemis keeps a redistributor on the
queue the same way). Paged messages follow a page at a time, in order: the
node reads the next page of a redistributing queue as it would for a
consumer. Only with message-load-balancing ON_DEMAND or
OFF_WITH_REDISTRIBUTION.

A moved message is a copy in the link's store-and-forward queue, stored in
the same journal batch as the release of the original (event REMOVED), so a
crash leaves it in one place or the other.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from meshmq.v1 import journal_pb2 as jpb

from .balancing import OFF_WITH_REDISTRIBUTION, ON_DEMAND

if TYPE_CHECKING:
    from ..broker import Broker
    from ..queue import Queue

log = logging.getLogger("meshmq.cluster")
REDISTRIBUTING_MODES = (ON_DEMAND, OFF_WITH_REDISTRIBUTION)


class Redistribution:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._timers: dict[Queue, asyncio.TimerHandle] = {}
        # Queues whose delay has passed with no local consumer: they redistribute as things change.
        self.active: set[Queue] = set()

    def _wanted_elsewhere(self, q: Queue) -> bool:
        addr = q.home
        group = addr.remote.get(q.name) if addr is not None else None
        return bool(group) and group[0].link.load_balancing in REDISTRIBUTING_MODES and any(
            rb.consumer_filters for rb in group)

    def consider(self, q: Queue) -> None:
        """Something changed for `q` (a consumer left, a remote consumer came):
        start its delay if it now has messages for elsewhere and no local taker."""
        if q.deleted or q.consumers or q in self.active or q in self._timers or not (q.waiting or q.paged_messages):
            return
        if not self._wanted_elsewhere(q):
            return
        delay = self.broker.settings(q.address).redistribution_delay
        if delay < 0:
            return
        if delay == 0:
            self._start(q)
        else:
            self._timers[q] = asyncio.get_running_loop().call_later(delay / 1000, self._start, q)

    def consumer_attached(self, q: Queue) -> None:
        timer = self._timers.pop(q, None)
        if timer is not None:
            timer.cancel()
        self.active.discard(q)

    def _start(self, q: Queue) -> None:
        self._timers.pop(q, None)
        if q.deleted or q.consumers:
            return
        self.active.add(q)
        self.run(q)
        # Paged messages follow a page at a time: the dispatch reads the next
        # page of a redistributing queue as it reads one for a consumer.
        self.broker.schedule_dispatch(q)

    def run(self, q: Queue) -> None:
        """Move every waiting message of `q` that a remote consumer would take."""
        if q.deleted or q.consumers:
            self.active.discard(q)
            return
        addr = q.home
        group = addr.remote.get(q.name) if addr is not None else None
        if not group:
            return
        positions = addr.cluster_round_robin
        moving = []
        for ref in q.iter_waiting():
            msg = ref.msg
            takers = [rb for rb in group if rb.accepts(msg) and rb.has_consumer_for(msg)]
            if takers:
                position = positions.get(q.name, 0)
                positions[q.name] = position + 1
                moving.append((ref, takers[position % len(takers)]))
        if not moving:
            return
        q.remove_waiting({id(ref) for ref, _ in moving})
        b = self.broker
        staged = []
        for ref, rb in moving:
            msg = ref.msg
            msg.forwards = {rb.link: [rb.key]}
            staged.extend(b.stage(msg, []))
            b.release(ref, jpb.REMOVED)
        # All at once, after the commit: a non-durable copy must not overtake a durable one.
        b.enqueue_when_stored(staged)
        log.info("redistributed %d messages of queue %s", len(moving), q.name)

    def forget(self, q: Queue) -> None:
        self.consumer_attached(q)
