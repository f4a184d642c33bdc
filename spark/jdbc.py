"""JDBC access to a journal store: driver jars on disk, store URLs, reads.

Stores are named with the SQLAlchemy URLs the broker uses
(``sqlite:////abs/journal.db``, ``postgresql+psycopg://user@host:port/db``)
and turned into JDBC URLs here. Drivers are Debian's jars
(``libxerial-sqlite-jdbc-java``, ``libpostgresql-jdbc-java``), handed to Spark
with ``spark.jars``; nothing is downloaded (``spark.jars.packages`` would try).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlencode

from spark.errors import AnalyticsError

#: backend -> (Debian package, jar paths tried in order, JDBC driver class)
DRIVERS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "sqlite": (
        "libxerial-sqlite-jdbc-java",
        ("/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/xerial-sqlite-jdbc.jar"),
        "org.sqlite.JDBC",
    ),
    "postgresql": (
        "libpostgresql-jdbc-java",
        ("/usr/share/java/postgresql.jar",),
        "org.postgresql.Driver",
    ),
}
#: Environment variables that name a jar explicitly (a non-Debian machine).
JAR_ENV = {"sqlite": "MESHMQ_SQLITE_JDBC_JAR", "postgresql": "MESHMQ_POSTGRES_JDBC_JAR"}

PG_CONNECT_TIMEOUT_S = 5
FETCH_SIZE = 10_000


def driver_jar(backend: str) -> str:
    """The on-disk JDBC driver jar for one backend, or AnalyticsError saying how to get it."""
    package, candidates, _ = DRIVERS[backend]
    explicit = os.environ.get(JAR_ENV[backend])
    if explicit:
        if Path(explicit).is_file():
            return str(Path(explicit).resolve())
        raise AnalyticsError(f"{JAR_ENV[backend]}={explicit} is not a file")
    for path in candidates:
        if Path(path).is_file():
            return str(Path(path).resolve())
    raise AnalyticsError(
        f"no {backend} JDBC driver jar (looked for {', '.join(candidates)}); install Debian's {package} "
        f"(as root: bash scripts/ensure_spark.sh) or set {JAR_ENV[backend]} to the jar's path"
    )


def driver_jars(backends: tuple[str, ...] | list[str] = ("sqlite", "postgresql")) -> list[str]:
    """The jars for `backends`, for ``spark.jars``. Raises AnalyticsError naming the first missing one."""
    return [driver_jar(b) for b in dict.fromkeys(backends)]


@dataclass(frozen=True)
class Store:
    """One journal store as Spark reaches it."""

    url: str  # as given (may hold a password: never print it, print `display`)
    display: str
    backend: str  # "sqlite" | "postgresql"
    jdbc_url: str
    properties: dict[str, str] = field(default_factory=dict, compare=False)
    path: str | None = None  # the SQLite file

    @property
    def driver(self) -> str:
        return DRIVERS[self.backend][2]


def normalized_url(url: str) -> str:
    """`url` as SQLAlchemy reads it (`postgres://` is PostgreSQL's own short form)."""
    raw = url.strip()
    if raw.startswith("postgres://"):
        raw = "postgresql://" + raw[len("postgres://") :]
    return raw


def parse_store_url(url: str) -> Store:
    """A broker store URL -> Store. Raises AnalyticsError for what JDBC cannot read."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    raw = normalized_url(url)
    try:
        parsed = make_url(raw)
    except ArgumentError:
        raise AnalyticsError(
            f"--store {url!r} is not a store URL: use sqlite:////abs/path/journal.db or postgresql://user@host:port/db"
        ) from None
    display = parsed.render_as_string(hide_password=True)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:" or parsed.database.startswith("file:"):
            raise AnalyticsError(f"--store {display}: name the SQLite file, e.g. sqlite:////abs/path/journal.db")
        path = os.path.abspath(parsed.database)
        # open_mode=1 is SQLITE_OPEN_READONLY: never create a file, never write to a node's journal.
        return Store(url, display, "sqlite", f"jdbc:sqlite:{path}?open_mode=1", {}, path)
    if backend == "postgresql":
        if not parsed.database:
            raise AnalyticsError(f"--store {display}: name the database, e.g. postgresql://user@host:5432/meshmq")
        host = parsed.host or "localhost"
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        params = {k: v for k, v in parsed.query.items() if isinstance(v, str)}
        params.setdefault("connectTimeout", str(PG_CONNECT_TIMEOUT_S))
        props = {}
        if parsed.username:
            props["user"] = parsed.username
        if parsed.password:
            props["password"] = str(parsed.password)
        jdbc = f"jdbc:postgresql://{host}:{parsed.port or 5432}/{quote(parsed.database)}?{urlencode(params)}"
        return Store(url, display, "postgresql", jdbc, props, None)
    raise AnalyticsError(f"--store {display}: unsupported store {backend!r}; use sqlite:///... or postgresql://...")


def read(spark, store: Store, query: str, schema: str, *, partition: tuple[str, int, int, int] | None = None):
    """A DataFrame over `query` on `store`.

    `schema` is Spark's ``customSchema`` for every column: the SQLite driver
    reports no type for expressions and BIGINT as DECIMAL, so types are always
    stated. `partition` = (column, lower, upper, partitions) reads in parallel
    ranges of an integer column, one JDBC connection each. Predicates are not
    pushed down: on SQLite a pushed ``ts`` filter could make each partition's
    range scan use the ts index instead of the rowid range.
    """
    reader = (
        spark.read.format("jdbc")
        .option("url", store.jdbc_url)
        .option("driver", store.driver)
        .option("customSchema", schema)
        .option("fetchsize", FETCH_SIZE)
        .option("pushDownPredicate", "false")
    )
    for key, value in store.properties.items():
        reader = reader.option(key, value)
    if partition is None:
        return reader.option("query", query).load()
    column, lower, upper, partitions = partition
    return (
        reader.option("dbtable", f"({query}) AS t")
        .option("partitionColumn", column)
        .option("lowerBound", str(lower))
        .option("upperBound", str(max(upper, lower + 1)))
        .option("numPartitions", str(max(1, partitions)))
        .load()
    )
