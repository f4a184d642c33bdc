"""Scale-down (``ha-policy: live-only: scale-down``): a node stopped
gracefully sends all of its messages to another node before it goes.

The target is the first node that answers among the scale-down `connectors`
(in order) and the nodes of its `discovery-group-ref`, whose own scale-down
`group-name` is the same when one is set. The move runs over the same link
engine as cluster connections: the target creates the queues it lacks, then
every queue's messages — durable and not, paged ones read back from the
store, those waiting out a redelivery delay, with their duplicate ids and
delivery counts — go to the back of its queue of the same name, in their
original order. Messages already waiting to be forwarded elsewhere keep
their destinations. Each is released here only once the target confirmed
it; if no target can take them the node says why and stops with them still
in its store (durable ones survive; the log counts the non-durable ones).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import grpc

from meshmq.aio import wait_for
from meshmq.config.models import ClusterConnection, ScaleDown
from meshmq.routing_names import INTERNAL_PREFIX
from meshmq.runtime import ScaleDownFailed
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc
from meshmq.v1 import journal_pb2 as jpb

from ..routing import ROUTE_SEP, ROUTE_TO
from .bridge import Bridge
from .forwarder import DELIVERY_COUNT
from .link_identity import LinkIdentity, link_identity

if TYPE_CHECKING:
    from meshmq.config.models import BrokerConfig

    from ..broker import Broker

log = logging.getLogger("meshmq.cluster")

SCALE_DOWN = "scale-down"
PROBE_TIMEOUT_S = 5.0
# How long the target may take to confirm everything, at least and per message.
CONFIRM_DEADLINE_S, CONFIRM_PER_MESSAGE_S = 60.0, 0.01


async def candidates(config: BrokerConfig, sd: ScaleDown, own: set[str]) -> list[str]:
    """Endpoints to try, in order: the listed connectors, then the discovery group's nodes."""
    out = [config.connectors[ref] for ref in sd.connectors]
    if sd.discovery_group_ref is not None:
        from meshmq.discovery.groups import group_watcher

        group = config.discovery_groups[sd.discovery_group_ref]
        api, watcher = group_watcher(config, sd.discovery_group_ref)
        try:
            deadline = time.monotonic() + max(group.initial_wait_timeout, 1000) / 1000
            while not watcher.synced and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            out += sorted(n.connector for n in watcher.nodes())
        finally:
            await watcher.close()
            await api.close()
    return [e for i, e in enumerate(out) if e not in own and e not in out[:i]]


class Welcomed(str):
    """A probe's yes: the target's node id."""

    @property
    def node_id(self) -> str:
        return str(self)


async def probe(endpoint: str, identity: LinkIdentity, node_id: str, node_name: str, group_name: str | None) -> str:
    """Why `endpoint` cannot take the messages, or `Welcomed` (its node id) when it can."""
    channel = identity.open(endpoint)
    try:
        call = cgrpc.ClusterStub(channel).Link(
            metadata=await identity.metadata(channel, endpoint, timeout_s=PROBE_TIMEOUT_S))
        await wait_for(call.write(identity.hello(SCALE_DOWN, node_id, node_name, max_hops=0,
                                                 scale_down=True)), PROBE_TIMEOUT_S)
        first = await wait_for(call.read(), PROBE_TIMEOUT_S)
        call.cancel()
    except grpc.aio.AioRpcError as exc:
        return f"{exc.code().name}: {exc.details()}"
    except TimeoutError:
        return "no answer"
    finally:
        await channel.close()
    if first is grpc.aio.EOF or first.WhichOneof("kind") != "welcome":
        return "it ended the link"
    if first.welcome.node_id == node_id:
        return "it is this node"
    if group_name is not None and first.welcome.group_name != group_name:
        return f"its scale-down group-name is {first.welcome.group_name or 'not set'!r}, not {group_name!r}"
    return Welcomed(first.welcome.node_id)


async def choose_target(config: BrokerConfig, broker: Broker, own_endpoints: list[str]) -> tuple[str, str]:
    """(endpoint, node id) of the first node that can take the messages. Raises ScaleDownFailed."""
    sd = config.scale_down
    identity = link_identity(config)
    tried = []
    for endpoint in await candidates(config, sd, set(own_endpoints)):
        why = await probe(endpoint, identity, broker.node_id, config.name, sd.group_name)
        if isinstance(why, Welcomed):
            return endpoint, why.node_id
        tried.append(f"{endpoint} ({why})")
    raise ScaleDownFailed("no node to scale down to: " + ("; ".join(tried) if tried else
                          "the scale-down connectors and discovery group name none"))


async def scale_down(config: BrokerConfig, broker: Broker, endpoint: str) -> None:
    """Move everything to the node at `endpoint`. Raises ScaleDownFailed."""
    await _move_all(config, broker, endpoint, link_identity(config))


async def _move_all(config: BrokerConfig, broker: Broker, endpoint: str, identity: LinkIdentity) -> None:
    cc = ClusterConnection(static_connectors=(SCALE_DOWN,), initial_connect_attempts=3, reconnect_attempts=3)
    bridge = Bridge(broker, SCALE_DOWN, cc, endpoint, identity=identity, node_name=config.name, scale_down=True)
    bridge.start()
    try:
        await wait_for(bridge.connected.wait(), PROBE_TIMEOUT_S * 2)
        target = bridge.target_node_id
        sf_name = bridge.store_and_forward_queue().name
        queues = [q for q in broker.queues.values() if q.name != sf_name and not q.temporary]
        bridge.declare([
            cpb.QueueDeclaration(name=q.name, address=q.address, routing_type=q.routing_type, filter=q.filter_text,
                                 durable=q.durable)
            for q in queues if not q.name.startswith(INTERNAL_PREFIX)
        ])
        moved = 0
        for q in queues:
            while q.paged_messages:  # read the whole page back, in order
                before = q.paged_messages
                await broker.delivery.read_page(q)
                if q.paged_messages >= before:
                    break
            own = [f"{target}/{q.name}"]
            staged = []
            for ref in q.take_all():
                msg = ref.msg
                route = msg.proto.properties.get(ROUTE_TO)
                keys = route.string_value.split(ROUTE_SEP) if route is not None else own
                msg.forwards = {bridge: keys}
                if ref.delivery_count:
                    msg.proto.properties[DELIVERY_COUNT].int_value = ref.delivery_count
                staged.extend(broker.sender.stage(msg, []))
                msg.proto.properties.pop(DELIVERY_COUNT, None)
                broker.delivery.release(ref, jpb.REMOVED)
                moved += 1
            # All at once, after the commit: a non-durable copy must not overtake a durable one.
            broker.delivery.enqueue_when_stored(staged)
        deadline = time.monotonic() + CONFIRM_DEADLINE_S + moved * CONFIRM_PER_MESSAGE_S
        while bridge.pending and time.monotonic() < deadline:
            if bridge.state not in ("connected", "connecting", "retrying"):
                break
            await asyncio.sleep(0.05)
        if bridge.pending:
            raise ScaleDownFailed(f"{endpoint} confirmed {bridge.confirmed} of {moved} messages; "
                                  f"{bridge.pending} stay in this node's store ({bridge.problem or 'timed out'})")
        log.info("scaled down %d messages to %s (%s)", moved, bridge.target_node_name, endpoint)
    finally:
        await bridge.stop()
