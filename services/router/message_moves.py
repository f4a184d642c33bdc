"""An operator's moves: messages from one queue to another (MoveMessages) and
dead letters back where they died (RetryMessages), as Artemis's
QueueControl.moveMessages and retryMessages do.

Both walk the source queue in delivery order, a batch (`BATCH`) at a time:
each batch is taken out of the queue and each message handed to
`dead_letter.transfer` — the same step that dead-letters a message — so a
batch's copies and releases go into one journal batch, and a kill -9 at any
moment leaves every message in exactly one of the two queues. The operation
waits for each batch's commit before it reports progress and takes the next,
which also bounds what it holds in memory.

What is moved: waiting messages (in memory, then paged ones, read in a page
at a time as the queue would as it drains), then messages in a redelivery
delay. Messages being delivered to a consumer are not moved, nor messages
that arrive after the operation started (it works on the message ids it found:
a copy that lands back in the source queue is never taken again). A moved
copy gets a new message id and a delivery count of 0; it keeps its
properties, priority, durability and expiration, and gets Artemis's
`_AMQ_ORIG_QUEUE`/`_AMQ_ORIG_ADDRESS`/`_AMQ_ORIG_MESSAGE_ID` unless it has
them already. A retried copy keeps its properties as they are.

A retry sends each message to the queue its `_AMQ_ORIG_QUEUE` names, or,
when that queue no longer exists, routes it to its `_AMQ_ORIG_ADDRESS`. A
message with neither, whose origin is the source queue itself, or whose
address routes nowhere, stays where it is and is not counted as done: the
final progress's `total - done` is what was left.

Paged messages are read in only while the source address has room: if it
stays full of messages the operation does not take, the operation stops
there (its final progress says how far it got).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshmq.errors import BrokerError, Reason
from meshmq.selector import Selector
from meshmq.v1 import journal_pb2 as jpb

from . import browsing, dead_letter
from .message import Ref
from .queue import Queue

if TYPE_CHECKING:
    from .broker import Broker

# Messages per journal batch and per progress report.
BATCH = 500


@dataclass(frozen=True, slots=True)
class Progress:
    done: int
    total: int
    finished: bool = False


def _selected(selector: Selector | None, last_id: int) -> Callable[[Ref], bool]:
    if selector is None:
        return lambda ref: ref.msg.id <= last_id
    return lambda ref: ref.msg.id <= last_id and selector.matches(ref.msg.lookup)


async def move(broker: Broker, source: Queue, target: Queue, selector: Selector | None,
               limit: int = 0) -> AsyncIterator[Progress]:
    """Move `source`'s messages that `selector` takes (at most `limit`; 0: all) to `target`."""
    if target is source:
        raise BrokerError(Reason.INVALID_REQUEST, f"queue {source.name!r}: cannot move messages to the same queue")

    def copy(ref: Ref):
        msg = dead_letter.copy_message(broker, ref, target.address)
        dead_letter.mark_origin(msg, ref)
        return dead_letter.server_message(msg), [target]

    wanted = _selected(selector, broker.last_message_id)
    async for p in _run(broker, source, wanted, copy, limit, count=wanted if selector is not None else None,
                        target=target):
        yield p


async def retry(broker: Broker, source: Queue, selector: Selector | None) -> AsyncIterator[Progress]:
    """Send `source`'s dead letters that `selector` takes back to where they died."""
    selected = _selected(selector, broker.last_message_id)
    left: set[int] = set()  # id(ref) of messages found to have nowhere to go

    def origin_queue(ref: Ref) -> Queue | None:
        prop = ref.msg.proto.properties.get("_AMQ_ORIG_QUEUE")
        return broker.queues.get(prop.string_value) if prop is not None else None

    def origin_address(ref: Ref) -> str:
        prop = ref.msg.proto.properties.get("_AMQ_ORIG_ADDRESS")
        return prop.string_value if prop is not None else ""

    def retriable(ref: Ref) -> bool:
        if id(ref) in left or not selected(ref):
            return False
        q = origin_queue(ref)
        if q is not None:
            return q is not source
        address = origin_address(ref)
        return bool(address) and address != source.address

    def copy(ref: Ref):
        q = origin_queue(ref)
        if q is not None:
            return dead_letter.server_message(dead_letter.copy_message(broker, ref, q.address)), [q]
        msg = dead_letter.server_message(dead_letter.copy_message(broker, ref, origin_address(ref)))
        queues = broker.route(msg, moved=True)
        if not queues or source in queues:
            left.add(id(ref))
            return msg, None
        return msg, queues

    async for p in _run(broker, source, retriable, copy, 0, count=selected if selector is not None else None):
        yield p


async def _run(broker: Broker, source: Queue, wanted: Callable[[Ref], bool], copy, limit: int,
               count: Callable[[Ref], bool] | None, target: Queue | None = None) -> AsyncIterator[Progress]:
    """Take batches of `wanted` messages from `source` and transfer each to
    where `copy(ref)` says ((copy, queues); queues None: it stays). The total
    is what `count` takes (None: every message the queue holds but those
    being delivered)."""
    total = await browsing.count(broker, source, count)
    if limit:
        total = min(total, limit)
    done = 0
    while not source.deleted and (not limit or done < limit):
        if target is not None and target.deleted:
            raise BrokerError(Reason.QUEUE_NOT_FOUND,
                              f"queue {target.name!r} was deleted during the move ({done} messages moved)")
        n = BATCH if not limit else min(BATCH, limit - done)
        refs = source.take_waiting(wanted, n)
        if not refs:
            if not await _page_in(broker, source):
                break
            continue
        staged = []
        back = []
        for ref in refs:
            moved, queues = copy(ref)
            if queues is None:
                back.append(ref)
                continue
            staged.extend(dead_letter.transfer(broker, ref, moved, queues, jpb.REMOVED))
            done += 1
        for ref in reversed(back):  # (rare: an address that routes nowhere) back in its place
            source.add_back(ref)
        if back:
            broker.schedule_dispatch(source)
        broker.enqueue_when_stored(staged)
        resp = await asyncio.shield(broker.stored())  # (a cancelled call must not cancel the shared commit)
        if not resp.ok:
            raise BrokerError(Reason.STORE_UNAVAILABLE, f"the journal refused a batch of the move: {resp.message}")
        yield Progress(done, max(total, done))
    yield Progress(done, max(total, done), finished=True)


async def _page_in(broker: Broker, q: Queue) -> bool:
    """Read `q`'s next page into memory so the operation can go on; False when
    there is none, or when its address is full (the page would not fit)."""
    if not q.paged_messages or q.deleted or (q.home is not None and broker.full(q.home)):
        return False
    before = q.paged_messages
    await asyncio.shield(broker.page_in(q))
    return q.paged_messages < before
