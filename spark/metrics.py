"""The report's figures as Spark transformations over plain DataFrames.

Inputs (built by spark/store.py from one or more stores):

* events: event_id, node_id, kind, ts, address, queue, message_id,
  message_ts, from_node_id, from_message_id (docs/journal-schema.md)
* nodes: node_id, node_name
* queues: node_id, queue_id, queue, address
* waiting: node_id, message_id, queue_id, size, timestamp (live queue references)

Each function only transforms; nothing here reads a store or writes a file,
so the tests feed them hand-made rows. Results are unordered (a sort is a
shuffle and a sampling job in Spark): whoever presents them sorts the few rows.
"""

from __future__ import annotations

import math

from pyspark.sql import DataFrame
from pyspark.sql import Window as W
from pyspark.sql import functions as F

ENQUEUED = "ENQUEUED"
DELIVERED = "DELIVERED"
ACKNOWLEDGED = "ACKNOWLEDGED"
EXPIRED = "EXPIRED"
DEAD_LETTERED = "DEAD_LETTERED"
REMOVED = "REMOVED"

#: The router's internal queues: store-and-forward (``$.meshmq.sf.``) and a link's
#: network subscriptions (``$.meshmq.net.``). No client can create or consume one
#: (meshmq/routing_names.py): their references are transport, their ACKNOWLEDGED
#: a bridge's confirmation, not a consumer's.
TRANSPORT_PREFIX = "$.meshmq."

PERCENTILES = (0.5, 0.9, 0.99)
#: Latency histogram: bin 0 is <= 0 ms, then 10 log-spaced bins per decade from 1 ms.
BINS_PER_DECADE = 10


def in_window(events: DataFrame, since: int, until: int) -> DataFrame:
    return events.filter((F.col("ts") >= since) & (F.col("ts") < until))


def is_transport():
    """True for an event of an internal queue (TRANSPORT_PREFIX)."""
    return F.col("queue").startswith(TRANSPORT_PREFIX)


def consumer_view(win: DataFrame) -> DataFrame:
    """The events of the queues clients use: throughput, latency and the
    series leave transport out (a forwarded message is enqueued and
    acknowledged once, where its consumer is; bridge_latency shows the links)."""
    return win.filter(~is_transport())


def _is(kind: str):
    return (F.col("kind") == kind).cast("long")


def throughput_per_second(win: DataFrame, since: int) -> DataFrame:
    """second, start_ms, node_id, address, enqueued, acknowledged: the finest
    grain, one-second buckets counted from the window's start (`since`, ms) —
    the charts' buckets, so a peak here is a step on a chart (`second` is the
    bucket's index, `start_ms` when it starts)."""
    second = F.floor((F.col("ts") - F.lit(since)) / F.lit(1000)).cast("long")
    return (
        win.filter(F.col("kind").isin(ENQUEUED, ACKNOWLEDGED))
        .groupBy(second.alias("second"), "node_id", "address")
        .agg(F.sum(_is(ENQUEUED)).alias("enqueued"), F.sum(_is(ACKNOWLEDGED)).alias("acknowledged"))
        .withColumn("start_ms", F.lit(since) + F.col("second") * F.lit(1000))
    )


def throughput_by(per_second: DataFrame, keys: list[str], seconds: float, bucket_s: int = 1) -> DataFrame:
    """Totals, mean rates and peaks per `keys`. Two means, each saying what it
    divides by: `*_per_window_s` over the whole window (`seconds`, idle time
    included), `*_per_active_s` over `active_seconds`, the seconds in which the
    key had at least one enqueue or acknowledgement. A peak is the busiest of
    the charts' buckets (`bucket_s` seconds from the window's start, as
    over_time counts them), per second: the table's peak is the chart's highest step."""
    per_key_second = per_second.groupBy("second", *keys).agg(
        F.sum("enqueued").alias("enqueued"), F.sum("acknowledged").alias("acknowledged")
    )
    per_key_bucket = per_key_second.groupBy(F.floor(F.col("second") / F.lit(bucket_s)).alias("bucket"), *keys).agg(
        F.sum("enqueued").alias("enqueued"), F.sum("acknowledged").alias("acknowledged"),
        F.count(F.lit(1)).alias("active_seconds"),
    )
    active = F.col("active_seconds")
    return (
        per_key_bucket.groupBy(*keys)
        .agg(
            F.sum("enqueued").alias("enqueued"),
            F.sum("acknowledged").alias("acknowledged"),
            (F.max("enqueued") / F.lit(bucket_s)).alias("peak_enqueued_per_s"),
            (F.max("acknowledged") / F.lit(bucket_s)).alias("peak_acknowledged_per_s"),
            F.sum("active_seconds").alias("active_seconds"),
        )
        .withColumn("enqueued_per_window_s", F.col("enqueued") / F.lit(seconds))
        .withColumn("acknowledged_per_window_s", F.col("acknowledged") / F.lit(seconds))
        .withColumn("enqueued_per_active_s", F.col("enqueued") / active)
        .withColumn("acknowledged_per_active_s", F.col("acknowledged") / active)
    )


def messages_by_address(deliveries: DataFrame) -> DataFrame:
    """Distinct messages per address, by the audit's key (root node and
    message id, which a forwarded or moved copy keeps): a multicast message
    enqueued on three subscriptions is one message, and so is one forwarded
    to another node. `deliveries`: the audit's rows (spark/audit.py)."""
    return (
        deliveries.filter(F.col("enqueued_events") > 0)
        .select("address", "root_node_id", "root_message_id")
        .distinct()
        .groupBy("address")
        .agg(F.count(F.lit(1)).alias("messages"))
    )


#: The series over time, per bucket: what is counted, per second of the bucket.
SERIES_COUNTS = {"enqueued": ENQUEUED, "acknowledged": ACKNOWLEDGED, "redelivered": DELIVERED,
                 "expired": EXPIRED, "dead_lettered": DEAD_LETTERED, "removed": REMOVED}
#: Backlog change an event makes (a reference stored, or one that ends).
_NET = {ENQUEUED: 1, ACKNOWLEDGED: -1, EXPIRED: -1, DEAD_LETTERED: -1, REMOVED: -1}


def over_time(win: DataFrame, since: int, bucket_s: int) -> DataFrame:
    """Per bucket of `bucket_s` seconds from `since` (bucket = its index) and
    node_id — and, with node_id NULL, the whole cluster: the event counts of
    SERIES_COUNTS and the p50/p99 enqueue -> acknowledge latency of the
    acknowledgements in the bucket (exact). Only buckets with events: the
    caller fills the idle ones (fill_series)."""
    bucket = F.floor((F.col("ts") - F.lit(since)) / F.lit(bucket_s * 1000)).cast("long").alias("bucket")
    latency = F.when(F.col("kind") == ACKNOWLEDGED, F.col("ts") - F.col("message_ts"))
    # Counted once per bucket, node and exact latency (an acknowledgement's; NULL for every other
    # event): both groupings below read these rows, and Spark computes them once for both (the
    # same plan, one reused exchange); the percentiles weigh each latency by its acknowledgements.
    counts = win.select(bucket, "node_id", "kind", latency.alias("latency_ms")).groupBy(
        "bucket", "node_id", "latency_ms").agg(*(F.sum(_is(kind)).alias(name) for name, kind in SERIES_COUNTS.items()))
    aggs = [F.sum(name).alias(name) for name in SERIES_COUNTS] + [
        F.expr("percentile(latency_ms, array(0.5, 0.99), acknowledged)").alias("_p")]
    per_node = counts.groupBy("bucket", "node_id").agg(*aggs)
    total = counts.groupBy("bucket").agg(*aggs).withColumn("node_id", F.lit(None).cast("string"))
    return per_node.unionByName(total).select(
        "*", F.col("_p")[0].alias("p50_ms"), F.col("_p")[1].alias("p99_ms")).drop("_p")


def backlog_changes(events: DataFrame, since: int, until: int, bucket_s: int) -> DataFrame:
    """bucket, node_id, net: how much each node's stored references grew per
    bucket (ENQUEUED +1; ACKNOWLEDGED, EXPIRED, DEAD_LETTERED, REMOVED -1),
    for every event from `since` on; everything at or after `until` in one
    last bucket."""
    last = (until - since + bucket_s * 1000 - 1) // (bucket_s * 1000)
    bucket = F.least(F.floor((F.col("ts") - F.lit(since)) / F.lit(bucket_s * 1000)).cast("long"), F.lit(last))
    net = F.lit(0)
    for kind, change in _NET.items():
        net = F.when(F.col("kind") == kind, F.lit(change)).otherwise(net)
    return (events.filter((F.col("ts") >= since) & F.col("kind").isin(*_NET))
            .groupBy(bucket.alias("bucket"), "node_id").agg(F.sum(net).alias("net")))


def fill_series(rows: list[dict], changes: list[dict], backlog_now: int, since: int, until: int, bucket_s: int,
                node_names: dict[str, str], backlog_by_node: dict[str, int] | None = None) -> dict:
    """The charts' series (pure): one value per bucket of the whole window,
    idle buckets included — a rate is 0 there, a latency None (no
    acknowledgement to measure). Rates are per second (count / bucket_s).
    The backlog at the end of each bucket is worked back from `backlog_now`
    (the references stored when the report read the queues) through the
    changes after it; each node's the same way from its own references now
    (`backlog_by_node`, node_id -> references) and its own changes — a node
    with a backlog and no traffic of its own (a relay) gets a series too.

    rows: over_time rows (bucket, node_id or None, counts, p50_ms, p99_ms);
    changes: backlog_changes rows (bucket, node_id when per node, net)."""
    n = max(1, -(-(until - since) // (bucket_s * 1000)))
    t = [since / 1000 + i * bucket_s for i in range(n)]  # each bucket's start, from the window's (as counted)

    def series(keyed: dict[int, dict]) -> dict:
        out = {f"{name}_per_s": [keyed[i][name] / bucket_s if i in keyed else 0.0 for i in range(n)]
               for name in SERIES_COUNTS}
        for p in ("p50_ms", "p99_ms"):
            out[p] = [keyed[i][p] if i in keyed else None for i in range(n)]
        return out

    by_node: dict[str | None, dict[int, dict]] = {}
    for r in rows:
        if 0 <= r["bucket"] < n:
            by_node.setdefault(r["node_id"], {})[r["bucket"]] = r
    total = series(by_node.pop(None, {}))

    def backlog(net: dict[int, int], now: int) -> list[int]:
        levels, level = [0] * n, now
        for i in range(n - 1, -1, -1):
            level -= net.get(i + 1, 0) if i + 1 < n else sum(v for b, v in net.items() if b >= n)
            levels[i] = level
        return levels

    net: dict[int, int] = {}
    node_net: dict[str, dict[int, int]] = {}
    for r in changes:
        net[r["bucket"]] = net.get(r["bucket"], 0) + r["net"]
        if r.get("node_id") is not None:
            per = node_net.setdefault(r["node_id"], {})
            per[r["bucket"]] = per.get(r["bucket"], 0) + r["net"]
    total["backlog"] = backlog(net, backlog_now)
    if backlog_by_node is not None:
        for node in set(backlog_by_node) | set(node_net):
            by_node.setdefault(node, {})
    nodes = {}
    for node, keyed in sorted(by_node.items()):
        nodes[node_names.get(node, node)] = series(keyed)
        if backlog_by_node is not None:
            nodes[node_names.get(node, node)]["backlog"] = backlog(node_net.get(node, {}), backlog_by_node.get(node, 0))
    return {"bucket_s": bucket_s, "t": t, "total": total, "nodes": nodes}


def chart_bucket_seconds(seconds: float, points: int = 600) -> int:
    """Bucket width for the charts: at most `points` buckets, whole seconds."""
    return max(1, math.ceil(seconds / points))


def _acks_with_latency(win: DataFrame) -> DataFrame:
    return win.filter(F.col("kind") == ACKNOWLEDGED).withColumn("latency_ms", F.col("ts") - F.col("message_ts"))


def _latency_counts(win: DataFrame) -> DataFrame:
    """node_id, address, latency_ms, n: the acknowledgements counted per exact
    latency. Every latency figure reads these rows (a few thousand for a
    million acknowledgements; exact, as `percentile` takes each row's count as
    its frequency), and in one job Spark groups the events once for all of
    them: their plans are the same, so it reuses the one exchange."""
    return _acks_with_latency(win).groupBy("node_id", "address", "latency_ms").agg(F.count(F.lit(1)).alias("n"))


def _latency_stats(grouped) -> DataFrame:
    """count, min, percentiles, max and mean over grouped _latency_counts rows
    (an acknowledgement with no latency, its message_ts unknown, is counted
    but not measured)."""
    quantiles = ", ".join(str(p) for p in PERCENTILES)
    measured = F.when(F.col("latency_ms").isNotNull(), F.col("n"))
    return grouped.agg(
        F.coalesce(F.sum("n"), F.lit(0)).alias("count"),
        F.min("latency_ms").alias("min_ms"),
        F.expr(f"percentile(latency_ms, array({quantiles}), n)").alias("_p"),
        F.max("latency_ms").alias("max_ms"),
        (F.sum(F.col("latency_ms") * F.col("n")) / F.sum(measured)).alias("mean_ms"),
    ).select(
        "*",
        *(F.col("_p")[i].alias(f"p{round(p * 100)}_ms") for i, p in enumerate(PERCENTILES)),
    ).drop("_p")


def latency_by_address(win: DataFrame) -> DataFrame:
    """Enqueue -> acknowledge latency (ACKNOWLEDGED ts - message_ts) per address,
    exact percentiles (linear interpolation between ranks)."""
    return _latency_stats(_latency_counts(win).groupBy("address"))


def latency_by_node(win: DataFrame) -> DataFrame:
    return _latency_stats(_latency_counts(win).groupBy("node_id"))


def latency_overall(win: DataFrame) -> DataFrame:
    return _latency_stats(_latency_counts(win).groupBy())


def latency_histogram(win: DataFrame) -> DataFrame:
    """address, bin, lower_ms, upper_ms, count; bins are log-spaced (10 per decade)."""
    lat = F.col("latency_ms")
    bin_ = F.when(lat <= 0, F.lit(0)).otherwise(F.floor(F.log10(lat) * BINS_PER_DECADE).cast("int") + 1)
    counted = _latency_counts(win).groupBy("address", bin_.alias("bin")).agg(F.sum("n").alias("count"))
    lower = F.when(F.col("bin") == 0, F.lit(None)).otherwise(F.pow(F.lit(10.0), (F.col("bin") - 1) / BINS_PER_DECADE))
    upper = F.when(F.col("bin") == 0, F.lit(0.0)).otherwise(F.pow(F.lit(10.0), F.col("bin") / BINS_PER_DECADE))
    return counted.select("address", "bin", lower.alias("lower_ms"), upper.alias("upper_ms"), "count")


def distribution(placed: DataFrame, nodes: DataFrame) -> tuple[DataFrame, DataFrame]:
    """How evenly each address's messages were spread over the nodes.

    `placed`: one row (address, node_id) per message on a queue, on the node
    where it ended up — the audit's deliveries, so a forwarded or moved
    message counts once, on the node that took it, never also on the node
    that relayed it. Returns (per_node, per_address): per_node has address,
    node_id, node_name, messages, share (of the address's total; every node
    of the report appears, with 0 where it got none); per_address has nodes,
    total, min, max, mean, cv (population stddev / mean) and max_over_mean
    (1.0 = perfectly even).
    """
    counts = placed.groupBy("address", "node_id").agg(F.count(F.lit(1)).alias("messages"))
    grid = (
        counts.select("address").distinct().crossJoin(nodes.select("node_id", "node_name"))
        .join(counts, ["address", "node_id"], "left")
        .fillna(0, ["messages"])
    )
    total = F.sum("messages").over(W.partitionBy("address"))
    per_node = grid.withColumn("share", F.col("messages") / total)
    per_address = (
        grid.groupBy("address")
        .agg(
            F.count(F.lit(1)).alias("nodes"),
            F.sum("messages").alias("total"),
            F.min("messages").alias("min"),
            F.max("messages").alias("max"),
            F.avg("messages").alias("mean"),
            F.stddev_pop("messages").alias("_sd"),
        )
        .withColumn("cv", F.col("_sd") / F.col("mean"))
        .withColumn("max_over_mean", F.col("max") / F.col("mean"))
        .drop("_sd")
    )
    return per_node, per_address


def backlog(queues: DataFrame, waiting: DataFrame, nodes: DataFrame, now: int) -> DataFrame:
    """Per durable queue (live state, not windowed): messages waiting, their
    bytes, the oldest one's timestamp and its age at `now`."""
    per_queue = waiting.groupBy("node_id", "queue_id").agg(
        F.count(F.lit(1)).alias("messages"),
        F.sum("size").alias("bytes"),
        F.min("timestamp").alias("oldest_ms"),
    )
    return (
        queues.join(per_queue, ["node_id", "queue_id"], "left")
        .join(nodes, "node_id", "left")
        .fillna(0, ["messages", "bytes"])
        .withColumn("oldest_age_s", (F.lit(now) - F.col("oldest_ms")) / 1000.0)
        .select("node_id", "node_name", "queue", "address", "messages", "bytes", "oldest_ms", "oldest_age_s")
    )


def queue_kind_counts(win: DataFrame) -> DataFrame:
    """address, queue, kind, count: the events per queue and kind. The totals,
    the transport's totals and the ends by queue read these few rows, and in
    one job Spark counts the events once for all of them (the same plan, one
    reused exchange)."""
    return win.groupBy("address", "queue", "kind").count()


def ends_by_queue(win: DataFrame) -> DataFrame:
    """address, queue: expired, dead_lettered, removed and redelivered counts in the window."""
    kind, count = F.col("kind"), F.col("count")
    return (
        queue_kind_counts(win).filter(kind.isin(EXPIRED, DEAD_LETTERED, REMOVED, DELIVERED))
        .groupBy("address", "queue")
        .agg(*(F.sum(F.when(kind == k, count).otherwise(0)).alias(name) for name, k in
               (("expired", EXPIRED), ("dead_lettered", DEAD_LETTERED), ("removed", REMOVED),
                ("redelivered", DELIVERED))))
    )


def totals(win: DataFrame) -> dict[str, int]:
    """Event counts by kind in the window (every kind present, 0 where none;
    DELIVERED events are redeliveries only, hence the name)."""
    return totals_of([r.asDict() for r in kind_counts(win).collect()])


def kind_counts(win: DataFrame, transport: bool | None = None) -> DataFrame:
    """kind, count: what totals folds (a report collects it with its other
    small results), of the clients' queues (`transport` False), the internal
    ones (True) or all (None)."""
    counts = queue_kind_counts(win)
    if transport is not None:
        counts = counts.filter(is_transport() if transport else ~is_transport())
    return counts.groupBy("kind").agg(F.sum("count").alias("count"))


def totals_of(rows: list[dict]) -> dict[str, int]:
    """totals, from kind_counts' rows already collected."""
    got = {row["kind"]: int(row["count"]) for row in rows}
    names = {ENQUEUED: "enqueued", ACKNOWLEDGED: "acknowledged", DELIVERED: "redelivered",
             EXPIRED: "expired", DEAD_LETTERED: "dead_lettered", REMOVED: "removed"}
    return {name: got.get(kind, 0) for kind, name in names.items()}
