"""The report's figures as Spark transformations over plain DataFrames.

Inputs (built by spark/store.py from one or more stores):

* events: event_id, node_id, kind, ts, address, queue, message_id, size,
  delivery_count, message_ts (docs/journal-schema.md)
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

PERCENTILES = (0.5, 0.9, 0.99)
#: Latency histogram: bin 0 is <= 0 ms, then 10 log-spaced bins per decade from 1 ms.
BINS_PER_DECADE = 10


def in_window(events: DataFrame, since: int, until: int) -> DataFrame:
    return events.filter((F.col("ts") >= since) & (F.col("ts") < until))


def _is(kind: str):
    return (F.col("kind") == kind).cast("long")


def throughput_per_second(win: DataFrame) -> DataFrame:
    """second (epoch s), node_id, address, enqueued, acknowledged: the finest grain."""
    return (
        win.filter(F.col("kind").isin(ENQUEUED, ACKNOWLEDGED))
        .groupBy(F.floor(F.col("ts") / 1000).cast("long").alias("second"), "node_id", "address")
        .agg(F.sum(_is(ENQUEUED)).alias("enqueued"), F.sum(_is(ACKNOWLEDGED)).alias("acknowledged"))
    )


def throughput_by(per_second: DataFrame, keys: list[str], seconds: float) -> DataFrame:
    """Totals, mean rates over the window and one-second peaks per `keys`."""
    per_key_second = per_second.groupBy("second", *keys).agg(
        F.sum("enqueued").alias("enqueued"), F.sum("acknowledged").alias("acknowledged")
    )
    return (
        per_key_second.groupBy(*keys)
        .agg(
            F.sum("enqueued").alias("enqueued"),
            F.sum("acknowledged").alias("acknowledged"),
            F.max("enqueued").alias("peak_enqueued_per_s"),
            F.max("acknowledged").alias("peak_acknowledged_per_s"),
        )
        .withColumn("enqueued_per_s", F.col("enqueued") / F.lit(seconds))
        .withColumn("acknowledged_per_s", F.col("acknowledged") / F.lit(seconds))
    )


def messages_by_address(win: DataFrame) -> DataFrame:
    """Distinct messages per address (a multicast message enqueued on three
    subscriptions is three ENQUEUED events but one message)."""
    return (
        win.filter(F.col("kind") == ENQUEUED)
        .select("address", "node_id", "message_id")
        .distinct()
        .groupBy("address")
        .agg(F.count(F.lit(1)).alias("messages"))
    )


def throughput_over_time(per_second: DataFrame, bucket_s: int) -> DataFrame:
    """Per node, enqueued/acknowledged per second averaged over buckets of `bucket_s`."""
    bucket = (F.floor(F.col("second") / bucket_s) * bucket_s).cast("long")
    return (
        per_second.groupBy(bucket.alias("second"), "node_id")
        .agg(
            (F.sum("enqueued") / bucket_s).alias("enqueued_per_s"),
            (F.sum("acknowledged") / bucket_s).alias("acknowledged_per_s"),
        )
    )


def chart_bucket_seconds(seconds: float, points: int = 600) -> int:
    """Bucket width for the throughput chart: at most `points` buckets, whole seconds."""
    return max(1, math.ceil(seconds / points))


def _acks_with_latency(win: DataFrame) -> DataFrame:
    return win.filter(F.col("kind") == ACKNOWLEDGED).withColumn("latency_ms", F.col("ts") - F.col("message_ts"))


def _latency_stats(grouped) -> DataFrame:
    quantiles = ", ".join(str(p) for p in PERCENTILES)
    return grouped.agg(
        F.count(F.lit(1)).alias("count"),
        F.min("latency_ms").alias("min_ms"),
        F.expr(f"percentile(latency_ms, array({quantiles}))").alias("_p"),
        F.max("latency_ms").alias("max_ms"),
        F.avg("latency_ms").alias("mean_ms"),
    ).select(
        "*",
        *(F.col("_p")[i].alias(f"p{round(p * 100)}_ms") for i, p in enumerate(PERCENTILES)),
    ).drop("_p")


def latency_by_address(win: DataFrame) -> DataFrame:
    """Enqueue -> acknowledge latency (ACKNOWLEDGED ts - message_ts) per address,
    exact percentiles (linear interpolation between ranks)."""
    return _latency_stats(_acks_with_latency(win).groupBy("address"))


def latency_overall(win: DataFrame) -> DataFrame:
    return _latency_stats(_acks_with_latency(win).groupBy())


def latency_histogram(win: DataFrame) -> DataFrame:
    """address, bin, lower_ms, upper_ms, count; bins are log-spaced (10 per decade)."""
    lat = F.col("latency_ms")
    bin_ = F.when(lat <= 0, F.lit(0)).otherwise(F.floor(F.log10(lat) * BINS_PER_DECADE).cast("int") + 1)
    counted = _acks_with_latency(win).groupBy("address", bin_.alias("bin")).agg(F.count(F.lit(1)).alias("count"))
    lower = F.when(F.col("bin") == 0, F.lit(None)).otherwise(F.pow(F.lit(10.0), (F.col("bin") - 1) / BINS_PER_DECADE))
    upper = F.when(F.col("bin") == 0, F.lit(0.0)).otherwise(F.pow(F.lit(10.0), F.col("bin") / BINS_PER_DECADE))
    return counted.select("address", "bin", lower.alias("lower_ms"), upper.alias("upper_ms"), "count")


def distribution(win: DataFrame, nodes: DataFrame) -> tuple[DataFrame, DataFrame]:
    """How evenly each address's messages were spread over the nodes.

    Returns (per_node, per_address): per_node has address, node_id, node_name,
    enqueued, share (of the address's total; every node of the report appears,
    with 0 where it got none); per_address has nodes, total, min, max, mean,
    cv (population stddev / mean) and max_over_mean (1.0 = perfectly even).
    """
    counts = win.filter(F.col("kind") == ENQUEUED).groupBy("address", "node_id").agg(
        F.count(F.lit(1)).alias("enqueued")
    )
    grid = (
        counts.select("address").distinct().crossJoin(nodes.select("node_id", "node_name"))
        .join(counts, ["address", "node_id"], "left")
        .fillna(0, ["enqueued"])
    )
    total = F.sum("enqueued").over(W.partitionBy("address"))
    per_node = grid.withColumn("share", F.col("enqueued") / total)
    per_address = (
        grid.groupBy("address")
        .agg(
            F.count(F.lit(1)).alias("nodes"),
            F.sum("enqueued").alias("total"),
            F.min("enqueued").alias("min"),
            F.max("enqueued").alias("max"),
            F.avg("enqueued").alias("mean"),
            F.stddev_pop("enqueued").alias("_sd"),
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


def ends_by_queue(win: DataFrame) -> DataFrame:
    """address, queue: expired, dead_lettered, removed and redelivered counts in the window."""
    return (
        win.filter(F.col("kind").isin(EXPIRED, DEAD_LETTERED, REMOVED, DELIVERED))
        .groupBy("address", "queue")
        .agg(
            F.sum(_is(EXPIRED)).alias("expired"),
            F.sum(_is(DEAD_LETTERED)).alias("dead_lettered"),
            F.sum(_is(REMOVED)).alias("removed"),
            F.sum(_is(DELIVERED)).alias("redelivered"),
        )
    )


def totals(win: DataFrame) -> dict[str, int]:
    """Event counts by kind in the window (every kind present, 0 where none;
    DELIVERED events are redeliveries only, hence the name)."""
    got = {row["kind"]: int(row["count"]) for row in win.groupBy("kind").count().collect()}
    names = {ENQUEUED: "enqueued", ACKNOWLEDGED: "acknowledged", DELIVERED: "redelivered",
             EXPIRED: "expired", DEAD_LETTERED: "dead_lettered", REMOVED: "removed"}
    return {name: got.get(kind, 0) for kind, name in names.items()}
