"""Spark settings chosen from the size of the stores, before the JVM starts.

A report over a small event log is a few dozen small Spark stages, and the
JVM spends more of it compiling (C2, Spark's whole-stage code generation)
than running them: C1 only, no code generation and one GC thread cut a
3-node, 12,000-event report from 37 s to 27–28 s of wall time on two cores
(docs/analytics.md, "Small stores"). On a large log the compiled code pays.
The JIT settings must be chosen before the JVM starts, so the stores' sizes
are estimated first, from their event ids alone (an index lookup on every
backend, not a count).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping

_SMALL_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# C1 only, serial GC, no whole-stage or expression code generation.
SMALL_JOBS_CONF = {
    "spark.driver.extraJavaOptions": _SMALL_JVM,
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
# On a cluster master (spark://…) the tasks run in executor JVMs that the workers start for this
# report alone: they get the same JIT settings.
SMALL_JOBS_EXECUTOR_CONF = {"spark.executor.extraJavaOptions": _SMALL_JVM}
# Up to this many events in all the stores, a report runs with the small-jobs settings.
SMALL_STORES_EVENTS = 300_000

_SPAN = "SELECT COALESCE(MAX(event_id) - MIN(event_id) + 1, 0) FROM events"


def estimated_events(store) -> int | None:
    """About how many events `store` (spark.jdbc.Store) holds: the span of its
    event ids (what retention pruned from the start is not counted); None
    when it cannot be read (the report itself will say why)."""
    try:
        if store.backend == "sqlite":
            with sqlite3.connect(f"file:{store.path}?mode=ro", uri=True, timeout=5) as db:
                return int(db.execute(_SPAN).fetchone()[0])
        from sqlalchemy import create_engine, text
        from sqlalchemy.engine import make_url

        from spark.jdbc import normalized_url

        url = make_url(normalized_url(store.url)).set(drivername="postgresql+psycopg")  # the journal's driver
        engine = create_engine(url, connect_args={"connect_timeout": 5})
        try:
            with engine.connect() as conn:
                return int(conn.execute(text(_SPAN)).scalar_one())
        finally:
            engine.dispose()
    except Exception:  # noqa: BLE001 - an estimate only: no answer is "unknown"
        return None


def small_jobs_conf(local: bool) -> dict[str, str]:
    """The small-jobs settings for a report whose tasks run in this JVM
    (`local`) or in a cluster's executors."""
    return dict(SMALL_JOBS_CONF) if local else {**SMALL_JOBS_CONF, **SMALL_JOBS_EXECUTOR_CONF}


def conf_for_stores(stores: Iterable, local: bool, given: Mapping[str, str]) -> tuple[dict[str, str], int | None]:
    """The Spark settings for a report over `stores`: the `given` ones, and
    small_jobs_conf(local) under them when the stores are small and the user
    set none of its keys; with the estimate (None: not estimated, or a store
    could not be read)."""
    small = small_jobs_conf(local)
    if any(key in given for key in small):
        return dict(given), None
    total = 0
    for store in stores:
        n = estimated_events(store)
        if n is None:
            return dict(given), None
        total += n
    if total > SMALL_STORES_EVENTS:
        return dict(given), total
    return {**small, **given}, total
