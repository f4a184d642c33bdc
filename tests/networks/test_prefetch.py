"""`prefetchSize` on a real network: a network subscription moves at most
that many messages toward its peer before the peer has stored them, so a
peer that goes away does not drain the queue — the rest stay for the local
consumers — and what was moved reaches the peer when it is back."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually

from .network import pinned, queue_count, send, start_network, wait_count, wait_linked, wait_network_consumers

pytestmark = pytest.mark.integration


async def test_an_absent_peer_holds_at_most_prefetch_size_and_the_rest_stay_for_local_consumers(nodes):
    net = start_network(nodes, {"A": {"to-b": "B"}, "B": {}}, options={"prefetchSize": 5})
    await wait_linked(net["A"], 1)
    async with await connect(pinned(net["B"].url)) as b:
        await (await b.session()).create_consumer("ORDERS")
        await wait_network_consumers(net["A"], "ORDERS", 1)
        net["B"].kill9()  # B's demand stands on A (store and forward), B cannot take anything
    await send(net["A"], "ORDERS", 20)

    async def sf_on_a() -> int:
        async with await connect(pinned(net["A"].url)) as conn:
            return sum(q.message_count for q in await conn.admin.list_queues()
                       if q.name.startswith("$.meshmq.sf.network."))
    await wait_count(net["A"], "ORDERS", 15)
    # Moved toward B, waiting for it: prefetchSize, no more. (The copies are in the
    # store-and-forward queue once their commit is done, a moment after they left ORDERS.)
    async def moved() -> bool:
        return await sf_on_a() == 5
    await eventually(moved, 10, "A's store-and-forward queue to hold the 5 moved toward B", interval=0.1)
    assert await queue_count(net["A"], "ORDERS") == 15
    async with await connect(pinned(net["A"].url)) as a:
        local = await (await a.session()).create_consumer("ORDERS")
        got = await collect({"A": local}, 15)
    assert got["A"] == list(range(5, 20))

    net["B"].start()  # back, without a consumer: what was moved for it is stored there, none lost
    await wait_count(net["B"], "ORDERS", 5)
    assert await queue_count(net["A"], "ORDERS") == 0 and await sf_on_a() == 0
