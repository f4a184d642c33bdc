"""The report's figures on hand-made events (real Spark, no store)."""

from __future__ import annotations

import pytest

from spark import metrics
from spark.metrics import ACKNOWLEDGED as ACK
from spark.metrics import DEAD_LETTERED, DELIVERED, ENQUEUED, EXPIRED, REMOVED
from tests.spark.frames import ev, events_frame, nodes_frame

pytestmark = pytest.mark.integration

T0 = 1_800_000_000_000


def rows(frame, *keys):
    return sorted((r.asDict() for r in frame.collect()), key=lambda r: tuple(r[k] for k in keys))


def test_window_is_half_open(spark_session):
    events = events_frame(spark_session, [ev(ENQUEUED, T0 - 1), ev(ENQUEUED, T0), ev(ENQUEUED, T0 + 999),
                                          ev(ENQUEUED, T0 + 1000)])
    assert [r["ts"] for r in metrics.in_window(events, T0, T0 + 1000).collect()] == [T0, T0 + 999]


def test_throughput_counts_per_second_and_peaks(spark_session):
    events = events_frame(spark_session, [
        *(ev(ENQUEUED, T0 + i * 100, mid=i) for i in range(10)),            # 10 in second 0
        *(ev(ENQUEUED, T0 + 1000 + i, mid=20 + i) for i in range(4)),       # 4 in second 1
        *(ev(ACK, T0 + 1500 + i, mid=i) for i in range(7)),                 # 7 acks in second 1
        ev(ENQUEUED, T0 + 1200, node="n2", mid=1),                          # another node
        ev(EXPIRED, T0 + 1300, mid=99),                                     # not throughput
    ])
    per_second = metrics.throughput_per_second(events, T0)
    assert rows(per_second, "second", "node_id") == [
        {"second": 0, "start_ms": T0, "node_id": "n1", "address": "a", "enqueued": 10, "acknowledged": 0},
        {"second": 1, "start_ms": T0 + 1000, "node_id": "n1", "address": "a", "enqueued": 4, "acknowledged": 7},
        {"second": 1, "start_ms": T0 + 1000, "node_id": "n2", "address": "a", "enqueued": 1, "acknowledged": 0},
    ]
    (by_address,) = rows(metrics.throughput_by(per_second, ["address"], 2.0), "address")
    assert by_address == {
        "address": "a", "enqueued": 15, "acknowledged": 7, "peak_enqueued_per_s": 10, "peak_acknowledged_per_s": 7,
        "enqueued_per_window_s": 7.5, "acknowledged_per_window_s": 3.5,
        "active_seconds": 2, "enqueued_per_active_s": 7.5, "acknowledged_per_active_s": 3.5,
    }
    by_node = rows(metrics.throughput_by(per_second, ["node_id"], 2.0), "node_id")
    assert [(r["node_id"], r["enqueued"], r["peak_enqueued_per_s"]) for r in by_node] == [("n1", 14, 10), ("n2", 1, 1)]


@pytest.mark.parametrize("bucket_s", [1, 2])
def test_a_peak_is_the_charts_highest_step_counted_from_the_window_start(spark_session, bucket_s):
    """The window starts mid-second: whole epoch seconds would split its first
    bucket's 6 messages 4 + 5 with the next; the table and the chart both
    count from the window's start, in the chart's bucket width."""
    since, until = T0 + 500, T0 + 4500
    events = events_frame(spark_session, [
        *(ev(ENQUEUED, since + 100 + i * 150, mid=i) for i in range(6)),      # 6 in [since, since + 1 s)
        *(ev(ENQUEUED, since + 1100 + i, mid=10 + i) for i in range(3)),      # 3 in the next second
        ev(ENQUEUED, since + 3200, node="n2", mid=50),
    ])
    (by_node,) = [r for r in rows(metrics.throughput_by(metrics.throughput_per_second(events, since), ["node_id"],
                                                        4.0, bucket_s), "node_id") if r["node_id"] == "n1"]
    series = metrics.fill_series([r.asDict() for r in metrics.over_time(events, since, bucket_s).collect()], [], 0,
                                 since, until, bucket_s, {"n1": "n1", "n2": "n2"})
    assert by_node["peak_enqueued_per_s"] == max(series["nodes"]["n1"]["enqueued_per_s"]) == (
        6 if bucket_s == 1 else 4.5)
    assert by_node["active_seconds"] == 2
    assert series["t"][0] == since / 1000 and series["t"][1] == since / 1000 + bucket_s


def test_distinct_messages_count_a_multicast_or_forwarded_message_once(spark_session):
    from spark import audit

    sf = "$.meshmq.sf.cc.n2"
    events = events_frame(spark_session, [ev(ENQUEUED, T0, queue=f"sub{i}", mid=1) for i in range(3)] + [
        ev(ENQUEUED, T0, queue="sub0", mid=2), ev(ENQUEUED, T0, node="n2", mid=1),
        # forwarded: stored for n2, confirmed, stored on n2 with its origin
        ev(ENQUEUED, T0, mid=5, queue=sf), ev(ACK, T0 + 2, mid=5, queue=sf),
        ev(ENQUEUED, T0 + 1, node="n2", mid=9, queue="sub0", came_from=("n1", 5))])
    audited = audit.audit(events, T0, T0 + 1000, spark_session.createDataFrame([], "node_id STRING, message_id BIGINT, "
                                                                                   "queue STRING"))
    assert rows(metrics.messages_by_address(audited), "address") == [{"address": "a", "messages": 4}]


def test_transport_is_left_out_of_the_consumer_view(spark_session):
    sf, net = "$.meshmq.sf.cc.n2", "$.meshmq.net.link.a"
    events = events_frame(spark_session, [
        ev(ENQUEUED, T0, mid=1, queue=net), ev(REMOVED, T0 + 1, mid=1, queue=net),
        ev(ENQUEUED, T0 + 1, mid=2, queue=sf), ev(ACK, T0 + 9, mid=2, queue=sf),
        ev(ENQUEUED, T0 + 2, node="n2", mid=7), ev(ACK, T0 + 50, node="n2", mid=7, message_ts=T0)])
    app = metrics.consumer_view(events)
    assert metrics.totals(app) == {"enqueued": 1, "acknowledged": 1, "redelivered": 0, "expired": 0,
                                   "dead_lettered": 0, "removed": 0}
    assert [(r["node_id"], r["count"], r["max_ms"]) for r in metrics.latency_by_node(app).collect()] == [("n2", 1, 50)]


def test_latency_percentiles_are_exact(spark_session):
    # latencies 1..100 ms on "a"; 5 ms on "b"
    events = events_frame(spark_session, [
        *(ev(ACK, T0 + lat, mid=lat, message_ts=T0) for lat in range(1, 101)),
        ev(ACK, T0 + 5, address="b", message_ts=T0),
        ev(ENQUEUED, T0, address="c"),  # no ack: no latency row
    ])
    by_address = {r["address"]: r for r in metrics.latency_by_address(events).collect()}
    assert set(by_address) == {"a", "b"}
    a = by_address["a"]
    assert (a["count"], a["min_ms"], a["max_ms"], a["mean_ms"]) == (100, 1, 100, 50.5)
    # linear interpolation between ranks, as numpy.percentile
    assert a["p50_ms"] == pytest.approx(50.5)
    assert a["p90_ms"] == pytest.approx(90.1)
    assert a["p99_ms"] == pytest.approx(99.01)
    assert by_address["b"]["p99_ms"] == 5.0
    (overall,) = metrics.latency_overall(events).collect()
    assert overall["count"] == 101 and overall["max_ms"] == 100


def test_latency_histogram_bins_are_log_spaced(spark_session):
    events = events_frame(spark_session, [ev(ACK, T0 + lat, mid=i, message_ts=T0) for i, lat in
                                          enumerate([0, 1, 1, 9, 10, 100, 1000])])
    hist = rows(metrics.latency_histogram(events), "bin")
    assert sum(r["count"] for r in hist) == 7
    assert hist[0] == {"address": "a", "bin": 0, "lower_ms": None, "upper_ms": 0.0, "count": 1}
    for r in hist[1:]:
        assert r["lower_ms"] < r["upper_ms"] == pytest.approx(r["lower_ms"] * 10 ** 0.1)
    # each latency falls in [lower, upper); 1, 10, 100 and 1000 ms open bins exactly
    lowers = sorted(r["lower_ms"] for r in hist[1:])
    assert lowers[0] == 1.0 and 10.0 in lowers and 100.0 in lowers and 1000.0 in lowers
    assert [r["count"] for r in hist[1:]] == [2, 1, 1, 1, 1]  # 1, 1 | 9 | 10 | 100 | 1000


def test_distribution_includes_idle_nodes_and_measures_evenness(spark_session):
    events = events_frame(spark_session, [
        *(ev(ENQUEUED, T0, node="n1", mid=i) for i in range(6)),
        *(ev(ENQUEUED, T0, node="n2", mid=i) for i in range(2)),
        *(ev(ENQUEUED, T0, node="n2", address="b", mid=i) for i in range(3)),
        ev(ACK, T0, node="n3"),
    ])
    nodes = nodes_frame(spark_session, {"n1": "alpha", "n2": "beta", "n3": "gamma"})
    per_node, per_address = metrics.distribution(events.filter("kind = 'ENQUEUED'").select("address", "node_id"), nodes)
    got = {(r["address"], r["node_name"]): (r["messages"], r["share"]) for r in per_node.collect()}
    assert got == {
        ("a", "alpha"): (6, 0.75), ("a", "beta"): (2, 0.25), ("a", "gamma"): (0, 0.0),
        ("b", "alpha"): (0, 0.0), ("b", "beta"): (3, 1.0), ("b", "gamma"): (0, 0.0),
    }
    a = {r["address"]: r for r in per_address.collect()}["a"]
    assert (a["nodes"], a["total"], a["min"], a["max"]) == (3, 8, 0, 6)
    assert a["mean"] == pytest.approx(8 / 3)
    assert a["max_over_mean"] == pytest.approx(6 / (8 / 3))
    assert a["cv"] == pytest.approx(((6 - 8 / 3) ** 2 + (2 - 8 / 3) ** 2 + (8 / 3) ** 2) ** 0.5 / 3 ** 0.5 / (8 / 3))


def test_backlog_counts_inline_and_shared_references_per_queue(spark_session):
    s = spark_session
    queues = s.createDataFrame([("n1", 1, "q1", "a"), ("n1", 2, "q2", "a"), ("n2", 1, "q1", "a")],
                               "node_id STRING, queue_id BIGINT, queue STRING, address STRING")
    waiting = s.createDataFrame([("n1", 10, 1, 100, T0 + 5), ("n1", 11, 1, 50, T0 + 1), ("n2", 10, 1, 7, T0)],
                                "node_id STRING, message_id BIGINT, queue_id BIGINT, size BIGINT, timestamp BIGINT")
    nodes = nodes_frame(s, {"n1": "alpha", "n2": "beta"})
    got = {(r["node_name"], r["queue"]): r for r in metrics.backlog(queues, waiting, nodes, T0 + 10_001).collect()}
    assert (got["alpha", "q1"]["messages"], got["alpha", "q1"]["bytes"], got["alpha", "q1"]["oldest_ms"]) == (2, 150, T0 + 1)
    assert got["alpha", "q1"]["oldest_age_s"] == pytest.approx(10.0)
    assert (got["alpha", "q2"]["messages"], got["alpha", "q2"]["oldest_ms"]) == (0, None)
    assert got["beta", "q1"]["messages"] == 1


def test_ends_and_totals_count_each_kind(spark_session):
    events = events_frame(spark_session, [
        ev(EXPIRED, T0, mid=1), ev(EXPIRED, T0, mid=2), ev(DEAD_LETTERED, T0, mid=3), ev(REMOVED, T0, mid=4),
        ev(DELIVERED, T0, mid=5), ev(ENQUEUED, T0, mid=6), ev(DEAD_LETTERED, T0, address="b", mid=7),
    ])
    ends = {(r["address"], r["queue"]): r for r in metrics.ends_by_queue(events).collect()}
    assert (ends["a", "a"]["expired"], ends["a", "a"]["dead_lettered"], ends["a", "a"]["removed"],
            ends["a", "a"]["redelivered"]) == (2, 1, 1, 1)
    assert ends["b", "b"]["dead_lettered"] == 1
    assert metrics.totals(events) == {"enqueued": 1, "acknowledged": 0, "redelivered": 1, "expired": 2,
                                      "dead_lettered": 2, "removed": 1}


def test_chart_buckets_keep_at_most_600_points():
    assert metrics.chart_bucket_seconds(30) == 1
    assert metrics.chart_bucket_seconds(600) == 1
    assert metrics.chart_bucket_seconds(601) == 2
    assert metrics.chart_bucket_seconds(86_400) == 144
