"""Looking at a queue's messages without consuming them (BrowseMessages, and
the totals of message_moves.py).

A queue's messages, in the order a consumer meets them: those being
delivered (already handed out, unacknowledged), those in a redelivery delay
("scheduled": they return to the head of the queue), those waiting in memory
(highest priority first, then arrival), then the paged ones, read from the
journal a page at a time (`ReadPage`, as the queue reads them back) without
joining the queue. The in-memory part is taken in one synchronous step;
the page is read after it from where the queue had read up to at that step,
so a message read back in the meantime is not seen twice. Nothing here
changes the queue.

`browse` answers the console's numbered pages (offset, limit). `pages` is the
SDK's queue browser (BrowseQueue): one pass over the queue, as a browse-only
consumer makes in Artemis. It holds the references of the in-memory part taken
in that one step (no copies: those messages are in memory anyway), then reads
the paged part from the journal a page at a time, so a paged queue of any size
is browsed in bounded memory. It leaves out the messages being delivered: the
next consumer does not meet them (they come back, if at all, only once given
back, as in Artemis, where a browser sees only the queue's own list).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from .message import Ref, ServerMessage
from .queue import Queue

if TYPE_CHECKING:
    from .broker import Broker

DELIVERING, SCHEDULED, WAITING, PAGED = "delivering", "scheduled", "waiting", "paged"
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# Paged messages read per ReadPage call while browsing or counting.
PAGE_MESSAGES = 1000
# A BrowseQueue page ends at this many bytes of messages, whatever its count.
PAGE_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Browsed:
    state: str
    ref: Ref


def in_memory(q: Queue) -> Iterator[Browsed]:
    for ref in q.delivering_refs():
        yield Browsed(DELIVERING, ref)
    for ref in sorted(q.delayed, key=lambda r: r.seq):
        yield Browsed(SCHEDULED, ref)
    for ref in q.iter_waiting():
        yield Browsed(WAITING, ref)


async def paged(broker: Broker, q: Queue, after_message_id: int) -> AsyncIterator[Ref]:
    """`q`'s paged messages with an id above `after_message_id`, from the store."""
    cursor = after_message_id
    page_bytes = broker.settings(q.address).page_size_bytes
    while True:
        resp = await broker.journal.read_page(
            jpb.ReadPageRequest(queue_id=q.id, after_message_id=cursor, max_messages=PAGE_MESSAGES, max_bytes=page_bytes)
        )
        if not resp.messages:
            return
        for pm in resp.messages:
            proto = mpb.Message()
            proto.ParseFromString(pm.data)
            ref = Ref(ServerMessage.of(proto, pm.size), q, pm.delivery_count, True)
            ref.paged = True
            cursor = pm.message_id
            yield ref


async def browse(broker: Broker, q: Queue, offset: int, limit: int,
                 wanted: Callable[[Ref], bool] | None) -> tuple[list[Browsed], int]:
    """Messages `offset` to `offset + limit` of those `wanted` takes (None:
    all), and how many it takes in all."""
    end = offset + limit
    page_cursor = q.page_cursor
    out: list[Browsed] = []
    seen = 0
    for item in in_memory(q):
        if wanted is not None and not wanted(item.ref):
            continue
        if offset <= seen < end:
            out.append(item)
        seen += 1
        if wanted is None and seen >= end:
            break
    total = q.message_count if wanted is None else seen
    has_page = q.paged_messages > 0
    if has_page and (wanted is not None or seen < end):
        async for ref in paged(broker, q, page_cursor):
            if wanted is not None and not wanted(ref):
                continue
            if offset <= seen < end:
                out.append(Browsed(PAGED, ref))
            seen += 1
            if wanted is None and seen >= end:
                break
        if wanted is not None:
            total = seen
    return out, total


async def scan(broker: Broker, q: Queue, wanted: Callable[[Ref], bool] | None) -> AsyncIterator[Browsed]:
    """Every message of `q` the next consumer would meet that `wanted` takes
    (None: all), in that order: the in-memory part as it stands now, then the
    paged part, read from the journal as the iteration reaches it."""
    page_cursor = q.page_cursor
    has_page = q.paged_messages > 0
    snapshot = [item for item in in_memory(q) if item.state != DELIVERING]
    for item in snapshot:
        if wanted is None or wanted(item.ref):
            yield item
    del snapshot
    if has_page:
        async for ref in paged(broker, q, page_cursor):
            if wanted is None or wanted(ref):
                yield Browsed(PAGED, ref)


async def pages(broker: Broker, q: Queue, wanted: Callable[[Ref], bool] | None,
                page_size: int) -> AsyncIterator[list[Browsed]]:
    """`scan` in lists of at most `page_size` messages or about PAGE_BYTES."""
    page: list[Browsed] = []
    size = 0
    async for item in scan(broker, q, wanted):
        page.append(item)
        size += item.ref.msg.size
        if len(page) >= page_size or size >= PAGE_BYTES:
            yield page
            page, size = [], 0
    if page:
        yield page


async def count(broker: Broker, q: Queue, wanted: Callable[[Ref], bool] | None) -> int:
    """How many of `q`'s messages that are not being delivered `wanted` takes (None: all)."""
    if wanted is None:
        return q.waiting + len(q.delayed) + q.paged_messages
    page_cursor = q.page_cursor
    n = sum(1 for ref in q.delayed if wanted(ref)) + sum(1 for ref in q.iter_waiting() if wanted(ref))
    if q.paged_messages:
        async for ref in paged(broker, q, page_cursor):
            n += wanted(ref)
    return n
