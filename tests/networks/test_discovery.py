"""A network connector whose uri is `discovery:(etcd://…)`: a link to every
broker announced in that etcd group (meshmq's discovery replacing
ActiveMQ's multicast), this one excepted, as they come."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually

from .network import link_states, pinned, send

pytestmark = pytest.mark.integration


async def test_a_discovery_uri_links_to_every_announced_broker_as_it_comes(nodes, etcd_session):
    cluster = f"net-{id(nodes)}"
    announce = f"""
discovery-groups:
  dg: {{etcd: {{endpoints: ["{etcd_session.endpoint}"]}}, cluster-name: {cluster}, refresh-timeout: 4000}}
broadcast-groups:
  bg: {{discovery-group-ref: dg, broadcast-period: 500}}
"""
    hub = nodes.router("HUB", extra=announce + f"""
network-connectors:
  everyone: {{uri: "discovery:(etcd://{etcd_session.endpoint})?clusterName={cluster}"}}
""")
    spokes = {name: nodes.router(name, extra=announce) for name in ("S1", "S2")}

    async def linked_to_both():
        return sorted(s.target_node_name for s in await link_states(hub) if s.state == "connected") == ["S1", "S2"]
    await eventually(linked_to_both, 30, "the hub to link to both spokes it discovered", interval=0.2)
    # The three announce in one discovery group: a client pinned to the node it names
    # (the SDK would otherwise spread its sessions over the topology).
    conns = [await connect(pinned(spokes[name].url)) for name in ("S1", "S2")]
    try:
        consumers = {name: await (await conn.session()).create_consumer(f"orders.{name}")
                     for name, conn in zip(("S1", "S2"), conns)}

        async def held():
            async with await connect(pinned(hub.url)) as conn:
                return sorted((c.queue, c.session_id) for c in await conn.admin.list_consumers())

        async def both_subscribed():
            return {q for q, session in await held() if session.startswith("network ")} == {"orders.S1", "orders.S2"}
        try:
            await eventually(both_subscribed, 20, "the hub to hold each spoke's demand")
        except TimeoutError:
            raise AssertionError(f"the hub's consumers: {await held()}") from None
        for name in ("S1", "S2"):
            await send(hub, f"orders.{name}", 5)
        got = await collect(consumers, 10)
        assert got == {"S1": list(range(5)), "S2": list(range(5))}
    finally:
        for conn in conns:
            await conn.close()
