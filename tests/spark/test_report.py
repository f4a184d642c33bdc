"""The report on real stores written by real routers: SQLite (two nodes) and PostgreSQL.

The counts must equal what the workload sent and acknowledged, the latencies
must fit the bounds the workload's own clock readings allow, and the audit
must name exactly the messages a doctored store was doctored for.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from tests.fixtures.nodes import wait_for
from click.testing import CliRunner

from meshmq.cli.analytics import analytics
from meshmq.client import connect
from spark.report import run_report
from tests.spark.workload import NODE_EXTRA, Workload, run_workload, sqlite_url

pytestmark = pytest.mark.integration

PARQUET_TABLES = (
    "throughput_per_second", "throughput_by_address", "throughput_by_node", "latency_by_address", "latency_histogram",
    "distribution_by_node", "distribution_by_address", "backlog", "ends_by_queue", "audit", "audit_offenders",
    "latency_by_node", "bridge_traffic", "message_ends",
)


def latency_bounds(*workloads: Workload) -> tuple[int, int]:
    """Every acknowledged message was accepted before `sent_ms` and after
    `started_ms`, and acknowledged after `consuming_ms` and before `stopped_ms`
    (one clock, ms resolution: 1 ms of slack each way)."""
    low = min(w.consuming_ms - w.sent_ms for w in workloads) - 1
    high = max(w.stopped_ms - w.started_ms for w in workloads) + 1
    return low, high


def assert_latency_within(summary: dict, addresses: dict[str, int], bounds: tuple[int, int]) -> None:
    low, high = bounds
    rows = {r["address"]: r for r in summary["latency_ms"]["by_address"]}
    assert {a: r["count"] for a, r in rows.items()} == addresses
    for r in [*rows.values(), summary["latency_ms"]["all"]]:
        assert low <= r["min_ms"] <= r["p50_ms"] <= r["p90_ms"] <= r["p99_ms"] <= r["max_ms"] <= high, (r, bounds)
        assert low <= r["mean_ms"] <= high


def doctored_copy(src: Path, dst: Path) -> tuple[str, int, int]:
    """Copy a store; duplicate one ACKNOWLEDGED event, delete another's. Returns (node_id, duplicated, unacked)."""
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    db = sqlite3.connect(dst)
    with db:
        node_id = db.execute("SELECT value FROM node_state WHERE key = 'node_id'").fetchone()[0]
        acked = [r[0] for r in db.execute(
            "SELECT message_id FROM events WHERE kind = 'ACKNOWLEDGED' ORDER BY message_id LIMIT 2 OFFSET 5")]
        dup, gone = acked
        db.execute(
            "INSERT INTO events (node_id, kind, ts, address, queue, message_id, size, delivery_count, message_ts) "
            "SELECT node_id, kind, ts + 3, address, queue, message_id, size, delivery_count, message_ts "
            "FROM events WHERE kind = 'ACKNOWLEDGED' AND message_id = ?", (dup,))
        assert db.execute("DELETE FROM events WHERE kind = 'ACKNOWLEDGED' AND message_id = ?", (gone,)).rowcount == 1
    db.close()
    return node_id, dup, gone


# --------------------------------------------------------------------------- SQLite, two nodes, through the CLI


def test_report_on_a_two_node_sqlite_cluster_equals_the_workload(spark_session, sqlite_cluster, tmp_path):
    alpha, beta = sqlite_cluster["alpha"], sqlite_cluster["beta"]
    wa, wb = alpha.workload, beta.workload
    out = tmp_path / "report"
    result = CliRunner().invoke(
        analytics, ["report", "--store", alpha.url, "--store", beta.url, "--out", str(out), "--partitions", "3"]
    )
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())

    assert s["totals"] == {
        "enqueued": wa.enqueued + wb.enqueued, "acknowledged": wa.acknowledged + wb.acknowledged,
        "redelivered": 0, "expired": 3, "dead_lettered": 2, "removed": 0,
    }
    by_address = {r["address"]: r for r in s["throughput"]["by_address"]}
    assert {a: (r["enqueued"], r["acknowledged"]) for a, r in by_address.items()} == {
        "orders": (160, 160), "news": (20, 20), "pending": (7, 0), "poison.q": (2, 0), "DLQ": (2, 0),
        "expiring.q": (3, 0),
    }
    assert by_address["news"]["messages"] == 10  # one multicast message, two subscriptions
    assert by_address["orders"]["enqueued_per_window_s"] == pytest.approx(160 / s["window"]["seconds"])
    assert by_address["orders"]["enqueued_per_active_s"] == pytest.approx(160 / by_address["orders"]["active_seconds"])
    nodes = {n["node_name"]: n for n in s["nodes"]}
    assert {k: (n["enqueued"], n["acknowledged"]) for k, n in nodes.items()} == {
        "alpha": (wa.enqueued, wa.acknowledged), "beta": (wb.enqueued, wb.acknowledged),
    }
    assert_latency_within(s, {"orders": 160, "news": 20}, latency_bounds(wa, wb))

    orders = next(d for d in s["distribution"] if d["address"] == "orders")
    assert orders["per_node"] == {"alpha": 120, "beta": 40}
    assert orders["max_over_mean"] == pytest.approx(1.5)
    assert orders["cv"] == pytest.approx(0.5)
    news = next(d for d in s["distribution"] if d["address"] == "news")
    assert news["per_node"] == {"alpha": 20, "beta": 0}

    backlog = {(b["node_name"], b["queue"]): b for b in s["backlog"]}
    assert backlog["alpha", "pending"]["messages"] == 7
    assert backlog["alpha", "DLQ"]["messages"] == 2
    assert backlog["beta", "DLQ"]["messages"] == 0
    assert sum(b["messages"] for b in s["backlog"]) == 9
    assert wa.started_ms <= backlog["alpha", "pending"]["oldest_ms"] <= wa.stopped_ms
    ends = {(e["address"], e["queue"]): e for e in s["ends"]}
    assert ends["expiring.q", "expiring.q"]["expired"] == 3
    assert ends["poison.q", "poison.q"]["dead_lettered"] == 2

    a = s["audit"]
    # the 2 dead-letter copies are linked to their originals: counted apart, not as produced
    assert (a["produced"], a["exactly_once"], a["explained"], a["anomalous"], a["verdict"]) == (192, 180, 12, 0, "green")
    assert a["explained_by_fate"] == {"expired": 3, "dead_lettered": 2, "removed": 0, "waiting": 7, "forwarded": 0}
    assert (a["copies"]["dead_lettered"], a["copies"]["expired"], a["copies"]["explained_by_fate"]["waiting"]) == (
        2, 0, 2)
    assert a["offenders"] == []  # explained states are counted, not listed

    # the outputs: Parquet tables, PNG charts, one self-contained HTML page
    for table in PARQUET_TABLES:
        assert (out / "parquet" / table / "_SUCCESS").exists(), table
    assert spark_session.read.parquet(str(out / "parquet" / "audit")).count() == 194
    assert spark_session.read.parquet(str(out / "parquet" / "audit_offenders")).count() == 0
    for chart in ("throughput", "latency_over_time", "activity", "latency", "distribution"):
        assert (out / "charts" / f"{chart}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (out / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == 5
    assert 'src="http' not in html and "<link" not in html
    assert "GREEN</strong> — every message delivered exactly once or accounted for" in html

    assert ("audit    GREEN: 192 produced, 180 acknowledged exactly once, 12 explained, 0 anomalous; "
            "2 dead-letter/expiry copies (2 dead-letter, 0 expiry, 0 anomalous)") in result.output
    assert "Traceback" not in result.output


def test_a_time_window_limits_the_counts_but_not_the_acks_that_close_them(spark_session, sqlite_cluster, tmp_path):
    """A window that ends right after the last send: the acks fall after it,
    yet every message in it is audited as acknowledged exactly once."""
    beta = sqlite_cluster["beta"]
    w = beta.workload
    s = run_report(spark_session, [beta.url], tmp_path / "r", window=_window(w.started_ms, w.sent_ms + 1))
    assert s["totals"]["enqueued"] == 40
    assert s["totals"]["acknowledged"] == 0
    assert (s["audit"]["produced"], s["audit"]["exactly_once"]) == (40, 40)


def test_a_report_leaves_nothing_stored_in_the_session(spark_session, sqlite_cluster, tmp_path):
    """The report caches and checkpoints its big frames (the events, the
    references, the audit) and frees them all when it is done, written: a
    session that runs reports one after another (the bench, a notebook)
    does not grow; the audit table, written in the background, is whole."""
    jsc = spark_session.sparkContext._jsc

    def stored() -> set[int]:  # the ids of the RDDs the session keeps
        return {int(k) for k in jsc.getPersistentRDDs().keySet().toArray()}

    before = stored()
    urls = [sqlite_cluster["alpha"].url, sqlite_cluster["beta"].url]
    s = run_report(spark_session, urls, tmp_path / "r")
    # Nothing new is kept (an earlier test's frame may be collected meanwhile: a subset, not equal).
    assert stored() <= before
    audit_rows = spark_session.read.parquet(str(tmp_path / "r" / "parquet" / "audit")).count()
    copies = s["audit"]["copies"]
    assert audit_rows == s["audit"]["produced"] + copies["dead_lettered"] + copies["expired"]


def test_a_window_with_no_events_still_reports_the_backlog(spark_session, sqlite_cluster, tmp_path):
    alpha = sqlite_cluster["alpha"]
    later = alpha.workload.stopped_ms + 3_600_000
    s = run_report(spark_session, [alpha.url], tmp_path / "r", window=_window(later, later + 60_000))
    assert set(s["totals"].values()) == {0}
    assert s["audit"]["produced"] == 0 and s["latency_ms"]["all"] is None
    assert sum(b["messages"] for b in s["backlog"]) == 9
    assert any(note.startswith("no events in the window; the stores' events span alpha: ") for note in s["notes"])
    assert (tmp_path / "r" / "report.html").exists()


def _window(since: int, until: int):
    from spark.window import Window

    return Window(since, until)


def test_the_audit_names_exactly_the_doctored_messages(spark_session, sqlite_cluster, tmp_path):
    beta = sqlite_cluster["beta"]
    copy = tmp_path / "doctored.db"
    node_id, dup, gone = doctored_copy(beta.path, copy)
    s = run_report(spark_session, [sqlite_url(copy)], tmp_path / "r", partitions=2)
    a = s["audit"]
    assert (a["produced"], a["exactly_once"], a["anomalous"], a["verdict"]) == (40, 38, 2, "red")
    assert [(o["node_id"], o["message_id"], o["queue"], o["acknowledged"], o["anomaly"], o["fate"])
            for o in a["offenders"]] == [
        (node_id, dup, "orders", 2, "ACKNOWLEDGED_MORE_THAN_ONCE", "ACKNOWLEDGED"),
        (node_id, gone, "orders", 0, "NEVER_ACKNOWLEDGED", "UNACCOUNTED"),
    ]
    assert spark_session.read.parquet(str(tmp_path / "r" / "parquet" / "audit_offenders")).count() == 2


def test_a_report_on_a_live_store_mistakes_no_message_in_flight_for_a_lost_one(spark_session, nodes, tmp_path):
    """Traffic keeps flowing while Spark reads the store: messages in flight
    are WAITING or ACKNOWLEDGED, never UNACCOUNTED, and nothing is counted twice.
    The window ends in the future, so only the report's snapshot (the log up
    to the bounds taken before the queues) keeps messages produced while it
    reads out of the audit."""
    node = nodes.router("live", extra=NODE_EXTRA)
    stop = threading.Event()
    sent = []

    async def traffic():
        async with await connect(node.url) as conn:
            s = await conn.session()
            producer = await s.create_producer("live")
            consumer = await s.create_consumer("live")
            while not stop.is_set():
                for _ in range(20):
                    await producer.send(b"x", routing_type="anycast")
                    sent.append(1)
                for _ in range(15):  # fall behind a little: a backlog grows while the report reads
                    (await consumer.receive(5)).ack()

    errors = []
    thread = threading.Thread(target=lambda: _capture(errors, lambda: asyncio.run(traffic())), daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(sent) >= 200 or errors, 60, "the live traffic to send 200 messages")
        s = run_report(spark_session, [sqlite_url(node.workdir / "live-data" / "journal.db")], tmp_path / "r",
                       partitions=3, window=_window(0, int(time.time() * 1000) + 3_600_000))
    finally:
        stop.set()
        thread.join(30)
    assert not errors, errors
    a = s["audit"]
    assert a["produced"] >= 200
    assert a["anomalous"] == 0 and a["verdict"] == "green"
    assert a["exactly_once"] + a["explained_by_fate"]["waiting"] == a["produced"]


def _capture(errors: list, fn) -> None:
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        errors.append(repr(exc))


# --------------------------------------------------------------------------- PostgreSQL


async def test_report_on_postgresql_equals_the_workload(spark_session, nodes, pg_url, tmp_path):
    node = nodes.router("pg", journal_url=pg_url, extra=NODE_EXTRA)
    w = await run_workload(node, Workload(orders=60, news=5, pending=3, poison=1, expiring=2))
    s = run_report(spark_session, [pg_url], tmp_path / "r", partitions=2)

    assert s["nodes"][0]["node_name"] == "pg"
    assert s["totals"] == {"enqueued": w.enqueued, "acknowledged": w.acknowledged, "redelivered": 0,
                           "expired": 2, "dead_lettered": 1, "removed": 0}
    assert {r["address"]: r["enqueued"] for r in s["throughput"]["by_address"]} == w.enqueued_by_address
    assert_latency_within(s, {"orders": 60, "news": 10}, latency_bounds(w))
    a = s["audit"]
    assert (a["produced"], a["exactly_once"], a["anomalous"]) == (w.enqueued - w.poison, w.acknowledged, 0)
    assert a["explained_by_fate"] == {"expired": 2, "dead_lettered": 1, "removed": 0, "waiting": 3, "forwarded": 0}
    assert a["copies"]["dead_lettered"] == 1
    assert {(b["queue"], b["messages"]) for b in s["backlog"] if b["messages"]} == {("pending", 3), ("DLQ", 1)}


def test_the_backlog_counts_paged_messages(spark_session, tmp_path):
    """A queue past max-size-bytes keeps most of its backlog in the page
    (paged_messages): the report counts those messages too, with the node's
    in-memory ones, and their age."""
    from tests.fixtures.nodes import Nodes

    (tmp_path / "nodes").mkdir()
    nodes = Nodes(tmp_path / "nodes")
    node = nodes.router("pager", extra='address-settings:\n  "paged.#": {max-size-bytes: 20K, page-size-bytes: 10K}\n')
    try:
        async def fill():
            async with await connect(node.url) as conn:
                await conn.admin.create_queue("paged.backlog", routing_type="anycast")
                p = await (await conn.session()).create_producer("paged.backlog")
                for _ in range(300):
                    await p.send_async(b"." * 1000, routing_type="anycast")
                await p.flush()
                info = await conn.admin.queue("paged.backlog")
                assert info.message_count == 300 and info.paged_count >= 250
        started = int(time.time() * 1000)
        asyncio.run(fill())
        stopped = int(time.time() * 1000)
    finally:
        nodes.stop_all()
    store = sqlite_url(node.workdir / "pager-data" / "journal.db")
    s = run_report(spark_session, [store], tmp_path / "r")
    backlog = {b["queue"]: b for b in s["backlog"]}
    assert backlog["paged.backlog"]["messages"] == 300
    assert started <= backlog["paged.backlog"]["oldest_ms"] <= stopped
