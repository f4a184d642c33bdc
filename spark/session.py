"""Starting Spark for analytics: local[*] by default, a real cluster by URL.

The JVM's own output (start-up warnings, log4j lines, stack traces) goes to a
log file, not the terminal: what went wrong reaches the user as one line
(`spark.errors.explain`), and the file holds the detail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from spark.class_cache import ClassCache, with_option
from spark.errors import AnalyticsError
from spark.jdbc import driver_jars

DEFAULT_MASTER = "local[*]"
APP_NAME = "meshmq-analytics"
# Shuffle partitions outside local[...] (the user's --conf wins).
CLUSTER_SHUFFLE_PARTITIONS = 16
# How long stop_session waits for a JVM that writes its class archive as it exits.
ARCHIVE_TIMEOUT_S = 180.0


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


def session_conf(master: str, jars: list[str], extra: dict[str, str] | None = None) -> dict[str, str]:
    """The Spark settings analytics runs with; `extra` (the user's --conf) wins."""
    conf = {
        "spark.master": master,
        "spark.app.name": APP_NAME,
        # On-disk jars; spark.jars.packages would try to download them.
        "spark.jars": ",".join(jars),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # the CLI shows its own progress
        "spark.sql.session.timeZone": "UTC",
        # Adaptive execution split each of the report's many small shuffles into extra jobs, for no gain here.
        "spark.sql.adaptive.enabled": "false",
    }
    if is_local(master):
        # Bind to loopback: otherwise Spark picks the first interface it finds.
        conf["spark.driver.bindAddress"] = "127.0.0.1"
        conf["spark.driver.host"] = "127.0.0.1"
        # Few, cheap shuffles: 200 shuffle partitions would be 200 tasks each on 2 cores.
        conf["spark.sql.shuffle.partitions"] = str(max(2, os.cpu_count() or 1))
    else:
        # On a cluster too: Spark's 200 made each of the report's ~80 small
        # shuffles 200 tasks (a 12k-event report took minutes on one 2-core
        # worker). The cores are not known before the executors register;
        # --conf spark.sql.shuffle.partitions=N suits a very large log.
        conf["spark.sql.shuffle.partitions"] = str(CLUSTER_SHUFFLE_PARTITIONS)
    conf.update(extra or {})
    return conf


def start_session(
    master: str = DEFAULT_MASTER,
    *,
    backends: tuple[str, ...] | list[str] = ("sqlite", "postgresql"),
    log_path: str | Path | None = None,
    conf: dict[str, str] | None = None,
    class_cache: bool = False,
):
    """A new SparkSession with the JDBC drivers for `backends` on its class path.

    `log_path` receives the JVM's stdout/stderr (default: discarded).
    `class_cache` (local masters): map the archive of the driver's classes
    that an earlier run wrote, or write it when this JVM exits
    (spark/class_cache.py). Raises AnalyticsError when a jar is missing or
    the JVM does not start.
    """
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway
        from pyspark.sql import SparkSession
    except ImportError:
        raise AnalyticsError(
            "pyspark is not installed: pip install 'meshmq[analytics]' (or ./scripts/setup.sh --test)"
        ) from None

    jars = driver_jars(backends)
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = session_conf(master, jars, conf)
    cache = ClassCache.for_driver() if class_cache and is_local(master) else None
    if cache is not None:
        settings = with_option(settings, cache)
    spark_conf = SparkConf()
    for key, value in settings.items():
        spark_conf.set(key, value)

    if log_path is not None:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        sink = open(log_path, "ab")  # noqa: SIM115 - the JVM keeps it for its lifetime
    else:
        sink = open(os.devnull, "wb")  # noqa: SIM115
    try:
        try:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": sink, "stderr": subprocess.STDOUT})
            sc = SparkContext(conf=spark_conf, gateway=gateway)
        except Exception as exc:
            from spark.errors import explain

            where = f"; see {log_path}" if log_path is not None else ""
            raise AnalyticsError(f"Spark did not start ({master}): {explain(exc)}{where}") from exc
    finally:
        sink.close()  # the JVM has its own copy of the descriptor
    sc.setLogLevel("WARN")
    session = SparkSession(sc)
    session._meshmq_class_cache = cache  # stop_session puts a written archive in place
    return session


def class_cache_of(spark) -> ClassCache | None:
    """The class archive `spark`'s JVM maps or writes (None: started without one)."""
    return getattr(spark, "_meshmq_class_cache", None)


def stop_session(spark, timeout: float = 20.0) -> bool:
    """Stop the session and end its JVM, so a new one can start in this process.
    True when the JVM wrote its class archive (start_session's `class_cache`)."""
    from pyspark import SparkContext

    cache = class_cache_of(spark)
    if cache is not None and cache.creating:
        timeout = max(timeout, ARCHIVE_TIMEOUT_S)  # the JVM writes ~160 MB as it exits
    exit_code = None
    gateway = SparkContext._gateway
    try:
        spark.stop()
    finally:
        if gateway is not None:
            try:
                gateway.shutdown()
            except Exception:  # noqa: BLE001 - already gone
                pass
            proc = getattr(gateway, "proc", None)
            if proc is not None:
                # The JVM exits when its stdin (a pipe from us) closes.
                try:
                    proc.stdin.close()
                    exit_code = proc.wait(timeout)
                except (OSError, subprocess.TimeoutExpired):
                    proc.kill()
                    proc.wait(5)
        SparkContext._gateway = None
        SparkContext._jvm = None
    return cache.finish(exit_code) if cache is not None else False
