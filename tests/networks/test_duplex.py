"""`duplex: true` on real router processes: one connector, defined on A
only, carries messages both ways over its one link (B, say behind a firewall,
needs no connector of its own)."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.clustering.cluster import collect

from .network import send, start_network, wait_links, wait_network_consumers

pytestmark = pytest.mark.integration


async def test_consumers_on_each_side_receive_what_the_other_side_sends(nodes):
    net = start_network(nodes, {"A": {"to-b": ("B", {"duplex": True})}, "B": {}})
    [on_a] = await wait_links(net["A"], 1)
    [on_b] = await wait_links(net["B"], 1)
    # B's one link is the one A opened: accepted, under A's connector name, leading to A.
    assert (on_b.cluster_connection, on_b.target_node_name) == ("to-b", "A")
    assert (on_a.cluster_connection, on_a.target_node_name) == ("to-b", "B")
    async with await connect(net["A"].url) as a, await connect(net["B"].url) as b:
        consumer_a = await (await a.session()).create_consumer("FROM.B")
        consumer_b = await (await b.session()).create_consumer("FROM.A")
        await wait_network_consumers(net["B"], "FROM.B", 1)  # A's demand, held on B
        await wait_network_consumers(net["A"], "FROM.A", 1)
        await send(net["B"], "FROM.B", 10)
        await send(net["A"], "FROM.A", 15)
        got = await collect({"A": consumer_a, "B": consumer_b}, 25)
    assert got == {"A": list(range(10)), "B": list(range(15))}
    # Still the one link at each end, and it carried both ways.
    [on_a] = await wait_links(net["A"], 1)
    [on_b] = await wait_links(net["B"], 1)
    assert (on_a.forwarded, on_b.forwarded) == (15, 10)
