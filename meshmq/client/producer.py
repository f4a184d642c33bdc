"""Producers: sends are gathered into one SendBatch per event-loop turn and
confirmed per batch; the confirmation window bounds what is in flight."""

from __future__ import annotations

import asyncio
import itertools
import math
import uuid
from collections.abc import Mapping
from typing import Protocol

from meshmq.errors import MeshMQError, MessageTooLargeError, Reason, error_for
from meshmq.transport import MAX_CLIENT_FRAME
from meshmq.properties import HEADER_PROPERTIES, PropertyValue, header_properties, set_properties
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import messages_pb2 as mpb

from .options import ClientOptions


class ProducerSession(Protocol):
    """What a producer needs from its session (session.py implements it): the stream
    and whether it is up, the transaction its sends join, a planned move it may have
    held up, and where a closed producer signs off."""

    # Set while the session's stream is up; cleared while it fails over.
    ready: asyncio.Event
    transacted: bool

    def write(self, req: bpb.SessionRequest) -> None: ...

    async def write_paced(self, req: bpb.SessionRequest) -> None: ...

    async def wait_ready(self) -> None: ...

    def note_transaction_work(self) -> None: ...

    def try_move(self) -> None: ...

    def forget_producer(self, producer_id: int) -> None: ...

ANYCAST, MULTICAST = mpb.ANYCAST, mpb.MULTICAST
_FRAME_MARGIN = 64 * 1024  # room for headers and properties within one frame
_ROUTING = {None: 0, "anycast": ANYCAST, "multicast": MULTICAST, ANYCAST: ANYCAST, MULTICAST: MULTICAST}


def _window(size: int) -> float:
    return size if size > 0 else math.inf


class Producer:
    def __init__(self, session: ProducerSession, producer_id: int, address: str, options: ClientOptions,
                 idempotent: bool = False) -> None:
        self._session = session
        self.id = producer_id
        self.address = address
        # An idempotent producer (beyond Artemis) stamps each message with a duplicate id of
        # its own, unique to this producer object: after a failover it sends again what was
        # not confirmed, and the router drops what it had already stored (the duplicate-id
        # cache is journaled and replicated), so the application sees neither loss nor a copy.
        self.idempotent_key = uuid.uuid4().hex if idempotent else ""
        self._sequence = itertools.count()
        self.resent = 0  # messages an idempotent producer sent again after failovers
        # Sends wait while unconfirmed bytes reach the smaller window: confirmations
        # (what is in flight) and producer credits (what the router will take
        # while an address blocks). -1 (Artemis's value for "no window"): no limit.
        self._window = min(_window(options.confirmationWindowSize), _window(options.producerWindowSize))
        self.window_size = options.producerWindowSize  # told to the router at create
        self._large_at = options.minLargeMessageSize
        self._max_batch = options.producerMaxBatch
        self._batch_bytes = max(1, min(self._window // 4, MAX_CLIENT_FRAME // 4))
        self._batch_ids = itertools.count(1)
        self._req: bpb.SessionRequest | None = None
        self._futs: list[asyncio.Future] = []
        # batch id -> (futures, bytes, the request: kept for an idempotent producer's resend)
        self._inflight: dict[int, tuple[list[asyncio.Future], int, bpb.SessionRequest | None]] = {}
        self._resend: list[tuple[list[asyncio.Future], int, bpb.SessionRequest]] = []
        self._inflight_bytes = 0
        self._pending_bytes = 0
        self._room = asyncio.Event()
        self._room.set()
        self._flush_scheduled = False
        self._failure: MeshMQError | None = None
        self._large_sending = 0  # large messages whose chunks are on their way (a session moves only between them)

    async def send(self, body: bytes = b"", **kwargs) -> None:
        """Send one message and wait until the router confirms it (durable: stored)."""
        await (await self.send_async(body, **kwargs))

    async def send_async(
        self,
        body: bytes = b"",
        *,
        address: str = "",
        properties: Mapping[str, PropertyValue] | None = None,
        durable: bool = True,
        priority: int = 4,
        ttl: int = 0,
        expiration: int = 0,
        duplicate_id: str = "",
        routing_type: str | int | None = None,
        reply_to: str = "",
        correlation_id: str = "",
        type: str = "",
        group_id: str = "",
        group_seq: int = 0,
        delivery_time: int = 0,
        delivery_delay: int = 0,
    ) -> asyncio.Future[None]:
        """Queue one message; returns a future that completes at its confirm.

        Waits only while the confirmation window is full. `ttl` (ms) sets the
        expiration relative to now; `expiration` sets it absolutely.
        `reply_to`, `correlation_id`, `type`, `group_id` and `group_seq` are
        the JMS headers JMSReplyTo, JMSCorrelationID, JMSType, JMSXGroupID and
        JMSXGroupSeq (selectors name them so); unset, they cost nothing.
        Scheduled delivery: the router stores and confirms the message at
        once but delivers it no earlier than `delivery_time` (ms since the
        epoch) or `delivery_delay` ms after it accepts it (timed by the
        router's clock, not this one's). Artemis's header properties in
        `properties` (`_AMQ_SCHED_DELIVERY`, `_AMQ_SCHED_DELAY`,
        `_AMQ_GROUP_ID`/`JMSXGroupID`, `_AMQ_GROUP_SEQUENCE`/`JMSXGroupSeq`)
        mean the same as these arguments and are sent as the fields.
        """
        session = self._session
        if not session.ready.is_set():
            await session.wait_ready()  # a failover in progress
        if self._failure is not None:
            raise self._failure
        if session.transacted:
            session.note_transaction_work()
        if not 0 <= priority <= 9:
            raise ValueError(f"priority must be 0..9, got {priority}")
        if routing_type not in _ROUTING:
            raise ValueError(f"routing_type must be 'anycast' or 'multicast', got {routing_type!r}")
        if self.idempotent_key:
            if duplicate_id:
                raise ValueError("an idempotent producer stamps its own duplicate ids; do not pass one")
            duplicate_id = f"{self.idempotent_key}:{next(self._sequence)}"
        body = bytes(body)
        if ttl:
            import time

            expiration = int(time.time() * 1000) + ttl
        fields = dict(
            address=address,
            durable=durable,
            priority=priority,
            expiration=expiration,
            duplicate_id=duplicate_id,
            routing_type=_ROUTING[routing_type],
        )
        if reply_to or correlation_id or type or group_id or group_seq:
            fields.update(reply_to=reply_to, correlation_id=correlation_id, type=type, group_id=group_id,
                          group_seq=group_seq)
        if delivery_time or delivery_delay:
            fields.update(delivery_time=delivery_time, delivery_delay=delivery_delay)
        if properties and not HEADER_PROPERTIES.keys().isdisjoint(properties):
            properties = header_properties(properties, fields)
        if fields.get("delivery_time", 0) < 0 or fields.get("delivery_delay", 0) < 0:
            raise ValueError("delivery_time and delivery_delay must not be negative")
        if len(body) > self._large_at:
            return await self._send_large(body, properties, fields)
        if len(body) > MAX_CLIENT_FRAME - _FRAME_MARGIN:
            raise MessageTooLargeError(
                f"a {len(body)}-byte body cannot travel in one frame (limit {MAX_CLIENT_FRAME}); "
                f"lower minLargeMessageSize (now {self._large_at}) so it is sent in chunks"
            )
        while self._inflight_bytes + self._pending_bytes >= self._window:
            self._room.clear()
            await self._room.wait()
            if self._failure is not None:
                raise self._failure
            if not session.ready.is_set():
                await session.wait_ready()
        if self._req is None:
            self._req = bpb.SessionRequest()
            self._req.send.producer_id = self.id
        batch = self._req.send.messages
        m = batch.add(body=body, **fields)
        if properties:
            set_properties(m.properties, properties)
        if properties or len(body) > MAX_CLIENT_FRAME // 2:  # only then can it come near the frame limit
            encoded = m.ByteSize()
            if encoded > MAX_CLIENT_FRAME - _FRAME_MARGIN:
                del batch[-1]
                if not batch:
                    self._req = None
                raise MessageTooLargeError(
                    f"the message is {encoded} bytes encoded ({len(body)} of body, the rest properties and "
                    f"headers); one frame holds {MAX_CLIENT_FRAME - _FRAME_MARGIN}: send fewer or smaller properties"
                )
        fut = asyncio.get_running_loop().create_future()
        self._futs.append(fut)
        self._pending_bytes += len(body) + 64
        # A quarter window per batch keeps several batches in flight, so the
        # stream is pipelined instead of stop-and-wait on each confirm.
        if len(self._futs) >= self._max_batch or self._pending_bytes >= self._batch_bytes:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        return fut

    def _flush(self) -> None:
        self._flush_scheduled = False
        req, futs = self._req, self._futs
        if req is None or self._failure is not None:
            return
        self._req, self._futs = None, []
        bid = next(self._batch_ids)
        req.send.batch_id = bid
        self._inflight[bid] = (futs, self._pending_bytes, req if self.idempotent_key else None)
        self._inflight_bytes += self._pending_bytes
        self._pending_bytes = 0
        self._session.write(req)

    async def _send_large(self, body: bytes, properties, fields) -> asyncio.Future[None]:
        self._flush()
        bid = next(self._batch_ids)
        head = bpb.SessionRequest()
        head.send.producer_id = self.id
        head.send.batch_id = bid
        m = head.send.messages.add(large=True, body_size=len(body), **fields)
        if properties:
            set_properties(m.properties, properties)
        fut = asyncio.get_running_loop().create_future()
        self._inflight[bid] = ([fut], 0, None)
        session = self._session
        self._large_sending += 1
        try:
            await session.write_paced(head)
            step = self._large_at
            view = memoryview(body)
            for off in range(0, len(body), step):
                chunk = bpb.LargeChunk(
                    producer_id=self.id, batch_id=bid, data=bytes(view[off : off + step]), last=off + step >= len(body)
                )
                await session.write_paced(bpb.SessionRequest(large_chunk=chunk))
        finally:
            self._large_sending -= 1
            session.try_move()
        return fut

    async def flush(self) -> None:
        """Send what is queued and wait for every outstanding confirm."""
        self._flush()
        waiting = [f for futs, _, _ in [*self._inflight.values(), *self._resend] for f in futs]
        if waiting:
            await asyncio.wait(waiting)

    @property
    def unconfirmed(self) -> int:
        """Messages sent (or queued to be) and not confirmed yet."""
        return len(self._futs) + sum(len(futs) for futs, _, _ in [*self._inflight.values(), *self._resend])

    def _on_confirm(self, c: bpb.SendConfirm) -> None:
        futs, size, _ = self._inflight.pop(c.batch_id, ([], 0, None))
        self._inflight_bytes -= size
        failed = {r.index: r for r in c.rejections}
        if self.idempotent_key:  # its ids are its own: a duplicate is a resend of a stored message
            failed = {i: r for i, r in failed.items() if r.reason != Reason.DUPLICATE_ID.value}
        for i, fut in enumerate(futs):
            if fut.done():
                continue
            r = failed.get(i)
            if r is None:
                fut.set_result(None)
            else:
                fut.set_exception(error_for(r.reason, r.detail))
                fut.exception()  # retrieved here: a rejected send_async nobody awaits is not an error log
        if self._inflight_bytes + self._pending_bytes < self._window:
            self._room.set()

    def _on_error(self, batch_id: int, err: MeshMQError) -> None:
        futs, size, _ = self._inflight.pop(batch_id, ([], 0, None))
        self._inflight_bytes -= size
        for f in futs:
            if not f.done():
                f.set_exception(err)
        self._room.set()

    def _create_request(self) -> bpb.CreateProducer:
        return bpb.CreateProducer(producer_id=self.id, address=self.address, window_size=self.window_size)

    def _on_unblocked(self, err: MeshMQError) -> None:
        """The session's stream failed: every unconfirmed send fails with `err`
        (its outcome is unknown) and the producer starts afresh on the next stream;
        an idempotent producer outside a transaction keeps them to send again."""
        batches = list(self._inflight.values())
        if self._req is not None:
            batches.append((self._futs, self._pending_bytes, self._req))
        self._keep_or_fail(batches, err)
        self._inflight.clear()
        self._req, self._futs = None, []
        self._inflight_bytes = self._pending_bytes = 0
        self._room.set()

    def _on_old_stream_lost(self, batch_ids: set[int], err: MeshMQError) -> None:
        """The stream a planned move left ended before confirming `batch_ids`: their
        outcome is unknown. An idempotent producer outside a transaction sends them
        again on the current stream (the router drops what it had); others fail with `err`."""
        batches = [self._inflight.pop(bid) for bid in sorted(batch_ids) if bid in self._inflight]
        self._inflight_bytes -= sum(size for _, size, _ in batches)
        self._keep_or_fail(batches, err)
        if self._resend and self._session.ready.is_set():
            self._send_again()
        self._room.set()

    def _keep_or_fail(self, batches: list[tuple[list[asyncio.Future], int, bpb.SessionRequest | None]],
                      err: MeshMQError) -> None:
        """Batches whose outcome is unknown: kept to send again by an idempotent
        producer outside a transaction, else their sends fail with `err`."""
        keep = bool(self.idempotent_key) and not self._session.transacted
        for futs, size, req in batches:
            if keep and req is not None:
                self._resend.append((futs, size, req))
                continue
            for f in futs:
                if not f.done():
                    f.set_exception(err)
                    f.exception()  # retrieved: a send_async nobody awaits is not an error log

    def _send_again(self) -> None:
        """On the new stream, before anything else this producer sends: what an
        idempotent producer had unconfirmed, in its order, under new batch ids."""
        resend, self._resend = self._resend, []
        for futs, size, req in resend:
            bid = next(self._batch_ids)
            req.send.batch_id = bid
            self._inflight[bid] = (futs, size, req)
            self._inflight_bytes += size
            self.resent += len(futs)
            self._session.write(req)

    def _on_recreate_failed(self, err: MeshMQError) -> None:
        self._on_failure(err)

    def _on_failure(self, err: MeshMQError) -> None:
        self._failure = err
        for futs, _, _ in [*self._inflight.values(), *self._resend]:
            for f in futs:
                if not f.done():
                    f.set_exception(err)
        for f in self._futs:
            if not f.done():
                f.set_exception(err)
        self._inflight.clear()
        self._resend = []
        self._room.set()

    async def close(self) -> None:
        await self.flush()
        session = self._session
        session.forget_producer(self.id)
        if self._failure is None and session.ready.is_set():
            session.write(bpb.SessionRequest(close_producer=bpb.CloseProducer(producer_id=self.id)))
