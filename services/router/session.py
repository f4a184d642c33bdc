"""One client session: the requests on its stream and the responses back.

A session multiplexes producers and consumers. Sends are routed as they
arrive; a batch holding durable messages is confirmed (and its messages
become visible to consumers) when its journal commit completes, in arrival
order. Deliveries for a consumer are gathered into one frame per loop turn.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from meshmq.errors import BrokerError, Reason
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from .broker import MULTICAST, ANYCAST, Broker, compile_filter
from .consumer import ServerConsumer
from .message import Ref, ServerMessage
from .transactions import LocalTransaction

log = logging.getLogger("meshmq.router.session")

# Outgoing frames buffered before a large-message stream waits for the client.
_HIGH_WATER = 16
_LARGE_READ_CHUNKS = 4
_LARGE_COMMIT_EVERY = 4
DELIVERED = jpb.DELIVERED


@dataclass
class _LargeSend:
    producer_id: int
    batch_id: int
    msg: ServerMessage
    dup: tuple[str, str, int] | None
    seq: int = 0
    received: int = 0


class ServerSession:
    def __init__(self, broker: Broker, session_id: str, client_id: str, transacted: bool, user: str) -> None:
        self.broker = broker
        self.id = session_id
        self.client_id = client_id
        self.user = user
        self.out: asyncio.Queue[bpb.SessionResponse | None] = asyncio.Queue()
        self.writable = asyncio.Event()
        self.writable.set()
        self.producers: dict[int, str] = {}
        self.consumers: dict[int, ServerConsumer] = {}
        self.tx: LocalTransaction | None = LocalTransaction() if transacted else None
        self._tail: asyncio.Future | None = None
        self._to_flush: dict[int, ServerConsumer] = {}
        self._flush_scheduled = False
        self._large_in: _LargeSend | None = None
        self._streams: set[asyncio.Task] = set()
        self.closed = False

    # ------------------------------------------------------------ output

    def send(self, resp: bpb.SessionResponse) -> None:
        self.out.put_nowait(resp)
        if self.out.qsize() >= _HIGH_WATER:
            self.writable.clear()

    def error(self, err: BrokerError, *, request_id: int = 0, producer_id: int = 0, consumer_id: int = 0) -> None:
        self.send(
            bpb.SessionResponse(
                error=bpb.SessionError(
                    request_id=request_id,
                    producer_id=producer_id,
                    consumer_id=consumer_id,
                    reason=err.reason.value,
                    message=err.message,
                )
            )
        )

    # ------------------------------------------------------------ input

    async def handle(self, req: bpb.SessionRequest) -> None:
        kind = req.WhichOneof("kind")
        if kind == "send":
            await self._on_send(req.send)
        elif kind == "ack":
            self._on_ack(req.ack)
        elif kind == "flow":
            c = self.consumers.get(req.flow.consumer_id)
            if c is not None:
                c.grant(req.flow.credits)
                self.broker.schedule_dispatch(c.queue)
        elif kind == "large_chunk":
            await self._on_large_chunk(req.large_chunk)
        elif kind == "nack":
            self._on_nack(req.nack)
        elif kind == "create_producer":
            self._on_create_producer(req.create_producer)
        elif kind == "create_consumer":
            self._on_create_consumer(req.create_consumer)
        elif kind == "close_consumer":
            c = self.consumers.get(req.close_consumer.consumer_id)
            if c is not None:
                self._close_consumer(c)
        elif kind == "close_producer":
            self.producers.pop(req.close_producer.producer_id, None)
        elif kind == "commit":
            await self._on_commit(req.commit.request_id)
        elif kind == "rollback":
            self._on_rollback(req.rollback.request_id)
        else:
            self.error(BrokerError(Reason.INVALID_REQUEST, f"unexpected request {kind or '(empty)'} on an open session"))

    def _on_create_producer(self, cp: bpb.CreateProducer) -> None:
        if cp.producer_id in self.producers:
            self.error(
                BrokerError(Reason.INVALID_REQUEST, f"producer id {cp.producer_id} is already in use"),
                producer_id=cp.producer_id,
            )
            return
        self.producers[cp.producer_id] = cp.address
        self.send(bpb.SessionResponse(producer_created=bpb.ProducerCreated(producer_id=cp.producer_id)))

    # ------------------------------------------------------------ sending

    def _accept(self, m: mpb.Message, default_address: str) -> tuple[ServerMessage, tuple[str, str, int] | None]:
        """Accept one message and claim its duplicate id; DUPLICATE_ID if already seen."""
        msg = self.broker.accept(m, default_address, self.user)
        if not m.duplicate_id:
            return msg, None
        cache = self.broker.dup_cache(msg.address)
        if m.duplicate_id in cache:
            raise BrokerError(
                Reason.DUPLICATE_ID, f"duplicate id {m.duplicate_id!r} was already sent to {msg.address!r}"
            )
        pos, evicted = cache.add(m.duplicate_id)
        if self.broker.persist_id_cache and evicted:
            batch = self.broker.batch()
            for dup_id, old in evicted:
                batch.delete_duplicate_ids.add(address=msg.address, duplicate_id=dup_id, position=old)
        return msg, (msg.address, m.duplicate_id, pos)

    def _persist_dup(self, dup: tuple[str, str, int] | None) -> None:
        if dup is not None and self.broker.persist_id_cache:
            self.broker.batch().add_duplicate_ids.add(address=dup[0], duplicate_id=dup[1], position=dup[2])

    def _forget_dups(self, dups: list[tuple[str, str, int]]) -> None:
        for address, dup_id, pos in dups:
            self.broker.dup_cache(address).remove(dup_id, pos)
            if self.broker.persist_id_cache:
                self.broker.batch().delete_duplicate_ids.add(address=address, duplicate_id=dup_id, position=pos)

    async def _on_send(self, sb: bpb.SendBatch) -> None:
        if sb.producer_id not in self.producers:
            self.error(
                BrokerError(Reason.INVALID_REQUEST, f"unknown producer id {sb.producer_id}"),
                producer_id=sb.producer_id,
                request_id=sb.batch_id,
            )
            return
        default_address = self.producers[sb.producer_id]
        if len(sb.messages) == 1 and sb.messages[0].large:
            self._begin_large(sb, default_address)
            return
        confirm = bpb.SendConfirm(producer_id=sb.producer_id, batch_id=sb.batch_id)
        staged: list[Ref] = []
        accepted: list[int] = []
        dups: list[tuple[str, str, int]] = []
        broker = self.broker
        for i, m in enumerate(sb.messages):
            try:
                if m.large:
                    raise BrokerError(Reason.INVALID_REQUEST, "a large message must be the only message of its batch")
                msg, dup = self._accept(m, default_address)
                if self.tx is not None:
                    self.tx.sends.append(msg)
                    if dup:
                        self.tx.duplicate_ids.append(dup)
                    continue
                queues = broker.route(msg)
                self._persist_dup(dup)
                if dup:
                    dups.append(dup)
                staged.extend(broker.stage(msg, queues))
                accepted.append(i)
            except BrokerError as exc:
                confirm.rejections.add(index=i, reason=exc.reason.value, detail=exc.message)
        self._complete_send(confirm, staged, accepted, dups)

    def _complete_send(
        self, confirm: bpb.SendConfirm, staged: list[Ref], accepted: list[int], dups: list[tuple[str, str, int]]
    ) -> None:
        """Enqueue and confirm once stored; in arrival order with earlier batches."""
        broker = self.broker

        def finish(resp: jpb.AppendResponse | None) -> None:
            if resp is not None and not resp.ok:
                self._forget_dups(dups)
                for i in accepted:
                    confirm.rejections.add(index=i, reason=resp.reason, detail=resp.message)
                broker.report_lost(staged, resp)
            else:
                broker.enqueue(staged)
            if not self.closed:
                self.send(bpb.SessionResponse(confirm=confirm))

        if any(r.persisted for r in staged):
            fut = self._tail = broker.batcher.commit_future()
            fut.add_done_callback(lambda f: finish(f.result()))
        elif self._tail is not None and not self._tail.done():
            self._tail.add_done_callback(lambda f: finish(None))
        else:
            finish(None)

    def _begin_large(self, sb: bpb.SendBatch, default_address: str) -> None:
        m = sb.messages[0]
        try:
            if self._large_in is not None:
                raise BrokerError(Reason.INVALID_REQUEST, "a large message is already being sent on this session")
            msg, dup = self._accept(m, default_address)
        except BrokerError as exc:
            confirm = bpb.SendConfirm(producer_id=sb.producer_id, batch_id=sb.batch_id)
            confirm.rejections.add(index=0, reason=exc.reason.value, detail=exc.message)
            self.send(bpb.SessionResponse(confirm=confirm))
            self._large_in = _LargeSend(sb.producer_id, sb.batch_id, None, None)  # swallow its chunks
            return
        self._large_in = _LargeSend(sb.producer_id, sb.batch_id, msg, dup)

    async def _on_large_chunk(self, chunk: bpb.LargeChunk) -> None:
        st = self._large_in
        if st is None or st.producer_id != chunk.producer_id or st.batch_id != chunk.batch_id:
            self.error(BrokerError(Reason.INVALID_REQUEST, "large-message chunk without a large message header"))
            return
        if st.msg is None:  # the header was refused; drop the body
            if chunk.last:
                self._large_in = None
            return
        broker = self.broker
        broker.batch().add_large_chunks.add(message_id=st.msg.id, seq=st.seq, data=chunk.data)
        st.seq += 1
        st.received += len(chunk.data)
        if st.seq % _LARGE_COMMIT_EVERY == 0 or chunk.last:
            # Waiting here holds the stream, so HTTP/2 flow control paces the producer:
            # the router never holds more than a few chunks of a large body.
            resp = await broker.batcher.commit_future()
            if not resp.ok:
                self._abort_large(st, BrokerError(Reason(resp.reason), resp.message))
                return
        if not chunk.last:
            return
        self._large_in = None
        confirm = bpb.SendConfirm(producer_id=st.producer_id, batch_id=st.batch_id)
        if st.received != st.msg.proto.body_size:
            self._abort_large(
                st,
                BrokerError(
                    Reason.INVALID_REQUEST,
                    f"large message body was {st.received} bytes, header said {st.msg.proto.body_size}",
                ),
            )
            return
        dups = [st.dup] if st.dup else []
        if self.tx is not None:
            self.tx.sends.append(st.msg)
            self.tx.duplicate_ids.extend(dups)
            self.send(bpb.SessionResponse(confirm=confirm))
            return
        try:
            queues = broker.route(st.msg)
        except BrokerError as exc:
            self._abort_large(st, exc)
            return
        self._persist_dup(st.dup)
        self._complete_send(confirm, broker.stage(st.msg, queues), [0], dups)

    def _abort_large(self, st: _LargeSend, err: BrokerError) -> None:
        self._large_in = None
        if st.dup:
            self._forget_dups([st.dup])
        self.broker.batch().delete_large_messages.append(st.msg.id)
        confirm = bpb.SendConfirm(producer_id=st.producer_id, batch_id=st.batch_id)
        confirm.rejections.add(index=0, reason=err.reason.value, detail=err.message)
        self.send(bpb.SessionResponse(confirm=confirm))

    # ------------------------------------------------------------ consuming

    def _on_create_consumer(self, cc: bpb.CreateConsumer) -> None:
        try:
            if cc.consumer_id in self.consumers:
                raise BrokerError(Reason.INVALID_REQUEST, f"consumer id {cc.consumer_id} is already in use")
            queue, selector = self._consumer_queue(cc)
        except BrokerError as exc:
            self.error(exc, consumer_id=cc.consumer_id)
            return
        c = ServerConsumer(self, cc.consumer_id, queue, selector, cc.filter if cc.queue else "", cc.window_size)
        self.consumers[c.id] = c
        queue.consumers.append(c)
        self.send(bpb.SessionResponse(consumer_created=bpb.ConsumerCreated(consumer_id=c.id, queue=queue.name)))
        self.broker.schedule_dispatch(queue)

    def _consumer_queue(self, cc: bpb.CreateConsumer):
        broker = self.broker
        if cc.queue and cc.address:
            raise BrokerError(Reason.INVALID_REQUEST, "give either a queue or an address to subscribe to, not both")
        if cc.queue:
            selector = compile_filter(cc.filter)
            q = broker.queues.get(cc.queue)
            if q is None:
                if not broker.settings(cc.queue).auto_create_queues:
                    raise BrokerError(
                        Reason.QUEUE_NOT_FOUND, f"queue {cc.queue!r} does not exist and auto-create-queues is false"
                    )
                rt = cc.routing_type or ANYCAST
                q = broker.create_queue(cc.queue, cc.queue, rt, auto_created=True)
            return q, selector
        if not cc.address:
            raise BrokerError(Reason.INVALID_REQUEST, "a consumer needs a queue or an address")
        name = cc.subscription or f"{cc.address}.{self.id}.{cc.consumer_id}"
        q = broker.queues.get(name)
        if q is not None:
            if q.address != cc.address or q.routing_type != MULTICAST:
                raise BrokerError(
                    Reason.QUEUE_EXISTS, f"queue {name!r} exists on address {q.address!r}, not as a subscription of {cc.address!r}"
                )
            if q.filter_text != cc.filter:
                raise BrokerError(
                    Reason.INVALID_REQUEST,
                    f"subscription {name!r} exists with filter {q.filter_text!r}; delete it to change the filter",
                )
            return q, None
        durable = bool(cc.subscription)
        q = broker.create_queue(
            name, cc.address, MULTICAST, cc.filter, durable=durable, temporary=not durable, auto_created=False
        )
        return q, None

    def delivered(self, c: ServerConsumer, did: int, ref: Ref) -> None:
        # A first delivery is recorded by the ACKNOWLEDGED event's delivery
        # count; redeliveries get their own DELIVERED event (docs/journal-schema.md).
        if ref.persisted and ref.delivery_count > 1:
            self.broker.event(DELIVERED, ref)
        if ref.msg.large:
            self._flush_consumer(c)
            c.streaming = True
            task = asyncio.create_task(self._stream_large(c, did, ref))
            self._streams.add(task)
            task.add_done_callback(self._streams.discard)
            return
        if c.id not in self._to_flush:
            self._to_flush[c.id] = c
            if not self._flush_scheduled:
                self._flush_scheduled = True
                asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        pending, self._to_flush = self._to_flush, {}
        for c in pending.values():
            self._flush_consumer(c)

    def _flush_consumer(self, c: ServerConsumer) -> None:
        if not c.pending or c.closed:
            c.pending.clear()
            return
        resp = bpb.SessionResponse()
        batch = resp.deliveries
        batch.consumer_id = c.id
        add = batch.deliveries.add
        for did, ref in c.pending:
            d = add(delivery_id=did, delivery_count=ref.delivery_count)
            d.message.CopyFrom(ref.msg.proto)
        c.pending.clear()
        self.send(resp)

    async def _stream_large(self, c: ServerConsumer, did: int, ref: Ref) -> None:
        msg = ref.msg
        total, sent, seq = msg.proto.body_size, 0, 0
        try:
            while sent < total and not c.closed:
                chunks = await self.broker.journal.read_large(
                    jpb.ReadLargeMessageRequest(message_id=msg.id, from_seq=seq, max_chunks=_LARGE_READ_CHUNKS)
                )
                if not chunks:
                    raise RuntimeError(f"large message {msg.id} is missing chunks from {seq}")
                for ch in chunks:
                    await self.writable.wait()
                    if c.closed:
                        return
                    sent += len(ch.data)
                    seq = ch.seq + 1
                    self.send(
                        bpb.SessionResponse(
                            large_chunk=bpb.LargeChunk(
                                consumer_id=c.id, delivery_id=did, data=ch.data, last=sent >= total
                            )
                        )
                    )
        except Exception:
            log.exception("streaming large message %d to consumer %d failed", msg.id, c.id)
        finally:
            c.streaming = False
            if not c.closed:
                self.broker.schedule_dispatch(c.queue)

    def _on_ack(self, ab: bpb.AckBatch) -> None:
        c = self.consumers.get(ab.consumer_id)
        if c is None:
            return
        broker = self.broker
        for did in ab.delivery_ids:
            ref = c.delivering.pop(did, None)
            if ref is None:
                continue
            c.messages_acknowledged += 1
            if self.tx is not None:
                self.tx.acks.append(ref)
            else:
                broker.acknowledge(ref)

    def _on_nack(self, nb: bpb.NackBatch) -> None:
        c = self.consumers.get(nb.consumer_id)
        if c is None:
            return
        for did in nb.delivery_ids:
            ref = c.delivering.pop(did, None)
            if ref is not None:
                self.broker.cancel(ref)

    def _close_consumer(self, c: ServerConsumer) -> None:
        c.closed = True
        self.consumers.pop(c.id, None)
        q = c.queue
        if c in q.consumers:
            q.consumers.remove(c)
        # Cancel newest first so the oldest ends up back at the head of the queue.
        for did in sorted(c.delivering, reverse=True):
            self.broker.cancel(c.delivering[did])
        c.delivering.clear()
        c.pending.clear()
        self.broker.maybe_auto_delete(q)
        if not q.deleted:
            self.broker.schedule_dispatch(q)

    def close_consumer_of_deleted_queue(self, c: ServerConsumer) -> None:
        """The queue is being deleted under the consumer: close it and tell the client."""
        self._close_consumer(c)
        self.error(BrokerError(Reason.QUEUE_NOT_FOUND, f"queue {c.queue.name!r} was deleted"), consumer_id=c.id)

    # ------------------------------------------------------------ transactions

    async def _on_commit(self, request_id: int) -> None:
        tx = self.tx
        if tx is None:
            self.error(BrokerError(Reason.NOT_TRANSACTED, "commit on a session that is not transacted"), request_id=request_id)
            return
        self.tx = LocalTransaction()
        broker = self.broker
        try:
            routed = [(msg, broker.route(msg)) for msg in tx.sends]
        except BrokerError as exc:
            self._undo(tx)
            self.error(
                BrokerError(Reason.TRANSACTION_ROLLED_BACK, f"transaction rolled back: {exc.message}"),
                request_id=request_id,
            )
            return
        staged: list[Ref] = []
        for dup in tx.duplicate_ids:
            self._persist_dup(dup)
        for msg, queues in routed:
            staged.extend(broker.stage(msg, queues))
        for ref in tx.acks:
            broker.acknowledge(ref)
        resp = await broker.batcher.commit_future()
        if not resp.ok:
            self._forget_dups(tx.duplicate_ids)
            self.error(
                BrokerError(Reason.TRANSACTION_ROLLED_BACK, f"transaction not stored: {resp.reason} {resp.message}"),
                request_id=request_id,
            )
            return
        broker.enqueue(staged)
        self.send(bpb.SessionResponse(tx_result=bpb.TxResult(request_id=request_id, committed=True)))

    def _on_rollback(self, request_id: int) -> None:
        if self.tx is None:
            self.error(BrokerError(Reason.NOT_TRANSACTED, "rollback on a session that is not transacted"), request_id=request_id)
            return
        tx, self.tx = self.tx, LocalTransaction()
        self._undo(tx)
        self.send(bpb.SessionResponse(tx_result=bpb.TxResult(request_id=request_id, committed=False)))

    def _undo(self, tx: LocalTransaction) -> None:
        """Discard a transaction's sends; its acknowledged messages are redelivered."""
        for address, dup_id, pos in tx.duplicate_ids:
            self.broker.dup_cache(address).remove(dup_id, pos)
        for msg in tx.sends:
            if msg.large:
                self.broker.batch().delete_large_messages.append(msg.id)
        for ref in reversed(tx.acks):
            self.broker.cancel(ref)

    # ------------------------------------------------------------ end

    async def drain(self) -> None:
        """Wait until every send received so far is confirmed."""
        if self._tail is not None and not self._tail.done():
            await asyncio.wait([self._tail])

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for c in list(self.consumers.values()):
            self._close_consumer(c)
        if self.tx is not None:
            self._undo(self.tx)
            self.tx = None
        if self._large_in is not None and self._large_in.msg is not None:
            self.broker.batch().delete_large_messages.append(self._large_in.msg.id)
        for t in self._streams:
            t.cancel()
