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

A retry returns each message to the queue its `_AMQ_ORIG_QUEUE` names
(`retry_target`, pure, decides where). When that queue is gone — typically
auto-deleted once its last messages were dead-lettered — it sends the message
to its `_AMQ_ORIG_ADDRESS`, routed as a client's send would be: the address
and an anycast queue are auto-created as its address settings allow
(auto-create-addresses, auto-create-queues), with the routing type of the
queue it died on (`_AMQ_ORIG_ROUTING_TYPE`), as Artemis's retryMessages
does. A message dead-lettered before meshmq recorded that routing type goes
as ANYCAST when its queue was named like its address (how auto-created and
point-to-point queues are named), else without a routing type. A message
that cannot go anywhere — no origin, an origin that is the source queue,
an address that does not exist and may not be created, or one that routes
it to no queue — stays where it is, in its place; an address created only
for it is deleted again. Each progress carries an `Outcome` per message of
its batch, so the caller can say what happened to each one; `done` counts
those moved, `kept` those left.

Paged messages are read in only while the source address has room: if it
stays full of messages the operation does not take, the operation stops
there (its final progress says how far it got).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshmq.errors import BrokerError, Reason
from meshmq.routing_names import INTERNAL_PREFIX
from meshmq.selector import Selector
from meshmq.v1 import journal_pb2 as jpb

from . import browsing, dead_letter
from .message import Ref
from .queue import Queue
from .routing import ANYCAST, RT_BY_NAME, routing_type_name

if TYPE_CHECKING:
    from .broker import Broker

# Messages per journal batch and per progress report.
BATCH = 500


RETURNED, SENT_TO_ADDRESS, KEPT = "RETURNED", "SENT_TO_ADDRESS", "KEPT"
# Why a message was kept (besides the router's own error reasons, e.g. ADDRESS_NOT_FOUND).
NO_ORIGIN, ORIGIN_IS_SOURCE, NO_ROUTE = "NO_ORIGIN", "ORIGIN_IS_SOURCE", "NO_ROUTE"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a retry did with one message (`message_id`: its id in the source queue)."""

    message_id: int
    result: str  # RETURNED, SENT_TO_ADDRESS or KEPT
    address: str = ""
    queues: tuple[str, ...] = ()
    address_created: bool = False
    queues_created: tuple[str, ...] = ()
    reason: str = ""
    detail: str = ""
    new_message_id: int = 0


@dataclass(frozen=True, slots=True)
class Progress:
    done: int
    total: int
    finished: bool = False
    kept: int = 0
    # What happened to each message of the batch this progress reports (retry only).
    outcomes: tuple[Outcome, ...] = ()


@dataclass(frozen=True, slots=True)
class RetryTarget:
    """Where a dead letter goes back to: `queue`, or else `address` with
    `routing_type` (0: none); or it stays, for `reason` (`detail` in words)."""

    queue: str = ""
    address: str = ""
    routing_type: int = 0
    reason: str = ""
    detail: str = ""


def retry_target(orig_queue: str, orig_address: str, orig_routing_type: str, source: str, source_address: str,
                 queue_exists: Callable[[str], bool]) -> RetryTarget:
    """Where a retry sends a message whose `_AMQ_ORIG_QUEUE`, `_AMQ_ORIG_ADDRESS`
    and `_AMQ_ORIG_ROUTING_TYPE` are given ("" when absent), taken from the
    queue `source` on `source_address` (pure: see the module docstring)."""
    if orig_queue and queue_exists(orig_queue):
        if orig_queue == source:
            return RetryTarget(reason=ORIGIN_IS_SOURCE, detail=f"it died on {source!r} itself")
        return RetryTarget(queue=orig_queue)
    if not orig_address:
        if orig_queue:
            return RetryTarget(reason=NO_ORIGIN,
                               detail=f"its queue {orig_queue!r} is gone and it has no _AMQ_ORIG_ADDRESS")
        return RetryTarget(reason=NO_ORIGIN, detail="it has no _AMQ_ORIG_QUEUE or _AMQ_ORIG_ADDRESS to return to")
    if orig_address == source_address:
        return RetryTarget(reason=ORIGIN_IS_SOURCE, detail=f"its address {orig_address!r} is that of {source!r}")
    rt = RT_BY_NAME.get(orig_routing_type, 0)
    if not orig_routing_type and orig_queue == orig_address:
        rt = ANYCAST
    return RetryTarget(address=orig_address, routing_type=rt)


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
        return dead_letter.server_message(msg), [target], None

    wanted = _selected(selector, broker.last_message_id)
    async for p in _run(broker, source, wanted, copy, limit, count=wanted if selector is not None else None,
                        target=target):
        yield p


async def retry(broker: Broker, source: Queue, selector: Selector | None,
                message_id: int = 0) -> AsyncIterator[Progress]:
    """Send `source`'s dead letters that `selector` takes (or only the one
    `message_id` names) back to where they died."""
    selected = _selected(selector, broker.last_message_id)
    if message_id:
        only = selected
        selected = lambda ref: ref.msg.id == message_id and only(ref)  # noqa: E731
        if not await browsing.count(broker, source, selected):
            raise BrokerError(
                Reason.MESSAGE_NOT_FOUND,
                f"queue {source.name!r} holds no message {message_id}"
                + (" that the filter selects" if selector is not None else "")
                + " (a message being delivered to a consumer is not retried)")

    def copy(ref: Ref):
        props = ref.msg.proto.properties
        where = retry_target(_text(props, "_AMQ_ORIG_QUEUE"), _text(props, "_AMQ_ORIG_ADDRESS"),
                             _text(props, "_AMQ_ORIG_ROUTING_TYPE"), source.name, source.address,
                             broker.queues.__contains__)
        if where.reason:
            return None, None, Outcome(ref.msg.id, KEPT, reason=where.reason, detail=where.detail)
        if where.queue:
            q = broker.queues[where.queue]
            moved = dead_letter.server_message(dead_letter.copy_message(broker, ref, q.address))
            return moved, [q], Outcome(ref.msg.id, RETURNED, q.address, (q.name,), new_message_id=moved.id)
        return _send_to_address(broker, ref, where)

    async for p in _run(broker, source, selected, copy, 0, count=selected if selector is not None or message_id
                        else None):
        yield p


def _text(props, name: str) -> str:
    value = props.get(name)
    return value.string_value if value is not None else ""


def _send_to_address(broker: Broker, ref: Ref, where: RetryTarget):
    """Route a copy of `ref` to `where.address` as a send would (auto-creating
    what the address settings allow). Returns (copy, queues, outcome); queues
    None: it stays (nothing routed, and an address created just for it deleted)."""
    address = where.address
    before = broker.addresses.get(address)
    had = set(before.queues) if before is not None else set()
    proto = dead_letter.copy_message(broker, ref, address)
    proto.routing_type = where.routing_type
    moved = dead_letter.server_message(proto)
    as_type = f" as {routing_type_name(where.routing_type)}" if where.routing_type else ""

    def kept(reason: str, detail: str):
        created = broker.addresses.get(address)
        if before is None and created is not None and not created.queues and not address.startswith(INTERNAL_PREFIX):
            broker.delete_address(address)
        return None, None, Outcome(ref.msg.id, KEPT, address, reason=reason, detail=detail)

    try:
        queues = broker.sender.route(moved, moved=True)
    except BrokerError as exc:
        return kept(exc.reason.value, f"its queue {_text(ref.msg.proto.properties, '_AMQ_ORIG_QUEUE') or '?'!r} "
                                      f"is gone and it cannot be sent to its address{as_type}: {exc.message}")
    if not queues:
        return kept(NO_ROUTE, f"its queue is gone and address {address!r} routes it{as_type} to no queue")
    if ref.queue in queues:
        return kept(ORIGIN_IS_SOURCE, f"address {address!r} routes it{as_type} back to {ref.queue.name!r}")
    after = broker.addresses.get(address)
    created = tuple(q.name for q in queues if q.address == address and q.name not in had)
    return moved, queues, Outcome(
        ref.msg.id, SENT_TO_ADDRESS, moved.address, tuple(q.name for q in queues),
        address_created=before is None and after is not None, queues_created=created,
        new_message_id=moved.id)


async def _run(broker: Broker, source: Queue, wanted: Callable[[Ref], bool], copy, limit: int,
               count: Callable[[Ref], bool] | None, target: Queue | None = None) -> AsyncIterator[Progress]:
    """Take batches of `wanted` messages from `source` and transfer each to
    where `copy(ref)` says ((copy, queues, outcome); queues None: it stays,
    and is not taken again; outcome None: nothing to report). A BrokerError
    from `copy` keeps that message only. The total is what `count` takes
    (None: every message the queue holds but those being delivered)."""
    total = await browsing.count(broker, source, count)
    if limit:
        total = min(total, limit)
    done = kept = 0
    left: set[int] = set()  # id(ref) of messages that stay

    def take(ref: Ref) -> bool:
        return id(ref) not in left and wanted(ref)

    while not source.deleted and (not limit or done < limit):
        if target is not None and target.deleted:
            raise BrokerError(Reason.QUEUE_NOT_FOUND,
                              f"queue {target.name!r} was deleted during the move ({done} messages moved)")
        n = BATCH if not limit else min(BATCH, limit - done)
        refs = source.take_waiting(take, n)
        if not refs:
            if not await page_in_if_room(broker, source):
                break
            continue
        staged = []
        back = []
        outcomes = []
        pending = deque(refs)
        try:
            while pending:
                ref = pending[0]
                try:
                    moved, queues, outcome = copy(ref)
                except BrokerError as exc:
                    moved, queues, outcome = None, None, Outcome(ref.msg.id, KEPT, reason=exc.reason.value,
                                                                 detail=exc.message)
                pending.popleft()
                if outcome is not None:
                    outcomes.append(outcome)
                if queues is None:
                    back.append(ref)
                    left.add(id(ref))
                    continue
                staged.extend(dead_letter.transfer(broker, ref, moved, queues, jpb.REMOVED))
                done += 1
        finally:
            kept += len(back)
            back.extend(pending)  # (only after an unexpected error: what was not looked at stays too)
            for ref in reversed(back):  # back in its place
                source.add_back(ref)
            if back:
                broker.delivery.schedule_dispatch(source)
            broker.delivery.enqueue_when_stored(staged)
        resp = await asyncio.shield(broker.stored())  # (a cancelled call must not cancel the shared commit)
        if not resp.ok:
            raise BrokerError(Reason.STORE_UNAVAILABLE, f"the journal refused a batch of the move: {resp.message}")
        yield Progress(done, max(total, done), kept=kept, outcomes=tuple(outcomes))
    yield Progress(done, max(total, done), finished=True, kept=kept)


async def page_in_if_room(broker: Broker, q: Queue) -> bool:
    """Read `q`'s next page into memory so an operation taking its messages
    (a move, a retry, a moved leaf's return) can go on; False when there is
    none, or when its address is full (the page would not fit)."""
    if not q.paged_messages or q.deleted or (q.home is not None and broker.memory.full(q.home)):
        return False
    before = q.paged_messages
    await asyncio.shield(broker.delivery.page_in(q))
    return q.paged_messages < before
