"""`meshmq analytics`: Spark reports over the journal store (spark/, docs/analytics.md)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path

import click

from meshmq.cli.common import fail


def _parse_conf(items: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--conf {item!r}: expected KEY=VALUE (a Spark setting)")
        conf[key.strip()] = value
    return conf


class _StageWatcher:
    """Shows what Spark is doing (stage and task counts) beside the report's step."""

    PERIOD_S = 0.25

    def __init__(self, spark, on_status) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._on_status = on_status
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="spark-progress", daemon=True)

    def __enter__(self) -> _StageWatcher:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.wait(self.PERIOD_S):
            try:
                stages = [self._tracker.getStageInfo(i) for i in self._tracker.getActiveStageIds()]
            except Exception:  # noqa: BLE001 - the session is stopping
                return
            parts = [
                f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks" for s in stages if s is not None
            ]
            self._on_status("  ".join(parts[:3]))


@click.group()
def analytics() -> None:
    """Reports over the journal store, computed by Spark."""


@analytics.command("report")
@click.option("--store", "stores", multiple=True, required=True, metavar="URL",
              help="A node's journal store, as the broker names it: sqlite:////abs/journal.db or "
                   "postgresql://user@host:port/db. Repeat for each node of a cluster.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for report.html, summary.json, charts/ and parquet/.")
@click.option("--master", default="local[*]", show_default=True, metavar="URL",
              help="Spark master: local[*] runs in this process; spark://host:7077 (or yarn, k8s://...) a cluster.")
@click.option("--since", default=None, help="Window start: ISO 8601 (2026-05-01T12:00Z), 2h (ago), now, or epoch ms.")
@click.option("--until", default=None, help="Window end (exclusive), same forms. Default: the last event.")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="JDBC partitions (parallel connections) per store for the large tables. Default: 2 × Spark's cores.")
@click.option("--max-offenders", default=1000, show_default=True, type=click.IntRange(min=0),
              help="Audit offenders listed in summary.json (all are in parquet/audit_offenders).")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Extra Spark setting (repeatable).")
@click.option("--class-cache/--no-class-cache", default=True, show_default=True,
              help="local[...]: start Spark's JVM from an archive of its classes (~160 MB in ~/.cache/meshmq, "
                   "or MESHMQ_CACHE_DIR), which the first report writes as it ends (~20 s, once).")
def report(stores, out_dir, master, since, until, partitions, max_offenders, confs, class_cache) -> None:
    """Throughput, latency, distribution over nodes, backlog, and an exactly-once audit.

    Reads the event log and live tables of each --store through JDBC (drivers
    from Debian's libxerial-sqlite-jdbc-java / libpostgresql-jdbc-java), and
    writes Parquet tables, a JSON summary, PNG charts and one self-contained
    HTML page to --out.
    """
    from spark.errors import AnalyticsError

    conf = _parse_conf(confs)
    clock = _Clock()
    try:
        summary = _report(list(stores), Path(out_dir), master, since, until, partitions, max_offenders, conf, clock,
                          class_cache)
    except AnalyticsError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        click.secho("interrupted", fg="yellow", err=True)
        sys.exit(130)
    summary["timings"] = clock.timings(summary["elapsed_s"])
    _record_timings(Path(summary["outputs"]["summary"]), summary["timings"])
    _print_summary(summary)


class _Clock:
    """What a user waits for, from the command's start: Spark's start (the JVM
    and the session), the first result (the stores checked: Spark's first job
    answered), and the whole run. The report's own `elapsed_s` counts only the
    jobs, not the ~15 s a JVM takes to start."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.spark_started: float | None = None
        self.first_result: float | None = None
        self._steps = 0

    def spark_ready(self) -> None:
        self.spark_started = time.monotonic()

    def step(self) -> None:
        """A report step begins: the second one begins when the first (checking the stores) answered."""
        self._steps += 1
        if self._steps == 2 and self.first_result is None:
            self.first_result = time.monotonic()

    def timings(self, report_s: float) -> dict[str, float]:
        now = time.monotonic()
        since = lambda t: round((t if t is not None else now) - self.started, 3)  # noqa: E731
        return {"wall_s": since(now), "spark_start_s": since(self.spark_started),
                "first_result_s": since(self.first_result), "report_s": report_s}


def _record_timings(path: Path, timings: dict[str, float]) -> None:
    """Add the command's timings to summary.json (the report wrote it before they were known)."""
    import json

    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    summary["timings"] = timings
    path.write_text(json.dumps(summary, indent=2, sort_keys=True))


def _report(stores, out: Path, master, since, until, partitions, max_offenders, conf, clock: _Clock,
            class_cache: bool = True) -> dict:
    from rich.console import Console

    from spark.errors import AnalyticsError
    from spark.jdbc import parse_store_url
    from spark.window import parse_window

    # Everything that can be checked without Spark is checked first: starting it takes seconds.
    window = parse_window(since, until)
    parsed = [parse_store_url(url) for url in stores]
    for store in parsed:
        if store.backend == "sqlite" and not Path(store.path).is_file():
            raise AnalyticsError(f"store {store.display} cannot be opened: no such file")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AnalyticsError(f"--out {out}: {exc.strerror}") from None

    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise AnalyticsError("pyspark is not installed: pip install 'meshmq[analytics]'") from None

    from spark.session import class_cache_of, is_local, start_session, stop_session
    from spark.tuning import conf_for_stores

    # The report's own modules (matplotlib the largest: ~0.6 s) load while the JVM starts.
    report_module = _import_in_background("spark.report")

    console = Console(stderr=True)
    with _progress(console) as (show_step, show_spark):
        show_step(f"starting Spark ({master})")
        # A session already running in this process (an embedding program, the tests) is used, not stopped.
        spark = SparkSession.getActiveSession()
        owned = spark is None
        if owned:
            local = is_local(master)
            tuning = conf_for_stores(parsed, local, conf)
            if (chosen := tuning.describe(local)) is not None:
                show_step(chosen)
            spark = start_session(master, backends=[s.backend for s in parsed], log_path=out / "spark.log",
                                  conf=tuning.conf, class_cache=class_cache)
        clock.spark_ready()

        def on_step(step: str) -> None:
            clock.step()
            show_step(step)

        try:
            run_report = report_module().run_report
            with _StageWatcher(spark, show_spark):
                return run_report(
                    spark, parsed, out, window=window, partitions=partitions, offenders_limit=max_offenders,
                    on_step=on_step,
                )
        finally:
            if owned:
                cache = class_cache_of(spark)
                show_step("stopping Spark" + (f" (writing the archive of its classes for the next reports, once: "
                                              f"{cache.path})" if cache is not None and cache.creating else ""))
                stop_session(spark)


def _import_in_background(name: str):
    """Import module `name` in a thread (pyspark and spark.session are already
    imported, so the two threads never wait on each other's module locks
    while the JVM starts); the returned function
    waits for it and gives the module, or raises what the import raised."""
    import importlib
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1, thread_name_prefix="import")
    future = pool.submit(importlib.import_module, name)
    pool.shutdown(wait=False)
    return future.result


@contextlib.contextmanager
def _progress(console):
    """(show_step, show_spark): a live spinner with Spark's stage progress on a
    terminal; elsewhere (CI logs, pipes) one plain line per step."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    if not console.is_terminal:
        started = time.monotonic()

        def line(step: str) -> None:
            # soft_wrap: one line per step however long (a log is read by grep, not at 80 columns).
            console.print(f"analytics: {step} [{time.monotonic() - started:.1f} s]", highlight=False, markup=False,
                          soft_wrap=True)

        yield line, lambda _text: None
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TextColumn("[dim]{task.fields[spark]}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("", spark="")
        yield (lambda step: progress.update(task, description=step, spark="")), (
            lambda text: progress.update(task, spark=text))


def _print_summary(s: dict) -> None:
    w, t, a = s["window"], s["totals"], s["audit"]
    lat = s["latency_ms"]["all"]
    click.echo(f"report: {s['outputs']['html']}")
    click.echo(f"  window   {w['since']} .. {w['until']} ({w['seconds']:,.1f} s), {len(s['nodes'])} node(s), "
               f"{s['events_in_window']:,} events")
    click.echo(f"  messages {t['enqueued']:,} enqueued, {t['acknowledged']:,} acknowledged, {t['expired']:,} expired, "
               f"{t['dead_lettered']:,} dead-lettered")
    if lat:
        click.echo(f"  latency  p50 {lat['p50_ms']:,.0f} ms, p90 {lat['p90_ms']:,.0f} ms, p99 {lat['p99_ms']:,.0f} ms, "
                   f"max {lat['max_ms']:,} ms")
    waiting = sum(b["messages"] for b in s["backlog"])
    click.echo(f"  backlog  {waiting:,} message(s) waiting in {sum(1 for b in s['backlog'] if b['messages'])} queue(s)")
    anomalies = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k, n in a["anomalies"].items() if n)
    cp = a.get("copies") or {}
    copies = cp.get("dead_lettered", 0) + cp.get("expired", 0)
    click.echo(f"  audit    {a['verdict'].upper()}: {a['produced']:,} produced, {a['exactly_once']:,} acknowledged "
               f"exactly once, {a['explained']:,} explained, {a['anomalous']:,} anomalous"
               + (f" ({anomalies})" if anomalies else "")
               + (f"; {copies:,} dead-letter/expiry copies ({cp['dead_lettered']:,} dead-letter, "
                  f"{cp['expired']:,} expiry, {cp['anomalous']:,} anomalous)" if copies else ""))
    for note in s.get("notes", []):
        click.secho(f"  note: {note}", fg="yellow")
    t = s.get("timings") or {"wall_s": s["elapsed_s"], "spark_start_s": 0.0, "first_result_s": 0.0,
                             "report_s": s["elapsed_s"]}
    click.echo(f"  done in {t['wall_s']:.1f} s wall: Spark started after {t['spark_start_s']:.1f} s, first result "
               f"after {t['first_result_s']:.1f} s, the report's jobs {t['report_s']:.1f} s "
               f"({s['partitions']} JDBC partition(s) per store)")


if __name__ == "__main__":  # `meshmq analytics report ...` is the same command
    analytics()
