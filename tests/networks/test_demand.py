"""Dynamic (demand-driven) propagation over network connectors, on real
router processes: messages flow from the node that defines the connector,
demand flows back; a conduit subscription carries the OR of its consumers'
selectors, so nothing is stranded where no consumer takes it."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually

from .network import queue_count, send, start_network, wait_count, wait_linked, wait_network_consumers

pytestmark = pytest.mark.integration


async def test_a_consumer_on_b_draws_what_a_receives_and_nothing_flows_the_other_way(nodes):
    net = start_network(nodes, {"A": {"to-b": "B"}, "B": {}})
    await wait_linked(net["A"], 1)
    async with await connect(net["B"].url) as b:
        consumer = await (await b.session()).create_consumer("ORDERS")
        await wait_network_consumers(net["A"], "ORDERS", 1)  # B's demand, held on A
        await send(net["A"], "ORDERS", 20)
        got = await collect({"B": consumer}, 20)
        assert got["B"] == list(range(20))
    assert await queue_count(net["A"], "ORDERS") == 0
    # One-way: a consumer on A is no demand on B (B has no connector to A), so what B receives stays on B.
    async with await connect(net["A"].url) as a:
        on_a = await (await a.session()).create_consumer("RETURNS")
        await send(net["B"], "RETURNS", 5)
        assert await on_a.receive(timeout=1.0) is None
    await wait_count(net["B"], "RETURNS", 5)


async def test_a_conduit_carries_the_or_of_the_selectors_and_strands_nothing(nodes):
    # The guide's case: C1 takes region 'us', C2 region 'emea', both on B; 'apac' has no taker anywhere.
    net = start_network(nodes, {"A": {"to-b": "B"}, "B": {}})
    await wait_linked(net["A"], 1)
    async with await connect(net["B"].url) as b:
        s = await b.session()
        us = await s.create_consumer("ORDERS", filter="region = 'us'")
        emea = await s.create_consumer("ORDERS", filter="region = 'emea'")

        async def one_conduit_with_both():
            async with await connect(net["A"].url) as a:
                filters = [c.filter for c in await a.admin.list_consumers("ORDERS")]
            return len(filters) == 1 and "region = 'us'" in filters[0] and "region = 'emea'" in filters[0]
        await eventually(one_conduit_with_both, 20, "A to hold one conduit subscription with both selectors")
        regions = ["us", "emea", "apac"]
        await send(net["A"], "ORDERS", 30, props=lambda i: {"region": regions[i % 3]})
        got = await collect({"us": us, "emea": emea}, 20)
        assert got["us"] == list(range(0, 30, 3)) and got["emea"] == list(range(1, 30, 3))
    # 'apac' stays on A, where it was sent; nothing waits on B for a consumer that would never take it.
    await wait_count(net["A"], "ORDERS", 10)
    assert await queue_count(net["B"], "ORDERS") == 0
