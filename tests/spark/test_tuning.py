"""The report's Spark settings chosen from the stores' sizes before the JVM
starts (spark/tuning.py), on real SQLite files and a real PostgreSQL
database holding the journal's own `events` table: small stores get the
small-jobs settings, large ones and a remote master do not, and a user's
own setting of any of them wins."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, insert

from services.journal.schema import events, metadata
from spark.jdbc import parse_store_url
from spark.tuning import SMALL_JOBS_CONF, SMALL_STORES_EVENTS, estimated_events, conf_for_stores

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


def test_small_stores_get_the_small_jobs_settings_and_large_ones_do_not(tmp_path):
    small = [sqlite_store(tmp_path, f"n{k}", 1, 4_000) for k in range(3)]
    conf, events_seen = conf_for_stores(small, True, {"spark.driver.memory": "2g"})
    assert events_seen == 12_000 and conf == {**SMALL_JOBS_CONF, "spark.driver.memory": "2g"}

    large = small + [sqlite_store(tmp_path, "big", 101, 100 + SMALL_STORES_EVENTS)]
    conf, events_seen = conf_for_stores(large, True, {})
    assert events_seen == 12_000 + SMALL_STORES_EVENTS and conf == {}


def test_a_users_setting_keeps_spark_as_configured(tmp_path):
    small = [sqlite_store(tmp_path, "n1", 1, 10)]
    for given in ({"spark.sql.codegen.wholeStage": "true"}, {"spark.executor.extraJavaOptions": "-Xss4m"}):
        assert conf_for_stores(small, False, given) == (given, None)
    assert conf_for_stores(small, True, {"spark.driver.extraJavaOptions": "-Xss4m"}) == (
        {"spark.driver.extraJavaOptions": "-Xss4m"}, None)


def test_a_cluster_masters_executors_get_the_small_jobs_jvm_settings_too(tmp_path):
    small = [sqlite_store(tmp_path, "n1", 1, 10)]
    conf, events_seen = conf_for_stores(small, False, {"spark.executor.memory": "512m"})
    assert events_seen == 10 and conf == {**SMALL_JOBS_CONF, "spark.executor.memory": "512m",
                                          "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    assert conf_for_stores(small, True, {})[0] == SMALL_JOBS_CONF  # local: one JVM, the driver's


def test_a_store_that_cannot_be_read_leaves_the_settings_alone(tmp_path):
    missing = parse_store_url(f"sqlite:///{tmp_path / 'none.db'}")
    assert estimated_events(missing) is None
    assert conf_for_stores([missing], True, {}) == ({}, None)


def test_a_postgresql_store_is_estimated_from_its_event_ids(make_pg_url):
    store = store_with(make_pg_url(), 5, 1_004)
    assert estimated_events(store) == 1_000
