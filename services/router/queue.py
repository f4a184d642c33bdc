"""A queue: its waiting messages by priority, its consumers, its counters.

The queue owns its messages; consumers hold only what they are delivering.
Dispatch is round robin over consumers that have credit and whose filter
matches, highest priority first, FIFO within a priority.

A waiting message that no attached consumer's filter accepts is parked: set
aside, in order, so that later dispatches do not look at it again — with a
large backlog nobody selects, rescanning it on every send stalled the whole
node (issue #9). Parked messages still wait in the queue (counted, purged,
expired); they return to their place when a consumer attaches, the only
event that can make one of them deliverable. They are also what
redistribution may send to a node whose consumer takes them, and a queue
with no consumer parks what redistribution found no node for, so that it
looks only at what arrives after (services/router/cluster/redistribution.py).
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections import deque
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING

from meshmq.v1 import messages_pb2 as mpb

from .message import Ref

if TYPE_CHECKING:
    from .temporary_queues import Owner
    from .consumer import ServerConsumer
    from meshmq.selector import Selector

PRIORITIES = 10
_NO_CREDIT = object()
_PARK = object()
_SEQ = attrgetter("seq")


def now_ms() -> int:
    return int(time.time() * 1000)


class Queue:
    def __init__(
        self,
        queue_id: int,
        name: str,
        address: str,
        routing_type: int,
        filter_text: str,
        selector: Selector | None,
        *,
        durable: bool,
        temporary: bool = False,
        auto_created: bool = False,
        owner: Owner | None = None,
    ) -> None:
        self.id = queue_id
        self.name = name
        self.address = address
        self.routing_type = routing_type
        self.filter_text = filter_text
        self.selector = selector
        self.durable = durable
        self.temporary = temporary
        # The session a temporary queue belongs to (temporary_queues.py); None for every other queue.
        self.owner = owner
        self.auto_created = auto_created
        self._buckets: list[deque[Ref]] = [deque() for _ in range(PRIORITIES)]
        # Waiting messages no attached consumer accepts, per priority, in arrival order.
        self._parked: list[deque[Ref]] = [deque() for _ in range(PRIORITIES)]
        self._next_seq = 1
        self.waiting = 0  # in the buckets and parked
        # References routed here whose journal commit is still in flight: on
        # their way in, so the queue is not empty (it may not be auto-deleted).
        self.incoming = 0
        # References waiting out a redelivery-delay, with their timers. They
        # belong to the queue: counted, purged, deleted with it.
        self.delayed: dict[Ref, asyncio.TimerHandle] = {}
        # Paging (services/router/paging.py): messages in the store only, read back
        # in id order after `page_cursor` as the queue drains; `paging_in` are on
        # their way into the page (commit in flight).
        self.paged_messages = 0
        self.paged_bytes = 0
        self.paging_in = 0
        self.page_cursor = 0
        self.depaging = False
        # The task reading its next page while `depaging` (Broker.page_in).
        self.page_reader: asyncio.Task | None = None
        # Paused by management (Artemis pause()): it still receives messages but
        # the broker dispatches none until resumed. Not persisted: a restart resumes.
        self.paused = False
        self.consumers: list[ServerConsumer] = []
        # Its Address (set when bound to it): memory is counted there (paging.py).
        self.home = None
        self._rr = 0
        self.deleted = False
        self.deleting = False  # Broker.delete_queue is closing its consumers
        # Counters, as Artemis's queue control reports them.
        self.delivering = 0
        self.messages_added = 0
        self.messages_acknowledged = 0
        self.messages_expired = 0
        self.messages_killed = 0

    def __repr__(self) -> str:
        return f"Queue({self.name!r} on {self.address!r}, waiting={self.waiting})"

    @property
    def message_count(self) -> int:
        """Messages the queue holds: waiting (in memory or paged), delivering, and in a redelivery delay."""
        return self.waiting + self.delivering + len(self.delayed) + self.paged_messages

    @property
    def scheduled_count(self) -> int:
        """Of message_count, those in a redelivery delay (Artemis's ScheduledCount)."""
        return len(self.delayed)

    @property
    def holds_nothing(self) -> bool:
        """Nothing waiting, paged, delivering, delayed or on its way in: safe to auto-delete."""
        return not (self.waiting or self.delivering or self.delayed or self.incoming or self.paged_messages)

    @property
    def has_page(self) -> bool:
        """Messages of this queue are paged or on their way into the page: new ones must follow them there."""
        return bool(self.paged_messages or self.paging_in)

    @property
    def routing_type_name(self) -> str:
        return mpb.RoutingType.Name(self.routing_type)

    def accepts(self, msg) -> bool:
        """Whether a routed message belongs in this queue (its filter)."""
        return self.selector is None or self.selector.matches(msg.lookup)

    def add(self, ref: Ref) -> None:
        ref.seq = self._next_seq
        self._next_seq += 1
        self._buckets[ref.msg.priority].append(ref)
        self.waiting += 1
        self.messages_added += 1

    def add_back(self, ref: Ref) -> None:
        """A cancelled delivery goes back to the head of its priority (Artemis does the same)."""
        self._buckets[ref.msg.priority].appendleft(ref)
        self.waiting += 1

    def has_consumer_for(self, msg) -> bool:
        """Some attached consumer's filter takes `msg` (ON_DEMAND balancing asks)."""
        return any(c.selector is None or c.selector.matches(msg.lookup) for c in self.consumers)

    def add_consumer(self, consumer: ServerConsumer) -> None:
        self.consumers.append(consumer)
        self._unpark()

    def _unpark(self) -> None:
        """Parked messages go back to their places (a new consumer may accept them)."""
        for p, parked in enumerate(self._parked):
            if parked:
                self._buckets[p] = deque(heapq.merge(parked, self._buckets[p], key=_SEQ))
                parked.clear()

    def take_all(self) -> list[Ref]:
        """Every waiting and delayed reference, taken out (purge, delete)."""
        self._unpark()
        refs = [r for b in self._buckets for r in b]
        for b in self._buckets:
            b.clear()
        self.waiting = 0
        for ref, timer in self.delayed.items():
            timer.cancel()
            refs.append(ref)
        self.delayed.clear()
        return refs

    def remove_waiting(self, ids: set[int]) -> None:
        """Take the waiting references whose id() is in `ids` out of the queue
        (redistribution moves them); the others keep their order."""
        for lists in (self._buckets, self._parked):
            for p, refs in enumerate(lists):
                if refs:
                    kept = deque(r for r in refs if id(r) not in ids)
                    self.waiting -= len(refs) - len(kept)
                    lists[p] = kept

    def take_waiting(self, wanted: Callable[[Ref], bool] | None, limit: int) -> list[Ref]:
        """Take out up to `limit` waiting references that `wanted` accepts (None:
        any), in delivery order; the others keep their places. Then, while
        `limit` allows, matching references in a redelivery delay (their timers
        cancelled). Looks only as far as it must: taking from the head of a
        queue costs the batch, not the backlog."""
        taken: list[Ref] = []
        for p in range(PRIORITIES - 1, -1, -1):
            if len(taken) >= limit:
                break
            parked, bucket = self._parked[p], self._buckets[p]
            kept_parked: list[Ref] = []
            kept_bucket: list[Ref] = []
            while len(taken) < limit and (parked or bucket):
                src = parked if parked and (not bucket or parked[0].seq < bucket[0].seq) else bucket
                ref = src.popleft()
                if wanted is None or wanted(ref):
                    taken.append(ref)
                else:
                    (kept_parked if src is parked else kept_bucket).append(ref)
            parked.extendleft(reversed(kept_parked))
            bucket.extendleft(reversed(kept_bucket))
        self.waiting -= len(taken)
        if len(taken) < limit and self.delayed:
            for ref in [r for r in self.delayed if wanted is None or wanted(r)][: limit - len(taken)]:
                self.delayed.pop(ref).cancel()
                taken.append(ref)
        return taken

    def delivering_refs(self) -> list[Ref]:
        """What its consumers are delivering (unacknowledged), in arrival order."""
        return sorted((r for c in self.consumers for r in c.delivering.values()), key=_SEQ)

    def iter_waiting(self):
        for p in range(PRIORITIES - 1, -1, -1):
            yield from heapq.merge(self._parked[p], self._buckets[p], key=_SEQ)

    @property
    def has_parked(self) -> bool:
        """Some waiting message is one no attached consumer's filter accepts."""
        return any(self._parked)

    def iter_parked(self):
        """The parked messages, in delivery order."""
        for p in range(PRIORITIES - 1, -1, -1):
            yield from self._parked[p]

    def iter_unparked(self):
        """The waiting messages that are not parked, priority first."""
        for p in range(PRIORITIES - 1, -1, -1):
            yield from self._buckets[p]

    def park_all(self) -> None:
        """Park every waiting message (a queue with no consumer: redistribution
        found no node for them); each keeps its place by arrival."""
        for p, bucket in enumerate(self._buckets):
            if bucket:
                parked = self._parked[p]
                arrived = sorted(bucket, key=_SEQ)
                if not parked or parked[-1].seq < arrived[0].seq:
                    parked.extend(arrived)  # the common case: all newer than the parked ones
                else:
                    self._parked[p] = deque(heapq.merge(parked, arrived, key=_SEQ))
                bucket.clear()

    def remove_expired(self, now: int) -> list[Ref]:
        """Take out every waiting message whose expiration has passed (the expiry
        reaper), in delivery order: they reach the expiry address in that order."""
        out: list[Ref] = []
        for p in range(PRIORITIES - 1, -1, -1):
            expired: list[list[Ref]] = []
            for lists in (self._parked, self._buckets):
                refs = lists[p]
                gone = [r for r in refs if r.msg.expiration and r.msg.expiration <= now]
                if gone:
                    lists[p] = deque(r for r in refs if not (r.msg.expiration and r.msg.expiration <= now))
                    expired.append(gone)
            out.extend(heapq.merge(*expired, key=_SEQ))
        self.waiting -= len(out)
        return out

    def dispatch(self, expire) -> list[Ref] | None:
        """Hand waiting messages to consumers with credit; returns those it
        parked, if any (redistribution may send them to another node).

        `expire(ref)` is called for a message found expired on its way out.
        A message only a consumer without credit accepts stays where it is; one
        no attached consumer accepts is parked (module docstring).
        """
        if not self.consumers or not self.waiting:
            return None
        now = now_ms()
        skipped: list[Ref] = []
        parked: list[Ref] | None = None
        for p in range(PRIORITIES - 1, -1, -1):
            bucket = self._buckets[p]
            while bucket:
                ref = bucket[0]
                exp = ref.msg.expiration
                if exp and exp <= now:
                    bucket.popleft()
                    self.waiting -= 1
                    expire(ref)
                    continue
                consumer = self._pick(ref)
                if consumer is _NO_CREDIT:
                    self._put_back(skipped)
                    return parked
                bucket.popleft()
                if consumer is None:
                    skipped.append(ref)
                    continue
                if consumer is _PARK:
                    self._parked[p].append(ref)
                    if parked is None:
                        parked = []
                    parked.append(ref)
                    continue
                self.waiting -= 1
                self.delivering += 1
                consumer.deliver(ref)
        self._put_back(skipped)
        return parked

    def _put_back(self, skipped: list[Ref]) -> None:
        for ref in reversed(skipped):
            self._buckets[ref.msg.priority].appendleft(ref)

    def _pick(self, ref: Ref):
        consumers = self.consumers
        n = len(consumers)
        if n == 1:  # the common case, without the round robin's arithmetic
            c = consumers[0]
            if c.ready and c.selector is None:
                self._rr = 0  # as the loop below leaves it with one consumer
                return c
        any_credit = False
        for i in range(n):
            idx = (self._rr + i) % n
            c = consumers[idx]
            if not c.ready:
                continue
            any_credit = True
            if c.selector is None or c.selector.matches(ref.msg.lookup):
                self._rr = (idx + 1) % n
                return c
        if not any_credit:
            return _NO_CREDIT
        # No consumer with credit takes it: it waits for one without credit that
        # would, or, if there is none, is parked until another consumer attaches.
        for c in consumers:
            if not c.ready and not c.closed and (c.selector is None or c.selector.matches(ref.msg.lookup)):
                return None
        return _PARK
