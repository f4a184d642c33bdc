"""The report job: stores in, Parquet + JSON + PNG + HTML out.

    spark = spark.session.start_session()
    summary = run_report(spark, ["sqlite:////data/a/journal.db", "sqlite:////data/b/journal.db"], "out/")

Output directory layout:

    summary.json            every figure below, offenders (up to a limit)
    report.html             one self-contained page (charts embedded)
    charts/*.png            throughput.png, latency_over_time.png, activity.png,
                            latency.png, distribution.png
    parquet/<table>/        throughput_per_second, throughput_by_address,
                            throughput_by_node, latency_by_address,
                            latency_histogram, distribution_by_node,
                            distribution_by_address, backlog, ends_by_queue,
                            latency_by_node, audit, audit_offenders,
                            bridge_traffic, bridge_latency, message_ends
    spark.log               the JVM's output (when the CLI started Spark)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import reduce
from pathlib import Path

from spark import audit as audit_mod
from spark import charts, html_report, metrics
from spark.errors import AnalyticsError, explain
from spark.jdbc import Store, parse_store_url
from spark.store import (
    EVENT_SCHEMA,
    NodeStore,
    check_distinct_nodes,
    open_store,
    read_events,
    read_live,
    snapshot_condition,
)
from spark.window import Window, iso, now_ms

DEFAULT_OFFENDERS_IN_SUMMARY = 1000


def default_partitions(spark) -> int:
    """Two JDBC partitions per core Spark has (local[*]: the machine's cores)."""
    return max(1, 2 * int(spark.sparkContext.defaultParallelism))


def run_report(
    spark,
    stores: list[str | Store],
    out_dir: str | Path,
    *,
    window: Window = Window(),
    partitions: int | None = None,
    offenders_limit: int = DEFAULT_OFFENDERS_IN_SUMMARY,
    on_step: Callable[[str], None] | None = None,
) -> dict:
    """Run the whole report and return the summary (also written to summary.json).

    Raises AnalyticsError, with one line naming the store or the problem, for
    bad input and for failures inside Spark.
    """
    parsed = [s if isinstance(s, Store) else parse_store_url(s) for s in stores]
    if not parsed:
        raise AnalyticsError("no store given: name at least one with --store")
    try:
        return _run(spark, parsed, Path(out_dir), window, partitions or default_partitions(spark), offenders_limit,
                    on_step or (lambda _step: None))
    except AnalyticsError:
        raise
    except Exception as exc:
        if type(exc).__module__.startswith(("py4j", "pyspark")):
            raise AnalyticsError(f"the Spark job failed: {explain(exc)}") from exc
        raise


def after_retention(nodes: list[NodeStore], since: int, until: int) -> tuple[int, str | None]:
    """The window's start, moved to where every store still has all of its
    events (journal.event-retention deletes the oldest): before that, a
    message's ENQUEUED may be gone while its acknowledgement is not, and the
    audit would call it an anomaly. With a note saying so, when it moved."""
    pruned = [n for n in nodes if n.kept_from is not None and n.kept_from > since]
    if not pruned:
        return since, None
    horizon = max(n.kept_from for n in pruned)
    names = ", ".join(n.node_name for n in pruned)
    return min(horizon, until), (f"the window starts at {iso(horizon)}: event retention deleted the events "
                                 f"before it on {names} (journal.event-retention)")


def _run(spark, stores: list[Store], out: Path, window: Window, partitions: int, offenders_limit: int,
         step: Callable[[str], None]) -> dict:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.monotonic()
    now = now_ms()
    step("checking stores")
    nodes = [open_store(spark, store, window.since) for store in stores]
    check_distinct_nodes(nodes)
    _refuse_empty(nodes)
    notes = [f"store {n.display} (node {n.node_name}) has no events yet" for n in nodes if n.events == 0]

    with_events = [n for n in nodes if n.events]
    since = window.since if window.since is not None else min(n.first_ts for n in with_events)
    until = window.until if window.until is not None else max(n.last_ts for n in with_events) + 1
    since, retention_note = after_retention(nodes, since, until)
    if retention_note:
        notes.append(retention_note)
    seconds = max(until - since, 1) / 1000.0

    # Order matters on a live store. The bounds (taken above) come first, then
    # the live queues, then the event log: a message produced up to the bounds
    # is then either in the queues snapshot or has its acknowledgement or end
    # event in the log read after it (both are written in one transaction), so
    # a message in flight is never mistaken for a lost one.
    step("reading queues and waiting messages")
    live = [read_live(spark, n, partitions) for n in nodes]
    queues = _union([q for q, _ in live]).persist()
    waiting = _union([w for _, w in live]).persist(StorageLevel.MEMORY_AND_DISK)
    queues.count()
    waiting.count()
    nodes_df = spark.createDataFrame([(n.node_id, n.node_name) for n in nodes], "node_id STRING, node_name STRING")

    step(f"reading events ({partitions} JDBC partition(s) per store)")
    frames = [f for f in (read_events(spark, n, partitions) for n in nodes) if f is not None]
    if not frames:  # --since after every store's last event
        frames = [spark.createDataFrame([], EVENT_SCHEMA)]
    events = _union(frames).persist(StorageLevel.MEMORY_AND_DISK)
    events_read = events.count()

    # Figures are of the log up to the bounds; the audit also counts acknowledgements after them.
    # Not cached apart: a filter over the cached events is cheaper than a second copy.
    win = metrics.in_window(events.filter(snapshot_condition(nodes)), since, until)

    tables = _Tables(out / "parquet")
    # The audit first: the distinct messages and the distribution count its deliveries.
    step("exactly-once audit")
    names = {n.node_id: n.node_name for n in nodes}
    waiting_keys = waiting.join(queues.select("node_id", "queue_id", "queue"), ["node_id", "queue_id"])
    refs = audit_mod.references(events, since, waiting_keys, produced_in=snapshot_condition(nodes))
    refs = refs.persist(StorageLevel.MEMORY_AND_DISK)
    audited = audit_mod.deliveries(refs, since, until, audit_mod.roots(refs), list(names))
    audited = audited.persist(StorageLevel.MEMORY_AND_DISK)
    tables.write("audit", audited, small=False)
    audit_summary = audit_mod.summarize(audited)
    # Join first, then order: a join reshuffles rows, so ordering before it would be lost.
    offenders = tables.write("audit_offenders", audit_mod.offenders(audited.join(nodes_df, "node_id", "left")))
    offender_rows = sorted(
        (_name_copies(r.asDict(recursive=True), names) for r in offenders.limit(offenders_limit).collect()),
        key=audit_mod.offender_sort_key,
    )
    bridge_rows = tables.write_collect("bridge_traffic", audit_mod.bridge_traffic(refs, since, until),
                                       sort=("node_id", "cluster_connection", "target_node_id"))
    confirm_rows = tables.write_collect("bridge_latency", audit_mod.bridge_latency(refs, since, until))
    confirms = {(r["node_id"], r["cluster_connection"], r["target_node_id"]): r for r in confirm_rows}
    for r in bridge_rows:
        r["node_name"], r["target_node_name"] = names.get(r["node_id"], r["node_id"]), names.get(r["target_node_id"])
        c = confirms.get((r["node_id"], r["cluster_connection"], r["target_node_id"]))
        r["confirm_latency_ms"] = ({k: c[k] for k in ("count", "min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms",
                                                     "mean_ms")} if c else None)
    end_rows = tables.write_collect("message_ends", audited.groupBy(
        F.col("root_node_id").alias("produced_on"), F.col("node_id").alias("ended_on"), "fate").count(),
        sort=("produced_on", "ended_on", "fate"))
    for r in end_rows:
        r["produced_on_name"] = names.get(r["produced_on"], r["produced_on"])
        r["ended_on_name"] = names.get(r["ended_on"], r["ended_on"])

    # Throughput, latency and the series are of the queues clients use: the
    # internal (store-and-forward) queues are transport, shown in `bridges`.
    app = metrics.consumer_view(win)
    step("throughput")
    totals = metrics.totals(app)
    transport = metrics.totals(win.filter(metrics.is_transport()))
    in_window = sum(totals.values()) + sum(transport.values())
    if in_window == 0:
        span = ", ".join(f"{n.node_name}: {iso(n.first_ts)} .. {iso(n.last_ts)}" for n in with_events)
        notes.append(f"no events in the window; the stores' events span {span}")
    # One bucketing for the peaks and the charts: from the window's start, the charts' width.
    bucket = metrics.chart_bucket_seconds(seconds)
    per_second = tables.write("throughput_per_second", metrics.throughput_per_second(app, since))
    by_address = metrics.throughput_by(per_second, ["address"], seconds, bucket).join(
        metrics.messages_by_address(audited), "address", "left"
    ).fillna(0, ["messages"])
    by_address_rows = tables.write_collect("throughput_by_address", by_address, sort=("address",))
    by_node = nodes_df.join(metrics.throughput_by(per_second, ["node_id"], seconds, bucket), "node_id",
                            "left").fillna(0)
    by_node_rows = tables.write_collect("throughput_by_node", by_node, sort=("node_name", "node_id"))

    step("latency")
    latency_rows = tables.write_collect("latency_by_address", metrics.latency_by_address(app), sort=("address",))
    latency_node_rows = tables.write_collect(
        "latency_by_node", metrics.latency_by_node(app).join(nodes_df, "node_id", "left"), sort=("node_name",))
    overall = metrics.latency_overall(app).collect()[0].asDict()
    histogram = tables.write("latency_histogram", metrics.latency_histogram(app))
    histogram_all = _rows(histogram.groupBy("bin", "lower_ms", "upper_ms").agg(F.sum("count").alias("count")), ("bin",))

    step("distribution over nodes")
    placed = audited.filter(F.col("enqueued_events") > 0).select("address", "node_id")
    per_node, per_address = metrics.distribution(placed, nodes_df)
    per_node_rows = tables.write_collect("distribution_by_node", per_node, sort=("address", "node_name", "node_id"))
    per_address_rows = tables.write_collect("distribution_by_address", per_address, sort=("address",))

    step("backlog, expired and dead-lettered")
    backlog_rows = tables.write_collect("backlog", metrics.backlog(queues, waiting, nodes_df, now),
                                        sort=("node_name", "queue"))
    backlog_rows.sort(key=lambda r: -r["messages"])  # stable: busiest first, then by node and queue
    ends_rows = tables.write_collect("ends_by_queue", metrics.ends_by_queue(win), sort=("address", "queue"))

    step("charts and HTML")
    series_rows = _rows(metrics.over_time(app, since, bucket))
    changes = _rows(metrics.backlog_changes(events.filter(snapshot_condition(nodes)), since, until, bucket))
    backlog_now = sum(r["messages"] for r in backlog_rows)
    timeseries = metrics.fill_series(series_rows, changes, backlog_now, since, until, bucket, names)
    active_seconds = per_second.select("second").distinct().count()
    rates = {
        "window_seconds": seconds, "active_seconds": active_seconds,
        **{f"{k}_per_window_s": totals[k] / seconds for k in ("enqueued", "acknowledged")},
        **{f"{k}_per_active_s": (totals[k] / active_seconds if active_seconds else 0.0)
           for k in ("enqueued", "acknowledged")},
    }
    chart_dir = out / "charts"
    drawn = {
        "throughput": charts.throughput_chart(timeseries, chart_dir / "throughput.png"),
        "latency_over_time": charts.latency_over_time_chart(timeseries, chart_dir / "latency_over_time.png"),
        "activity": charts.activity_chart(timeseries, chart_dir / "activity.png"),
        "latency": charts.latency_chart(histogram_all, overall, latency_node_rows, chart_dir / "latency.png"),
        "distribution": charts.distribution_chart(per_node_rows, chart_dir / "distribution.png"),
    }
    chart_paths = {k: c.path for k, c in drawn.items()}

    node_figures = {r["node_id"]: r for r in by_node_rows}
    summary = {
        "generated_at": iso(now),
        "window": {"since_ms": since, "until_ms": until, "since": iso(since), "until": iso(until), "seconds": seconds,
                   "given": {"since": iso(window.since), "until": iso(window.until)}},
        "nodes": [
            {
                "node_name": n.node_name, "node_id": n.node_id, "store": n.display, "events": n.events,
                **{k: node_figures.get(n.node_id, {}).get(k, 0) for k in
                   ("enqueued", "acknowledged", "active_seconds", "enqueued_per_window_s",
                    "acknowledged_per_window_s", "enqueued_per_active_s", "acknowledged_per_active_s",
                    "peak_enqueued_per_s", "peak_acknowledged_per_s")},
            }
            for n in nodes
        ],
        "events_read": events_read,
        "events_in_window": in_window,
        "totals": totals,
        "transport": transport,
        "rates": rates,
        "throughput": {"by_address": by_address_rows, "by_node": by_node_rows},
        "latency_ms": {"all": overall if overall.get("count") else None, "by_address": latency_rows,
                       "by_node": latency_node_rows},
        "distribution": _distribution_summary(per_address_rows, per_node_rows),
        "backlog": backlog_rows,
        "ends": ends_rows,
        "audit": {**audit_summary, "offenders_total": audit_summary["anomalous"] + audit_summary["copies"]["anomalous"], "offenders": offender_rows},
        "bridges": bridge_rows,
        "message_ends": end_rows,
        "timeseries": timeseries,
        "charts": {k: {"path": str(c.path), "series": c.series} for k, c in drawn.items()},
        "partitions": partitions,
        "notes": notes,
    }
    tables.release()
    for frame in (audited, refs, waiting, queues, events):
        frame.unpersist()
    summary["elapsed_s"] = round(time.monotonic() - started, 3)
    summary["outputs"] = {
        "summary": str(out / "summary.json"),
        "html": str(out / "report.html"),
        "charts": {k: str(v) for k, v in chart_paths.items()},
        "parquet": str(out / "parquet"),
    }
    html_report.write(summary, chart_paths, out / "report.html")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    return summary


def _refuse_empty(nodes: list[NodeStore]) -> None:
    if all(n.events == 0 for n in nodes):
        names = ", ".join(n.display for n in nodes)
        plural = "s have" if len(nodes) > 1 else " has"
        raise AnalyticsError(
            f"store{plural} no events: {names} (a journal is empty until its broker stores a durable message "
            f"in a durable queue, and stays so with journal.event-log-enabled: false)"
        )


def _rows(frame, sort: tuple[str, ...] = ()) -> list[dict]:
    """Collect a small frame as dicts, sorted here rather than in Spark (None sorts first)."""
    rows = [r.asDict() for r in frame.collect()]
    rows.sort(key=lambda r: tuple((r[k] is not None, r[k]) for k in sort))
    return rows


def _name_copies(row: dict, names: dict[str, str]) -> dict:
    """An offender with the name of the node it was produced on and of each of its copies' nodes."""
    row["root_node_name"] = names.get(row["root_node_id"], row["root_node_id"])
    for c in row.get("copies") or []:
        c["node_name"] = names.get(c["node_id"], c["node_id"])
    return row


def _union(frames: list):
    return reduce(lambda a, b: a.unionByName(b), frames)


def _distribution_summary(per_address: list[dict], per_node: list[dict]) -> list[dict]:
    by_address: dict[str, dict[str, int]] = {}
    for r in per_node:
        by_address.setdefault(r["address"], {})[r["node_name"]] = r["messages"]
    return [{**r, "per_node": by_address.get(r["address"], {})} for r in per_address]


class _Tables:
    """Writes report tables as Parquet under one directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cached: list = []

    def write(self, name: str, frame, *, small: bool = True):
        """Write `frame` (one file when small) and return it cached for further use."""
        frame = frame.persist()
        self.cached.append(frame)
        (frame.coalesce(1) if small else frame).write.mode("overwrite").parquet(str(self.root / name))
        return frame

    def write_collect(self, name: str, frame, sort: tuple[str, ...] = ()) -> list[dict]:
        return _rows(self.write(name, frame), sort)

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()
        self.cached.clear()
