"""Client-side load balancing over real router processes."""

from __future__ import annotations

from collections import Counter

import pytest

from meshmq.client import connect

pytestmark = pytest.mark.integration


@pytest.fixture
def four_nodes(nodes):
    return [nodes.router(f"lb{i}") for i in range(4)]


def static_list(routers, options: str) -> str:
    return "(" + ",".join(r.url for r in routers) + ")?" + options


async def test_round_robin_spreads_400_sessions_100_each_in_a_fixed_rotation(four_nodes):
    by_id = {r.info["node_id"]: i for i, r in enumerate(four_nodes)}
    async with await connect(static_list(four_nodes, "useTopologyForLoadBalancing=false")) as conn:
        order = []
        for _ in range(400):
            s = await conn.session()
            order.append(by_id[s.node_id])
            await s.close()
    assert Counter(order) == {0: 100, 1: 100, 2: 100, 3: 100}
    first = order[0]
    assert order == [(first + i) % 4 for i in range(400)]


async def test_first_element_and_custom_policy(four_nodes):
    by_id = {r.info["node_id"]: i for i, r in enumerate(four_nodes)}
    uri = static_list(four_nodes, "useTopologyForLoadBalancing=false&connectionLoadBalancingPolicyClassName=FirstElement")
    async with await connect(uri) as conn:
        picks = {by_id[(await conn.session()).node_id] for _ in range(5)}
    assert picks == {0}
    uri = static_list(
        four_nodes,
        "useTopologyForLoadBalancing=false&connectionLoadBalancingPolicyClassName=tests.unit.test_loadbalance:AlwaysLast",
    )
    async with await connect(uri) as conn:
        picks = {by_id[(await conn.session()).node_id] for _ in range(5)}
    assert picks == {3}


async def test_first_contact_skips_a_dead_server_and_topology_is_pushed(nodes):
    live = nodes.router("alive")
    dead = "meshmq://127.0.0.1:1"
    async with await connect(f"({dead},{live.url})?callTimeout=3000") as conn:
        assert conn.node.node_id == live.info["node_id"]
        topology = await conn.wait_for_topology(1)
        assert [s.target for s in topology] == [live.endpoint]
        # with the topology (this node alone), sessions go to the live node
        s = await conn.session()
        assert s.node_id == live.info["node_id"]
