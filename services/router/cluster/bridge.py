"""The source end of a link: forwards a local store-and-forward queue to one
other node, and hears what that node offers (its bindings).

The bridge is a consumer of its store-and-forward queue like any other
(`DeliveryTarget`): the queue hands it messages while it has credit, and its
credit is the confirmation window (`confirmation-window-size` bytes sent and
not yet confirmed). Each event-loop turn's deliveries go as one ForwardBatch;
the target confirms a batch once it is committed, and only then are the
messages acknowledged here — so a message is in the target's store or in
ours, never in neither. A link that breaks gives its unconfirmed messages
back to the head of the queue, uncounted (the application never saw them),
and they go again after the reconnect, with the same duplicate id: the target
drops what it already has (`use-duplicate-detection`).

Reconnecting follows `retry-interval` × `retry-interval-multiplier` up to
`max-retry-interval`; when `initial-connect-attempts` (never connected) or
`reconnect-attempts` (after a break) are spent, the node is considered down:
its bindings are dropped, so nothing more is routed to it, while what its
queue already holds stays there, counted; the bridge keeps probing every
`max-retry-interval` and forwards it when the node is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import grpc

from meshmq.aio import wait_for
from meshmq.config.models import ClusterConnection
from meshmq.routing_names import store_and_forward_queue_name
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc
from meshmq.v1 import messages_pb2 as mpb

from ..consumer import ServerConsumer
from ..message import Ref
from ..routing import ANYCAST
from .address_match import AddressMatch
from .link_identity import LinkIdentity

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger("meshmq.cluster")

ROUTE_TO = "_MQ_ROUTE_TO"
ROUTE_SEP = "\x1e"
# A moved message's delivery count, on its store-and-forward copy (scale-down).
DELIVERY_COUNT = "_MQ_DELIVERY_COUNT"
# At most this many messages in one ForwardBatch (the window bounds the bytes).
MAX_BATCH_MESSAGES = 1000
CONNECTING, CONNECTED, RETRYING, DOWN, SELF, STOPPED = "connecting", "connected", "retrying", "down", "self", "stopped"


def gives_up(failed: int, ever_connected: bool, initial_connect_attempts: int, reconnect_attempts: int) -> bool:
    """Whether the target is now considered down: `failed` attempts since the
    link was last up. Before it ever was, `initial-connect-attempts` attempts
    in all (at least the one made); after a break, `reconnect-attempts` more
    (0: down at the break). -1 = never."""
    if ever_connected:
        return reconnect_attempts >= 0 and failed >= reconnect_attempts
    return initial_connect_attempts >= 0 and failed >= max(initial_connect_attempts, 1)


def retry_delays(retry_interval: int, multiplier: float, max_retry_interval: int):
    """The waits (ms) between connection attempts: `retry-interval`, then each
    `retry-interval-multiplier` times the last, never above `max-retry-interval`."""
    delay = float(retry_interval)
    while True:
        yield min(delay, max_retry_interval)
        delay = min(delay * multiplier, max_retry_interval)


class LinkRefused(Exception):
    """The target refused the link for good (e.g. a wrong cluster password)."""


class Bridge:
    """One link of cluster connection `cc_name` to the node at `endpoint`."""

    def __init__(self, broker: Broker, cc_name: str, cc: ClusterConnection, endpoint: str, *,
                 identity: LinkIdentity, node_name: str,
                 on_members: Callable[[Bridge, list[cpb.ClusterMember]], None] = lambda bridge, members: None,
                 scale_down: bool = False) -> None:
        self.broker = broker
        self.cc_name = cc_name
        self.cc = cc
        self.endpoint = endpoint
        self.name = f"{cc_name}->{endpoint}"
        # DeliveryTarget: what management shows for the sf queue's consumer.
        self.id = f"bridge {self.name}"
        self.client_id = cc.client_id or f"{node_name}.{cc_name}"
        self.load_balancing = cc.message_load_balancing
        self.matches = AddressMatch(cc.address).matches
        self._identity = identity
        self._on_members = on_members
        self._scale_down = scale_down
        self._node_name = node_name
        self.target_node_id = ""
        self.target_node_name = ""
        self.state = CONNECTING
        self.problem = ""
        # Counters shown by management.
        self.routed = 0  # messages routed into the sf queue for this link
        self.forwarded = 0
        self.batches = 0  # ForwardBatch frames sent
        self.confirmed = 0
        self.retries = 0
        self._sf: object | None = None
        self._consumer: ServerConsumer | None = None
        self._call: grpc.aio.StreamStreamCall | None = None
        self._channel: grpc.aio.Channel | None = None
        self._out: asyncio.Queue[cpb.LinkRequest | None] = asyncio.Queue()
        self._unconfirmed: dict[int, list[int]] = {}
        # When each unconfirmed batch was fully written (monotonic s): call-timeout runs from there.
        self._written_at: dict[int, float] = {}
        self._next_batch = 1
        self._flush_scheduled = False
        self._task: asyncio.Task | None = None
        self.connected = asyncio.Event()

    @property
    def local_node_id(self) -> str:
        return self.broker.node_id

    @property
    def pending(self) -> int:
        """Messages waiting in, or forwarded and unconfirmed from, the sf queue."""
        q = self._sf
        return 0 if q is None else q.waiting + q.delivering + q.incoming + q.paged_messages

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"bridge {self.name}")

    async def stop(self) -> None:
        self.state = STOPPED
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        self._detach()
        self._close_channel()
        self.broker.remote.drop(self)

    # ------------------------------------------------------------ the store-and-forward queue

    def store_and_forward_queue(self):
        """This link's queue: messages routed to the target wait here until confirmed."""
        if self._sf is None or self._sf.deleted:
            name = store_and_forward_queue_name(self.cc_name, self.target_node_id)
            q = self.broker.queues.get(name)
            if q is None:
                q = self.broker.create_queue(name, name, ANYCAST)
            self._sf = q
        return self._sf

    # ------------------------------------------------------------ connecting

    async def _run(self) -> None:
        failed = 0  # connection attempts failed since the link was last up (or since start)
        ever_connected = False
        delays = self._delays()
        while True:
            try:
                await self._connect_and_serve()
            except asyncio.CancelledError:
                raise
            except LinkRefused as exc:
                if self.problem != str(exc):  # once per refusal, not at every retry-interval
                    log.error("cluster connection %s: link to %s refused: %s", self.cc_name, self.endpoint, exc)
                self.problem = str(exc)
            except _Self:
                self.state = SELF
                log.debug("cluster connection %s: %s is this node; no link", self.cc_name, self.endpoint)
                return
            except Exception as exc:  # the target is down, the link broke
                self.problem = _describe(exc)
            if self.connected.is_set():  # it was up: a break, not a failed attempt
                ever_connected = True
                failed = 0
                delays = self._delays()
                log.warning("cluster connection %s: link to %s (%s) broke: %s; reconnecting", self.cc_name,
                            self.target_node_name or self.endpoint, self.endpoint, self.problem)
                self.connected.clear()
                self.broker.bindings_changed()
            else:
                failed += 1
                self.retries += 1
            self._detach()
            if self.state != DOWN and gives_up(failed, ever_connected, self.cc.initial_connect_attempts,
                                               self.cc.reconnect_attempts):
                self.state = DOWN
                self.broker.remote.drop(self)
                log.warning("cluster connection %s: %s considered down after %d failed attempts (%s); nothing more "
                            "is routed to it; %d messages wait in its store-and-forward queue", self.cc_name,
                            self.endpoint, failed, self.problem, self.pending)
            elif self.state != DOWN:
                self.state = RETRYING
            wait = self.cc.max_retry_interval if self.state == DOWN else next(delays)
            await asyncio.sleep(wait / 1000)

    def _delays(self):
        return retry_delays(self.cc.retry_interval, self.cc.retry_interval_multiplier, self.cc.max_retry_interval)

    async def _connect_and_serve(self) -> None:
        # A new channel per attempt (one in TRANSIENT_FAILURE would fail the hello at
        # once), opened before the last one is closed, so the two share gRPC's
        # connection to the target and its backoff carries over: against a target
        # that accepts TCP but never answers (frozen), each fresh connection would
        # time out at gRPC's first connect deadline (min-reconnect-backoff, 100 ms)
        # with UNAVAILABLE, before call-timeout could ever apply.
        previous, self._channel = self._channel, self._identity.open(self.endpoint)
        stub = cgrpc.ClusterStub(self._channel)
        timeout = self.cc.call_timeout / 1000
        try:
            call = stub.Link(metadata=await self._identity.metadata(self._channel, self.endpoint, timeout_s=timeout))
            self._call = call
            await wait_for(call.write(self._identity.hello(
                self.cc_name, self.broker.node_id, self._node_name, max_hops=self.cc.max_hops,
                scale_down=self._scale_down, check_period_ms=self.cc.check_period)), timeout)
            first = await wait_for(call.read(), timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                raise LinkRefused(exc.details()) from None
            raise
        finally:
            if previous is not None:
                await previous.close()
        if first is grpc.aio.EOF or first.WhichOneof("kind") != "welcome":
            raise ConnectionError("the target ended the link before welcoming it")
        welcome = first.welcome
        if welcome.node_id == self.broker.node_id:
            raise _Self()
        if self.target_node_id and welcome.node_id != self.target_node_id:
            log.warning("cluster connection %s: %s is now node %s (was %s)", self.cc_name, self.endpoint,
                        welcome.node_id, self.target_node_id)
            self.broker.remote.drop(self)
            self._sf = None
        self.target_node_id = welcome.node_id
        self.target_node_name = welcome.node_name
        self.state = CONNECTED
        self.problem = ""
        self.connected.set()
        self.broker.bindings_changed()  # our links are part of what we offer (members)
        log.info("cluster connection %s: linked to %s (%s) at %s", self.cc_name, welcome.node_name,
                 welcome.node_id, self.endpoint)
        self._attach()
        tasks = (asyncio.create_task(self._write(call)), asyncio.create_task(self._read(call)),
                 asyncio.create_task(self._watch_confirms()))
        try:
            # Whichever ends first ends the link: a write that fails breaks it as a
            # read does, and so does a confirm overdue by call-timeout.
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
            raise ConnectionError("the link's writer stopped")
        finally:
            for task in tasks:
                task.cancel()

    async def _read(self, call) -> None:
        """What the target says; nothing at all (not even a ping) for connection-ttl breaks the link."""
        ttl = self.cc.connection_ttl / 1000
        while True:
            resp = await wait_for(call.read(), ttl)
            if resp is grpc.aio.EOF:
                raise ConnectionError("the target closed the link")
            kind = resp.WhichOneof("kind")
            if kind == "bindings":
                self.broker.remote.apply(self, resp.bindings.bindings)
                self._on_members(self, list(resp.bindings.members))
            elif kind == "confirm":
                self._confirmed(resp.confirm)

    async def _write(self, call) -> None:
        out = self._out
        while True:
            req = await out.get()
            if req is None:
                return
            if isinstance(req, tuple):  # a large message: its header, then its body
                header, ref, inline = req
                await call.write(header)
                await self._write_large(call, header.forward.batch_id, ref, inline)
                self._written_at[header.forward.batch_id] = time.monotonic()
                continue
            await call.write(req)
            if req.WhichOneof("kind") == "forward":
                self._written_at[req.forward.batch_id] = time.monotonic()

    async def _watch_confirms(self) -> None:
        """call-timeout for the confirms: a batch written and not confirmed
        within it breaks the link (Artemis's call-timeout on blocking calls).
        Its messages go back to the head of the store-and-forward queue and are
        sent again on the next link; the target's bridge duplicate ids drop
        what it had already stored."""
        timeout = self.cc.call_timeout / 1000
        while True:
            await asyncio.sleep(min(timeout / 4, 1.0))
            if self._written_at:
                batch_id, written = min(self._written_at.items(), key=lambda item: item[1])
                if time.monotonic() - written > timeout:
                    raise TimeoutError(f"batch {batch_id} not confirmed within call-timeout "
                                       f"({self.cc.call_timeout} ms)")

    # ------------------------------------------------------------ forwarding (DeliveryTarget)

    def _attach(self) -> None:
        q = self.store_and_forward_queue()
        window = self.cc.confirmation_window_size
        self._out = asyncio.Queue()
        self._unconfirmed.clear()
        self._written_at.clear()
        self._consumer = ServerConsumer(self, 0, q, None, "", window if window > 0 else -1)
        q.add_consumer(self._consumer)
        self.broker.schedule_dispatch(q)

    def _detach(self) -> None:
        """Take back what was forwarded and not confirmed: to the head of the queue, uncounted."""
        c = self._consumer
        if c is not None:
            self._consumer = None
            c.closed = True
            q = c.queue
            if c in q.consumers:
                q.consumers.remove(c)
            self.broker.cancel_in_order(c.take_back(0))
        self._unconfirmed.clear()
        self._written_at.clear()
        if self._call is not None:
            self._call.cancel()
            self._call = None

    def _close_channel(self) -> None:
        if self._channel is not None:
            asyncio.ensure_future(self._channel.close())
            self._channel = None

    def declare(self, queues: list[cpb.QueueDeclaration]) -> None:
        """Ask the target to create these queues before what is forwarded next."""
        self._out.put_nowait(cpb.LinkRequest(declare=cpb.DeclareQueues(queues=queues)))

    def delivered(self, consumer: ServerConsumer, delivery_id: int, ref: Ref) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def queue_deleted(self, consumer: ServerConsumer) -> None:
        log.warning("cluster connection %s: store-and-forward queue %s deleted", self.cc_name, consumer.queue.name)
        consumer.closed = True
        self._sf = None

    def _flush(self) -> None:
        """This turn's deliveries as ForwardBatches; a large message (or one
        bigger than min-large-message-size) alone, its body in chunks after it."""
        self._flush_scheduled = False
        c = self._consumer
        if c is None or not c.pending:
            return
        pending, c.pending = c.pending, []
        run: list[tuple[int, Ref]] = []
        for item in pending:
            msg = item[1].msg
            if msg.large or msg.size > self.cc.min_large_message_size:
                self._send_batch(run)
                run = []
                self._send_large(item)
            else:
                run.append(item)
                if len(run) >= MAX_BATCH_MESSAGES:
                    self._send_batch(run)
                    run = []
        self._send_batch(run)

    def _forwarded(self, fwd: cpb.ForwardedMessage, ref: Ref) -> mpb.Message:
        m = fwd.message
        m.CopyFrom(ref.msg.proto)
        route = m.properties.pop(ROUTE_TO, None)
        if route is not None:
            fwd.route_to.extend(route.string_value.split(ROUTE_SEP))
        count = m.properties.pop(DELIVERY_COUNT, None)
        if count is not None:
            fwd.delivery_count = count.int_value
        if self.cc.use_duplicate_detection:
            fwd.bridge_duplicate_id = f"{self.broker.node_id}:{ref.msg.id}"
        return m

    def _new_batch(self, items: list[tuple[int, Ref]]) -> cpb.ForwardBatch:
        batch = cpb.ForwardBatch(batch_id=self._next_batch)
        self._next_batch += 1
        self._unconfirmed[batch.batch_id] = [did for did, _ in items]
        self.forwarded += len(items)
        self.batches += 1
        return batch

    def _send_batch(self, items: list[tuple[int, Ref]]) -> None:
        if not items:
            return
        batch = self._new_batch(items)
        for _, ref in items:
            self._forwarded(batch.messages.add(), ref)
        self._out.put_nowait(cpb.LinkRequest(forward=batch))

    def _send_large(self, item: tuple[int, Ref]) -> None:
        ref = item[1]
        batch = self._new_batch([item])
        m = self._forwarded(batch.messages.add(), ref)
        inline = None
        if not m.large:  # an ordinary message over min-large-message-size: its body goes in chunks too
            inline = m.body
            m.large = True
            m.body_size = len(inline)
            m.ClearField("body")
        self._out.put_nowait((cpb.LinkRequest(forward=batch), ref, inline))

    async def _write_large(self, call, batch_id: int, ref: Ref, inline: bytes | None) -> None:
        """A large message's body after its header: from memory or the journal,
        a few chunks at a time (HTTP/2 flow control paces the reads)."""
        from ..large_messages import _read_chunks

        size = self.cc.min_large_message_size
        total = ref.msg.proto.body_size if inline is None else len(inline)
        if inline is not None:
            pieces = [inline[i:i + size] for i in range(0, len(inline), size)] or [b""]
            for i, data in enumerate(pieces):
                await call.write(cpb.LinkRequest(chunk=cpb.ForwardChunk(
                    batch_id=batch_id, data=data, last=i == len(pieces) - 1)))
            return
        sent, seq = 0, 0
        while sent < total:
            chunks = await _read_chunks(self.broker, ref.msg, seq)
            if not chunks:
                raise RuntimeError(f"large message {ref.msg.id} is missing chunks from {seq}")
            for ch in chunks:
                sent += len(ch.data)
                seq = ch.seq + 1
                await call.write(cpb.LinkRequest(chunk=cpb.ForwardChunk(
                    batch_id=batch_id, data=ch.data, last=sent >= total)))

    def _confirmed(self, confirm: cpb.ForwardConfirm) -> None:
        self._written_at.pop(confirm.batch_id, None)
        dids = self._unconfirmed.pop(confirm.batch_id, None)
        c = self._consumer
        if dids is None or c is None:
            return
        if confirm.refused:
            raise ConnectionError(f"the target refused a batch: {confirm.refused}")
        for did in dids:
            ref = c.delivering.pop(did, None)
            if ref is None:
                continue
            self.broker.acknowledge(ref)
            c.grant(ref.msg.size)
            self.confirmed += 1
        self.broker.schedule_dispatch(c.queue)


class _Self(Exception):
    """The endpoint is this node (a static connector listing every member)."""


def _describe(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    if isinstance(exc, TimeoutError):
        return str(exc) or "no answer within call-timeout / connection-ttl"
    return str(exc) or type(exc).__name__
