"""Consumers: messages arrive in batches against byte credit; the consumer
grants more credit as the application takes messages, and sends acks in
batches, each message still acknowledged individually."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol

from meshmq.aio import wait_for
from meshmq.errors import InvalidRequestError, MeshMQError, UnblockedError
from meshmq.v1 import broker_pb2 as bpb

from .message import ReceivedMessage


class ConsumerSession(Protocol):
    """What a consumer needs from its session (session.py implements it): the stream
    and whether it is up, the transaction its acks join, the stream a planned move
    left (for acks of what was handed on it), and where a closed consumer signs off."""

    # Set while the session's stream is up; cleared while it fails over.
    ready: asyncio.Event
    transacted: bool

    def write(self, req: bpb.SessionRequest) -> None: ...

    def note_transaction_work(self) -> None: ...

    def mark_rollback_only(self) -> None: ...

    def settle_on_old_stream(self, consumer_id: int, delivery_id: int, *, nack: bool) -> bool: ...

    def old_stream_settled(self) -> None: ...

    async def close_consumer(self, consumer: Consumer, *, on_node: bool, wait: bool = True) -> None: ...


# How many handed messages a consumer remembers across a failover (its delivery counts).
_REMEMBERED = 10_000


class _Moved:
    """What a consumer left on the stream its session moved away from."""

    __slots__ = ("incarnation", "unsettled")

    def __init__(self, incarnation: int, unsettled: int) -> None:
        self.incarnation = incarnation
        self.unsettled = unsettled


class Consumer:
    def __init__(self, session: ConsumerSession, request: bpb.CreateConsumer) -> None:
        self._session = session
        self._request = request  # sent again when the session fails over
        self.id = request.consumer_id
        self.queue = ""
        self.window_size = request.window_size
        self._buffer: deque[ReceivedMessage] = deque()
        self._arrived = asyncio.Event()
        self._consumed = 0
        self._acks: list[int] = []
        self._nacks: list[int] = []
        self._flush_scheduled = False
        self._large: dict[int, tuple[ReceivedMessage, bytearray]] = {}
        self._error: MeshMQError | None = None
        self._closed = False
        # The last delivery handed to the application: what follows it in the
        # buffer is unseen, and the router does not count it as an attempt.
        self.last_handed = 0
        self._asked = False
        # Which stream the messages in hand came from: one delivered before a failover
        # cannot be acknowledged on the new stream (the node there redelivers it).
        self._incarnation = 0
        # The last messages handed to the application (by node id and message id: a message
        # id is unique within the node that stored it, with its delivery count), and after a
        # failover those of the old stream: one of them delivered again gets a delivery
        # count above the one it had, though the new node may not know it was delivered
        # (its ack may have been lost in flight; a first delivery is not journaled).
        self._handed: deque[tuple[str, int, int]] = deque(maxlen=_REMEMBERED)  # (node id, message id, count)
        self._handed_before: dict[tuple[str, int], int] = {}
        # Handed on this stream and neither acknowledged nor given back (a planned move
        # waits for none of them in a transaction; session.py).
        self._unsettled = 0
        # After a planned move: the stream the session left still takes the acks of the
        # messages handed on it (their incarnation), until it is retired (session.py).
        self._moved: _Moved | None = None

    # ------------------------------------------------------------ from the session

    def _on_deliveries(self, batch: bpb.DeliveryBatch) -> None:
        self._asked = False  # a window-0 request was answered
        before = self._handed_before
        for d in batch.deliveries:
            m = d.message
            count = d.delivery_count
            if before and (m.node_id, m.message_id) in before:
                count = max(count, before.pop((m.node_id, m.message_id)) + 1)
            msg = ReceivedMessage(self, d.delivery_id, count, m, m.body, self._incarnation)
            if m.large:
                self._large[d.delivery_id] = (msg, bytearray())
            else:
                self._buffer.append(msg)
        self._arrived.set()

    def _on_large_chunk(self, chunk: bpb.LargeChunk) -> None:
        entry = self._large.get(chunk.delivery_id)
        if entry is None:
            return
        entry[1].extend(chunk.data)
        if chunk.last:
            del self._large[chunk.delivery_id]
            msg, body = entry
            msg.body = bytes(body)
            self._buffer.append(msg)
            self._arrived.set()

    def _on_rollback(self) -> None:
        """The router took back every unacknowledged delivery: drop the buffer
        (its credit was returned there) and wait for the redelivery."""
        self._buffer.clear()
        self._large.clear()
        self._unsettled = 0
        # (A window-0 request answered by a message still in the buffer stays
        # asked: the router returned that credit and answers it again.)

    def _on_error(self, err: MeshMQError) -> None:
        self._error = err
        self._arrived.set()

    def _create_request(self) -> bpb.CreateConsumer:
        return self._request

    def _on_failover(self) -> None:
        """The session's stream failed: what was delivered on it is the old node's
        to give again (buffered or handed, acked or not yet): forget it all."""
        self._incarnation += 1
        # (A deque, not a dict, while handing: it forgets the oldest at no cost per message.)
        before = {(node, mid): count for node, mid, count in self._handed}
        if len(self._handed_before) + len(before) > _REMEMBERED:
            self._handed_before.clear()  # older ones than the last stream's are not worth keeping
        self._handed_before.update(before)
        self._handed.clear()
        self._acks.clear()
        self._nacks.clear()
        self._start_afresh()

    def _hand_over(self) -> bpb.CloseConsumer:
        """The session moves to another node at a quiet moment (a rebalance): the old
        node gives back what this consumer buffered unseen and keeps what it handed for
        the acks still to come on the old stream; the consumer starts afresh on the new one.
        (Acks were flushed to the old stream just before.)"""
        close = bpb.CloseConsumer(consumer_id=self.id, last_handed_delivery_id=self.last_handed, keep_handed=True)
        self._moved = _Moved(self._incarnation, self._unsettled) if self._unsettled > 0 else None
        self._incarnation += 1
        self._start_afresh()
        return close

    def _start_afresh(self) -> None:
        """Nothing buffered, handed or credited on the new stream yet."""
        self._buffer.clear()
        self._large.clear()
        self._consumed = 0
        self._asked = False
        self.last_handed = 0
        self._unsettled = 0

    def _owes_old_stream(self) -> bool:
        return self._moved is not None and self._moved.unsettled > 0

    def _on_ready(self) -> None:
        """Recreated on the new stream: send what was held while it was being set up."""
        self._flush_acks()
        if self.window_size > 0 and self._consumed >= self.window_size // 2:
            self._credit(0)
        self._arrived.set()  # a receive() waiting with window 0 asks again

    def _on_recreate_failed(self, err: MeshMQError) -> None:
        self._on_error(err)

    # ------------------------------------------------------------ API

    def _ask_for_one(self) -> None:
        """consumerWindowSize=0: no buffering; one message is sent when the application asks."""
        if (self.window_size == 0 and not self._buffer and not self._asked and not self._closed
                and self._session.ready.is_set()):
            self._asked = True
            self.grant(1)  # one byte of credit lets exactly one message through

    async def receive(self, timeout: float | None = None) -> ReceivedMessage | None:
        """The next message, or None after `timeout` seconds without one."""
        while not self._buffer:
            if self._error is not None:
                raise self._error
            if self._closed:
                return None
            self._ask_for_one()
            self._arrived.clear()
            try:
                await wait_for(self._arrived.wait(), timeout)
            except asyncio.TimeoutError:
                return None
        return self._hand(self._buffer.popleft())

    def _hand(self, msg: ReceivedMessage) -> ReceivedMessage:
        """A message leaves the buffer for the application."""
        self.last_handed = msg.delivery_id
        self._unsettled += 1
        proto = msg.proto
        self._handed.append((proto.node_id, proto.message_id, msg.delivery_count))
        self._credit(msg.size)
        return msg

    async def receive_batch(self, max_messages: int, timeout: float | None = None) -> list[ReceivedMessage]:
        """Up to `max_messages` already-delivered messages, waiting up to `timeout` for the first."""
        first = await self.receive(timeout)
        if first is None:
            return []
        out = [first]
        buffer = self._buffer
        while buffer and len(out) < max_messages:
            out.append(self._hand(buffer.popleft()))
        return out

    def receive_nowait(self) -> ReceivedMessage | None:
        self._ask_for_one()
        if not self._buffer:
            if self._error is not None:
                raise self._error
            return None
        return self._hand(self._buffer.popleft())

    def __aiter__(self):
        return self

    async def __anext__(self) -> ReceivedMessage:
        msg = await self.receive()
        if msg is None:
            raise StopAsyncIteration
        return msg

    def _credit(self, size: int) -> None:
        # Grant credit back in chunks of half the window, as Artemis clients do.
        if self.window_size <= 0:
            return
        self._consumed += size
        if self._consumed >= self.window_size // 2 and self._session.ready.is_set():
            credits, self._consumed = self._consumed, 0
            self._session.write(bpb.SessionRequest(flow=bpb.Flow(consumer_id=self.id, credits=credits)))

    def grant(self, credits: int) -> None:
        """Grant `credits` bytes explicitly (receive() already asks for one message
        at a time when the consumer window is 0)."""
        if credits < 1:
            raise InvalidRequestError(f"credits must be a positive number of bytes, not {credits}")
        self._session.write(bpb.SessionRequest(flow=bpb.Flow(consumer_id=self.id, credits=credits)))

    def ack(self, msg: ReceivedMessage) -> None:
        if msg.incarnation != self._incarnation:
            self._settle_earlier(msg, nack=False)
            return
        if self._session.transacted:
            self._session.note_transaction_work()
        self._unsettled -= 1
        self._acks.append(msg.delivery_id)
        self._schedule()

    def nack(self, msg: ReceivedMessage) -> None:
        if msg.incarnation != self._incarnation:
            self._settle_earlier(msg, nack=True)
            return
        if self._session.transacted:
            self._session.note_transaction_work()
        self._unsettled -= 1
        self._nacks.append(msg.delivery_id)
        self._schedule()

    def _settle_earlier(self, msg: ReceivedMessage, *, nack: bool) -> None:
        """An ack or nack of a message handed on an earlier stream of the session: the
        stream a planned move left takes it while it lasts; after a failover its delivery
        id means nothing on the new stream (it may even name another message there)."""
        moved = self._moved
        if moved is not None and msg.incarnation == moved.incarnation and self._session.settle_on_old_stream(
            self.id, msg.delivery_id, nack=nack
        ):
            moved.unsettled -= 1
            if moved.unsettled <= 0:
                self._moved = None
                self._session.old_stream_settled()
            return
        if self._session.transacted:
            self._session.mark_rollback_only()  # its transaction cannot hold it: commit rolls back and says so
            return
        raise self._stale(msg, "given back" if nack else "acknowledged")

    def _stale(self, msg: ReceivedMessage, what: str) -> UnblockedError | None:
        """Why `msg` cannot be settled any more (handed on a stream the session failed
        over from), or None. The blocking API asks in the caller's thread."""
        moved = self._moved
        if (msg.incarnation == self._incarnation or self._session.transacted
                or moved is not None and msg.incarnation == moved.incarnation):
            return None
        return UnblockedError(
            f"message {msg.message_id} was delivered before the session failed over and cannot be {what} now; "
            "the node serving the queue delivers it again"
        )

    def _forget_old_stream(self) -> None:
        """The stream a planned move left has ended: acks of what it handed cannot reach it now."""
        self._moved = None

    def _schedule(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_acks)

    def _flush_acks(self) -> None:
        self._flush_scheduled = False
        if self._error is not None or not self._session.ready.is_set():
            return  # (held until the stream is back: _on_ready)
        if self._acks:
            acks, self._acks = self._acks, []
            self._session.write(bpb.SessionRequest(ack=bpb.AckBatch(consumer_id=self.id, delivery_ids=acks)))
        if self._nacks:
            nacks, self._nacks = self._nacks, []
            self._session.write(bpb.SessionRequest(nack=bpb.NackBatch(consumer_id=self.id, delivery_ids=nacks)))

    async def close(self, *, wait: bool = True) -> None:
        """Acks sent so far stand; anything delivered but not acknowledged is redelivered.
        Returns once the node has it all back in the queue (a node speaking protocol 4;
        Session._close_consumer); `wait` false (the session closing): at once."""
        if self._closed:
            return
        self._flush_acks()
        self._closed = True
        self._arrived.set()
        # (A consumer the node refused or ended has nothing there to close.)
        await self._session.close_consumer(self, on_node=self._error is None, wait=wait)
