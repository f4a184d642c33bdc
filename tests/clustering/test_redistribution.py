"""Message redistribution (issue 11): messages left on a node whose consumer
went away move to a node with a consumer after `redistribution-delay`; a
consumer back within the delay keeps them."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually

from .cluster import collect, start_cluster, wait_bindings

pytestmark = pytest.mark.integration

QUEUE = "OrderQueue"


def pair(nodes, delay: int, mode: str = "ON_DEMAND"):
    extra = (f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"
             f"address-settings:\n  '#': {{redistribution-delay: {delay}}}\n")
    return start_cluster(nodes, {"A": ["B"], "B": ["A"]}, options=f"message-load-balancing: {mode}", extra=extra)


async def stranded_on_a(cluster, count: int):
    """`count` messages waiting on A for A's own consumer (which takes nothing
    yet: window 0), then a consumer on B. Returns (A's connection and consumer, B's consumer, B's connection)."""
    a = await connect(cluster["A"].url)
    a_consumer = await (await a.session()).create_consumer(QUEUE, window_size=0)
    await wait_bindings(cluster["B"], {("A", QUEUE, 1)})
    p = await (await a.session()).create_producer(QUEUE)
    await asyncio.gather(*[await p.send_async(b"m", properties={"n": i}) for i in range(count)])
    b = await connect(cluster["B"].url)
    b_consumer = await (await b.session()).create_consumer(QUEUE)
    await wait_bindings(cluster["A"], {("B", QUEUE, 1)})
    assert (await a.admin.queue(QUEUE)).message_count == count
    return a, a_consumer, b, b_consumer


async def test_delay_0_moves_everything_at_once_when_the_consumer_leaves(nodes):
    cluster = pair(nodes, 0)
    a, a_consumer, b, b_consumer = await stranded_on_a(cluster, 20)
    try:
        await a_consumer.close()
        got = await collect({"B": b_consumer}, 20)
        assert got == {"B": list(range(20))}
        assert (await a.admin.queue(QUEUE)).message_count == 0
    finally:
        await a.close()
        await b.close()


async def test_a_consumer_back_within_the_delay_keeps_the_messages(nodes):
    cluster = pair(nodes, 500)
    a, a_consumer, b, b_consumer = await stranded_on_a(cluster, 20)
    try:
        await a_consumer.close()
        await asyncio.sleep(0.2)  # the test's point: back at 200 ms of a 500 ms delay
        back = await (await a.session()).create_consumer(QUEUE)
        got = await collect({"A": back, "B": b_consumer}, 20)
        assert got == {"A": list(range(20)), "B": []}
    finally:
        await a.close()
        await b.close()


async def test_after_the_delay_everything_moves_in_order(nodes):
    cluster = pair(nodes, 500)
    a, a_consumer, b, b_consumer = await stranded_on_a(cluster, 20)
    try:
        await a_consumer.close()
        await asyncio.sleep(0.2)
        assert (await a.admin.queue(QUEUE)).message_count == 20  # not yet
        got = await collect({"B": b_consumer}, 20)  # by ~500 ms
        assert got == {"B": list(range(20))}
        # The queue stays redistributing while A has no consumer: later messages follow.
        p = await (await a.session()).create_producer(QUEUE)
        await p.send(b"late", properties={"n": 20})
        assert (await collect({"B": b_consumer}, 1)) == {"B": [20]}
    finally:
        await a.close()
        await b.close()


async def test_never_with_the_default_delay(nodes):
    cluster = pair(nodes, -1)
    a, a_consumer, b, b_consumer = await stranded_on_a(cluster, 5)
    try:
        await a_consumer.close()
        assert await b_consumer.receive(timeout=1.0) is None
        assert (await a.admin.queue(QUEUE)).message_count == 5
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize("mode, moves", [("OFF_WITH_REDISTRIBUTION", True), ("OFF", False)])
async def test_off_with_redistribution_moves_them_and_off_does_not(nodes, mode, moves):
    cluster = pair(nodes, 0, mode)
    a, a_consumer, b, b_consumer = await stranded_on_a(cluster, 5)
    try:
        await a_consumer.close()
        if moves:
            assert await collect({"B": b_consumer}, 5) == {"B": list(range(5))}
        else:
            assert await b_consumer.receive(timeout=1.0) is None
            assert (await a.admin.queue(QUEUE)).message_count == 5
    finally:
        await a.close()
        await b.close()


async def test_paged_messages_are_redistributed_too_a_page_at_a_time_in_order(nodes):
    """A queue that pages (max-size-bytes far below its backlog) loses its
    consumer: the messages in memory and every page behind them move, in order."""
    extra = (f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"
             "address-settings:\n  '#': {redistribution-delay: 0, max-size-bytes: 2K, page-size-bytes: 1K}\n")
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]}, extra=extra)
    count = 300
    a, a_consumer, b, b_consumer = await stranded_on_a(cluster, count)
    try:
        assert (await a.admin.queue(QUEUE)).paged_count > 0  # the point: most of them are paged
        await a_consumer.close()
        got = await collect({"B": b_consumer}, count, deadline=60)
        assert got == {"B": list(range(count))}
        info = await a.admin.queue(QUEUE)
        assert (info.message_count, info.paged_count) == (0, 0)
    finally:
        await a.close()
        await b.close()
