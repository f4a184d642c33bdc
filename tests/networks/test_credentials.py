"""A network connector's `userName`/`password`: the credential its links
present — the other broker's cluster credential, so that two networks with
credentials of their own can be linked; a wrong one is refused, said on the
link, and nothing crosses."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually

from .network import link_states, send, start_network, wait_count

pytestmark = pytest.mark.integration

B_CREDENTIAL = "cluster-user: b-net\ncluster-password: b-network-secret\n"


@pytest.mark.parametrize("password, links", [("b-network-secret", True), ("not-the-secret", False)])
async def test_the_connector_presents_its_own_credential_to_the_other_network(nodes, password, links):
    net = start_network(nodes, {"A": {"to-b": "B"}, "B": {}},
                        options={"userName": "b-net", "password": password},
                        per_node={"A": "cluster-password: a-network-secret\n", "B": B_CREDENTIAL})
    async with await connect(net["B"].url) as b:
        consumer = await (await b.session()).create_consumer("ORDERS")
        if links:
            async def linked():
                return [s.state for s in await link_states(net["A"])] == ["connected"]
            await eventually(linked, 20, "A's link to B, with B's credential")
            await eventually(lambda: _subscribed(net["A"]), 20, "A to hold B's demand")
            await send(net["A"], "ORDERS", 10)
            assert (await collect({"B": consumer}, 10))["B"] == list(range(10))
            return

        async def refused():
            states = await link_states(net["A"])
            return len(states) == 1 and "did not prove" in states[0].problem
        await eventually(refused, 20, "A's link to be refused with the reason")
        await send(net["A"], "ORDERS", 10)
        await wait_count(net["A"], "ORDERS", 10)  # nothing crossed: all ten wait where they were sent
        assert await consumer.receive(timeout=0.5) is None


async def _subscribed(node) -> bool:
    async with await connect(node.url) as conn:
        return any(c.session_id.startswith("network ") for c in await conn.admin.list_consumers("ORDERS"))
