"""Server-side message load balancing over cluster connections (issue 11):
a symmetric cluster of four nodes A, B, C, D with queue OrderQueue on each
and a producer on A, as the Artemis clustering chapter describes; each test
asserts which node's consumer got which message."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually

from .cluster import collect, start_cluster, wait_bindings

pytestmark = pytest.mark.integration

NAMES = ["A", "B", "C", "D"]
QUEUE = "OrderQueue"
ORDER_QUEUE = f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"


def symmetric(nodes, mode: str, extra: str = ORDER_QUEUE) -> dict:
    links = {n: [m for m in NAMES if m != n] for n in NAMES}
    return start_cluster(nodes, links, options=f"message-load-balancing: {mode}", extra=extra)


async def consumers_on(cluster, names, filters=None):
    conns, consumers = [], {}
    for n in names:
        conn = await connect(cluster[n].url)
        s = await conn.session()
        consumers[n] = await s.create_consumer(QUEUE, filter=(filters or {}).get(n, ""))
        conns.append(conn)
    return conns, consumers


async def send_from_a(cluster, count: int, properties=lambda i: {}) -> None:
    async with await connect(cluster["A"].url) as conn:
        s = await conn.session()
        p = await s.create_producer(QUEUE)
        futures = [await p.send_async(b"order", properties={"n": i, **properties(i)}) for i in range(count)]
        await asyncio.gather(*futures)


async def test_on_demand_round_robins_over_nodes_with_consumers_in_a_fixed_rotation(nodes):
    cluster = symmetric(nodes, "ON_DEMAND")
    conns, consumers = await consumers_on(cluster, NAMES)
    try:
        others = {(m, QUEUE, 1) for m in NAMES if m != "A"}
        await wait_bindings(cluster["A"], others)
        await send_from_a(cluster, 100)
        got = await collect(consumers, 100)
        assert {n: len(v) for n, v in got.items()} == {"A": 25, "B": 25, "C": 25, "D": 25}
        # A fixed rotation: local first, then B, C, D.
        assert got == {n: list(range(i, 100, 4)) for i, n in enumerate(NAMES)}
    finally:
        for c in conns:
            await c.close()


async def test_on_demand_never_forwards_to_a_node_without_a_consumer_or_a_matching_filter(nodes):
    cluster = symmetric(nodes, "ON_DEMAND")
    # B takes only red, C only blue, D has no consumer; A's consumer takes anything.
    conns, consumers = await consumers_on(cluster, ["A", "B", "C"], {"B": "colour = 'red'", "C": "colour = 'blue'"})
    try:
        await wait_bindings(cluster["A"], {("B", QUEUE, 1), ("C", QUEUE, 1), ("D", QUEUE, 0)})
        colours = ["red", "blue", "green"]
        await send_from_a(cluster, 60, lambda i: {"colour": colours[i % 3]})
        got = await collect(consumers, 60)
        red = [i for i in range(60) if i % 3 == 0]
        blue = [i for i in range(60) if i % 3 == 1]
        green = [i for i in range(60) if i % 3 == 2]
        # red alternates A, B; blue alternates A, C; green only A (nobody else takes it); D nothing.
        assert sorted(got["B"]) == got["B"] and set(got["B"]) <= set(red)
        assert set(got["C"]) <= set(blue)
        assert set(got["A"]) >= set(green)
        assert sorted(got["A"] + got["B"] + got["C"]) == list(range(60))
        assert len(got["B"]) == len(red) // 2 and len(got["C"]) == len(blue) // 2
        async with await connect(cluster["D"].url) as conn:
            assert (await conn.admin.queue(QUEUE)).message_count == 0
    finally:
        for c in conns:
            await c.close()


async def test_strict_round_robins_over_every_node_with_the_queue_consumers_or_not(nodes):
    cluster = symmetric(nodes, "STRICT")
    await wait_bindings(cluster["A"], {(m, QUEUE, 0) for m in NAMES if m != "A"})
    await send_from_a(cluster, 100)

    async def counts():
        out = {}
        for n in NAMES:
            async with await connect(cluster[n].url) as conn:
                out[n] = (await conn.admin.queue(QUEUE)).message_count
        return out

    async def quartered():  # confirmed once in A's store-and-forward queues; on B, C, D a moment later
        return await counts() == {"A": 25, "B": 25, "C": 25, "D": 25}
    # Nobody consumes: each node's queue holds its quarter, waiting.
    await eventually(quartered, 20, "each node's queue to hold 25")
    conns, consumers = await consumers_on(cluster, NAMES)
    try:
        got = await collect(consumers, 100)
        assert got == {n: list(range(i, 100, 4)) for i, n in enumerate(NAMES)}
    finally:
        for c in conns:
            await c.close()


@pytest.mark.parametrize("mode", ["OFF", "OFF_WITH_REDISTRIBUTION"])
async def test_off_forwards_nothing(nodes, mode):
    cluster = symmetric(nodes, mode)
    conns, consumers = await consumers_on(cluster, NAMES)
    try:
        await wait_bindings(cluster["A"], {(m, QUEUE, 1) for m in NAMES if m != "A"})
        await send_from_a(cluster, 40)
        got = await collect(consumers, 40)
        assert got == {"A": list(range(40)), "B": [], "C": [], "D": []}
    finally:
        for c in conns:
            await c.close()
