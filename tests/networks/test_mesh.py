"""Meshes of network connectors on real router processes: networkTTL and
the broker path keep messages from circulating round a loop,
decreaseNetworkConsumerPriority makes the shortest route win, and
suppressDuplicateQueueSubscriptions leaves one subscription per consumer."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually

from .network import (
    all_settled, link_states, link_to, queue_count, send, start_network, wait_links, wait_network_consumers,
)

pytestmark = pytest.mark.integration

DUPLEX = {"duplex": True}


async def test_a_triangle_delivers_each_message_once_and_nothing_circulates(nodes):
    net = start_network(nodes, {"A": {"ab": "B"}, "B": {"bc": "C"}, "C": {"ca": "A"}}, {**DUPLEX, "networkTTL": 2})
    for node in net.values():
        await wait_links(node, 2)
    async with await connect(net["C"].url) as c:
        consumer = await (await c.session()).create_consumer("ORDERS")
        await wait_network_consumers(net["A"], "ORDERS", 2)  # C's demand, direct and by way of B
        await send(net["A"], "ORDERS", 20)
        got = await collect({"C": consumer}, 20)
        assert sorted(got["C"]) == list(range(20))
        # Settled: every copy forwarded was confirmed and nothing waits on a link; no message goes round.
        await eventually(lambda: all_settled(net), 20, "every link to have settled")
        for name, node in net.items():
            assert await queue_count(node, "ORDERS") == 0, name
        assert await consumer.receive(timeout=0.5) is None


# The seed's Figure 2.18: a ring A..F with the chord B-E.
FIGURE_2_18 = {"A": {"ab": "B"}, "B": {"bc": "C", "be": "E"}, "C": {"cd": "D"}, "D": {"de": "E"},
               "E": {"ef": "F"}, "F": {"fa": "A"}}


async def test_decreased_network_priority_sends_everything_by_the_direct_route(nodes):
    net = start_network(nodes, FIGURE_2_18, {**DUPLEX, "networkTTL": 3, "decreaseNetworkConsumerPriority": True})
    for name, node in net.items():
        await wait_links(node, 3 if name in "BE" else 2)
    async with await connect(net["E"].url) as e:
        c1 = await (await e.session()).create_consumer("PRICES")
        # B holds C1's demand three ways: from E (1 hop), by C-D and by A-F (3 hops each).
        await wait_network_consumers(net["B"], "PRICES", 3)
        await send(net["B"], "PRICES", 50)
        got = await collect({"C1": c1}, 50)
    assert got["C1"] == list(range(50))
    await eventually(lambda: all_settled(net), 20, "every link to have settled")
    assert (await link_to(net["B"], "E")).forwarded == 50
    for name, node in net.items():
        others = [(name, b.target_node_name, b.forwarded) for b in await link_states(node)
                  if (name, b.target_node_name) != ("B", "E")]
        assert [o for o in others if o[2]] == [], others


async def test_suppressed_duplicates_leave_one_subscription_for_a_consumer(nodes):
    """The seed's Figure 2.19: A, B and C fully connected, networkTTL 2, C1
    on B. A hears of C1 from B and, through C, a second time; with
    suppressDuplicateQueueSubscriptions it holds only the direct one, so all
    of A's messages for C1 go straight to B."""
    net = start_network(nodes, {"A": {"ab": "B", "ac": "C"}, "B": {"bc": "C"}, "C": {}},
                        {**DUPLEX, "networkTTL": 2, "suppressDuplicateQueueSubscriptions": True})
    for node in net.values():
        await wait_links(node, 2)
    async with await connect(net["B"].url) as b:
        c1 = await (await b.session()).create_consumer("ORDERS")
        await wait_network_consumers(net["C"], "ORDERS", 1)  # C holds B's demand, and passes it on to A
        [held] = await wait_network_consumers(net["A"], "ORDERS", 1)
        assert held.session_id == f"network ab->{net['B'].endpoint}"
        await send(net["A"], "ORDERS", 20)
        got = await collect({"C1": c1}, 20)
    assert got["C1"] == list(range(20))
    forwarded = sorted((b.target_node_name, b.forwarded) for b in await link_states(net["A"]))
    assert forwarded == [("B", 20), ("C", 0)]


async def test_without_suppression_a_holds_a_subscription_per_route(nodes):
    """The contrast for the test above: the same network without
    suppressDuplicateQueueSubscriptions, and A holds C1's demand twice."""
    net = start_network(nodes, {"A": {"ab": "B", "ac": "C"}, "B": {"bc": "C"}, "C": {}},
                        {**DUPLEX, "networkTTL": 2})
    for node in net.values():
        await wait_links(node, 2)
    async with await connect(net["B"].url) as b:
        await (await b.session()).create_consumer("ORDERS")
        held = await wait_network_consumers(net["A"], "ORDERS", 2)
    assert sorted(c.session_id for c in held) == sorted([f"network ab->{net['B'].endpoint}",
                                                          f"network ac->{net['C'].endpoint}"])
