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
from collections.abc import Callable, Iterator
from operator import attrgetter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from meshmq.v1 import messages_pb2 as mpb

from .message import Ref

if TYPE_CHECKING:
    from .temporary_queues import Owner
    from meshmq.selector import Selector


class ServerConsumer(Protocol):
    """What a queue asks of its consumers (services/router/consumer.py is the
    one kind there is; it names its queue, so the queue knows it only by this)."""

    selector: Selector | None
    ready: bool
    closed: bool
    delivering: dict
    priority: int
    cursor: int

    def deliver(self, ref: Ref) -> None: ...

@dataclass(frozen=True, slots=True)
class QueueAttributes:
    """A queue's kind, as Artemis's queue attributes name it (None / False:
    ordinary in that respect); queue_kinds.py gives a queue its behaviour."""

    last_value_key: str | None = None
    non_destructive: bool = False
    exclusive: bool = False
    # Message groups (message_groups.py), Artemis's defaults: every group id
    # tracked, no rebalance, no first-of-group marker.
    group_rebalance: bool = False
    group_rebalance_pause_dispatch: bool = False
    group_buckets: int = -1
    group_first_key: str | None = None

    @property
    def ordinary(self) -> bool:
        """No last-value, non-destructive or exclusive behaviour (queue_kinds.py)."""
        return self.last_value_key is None and not self.non_destructive and not self.exclusive

    @property
    def default_groups(self) -> bool:
        """Grouping as Artemis's defaults have it."""
        return (self.group_buckets == -1 and self.group_first_key is None and not self.group_rebalance
                and not self.group_rebalance_pause_dispatch)

    def describe(self) -> str:
        """For the log: "last-value-key=k, non-destructive, exclusive, group-buckets=8"."""
        words = [f"last-value-key={self.last_value_key}"] if self.last_value_key is not None else []
        words += [w for w, on in (("non-destructive", self.non_destructive), ("exclusive", self.exclusive),
                                  ("group-rebalance", self.group_rebalance),
                                  ("group-rebalance-pause-dispatch", self.group_rebalance_pause_dispatch)) if on]
        if self.group_buckets != -1:
            words.append(f"group-buckets={self.group_buckets}")
        if self.group_first_key is not None:
            words.append(f"group-first-key={self.group_first_key}")
        return ", ".join(words)


ORDINARY = QueueAttributes()
# The router's own queues (store-and-forward, network subscriptions): ordinary, and no grouping.
INTERNAL = QueueAttributes(group_buckets=0)

PRIORITIES = 10
NO_CREDIT = object()
PARK = object()
_SEQ = attrgetter("seq")


def _no_replacement(ref: Ref) -> None:
    raise RuntimeError(f"queue {ref.queue.name}: a last-value replacement with nowhere to release it")


def now_ms() -> int:
    return int(time.time() * 1000)


class Queue:
    # CPython 3.11 reads an object's attributes on its fast path (shared keys,
    # inline values) only while it has at most 30 of them, and enqueue,
    # dispatch and acknowledge read a queue's for every message. State most
    # queues never set is a class default here, set on the queue when it
    # changes (a queue that sets one keeps its fast path while within the
    # bound): keep `__init__` within it (tests/unit/test_attribute_fast_path.py).
    MAX_INSTANCE_ATTRIBUTES = 30

    # Paging (services/router/paging.py): messages in the store only, read back
    # in id order after `page_cursor` as the queue drains; `paging_in` are on
    # their way into the page (commit in flight).
    paged_messages = 0
    paged_bytes = 0
    paging_in = 0
    page_cursor = 0
    depaging = False
    # The task reading its next page while `depaging` (Delivery.page_in).
    page_reader: asyncio.Task | None = None
    # Paused by management (Artemis pause()): it still receives messages but
    # the broker dispatches none until resumed. Not persisted: a restart resumes.
    paused = False
    deleting = False  # Broker.delete_queue is closing its consumers
    # A last-value queue's replaced message leaves with this (the broker's release, REMOVED).
    replaced: Callable[[Ref], None] = staticmethod(_no_replacement)
    # Round robin position per consumer priority, once `_mixed_priorities`.
    _rr_at: dict[int, int]
    # Counters, as Artemis's queue control reports them (more in `__init__`).
    messages_expired = 0
    messages_killed = 0
    # Returned unacknowledged (nack, consumer closed, rollback) to be delivered again.
    messages_redelivered = 0
    # Consumers found below slow-consumer-threshold (slow_consumers.py), whatever the policy did.
    slow_consumers = 0

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
        # Last-value, non-destructive, exclusive (queue_kinds.install sets them
        # and the methods they change); delivery.py asks `non_destructive` on an ack.
        self.attributes = ORDINARY
        self.non_destructive = False
        # Message groups (message_groups.install sets both): the pins, and the
        # pick for a message with a group id; without install a queue does not group.
        self.groups = None
        self.pick_grouped: Callable[[Ref], object] = self.pick
        self._buckets: list[deque[Ref]] = [deque() for _ in range(PRIORITIES)]
        # Waiting messages no attached consumer accepts, per priority, in arrival order.
        self._parked: list[deque[Ref]] = [deque() for _ in range(PRIORITIES)]
        self._next_seq = 1
        self.waiting = 0  # in the buckets and parked
        # References routed here whose journal commit is still in flight: on
        # their way in, so the queue is not empty (it may not be auto-deleted).
        self.incoming = 0
        # References waiting out a redelivery-delay or their scheduled time,
        # with their timers. They belong to the queue: counted, purged, deleted with it.
        self.delayed: dict[Ref, asyncio.TimerHandle] = {}
        self.consumers: list[ServerConsumer] = []
        # Its Address (set when bound to it): memory is counted there (paging.py).
        self.home = None
        self._rr = 0
        # Consumers of more than one priority have joined: pick by priority (kept
        # sorted highest first), round robin within each (`_rr_at`, by priority).
        self._mixed_priorities = False
        self.deleted = False
        # Counters, as Artemis's queue control reports them.
        self.delivering = 0
        self.messages_added = 0
        self.messages_acknowledged = 0
        # Deliveries to consumers (a bridge included), redeliveries too: the gateway's "out" rate.
        self.messages_delivered = 0

    def __repr__(self) -> str:
        return f"Queue({self.name!r} on {self.address!r}, waiting={self.waiting})"

    @property
    def message_count(self) -> int:
        """Messages the queue holds: waiting (in memory or paged), delivering, and scheduled."""
        return self.waiting + self.delivering + len(self.delayed) + self.paged_messages

    @property
    def scheduled_count(self) -> int:
        """Of message_count, those not yet due: scheduled or in a redelivery delay (Artemis's ScheduledCount)."""
        return len(self.delayed)

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

    def add_scheduled(self, ref: Ref, timer: asyncio.TimerHandle) -> None:
        """A scheduled message arrives (services/router/scheduled.py): numbered
        and counted as added now, held with its timer among the delayed
        references until its time, then `add_back` puts it at the head."""
        ref.seq = self._next_seq
        self._next_seq += 1
        self.messages_added += 1
        self.delayed[ref] = timer

    def add_back(self, ref: Ref) -> None:
        """A cancelled delivery goes back to the head of its priority (Artemis does the same)."""
        self._buckets[ref.msg.priority].appendleft(ref)
        self.waiting += 1

    def has_consumer_for(self, msg) -> bool:
        """Some attached consumer's filter takes `msg` (ON_DEMAND balancing asks)."""
        return any(c.selector is None or c.selector.matches(msg.lookup) for c in self.consumers)

    def add_consumer(self, consumer: ServerConsumer) -> None:
        consumers = self.consumers
        if consumers and consumer.priority != consumers[0].priority and not self._mixed_priorities:
            self._mixed_priorities = True
            self._rr_at = {}
        # After every consumer of its priority or higher: the list stays highest first.
        at = len(consumers)
        while at and consumers[at - 1].priority < consumer.priority:
            at -= 1
        consumers.insert(at, consumer)
        self.unpark()

    def unpark(self) -> None:
        """Parked messages go back to their places (a new consumer may accept them)."""
        for p, parked in enumerate(self._parked):
            if parked:
                self._buckets[p] = deque(heapq.merge(parked, self._buckets[p], key=_SEQ))
                parked.clear()

    def remove_ref(self, ref: Ref) -> bool:
        """Take `ref` out of the waiting messages if it is there (not being
        delivered): a last-value queue's replaced message (queue_kinds.py)."""
        p = ref.msg.priority
        for refs in (self._buckets[p], self._parked[p]):
            try:
                refs.remove(ref)
            except ValueError:
                continue
            self.waiting -= 1
            return True
        return False

    def waiting_after(self, seq: int) -> Iterator[Ref]:
        """The waiting messages that arrived after arrival number `seq`, in
        arrival order (a non-destructive queue's consumer reads from its
        cursor, queue_kinds.py). Each list is in arrival order, so the newer
        ones are at its tail: this costs what is new, not the backlog."""
        newer = []
        for refs in (*self._buckets, *self._parked):
            tail = []
            for ref in reversed(refs):
                if ref.seq <= seq:
                    break
                tail.append(ref)
            if tail:
                tail.reverse()
                newer.append(tail)
        return heapq.merge(*newer, key=_SEQ) if len(newer) > 1 else iter(newer[0] if newer else ())

    def take_all(self) -> list[Ref]:
        """Every waiting and delayed reference, taken out (purge, delete)."""
        self.unpark()
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
        """What its consumers are delivering (unacknowledged), in arrival order;
        none for a non-destructive queue, whose deliveries are copies of
        messages still waiting (queue_kinds.py)."""
        if self.non_destructive:
            return []
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
                msg = ref.msg
                exp = msg.expiration
                if exp and exp <= now:
                    bucket.popleft()
                    self.waiting -= 1
                    expire(ref)
                    continue
                consumer = self.pick_grouped(ref) if msg.group else self.pick(ref)
                if consumer is NO_CREDIT:
                    self._put_back(skipped)
                    return parked
                bucket.popleft()
                if consumer is None:
                    skipped.append(ref)
                    continue
                if consumer is PARK:
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

    def pick(self, ref: Ref):
        """The consumer `ref` goes to, or NO_CREDIT, None (skip it) or PARK
        (an exclusive queue has its own, queue_kinds.py)."""
        consumers = self.consumers
        n = len(consumers)
        if n == 1:  # the common case, without the round robin's arithmetic
            c = consumers[0]
            if c.ready and c.selector is None:
                self._rr = 0  # as the loop below leaves it with one consumer
                return c
        if self._mixed_priorities:
            return self._pick_by_priority(ref)
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
        return self._no_taker(ref, any_credit)

    def _pick_by_priority(self, ref: Ref):
        """The highest-priority consumer with credit that takes `ref`, round
        robin among those of one priority: a lower priority gets a message only
        while every higher one that would take it has no credit."""
        consumers = self.consumers
        any_credit = False
        start = 0
        n = len(consumers)
        while start < n:
            priority = consumers[start].priority
            end = start
            while end < n and consumers[end].priority == priority:
                end += 1
            size = end - start
            rr = self._rr_at.get(priority, 0)
            for i in range(size):
                idx = start + (rr + i) % size
                c = consumers[idx]
                if not c.ready:
                    continue
                any_credit = True
                if c.selector is None or c.selector.matches(ref.msg.lookup):
                    self._rr_at[priority] = (idx - start + 1) % size
                    return c
            start = end
        return self._no_taker(ref, any_credit)

    def _no_taker(self, ref: Ref, any_credit: bool):
        """No consumer with credit takes `ref`: stop (none has credit), skip it,
        or park it."""
        if not any_credit:
            return NO_CREDIT
        # No consumer with credit takes it: it waits for one without credit that
        # would, or, if there is none, is parked until another consumer attaches.
        for c in self.consumers:
            if not c.ready and not c.closed and (c.selector is None or c.selector.matches(ref.msg.lookup)):
                return None
        return PARK
