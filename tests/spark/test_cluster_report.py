"""The cluster-wide report on the stores of a real three-node cluster: N1
only relays (its producer's messages all go to consumers on N2 and N3), N2
dead-letters and expires a few messages into copies.

What must hold: a bridge's confirmation is no acknowledgement (N1, where no
consumer ran, has no latency row; the links' confirm latency is shown
apart), a forwarded message is one message per address and in the
distribution, dead-letter and expiry copies are linked to their originals
(produced = what producers sent), and an anomaly spanning two nodes names
each copy with its node's name.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from meshmq.client import connect
from spark.report import run_report
from tests.clustering.cluster import cluster_state, collect, start_cluster
from tests.fixtures.nodes import Nodes, eventually
from tests.spark.workload import sqlite_url

pytestmark = pytest.mark.integration

ORDERS, POISON, EXPIRING = 30, 3, 2
EXTRA = """
addresses:
  orders: {anycast: [{name: orders}]}
  DLQ: {anycast: [{name: DLQ}]}
  ExpiryQueue: {anycast: [{name: ExpiryQueue}]}
address-settings:
  "#": {dead-letter-address: DLQ, expiry-address: ExpiryQueue}
  "poison.#": {max-delivery-attempts: 1}
message-expiry-scan-period: 100
"""


def store(node) -> Path:
    return node.workdir / f"{node.name}-data" / "journal.db"


async def relay_cluster(nodes) -> tuple[dict, dict[str, int]]:
    """Producer on N1, consumers on N2 and N3 (ON_DEMAND: every message crosses
    a bridge); then, on N2 alone, POISON messages dead-lettered and EXPIRING
    expired, each into a copy. Returns the nodes and how many each consumer took."""
    links = {"N1": ["N2", "N3"], "N2": ["N1", "N3"], "N3": ["N1", "N2"]}
    cluster = start_cluster(nodes, links, options="message-load-balancing: ON_DEMAND", extra=EXTRA)
    n1, n2, n3 = cluster["N1"], cluster["N2"], cluster["N3"]
    async with await connect(n2.url) as c2, await connect(n3.url) as c3:
        consumers = {"N2": await (await c2.session()).create_consumer("orders"),
                     "N3": await (await c3.session()).create_consumer("orders")}
        await eventually(lambda: consumed_orders(n1), 20, "N1 to know N2's and N3's orders consumers", interval=0.1)
        async with await connect(n1.url) as c1:
            p = await (await c1.session()).create_producer("orders")
            await asyncio.gather(*[await p.send_async(b"x", properties={"n": n}) for n in range(ORDERS)])
        got = await collect(consumers, ORDERS)
        assert sorted(got["N2"] + got["N3"]) == list(range(ORDERS)) and got["N2"] and got["N3"]

        s = await c2.session()
        p = await s.create_producer("poison.q")
        for _ in range(POISON):
            await p.send(b"poison", routing_type="anycast")
        c = await s.create_consumer("poison.q")
        for _ in range(POISON):
            (await c.receive(10)).nack()
        await c.close()
        p = await s.create_producer("expiring.q")
        for _ in range(EXPIRING):
            await p.send(b"short-lived", ttl=50, routing_type="anycast")

        async def copied() -> bool:
            dlq, expiry = await c2.admin.queue("DLQ"), await c2.admin.queue("ExpiryQueue")
            return dlq.message_count == POISON and expiry.message_count == EXPIRING
        await eventually(copied, 20, "N2's dead-letter and expiry copies", interval=0.1)
    for n in (n1, n2, n3):
        assert n.stop() == 0
    return cluster, {k: len(v) for k, v in got.items()}


async def consumed_orders(node) -> bool:
    """Whether `node` knows the orders queues of N2 and N3 with a consumer each."""
    state = await cluster_state(node)
    return {(b.node_name, len(b.consumer_filters)) for b in state.remote_bindings if b.queue == "orders"} == {
        ("N2", 1), ("N3", 1)}


def acknowledged_twice(n2: Path, src: Path, dst: Path) -> tuple[int, int, int]:
    """Copy N3's store (`src`) to `dst` and store there one of the messages N2
    took, as if forwarded to N3 too (a new id, the same origin), acknowledged.
    Returns (N2's message id, the copy's id on N3, the origin's id on N1)."""
    with sqlite3.connect(n2) as db:
        mid, origin = db.execute("SELECT message_id, from_message_id FROM events WHERE kind = 'ENQUEUED' "
                                 "AND queue = 'orders' ORDER BY event_id LIMIT 1").fetchone()
        rows = db.execute(
            "SELECT kind, ts, address, queue, size, delivery_count, message_ts, from_node_id, from_message_id "
            "FROM events WHERE message_id = ? AND kind IN ('ENQUEUED', 'ACKNOWLEDGED') ORDER BY event_id",
            (mid,)).fetchall()
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    db = sqlite3.connect(dst)
    with db:
        node_id = db.execute("SELECT value FROM node_state WHERE key = 'node_id'").fetchone()[0]
        copy = db.execute("SELECT max(message_id) FROM events").fetchone()[0] + 1000
        db.executemany(
            "INSERT INTO events (node_id, kind, ts, address, queue, message_id, size, delivery_count, message_ts, "
            "from_node_id, from_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(node_id, kind, ts + 2, address, queue, copy, size, count, message_ts, from_node, from_mid)
             for kind, ts, address, queue, size, count, message_ts, from_node, from_mid in rows])
    db.close()
    return mid, copy, origin


@pytest.fixture(scope="module")
def relay(tmp_path_factory, spark_session) -> dict:
    """The cluster's stores (stopped), what each consumer took, and the report on them."""
    nodes = Nodes(tmp_path_factory.mktemp("relay-cluster"))
    try:
        cluster, took = asyncio.run(relay_cluster(nodes))
    finally:
        nodes.stop_all()
    paths = {name: store(n) for name, n in cluster.items()}
    out = tmp_path_factory.mktemp("relay-report")
    summary = run_report(spark_session, [sqlite_url(p) for p in paths.values()], out, partitions=2)
    return {"paths": paths, "took": took, "summary": summary, "out": out}


def test_bridge_confirmations_are_no_acknowledgements_and_the_relay_has_no_latency_row(relay):
    s, took = relay["summary"], relay["took"]
    assert {r["node_name"]: r["count"] for r in s["latency_ms"]["by_node"]} == took
    assert {r["address"]: r["count"] for r in s["latency_ms"]["by_address"]} == {"orders": ORDERS}
    assert s["latency_ms"]["all"]["count"] == ORDERS
    nodes_ = {n["node_name"]: (n["enqueued"], n["acknowledged"]) for n in s["nodes"]}
    assert nodes_["N1"] == (0, 0) and nodes_["N3"] == (took["N3"], took["N3"])
    assert s["transport"]["enqueued"] == s["transport"]["acknowledged"] == ORDERS
    # the links' confirmations, apart
    links = {(b["node_name"], b["target_node_name"]): b for b in s["bridges"]}
    assert {k: (b["forwarded"], b["confirm_latency_ms"]["count"]) for k, b in links.items()} == {
        ("N1", "N2"): (took["N2"], took["N2"]), ("N1", "N3"): (took["N3"], took["N3"])}
    assert all(0 <= b["confirm_latency_ms"]["p50_ms"] <= b["confirm_latency_ms"]["max_ms"] for b in links.values())


def test_a_forwarded_message_is_one_message_per_address_and_in_the_distribution(relay):
    s, took = relay["summary"], relay["took"]
    orders = {r["address"]: r for r in s["throughput"]["by_address"]}["orders"]
    assert (orders["messages"], orders["enqueued"], orders["acknowledged"]) == (ORDERS, ORDERS, ORDERS)
    spread = {d["address"]: d for d in s["distribution"]}["orders"]
    assert spread["per_node"] == {"N1": 0, **took} and spread["total"] == ORDERS


def test_dead_letter_and_expiry_copies_are_linked_to_their_originals(relay):
    a = relay["summary"]["audit"]
    assert (a["produced"], a["exactly_once"], a["explained"], a["anomalous"], a["verdict"]) == (
        ORDERS + POISON + EXPIRING, ORDERS, POISON + EXPIRING, 0, "green")
    assert a["explained_by_fate"] == {"waiting": 0, "expired": EXPIRING, "dead_lettered": POISON, "removed": 0,
                                      "forwarded": 0}
    assert (a["copies"]["dead_lettered"], a["copies"]["expired"], a["copies"]["explained_by_fate"]["waiting"],
            a["copies"]["anomalous"]) == (POISON, EXPIRING, POISON + EXPIRING, 0)


def test_an_anomaly_on_two_nodes_names_each_copy_with_its_node(relay, spark_session, tmp_path):
    paths = relay["paths"]
    doctored = tmp_path / "N3-doctored.db"
    on_n2, on_n3, origin = acknowledged_twice(paths["N2"], paths["N3"], doctored)
    s = run_report(spark_session, [sqlite_url(paths["N1"]), sqlite_url(paths["N2"]), sqlite_url(doctored)],
                   tmp_path / "r", partitions=2)
    [o] = s["audit"]["offenders"]
    assert (o["root_node_name"], o["root_message_id"], o["anomaly"]) == ("N1", origin, "ACKNOWLEDGED_MORE_THAN_ONCE")
    assert [(c["node_name"], c["message_id"], c["acknowledged"]) for c in o["copies"]] == [
        ("N2", on_n2, 1), ("N3", on_n3, 1)]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert str(on_n3) in json.dumps(summary["audit"]["offenders"])
    html = (tmp_path / "r" / "report.html").read_text()
    assert f"N1/{origin}" in html and f"N2 #{on_n2}: acknowledged" in html and f"N3 #{on_n3}: acknowledged" in html


def test_the_peaks_are_the_charts_highest_steps_and_totals_never_wear_a_nodes_colour(relay):
    s = relay["summary"]
    ts = s["timeseries"]
    for node in s["nodes"]:
        series = ts["nodes"].get(node["node_name"])
        for kind in ("enqueued", "acknowledged"):
            chart_max = max(series[f"{kind}_per_s"]) if series else 0
            assert node[f"peak_{kind}_per_s"] == chart_max, (node["node_name"], kind)
    assert max(r["peak_enqueued_per_s"] for r in s["throughput"]["by_address"]) <= max(ts["total"]["enqueued_per_s"])
    names = [n["node_name"] for n in s["nodes"]]
    for chart in s["charts"].values():
        node_colours = {c for label, c in chart["series"].items() if label.split(" ")[0] in names}
        totals = {label: c for label, c in chart["series"].items() if label.split(" ")[0] not in names}
        assert not node_colours & set(totals.values()), (chart["path"], totals)


def test_empty_store_and_forward_queues_are_hidden_from_the_backlog_table(relay):
    s = relay["summary"]
    internal = [b for b in s["backlog"] if b["queue"].startswith("$.meshmq.")]
    assert internal and all(b["messages"] == 0 for b in internal)  # every forwarded message was confirmed
    html = (relay["out"] / "report.html").read_text()
    table = html[html.index("<h2>Backlog"):html.index("<h2>", html.index("<h2>Backlog") + 1)]
    assert "$.meshmq." not in table.split('id="hidden-internal"')[0]
    assert f"{len(internal)} empty store-and-forward queue(s)" in table
    assert ">DLQ</td>" in table  # the ordinary queues stay (the dead letters wait there)


def test_each_nodes_backlog_over_time_adds_up_to_the_clusters_and_is_drawn_in_its_colour(relay):
    """The relay (N1) has no client traffic of its own but held forwarded messages: it gets a
    backlog series too; N2 ends holding its dead-letter and expiry copies, N1 and N3 nothing."""
    s = relay["summary"]
    ts = s["timeseries"]
    names = [n["node_name"] for n in s["nodes"]]
    backlog = {name: ts["nodes"][name]["backlog"] for name in names}
    assert all(len(b) == len(ts["t"]) and min(b) >= 0 for b in backlog.values()), backlog
    assert [sum(levels) for levels in zip(*backlog.values())] == ts["total"]["backlog"]
    assert {name: b[-1] for name, b in backlog.items()} == {"N1": 0, "N2": POISON + EXPIRING, "N3": 0}
    assert max(backlog["N2"]) >= POISON + EXPIRING
    assert {n["node_name"]: n["backlog"] for n in s["nodes"]} == {"N1": 0, "N2": POISON + EXPIRING, "N3": 0}
    # drawn per node, in the node's colour (the same one its other lines wear), apart from the total's
    lines = s["charts"]["activity"]["series"]
    for name in names:
        assert lines[f"{name} backlog"] == lines[f"{name} dead-lettered/s"], (name, lines)
    assert lines["backlog (messages stored)"] not in {lines[f"{name} backlog"] for name in names}
    html = (relay["out"] / "report.html").read_text()
    nodes_table = html[html.index('<h2 id="tables">Nodes</h2>'):html.index("<h2>Exactly-once audit</h2>")]
    assert "backlog now" in nodes_table
