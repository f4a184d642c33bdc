"""The blocking API: the asyncio implementation run on a private loop thread.

Each blocking object wraps its async twin and waits for the same coroutine,
so there is one implementation of every behaviour.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from meshmq.errors import UnblockedError

from . import connection as aconn
from .failover import FailoverListener
from .browser import BrowsedMessage, QueueBrowser as AsyncQueueBrowser
from .consumer import Consumer as AsyncConsumer
from .message import ReceivedMessage
from .producer import Producer as AsyncProducer
from .session import Session as AsyncSession
from .temporary_queue import TemporaryQueue as AsyncTemporaryQueue

T = TypeVar("T")


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="meshmq-client", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


class Producer:
    def __init__(self, loop: _LoopThread, inner: AsyncProducer) -> None:
        self._loop, self._inner = loop, inner

    def send(self, body: bytes = b"", **kwargs) -> None:
        """Send and wait for the confirm (see the async Producer.send_async for options)."""
        self._loop.run(self._inner.send(body, **kwargs))

    def send_many(self, bodies, **kwargs) -> None:
        """Send several messages in pipelined batches and wait for all confirms."""

        async def go():
            futs = [await self._inner.send_async(b, **kwargs) for b in bodies]
            await asyncio.gather(*futs)

        self._loop.run(go())

    def close(self) -> None:
        self._loop.run(self._inner.close())


def _quietly(settle, msg: ReceivedMessage) -> None:
    """An ack or nack checked in the caller's thread; a failover that came in between
    makes it moot (the message is delivered again), so it is dropped, not raised here."""
    try:
        settle(msg)
    except UnblockedError:
        pass


class Consumer:
    def __init__(self, loop: _LoopThread, inner: AsyncConsumer) -> None:
        self._loop, self._inner = loop, inner

    @property
    def queue(self) -> str:
        return self._inner.queue

    def receive(self, timeout: float | None = None) -> ReceivedMessage | None:
        return self._loop.run(self._inner.receive(timeout))

    def ack(self, msg: ReceivedMessage) -> None:
        if (stale := self._inner._stale(msg, "acknowledged")) is not None:
            raise stale  # here, in the caller's thread
        self._loop.loop.call_soon_threadsafe(_quietly, self._inner.ack, msg)

    def nack(self, msg: ReceivedMessage) -> None:
        if (stale := self._inner._stale(msg, "given back")) is not None:
            raise stale
        self._loop.loop.call_soon_threadsafe(_quietly, self._inner.nack, msg)

    def close(self) -> None:
        self._loop.run(self._inner.close())


class QueueBrowser:
    """`for msg in browser`: each loop is a new pass over the queue (the async
    QueueBrowser's), its pages fetched on the client's loop as the loop goes."""

    def __init__(self, loop: _LoopThread, inner: AsyncQueueBrowser) -> None:
        self._loop, self._inner = loop, inner

    @property
    def queue(self) -> str:
        return self._inner.queue

    def __iter__(self) -> Iterator[BrowsedMessage]:
        it = self._inner.__aiter__()
        while True:
            try:
                yield self._loop.run(it.__anext__())
            except StopAsyncIteration:
                return

    def close(self) -> None:
        self._loop.run(self._inner.close())

    def __enter__(self) -> QueueBrowser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TemporaryQueue:
    """A connection's temporary queue (temporary_queue.py), blocking; `str()` is its name."""

    def __init__(self, loop: _LoopThread, inner: AsyncTemporaryQueue) -> None:
        self._loop = loop
        self._inner = inner
        self.name = inner.name

    def __str__(self) -> str:
        return self.name

    def delete(self) -> None:
        """JMS TemporaryQueue.delete: QUEUE_IN_USE while one of the connection's consumers is on it."""
        self._loop.run(self._inner.delete())


class Session:
    def __init__(self, loop: _LoopThread, inner: AsyncSession) -> None:
        self._loop, self._inner = loop, inner

    def create_producer(self, address: str = "", *, idempotent: bool = False) -> Producer:
        return Producer(self._loop, self._loop.run(self._inner.create_producer(address, idempotent=idempotent)))

    def create_consumer(self, queue: str | TemporaryQueue = "", **kwargs) -> Consumer:
        """The async Session.create_consumer's options (`address`, `subscription`,
        `shared`, `durable`, `filter`, `window_size`), blocking."""
        return Consumer(self._loop, self._loop.run(self._inner.create_consumer(str(queue), **kwargs)))

    def create_temporary_queue(self) -> TemporaryQueue:
        """A temporary queue of the connection (the async Session.create_temporary_queue)."""
        return TemporaryQueue(self._loop, self._loop.run(self._inner.create_temporary_queue()))

    def unsubscribe(self, subscription: str) -> int:
        """Delete a durable subscription of this connection's client id (Session.unsubscribe)."""
        return self._loop.run(self._inner.unsubscribe(subscription))

    def create_browser(self, queue: str, filter: str = "", **kwargs) -> QueueBrowser:
        """As the async Session.create_browser."""
        return QueueBrowser(self._loop, self._loop.run(self._inner.create_browser(queue, filter, **kwargs)))

    def request(self, address: str, body: bytes = b"", *, timeout: float = 30.0, **kwargs) -> ReceivedMessage:
        """As the async Session.request: the reply, or TimeoutError after `timeout` seconds."""
        return self._loop.run(self._inner.request(address, body, timeout=timeout, **kwargs))

    def reply(self, request_msg: ReceivedMessage, body: bytes = b"", **kwargs) -> None:
        """As the async Session.reply: answer `request_msg` at its reply_to."""
        self._loop.run(self._inner.reply(request_msg, body, **kwargs))

    def commit(self) -> None:
        self._loop.run(self._inner.commit())

    def rollback(self) -> None:
        self._loop.run(self._inner.rollback())

    def close(self) -> None:
        self._loop.run(self._inner.close())


class Admin:
    def __init__(self, loop: _LoopThread, inner: aconn.Admin) -> None:
        self._loop, self._inner = loop, inner

    def __getattr__(self, name: str):
        method = getattr(self._inner, name)
        return lambda *a, **kw: self._loop.run(method(*a, **kw))


class Connection:
    def __init__(self, uri: str) -> None:
        self._loop = _LoopThread()
        try:
            self._inner = self._loop.run(aconn.connect(uri))
        except BaseException:
            self._loop.stop()
            raise
        self.admin = Admin(self._loop, self._inner.admin)

    def session(self, *, transacted: bool = False) -> Session:
        return Session(self._loop, self._loop.run(self._inner.session(transacted=transacted)))

    def create_temporary_queue(self) -> TemporaryQueue:
        """A temporary queue of this connection (the async Connection.create_temporary_queue)."""
        return TemporaryQueue(self._loop, self._loop.run(self._inner.create_temporary_queue()))

    def add_failover_listener(self, listener: FailoverListener) -> None:
        """As the async Connection's; `listener` runs on the client's loop thread."""
        self._loop.loop.call_soon_threadsafe(self._inner.add_failover_listener, listener)

    def close(self) -> None:
        try:
            self._loop.run(self._inner.close(), timeout=30)
        finally:
            self._loop.stop()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(uri: str) -> Connection:
    """Blocking twin of `meshmq.client.connect`."""
    return Connection(uri)
