"""Topic messages through a network connector: a conduit subscription folds
a topic's remote consumers into one, so each message crosses the link once;
without conduits each consumer has its own network subscription and, as the
ActiveMQ guide documents, each consumer receives each message twice. In a
diamond, where a subscriber's demand reaches a node by two routes,
suppressDuplicateTopicSubscriptions (on by default) keeps one of them, so
the subscriber gets one copy of each message; off, it gets two."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually

from .network import all_settled, link_states, send, start_network, wait_linked, wait_topic_demand

pytestmark = pytest.mark.integration

N = 20


async def _two_subscribers_on_b(net, conduit: bool) -> tuple[dict[str, list[int]], int]:
    """Two consumers on topic prices on B, N published on A: what each got, and A's link's forwarded count."""
    async with await connect(net["B"].url) as b:
        s = await b.session()
        consumers = {"C1": await s.create_consumer(address="prices"),
                     "C2": await s.create_consumer(address="prices")}
        await wait_topic_demand(net["A"], "prices", 1 if conduit else 2)
        await send(net["A"], "prices", N, routing_type="multicast")
        got = await collect(consumers, sum(1 for _ in consumers) * N * (1 if conduit else 2))
    [link] = await link_states(net["A"])
    return got, link.forwarded


async def test_a_conduit_carries_each_topic_message_once(nodes):
    net = start_network(nodes, {"A": {"to-b": "B"}, "B": {}})
    await wait_linked(net["A"], 1)
    got, forwarded = await _two_subscribers_on_b(net, conduit=True)
    assert got == {"C1": list(range(N)), "C2": list(range(N))}
    assert forwarded == N


async def test_without_conduits_each_consumer_gets_each_message_twice(nodes):
    """conduitSubscriptions: false: one network subscription per remote
    consumer, each a copy of every message, and on B each copy reaches both
    consumers: the duplication the guide warns of."""
    net = start_network(nodes, {"A": {"to-b": "B"}, "B": {}}, {"conduitSubscriptions": False})
    await wait_linked(net["A"], 1)
    got, forwarded = await _two_subscribers_on_b(net, conduit=False)
    twice = sorted(list(range(N)) * 2)
    assert {name: sorted(ns) for name, ns in got.items()} == {"C1": twice, "C2": twice}
    assert forwarded == 2 * N


# A diamond of one-way connectors: A forwards to B and C, both forward to D. With networkTTL 2 a
# consumer's demand on D reaches A twice, by way of B and by way of C (two hops each).
DIAMOND = {"A": {"ab": "B", "ac": "C"}, "B": {"bd": "D"}, "C": {"cd": "D"}, "D": {}}


async def _diamond_with_a_subscriber_on_d(nodes, options: dict):
    """The diamond linked, a subscriber of topic prices on D, and A holding
    both routes' demand (each of A's links has had an update after its first
    offer): the network, D's connection and the subscriber."""
    net = start_network(nodes, DIAMOND, {"networkTTL": 2, **options})
    for node in net.values():
        await wait_linked(node, 2)
    d = await connect(net["D"].url)
    subscriber = await (await d.session()).create_consumer(address="prices")

    async def both_routes_heard() -> bool:
        return all(link.demand_received >= 2 for link in await link_states(net["A"]))
    await eventually(both_routes_heard, 20, "A to hear D's demand by way of B and of C")
    return net, d, subscriber


async def _forwarded(node) -> dict[str, int]:
    return {link.target_node_name: link.forwarded for link in await link_states(node)}


async def test_suppressed_duplicate_topic_subscriptions_forward_each_message_once(nodes):
    """suppressDuplicateTopicSubscriptions (on by default): A keeps one
    subscription for D's subscriber, the route by the lower link id (ab: both
    routes are two hops), so each message leaves A once and D's subscriber
    receives one copy of each."""
    net, d, subscriber = await _diamond_with_a_subscriber_on_d(nodes, {})
    async with d:
        await wait_topic_demand(net["A"], "prices", 1)
        await send(net["A"], "prices", N, routing_type="multicast")
        got = await collect({"D": subscriber}, N)
        assert got == {"D": list(range(N))}
        await eventually(lambda: all_settled(net), 20, "every link to have settled")
        assert await _forwarded(net["A"]) == {"B": N, "C": 0}
        assert (await _forwarded(net["C"]))["D"] == 0
        assert await subscriber.receive(timeout=0.5) is None


async def test_without_suppression_a_topic_message_reaches_the_subscriber_by_both_routes(nodes):
    """suppressDuplicateTopicSubscriptions: false: A holds D's demand once per
    route, each a copy of every message, and both copies reach D — the
    duplicate the option exists to suppress."""
    net, d, subscriber = await _diamond_with_a_subscriber_on_d(nodes, {"suppressDuplicateTopicSubscriptions": False})
    async with d:
        await wait_topic_demand(net["A"], "prices", 2)
        await send(net["A"], "prices", N, routing_type="multicast")
        got = await collect({"D": subscriber}, 2 * N)
        assert sorted(got["D"]) == sorted(list(range(N)) * 2)
        await eventually(lambda: all_settled(net), 20, "every link to have settled")
        assert await _forwarded(net["A"]) == {"B": N, "C": N}
