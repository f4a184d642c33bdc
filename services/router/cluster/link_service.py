"""The target end of links: the router's `Cluster` gRPC service.

For each link (its caller's proof of cluster membership was checked before
it runs, by the router's ClusterIdentityCheck: services/router/server.py):
welcome it, offer this node's bindings — its own queues and the
remote ones it reaches, up to the source's max-hops, never the source's own —
and offer them again whenever they change; take forwarded batches and
confirm each once it is committed (receiver.py). A network connector's or
the tree connector's link is handed to `network` (services/router/network/),
which runs the same halves with demand instead of bindings.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc

from meshmq.errors import BrokerError, Reason, abort_with
from meshmq.routing_names import INTERNAL_PREFIX
from meshmq.transport import read_hello
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc

from .forwarder import write_frames
from .receiver import Receiver

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger("meshmq.cluster")

# Bindings changes within this long go out as one snapshot.
OFFER_DEBOUNCE_S = 0.01
PING = cpb.LinkResponse(ping=cpb.LinkPing())


def offered_bindings(broker: Broker, source_node_id: str, max_hops: int) -> list[cpb.ClusterBinding]:
    """What this node offers a link from `source_node_id` with `max_hops`."""
    if max_hops < 1:
        return []
    out = [
        cpb.ClusterBinding(
            node_id=broker.node_id, node_name=broker.name, queue=q.name, address=q.address,
            routing_type=q.routing_type, filter=q.filter_text,
            consumer_filters=[c.filter_text for c in q.consumers], hops=1, temporary=q.temporary,
        )
        for q in broker.queues.values() if not q.name.startswith(INTERNAL_PREFIX)
    ]
    for rb in broker.remote.all():
        if rb.hops + 1 <= max_hops and rb.node_id != source_node_id:
            out.append(rb.to_proto(rb.hops + 1))
    out.sort(key=lambda b: (b.node_id, b.queue))
    return out


class ClusterServicer(cgrpc.ClusterServicer):
    """Every method here is for other nodes only: the router refuses a caller
    without the cluster credential before any of them runs."""

    def __init__(self, broker: Broker, members: Callable[[], list[cpb.ClusterMember]] = list,
                 group_name: str = "", linked_from: Callable[[cpb.LinkHello], None] = lambda hello: None,
                 network: NetworkAcceptor | None = None) -> None:
        self.broker = broker
        # Runs the links network connectors and tree connectors open (None: this node refuses them).
        self._network = network
        # This node's scale-down group-name, told to every link (a scaling-down node checks it).
        self._group_name = group_name
        # This node and the nodes it links to (ClusterConnections.members), offered with the bindings.
        self._members = members
        # Told of every link opened to this node (ClusterConnections.linked_from: it may link back).
        self._linked_from = linked_from
        self.links: dict[str, cpb.LinkHello] = {}
        self._outs: set[asyncio.Queue] = set()

    def close(self) -> None:
        """End every link now (the node is stopping): the sources see the
        stream close and start retrying, instead of waiting out the grace."""
        for out in self._outs:
            out.put_nowait(None)

    async def Link(self, request_iterator, context: grpc.aio.ServicerContext) -> None:
        opened = await read_hello(request_iterator, context, "a link")
        if opened is None:
            return
        it, hello = opened
        if hello.HasField("network"):
            if self._network is None:
                await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "this node takes no network links")
            await self._network(hello, it, context)
            return
        link_id = f"{hello.node_name}({hello.node_id}).{hello.cluster_connection}"
        out: asyncio.Queue[cpb.LinkResponse | None] = asyncio.Queue()
        welcome = cpb.LinkWelcome(node_id=self.broker.node_id, node_name=self.broker.name, group_name=self._group_name)
        grouping = self.broker.grouping
        if grouping is not None and grouping.is_local:  # REMOTE grouping handlers propose to this node
            welcome.grouping_local_address = grouping.address
        out.put_nowait(cpb.LinkResponse(welcome=welcome))
        if hello.node_id == self.broker.node_id:
            await context.write(out.get_nowait())
            return
        self.links[link_id] = hello
        self._outs.add(out)
        log.info("cluster link from %s (cluster connection %s, max-hops %d)", hello.node_name,
                 hello.cluster_connection, hello.max_hops)
        self._linked_from(hello)
        changed = asyncio.Event()
        changed.set()
        stop_watching = self.broker.watch_bindings(changed.set)
        offer = asyncio.create_task(self._offer(hello, changed, out))
        pinger = asyncio.create_task(ping(hello.check_period_ms, out, PING))
        receiver = Receiver(self.broker, hello.node_id, hello.node_name, out, frame=cpb.LinkResponse,
                            scale_down=hello.scale_down)
        reader = asyncio.create_task(self._take(hello, it, receiver, out))
        try:
            await write_frames(out, context.write)
        finally:
            stop_watching()
            self._outs.discard(out)
            offer.cancel()
            pinger.cancel()
            reader.cancel()
            self.links.pop(link_id, None)
            log.info("cluster link from %s ended", hello.node_name)

    def groups_removed(self, address: str, group_ids: list[str]) -> None:
        """Tell every linked node that the LOCAL grouping handler forgot these decisions."""
        frame = cpb.LinkResponse(groups_removed=cpb.GroupsRemoved(address=address, group_ids=group_ids))
        for out in self._outs:
            out.put_nowait(frame)

    async def Propose(self, request: cpb.GroupProposal, context: grpc.aio.ServicerContext) -> cpb.GroupDecision:
        """A REMOTE grouping handler's proposal: the LOCAL handler's decision,
        answered once it is stored (cluster/grouping.py)."""
        grouping = self.broker.grouping
        if grouping is None or not grouping.is_local:
            await abort_with(context, BrokerError(
                Reason.INVALID_REQUEST, f"node {self.broker.name} holds no LOCAL grouping handler"))
        if request.address != grouping.address:
            await abort_with(context, BrokerError(
                Reason.INVALID_REQUEST,
                f"the LOCAL grouping handler {grouping.name!r} on node {self.broker.name} is for address "
                f"{grouping.address!r}, not {request.address!r}: configure the same address on every node"))
        node = grouping.local.propose(request.group_id, request.node_id, request.replace_node_id)
        if self.broker.persistence_enabled:
            stored = await self.broker.stored()
            if not stored.ok:
                await abort_with(context, BrokerError(
                    Reason.STORE_UNAVAILABLE,
                    f"the grouping decision could not be stored: {stored.reason} {stored.message}"))
        return cpb.GroupDecision(group_id=request.group_id, node_id=node)

    async def _offer(self, hello: cpb.LinkHello, changed: asyncio.Event, out: asyncio.Queue) -> None:
        last: cpb.BindingsSnapshot | None = None
        while True:
            await changed.wait()
            await asyncio.sleep(OFFER_DEBOUNCE_S)
            changed.clear()
            snapshot = cpb.BindingsSnapshot(bindings=offered_bindings(self.broker, hello.node_id, hello.max_hops),
                                            members=self._members(), version=self.broker.bindings_version)
            if snapshot != last:
                last = snapshot
                out.put_nowait(cpb.LinkResponse(bindings=snapshot))

    async def _take(self, hello: cpb.LinkHello, it, receiver: Receiver, out: asyncio.Queue) -> None:
        try:
            async for req in it:
                kind = req.WhichOneof("kind")
                if kind == "declare":
                    receiver.declare(req.declare)
                elif kind == "forward" and not await receiver.take(req.forward, it):
                    return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("cluster link from %s ended: %s", hello.node_name, exc)
        finally:
            out.put_nowait(None)


async def ping(check_period_ms: int, out: asyncio.Queue, frame: Any) -> None:
    """A ping every check-period, so the other end tells a quiet link from a dead node (connection-ttl)."""
    period = (check_period_ms or 30000) / 1000
    while True:
        await asyncio.sleep(period)
        out.put_nowait(frame)


# Runs an accepted network or tree link: (its hello, the frames after it, the call's context).
NetworkAcceptor = Callable[[cpb.LinkHello, AsyncIterator[Any], grpc.aio.ServicerContext], Awaitable[None]]
