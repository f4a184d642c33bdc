"""Which demand a network connector carries, on real router processes:
dynamically included and excluded destinations with ActiveMQ wildcards
(queues and topics configured apart), dynamicOnly, bridgeTempDestinations,
and replayWhenNoConsumers."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.clustering.cluster import collect

from .network import (
    link_states, network_consumers, queue_count, send, start_network, wait_count, wait_linked,
    wait_network_consumers, wait_topic_demand,
)

pytestmark = pytest.mark.integration

ONE_WAY = {"A": {"to-b": "B"}, "B": {}}


async def test_included_and_excluded_destinations_with_wildcards(nodes):
    """The seed's Example 2.4 style: queues PRICE.STOCK.> included,
    PRICE.STOCK.NYSE.* excluded. Topics are configured apart: the queue
    exclusion does not keep a topic of a matching name from crossing."""
    net = start_network(nodes, ONE_WAY, {
        "dynamicallyIncludedDestinations": {"queues": ["PRICE.STOCK.>"]},
        "excludedDestinations": {"queues": ["PRICE.STOCK.NYSE.*"]},
    })
    await wait_linked(net["A"], 1)
    async with await connect(net["B"].url) as b:
        s = await b.session()
        nasdaq = await s.create_consumer("PRICE.STOCK.NASDAQ.IBM")
        nyse = await s.create_consumer("PRICE.STOCK.NYSE.IBM")
        topic = await s.create_consumer(address="PRICE.STOCK.NYSE.MSFT")
        await wait_network_consumers(net["A"], "PRICE.STOCK.NASDAQ.IBM", 1)
        await wait_topic_demand(net["A"], "PRICE.STOCK.NYSE.MSFT")
        await send(net["A"], "PRICE.STOCK.NYSE.IBM", 4)
        await send(net["A"], "PRICE.STOCK.NASDAQ.IBM", 5)
        await send(net["A"], "PRICE.STOCK.NYSE.MSFT", 3, routing_type="multicast")
        got = await collect({"nasdaq": nasdaq, "nyse": nyse, "topic": topic}, 8)
        assert got == {"nasdaq": list(range(5)), "nyse": [], "topic": list(range(3))}
    # The excluded queue's demand never crossed: its messages stay on A.
    assert await network_consumers(net["A"], "PRICE.STOCK.NYSE.IBM") == []
    assert await queue_count(net["A"], "PRICE.STOCK.NYSE.IBM") == 4


async def _durable_subscription_left_idle(net) -> str:
    """A durable subscription to topic news on B, its consumer gone: its queue's name."""
    async with await connect(net["B"].url) as b:
        await (await b.session()).create_consumer(address="news", subscription="archive", shared=True)
        await wait_topic_demand(net["A"], "news")
    async with await connect(net["B"].url) as b:
        [queue] = [q.name for q in await b.admin.list_queues("news")]
    return queue


async def test_an_idle_durable_subscription_is_demand_by_default(nodes):
    net = start_network(nodes, ONE_WAY)
    await wait_linked(net["A"], 1)
    archive = await _durable_subscription_left_idle(net)
    await wait_topic_demand(net["A"], "news")  # still held with no consumer on it
    await send(net["A"], "news", 6, routing_type="multicast")
    await wait_count(net["B"], archive, 6)


async def test_with_dynamic_only_an_idle_durable_subscription_is_no_demand(nodes):
    net = start_network(nodes, ONE_WAY, {"dynamicOnly": True})
    await wait_linked(net["A"], 1)
    archive = await _durable_subscription_left_idle(net)
    await wait_topic_demand(net["A"], "news", 0)  # the demand left with the consumer
    await send(net["A"], "news", 6, routing_type="multicast")
    # Nothing on A kept them (no subscription there) and the link forwarded none.
    async with await connect(net["A"].url) as a:
        assert list(await a.admin.list_queues("news")) == []
    [link] = await link_states(net["A"])
    assert link.forwarded == 0
    assert await queue_count(net["B"], archive) == 0


async def test_a_non_durable_topic_subscription_is_no_temporary_destination(nodes):
    """bridgeTempDestinations: false keeps temporary destinations (request/
    reply) off the link. A non-durable subscription's queue is temporary, but
    its destination is the topic: it still crosses, as in ActiveMQ (it used
    to be taken for a temporary destination and dropped)."""
    net = start_network(nodes, ONE_WAY, {"bridgeTempDestinations": False})
    await wait_linked(net["A"], 1)
    async with await connect(net["B"].url) as b:
        consumer = await (await b.session()).create_consumer(address="prices")
        await wait_topic_demand(net["A"], "prices")
        await send(net["A"], "prices", 5, routing_type="multicast")
        assert (await collect({"B": consumer}, 5))["B"] == list(range(5))


async def _strand_on_b(net, sent: int, taken: int) -> None:
    """A consumer on B takes `taken` of `sent` messages A forwarded to it and
    leaves: the rest wait on B."""
    async with await connect(net["B"].url) as b:
        consumer = await (await b.session()).create_consumer("ORDERS", window_size=1)
        await wait_network_consumers(net["A"], "ORDERS", 1)
        await send(net["A"], "ORDERS", sent)
        for _ in range(taken):
            consumer.ack(await consumer.receive(timeout=10))
        await wait_count(net["A"], "ORDERS", 0)
    await wait_count(net["B"], "ORDERS", sent - taken)


async def test_replay_sends_stranded_messages_back_to_a_consumer_on_a(nodes):
    net = start_network(nodes, {"A": {"to-b": ("B", {"duplex": True, "replayWhenNoConsumers": True})}, "B": {}})
    await wait_linked(net["A"], 1)
    await _strand_on_b(net, 20, 5)
    async with await connect(net["A"].url) as a:
        consumer = await (await a.session()).create_consumer("ORDERS")
        got = await collect({"A": consumer}, 15)
    assert sorted(got["A"]) == list(range(5, 20))
    assert await queue_count(net["B"], "ORDERS") == 0


async def test_without_replay_stranded_messages_stay_on_b(nodes):
    net = start_network(nodes, {"A": {"to-b": ("B", {"duplex": True})}, "B": {}})
    await wait_linked(net["A"], 1)
    await _strand_on_b(net, 20, 5)
    async with await connect(net["A"].url) as a:
        consumer = await (await a.session()).create_consumer("ORDERS")
        await wait_network_consumers(net["B"], "ORDERS", 1)  # A's demand is on B, and takes none of them
        assert await consumer.receive(timeout=1.0) is None
    assert await queue_count(net["B"], "ORDERS") == 15
