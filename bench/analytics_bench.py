"""The analytics report on a large store: partitioned JDBC reads against one connection.

Fills a journal store (created by the journal's own code, so the schema is
the real one) with at least --events synthetic events of a realistic mix —
enqueue then acknowledge for most messages, some redelivered, expired,
dead-lettered or still waiting, a few doctored for the audit — then runs the
whole report (spark.report.run_report) with --partitions JDBC partitions and
with one, alternating, --repeat times each after one warm-up run, and prints
the best time of each mode, for reading the event log and for the whole
report, and their ratio. Both modes must produce the same figures; the
script checks that, and that they equal what it generated.

    .venv/bin/python bench/analytics_bench.py                      # SQLite, 1,000,000 events
    .venv/bin/python bench/analytics_bench.py --pg-url postgresql+psycopg://postgres@127.0.0.1:5432/bench_db
    .venv/bin/python bench/analytics_bench.py --events 200000 --repeat 1 --json
    .venv/bin/python bench/analytics_bench.py --events 12000 --nodes 3 --no-single   # a 3-node cluster's stores
    .venv/bin/python bench/analytics_bench.py --events 12000 --conf spark.sql.codegen.wholeStage=false  # a setting tried

By default Spark starts as `meshmq analytics report` would start it: the
small-stores settings when the stores are small, and the archive of the
driver's classes (the first run on a machine writes it as its JVM exits;
later runs map it). --as-given starts it with --conf alone.

--nodes N splits the events over N SQLite stores, one per node (the
cluster-wide report unites them). The first figure printed is the cold
wall time: starting Spark (the JVM) plus the first report, as a user
running `meshmq analytics report` once waits for it.

--pg-url names an empty database that the script may fill (it is not dropped);
the temporary work directory (SQLite store, reports, spark.log) is removed
unless --keep.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ADDRESSES = ("orders.eu", "orders.us", "orders.apac", "payments", "invoices", "audit.log", "notifications", "metrics")
SPAN_MS = 10 * 60 * 1000  # the events cover ten minutes
DUPLICATE_ACKS = (1_000, 2_000, 3_000)  # acknowledged twice
LOST_ACKS = (4_000, 5_000)  # acknowledgement event missing, message not stored: UNACCOUNTED


def generate(target_events: int, node_id: str, seed: int = 7):
    """(events, waiting, expected): events as tuples in ts order, the messages
    still waiting, and the counts a correct report must find."""
    rnd = random.Random(seed)
    n_messages = math.ceil(target_events / 2.02)
    t0 = int(time.time() * 1000) - SPAN_MS - 60_000
    events: list[tuple] = []
    waiting: list[tuple] = []
    expected = {"enqueued": 0, "acknowledged": 0, "redelivered": 0, "expired": 0, "dead_lettered": 0,
                "waiting": 0, "more_than_once": 0, "unaccounted": 0}
    mid = 0
    while len(events) < target_events:
        mid += 1
        address = ADDRESSES[mid % len(ADDRESSES)]
        msg_ts = t0 + (mid * SPAN_MS) // n_messages
        size = rnd.randint(200, 2000)
        events.append((node_id, "ENQUEUED", msg_ts, address, address, mid, size, 0, msg_ts))
        expected["enqueued"] += 1
        r = 1.0 if mid in DUPLICATE_ACKS else rnd.random()
        if mid in LOST_ACKS:
            expected["unaccounted"] += 1
        elif r < 0.005:
            events.append((node_id, "EXPIRED", msg_ts + 30_000, address, address, mid, size, 0, msg_ts))
            expected["expired"] += 1
        elif r < 0.007:
            events.append((node_id, "DELIVERED", msg_ts + 50, address, address, mid, size, 2, msg_ts))
            events.append((node_id, "DEAD_LETTERED", msg_ts + 100, address, address, mid, size, 2, msg_ts))
            expected["redelivered"] += 1
            expected["dead_lettered"] += 1
        elif r < 0.010:
            waiting.append((mid, address, size, msg_ts))
            expected["waiting"] += 1
        else:
            count = 1
            if r < 0.020:
                count = 2
                events.append((node_id, "DELIVERED", msg_ts + 40, address, address, mid, size, 2, msg_ts))
                expected["redelivered"] += 1
            latency = max(1, int(rnd.lognormvariate(math.log(20), 0.9)))
            acks = 2 if mid in DUPLICATE_ACKS else 1
            for k in range(acks):
                events.append((node_id, "ACKNOWLEDGED", msg_ts + latency + k, address, address, mid, size, count,
                               msg_ts))
            expected["acknowledged"] += acks
            expected["more_than_once"] += acks > 1
    events.sort(key=lambda e: e[2])
    expected["messages"] = mid
    expected["events"] = len(events)
    return events, waiting, expected


def create_store(url: str, name: str = "bench") -> str:
    """Schema, node id and version through the journal's own code; returns the node id."""
    from services.journal.store import JournalStore

    store = JournalStore(url)
    node_id = store.open(name).node_id
    store.close()
    return node_id


QUEUES = [(i + 1, a, a, 1, "", True) for i, a in enumerate(ADDRESSES)]
QUEUE_IDS = {a: i + 1 for i, a in enumerate(ADDRESSES)}
EVENT_INSERT = ("INSERT INTO events (node_id, kind, ts, address, queue, message_id, size, delivery_count, message_ts) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


def fill_sqlite(path: Path, events, waiting) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute("PRAGMA synchronous=OFF")
        db.executemany(EVENT_INSERT, events)
        db.executemany("INSERT INTO queues (queue_id, name, address, routing_type, filter, auto_created) "
                       "VALUES (?, ?, ?, ?, ?, ?)", QUEUES)
        db.executemany(
            "INSERT INTO messages (message_id, address, size, timestamp, large, queue_id, delivery_count, data) "
            "VALUES (?, ?, ?, ?, 0, ?, 0, x'')",
            [(m, a, s, ts, QUEUE_IDS[a]) for m, a, s, ts in waiting],
        )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def fill_postgres(url: str, events, waiting) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(url)
    with psycopg.connect(host=u.host or "localhost", port=u.port or 5432, user=u.username, password=u.password,
                         dbname=u.database) as conn:
        with conn.cursor() as cur:
            with cur.copy("COPY events (node_id, kind, ts, address, queue, message_id, size, delivery_count, "
                          "message_ts) FROM STDIN") as copy:
                for e in events:
                    copy.write_row(e)
            cur.executemany("INSERT INTO queues (queue_id, name, address, routing_type, filter, auto_created) "
                            "VALUES (%s, %s, %s, %s, %s, %s)", QUEUES)
            cur.executemany(
                "INSERT INTO messages (message_id, address, size, timestamp, large, queue_id, delivery_count, data) "
                "VALUES (%s, %s, %s, %s, false, %s, 0, '')",
                [(m, a, s, ts, QUEUE_IDS[a]) for m, a, s, ts in waiting],
            )
            cur.execute("ANALYZE")


def run_once(spark, urls: list[str], out: Path, partitions: int) -> tuple[float, float, dict, dict[str, float]]:
    """(seconds reading the event log, seconds for the whole report, summary,
    seconds per step of the report: from its step line to the next, the last
    to the end — where a report's time goes, without Spark's event log)."""
    from spark.report import run_report

    marks: dict[str, float] = {}
    started = time.monotonic()

    def mark(step: str) -> None:
        marks[step.split(" (")[0]] = time.monotonic()

    summary = run_report(spark, urls, out, partitions=partitions, on_step=mark)
    ended = time.monotonic()
    total = ended - started
    read = marks["exactly-once audit"] - marks["reading events"]
    times = [*marks.values(), ended]
    steps = {name: round(times[i + 1] - times[i], 2) for i, name in enumerate(marks)}
    return read, total, summary, steps


def steps_line(steps: dict[str, float]) -> str:
    return ", ".join(f"{name} {sec:.2f} s" for name, sec in steps.items())


def figures(summary: dict) -> dict:
    """What both modes must agree on."""
    a = summary["audit"]
    return {
        **summary["totals"],
        "produced": a["produced"], "exactly_once": a["exactly_once"],
        "more_than_once": a["anomalies"]["acknowledged_more_than_once"],
        "never_by_fate": {**a["explained_by_fate"], "unaccounted": a["anomalies"]["never_acknowledged"]},
        "latency_p50": summary["latency_ms"]["all"]["p50_ms"],
        "latency_p99": summary["latency_ms"]["all"]["p99_ms"], "backlog": sum(b["messages"] for b in summary["backlog"]),
    }


def check(expected: dict, got: dict) -> list[str]:
    want = {
        "enqueued": expected["enqueued"], "acknowledged": expected["acknowledged"],
        "redelivered": expected["redelivered"], "expired": expected["expired"],
        "dead_lettered": expected["dead_lettered"], "more_than_once": expected["more_than_once"],
        "backlog": expected["waiting"],
    }
    problems = [f"{k}: report {got[k]}, generated {v}" for k, v in want.items() if got[k] != v]
    fates = got["never_by_fate"]
    for fate in ("waiting", "expired", "dead_lettered", "unaccounted"):
        if fates[fate] != expected[fate]:
            problems.append(f"never/{fate}: report {fates[fate]}, generated {expected[fate]}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000, help="at least this many events (default 1,000,000)")
    ap.add_argument("--nodes", type=int, default=1, help="split the events over this many nodes' SQLite stores")
    ap.add_argument("--partitions", type=int, default=0, help="JDBC partitions for the partitioned runs (default 2 × cores)")
    ap.add_argument("--repeat", type=int, default=2, help="timed runs of each mode (best is reported)")
    ap.add_argument("--no-single", action="store_true", help="time the partitioned mode only (no 1-partition runs)")
    ap.add_argument("--pg-url", help="fill this (empty) PostgreSQL database instead of a temporary SQLite file")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (store, reports, spark.log)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for the session (repeatable), as `meshmq analytics report --conf`")
    ap.add_argument("--as-given", action="store_true",
                    help="Spark with --conf only: without the choices `meshmq analytics report` makes by itself "
                         "(the small-stores settings, spark/tuning.py; the class archive, spark/class_cache.py)")
    args = ap.parse_args()
    if args.nodes < 1:
        ap.error(f"--nodes {args.nodes}: give at least 1")
    if args.pg_url and args.nodes != 1:
        ap.error("--pg-url fills one database: it takes --nodes 1 only")

    import pyspark

    from spark.jdbc import parse_store_url
    from spark.session import class_cache_of, is_local, start_session, stop_session
    from spark.tuning import conf_for_stores

    work = Path(tempfile.mkdtemp(prefix="meshmq-analytics-bench-"))
    t = time.monotonic()
    expected: dict = {}
    if args.pg_url:
        urls = [args.pg_url]
        events, waiting, expected = generate(args.events, create_store(args.pg_url))
        fill_postgres(args.pg_url, events, waiting)
    else:
        urls = []
        for k in range(args.nodes):
            path = work / f"node{k + 1}" / "journal.db"
            path.parent.mkdir()
            url = f"sqlite:///{path}"
            node_id = create_store(url, f"bench{k + 1}")
            events, waiting, got = generate(math.ceil(args.events / args.nodes), node_id, seed=7 + k)
            fill_sqlite(path, events, waiting)
            urls.append(url)
            expected = {key: expected.get(key, 0) + v for key, v in got.items()}
    fill_s = time.monotonic() - t
    del events
    say = (lambda *_a: None) if args.json else print
    say(f"store: {'postgresql' if args.pg_url else 'sqlite'}, {args.nodes} node(s), {expected['events']:,} events "
        f"({expected['messages']:,} messages), filled in {fill_s:.1f} s")

    conf = dict(item.split("=", 1) for item in args.conf)
    cold_started = time.monotonic()
    if not args.as_given:  # what the CLI does, the store-size estimate included in the cold time
        conf = conf_for_stores([parse_store_url(u) for u in urls], is_local(args.master), conf).conf
    spark = start_session(args.master, log_path=work / "spark.log", conf=conf, class_cache=not args.as_given)
    cache = class_cache_of(spark)
    say("settings: " + ("as given" if args.as_given else "as `meshmq analytics report` chooses") + "; class archive: "
        + ("none" if cache is None else f"writing {cache.path} (this run's exit)" if cache.creating
           else f"mapped from {cache.path}"))
    try:
        spark_start_s = time.monotonic() - cold_started
        partitions = args.partitions or 2 * spark.sparkContext.defaultParallelism
        say(f"machine: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}, "
            f"Spark {pyspark.__version__} ({args.master}), Java {spark.sparkContext._jvm.System.getProperty('java.version')}, "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        cold_read, cold_report, _, cold_steps = run_once(spark, urls, work / "out-cold", partitions)
        cold_wall = time.monotonic() - cold_started
        say(f"cold (not counted in the best): Spark started in {spark_start_s:.2f} s, first report "
            f"{cold_report:.2f} s (read events {cold_read:.2f} s), wall {cold_wall:.2f} s")
        say(f"  its steps: {steps_line(cold_steps)}")
        modes = (partitions,) if args.no_single else (partitions, 1)
        best: dict[int, list[float]] = {n: [math.inf, math.inf] for n in modes}
        seen: dict[int, dict] = {}
        best_steps: dict[int, dict[str, float]] = {}
        for i in range(args.repeat):
            for n in modes:
                read, total, summary, steps = run_once(spark, urls, work / f"out-{n}-{i}", n)
                say(f"  run {i + 1}, {n:>2} partition(s): read events {read:6.2f} s, whole report {total:6.2f} s")
                say(f"    its steps: {steps_line(steps)}")
                if total < best[n][1]:
                    best_steps[n] = steps
                best[n] = [min(best[n][0], read), min(best[n][1], total)]
                seen[n] = figures(summary)
    finally:
        stop_session(spark)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    problems = check(expected, seen[partitions])
    if not args.no_single and seen[partitions] != seen[1]:
        problems.append(f"the modes disagree: {seen[partitions]} vs {seen[1]}")
    result = {
        "backend": "postgresql" if args.pg_url else "sqlite",
        "nodes": args.nodes,
        "events": expected["events"],
        "messages": expected["messages"],
        "cores": os.cpu_count(),
        "partitions": partitions,
        "cold": {"spark_start_s": round(spark_start_s, 2), "report_s": round(cold_report, 2),
                 "wall_s": round(cold_wall, 2), "steps_s": cold_steps},
        "partitioned": {"read_s": round(best[partitions][0], 2), "report_s": round(best[partitions][1], 2),
                        "steps_s": best_steps[partitions]},
        "figures": seen[partitions],
        "problems": problems,
        "workdir": str(work) if args.keep else None,
    }
    if not args.no_single:
        result["single"] = {"read_s": round(best[1][0], 2), "report_s": round(best[1][1], 2)}
        result["read_ratio"] = round(best[1][0] / best[partitions][0], 2)
        result["report_ratio"] = round(best[1][1] / best[partitions][1], 2)
    if args.json:
        print(json.dumps(result))
    else:
        c, p = result["cold"], result["partitioned"]
        print(f"cold wall (Spark start + first report): {c['wall_s']:.2f} s "
              f"(Spark {c['spark_start_s']:.2f} s, report {c['report_s']:.2f} s)")
        print(f"partitioned ({partitions} partitions): read events {p['read_s']:.2f} s, whole report {p['report_s']:.2f} s")
        if not args.no_single:
            s = result["single"]
            print(f"single partition:          read events {s['read_s']:.2f} s, whole report {s['report_s']:.2f} s")
            print(f"ratio single/partitioned:  read events {result['read_ratio']:.2f}x, "
                  f"whole report {result['report_ratio']:.2f}x")
        print("figures: " + json.dumps(result["figures"]))
        print("checked: " + ("report figures equal the generated ones" + ("" if args.no_single else ", in both modes")
                             if not problems else "PROBLEMS: " + "; ".join(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
