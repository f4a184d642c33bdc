"""Spark settings chosen from the size of the stores, before the JVM starts.

The JVM's C2 compiler is the report's hidden cost on a small machine: Spark
runs a large body of code once per plan (its planner, Janino compiling the
generated code, each new plan's classes), and C2 keeps compiling it on a
core of its own for the whole report: on two cores, a third of a 1M-event
report's CPU. C1 alone compiles it for a fraction of that; with the serial
collector (no concurrent GC threads, the cheapest write barrier) it cut the
1M-event report from 53–58 s to 39–48 s of wall time on two cores
(docs/analytics.md, "Store sizes and the JVM"). Three sizes:

* small (up to 300,000 events): C1, serial GC, and no code generation
  either (a few dozen small stages spend more compiling generated code
  than running it): a 3-node 12,000-event report 37 → 27–28 s;
* medium (up to 1,500,000): C1 and serial GC, code generation kept (its
  compiled loops pay over a million rows), and a 2 GB driver heap in
  local mode: with Spark's default 1 GB the serial collector's heap left
  a 2M-event report short of execution memory (UNABLE_TO_ACQUIRE_MEMORY);
* large: the JVM as it is, where C2's faster code pays for its compiling
  (at 2,000,000 and 3,000,000 events the two measured the same).

The JIT settings must be chosen before the JVM starts, so the stores' sizes
are estimated first, from their event ids alone (an index lookup on every
backend, not a count).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_LEAN_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# C1 only and the serial collector: the JVM small and medium stores get.
LEAN_JVM_CONF = {"spark.driver.extraJavaOptions": _LEAN_JVM}
# Medium stores in local mode: the driver runs the tasks, with this heap (Spark's default is 1g).
MEDIUM_DRIVER_CONF = {"spark.driver.memory": "2g"}
# Small stores: the same JVM, and no whole-stage or expression code generation.
SMALL_JOBS_CONF = {
    **LEAN_JVM_CONF,
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
# On a cluster master (spark://…) the tasks run in executor JVMs that the workers start for this
# report alone: they get the same JIT settings.
LEAN_EXECUTOR_CONF = {"spark.executor.extraJavaOptions": _LEAN_JVM}
# Up to this many events in all the stores, a report runs with the small-jobs settings;
SMALL_STORES_EVENTS = 300_000
# up to this many, with the lean JVM alone (and MEDIUM_DRIVER_CONF).
MEDIUM_STORES_EVENTS = 1_500_000

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


@dataclass(frozen=True)
class Tuning:
    """What conf_for_stores chose: the settings to start Spark with, the
    estimated events (None: not estimated, or a store could not be read) and
    the size it judged them ("small", "medium"; None: the JVM as it is)."""

    conf: dict[str, str] = field(default_factory=dict)
    events: int | None = None
    size: str | None = None

    def describe(self, local: bool) -> str | None:
        """The step line that says what was chosen and how to turn it off (None: nothing chosen)."""
        if self.size is None:
            return None
        what = "C1 only, serial GC" + (", no code generation" if self.size == "small" else "")
        if self.size == "medium" and local:
            what += f", a driver heap of {self.conf['spark.driver.memory']}"
        return (f"{self.size} stores (about {self.events:,} events): the JVM compiles less ({what}; giving any "
                f"of {', '.join(small_jobs_conf(local))} with --conf turns this off)")


def small_jobs_conf(local: bool) -> dict[str, str]:
    """The small-jobs settings for a report whose tasks run in this JVM
    (`local`) or in a cluster's executors."""
    return dict(SMALL_JOBS_CONF) if local else {**SMALL_JOBS_CONF, **LEAN_EXECUTOR_CONF}


def medium_stores_conf(local: bool) -> dict[str, str]:
    """The medium stores' settings: the lean JVM and a larger heap for this
    JVM (`local`), the lean JVM for a cluster's executors too (their memory
    is the cluster's to set)."""
    return {**LEAN_JVM_CONF, **MEDIUM_DRIVER_CONF} if local else {**LEAN_JVM_CONF, **LEAN_EXECUTOR_CONF}


def conf_for_stores(stores: Iterable, local: bool, given: Mapping[str, str]) -> Tuning:
    """The Spark settings for a report over `stores`: the `given` ones, over
    small_jobs_conf(local) when the stores are small or medium_stores_conf(local)
    when they are medium, unless the user set any key of small_jobs_conf
    (a given spark.driver.memory only takes the place of the chosen one)."""
    if any(key in given for key in small_jobs_conf(local)):
        return Tuning(dict(given))
    total = 0
    for store in stores:
        n = estimated_events(store)
        if n is None:
            return Tuning(dict(given))
        total += n
    if total <= SMALL_STORES_EVENTS:
        return Tuning({**small_jobs_conf(local), **given}, total, "small")
    if total <= MEDIUM_STORES_EVENTS:
        return Tuning({**medium_stores_conf(local), **given}, total, "medium")
    return Tuning(dict(given), total)
