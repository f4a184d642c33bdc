"""One end of a network connector's or the tree connector's link.

A link is the bridge engine's two halves over one Link stream
(services/router/cluster/forwarder.py and receiver.py) with demand instead
of bindings: the end that offers demand tells the other what its consumers
(and the demand it passes on) want; the other end holds a network
subscription for each item (subscription.py) and forwards what they take.
A one-way network connector forwards from the node that defines it (the
dialer) and takes demand back; `duplex` (and every tree link) runs both
halves at both ends over the same stream, so a node behind a firewall that
dials out still receives.

The dialer keeps one NetworkLink per target for its whole life, the
acceptor one per (connector, peer node): a reconnect finds the same
store-and-forward queue and subscriptions, so what a peer missed while it was
away waits here for it (a leaf offline keeps its messages on its branch).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol

import grpc

from meshmq.aio import wait_for
from meshmq.config import defaults
from meshmq.routing_names import store_and_forward_queue_name
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from ..cluster.forwarder import Forwarder, Write, write_frames
from ..cluster.link_service import ping
from ..cluster.receiver import Receiver
from ..dead_letter import copy_message, server_message, transfer
from ..message_moves import page_in_if_room
from ..routing import ROUTE_SEP, ROUTE_TO, TO_NODE
from .demand import QUEUE, LinkSpec, OfferDelta, Subscription
from .demand_order import DemandVersions
from .path import stamp
from .subscription import NetworkSubscription, subscription_queue_prefix
from .wire import demand_to_proto

if TYPE_CHECKING:
    from ..broker import Broker
    from ..message import Ref
    from ..queue import Queue

log = logging.getLogger("meshmq.network")

CONNECTING, CONNECTED, RETRYING, STOPPED = "connecting", "connected", "retrying", "stopped"
DISCONNECTED = "disconnected"  # an accepted link whose peer is away (it redials)
PING = cpb.LinkResponse(ping=cpb.LinkPing())


class Ordering(Protocol):
    """What a link asks of its node to order requests after their reply
    queue's demand (demand_order.py; connectors.py's NetworkConnectors)."""

    demand_version: int
    versions: DemandVersions

    def before_request(self, link: NetworkLink) -> int:
        """The demand version a request forwarded over `link` carries, once
        every link offering demand to its peer has been sent it."""


class NetworkLink(Forwarder):
    """A link of network connector (or tree connector) `connector` with one
    peer; `dialer`: this node opened it. The link's kind and role fix which
    halves run here (module docstring)."""

    network = True

    def __init__(self, broker: Broker, connector: str, kind: str, *, name: str, policy: cpb.NetworkPolicy,
                 dialer: bool, duplex: bool, role: str, prefetch: int, message_ttl: int | None, replay: bool,
                 on_demand: Callable[[NetworkLink, cpb.DemandUpdate], None], ordering: Ordering,
                 toward: Callable[[str], NetworkLink | None]) -> None:
        super().__init__(broker, name, f"{broker.name}.{connector}",
                         frame=cpb.LinkRequest if dialer else cpb.LinkResponse,
                         window=defaults.CC_CONFIRMATION_WINDOW_SIZE,
                         min_large_message_size=defaults.CC_MIN_LARGE_MESSAGE_SIZE, duplicate_ids=True)
        self.connector = connector
        self.kind = kind  # "network" or "tree"
        # The connector's options (the dialer's config; the acceptor's from the hello).
        self.policy = policy
        self.dialer = dialer
        self.duplex = duplex
        self.role = role
        self.prefetch = prefetch
        self.message_ttl = message_ttl  # None on a tree: no TTL
        self.replay = replay
        # Which halves run at this end (module docstring).
        self.forwards = dialer or duplex
        self.receives = not dialer or duplex
        self.subscribes = self.forwards
        self.offers = self.receives
        self.endpoint = ""
        self.target_node_name = ""
        self.state = CONNECTING
        self.problem = ""
        self.retries = 0
        self.demand_sent = 0  # DemandUpdate frames sent
        self.demand_received = 0
        self.subscriptions: dict[str, NetworkSubscription] = {}
        self._on_demand = on_demand
        self._ordering = ordering
        self._toward = toward  # the tree link toward a node (demand.py's `toward`)
        self.sent_version = 0  # the demand version the peer was last sent (demand_order.py)
        self._inflight: dict[int, NetworkSubscription] = {}  # sf copy's message id -> its subscription
        self._out: asyncio.Queue | None = None
        self._serving: asyncio.Task | None = None
        self._returning: asyncio.Task | None = None  # return_stranded's, while it runs
        self.connected = asyncio.Event()

    @property
    def link_id(self) -> str:
        return self.name

    @property
    def cc_name(self) -> str:
        """Shown where cluster bridges show their cluster connection."""
        return self.connector

    def spec(self, policy) -> LinkSpec:
        return LinkSpec(link_id=self.link_id, peer=self.target_node_id, role=self.role, policy=policy,
                        offers=self.offers, subscribes=self.subscribes)

    def sf_name(self) -> str:
        group = "tree" if self.kind == "tree" else f"network.{self.connector}"
        return store_and_forward_queue_name(group, self.target_node_id)

    def stamp(self, message: mpb.Message) -> None:
        stamp(message, self.broker.node_id)

    def order_version(self) -> int:
        """A request's batch: after its reply queue's demand (demand_order.py)."""
        return self._ordering.before_request(self)

    # ------------------------------------------------------------ subscriptions

    def track(self, message_id: int, sub: NetworkSubscription) -> None:
        self._inflight[message_id] = sub

    def settled(self, ref) -> None:
        sub = self._inflight.pop(ref.msg.id, None)
        if sub is not None:
            sub.settled()

    def reconcile(self, wanted: list[Subscription]) -> None:
        """Hold exactly the subscriptions `wanted` (the decider's, for this link)."""
        by_key = {s.key: s for s in wanted}
        moved = self.moved_on() is not None
        for key in [k for k in self.subscriptions if k not in by_key]:
            # A leaf that moved: its topic messages here follow it (_return_stranded), not go with the queue.
            self.subscriptions.pop(key).close(keep_queue=moved)
        for key, sub in by_key.items():
            have = self.subscriptions.get(key)
            if have is None:
                ns = NetworkSubscription(self, sub)
                try:
                    ns.open()
                except Exception as exc:  # e.g. auto-create-addresses false for it: said, not fatal
                    log.warning("network link %s: no subscription for %s %s: %s", self.name,
                                sub.destination.kind, sub.destination.name, exc)
                    continue
                self.subscriptions[key] = ns
            elif have.sub != sub:
                have.update(sub)

    def drop_stale_topic_queues(self) -> None:
        """Topic subscriptions this link held before a restart and no longer holds: gone."""
        prefix = subscription_queue_prefix(self.name)
        held = {s.queue_name() for s in self.subscriptions.values()}
        for name in [n for n in self.broker.queues if n.startswith(prefix) and n not in held]:
            self.broker.delete_queue(name, force=True)

    def moved_on(self) -> NetworkLink | None:
        """On a tree link whose peer moved (a leaf now under another branch):
        the link toward where it is now. None while it is (as far as this node
        knows) still here."""
        if self.kind != "tree" or not self.target_node_id:
            return None
        onward = self._toward(self.target_node_id)
        return onward if onward is not None and onward is not self else None

    def return_stranded(self) -> None:
        """The peer's demand was superseded (a leaf that moved to another branch): while the link is
        down, what waits here for it follows it (`_return_stranded`)."""
        if self.connected.is_set() or self._sf is None and self.sf_name() not in self.broker.queues:
            return
        if self._returning is None or self._returning.done():
            self._returning = asyncio.get_running_loop().create_task(self._return_stranded())

    async def _return_stranded(self) -> None:
        """What waits in the store-and-forward queue for a queue this link no
        longer subscribes to goes back to that queue — each moved in one
        journal step, as an operator's move is — where the return
        subscription toward the parent takes it on to where the leaf is now.
        Its topic messages (in the store-and-forward queue, and in the
        subscriptions it held here) go toward it with a `TO_NODE` key: each
        node on the way passes them on, and the leaf alone routes them to its
        subscriptions. Paged messages too, a page at a time, as an operator's
        move reads them."""
        b = self.broker
        prefix = f"{self.target_node_id}/"
        to_leaf = TO_NODE + self.target_node_id
        counts = {"queue": 0, "topic": 0}
        sources = [self.store_and_forward_queue()]
        if self.moved_on() is not None:
            held = {s.queue_name() for s in self.subscriptions.values()}
            sub_prefix = subscription_queue_prefix(self.name)
            sources += [q for name, q in b.queues.items() if name.startswith(sub_prefix) and name not in held]
        for source in sources:
            while not self.connected.is_set() and not source.deleted:
                held_queues = {s.sub.destination.name for s in self.subscriptions.values()
                               if s.sub.destination.kind == QUEUE}
                onward = self.moved_on()

                def target(ref: Ref) -> tuple[str, Any] | None:
                    route = ref.msg.proto.properties.get(ROUTE_TO)
                    if route is None:  # a topic copy: toward the leaf, once it is known elsewhere
                        return ("topic", onward) if onward is not None else None
                    keys = route.string_value.split(ROUTE_SEP)
                    if len(keys) != 1 or not keys[0].startswith(prefix):
                        return None  # more than one queue: it stays
                    name = keys[0][len(prefix):]
                    home = None if name in held_queues else b.queues.get(name)
                    return ("queue", home) if home is not None else None

                refs = source.take_waiting(lambda ref: target(ref) is not None, source.waiting + len(source.delayed))
                if not refs:
                    if await page_in_if_room(b, source):
                        continue
                    break
                staged = []
                for ref in refs:
                    kind, where = target(ref)
                    proto = copy_message(b, ref, ref.msg.address)
                    proto.routing_type = ref.msg.proto.routing_type
                    proto.properties.pop(ROUTE_TO, None)
                    moved = server_message(proto)
                    if kind == "topic":
                        moved.forwards = {where: [to_leaf]}
                    staged.extend(transfer(b, ref, moved, [where] if kind == "queue" else [], jpb.REMOVED))
                    counts[kind] += 1
                b.delivery.enqueue_when_stored(staged)
                resp = await asyncio.shield(b.stored())  # before the next page is read
                if not resp.ok:
                    log.warning("network link %s: the journal refused returning messages for %s: %s", self.name,
                                self.target_node_name or self.target_node_id, resp.message)
                    return
            if source is not sources[0] and not source.deleted and not source.message_count:
                b.delete_queue(source.name, force=True)  # a subscription of the leaf's that it emptied
        if any(counts.values()):
            log.info("network link %s: %d messages waiting for %s went back to their queues and %d topic "
                     "messages went on toward it (it moved)", self.name, counts["queue"],
                     self.target_node_name or self.target_node_id, counts["topic"])
        left = sum(q.paged_messages for q in sources if not q.deleted)
        if left and not self.connected.is_set():
            log.warning("network link %s: %d paged messages still wait for %s: this node is at its memory "
                        "limit; they go on at the next notice that it moved", self.name, left,
                        self.target_node_name or self.target_node_id)

    def close_subscriptions(self) -> None:
        if self._returning is not None:
            self._returning.cancel()  # (between journal steps: what it took is stored)
        for sub in self.subscriptions.values():
            sub.close(keep_queue=True)
        self.subscriptions.clear()

    # ------------------------------------------------------------ demand out

    def send_demand(self, delta: OfferDelta, full: bool = False) -> None:
        """Tell the peer (when connected; a reconnect sends the whole offer)."""
        if self._out is None or not self.offers:
            return
        self.sent_version = self._ordering.demand_version
        update = cpb.DemandUpdate(added=[demand_to_proto(d) for d in delta.added], removed=delta.removed, full=full,
                                  moved=delta.moved, version=self.sent_version)
        self._out.put_nowait(self.frame(demand=update))
        self.demand_sent += 1

    # ------------------------------------------------------------ the stream

    async def serve(self, frames: AsyncIterator[Any], write: Write, offer: OfferDelta) -> None:
        """Run this end over one stream until it ends: forward, receive,
        offer `offer` in full then its changes, take the peer's demand."""
        out: asyncio.Queue = asyncio.Queue()
        self._out = out
        self._serving = asyncio.current_task()
        self.state = CONNECTED
        self.problem = ""
        self.connected.set()
        receiver = (Receiver(self.broker, self.target_node_id, self.target_node_name, out, frame=self.frame,
                             versions=self._ordering.versions, toward=self._toward if self.kind == "tree" else None)
                    if self.receives else None)
        if self.forwards:
            self.attach(out)
        if self.offers:
            self.send_demand(offer, full=True)
        tasks = [asyncio.create_task(write_frames(out, write)),
                 asyncio.create_task(self._read(frames, receiver))]
        if not self.dialer:
            tasks.append(asyncio.create_task(ping(defaults.CC_CHECK_PERIOD, out, PING)))
        if self.forwards:
            tasks.append(asyncio.create_task(self._watch_confirms()))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            self._out = None
            self.connected.clear()
            self._ordering.versions.lost(self.link_id, self.target_node_id)
            if self.forwards:
                # What was moved and not confirmed waits in the sf queue, still
                # counted in flight: while the peer is away its subscriptions
                # take no more than prefetchSize, the rest stays for others.
                self.detach()

    def close_stream(self) -> None:
        """This node is stopping: end the stream this end serves once what is
        queued for it is written, so the peer sees it close and retries at
        once instead of waiting out the server's grace period (as cluster
        links do, link_service.py)."""
        if self._out is not None:
            self._out.put_nowait(None)

    async def take_over(self) -> None:
        """The peer linked again: end the stream it left behind (if this end
        has not noticed yet) before serving the new one."""
        task = self._serving
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
            await asyncio.wait([task])

    async def _read(self, frames: AsyncIterator[Any], receiver: Receiver | None) -> None:
        async for frame in frames:
            kind = frame.WhichOneof("kind")
            if kind == "demand":
                self.demand_received += 1
                self._on_demand(self, frame.demand)
            elif kind == "forward":
                if receiver is None:
                    raise ConnectionError("the peer forwarded over a one-way link's demand side")
                if not await receiver.take(frame.forward, frames):
                    return
            elif kind == "confirm":
                self.take_confirm(frame.confirm)

    async def _watch_confirms(self) -> None:
        timeout = defaults.CC_CALL_TIMEOUT / 1000
        while True:
            await asyncio.sleep(min(timeout / 4, 1.0))
            batch_id = self.overdue(timeout)
            if batch_id is not None:
                raise TimeoutError(f"batch {batch_id} not confirmed within {defaults.CC_CALL_TIMEOUT} ms")


async def read_with_ttl(call: grpc.aio.StreamStreamCall, ttl_s: float):
    """The frames of a dialed link; nothing at all (not even a ping) for `ttl_s` ends it."""
    while True:
        frame = await wait_for(call.read(), ttl_s)
        if frame is grpc.aio.EOF:
            return
        yield frame
