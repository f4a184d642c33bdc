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
from concurrent.futures import ThreadPoolExecutor
from functools import reduce
from pathlib import Path

from spark import audit as audit_mod
from spark import charts, html_report, metrics
from spark.batch import TableWriter, collect_all, release
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
    nodes = open_stores(spark, stores, window.since)
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
    names = {n.node_id: n.node_name for n in nodes}
    nodes_df = spark.createDataFrame([(n.node_id, n.node_name) for n in nodes], "node_id STRING, node_name STRING")
    tables = TableWriter(spark, out / "parquet")
    try:
        return _plan(spark, nodes, out, window, partitions, offenders_limit, step, tables, started=started, now=now,
                     notes=notes, with_events=with_events, since=since, until=until, seconds=seconds, names=names,
                     nodes_df=nodes_df)
    finally:
        tables.finish()
        tables.release()


def _plan(spark, nodes: list[NodeStore], out: Path, window: Window, partitions: int, offenders_limit: int,
          step: Callable[[str], None], tables: TableWriter, *, started: float, now: int, notes: list[str],
          with_events: list[NodeStore], since: int, until: int, seconds: float, names: dict[str, str],
          nodes_df) -> dict:
    """The report as a few Spark jobs over one cached event table (docs/analytics.md, "How the report runs"):
    the live state (one job), the events (one job reads every store and caches them, partitioned by
    message), the audit (its roots, its Parquet tables), then every small result in one job; the rest
    is arithmetic on a few rows here."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    # Order matters on a live store. The bounds (taken above) come first, then
    # the live queues, then the event log: a message produced up to the bounds
    # is then either in the queues snapshot or has its acknowledgement or end
    # event in the log read after it (both are written in one transaction), so
    # a message in flight is never mistaken for a lost one.
    step("reading queues and waiting messages")
    live = [read_live(spark, n, partitions) for n in nodes]
    queues = _union([q for q, _ in live]).persist()
    waiting = _union([w for _, w in live]).persist(StorageLevel.MEMORY_AND_DISK)
    # One job reads both (the backlog joins them) and caches them before the event log is read.
    backlog_frame = metrics.backlog(queues, waiting, nodes_df, now)
    backlog_rows = tables.write_rows("backlog", _sorted([r.asDict() for r in backlog_frame.collect()],
                                                        ("node_name", "queue")), backlog_frame)
    backlog_rows.sort(key=lambda r: -r["messages"])  # stable: busiest first, then by node and queue

    step(f"reading events ({partitions} JDBC partition(s) per store)")
    frames = [f for f in (read_events(spark, n, partitions) for n in nodes) if f is not None]
    if not frames:  # --since after every store's last event
        frames = [spark.createDataFrame([], EVENT_SCHEMA)]
    # One table of every store's events, hashed by message: the audit groups by message, and
    # every later job reads this cache (a filter over it is cheaper than a second copy).
    events = _union(frames).repartition(_shuffle_partitions(spark), "node_id", "message_id").persist(
        StorageLevel.MEMORY_AND_DISK)
    events_read = events.count()

    # Figures are of the log up to the bounds; the audit also counts acknowledgements after them.
    snapshot = events.filter(snapshot_condition(nodes))
    win = metrics.in_window(snapshot, since, until)

    # The audit first: the distinct messages and the distribution count its deliveries.
    step("exactly-once audit")
    waiting_keys = waiting.join(queues.select("node_id", "queue_id", "queue"), ["node_id", "queue_id"])
    refs = audit_mod.references(events, since, waiting_keys, produced_in=snapshot_condition(nodes))
    refs = refs.localCheckpoint()  # a leaf: the audit and the bridges build on it (TableWriter.write)
    audited = audit_mod.deliveries(refs, since, until, audit_mod.roots(refs), list(names))
    audited = tables.write("audit", audited, small=False, checkpoint=True)
    # Join first, then order: a join reshuffles rows, so ordering before it would be lost.
    offenders = tables.write("audit_offenders", audit_mod.offenders(audited.join(nodes_df, "node_id", "left")))

    # Throughput, latency and the series are of the queues clients use: the
    # internal (store-and-forward) queues are transport, shown in `bridges`.
    app = metrics.consumer_view(win)
    step("throughput, latency, distribution and series")
    # One bucketing for the peaks and the charts: from the window's start, the charts' width.
    bucket = metrics.chart_bucket_seconds(seconds)
    per_second = tables.write("throughput_per_second", metrics.throughput_per_second(app, since))
    placed = audited.filter(F.col("enqueued_events") > 0).select("address", "node_id")
    per_node, per_address = metrics.distribution(placed, nodes_df)
    small = {
        "audit_counts": audit_mod.summary_counts(audited),
        "offenders": offenders.limit(offenders_limit),
        "bridge_traffic": audit_mod.bridge_traffic(refs, since, until),
        "bridge_latency": audit_mod.bridge_latency(refs, since, until),
        "message_ends": audited.groupBy(
            F.col("root_node_id").alias("produced_on"), F.col("node_id").alias("ended_on"), "fate").count(),
        "totals": metrics.kind_counts(win, transport=False),
        "transport": metrics.kind_counts(win, transport=True),
        "throughput_by_address": metrics.throughput_by(per_second, ["address"], seconds, bucket).join(
            metrics.messages_by_address(audited), "address", "left").fillna(0, ["messages"]),
        "throughput_by_node": nodes_df.join(metrics.throughput_by(per_second, ["node_id"], seconds, bucket),
                                            "node_id", "left").fillna(0),
        "active_seconds": per_second.select("second").distinct().groupBy().count(),
        "latency_by_address": metrics.latency_by_address(app),
        "latency_by_node": metrics.latency_by_node(app).join(nodes_df, "node_id", "left"),
        "latency_overall": metrics.latency_overall(app),
        "latency_histogram": metrics.latency_histogram(app),
        "distribution_by_node": per_node,
        "distribution_by_address": per_address,
        "ends_by_queue": metrics.ends_by_queue(win),
        "series": metrics.over_time(app, since, bucket),
        "backlog_changes": metrics.backlog_changes(snapshot, since, until, bucket),
    }
    got = collect_all(small)

    def table(name: str, sort: tuple[str, ...] = ()) -> list[dict]:
        return tables.write_rows(name, _sorted(got[name], sort), small[name])

    audit_summary = audit_mod.summarize_counts(got["audit_counts"])
    offender_rows = sorted((_name_copies(r, names) for r in got["offenders"]), key=audit_mod.offender_sort_key)
    bridge_rows = table("bridge_traffic", ("node_id", "cluster_connection", "target_node_id"))
    confirm_rows = table("bridge_latency")
    confirms = {(r["node_id"], r["cluster_connection"], r["target_node_id"]): r for r in confirm_rows}
    for r in bridge_rows:
        r["node_name"], r["target_node_name"] = names.get(r["node_id"], r["node_id"]), names.get(r["target_node_id"])
        c = confirms.get((r["node_id"], r["cluster_connection"], r["target_node_id"]))
        r["confirm_latency_ms"] = ({k: c[k] for k in ("count", "min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms",
                                                     "mean_ms")} if c else None)
    end_rows = table("message_ends", ("produced_on", "ended_on", "fate"))
    for r in end_rows:
        r["produced_on_name"] = names.get(r["produced_on"], r["produced_on"])
        r["ended_on_name"] = names.get(r["ended_on"], r["ended_on"])

    totals = metrics.totals_of(got["totals"])
    transport = metrics.totals_of(got["transport"])
    in_window = sum(totals.values()) + sum(transport.values())
    if in_window == 0:
        span = ", ".join(f"{n.node_name}: {iso(n.first_ts)} .. {iso(n.last_ts)}" for n in with_events)
        notes.append(f"no events in the window; the stores' events span {span}")
    by_address_rows = table("throughput_by_address", ("address",))
    by_node_rows = table("throughput_by_node", ("node_name", "node_id"))

    latency_rows = table("latency_by_address", ("address",))
    latency_node_rows = table("latency_by_node", ("node_name",))
    overall = got["latency_overall"][0]
    histogram_all = _histogram_all(table("latency_histogram"))

    per_node_rows = table("distribution_by_node", ("address", "node_name", "node_id"))
    per_address_rows = table("distribution_by_address", ("address",))
    ends_rows = table("ends_by_queue", ("address", "queue"))

    step("charts and HTML")
    backlog_now = sum(r["messages"] for r in backlog_rows)
    backlog_by_node: dict[str, int] = {}
    for r in backlog_rows:
        backlog_by_node[r["node_id"]] = backlog_by_node.get(r["node_id"], 0) + r["messages"]
    timeseries = metrics.fill_series(got["series"], got["backlog_changes"], backlog_now, since, until, bucket, names,
                                     backlog_by_node=backlog_by_node)
    active_seconds = got["active_seconds"][0]["count"]
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
                "backlog": backlog_by_node.get(n.node_id, 0),
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
    tables.finish()
    for frame in (refs, waiting, queues, events):
        release(frame)
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


def _sorted(rows: list[dict], sort: tuple[str, ...] = ()) -> list[dict]:
    """Rows of a small frame sorted here rather than in Spark (None sorts first)."""
    rows.sort(key=lambda r: tuple((r[k] is not None, r[k]) for k in sort))
    return rows


def _histogram_all(histogram: list[dict]) -> list[dict]:
    """The latency histogram of every address together (bin, lower_ms, upper_ms, count), by bin."""
    bins: dict[tuple, int] = {}
    for r in histogram:
        key = (r["bin"], r["lower_ms"], r["upper_ms"])
        bins[key] = bins.get(key, 0) + r["count"]
    return [{"bin": b, "lower_ms": lo, "upper_ms": hi, "count": n} for (b, lo, hi), n in sorted(bins.items())]


def _shuffle_partitions(spark) -> int:
    return max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))


def open_stores(spark, stores: list[Store], since: int | None) -> list[NodeStore]:
    """open_store for every store, at once (each is a few small JDBC jobs; Spark
    runs jobs from several threads side by side); the first store's failure,
    in the order given, is the one raised."""
    if len(stores) == 1:
        return [open_store(spark, stores[0], since)]
    with ThreadPoolExecutor(max_workers=min(4, len(stores)), thread_name_prefix="open-store") as pool:
        futures = [pool.submit(open_store, spark, store, since) for store in stores]
        return [f.result() for f in futures]


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


