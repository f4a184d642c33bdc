"""The cluster-wide report on a real Spark standalone cluster: a master and a
worker started from the installed pyspark on loopback (tests/fixtures/
spark_cluster.py), the report run by the `meshmq analytics report` command
with `--master spark://…` over two nodes' PostgreSQL stores, and its
summary.json equal to the one `local[*]` computes over the same stores —
every figure but the ones that say when it ran."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark.report import run_report
from tests.fixtures.spark_cluster import SparkStandalone
from tests.spark.workload import NODE_EXTRA, Workload, run_workload

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
# What differs between two runs over the same stores: when and how long, and where the files went.
WHEN = {"generated_at", "elapsed_s", "timings", "outputs", "charts"}


def comparable(summary: dict) -> dict:
    """summary.json without the figures of the run itself; a backlog's age is
    measured from the report's own now, so it goes too."""
    out = {k: v for k, v in summary.items() if k not in WHEN}
    out["backlog"] = [{k: v for k, v in b.items() if k != "oldest_age_s"} for b in summary["backlog"]]
    out["charts"] = {name: chart["series"] for name, chart in summary["charts"].items()}  # not where they went
    return out


# Two routers, a local report and a standalone cluster's JVMs: minutes on a loaded two-core
# machine (CI's passed 300 s once); the bound is against a hang.
@pytest.mark.timeout(1200)
async def test_the_report_on_a_standalone_spark_cluster_equals_local(spark_session, nodes, make_pg_url, tmp_path):
    urls = {name: make_pg_url() for name in ("east", "west")}
    routers = {name: nodes.router(name, journal_url=url, extra=NODE_EXTRA) for name, url in urls.items()}
    await asyncio.gather(
        run_workload(routers["east"], Workload(orders=50, news=4, pending=3, poison=1, expiring=2)),
        run_workload(routers["west"], Workload(orders=30, pending=2)),
    )
    for r in routers.values():
        r.stop()
    stores = list(urls.values())

    local = run_report(spark_session, stores, tmp_path / "local", partitions=2)

    cluster = SparkStandalone(tmp_path / "spark-cluster").start()
    try:
        out = tmp_path / "standalone"
        store_args = [arg for url in stores for arg in ("--store", url)]
        proc = subprocess.run(
            [sys.executable, "-m", "meshmq.cli.analytics", "report", *store_args, "--out", str(out),
             "--master", cluster.master, "--partitions", "2",
             "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
             "--conf", "spark.executor.memory=512m"],
            capture_output=True, text=True, timeout=600, cwd=REPO,  # a guard against a hang, not a speed limit
            env={**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"})
        assert proc.returncode == 0, proc.stderr + cluster.log_tail()
        # The command in its own process: stderr holds the progress lines (no terminal here) and nothing
        # else — Java's chatter went to spark.log —, stdout the summary.
        steps = proc.stderr.splitlines()
        assert steps and all(line.startswith("analytics: ") for line in steps), proc.stderr
        assert steps[0].startswith(f"analytics: starting Spark ({cluster.master})")
        # Small stores: the driver and the executor the worker started compile less (spark/tuning.py).
        assert steps[1].startswith("analytics: small stores (about "), steps
        assert "spark.executor.extraJavaOptions" in steps[1]
        assert steps[-1].startswith("analytics: stopping Spark")
        assert (out / "spark.log").stat().st_size > 0
        assert "audit    GREEN:" in proc.stdout
        # The cluster ran it: the application is listed by the master, finished, with the worker's cores.
        apps = cluster.status()["completedapps"]
        assert [a["name"] for a in apps] == ["meshmq-analytics"] and apps[0]["cores"] >= 1, apps
    finally:
        cluster.stop()
    remote = json.loads((out / "summary.json").read_text())
    # What the user waited for, from the command's start: the JVM's start is in the wall time, not left out.
    t = remote["timings"]
    assert 0 < t["spark_start_s"] < t["first_result_s"] < t["wall_s"]
    assert t["report_s"] == remote["elapsed_s"] and t["spark_start_s"] + t["report_s"] <= t["wall_s"]
    [done] = [line for line in proc.stdout.splitlines() if line.startswith("  done in ")]
    assert done.startswith(f"  done in {t['wall_s']:.1f} s wall: Spark started after {t['spark_start_s']:.1f} s, "
                           f"first result after {t['first_result_s']:.1f} s"), done

    assert remote["totals"]["enqueued"] == local["totals"]["enqueued"] > 0
    assert remote["audit"]["verdict"] == "green"
    assert comparable(remote) == comparable(json.loads(json.dumps(local)))
