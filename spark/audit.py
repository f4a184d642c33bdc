"""The exactly-once audit (docs/journal-schema.md, "Exactly-once audit").

A produced message is a `(node_id, message_id, queue)` with an ENQUEUED event
in the window. Its ACKNOWLEDGED events are counted wherever they fall (an
acknowledgement after `--until` still counts): 1 is EXACTLY_ONCE, 0 NEVER,
2+ MORE_THAN_ONCE. For NEVER the `fate` says where it went: the EXPIRED,
DEAD_LETTERED or REMOVED event that ended it, WAITING when it is still in its
queue, else UNACCOUNTED (no acknowledgement, no end, not stored: the case an
operator must look at).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark.metrics import ACKNOWLEDGED, DEAD_LETTERED, ENQUEUED, EXPIRED, REMOVED

KEY = ["node_id", "message_id", "queue"]

EXACTLY_ONCE = "EXACTLY_ONCE"
NEVER = "NEVER"
MORE_THAN_ONCE = "MORE_THAN_ONCE"
WAITING = "WAITING"
UNACCOUNTED = "UNACCOUNTED"
FATES = (EXPIRED, DEAD_LETTERED, REMOVED, WAITING, UNACCOUNTED)


def audit(events: DataFrame, since: int, until: int, waiting_keys: DataFrame, produced_in: Column | None = None
          ) -> DataFrame:
    """One row per message reference produced in ``[since, until)`` (and,
    with `produced_in`, by an ENQUEUED event for which that condition holds).

    `events`: every event read (the window and after it); `waiting_keys`:
    node_id, message_id, queue of the live queue references. One shuffle: the
    events that matter and the waiting references are grouped by key once.
    Columns: node_id, message_id, queue, address, enqueued_ts,
    enqueued_events, acknowledged, first_ack_ts, last_ack_ts, status, fate.
    """
    kind, ts = F.col("kind"), F.col("ts")
    relevant = events.filter(kind.isin(ENQUEUED, ACKNOWLEDGED, EXPIRED, DEAD_LETTERED, REMOVED)).select(
        *KEY, "kind", "ts", "address", (F.lit(True) if produced_in is None else produced_in).alias("_in")
    )
    stored = waiting_keys.select(*KEY, F.lit(WAITING).alias("kind"), F.lit(None).cast("long").alias("ts"),
                                 F.lit(None).cast("string").alias("address"), F.lit(False).alias("_in"))
    produced = (kind == ENQUEUED) & (ts >= since) & (ts < until) & F.col("_in")
    is_ack = kind == ACKNOWLEDGED
    is_end = kind.isin(EXPIRED, DEAD_LETTERED, REMOVED)
    grouped = relevant.unionByName(stored).groupBy(*KEY).agg(
        F.sum(produced.cast("long")).alias("enqueued_events"),
        F.first(F.when(produced, F.col("address")), ignorenulls=True).alias("address"),
        F.min(F.when(produced, ts)).alias("enqueued_ts"),
        F.sum(is_ack.cast("long")).alias("acknowledged"),
        F.min(F.when(is_ack, ts)).alias("first_ack_ts"),
        F.max(F.when(is_ack, ts)).alias("last_ack_ts"),
        F.max_by(F.when(is_end, kind), F.when(is_end, ts)).alias("end_kind"),
        F.max((kind == WAITING).cast("int")).alias("waiting"),
    )
    ack = F.col("acknowledged")
    return (
        grouped.filter(F.col("enqueued_events") > 0)
        .withColumn(
            "status",
            F.when(ack == 1, F.lit(EXACTLY_ONCE)).when(ack == 0, F.lit(NEVER)).otherwise(F.lit(MORE_THAN_ONCE)),
        )
        .withColumn(
            "fate",
            F.when(ack > 0, F.lit(ACKNOWLEDGED))
            .when(F.col("end_kind").isNotNull(), F.col("end_kind"))
            .when(F.col("waiting") == 1, F.lit(WAITING))
            .otherwise(F.lit(UNACCOUNTED)),
        )
        .drop("end_kind", "waiting")
    )


def offender_sort_key(row: dict) -> tuple:
    """The order of `offenders`, for rows already collected (a cached frame may come back in any order)."""
    rank = 0 if row["status"] == MORE_THAN_ONCE else 1 if row["fate"] == UNACCOUNTED else 2
    return (rank, row["node_id"], row["queue"], row["message_id"])


def offenders(audited: DataFrame) -> DataFrame:
    """Every reference not acknowledged exactly once, the worst first:
    MORE_THAN_ONCE, then UNACCOUNTED, then the explained NEVERs."""
    rank = (
        F.when(F.col("status") == MORE_THAN_ONCE, 0)
        .when(F.col("fate") == UNACCOUNTED, 1)
        .otherwise(2)
    )
    return (
        audited.filter(F.col("status") != EXACTLY_ONCE)
        .orderBy(rank, "node_id", "queue", "message_id")
    )


def summarize(audited: DataFrame) -> dict:
    """Counts by status, and the NEVERs by fate (every key present)."""
    rows = audited.groupBy("status", "fate").count().collect()
    by_status = {EXACTLY_ONCE: 0, NEVER: 0, MORE_THAN_ONCE: 0}
    never_by_fate = {fate: 0 for fate in FATES}
    for row in rows:
        by_status[row["status"]] += int(row["count"])
        if row["status"] == NEVER:
            never_by_fate[row["fate"]] += int(row["count"])
    return {
        "produced": sum(by_status.values()),
        "exactly_once": by_status[EXACTLY_ONCE],
        "never": by_status[NEVER],
        "more_than_once": by_status[MORE_THAN_ONCE],
        "never_by_fate": {fate.lower(): n for fate, n in never_by_fate.items()},
    }
