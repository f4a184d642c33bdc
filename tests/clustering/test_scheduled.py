"""A scheduled message sent on A for a consumer on B (ON_DEMAND) crosses the
cluster bridge at once and waits on B, which delivers it at its time: the
time travels in the message's `delivery_time` field."""

from __future__ import annotations

import time

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually

from .cluster import start_cluster, wait_bindings

pytestmark = pytest.mark.integration

QUEUE = "sched.svc"
QUEUES = f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"


def now_ms() -> int:
    return int(time.time() * 1000)


async def test_a_scheduled_message_forwarded_over_a_bridge_waits_on_the_far_node_until_its_time(nodes):
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]}, options="message-load-balancing: ON_DEMAND",
                            extra=QUEUES)
    async with await connect(cluster["B"].url) as b_conn, await connect(cluster["A"].url) as a_conn:
        c = await (await b_conn.session()).create_consumer(QUEUE)
        await wait_bindings(cluster["A"], {("B", QUEUE, 1)})
        p = await (await a_conn.session()).create_producer(QUEUE)
        at = now_ms() + 2000
        await p.send(b"later", routing_type="anycast", delivery_time=at)

        async def held_on_b() -> bool:
            info = await b_conn.admin.queue(QUEUE)
            return (info.message_count, info.scheduled_count) == (1, 1)

        # Forwarded at once (A's store-and-forward queue does not hold it back); B holds it as scheduled.
        await eventually(held_on_b, max(0.1, (at - now_ms()) / 1000 - 0.3), "B to hold the message as scheduled")
        assert sum(q.message_count for q in await a_conn.admin.list_queues()) == 0
        assert await c.receive(max(0.0, (at - now_ms()) / 1000 - 0.05)) is None
        msg = await c.receive(5)
        assert msg.body == b"later" and now_ms() >= at and msg.delivery_time == at
        msg.ack()
