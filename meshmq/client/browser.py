"""Queue browsers (JMS QueueBrowser, Artemis's browse-only consumer): look at a
queue's messages without consuming them.

A browser is a read over the management API (`BrowseQueue`), not a consumer
on the session stream: it takes no credit, sends no acks, changes no delivery
count and never holds a message back from a consumer, so nothing on the
session's delivery path has to know about it. It needs the `browse`
permission on the queue's address, as in Artemis, where `consume` is not
enough and `browse` alone does not let a user consume.

Each pass (`async for`) is one pass over the queue on the router: the
messages a consumer would meet next, in that order (redelivery-delayed ones,
then waiting ones by priority and arrival, then paged ones read from the
journal as the pass reaches them), arriving a page at a time as the caller
iterates, so a queue of any size is browsed in bounded memory. As in JMS, a
pass is not a snapshot: a message consumed meanwhile may still be shown,
one that arrives meanwhile may not.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from meshmq.errors import InvalidRequestError
from meshmq.v1 import management_pb2 as mgpb

from .message import ReceivedMessage


class BrowseAdmin(Protocol):
    """The management call a browser makes (connection.py's Admin)."""

    def browse_queue(self, queue: str, *, filter: str = "", page_size: int = 0) -> AsyncGenerator[mgpb.BrowsePage, None]: ...


class _NotSettled:
    """The settler of a browsed message: there is nothing to acknowledge."""

    def ack(self, msg: ReceivedMessage) -> None:
        raise InvalidRequestError("a browsed message is not acknowledged: consume it to take it off the queue")

    def nack(self, msg: ReceivedMessage) -> None:
        raise InvalidRequestError("a browsed message is not given back: it never left the queue")


_NOT_SETTLED = _NotSettled()


class BrowsedMessage(ReceivedMessage):
    """A message as a browser sees it. `delivery_count` is how many times it was
    delivered before (0 for one never delivered); `state` is where it waits:
    "waiting", "scheduled" (in a redelivery delay) or "paged"."""

    __slots__ = ("state",)

    def __init__(self, b: mgpb.BrowsedMessage) -> None:
        super().__init__(_NOT_SETTLED, 0, b.delivery_count, b.message, b.message.body)
        self.state = b.state


class _Pass:
    """One pass over the queue: its pages, read as the caller takes messages."""

    def __init__(self, pages: AsyncGenerator[mgpb.BrowsePage, None]) -> None:
        self._pages = pages
        self._page: list[mgpb.BrowsedMessage] = []
        self._at = 0
        self._done = False

    async def fill(self) -> None:
        """Read the next page (an error the router reports is raised here)."""
        page = await anext(self._pages, None)
        if page is None:
            self._done = True
        else:
            self._page, self._at = list(page.messages), 0

    @property
    def done(self) -> bool:
        return self._done

    def __aiter__(self) -> _Pass:
        return self

    async def __anext__(self) -> BrowsedMessage:
        while self._at >= len(self._page):
            if self._done:
                raise StopAsyncIteration
            await self.fill()
        b = self._page[self._at]
        self._at += 1
        return BrowsedMessage(b)

    async def close(self) -> None:
        self._done = True
        try:
            await self._pages.aclose()
        except RuntimeError:
            pass  # being iterated in another task right now: it ends with the connection


class QueueBrowser:
    """`session.create_browser(queue)`: `async for msg in browser` meets the
    queue's messages (those `filter` selects) without consuming them; each
    `async for` is a new pass, like JMS's getEnumeration()."""

    def __init__(self, admin: BrowseAdmin, queue: str, filter: str = "", page_size: int = 0) -> None:
        self._admin = admin
        self.queue = queue
        self.filter = filter
        self.page_size = page_size
        self._first: _Pass | None = None
        self._passes: list[_Pass] = []
        self.closed = False

    def _new_pass(self) -> _Pass:
        p = _Pass(self._admin.browse_queue(self.queue, filter=self.filter, page_size=self.page_size))
        self._passes = [q for q in self._passes if not q.done] + [p]
        return p

    async def start(self) -> None:
        """Begin the first pass now, so a missing queue, a bad selector or a
        refused permission is raised by create_browser, as in JMS."""
        self._first = self._new_pass()
        await self._first.fill()

    def __aiter__(self) -> _Pass:
        if self._first is not None:
            p, self._first = self._first, None
            return p
        return self._new_pass()

    async def close(self) -> None:
        """End every pass still open (the router lets go of what it held for them)."""
        self.closed = True
        passes, self._passes, self._first = self._passes, [], None
        for p in passes:
            await p.close()

    async def __aenter__(self) -> QueueBrowser:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
