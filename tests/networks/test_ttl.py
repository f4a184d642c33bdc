"""messageTTL and consumerTTL apart, on real router processes: networkTTL
sets both, and each may be set on its own. Demand crosses up to consumerTTL
links; a message crosses up to messageTTL links and then stays where its hops
ran out, on the queue of that node, for a consumer there (or a longer TTL)."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually

from .network import (
    all_settled, link_to, queue_count, send, start_network, wait_count, wait_linked, wait_network_consumers,
)

pytestmark = pytest.mark.integration

# A chain of one-way connectors: messages flow A -> B -> C -> D, demand from D back up to A.
CHAIN = {"A": {"ab": "B"}, "B": {"bc": "C"}, "C": {"cd": "D"}, "D": {}}


async def test_demand_goes_as_far_as_consumer_ttl_and_messages_as_far_as_message_ttl(nodes):
    """consumerTTL 3 takes D's demand to A (three links); messageTTL 2 lets
    A's messages cross two links, to C, and there they stay: C's link to D
    takes no message that has crossed two links already."""
    net = start_network(nodes, CHAIN, {"consumerTTL": 3, "messageTTL": 2})
    for name in "ABC":
        await wait_linked(net[name], 1)
    async with await connect(net["D"].url) as d:
        consumer = await (await d.session()).create_consumer("ORDERS")
        for name in "ABC":  # the demand went all the way up
            await wait_network_consumers(net[name], "ORDERS", 1)
        await send(net["A"], "ORDERS", 10)
        await wait_count(net["C"], "ORDERS", 10)
        await eventually(lambda: all_settled(net), 20, "every link to have settled")
        assert [(await link_to(net[a], b)).forwarded for a, b in ("AB", "BC", "CD")] == [10, 10, 0]
        assert [await queue_count(net[name], "ORDERS") for name in "ABCD"] == [0, 0, 10, 0]
        assert await consumer.receive(timeout=0.5) is None
