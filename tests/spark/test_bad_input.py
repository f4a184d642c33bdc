"""Bad input gives one clear `error:` line and exit code 2, never a Java stack trace."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from meshmq.cli.analytics import analytics
from spark.store import SCHEMA_VERSION
from tests.fixtures.nodes import free_port
from tests.spark.workload import sqlite_url

pytestmark = pytest.mark.integration


def run_cli(*args: str):
    return CliRunner().invoke(analytics, ["report", *args])


def assert_clean_error(result, expected: str) -> None:
    assert result.exit_code == 2, result.output
    # off a terminal, progress is one "analytics: <step>" line per step; then the one error line
    lines = [line for line in result.output.splitlines() if not line.startswith("analytics: ")]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert expected in lines[0], lines[0]
    for java in ("Traceback", "Py4J", "\tat ", "java.", "org.apache"):
        assert java not in result.output


def copy_store(src: Path, dst: Path) -> Path:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    return dst


def test_unreachable_postgresql_store(spark_session, tmp_path):
    port = free_port()  # nothing listens there
    url = f"postgresql+psycopg://meshmq:secret@127.0.0.1:{port}/meshmq"
    result = run_cli("--store", url, "--out", str(tmp_path))
    assert_clean_error(
        result, f"error: store postgresql+psycopg://meshmq:***@127.0.0.1:{port}/meshmq is unreachable: "
                f"Connection to 127.0.0.1:{port} refused",
    )
    assert "secret" not in result.output


def test_missing_sqlite_file(tmp_path):
    result = run_cli("--store", sqlite_url(tmp_path / "nope" / "journal.db"), "--out", str(tmp_path / "out"))
    assert_clean_error(result, f"store sqlite:///{tmp_path}/nope/journal.db cannot be opened: no such file")
    assert not (tmp_path / "nope").exists()


def test_a_file_that_is_not_sqlite(spark_session, tmp_path):
    bogus = tmp_path / "journal.db"
    bogus.write_text("not a database, just text " * 100)
    assert_clean_error(run_cli("--store", sqlite_url(bogus), "--out", str(tmp_path / "out")),
                       "cannot be opened: [SQLITE_NOTADB]")


def test_an_empty_store_with_the_tables_but_no_events(spark_session, tmp_path):
    from services.journal.store import JournalStore

    path = tmp_path / "journal.db"
    store = JournalStore(sqlite_url(path))
    store.open("idle")  # what a broker does at first start: schema, node id, no events
    store.close()
    assert_clean_error(run_cli("--store", sqlite_url(path), "--out", str(tmp_path / "out")),
                       f"store has no events: sqlite:///{path} (a journal is empty until its broker stores")


def test_a_database_without_the_journal_tables(spark_session, tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY)")
    assert_clean_error(run_cli("--store", sqlite_url(path), "--out", str(tmp_path / "out")),
                       "is not a meshmq journal: it has no node_state table")


def test_a_store_of_an_older_schema_version(spark_session, sqlite_cluster, tmp_path):
    path = copy_store(sqlite_cluster["beta"].path, tmp_path / "old.db")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE node_state SET value = '0' WHERE key = 'schema_version'")
    assert_clean_error(run_cli("--store", sqlite_url(path), "--out", str(tmp_path / "out")),
                       f"store sqlite:///{path} has journal schema version 0; this report reads version {SCHEMA_VERSION}")


def test_a_store_missing_a_column(spark_session, sqlite_cluster, tmp_path):
    path = copy_store(sqlite_cluster["beta"].path, tmp_path / "old.db")
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE events DROP COLUMN message_ts")
    assert_clean_error(run_cli("--store", sqlite_url(path), "--out", str(tmp_path / "out")),
                       "has an older or different journal schema: missing events.message_ts")


def test_an_inverted_time_window(tmp_path):
    result = run_cli("--store", sqlite_url(tmp_path / "j.db"), "--out", str(tmp_path),
                     "--since", "2026-05-02T00:00Z", "--until", "2026-05-01T00:00Z")
    assert_clean_error(result, "inverted time window: --since 2026-05-02T00:00Z (2026-05-02T00:00:00.000Z) is after")


def test_the_same_node_twice(spark_session, sqlite_cluster, tmp_path):
    beta = sqlite_cluster["beta"]
    copy = copy_store(beta.path, tmp_path / "copy.db")
    assert_clean_error(run_cli("--store", beta.url, "--store", sqlite_url(copy), "--out", str(tmp_path / "out")),
                       "belong to the same node")


def test_a_bad_conf_option(tmp_path):
    assert_clean_error(run_cli("--store", "sqlite:////x.db", "--out", str(tmp_path), "--conf", "nonsense"),
                       "--conf 'nonsense': expected KEY=VALUE")
