"""The audit across a network connector, on the stores of real routers: a
queue message and a topic message produced on A, moved by B's demand into the
link's store-and-forward queue (the topic's through its network subscription
queue), forwarded and acknowledged on B, are each one message produced once
and acknowledged once — the link's queues are transport, nothing is lost."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect
from meshmq.routing_names import INTERNAL_PREFIX
from spark.report import run_report
from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually
from tests.networks.network import send, start_network, wait_linked
from tests.spark.test_cluster_audit import store
from tests.spark.workload import sqlite_url

pytestmark = pytest.mark.integration

ORDERS, NEWS = "orders", "news"
QUEUED, PUBLISHED = 20, 10


async def _demand_held(a) -> bool:
    """A holds B's demand: a network consumer on ORDERS and on NEWS's network subscription queue."""
    async with await connect(a.url) as conn:
        held = {c.queue for c in await conn.admin.list_consumers() if c.session_id.startswith("network ")}
    return ORDERS in held and any(q.startswith(f"{INTERNAL_PREFIX}net.") and q.endswith(NEWS) for q in held)


async def network_traffic(nodes) -> tuple:
    net = start_network(nodes, {"A": {"to-b": "B"}, "B": {}})
    a, b = net["A"], net["B"]
    await wait_linked(a, 1)
    async with await connect(b.url) as bconn:
        s = await bconn.session()
        orders = await s.create_consumer(ORDERS)
        news = await s.create_consumer(address=NEWS, subscription="on-b", shared=True)
        await eventually(lambda: _demand_held(a), 20, "A to hold B's demand for orders and news", interval=0.1)
        await send(a, ORDERS, QUEUED)
        await send(a, NEWS, PUBLISHED, routing_type="multicast")
        got = await collect({"orders": orders, "news": news}, QUEUED + PUBLISHED)
        assert got == {"orders": list(range(QUEUED)), "news": list(range(PUBLISHED))}
    assert a.stop() == 0 and b.stop() == 0
    return a, b


async def test_the_audit_follows_messages_over_a_network_connector(spark_session, nodes, tmp_path):
    a, b = await network_traffic(nodes)
    paths = [store(a), store(b)]
    s = await asyncio.to_thread(run_report, spark_session, [sqlite_url(p) for p in paths], tmp_path / "r",
                                partitions=2)
    au = s["audit"]
    total = QUEUED + PUBLISHED
    assert (au["produced"], au["exactly_once"], au["anomalous"], au["explained"], au["verdict"]) == (
        total, total, 0, 0, "green"), au
    assert au["crossed_nodes"] == total
    ends = {(r["produced_on_name"], r["ended_on_name"], r["fate"]): r["count"] for r in s["message_ends"]}
    assert ends == {("A", "B", "ACKNOWLEDGED"): total}
    links = {(r["node_name"], r["cluster_connection"], r["target_node_name"]):
             (r["queued"], r["forwarded"], r["arrived"], r["waiting"]) for r in s["bridges"]}
    assert links == {("A", "network.to-b", "B"): (total, total, total, 0)}
