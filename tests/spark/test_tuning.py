"""The report's Spark settings chosen from the stores' sizes before the JVM
starts (spark/tuning.py), on real SQLite files and a real PostgreSQL
database holding the journal's own `events` table: small stores get the
small-jobs settings, medium ones the lean JVM and a larger heap, large ones
the JVM as it is, a cluster master's executors the same JIT settings, and
a user's own setting of any of them wins."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, insert

from services.journal.schema import events, metadata
from spark.jdbc import parse_store_url
from spark.tuning import (
    MEDIUM_STORES_EVENTS,
    SMALL_JOBS_CONF,
    SMALL_STORES_EVENTS,
    Tuning,
    conf_for_stores,
    estimated_events,
)

LEAN_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

ROW = dict(node_id="n", kind="ENQUEUED", ts=1, address="a", queue="a", message_id=1, size=1, delivery_count=0,
           message_ts=1)


def store_with(url: str, first_id: int, last_id: int):
    engine = create_engine(url)
    metadata.create_all(engine)
    with engine.begin() as conn:  # the first and the last event: the estimate is their ids' span
        conn.execute(insert(events), [dict(ROW, event_id=first_id), dict(ROW, event_id=last_id)])
    engine.dispose()
    return parse_store_url(url.replace("+psycopg", ""))


def sqlite_store(tmp_path: Path, name: str, first_id: int, last_id: int):
    return store_with(f"sqlite:///{tmp_path / name}.db", first_id, last_id)


def test_small_stores_get_the_small_jobs_settings(tmp_path):
    small = [sqlite_store(tmp_path, f"n{k}", 1, 4_000) for k in range(3)]
    chosen = conf_for_stores(small, True, {"spark.driver.memory": "2g"})
    assert chosen == Tuning({**SMALL_JOBS_CONF, "spark.driver.memory": "2g"}, 12_000, "small")
    assert chosen.describe(True).startswith("small stores (about 12,000 events): the JVM compiles less "
                                            "(C1 only, serial GC, no code generation;")


def test_medium_stores_keep_code_generation_and_get_the_lean_jvm_with_a_larger_heap(tmp_path):
    stores = [sqlite_store(tmp_path, "n1", 1, 4_000), sqlite_store(tmp_path, "big", 101, 100 + SMALL_STORES_EVENTS)]
    chosen = conf_for_stores(stores, True, {})
    assert chosen == Tuning({"spark.driver.extraJavaOptions": LEAN_JVM, "spark.driver.memory": "2g"},
                            4_000 + SMALL_STORES_EVENTS, "medium")
    assert "codegen" not in " ".join(chosen.conf)
    assert chosen.describe(True).startswith(f"medium stores (about {4_000 + SMALL_STORES_EVENTS:,} events): the JVM "
                                            "compiles less (C1 only, serial GC, a driver heap of 2g;")
    # The user's heap takes the place of the chosen one; the JVM's options stay chosen.
    assert conf_for_stores(stores, True, {"spark.driver.memory": "6g"}).conf == {
        "spark.driver.extraJavaOptions": LEAN_JVM, "spark.driver.memory": "6g"}


def test_large_stores_run_the_jvm_as_it_is(tmp_path):
    stores = [sqlite_store(tmp_path, "n1", 1, 2), sqlite_store(tmp_path, "big", 1, MEDIUM_STORES_EVENTS - 1)]
    chosen = conf_for_stores(stores, True, {"spark.executor.memory": "1g"})
    assert chosen == Tuning({"spark.executor.memory": "1g"}, MEDIUM_STORES_EVENTS + 1, None)
    assert chosen.describe(True) is None


def test_a_users_setting_keeps_spark_as_configured(tmp_path):
    small = [sqlite_store(tmp_path, "n1", 1, 10)]
    for given in ({"spark.sql.codegen.wholeStage": "true"}, {"spark.executor.extraJavaOptions": "-Xss4m"}):
        assert conf_for_stores(small, False, given) == Tuning(given)
    assert conf_for_stores(small, True, {"spark.driver.extraJavaOptions": "-Xss4m"}) == Tuning(
        {"spark.driver.extraJavaOptions": "-Xss4m"})


def test_a_cluster_masters_executors_get_the_jvm_settings_too(tmp_path):
    small = [sqlite_store(tmp_path, "n1", 1, 10)]
    chosen = conf_for_stores(small, False, {"spark.executor.memory": "512m"})
    assert chosen.events == 10 and chosen.conf == {**SMALL_JOBS_CONF, "spark.executor.memory": "512m",
                                                   "spark.executor.extraJavaOptions": LEAN_JVM}
    assert conf_for_stores(small, True, {}).conf == SMALL_JOBS_CONF  # local: one JVM, the driver's
    medium = [sqlite_store(tmp_path, "big", 1, SMALL_STORES_EVENTS + 1)]
    # The executors' memory is the cluster's to set: no driver heap is chosen either.
    assert conf_for_stores(medium, False, {}) == Tuning(
        {"spark.driver.extraJavaOptions": LEAN_JVM, "spark.executor.extraJavaOptions": LEAN_JVM},
        SMALL_STORES_EVENTS + 1, "medium")


def test_a_store_that_cannot_be_read_leaves_the_settings_alone(tmp_path):
    missing = parse_store_url(f"sqlite:///{tmp_path / 'none.db'}")
    assert estimated_events(missing) is None
    assert conf_for_stores([missing], True, {}) == Tuning({})


def test_a_postgresql_store_is_estimated_from_its_event_ids(make_pg_url):
    store = store_with(make_pg_url(), 5, 1_004)
    assert estimated_events(store) == 1_000
