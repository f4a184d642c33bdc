"""Store URLs -> JDBC, and finding the driver jars on disk (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark.errors import AnalyticsError
from spark.jdbc import driver_jar, driver_jars, parse_store_url


def test_sqlite_url_becomes_a_read_only_jdbc_url():
    s = parse_store_url("sqlite:////var/lib/meshmq/node-a/journal.db")
    assert s.backend == "sqlite"
    assert s.jdbc_url == "jdbc:sqlite:/var/lib/meshmq/node-a/journal.db?open_mode=1"
    assert s.driver == "org.sqlite.JDBC"
    assert s.path == "/var/lib/meshmq/node-a/journal.db"


def test_relative_sqlite_path_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_store_url("sqlite:///data/journal.db").path == str(tmp_path / "data" / "journal.db")


@pytest.mark.parametrize("scheme", ["postgresql+psycopg", "postgresql", "postgres"])
def test_postgresql_url_keeps_credentials_out_of_the_jdbc_url(scheme):
    s = parse_store_url(f"{scheme}://meshmq:s3cret@db.example:5433/cluster?sslmode=require")
    assert s.backend == "postgresql"
    assert s.jdbc_url == "jdbc:postgresql://db.example:5433/cluster?sslmode=require&connectTimeout=5"
    assert s.properties == {"user": "meshmq", "password": "s3cret"}
    assert "s3cret" not in s.display and "s3cret" not in s.jdbc_url
    assert s.driver == "org.postgresql.Driver"


def test_postgresql_defaults_host_and_port():
    s = parse_store_url("postgresql+psycopg://root@/meshmq")
    assert s.jdbc_url == "jdbc:postgresql://localhost:5432/meshmq?connectTimeout=5"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u@h/db", "unsupported store 'mysql'"),
        ("sqlite://", "name the SQLite file"),
        ("postgresql://u@h:5432", "name the database"),
        ("not a url", "is not a store URL"),
    ],
)
def test_bad_store_urls_say_what_to_write(url, message):
    with pytest.raises(AnalyticsError, match=message):
        parse_store_url(url)


def test_driver_jars_are_the_debian_files():
    jars = driver_jars()
    assert len(jars) == 2
    assert all(Path(j).is_file() and j.endswith(".jar") for j in jars)


def test_a_missing_jar_names_the_package_and_the_script(monkeypatch, tmp_path):
    monkeypatch.setattr("spark.jdbc.DRIVERS", {
        "sqlite": ("libxerial-sqlite-jdbc-java", (str(tmp_path / "nope.jar"),), "org.sqlite.JDBC"),
    })
    with pytest.raises(AnalyticsError) as err:
        driver_jar("sqlite")
    assert "libxerial-sqlite-jdbc-java" in str(err.value)
    assert "scripts/ensure_spark.sh" in str(err.value)


def test_an_explicit_jar_path_wins_and_must_exist(monkeypatch, tmp_path):
    jar = tmp_path / "pg.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("MESHMQ_POSTGRES_JDBC_JAR", str(jar))
    assert driver_jar("postgresql") == str(jar)
    monkeypatch.setenv("MESHMQ_POSTGRES_JDBC_JAR", str(tmp_path / "missing.jar"))
    with pytest.raises(AnalyticsError, match="is not a file"):
        driver_jar("postgresql")
