"""Shared subscriptions across a cluster connection: a subscription is a queue
like any other, so the queues of one shared subscription on two nodes form one
queue group, and each message reaches one of its consumers, once — while two
client ids' durable subscriptions of one name stay two subscriptions."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect

from .cluster import collect, start_cluster, wait_bindings

pytestmark = pytest.mark.integration

TOPIC = "orders.events"


async def test_shared_subscriptions_on_two_nodes_get_each_message_once(nodes):
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]})
    async with await connect(cluster["A"].url + "?clientID=shop") as a, \
            await connect(cluster["B"].url + "?clientID=shop") as b, \
            await connect(cluster["B"].url + "?clientID=audit") as audit:
        consumers = {}
        for node, conn in (("A", a), ("B", b)):
            s = await conn.session()
            consumers[f"{node}:durable"] = await s.create_consumer(address=TOPIC, subscription="work", shared=True)
            consumers[f"{node}:live"] = await s.create_consumer(address=TOPIC, subscription="live", shared=True,
                                                                durable=False)
        # Another client id's unshared subscription of the same name on B: a subscription of its own.
        consumers["B:audit"] = await (await audit.session()).create_consumer(address=TOPIC, subscription="work")
        assert consumers["A:durable"].queue == consumers["B:durable"].queue == "shop.work"
        assert consumers["A:live"].queue == consumers["B:live"].queue == "nonDurable.shop.live"
        assert consumers["B:audit"].queue == "audit.work"
        await wait_bindings(cluster["A"], {("B", "shop.work", 1), ("B", "nonDurable.shop.live", 1),
                                           ("B", "audit.work", 1)})

        p = await (await a.session()).create_producer(TOPIC)
        await asyncio.gather(*[await p.send_async(b"x", properties={"n": i}, routing_type="multicast")
                               for i in range(20)])
        got = await collect(consumers, 20 * 3)
        for sub in ("durable", "live"):
            a_got, b_got = got[f"A:{sub}"], got[f"B:{sub}"]
            assert sorted(a_got + b_got) == list(range(20)), (sub, a_got, b_got)  # each once
            assert a_got and b_got, (sub, a_got, b_got)  # shared across the nodes
        assert got["B:audit"] == list(range(20))
        for c in consumers.values():
            await c.close()
        await (await a.session()).unsubscribe("work")
        await (await b.session()).unsubscribe("work")
        await (await audit.session()).unsubscribe("work")
