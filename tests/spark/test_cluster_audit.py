"""The audit across the cluster, on the stores of real routers: a message
produced on A, forwarded by the cluster bridge and acknowledged on B is one
message acknowledged once; one forwarded twice and delivered twice (a
doctored store) is flagged; a scaled-down node's messages are followed to
the node they moved to."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from meshmq.client import connect
from spark.report import run_report
from tests.clustering.cluster import collect, start_cluster, wait_bindings
from tests.clustering.test_scale_down import JOBS, node_yaml
from tests.fixtures.nodes import free_port
from tests.spark.workload import sqlite_url

pytestmark = pytest.mark.integration

ORDERS = "orders"
FORWARDED, MOVED = 20, 10


def store(node) -> Path:
    return node.workdir / f"{node.name}-data" / "journal.db"


async def bridge_traffic(nodes) -> tuple:
    """Producer on A, consumer on B, ON_DEMAND: every message crosses the bridge."""
    extra = f"addresses:\n  {ORDERS}: {{anycast: [{{name: {ORDERS}}}]}}\n"
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]}, options="message-load-balancing: ON_DEMAND", extra=extra)
    a, b = cluster["A"], cluster["B"]
    async with await connect(b.url) as bconn:
        consumer = await (await bconn.session()).create_consumer(ORDERS)
        await wait_bindings(a, {("B", ORDERS, 1)})
        async with await connect(a.url) as aconn:
            p = await (await aconn.session()).create_producer(ORDERS)
            await asyncio.gather(*[await p.send_async(b"x", properties={"n": n}) for n in range(FORWARDED)])
        got = await collect({"b": consumer}, FORWARDED)
        assert sorted(got["b"]) == list(range(FORWARDED))
    assert a.stop() == 0 and b.stop() == 0
    return a, b


async def scale_down(nodes) -> tuple:
    """D scales down to C with MOVED messages waiting; C's consumer takes them."""
    pc, pd = free_port(), free_port()
    c = nodes.router("C", extra=node_yaml(pc, {"d": pd}))
    d = nodes.router("D", extra=node_yaml(pd, {"c": pc}, scale_down="c"))
    async with await connect(d.url) as conn:
        p = await (await conn.session()).create_producer(JOBS)
        for n in range(MOVED):
            await p.send(b"d", properties={"n": n})
    assert d.stop() == 0
    async with await connect(c.url) as conn:
        got = await collect({"jobs": await (await conn.session()).create_consumer(JOBS)}, MOVED)
        assert got["jobs"] == list(range(MOVED))
    assert c.stop() == 0
    return c, d


def node_ids(*paths: Path) -> dict[str, str]:
    out = {}
    for p in paths:
        with sqlite3.connect(p) as db:
            out[p.parent.name.removesuffix("-data")] = db.execute(
                "SELECT value FROM node_state WHERE key = 'node_id'").fetchone()[0]
    return out


def forward_twice(src: Path, dst: Path) -> int:
    """Copy B's store and store one forwarded message a second time (a new
    message id, the same origin) and acknowledge that copy too. Returns the
    origin message id on A."""
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    db = sqlite3.connect(dst)
    with db:
        mid, origin = db.execute("SELECT message_id, from_message_id FROM events WHERE kind = 'ENQUEUED' "
                                 "AND from_message_id IS NOT NULL ORDER BY event_id LIMIT 1").fetchone()
        copy = db.execute("SELECT max(message_id) FROM events").fetchone()[0] + 1000
        db.execute(
            "INSERT INTO events (node_id, kind, ts, address, queue, message_id, size, delivery_count, message_ts, "
            "from_node_id, from_message_id) SELECT node_id, kind, ts + 5, address, queue, ?, size, delivery_count, "
            "message_ts, from_node_id, from_message_id FROM events WHERE message_id = ? "
            "AND kind IN ('ENQUEUED', 'ACKNOWLEDGED') ORDER BY event_id", (copy, mid))
    db.close()
    return origin


async def test_the_audit_follows_messages_over_bridges_and_scale_down(spark_session, nodes, tmp_path):
    a, b = await bridge_traffic(nodes)
    c, d = await scale_down(nodes)
    paths = [store(n) for n in (a, b, c, d)]
    ids = node_ids(*paths)

    # what the journal recorded for a forward: the origin on B's ENQUEUED, the store-and-forward queue on A
    with sqlite3.connect(paths[1]) as db:
        origins = db.execute("SELECT DISTINCT from_node_id FROM events WHERE kind = 'ENQUEUED'").fetchall()
    assert origins == [(ids["A"],)]

    s = await asyncio.to_thread(run_report, spark_session, [sqlite_url(p) for p in paths], tmp_path / "r",
                                partitions=2)
    au = s["audit"]
    assert (au["produced"], au["exactly_once"], au["anomalous"], au["explained"], au["verdict"]) == (
        FORWARDED + MOVED, FORWARDED + MOVED, 0, 0, "green")
    assert (au["crossed_nodes"], au["moves"]) == (FORWARDED + MOVED, MOVED)
    # each message once, on the node it was produced on: A's enqueued counts include the store-and-forward queue
    ends = {(r["produced_on_name"], r["ended_on_name"], r["fate"]): r["count"] for r in s["message_ends"]}
    assert ends == {("A", "B", "ACKNOWLEDGED"): FORWARDED, ("D", "C", "ACKNOWLEDGED"): MOVED}
    bridges = {(r["node_name"], r["cluster_connection"], r["target_node_name"]):
               (r["queued"], r["forwarded"], r["arrived"], r["waiting"]) for r in s["bridges"]}
    assert bridges == {("A", "cc", "B"): (FORWARDED, FORWARDED, FORWARDED, 0),
                       ("D", "scale-down", "C"): (MOVED, MOVED, MOVED, 0)}

    doctored = tmp_path / "B-doctored.db"
    origin = forward_twice(paths[1], doctored)
    s = await asyncio.to_thread(run_report, spark_session, [sqlite_url(paths[0]), sqlite_url(doctored)],
                                tmp_path / "r2", partitions=2)
    au = s["audit"]
    assert (au["produced"], au["exactly_once"], au["anomalous"], au["verdict"]) == (
        FORWARDED, FORWARDED - 1, 1, "red")
    [o] = au["offenders"]
    assert (o["root_node_id"], o["root_message_id"], o["queue"]) == (ids["A"], origin, ORDERS)
    assert (o["anomalies"], o["enqueued_events"], o["acknowledged"]) == (
        ["ACKNOWLEDGED_MORE_THAN_ONCE", "ENQUEUED_MORE_THAN_ONCE"], 2, 2)
