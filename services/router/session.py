"""One client session: its commands in, its responses out.

A session multiplexes producers and consumers, and is the delivery target of
its consumers. Sends are handed to the broker as whole batches; a batch
holding durable messages is confirmed (and its messages become visible to
consumers) when its journal commit completes, in arrival order with the
session's earlier batches. Deliveries for a consumer are gathered into one
frame per loop turn. This module speaks the client protocol's responses;
everything it receives was converted at the edge (requests.py).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable

from meshmq.errors import BrokerError, Reason
from meshmq.security.authorization import Permission
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import journal_pb2 as jpb

from . import requests as rq
from . import subscriptions
from .access import Access, log_refusal
from .addresses import compile_filter, not_internal
from .broker import Broker
from .client_connections import ClientConnection
from .consumer import ServerConsumer
from .large_body import send_body
from .large_messages import LargeMessageReceiver, UploadDone
from .message import Ref
from .producer_flow import HeldSends, batch_bytes, held_bytes_allowed
from .queue import Queue
from .routing import ANYCAST, MULTICAST
from .send_pipeline import StagedSend
from .temporary_queues import Owner, consume_refusal
from .transactions import LocalTransaction

log = logging.getLogger("meshmq.router.session")

# Outgoing frames buffered before a large-message stream waits for the client.
_HIGH_WATER = 16
# Consumer ids closed on a session that are remembered: credit, acks and nacks for one of them
# may still be on their way (the client closed it, or its queue was deleted) and are ignored;
# an id the session never had is refused.
CLOSED_CONSUMER_IDS_KEPT = 1024
DELIVERED = jpb.DELIVERED


class ServerSession:
    # A delivery marked first of its group reaches the client with group-first-key
    # set (ServerConsumer.deliver_first); a cluster or network link forwards the message as stored.
    shows_group_first = True
    # The client's address (the gRPC peer) and when the session opened (ms), set by
    # BrokerServicer for ListConnections (connections.py); why management ended it, if it did.
    peer = ""
    since = 0
    ended_by: BrokerError | None = None
    # The client connection it belongs to (client_connections.py), set by BrokerServicer;
    # None (a session driven without a servicer, e.g. bench/router_cpu.py): no temporary queues.
    connection: ClientConnection | None = None

    def __init__(self, broker: Broker, session_id: str, client_id: str, transacted: bool, user: str,
                 access: Access | None = None) -> None:
        self.broker = broker
        self.id = session_id
        self.client_id = client_id
        self.user = user
        # What the user may do (access.py); None: nothing to check.
        self.access = access
        self.out: asyncio.Queue[bpb.SessionResponse | None] = asyncio.Queue()
        self.writable = asyncio.Event()
        self.writable.set()
        self.producers: dict[int, str] = {}
        self._credit: dict[int, int] = {}  # producer id -> bytes the router holds for it while blocked
        self._held: dict[int, HeldSends] = {}  # producers whose sends wait for a blocked address
        self.consumers: dict[int, ServerConsumer] = {}
        self._closed_consumers: dict[int, None] = {}  # ids, oldest first (CLOSED_CONSUMER_IDS_KEPT)
        self.tx: LocalTransaction | None = LocalTransaction() if transacted else None
        self.large = LargeMessageReceiver(broker)
        self._tail: asyncio.Future | None = None
        self._to_flush: dict[int, ServerConsumer] = {}
        self._flush_scheduled = False
        self._streams: set[asyncio.Task] = set()
        self.closed = False
        self._handlers = {
            rq.SendMessages: self._on_send,
            rq.Acknowledge: self._on_ack,
            rq.GrantCredits: self._on_credits,
            rq.LargeBodyChunk: self._on_large_chunk,
            rq.Reject: self._on_reject,
            rq.CreateProducer: self._on_create_producer,
            rq.CreateConsumer: self._on_create_consumer,
            rq.CloseConsumer: self._on_close_consumer,
            rq.CloseProducer: self._on_close_producer,
            rq.Commit: self._on_commit,
            rq.Rollback: self._on_rollback,
            rq.Unsubscribe: self._on_unsubscribe,
            rq.CreateTemporaryQueue: self._on_create_temporary_queue,
            rq.DeleteTemporaryQueue: self._on_delete_temporary_queue,
        }

    # ------------------------------------------------------------ output

    def send(self, resp: bpb.SessionResponse) -> None:
        self.out.put_nowait(resp)
        if self.out.qsize() >= _HIGH_WATER:
            self.writable.clear()

    def error(self, err: BrokerError, *, request_id: int = 0, producer_id: int = 0, consumer_id: int = 0) -> None:
        self.send(
            bpb.SessionResponse(
                error=bpb.SessionError(
                    request_id=request_id, producer_id=producer_id, consumer_id=consumer_id,
                    reason=err.reason.value, message=err.message,
                )
            )
        )

    def _confirm(self, producer_id: int, batch_id: int, rejections: list[tuple[int, str, str]]) -> None:
        confirm = bpb.SendConfirm(producer_id=producer_id, batch_id=batch_id)
        for index, reason, detail in rejections:
            confirm.rejections.add(index=index, reason=reason, detail=detail)
        self.send(bpb.SessionResponse(confirm=confirm))

    # ------------------------------------------------------------ input

    async def handle(self, cmd: rq.SessionCommand) -> None:
        result = self._handlers[type(cmd)](cmd)
        if result is not None:
            await result

    def _on_create_producer(self, cmd: rq.CreateProducer) -> None:
        if cmd.producer_id in self.producers:
            self.error(
                BrokerError(Reason.INVALID_REQUEST, f"producer id {cmd.producer_id} is already in use"),
                producer_id=cmd.producer_id,
            )
            return
        self.producers[cmd.producer_id] = cmd.address
        self._credit[cmd.producer_id] = held_bytes_allowed(cmd.window_size)
        self.send(bpb.SessionResponse(producer_created=bpb.ProducerCreated(producer_id=cmd.producer_id)))

    def _on_close_producer(self, cmd: rq.CloseProducer) -> None:
        # Sends it still has held go on when the address has room: they were sent.
        self.producers.pop(cmd.producer_id, None)
        self._credit.pop(cmd.producer_id, None)

    # ------------------------------------------------------------ sending

    def _on_send(self, cmd: rq.SendMessages) -> Awaitable[None] | None:
        default_address = self.producers.get(cmd.producer_id)
        if default_address is None:
            self.error(
                BrokerError(Reason.INVALID_REQUEST, f"unknown producer id {cmd.producer_id}"),
                producer_id=cmd.producer_id, request_id=cmd.batch_id,
            )
            return
        messages = cmd.messages
        if len(messages) == 1 and messages[0].large:
            try:
                self.large.begin(cmd.producer_id, cmd.batch_id, messages[0], default_address, self.user, self.access)
            except BrokerError as exc:
                self._confirm(cmd.producer_id, cmd.batch_id, [(0, exc.reason.value, exc.message)])
            return
        if (self._held or self.broker.memory.blocking) and self._held_back(cmd, default_address):
            return
        grouping = self.broker.grouping
        if grouping is not None and grouping.remote is not None and self.tx is None:
            asks = grouping.pending(cmd.messages, default_address, self.broker.addresses)
            if asks:  # new message groups: the LOCAL grouping handler decides first (the session waits)
                return self._send_after_asking(cmd, default_address, asks)
        self._send_now(cmd, default_address)

    async def _send_after_asking(self, cmd: rq.SendMessages, default_address: str, asks: list) -> None:
        await self.broker.grouping.resolve(asks)
        if not self.closed:
            self._send_now(cmd, default_address)

    def _send_now(self, cmd: rq.SendMessages, default_address: str) -> None:
        if self.tx is not None:
            self._hold_in_transaction(cmd, default_address)
            return
        self._confirm_in_order(
            cmd.producer_id, cmd.batch_id,
            self.broker.sender.send(cmd.messages, default_address, self.user, self.access),
        )

    def _held_back(self, cmd: rq.SendMessages, default_address: str) -> bool:
        """Hold a batch for an address that blocks (or behind the producer's held
        batches); refuse it with ADDRESS_FULL past the producer's credit."""
        pid = cmd.producer_id
        held = self._held.get(pid)
        if held is None:
            addr = self.broker.memory.blocked_address(cmd.messages, default_address, self.broker.addresses)
            if addr is None:
                return False
            held = self._held[pid] = HeldSends(self._credit.get(pid, held_bytes_allowed(0)))
            self.broker.memory.wait_for_room(addr, lambda: self._resume(pid))
        size = batch_bytes(cmd)
        if not held.fits(size):
            cause = self.broker.memory.disk_reason or "the address is full (address-full-policy BLOCK)"
            why = (f"{cause} and this producer already has {held.bytes} "
                   f"bytes held, its window being {held.allowed}: a client must wait for confirms")
            self._confirm(pid, cmd.batch_id, [(i, Reason.ADDRESS_FULL.value, why) for i in range(len(cmd.messages))])
            return True
        held.hold(cmd, default_address, size)
        return True

    def _resume(self, pid: int) -> None:
        """The address a producer waited for has room: send its held batches in
        order until one meets a full address again."""
        held = self._held.get(pid)
        if held is None or self.closed:
            return
        while held.batches:
            cmd, default_address = held.first()
            addr = self.broker.memory.blocked_address(cmd.messages, default_address, self.broker.addresses)
            if addr is not None:
                self.broker.memory.wait_for_room(addr, lambda: self._resume(pid))
                return
            held.pop()
            self._send_now(cmd, default_address)
        del self._held[pid]

    def _hold_in_transaction(self, cmd: rq.SendMessages, default_address: str) -> None:
        """A transacted session's sends are admitted now and routed at commit (transactions.py)."""
        rejections = []
        admit = self.broker.sender.admitter(default_address, self.user, self.access)
        for i, m in enumerate(cmd.messages):
            try:
                self.tx.sends.append(admit(m))
            except BrokerError as exc:
                rejections.append((i, exc.reason.value, exc.message))
        self._confirm_in_order(cmd.producer_id, cmd.batch_id, StagedSend(rejections=rejections))

    def _confirm_in_order(self, producer_id: int, batch_id: int, staged: StagedSend) -> None:
        """Settle and confirm once stored, and never before an earlier batch of this session."""

        def finish(resp: jpb.AppendResponse | None) -> None:
            self.broker.sender.settle(staged, resp)
            if not self.closed:
                self._confirm(producer_id, batch_id, staged.rejections)

        if staged.stored is not None:
            self._tail = staged.stored
            staged.stored.add_done_callback(lambda f: finish(f.result()))
        elif self._tail is not None and not self._tail.done():
            self._tail.add_done_callback(lambda f: finish(None))
        else:
            finish(None)

    async def _on_large_chunk(self, cmd: rq.LargeBodyChunk) -> None:
        done = await self.large.receive(cmd)
        if done is not None:
            self._finish_large(done)

    def _finish_large(self, done: UploadDone) -> None:
        up = done.upload
        if done.error is not None:
            self._confirm(up.producer_id, up.batch_id, [(0, done.error.reason.value, done.error.message)])
            return
        if self.tx is not None:
            self.tx.sends.append((up.msg, up.claim))
            self._confirm(up.producer_id, up.batch_id, [])
            return
        try:
            queues = self.broker.sender.route(up.msg, access=self.access)
        except BrokerError as exc:
            self._finish_large(self.large.abort(up, exc))
            return
        staged = self.broker.sender.stage_batch([up], lambda up: (up.msg, up.claim), lambda up, msg: queues)
        self._confirm_in_order(up.producer_id, up.batch_id, staged)

    # ------------------------------------------------------------ consuming

    def _on_create_consumer(self, cmd: rq.CreateConsumer) -> None:
        try:
            if cmd.consumer_id in self.consumers:
                raise BrokerError(Reason.INVALID_REQUEST, f"consumer id {cmd.consumer_id} is already in use")
            queue, selector = self._consumer_queue(cmd)
        except BrokerError as exc:
            self.error(exc, consumer_id=cmd.consumer_id)
            return
        c = ServerConsumer(self, cmd.consumer_id, queue, selector, cmd.filter if cmd.queue else "", cmd.window_size)
        self.consumers[c.id] = c
        queue.add_consumer(c)
        self.broker.consumer_attached(queue)
        self.send(bpb.SessionResponse(consumer_created=bpb.ConsumerCreated(consumer_id=c.id, queue=queue.name)))
        self.broker.delivery.schedule_dispatch(queue)

    def _consumer_queue(self, cmd: rq.CreateConsumer):
        broker = self.broker
        if cmd.queue and cmd.address:
            raise BrokerError(Reason.INVALID_REQUEST, "give either a queue or an address to subscribe to, not both")
        not_internal("queue", cmd.queue)
        not_internal("address", cmd.address)
        if cmd.queue and cmd.temporary:
            return self._temporary_queue(cmd), compile_filter(cmd.filter)
        if cmd.queue:
            selector = compile_filter(cmd.filter)
            q = broker.queues.get(cmd.queue)
            if q is None:
                if not broker.settings(cmd.queue).auto_create_queues:
                    raise BrokerError(
                        Reason.QUEUE_NOT_FOUND, f"queue {cmd.queue!r} does not exist and auto-create-queues is false"
                    )
                self._check(Permission.CONSUME, cmd.queue)  # its address, once created: nothing made for nothing
                self._check_create(cmd.queue, durable=True)
                q = broker.create_queue(cmd.queue, cmd.queue, cmd.routing_type or ANYCAST, auto_created=True)
            else:
                self._check_owner(q)
                self._check(Permission.CONSUME, q.address)
            return q, selector
        if not cmd.address:
            raise BrokerError(Reason.INVALID_REQUEST, "a consumer needs a queue or an address")
        if cmd.subscription:
            return self._subscription_queue(cmd), None
        if cmd.shared:
            raise BrokerError(Reason.INVALID_REQUEST, "a shared subscription needs a name")
        name = f"{cmd.address}.{self.id}.{cmd.consumer_id}"
        if name in broker.queues:
            raise BrokerError(Reason.QUEUE_EXISTS, f"queue {name!r} exists: it cannot be a new temporary subscription")
        self._check(Permission.CONSUME, cmd.address)
        self._check_create(cmd.address, durable=False)
        q = broker.create_queue(
            name, cmd.address, MULTICAST, cmd.filter, durable=False, temporary=True, auto_created=False,
            owner=Owner(self.id, self.user),
        )
        return q, None

    def _temporary_queue(self, cmd: rq.CreateConsumer) -> Queue:
        """A temporary queue of this session (JMS createTemporaryQueue, as
        Artemis makes one): anycast, on an address of its own name, owned by
        the session and deleted with its consumer. Unlike a temporary
        subscription it is a temporary *destination*, which a network
        connector's bridgeTempDestinations governs."""
        name = cmd.queue
        if name in self.broker.queues:
            raise BrokerError(Reason.QUEUE_EXISTS, f"queue {name!r} exists: it cannot be a new temporary queue")
        self._check(Permission.CONSUME, name)
        return self._new_temporary_queue(name, Owner(self.id, self.user))

    def _new_temporary_queue(self, name: str, owner: Owner) -> Queue:
        """An anycast, non-durable queue `name` on an address of its own name, owned
        by `owner` (a consumer's or a connection's temporary queue), if this session may create it."""
        self._check_create(name, durable=False)
        self.broker.ensure_address(name, ANYCAST, auto_created=True)  # goes with its queue
        return self.broker.create_queue(name, name, ANYCAST, durable=False, temporary=True, auto_created=False,
                                        owner=owner)

    def _subscription_queue(self, cmd: rq.CreateConsumer) -> Queue:
        """The queue of the named subscription `cmd` asks for (subscriptions.py),
        made, reused or replaced."""
        wanted = subscriptions.Wanted(cmd.address, cmd.subscription, cmd.filter, self.client_id, cmd.shared,
                                      cmd.durable)
        subscriptions.check(wanted)
        name = subscriptions.queue_name(cmd.subscription, self.client_id, durable=cmd.durable)
        q = self.broker.queues.get(name)
        if q is not None:
            self._check_owner(q)
        existing = None if q is None else subscriptions.Existing(
            q.address, q.routing_type == MULTICAST, q.filter_text, len(q.consumers))
        step = subscriptions.plan(wanted, name, existing)
        self._check(Permission.CONSUME, cmd.address)
        if step is subscriptions.Step.USE:
            return q
        if step is subscriptions.Step.REPLACE:
            self._check(Permission.DELETE_DURABLE_QUEUE if q.durable else Permission.DELETE_NON_DURABLE_QUEUE, q.address)
            log.info("subscription %s changes to address %s, filter %r: its queue %s is replaced",
                     cmd.subscription, cmd.address, cmd.filter, name)
        self._check_create(cmd.address, durable=cmd.durable)
        compile_filter(cmd.filter)  # a bad selector is refused before the old queue goes
        if step is subscriptions.Step.REPLACE:
            self.broker.delete_queue(name, force=True)
        # Shared non-durable: a temporary queue nobody owns, deleted with its last consumer.
        return self.broker.create_queue(name, cmd.address, MULTICAST, cmd.filter, durable=cmd.durable,
                                        temporary=not cmd.durable, auto_created=False)

    def _on_unsubscribe(self, cmd: rq.Unsubscribe) -> None:
        """Delete the durable subscription `cmd.subscription` of this session's
        client id (JMS unsubscribe; Artemis checks delete-durable-queue)."""
        try:
            if not cmd.subscription:
                raise BrokerError(Reason.INVALID_REQUEST, "unsubscribe needs a subscription name")
            name = subscriptions.queue_name(cmd.subscription, self.client_id, durable=True)
            q = self.broker.queues.get(name)
            if q is None or q.routing_type != MULTICAST or q.temporary:
                raise BrokerError(Reason.QUEUE_NOT_FOUND,
                                  f"there is no durable subscription {cmd.subscription!r} (queue {name!r}) to unsubscribe")
            if q.consumers:
                raise BrokerError(Reason.QUEUE_IN_USE, f"durable subscription {cmd.subscription!r} (queue {name!r}) "
                                                       f"has {len(q.consumers)} consumer(s): close them first")
            self._check(Permission.DELETE_DURABLE_QUEUE, q.address)
            removed = self.broker.delete_queue(name)
        except BrokerError as exc:
            self.error(exc, request_id=cmd.request_id)
            return
        self.send(bpb.SessionResponse(unsubscribed=bpb.Unsubscribed(request_id=cmd.request_id, queue=name,
                                                                    messages_removed=removed)))

    def _on_create_temporary_queue(self, cmd: rq.CreateTemporaryQueue) -> None:
        """A temporary queue of this session's connection (JMS createTemporaryQueue;
        client_connections.py): anycast, on an address of its own name,
        non-durable; one the connection already has here is answered `existed`."""
        try:
            conn = self._own_connection()
            name = cmd.queue or uuid.uuid4().hex
            not_internal("queue", name)
            q = self.broker.queues.get(name)
            existed = q is not None
            if existed:
                if q.owner is None or q.owner.connection is not conn:
                    raise BrokerError(Reason.QUEUE_EXISTS,
                                      f"queue {name!r} exists: it cannot be a new temporary queue of this connection")
            else:
                self._new_temporary_queue(name, Owner(self.id, self.user, conn))
                conn.temporary_queues.add(name)
        except BrokerError as exc:
            self.error(exc, request_id=cmd.request_id)
            return
        self.send(bpb.SessionResponse(temporary_queue_created=bpb.TemporaryQueueCreated(
            request_id=cmd.request_id, queue=name, existed=existed)))

    def _on_delete_temporary_queue(self, cmd: rq.DeleteTemporaryQueue) -> None:
        """Delete a temporary queue of this connection here (JMS TemporaryQueue.delete):
        refused while it has consumers, as JMS asks."""
        try:
            conn = self._own_connection()
            q = self.broker.queues.get(cmd.queue)
            if q is None:
                raise BrokerError(Reason.QUEUE_NOT_FOUND, f"there is no temporary queue {cmd.queue!r} on this node")
            if q.owner is None or q.owner.connection is not conn:
                raise BrokerError(Reason.PERMISSION_DENIED,
                                  f"queue {cmd.queue!r} is not a temporary queue of this connection")
            if q.consumers:
                raise BrokerError(Reason.QUEUE_IN_USE, f"temporary queue {cmd.queue!r} has {len(q.consumers)} "
                                                       "consumer(s): close them before deleting it")
            removed = self.broker.delete_queue(cmd.queue)
            conn.temporary_queues.discard(cmd.queue)
        except BrokerError as exc:
            self.error(exc, request_id=cmd.request_id)
            return
        self.send(bpb.SessionResponse(temporary_queue_deleted=bpb.TemporaryQueueDeleted(
            request_id=cmd.request_id, queue=cmd.queue, messages_removed=removed)))

    def _own_connection(self) -> ClientConnection:
        if self.connection is None:
            raise BrokerError(Reason.INVALID_REQUEST, "this session belongs to no client connection")
        return self.connection

    def _check_owner(self, q: Queue) -> None:
        """PERMISSION_DENIED (logged) unless this session may consume from `q` (temporary_queues.py)."""
        refusal = consume_refusal(q.name, q.owner, self.id, self.user, self.connection)
        if refusal is not None:
            log_refusal(refusal)
            raise refusal

    def _check(self, permission: Permission, address: str) -> None:
        if self.access is not None:
            self.access.check(permission, address)

    def _check_create(self, address: str, *, durable: bool) -> None:
        """May this session create a queue on `address` (and the address, if it does not exist)?"""
        if self.access is None:
            return
        if address not in self.broker.addresses:
            self.access.check(Permission.CREATE_ADDRESS, address)
        self.access.check(Permission.CREATE_DURABLE_QUEUE if durable else Permission.CREATE_NON_DURABLE_QUEUE, address)

    def _consumer(self, consumer_id: int, what: str) -> ServerConsumer | None:
        """The session's consumer `consumer_id`; None for one it closed (what was
        still on its way for it is ignored); InvalidCommand for one it never had."""
        c = self.consumers.get(consumer_id)
        if c is None and consumer_id not in self._closed_consumers:
            raise rq.InvalidCommand(f"{what} for consumer {consumer_id}, which this session does not have",
                                    consumer_id=consumer_id)
        return c

    def _on_credits(self, cmd: rq.GrantCredits) -> None:
        c = self._consumer(cmd.consumer_id, "flow credit")
        if c is not None:
            c.grant(cmd.credits)
            self.broker.delivery.schedule_dispatch(c.queue)

    # The DeliveryTarget side (consumer.py): what the session's consumers hand it.

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

    def queue_deleted(self, c: ServerConsumer) -> None:
        """The queue is being deleted under the consumer: close it and tell the client."""
        self._close_consumer(c)
        self.error(BrokerError(Reason.QUEUE_NOT_FOUND, f"queue {c.queue.name!r} was deleted"), consumer_id=c.id)

    def close_slow_consumer(self, c: ServerConsumer, err: BrokerError) -> None:
        """slow-consumer-policy KILL (slow_consumers.py): close `c` and tell the client why."""
        self._close_consumer(c)
        self.error(err, consumer_id=c.id)

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
        async def write(data: bytes, last: bool) -> bool:
            """One chunk, once the session's outgoing buffer has room; False: the consumer closed."""
            await self.writable.wait()
            if c.closed:
                return False
            self.send(
                bpb.SessionResponse(
                    large_chunk=bpb.LargeChunk(consumer_id=c.id, delivery_id=did, data=data, last=last)
                )
            )
            return True

        try:
            if not c.closed:
                await send_body(self.broker, ref.msg, write)
        except Exception as exc:
            log.exception("streaming large message %d to consumer %d failed", ref.msg.id, c.id)
            if not c.closed and c.delivering.pop(did, None) is not None:
                # The consumer would wait for the last chunk forever: the message goes
                # back to its queue (an attempt; max-delivery-attempts bounds the retries)
                # and the consumer is told.
                self.broker.delivery.cancel(ref)
                self.error(
                    BrokerError(
                        Reason.INTERNAL,
                        f"large message {ref.msg.id} could not be streamed ({exc}); it was returned to its queue",
                    ),
                    consumer_id=c.id,
                )
        finally:
            c.streaming = False
            if not c.closed:
                self.broker.delivery.schedule_dispatch(c.queue)

    def _on_ack(self, cmd: rq.Acknowledge) -> None:
        c = self._consumer(cmd.consumer_id, "acknowledgement")
        if c is None:
            return
        broker = self.broker
        for did in cmd.delivery_ids:
            ref = c.delivering.pop(did, None)
            if ref is None:
                continue
            c.messages_acknowledged += 1
            if self.tx is not None:
                self.tx.acks.append(ref)
            else:
                broker.delivery.acknowledge(ref)
        if self.tx is None:
            broker.delivery.settled(c.queue)

    def _on_reject(self, cmd: rq.Reject) -> None:
        c = self._consumer(cmd.consumer_id, "negative acknowledgement")
        if c is None:
            return
        for did in cmd.delivery_ids:
            ref = c.delivering.pop(did, None)
            if ref is not None:
                self.broker.delivery.cancel(ref)
        self.broker.delivery.settled(c.queue)  # one dead-lettered or delayed schedules no dispatch

    def _on_close_consumer(self, cmd: rq.CloseConsumer) -> None:
        c = self._consumer(cmd.consumer_id, "close")
        if c is not None:
            self._close_consumer(c, cmd.last_handed, keep_handed=cmd.keep_handed)
        if cmd.answer:  # (after the close: what it held is back in its queue)
            self.send(bpb.SessionResponse(consumer_closed=bpb.ConsumerClosed(consumer_id=cmd.consumer_id)))

    def _close_consumer(self, c: ServerConsumer, last_handed: int | None = None, *, keep_handed: bool = False) -> None:
        """Detach `c` from its queue and give back what it holds; with `keep_handed`
        (the client moves it to another node) what the application was handed stays
        for its acks, and the session's end gives back whatever is still unacked."""
        c.closed = True
        if not keep_handed:
            self.consumers.pop(c.id, None)
            self._closed_consumers[c.id] = None
            if len(self._closed_consumers) > CLOSED_CONSUMER_IDS_KEPT:
                del self._closed_consumers[next(iter(self._closed_consumers))]
        q = c.queue
        detached = c in q.consumers
        if detached:
            q.consumers.remove(c)
        # What it held is back in the queue before the queue is told it lost a
        # consumer: redistribution then finds those messages there.
        self.broker.delivery.cancel_in_order(c.take_back(last_handed, keep_handed=keep_handed))
        if detached:
            self.broker.consumer_detached(q)
        self.broker.maybe_auto_delete(q)
        if not q.deleted:
            self.broker.delivery.schedule_dispatch(q)

    # ------------------------------------------------------------ transactions

    async def _on_commit(self, cmd: rq.Commit) -> None:
        tx = self.tx
        if tx is None:
            self.error(
                BrokerError(Reason.NOT_TRANSACTED, "commit on a session that is not transacted"), request_id=cmd.request_id
            )
            return
        self.tx = LocalTransaction()
        try:
            await tx.commit(self.broker, self.access)
        except BrokerError as exc:
            self.error(exc, request_id=cmd.request_id)
            return
        self.send(bpb.SessionResponse(tx_result=bpb.TxResult(request_id=cmd.request_id, committed=True)))

    def _on_rollback(self, cmd: rq.Rollback) -> None:
        if self.tx is None:
            self.error(
                BrokerError(Reason.NOT_TRANSACTED, "rollback on a session that is not transacted"),
                request_id=cmd.request_id,
            )
            return
        tx, self.tx = self.tx, LocalTransaction()
        # Everything the session's consumers hold goes back with the transaction's
        # acks, so the queue hands it out again in its order; the client empties
        # its buffers when the TxResult (sent after this, in order) arrives.
        returned = [ref for c in self.consumers.values() for ref in c.take_back(cmd.handed.get(c.id))]
        tx.rollback(self.broker, returned)
        self.send(bpb.SessionResponse(tx_result=bpb.TxResult(request_id=cmd.request_id, committed=False)))

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
            self.tx.rollback(self.broker)
            self.tx = None
        self.large.discard()
        self._held.clear()  # never confirmed: the client resends them or reports them failed
        for t in self._streams:
            t.cancel()
