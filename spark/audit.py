"""The exactly-once audit (docs/analytics.md, "Exactly-once audit").

What is audited is a *delivery*: one message on one queue, followed across
the cluster. A message keeps its identity where the journal records where it
came from: a forwarded message's ENQUEUED names the sending node and message
(`from_node_id`, `from_message_id`), so every message resolves to its *root*
(the node and id it had when a client produced it). A delivery is
``(root node, root message id, queue)``: scale-down and redistribution move a
message to the queue of the same name on another node (the same delivery); a
bridge carries it from the store-and-forward queue ``$.meshmq.sf.<cc>.<node>``
into the target's queue. The store-and-forward reference of a message that
arrived is transport, not a delivery: its ACKNOWLEDGED is the target's
confirmation, not a consumer's. Network connectors and the tree connector
forward the same way, from ``$.meshmq.sf.network.<connector>.<node>`` and
``$.meshmq.sf.tree.<node>``; a topic message first waits in the link's
network subscription queue ``$.meshmq.net.<link>.<address>`` and moves from
there into the store-and-forward queue (REMOVED there, the copy naming it as
its origin): that reference is transport too, once moved.

Per delivery the audit counts the ENQUEUED events (a move to another node is
not a second enqueue), the consumer acknowledgements and redeliveries, and
how it ended. A delivery is an *anomaly* when

* ACKNOWLEDGED_WITHOUT_ENQUEUE — acknowledged, and no ENQUEUED in the log
  (though the message was accepted inside the window, so it would be there);
* DELIVERED_WITHOUT_ENQUEUE — redelivered (a DELIVERED event), same;
* ACKNOWLEDGED_MORE_THAN_ONCE — two or more acknowledgements;
* ENQUEUED_MORE_THAN_ONCE — two or more ENQUEUED (also: forwarded twice);
* NEVER_ACKNOWLEDGED — no acknowledgement, not waiting, and no event that
  ended it (fate UNACCOUNTED).

Otherwise it is EXACTLY_ONCE (one acknowledgement) or EXPLAINED by its fate:
WAITING (still stored), EXPIRED, DEAD_LETTERED, REMOVED (by an operator:
purge, delete, move — the copy a move makes is a delivery of its own, as a
dead-letter copy is), or FORWARDED (confirmed to a node whose store is not in
the report). Explained deliveries are counted, not listed as offenders.

A dead-letter or expiry copy is stored under a new message id on the same
node, its ENQUEUED naming the original (services/router/dead_letter.py): it
resolves to the original's root, and its delivery (on the dead-letter or
expiry queue) is marked `copy_of` DEAD_LETTERED or EXPIRED — audited like any
other, but counted apart from what producers sent. Every delivery lists its
`copies`: each stored reference (node, message id) it had, so an anomaly
spanning two nodes names both.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark.metrics import (
    ACKNOWLEDGED,
    DEAD_LETTERED,
    DELIVERED,
    ENQUEUED,
    EXPIRED,
    PERCENTILES,
    REMOVED,
    TRANSPORT_PREFIX,
)

KEY = ["node_id", "message_id", "queue"]
SF_PREFIX = "$.meshmq.sf."
#: A network or tree link's topic subscriptions (services/router/network/subscription.py).
NETWORK_SUBSCRIPTION_PREFIX = "$.meshmq.net."
#: A chain of forwards longer than this is not followed further (max-hops is 1 by default).
MAX_HOPS = 8

EXACTLY_ONCE = "EXACTLY_ONCE"
EXPLAINED = "EXPLAINED"
ANOMALY = "ANOMALY"

ACKNOWLEDGED_WITHOUT_ENQUEUE = "ACKNOWLEDGED_WITHOUT_ENQUEUE"
DELIVERED_WITHOUT_ENQUEUE = "DELIVERED_WITHOUT_ENQUEUE"
ACKNOWLEDGED_MORE_THAN_ONCE = "ACKNOWLEDGED_MORE_THAN_ONCE"
ENQUEUED_MORE_THAN_ONCE = "ENQUEUED_MORE_THAN_ONCE"
NEVER_ACKNOWLEDGED = "NEVER_ACKNOWLEDGED"
#: The anomalies, the worst first (a delivery's `anomaly` is the first that applies).
ANOMALIES = (ACKNOWLEDGED_WITHOUT_ENQUEUE, DELIVERED_WITHOUT_ENQUEUE, ACKNOWLEDGED_MORE_THAN_ONCE,
             ENQUEUED_MORE_THAN_ONCE, NEVER_ACKNOWLEDGED)

WAITING = "WAITING"
FORWARDED = "FORWARDED"
UNACCOUNTED = "UNACCOUNTED"
#: How a delivery that was not acknowledged ended (UNACCOUNTED is the anomaly NEVER_ACKNOWLEDGED).
FATES = (WAITING, EXPIRED, DEAD_LETTERED, REMOVED, FORWARDED, UNACCOUNTED)


def references(events: DataFrame, since: int, waiting_keys: DataFrame, produced_in: Column | None = None
               ) -> DataFrame:
    """One row per queue reference ``(node_id, message_id, queue)`` seen in
    the events or stored now, with its counts (one shuffle)."""
    kind, ts = F.col("kind"), F.col("ts")
    snap = F.lit(True) if produced_in is None else produced_in
    relevant = events.filter(kind.isin(ENQUEUED, ACKNOWLEDGED, DELIVERED, EXPIRED, DEAD_LETTERED, REMOVED)).select(
        *KEY, "kind", "ts", "address", "message_ts", "from_node_id", "from_message_id", snap.alias("_in")
    )
    stored = waiting_keys.select(
        *KEY, F.lit(WAITING).alias("kind"), F.lit(None).cast("long").alias("ts"),
        F.lit(None).cast("string").alias("address"), F.lit(None).cast("long").alias("message_ts"),
        F.lit(None).cast("string").alias("from_node_id"), F.lit(None).cast("long").alias("from_message_id"),
        F.lit(False).alias("_in"),
    )
    is_enq, is_ack, is_del = kind == ENQUEUED, kind == ACKNOWLEDGED, kind == DELIVERED
    is_end = kind.isin(EXPIRED, DEAD_LETTERED, REMOVED)
    # An acknowledgement or redelivery of a message accepted inside the window
    # (and inside the snapshot): its ENQUEUED must be in the log read.
    visible = (is_ack | is_del) & F.col("_in") & (F.col("message_ts") >= since)
    # Grouped by message: the event table comes hashed by (node_id, message_id) (spark/report.py), so
    # with the stored references hashed the same way the grouping needs no exchange, and the
    # references leave it hashed by message, which the joins in `deliveries` then need.
    stored = stored.repartition("node_id", "message_id")
    return relevant.unionByName(stored).groupBy(*KEY).agg(
        F.sum(is_enq.cast("long")).alias("enq"),
        F.min(F.when(is_enq, ts)).alias("enqueued_ts"),
        F.max(F.when(is_enq, F.col("_in"))).alias("enq_in_snapshot"),
        F.first(F.when(is_enq, F.col("address")), ignorenulls=True).alias("_enq_address"),
        F.first("address", ignorenulls=True).alias("_any_address"),
        F.first("from_node_id", ignorenulls=True).alias("from_node_id"),
        F.first("from_message_id", ignorenulls=True).alias("from_message_id"),
        F.sum(is_ack.cast("long")).alias("acks"),
        F.min(F.when(is_ack, ts)).alias("first_ack_ts"),
        F.max(F.when(is_ack, ts)).alias("last_ack_ts"),
        F.sum(is_del.cast("long")).alias("redelivered"),
        F.max_by(F.when(is_end, kind), F.when(is_end, ts)).alias("end_kind"),
        F.max(F.when(is_end, ts)).alias("end_ts"),
        F.max((kind == WAITING).cast("int")).alias("waiting"),
        F.max(visible.cast("int")).alias("visible"),
    ).withColumn("address", F.coalesce("_enq_address", "_any_address")).drop("_enq_address", "_any_address")


def roots(refs: DataFrame) -> DataFrame:
    """node_id, message_id -> root_node_id, root_message_id for every message
    that arrived from another node, following chains of forwards."""
    edges = refs.filter(F.col("from_node_id").isNotNull()).select(
        "node_id", "message_id", "from_node_id", "from_message_id").distinct()
    resolved = edges.select("node_id", "message_id", F.col("from_node_id").alias("root_node_id"),
                            F.col("from_message_id").alias("root_message_id"))
    parents = edges.select(F.col("node_id").alias("_c_node"), F.col("message_id").alias("_c_mid"),
                           F.col("from_node_id").alias("_p_node"), F.col("from_message_id").alias("_p_mid"))
    for _ in range(MAX_HOPS):
        step = resolved.join(parents, (F.col("root_node_id") == F.col("_c_node"))
                             & (F.col("root_message_id") == F.col("_c_mid")), "left")
        if step.filter(F.col("_p_node").isNotNull()).limit(1).count() == 0:
            break
        resolved = step.select("node_id", "message_id",
                               F.coalesce("_p_node", "root_node_id").alias("root_node_id"),
                               F.coalesce("_p_mid", "root_message_id").alias("root_message_id")).localCheckpoint()
    return resolved


def audit(events: DataFrame, since: int, until: int, waiting_keys: DataFrame, produced_in: Column | None = None,
          report_nodes: list[str] | None = None, group_every_reference: bool = False) -> DataFrame:
    """One row per delivery produced in ``[since, until)`` (within the
    snapshot `produced_in`), plus the acknowledgements and redeliveries of
    messages with no ENQUEUED at all.

    `events`: every event read (the window and after it); `waiting_keys`:
    node_id, message_id, queue of the stored references; `report_nodes`: the
    node ids whose stores are in the report (None: treat every target as in);
    `group_every_reference`: the plain plan, every reference through the
    grouping (the same figures, slower; tests compare the two).
    Columns: root_node_id, root_message_id, queue, address, node_id and
    message_id (where it ended), enqueued_ts, enqueued_events, refs, moves,
    crossed, acknowledged, first_ack_ts, last_ack_ts, redelivered, status,
    anomaly, anomalies, fate.
    """
    # Computed once: roots and deliveries read the references five times over, and a
    # checkpoint (kept while the result is in use) also spares the planner that whole tree in each.
    refs = references(events, since, waiting_keys, produced_in).localCheckpoint()
    return deliveries(refs, since, until, roots(refs), report_nodes, group_every_reference)


def copy_links(refs: DataFrame) -> DataFrame:
    """node_id, message_id -> copy_of (DEAD_LETTERED or EXPIRED) for each
    dead-letter or expiry copy: a message stored in a client queue (not an
    internal one) whose ENQUEUED names an original on the same node that
    ended DEAD_LETTERED or EXPIRED. (Same-node links are otherwise only a
    store-and-forward copy's, always in an internal queue.) When the original
    ended both ways on two queues, the end nearest the copy's ENQUEUED."""
    col = F.col
    children = refs.filter((col("from_node_id") == col("node_id")) & ~col("queue").startswith(TRANSPORT_PREFIX)
                           ).select("node_id", "message_id", "from_node_id", "from_message_id", "enqueued_ts")
    ends = refs.filter(col("end_kind").isin(DEAD_LETTERED, EXPIRED)).select(
        col("node_id").alias("from_node_id"), col("message_id").alias("from_message_id"),
        col("end_kind").alias("_kind"), col("end_ts").alias("_end_ts"))
    return children.join(ends, ["from_node_id", "from_message_id"]).groupBy("node_id", "message_id").agg(
        F.min_by("_kind", F.abs(F.coalesce(col("_end_ts") - col("enqueued_ts"), F.lit(0)))).alias("copy_of"))


def deliveries(refs: DataFrame, since: int, until: int, root_map: DataFrame, report_nodes: list[str] | None,
               group_every_reference: bool = False) -> DataFrame:
    col = F.col
    copies = copy_links(refs)
    # Per message, the references that name it as their origin: `_children` is not null when it has any,
    # `_arrived_targets` the nodes a forward or move carried it to (a dead-letter or expiry copy did not).
    # Keyed by message alone, as `refs` is hashed: a join on another key would reshuffle every reference.
    children = refs.filter(col("from_node_id").isNotNull()).join(copies, ["node_id", "message_id"], "left").select(
        col("from_node_id").alias("node_id"), col("from_message_id").alias("message_id"),
        F.when(col("copy_of").isNull(), col("node_id")).alias("_target"))
    arrived = children.groupBy("node_id", "message_id").agg(
        F.collect_set("_target").alias("_arrived_targets"), F.lit(True).alias("_children"))
    is_sf = col("queue").startswith(SF_PREFIX)
    target = F.substring_index(col("queue"), ".", -1)
    r = (
        refs.join(root_map, ["node_id", "message_id"], "left")
        .withColumn("_rooted", col("root_node_id").isNotNull())  # the message came from another (any queue)
        .withColumn("root_node_id", F.coalesce("root_node_id", "node_id"))
        .withColumn("root_message_id", F.coalesce("root_message_id", "message_id"))
        .withColumn("_target", F.when(is_sf, target))
        .join(arrived, ["node_id", "message_id"], "left")
        .withColumn("_arrived_any", F.coalesce(F.size("_arrived_targets") > 0, F.lit(False)))
        .withColumn("_arrived_at", F.coalesce(F.array_contains("_arrived_targets", col("_target")), F.lit(False)))
        .join(copies, ["node_id", "message_id"], "left")
    )
    moved = ~is_sf & (col("end_kind") == REMOVED) & (col("acks") == 0) & (col("waiting") == 0) & col("_arrived_any")
    # transport: followed into the target's queue, or (a network subscription's) into a link's sf queue
    r = r.filter(~(is_sf & col("_arrived_at")) & ~(col("queue").startswith(NETWORK_SUBSCRIPTION_PREFIX) & moved))
    in_report = F.lit(True) if report_nodes is None else col("_target").isin(list(report_nodes))
    # A stored-and-forwarded reference that never arrived: its "acks" are the target's confirmations.
    sf_out = is_sf & (col("acks") > 0) & ~in_report
    consumer_acks = F.when(is_sf, F.lit(0)).otherwise(col("acks"))
    r = r.withColumn("_acks", consumer_acks).withColumn("_moved", moved.cast("int")).withColumn(
        "_out", sf_out.cast("int")).withColumn(
        "_shared", (F.lit(group_every_reference) | col("_rooted") | col("_children").isNotNull()).cast("int"))

    # A delivery's references: only one of a message that came from another or that another came from
    # can share its delivery (any other is its own root, and nothing resolves to it). Per message, not
    # per reference: a reference whose own events name no origin (only an acknowledgement read) still
    # has its message's root. Those are grouped; every other
    # reference is a delivery of its own, its figures the same aggregates over one row, computed
    # row by row (grouping half a million references was the audit's dearest step).
    figures = _delivery_figures()
    copy = F.struct(F.coalesce("enqueued_ts", "first_ack_ts", "end_ts").alias("ts"),
                    *_copy_fields("node_id", "message_id", "enq", "_acks", "_moved", "end_kind", "waiting"))
    keys = ["root_node_id", "root_message_id", "queue"]
    grouped = r.filter(col("_shared") == 1).groupBy(*keys).agg(
        *(agg.alias(name) for name, agg, _ in figures),
        # every stored reference of the delivery, oldest first: an anomaly on two nodes names both
        F.array_sort(F.collect_list(copy)).alias("_copies"))
    alone = r.filter(col("_shared") == 0).select(
        *keys, *(one.alias(name) for name, _, one in figures), F.array(copy).alias("_copies"))
    units = grouped.unionByName(alone)
    # Every reference removed and followed elsewhere is a move, except that
    # when all of them were, the last one's REMOVED is how the delivery ended.
    moves = F.when(col("_moves") >= col("refs"), col("refs") - 1).otherwise(col("_moves"))
    units = units.withColumn("moves", moves).withColumn("enqueued_events", col("_enq") - col("moves"))
    produced = (col("_enq") > 0) & (col("enqueued_ts") >= since) & (col("enqueued_ts") < until) & col("_in")
    orphan = (col("_enq") == 0) & (col("_visible") == 1)
    units = units.filter(produced | orphan)

    ack = col("acknowledged")
    fate = (
        F.when(ack > 0, F.lit(ACKNOWLEDGED))
        .when(col("_end").isNotNull(), col("_end"))
        .when(col("waiting") == 1, F.lit(WAITING))
        .when(col("_out") == 1, F.lit(FORWARDED))
        .otherwise(F.lit(UNACCOUNTED))
    )
    units = units.withColumn("fate", fate)
    conditions = {
        ACKNOWLEDGED_WITHOUT_ENQUEUE: (col("_enq") == 0) & (ack > 0),
        DELIVERED_WITHOUT_ENQUEUE: (col("_enq") == 0) & (col("redelivered") > 0),
        ACKNOWLEDGED_MORE_THAN_ONCE: ack > 1,
        ENQUEUED_MORE_THAN_ONCE: col("enqueued_events") > 1,
        NEVER_ACKNOWLEDGED: (col("_enq") > 0) & (ack == 0) & (col("fate") == UNACCOUNTED),
    }
    anomalies = F.array_compact(F.array(*(F.when(cond, F.lit(name)) for name, cond in conditions.items())))
    return (
        units.withColumn("anomalies", anomalies)
        .withColumn("anomaly", F.get(col("anomalies"), 0))
        .withColumn("status", F.when(F.size("anomalies") > 0, F.lit(ANOMALY))
                    .when(ack == 1, F.lit(EXACTLY_ONCE)).otherwise(F.lit(EXPLAINED)))
        .withColumn("crossed", col("_crossed") == 1)
        .withColumn("copies", F.transform("_copies", lambda c: c.dropFields("ts")))
        .select("root_node_id", "root_message_id", "queue", "address", "node_id", "message_id", "enqueued_ts",
                "enqueued_events", "refs", "moves", "crossed", "acknowledged", "first_ack_ts", "last_ack_ts",
                "redelivered", "status", "anomaly", "anomalies", "fate", "copy_of", "copies")
    )


def _delivery_figures() -> list[tuple[str, Column, Column]]:
    """(name, aggregate over a delivery's references, the same for a delivery
    of one reference) for each figure of a delivery, over the columns
    `deliveries` gives each reference. One definition for both, so the two
    kinds of delivery cannot drift apart."""
    col = F.col

    def max_by(value: Column, order: Column) -> tuple[Column, Column]:
        return F.max_by(value, order), F.when(order.isNotNull(), value)  # max_by skips a null order

    def whole(agg, c: Column) -> tuple[Column, Column]:  # sum, min, max, first of one row: the row's value
        return agg(c), c

    def first(c: Column) -> tuple[Column, Column]:
        return F.first(c, ignorenulls=True), c

    def coalesce(*pairs: tuple[Column, Column]) -> tuple[Column, Column]:
        return F.coalesce(*(a for a, _ in pairs)), F.coalesce(*(o for _, o in pairs))

    acked = col("_acks") > 0
    kept = col("end_kind").isNotNull() & (col("_moved") == 0)
    newest = F.coalesce("enqueued_ts", "last_ack_ts", "end_ts", F.lit(0))
    pairs = {
        "refs": (F.count(F.lit(1)), F.lit(1).cast("long")),
        "_moves": whole(F.sum, col("_moved").cast("long")),
        "_enq": whole(F.sum, col("enq")),
        "enqueued_ts": whole(F.min, col("enqueued_ts")),
        "_in": whole(F.max, col("enq_in_snapshot")),
        "address": first(col("address")),
        "acknowledged": whole(F.sum, col("_acks").cast("long")),
        "first_ack_ts": whole(F.min, F.when(acked, col("first_ack_ts"))),
        "last_ack_ts": whole(F.max, F.when(acked, col("last_ack_ts"))),
        "redelivered": whole(F.sum, col("redelivered")),
        "waiting": whole(F.max, col("waiting")),
        "_out": whole(F.max, col("_out")),
        "_visible": whole(F.max, col("visible")),
        "_end": coalesce(max_by(F.when(kept, col("end_kind")), F.when(kept, col("end_ts"))),
                         max_by(col("end_kind"), col("end_ts"))),
        # where it ended: the reference a consumer acknowledged, else the newest one
        "node_id": coalesce(max_by(F.when(acked, col("node_id")), F.when(acked, col("last_ack_ts"))),
                            max_by(col("node_id"), newest)),
        "message_id": coalesce(max_by(F.when(acked, col("message_id")), F.when(acked, col("last_ack_ts"))),
                               max_by(col("message_id"), newest)),
        "_crossed": whole(F.max, (col("node_id") != col("root_node_id")).cast("int")),
        "copy_of": first(col("copy_of")),
    }
    return [(name, agg, one) for name, (agg, one) in pairs.items()]


def _copy_fields(node_id: str, message_id: str, enqueued: str, acknowledged: str, moved: str, end_kind: str,
                 waiting: str) -> list[Column]:
    """A reference's entry in its delivery's `copies`, from the named columns
    (a reference's in the grouping, a one-reference delivery's after it)."""
    col = F.col
    fate = F.when(col(moved) == 1, F.lit("MOVED")).otherwise(F.coalesce(
        F.when(col(acknowledged) > 0, F.lit(ACKNOWLEDGED)), col(end_kind), F.when(col(waiting) == 1, F.lit(WAITING))))
    return [col(node_id).alias("node_id"), col(message_id).alias("message_id"), col(enqueued).alias("enqueued"),
            col(acknowledged).alias("acknowledged"), fate.alias("fate")]


def bridge_traffic(refs: DataFrame, since: int, until: int) -> DataFrame:
    """Per node and store-and-forward queue: node_id, cluster_connection,
    target_node_id, queued (ENQUEUED in the window), forwarded (confirmed by
    the target), arrived (found in a store of the report), waiting."""
    col = F.col
    sf = refs.filter(col("queue").startswith(SF_PREFIX) & (col("enqueued_ts") >= since)
                     & (col("enqueued_ts") < until))
    arrivals = refs.filter(col("from_node_id").isNotNull()).select(
        col("from_node_id").alias("node_id"), col("from_message_id").alias("message_id"),
        col("node_id").alias("target_node_id")).distinct().withColumn("_arrived", F.lit(1))
    return (
        sf.withColumn("target_node_id", F.substring_index(col("queue"), ".", -1))
        .withColumn("cluster_connection", F.regexp_extract(col("queue"), r"^\$\.meshmq\.sf\.(.*)\.[^.]+$", 1))
        .join(arrivals, ["node_id", "message_id", "target_node_id"], "left")
        .groupBy("node_id", "cluster_connection", "target_node_id")
        .agg(F.sum("enq").alias("queued"), F.sum((col("acks") > 0).cast("long")).alias("forwarded"),
             F.sum(F.coalesce("_arrived", F.lit(0))).alias("arrived"), F.sum("waiting").alias("waiting"))
    )


def bridge_latency(refs: DataFrame, since: int, until: int) -> DataFrame:
    """Per link (node_id, cluster_connection, target_node_id): how long the
    target took to confirm, from a reference's ENQUEUED in the
    store-and-forward queue to its ACKNOWLEDGED (the bridge's confirmation,
    kept out of the consumers' latency): count, min, p50, p90, p99, max, mean."""
    col = F.col
    confirmed = refs.filter(col("queue").startswith(SF_PREFIX) & (col("acks") > 0) & (col("enqueued_ts") >= since)
                            & (col("enqueued_ts") < until))
    quantiles = ", ".join(str(p) for p in PERCENTILES)
    return (
        confirmed.select(
            "node_id", F.substring_index(col("queue"), ".", -1).alias("target_node_id"),
            F.regexp_extract(col("queue"), r"^\$\.meshmq\.sf\.(.*)\.[^.]+$", 1).alias("cluster_connection"),
            (col("first_ack_ts") - col("enqueued_ts")).alias("latency_ms"))
        .groupBy("node_id", "cluster_connection", "target_node_id")
        .agg(F.count(F.lit(1)).alias("count"), F.min("latency_ms").alias("min_ms"),
             F.expr(f"percentile(latency_ms, array({quantiles}))").alias("_p"), F.max("latency_ms").alias("max_ms"),
             F.avg("latency_ms").alias("mean_ms"))
        .select("*", *(col("_p")[i].alias(f"p{round(p * 100)}_ms") for i, p in enumerate(PERCENTILES)))
        .drop("_p")
    )


def offender_sort_key(row: dict) -> tuple:
    """The order of `offenders`, for rows already collected (a cached frame may come back in any order)."""
    return (ANOMALIES.index(row["anomaly"]), row["node_id"], row["queue"], row["message_id"])


def offenders(audited: DataFrame) -> DataFrame:
    """Every anomaly, the worst first (the order of ANOMALIES)."""
    rank = F.array_position(F.array(*(F.lit(a) for a in ANOMALIES)), F.col("anomaly"))
    return audited.filter(F.col("status") == ANOMALY).orderBy(rank, "node_id", "queue", "message_id")


def summary_counts(audited: DataFrame) -> DataFrame:
    """The few rows summarize folds: deliveries per status, fate, anomalies,
    crossed and copy_of (a report collects it with its other small results)."""
    return audited.groupBy("status", "fate", "anomalies", "crossed", "copy_of").agg(
        F.count(F.lit(1)).alias("n"), F.sum("moves").alias("moves"),
        F.sum((F.col("enqueued_events") > 0).cast("long")).alias("produced"))


def summarize(audited: DataFrame) -> dict:
    """Counts: produced deliveries (what producers sent: dead-letter and
    expiry copies apart, in `copies`), exactly once, explained by fate,
    anomalies by kind (a delivery with two anomalies counts in both; copies
    included), the verdict (red when any delivery, copy or not, is an anomaly)."""
    return summarize_counts([r.asDict() for r in summary_counts(audited).collect()])


def summarize_counts(rows: list[dict]) -> dict:
    """summarize, from summary_counts' rows already collected."""
    explained = {fate.lower(): 0 for fate in FATES if fate != UNACCOUNTED}
    anomalies = {a.lower(): 0 for a in ANOMALIES}
    out = {"produced": 0, "exactly_once": 0, "explained": 0, "anomalous": 0, "crossed_nodes": 0, "moves": 0}
    copies = {"dead_lettered": 0, "expired": 0, "exactly_once": 0, "explained": 0, "anomalous": 0,
              "explained_by_fate": {fate.lower(): 0 for fate in FATES if fate != UNACCOUNTED}}
    for row in rows:
        n = int(row["n"])
        out["moves"] += int(row["moves"] or 0)
        counts, by_fate = (out, explained) if row["copy_of"] is None else (copies, copies["explained_by_fate"])
        if row["copy_of"] is None:
            out["produced"] += int(row["produced"])
            out["crossed_nodes"] += n if row["crossed"] else 0
        else:
            copies[row["copy_of"].lower()] += n
        if row["status"] == EXACTLY_ONCE:
            counts["exactly_once"] += n
        elif row["status"] == EXPLAINED:
            counts["explained"] += n
            by_fate[row["fate"].lower()] += n
        else:
            counts["anomalous"] += n
            for a in row["anomalies"]:
                anomalies[a.lower()] += n
    red = out["anomalous"] + copies["anomalous"] > 0
    return {**out, "explained_by_fate": explained, "copies": copies, "anomalies": anomalies,
            "verdict": "red" if red else "green"}
