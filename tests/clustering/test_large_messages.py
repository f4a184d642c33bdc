"""Large messages across cluster connections (issue 11): a body over
min-large-message-size crosses each link in chunks, with bounded memory on
every node; an 80 MB message forwarded across the chain arrives intact."""

from __future__ import annotations

import hashlib
import os

import pytest

from meshmq.client import connect
from meshmq.memwatch import RssSampler
from tests.fixtures.nodes import eventually

from .cluster import start_cluster, wait_bindings

pytestmark = pytest.mark.integration

# Big enough that the fixed cost of moving any large message (gRPC and SQLite
# buffers, the allocator's high-water mark: 8-15 MB alone, 27-35 MB under the
# whole suite's four workers, whatever the body) stays under the bound, three
# quarters of the body: a node holding the body whole grows by all of it at least.
BODY_MB = 80
RSS_BOUND_MB = BODY_MB * 3 / 4
ORDERS = "addresses:\n  OrderQueue: {anycast: [{name: OrderQueue}]}\n"


async def test_an_80_mb_message_crosses_the_chain_intact_in_bounded_memory(nodes):
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["C"], "C": []}, extra=ORDERS,
                            options="max-hops: 2, allow-direct-connections-only: true")
    body = os.urandom(BODY_MB * 2**20)
    async with await connect(cluster["C"].url) as c_conn:
        consumer = await (await c_conn.session()).create_consumer("OrderQueue")
        await wait_bindings(cluster["A"], {("B", "OrderQueue", 0), ("C", "OrderQueue", 1)})
        with RssSampler(cluster["A"].proc.pid) as rss_a, RssSampler(cluster["B"].proc.pid) as rss_b:
            async with await connect(cluster["A"].url) as a_conn:
                p = await (await a_conn.session()).create_producer("OrderQueue")
                await p.send(body, properties={"n": 1})
                small = [await p.send_async(b"s", properties={"n": 2 + i}) for i in range(3)]
                for f in small:
                    await f
            got = await consumer.receive(timeout=60)
        assert got is not None and int(got.properties["n"]) == 1
        assert hashlib.sha256(got.body).digest() == hashlib.sha256(body).digest()
        consumer.ack(got)
        assert [int((await consumer.receive(timeout=10)).properties["n"]) for _ in range(3)] == [2, 3, 4]
        for name, rss in (("A", rss_a), ("B", rss_b)):
            assert rss.growth_mb < RSS_BOUND_MB, f"{name}'s RSS grew {rss.growth_mb:.1f} MB for a {BODY_MB} MB body"
    # No link broke on the way. (It did, before the fix: a forwarded copy was
    # enqueued, and its producer confirmed, before the copy was committed;
    # the bridge then found no stored chunks for it.)
    for name in ("A", "B"):
        assert "broke" not in cluster[name].log_path.read_text(), name
    # Nothing left behind on the way: every store-and-forward queue empties
    # (a confirm may still be on its way when C already has the message).
    for name in ("A", "B"):
        async def drained():
            async with await connect(cluster[name].url) as conn:
                state = await conn.admin.cluster_state()
                return [b.pending for b in state.bridges] == [0]
        await eventually(drained, 10, f"{name}'s store-and-forward queue to empty")


async def test_an_ordinary_message_over_min_large_message_size_crosses_in_chunks(nodes):
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]}, extra=ORDERS,
                            options="message-load-balancing: STRICT, min-large-message-size: 4096")
    await wait_bindings(cluster["A"], {("B", "OrderQueue", 0)})
    bodies = [os.urandom(50_000) for _ in range(4)]  # under the client's 100 KiB: sent whole, forwarded in chunks
    async with await connect(cluster["A"].url) as conn:
        p = await (await conn.session()).create_producer("OrderQueue")
        for i, body in enumerate(bodies):
            await p.send(body, properties={"n": i})
    async with await connect(cluster["B"].url) as conn:
        c = await (await conn.session()).create_consumer("OrderQueue")
        got = [await c.receive(timeout=10) for _ in range(2)]
        assert [(int(m.properties["n"]), m.body) for m in got] == [(1, bodies[1]), (3, bodies[3])]
