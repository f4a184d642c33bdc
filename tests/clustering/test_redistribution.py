"""Message redistribution (issue 11): messages left on a node whose consumer
went away move to a node with a consumer after `redistribution-delay`; a
consumer back within the delay keeps them."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

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


# Messages a consumer gives back: it closes, its session ends, its process dies.

async def receive_unacked(consumer, count: int) -> list[int]:
    """The application takes `count` messages ("n" in order) and acknowledges none."""
    got = []
    for _ in range(count):
        m = await consumer.receive(timeout=10)
        assert m is not None, f"only {got} arrived"
        got.append(int(m.properties["n"]))
    return got


async def holds(conn, count: int, queue: str = QUEUE) -> None:
    """Until the queue on `conn`'s node holds `count` messages (acks from a
    consumer may still be on their way)."""
    async def reached():
        return (await conn.admin.queue(queue)).message_count == count
    await eventually(reached, 10, f"{queue} to hold {count} messages")


async def held_by_a(cluster, count: int):
    """`count` messages sent on A and handed to the application of A's consumer,
    none acknowledged; then a consumer on B, known to A. Returns (A's connection
    and consumer, B's connection and consumer)."""
    a = await connect(cluster["A"].url)
    a_consumer = await (await a.session()).create_consumer(QUEUE)
    p = await (await a.session()).create_producer(QUEUE)
    await asyncio.gather(*[await p.send_async(b"m", properties={"n": i}) for i in range(count)])
    assert await receive_unacked(a_consumer, count) == list(range(count))
    b = await connect(cluster["B"].url)
    b_consumer = await (await b.session()).create_consumer(QUEUE)
    await wait_bindings(cluster["A"], {("B", QUEUE, 1)})
    return a, a_consumer, b, b_consumer


async def test_artemis_example_a_closed_sessions_unacknowledged_messages_go_to_the_other_node(nodes):
    """Artemis's queue-message-redistribution example: 10 sent on A split 5/5
    between a consumer on each node; B's session closes without acknowledging
    its five, and they go back to B's queue, which has no consumer now, and on
    to A's consumer."""
    cluster = pair(nodes, 0)
    a = await connect(cluster["A"].url)
    b = await connect(cluster["B"].url)
    try:
        a_consumer = await (await a.session()).create_consumer(QUEUE)
        b_session = await b.session()
        b_consumer = await b_session.create_consumer(QUEUE)
        await wait_bindings(cluster["A"], {("B", QUEUE, 1)})
        await wait_bindings(cluster["B"], {("A", QUEUE, 1)})
        p = await (await a.session()).create_producer(QUEUE)
        await asyncio.gather(*[await p.send_async(b"m", properties={"n": i}) for i in range(10)])
        assert await receive_unacked(b_consumer, 5) == [1, 3, 5, 7, 9]
        assert await collect({"A": a_consumer}, 5) == {"A": [0, 2, 4, 6, 8]}
        await b_session.close()
        assert await collect({"A": a_consumer}, 5) == {"A": [1, 3, 5, 7, 9]}
        assert (await b.admin.queue(QUEUE)).message_count == 0
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize("mode", ["OFF_WITH_REDISTRIBUTION", "ON_DEMAND"])
async def test_a_closing_consumers_unacknowledged_messages_move_in_order(nodes, mode):
    """A's consumer was handed 20 and acknowledged none; it closes, and the
    consumer on B gets all 20, in order, as first deliveries there."""
    cluster = pair(nodes, 0, mode)
    a, a_consumer, b, b_consumer = await held_by_a(cluster, 20)
    try:
        await a_consumer.close()
        got = []
        while len(got) < 20:
            m = await b_consumer.receive(timeout=10)
            assert m is not None, f"B got only {got}"
            got.append((int(m.properties["n"]), m.delivery_count))
            b_consumer.ack(m)
        assert got == [(n, 1) for n in range(20)]
        assert await b_consumer.receive(timeout=0.3) is None
        assert (await a.admin.queue(QUEUE)).message_count == 0
    finally:
        await a.close()
        await b.close()


async def test_returned_messages_move_after_the_delay_not_before(nodes):
    """500 ms delay: the 20 A's closed consumer gave back wait out the delay on
    A, then move; a consumer back on A at +800 ms finds none of them."""
    cluster = pair(nodes, 500)
    a, a_consumer, b, b_consumer = await held_by_a(cluster, 20)
    try:
        await a_consumer.close()
        closed = time.monotonic()
        await asyncio.sleep(0.2)  # the test's point: within the delay, nothing has moved
        assert (await a.admin.queue(QUEUE)).message_count == 20
        await holds(a, 0)  # given to B
        assert time.monotonic() - closed >= 0.5
        await asyncio.sleep(max(0.0, closed + 0.8 - time.monotonic()))  # back at +800 ms
        back = await (await a.session()).create_consumer(QUEUE)
        assert await collect({"A": back, "B": b_consumer}, 20) == {"A": [], "B": list(range(20))}
    finally:
        await a.close()
        await b.close()


async def test_a_consumer_back_within_the_delay_keeps_what_the_closed_one_gave_back(nodes):
    cluster = pair(nodes, 500)
    a, a_consumer, b, b_consumer = await held_by_a(cluster, 20)
    try:
        await a_consumer.close()
        await asyncio.sleep(0.2)  # the test's point: back at 200 ms of a 500 ms delay
        back = await (await a.session()).create_consumer(QUEUE)
        got = []
        while len(got) < 20:
            m = await back.receive(timeout=10)
            assert m is not None, f"A's new consumer got only {got}"
            got.append((int(m.properties["n"]), m.delivery_count))
            back.ack(m)
        assert got == [(n, 2) for n in range(20)]  # each was handed once before
        assert await b_consumer.receive(timeout=1.0) is None
    finally:
        await a.close()
        await b.close()


CLIENT = """
import asyncio, sys
from meshmq.client import connect

async def main():
    conn = await connect(sys.argv[1])
    consumer = await (await conn.session()).create_consumer(sys.argv[2])
    for _ in range(int(sys.argv[3])):
        m = await consumer.receive(timeout=30)
        print(m.properties["n"], flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_a_killed_clients_unacknowledged_messages_move(nodes):
    """A client process holding 20 unacknowledged deliveries on A is killed
    (kill -9): its connection drops, its session ends, and the 20 go to B."""
    cluster = pair(nodes, 0)
    a = await connect(cluster["A"].url)
    p = await (await a.session()).create_producer(QUEUE)
    await asyncio.gather(*[await p.send_async(b"m", properties={"n": i}) for i in range(20)])
    client = subprocess.Popen([sys.executable, "-c", CLIENT, cluster["A"].url, QUEUE, "20"],
                              stdout=subprocess.PIPE, text=True)
    b = await connect(cluster["B"].url)
    try:
        handed = [int(await asyncio.wait_for(asyncio.to_thread(client.stdout.readline), 30)) for _ in range(20)]
        assert handed == list(range(20))
        b_consumer = await (await b.session()).create_consumer(QUEUE)
        await wait_bindings(cluster["A"], {("B", QUEUE, 1)})
        assert (await a.admin.queue(QUEUE)).message_count == 20  # still held by the client
        client.kill()
        client.wait(10)
        assert await collect({"B": b_consumer}, 20) == {"B": list(range(20))}
        assert (await a.admin.queue(QUEUE)).message_count == 0
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(10)
        client.stdout.close()
        await a.close()
        await b.close()


# The two other cases Artemis redistributes.

@pytest.mark.parametrize("mode", ["OFF_WITH_REDISTRIBUTION", "ON_DEMAND"])
async def test_messages_the_local_consumers_filters_refuse_go_to_a_remote_consumer_that_takes_them(nodes, mode):
    """A's only consumer takes red; the blue ones wait on A until a consumer on
    B that takes blue is known, then move there, in order. Later blue ones
    follow while A's consumer still refuses them."""
    cluster = pair(nodes, 0, mode)
    a = await connect(cluster["A"].url)
    b = await connect(cluster["B"].url)
    colour = lambda n: "red" if n % 2 == 0 else "blue"  # noqa: E731
    try:
        a_consumer = await (await a.session()).create_consumer(QUEUE, filter="colour = 'red'")
        p = await (await a.session()).create_producer(QUEUE)
        await asyncio.gather(*[await p.send_async(b"m", properties={"n": i, "colour": colour(i)}) for i in range(10)])
        assert await collect({"A": a_consumer}, 5) == {"A": [0, 2, 4, 6, 8]}
        await holds(a, 5)  # the blue ones, waiting
        b_consumer = await (await b.session()).create_consumer(QUEUE, filter="colour = 'blue'")
        await wait_bindings(cluster["A"], {("B", QUEUE, 1)})
        assert await collect({"A": a_consumer, "B": b_consumer}, 5) == {"A": [], "B": [1, 3, 5, 7, 9]}
        await asyncio.gather(
            *[await p.send_async(b"m", properties={"n": i, "colour": colour(i)}) for i in range(10, 20)])
        got = await collect({"A": a_consumer, "B": b_consumer}, 10)
        assert got == {"A": [10, 12, 14, 16, 18], "B": [11, 13, 15, 17, 19]}
        await holds(a, 0)
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize("queue", [QUEUE, "AutoQueue"])
async def test_messages_that_arrive_after_the_remote_consumer_is_known_move(nodes, queue):
    """OFF_WITH_REDISTRIBUTION: A's queue never had a consumer; B's consumer is
    known before anything is sent on A, and what is sent then moves to it.
    AutoQueue: only B has it when its consumer is known; A creates it on the
    first send."""
    cluster = pair(nodes, 0, "OFF_WITH_REDISTRIBUTION")
    a = await connect(cluster["A"].url)
    b = await connect(cluster["B"].url)
    try:
        b_consumer = await (await b.session()).create_consumer(queue)
        known = {("B", QUEUE, 1)} if queue == QUEUE else {("B", QUEUE, 0), ("B", queue, 1)}
        await wait_bindings(cluster["A"], known)
        p = await (await a.session()).create_producer(queue)
        await asyncio.gather(
            *[await p.send_async(b"m", properties={"n": i}, routing_type="anycast") for i in range(10)])
        assert await collect({"B": b_consumer}, 10) == {"B": list(range(10))}
        assert (await a.admin.queue(queue)).message_count == 0
    finally:
        await a.close()
        await b.close()


async def test_redistributed_messages_are_delivered_highest_priority_first(nodes):
    """Messages of mixed priority left on A move to B's consumer together (delay
    0, one redistribution): B delivers them highest priority first, arrival
    order within a priority, as A would have."""
    cluster = pair(nodes, 0)
    priorities = [(0, 9, 4, 1, 9, 4, 0, 5)[n % 8] for n in range(40)]
    a = await connect(cluster["A"].url)
    b = await connect(cluster["B"].url)
    try:
        a_consumer = await (await a.session()).create_consumer(QUEUE, window_size=0)
        await wait_bindings(cluster["B"], {("A", QUEUE, 1)})
        p = await (await a.session()).create_producer(QUEUE)
        await asyncio.gather(*[await p.send_async(b"m", properties={"n": n}, priority=prio)
                               for n, prio in enumerate(priorities)])
        b_consumer = await (await b.session()).create_consumer(QUEUE)
        await wait_bindings(cluster["A"], {("B", QUEUE, 1)})
        await a_consumer.close()
        got = await collect({"B": b_consumer}, len(priorities))
        expected = sorted(range(len(priorities)), key=lambda n: (-priorities[n], n))
        assert got == {"B": expected}
        assert [priorities[n] for n in got["B"]][:10] == [9] * 10
    finally:
        await a.close()
        await b.close()
