"""Opening journal stores for a report: checks first, then DataFrames.

`open_store` makes sure a store is a meshmq journal this code can read (the
file or server is reachable, the tables and columns exist, the schema version
matches, the node has an id) and takes its bounds; every failure becomes an
AnalyticsError naming the store. `read_events` and `read_live` then read it,
the large tables in parallel JDBC partitions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from spark import jdbc
from spark.errors import AnalyticsError, explain
from spark.jdbc import Store

SCHEMA_VERSION = "6"

#: What the report reads, per table (docs/journal-schema.md).
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "node_state": ("key", "value"),
    "events": ("event_id", "node_id", "kind", "ts", "address", "queue", "message_id", "message_ts", "from_node_id",
               "from_message_id"),
    "queues": ("queue_id", "name", "address"),
    "messages": ("message_id", "size", "timestamp", "queue_id"),
    "message_refs": ("queue_id", "message_id"),
    "paged_messages": ("queue_id", "message_id", "size", "timestamp"),
}

#: The events as the report reads them: what it uses of the table (not `size`, `delivery_count`).
EVENT_SCHEMA = (
    "event_id BIGINT, node_id STRING, kind STRING, ts BIGINT, address STRING, queue STRING, "
    "message_id BIGINT, message_ts BIGINT, from_node_id STRING, from_message_id BIGINT"
)
_EVENT_SELECT = (
    'SELECT "event_id", "node_id", "kind", "ts", "address", "queue", "message_id", "message_ts", "from_node_id", '
    '"from_message_id" FROM events'
)

_CATALOG_SQL = {
    "sqlite": (
        "SELECT m.name AS table_name, p.name AS column_name "
        "FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'"
    ),
    "postgresql": (
        "SELECT table_name::text AS table_name, column_name::text AS column_name "
        "FROM information_schema.columns WHERE table_schema = current_schema()"
    ),
}


@dataclass(frozen=True)
class NodeStore:
    """A checked store: the node it belongs to and the bounds of its tables."""

    store: Store
    node_id: str
    node_name: str
    events: int
    read_from_event_id: int | None  # the first event at or after --since (None: there is none)
    last_event_id: int | None
    first_ts: int | None
    last_ts: int | None
    messages: int
    first_message_id: int | None
    last_message_id: int | None
    # Event retention deleted every event before this instant (ms; None: nothing deleted).
    kept_from: int | None = None

    @property
    def display(self) -> str:
        return self.store.display


# ----------------------------------------------------------------- pure checks


def check_catalog(display: str, columns: dict[str, set[str]]) -> None:
    """Raise AnalyticsError if `columns` (table -> column names) lacks what the report reads."""
    if "node_state" not in columns or "events" not in columns:
        if not columns:
            raise AnalyticsError(f"store {display} is empty: it has no tables (not a meshmq journal, or never opened by a broker)")
        raise AnalyticsError(
            f"store {display} is not a meshmq journal: it has no "
            f"{'node_state' if 'node_state' not in columns else 'events'} table"
        )
    missing = [
        f"{table}.{column}" if table in columns else table
        for table, wanted in REQUIRED_COLUMNS.items()
        for column in (wanted if table in columns else wanted[:1])
        if table not in columns or column not in columns[table]
    ]
    if missing:
        raise AnalyticsError(
            f"store {display} has an older or different journal schema: missing {', '.join(missing)}; "
            f"this report reads schema version {SCHEMA_VERSION} (docs/journal-schema.md)"
        )


def check_node_state(display: str, state: dict[str, str]) -> tuple[str, str]:
    """(node_id, node_name) from node_state, or AnalyticsError for a version this code does not read."""
    version = state.get("schema_version")
    if version is None:
        raise AnalyticsError(
            f"store {display} has no schema_version in node_state (an older journal?); "
            f"this report reads schema version {SCHEMA_VERSION}"
        )
    if version.strip() != SCHEMA_VERSION:
        raise AnalyticsError(
            f"store {display} has journal schema version {version}; this report reads version {SCHEMA_VERSION} "
            f"(open the store with a matching meshmq)"
        )
    node_id = state.get("node_id")
    if not node_id:
        raise AnalyticsError(f"store {display} has no node_id in node_state: no broker has opened it")
    return node_id, state.get("node_name", "") or node_id[:8]


def check_distinct_nodes(stores: list[NodeStore]) -> None:
    """Two stores of one node would count everything twice."""
    seen: dict[str, NodeStore] = {}
    for ns in stores:
        other = seen.get(ns.node_id)
        if other is not None:
            raise AnalyticsError(
                f"stores {other.display} and {ns.display} belong to the same node {ns.node_id} "
                f"(the same store twice, or a copied data directory); give each node's store once"
            )
        seen[ns.node_id] = ns


# ----------------------------------------------------------------- reading


def _collect(spark, store: Store, query: str, schema: str, what: str) -> list:
    try:
        return jdbc.read(spark, store, query, schema).collect()
    except Exception as exc:  # noqa: BLE001 - JVM errors of every kind become one line
        raise AnalyticsError(f"store {store.display}: reading {what} failed: {explain(exc)}") from exc


def open_store(spark, store: Store, since: int | None = None) -> NodeStore:
    """Check `store` and take its bounds (see module docstring)."""
    if store.backend == "sqlite" and not os.path.isfile(store.path or ""):
        where = "no such file" if not os.path.exists(store.path or "") else "not a file"
        raise AnalyticsError(f"store {store.display} cannot be opened: {where}")
    try:
        catalog_rows = jdbc.read(spark, store, _CATALOG_SQL[store.backend], "table_name STRING, column_name STRING").collect()
    except Exception as exc:  # noqa: BLE001
        verb = "is unreachable" if store.backend == "postgresql" else "cannot be opened"
        raise AnalyticsError(f"store {store.display} {verb}: {explain(exc)}") from exc
    columns: dict[str, set[str]] = {}
    for row in catalog_rows:
        columns.setdefault(row["table_name"], set()).add(row["column_name"])
    # The version first: an older journal is best named by its version, then by what it lacks.
    node, state = None, {}
    if {"key", "value"} <= columns.get("node_state", set()):
        state_rows = _collect(spark, store, 'SELECT "key", "value" FROM node_state', "key STRING, value STRING", "node_state")
        state = {r["key"]: r["value"] for r in state_rows}
        node = check_node_state(store.display, state)
    check_catalog(store.display, columns)
    assert node is not None  # check_catalog refused a store without node_state.key/value
    node_id, node_name = node

    window_first = f"(SELECT min(event_id) FROM events WHERE ts >= {int(since)})" if since is not None else "min(event_id)"
    bounds = _collect(
        spark,
        store,
        f"SELECT {window_first} AS window_first_id, max(event_id) AS last_id, "
        "count(*) AS n, min(ts) AS first_ts, max(ts) AS last_ts, "
        "(SELECT count(*) FROM messages) + (SELECT count(*) FROM paged_messages) AS messages, "
        "(SELECT min(message_id) FROM (SELECT message_id FROM messages UNION ALL "
        "SELECT message_id FROM paged_messages) AS ids) AS first_mid, "
        "(SELECT max(message_id) FROM (SELECT message_id FROM messages UNION ALL "
        "SELECT message_id FROM paged_messages) AS ids) AS last_mid FROM events",
        "window_first_id BIGINT, last_id BIGINT, n BIGINT, first_ts BIGINT, last_ts BIGINT, "
        "messages BIGINT, first_mid BIGINT, last_mid BIGINT",
        "the table bounds",
    )[0]
    return NodeStore(
        store=store,
        node_id=node_id,
        node_name=node_name,
        events=int(bounds["n"] or 0),
        read_from_event_id=bounds["window_first_id"],
        last_event_id=bounds["last_id"],
        first_ts=bounds["first_ts"],
        last_ts=bounds["last_ts"],
        messages=int(bounds["messages"] or 0),
        first_message_id=bounds["first_mid"],
        last_message_id=bounds["last_mid"],
        kept_from=int(state["events_kept_from"]) if state.get("events_kept_from") else None,
    )


def snapshot_condition(nodes: list[NodeStore]):
    """True for the events each node had written when its bounds were taken
    (its event_id <= the max it reported): the report's consistent snapshot."""
    from functools import reduce

    from pyspark.sql import functions as F

    parts = [
        (F.col("node_id") == n.node_id) & (F.col("event_id") <= F.lit(n.last_event_id))
        for n in nodes if n.last_event_id is not None
    ]
    return reduce(lambda a, b: a | b, parts) if parts else F.lit(False)


def read_events(spark, ns: NodeStore, partitions: int):
    """The node's events from the window's first one to the end of the log,
    in `partitions` ranges of event_id; None when there are none."""
    if ns.read_from_event_id is None or ns.last_event_id is None:
        return None
    lo, hi = int(ns.read_from_event_id), int(ns.last_event_id)
    query = f"{_EVENT_SELECT} WHERE event_id >= {lo}"
    return jdbc.read(spark, ns.store, query, EVENT_SCHEMA, partition=("event_id", lo, hi + 1, partitions))


def read_live(spark, ns: NodeStore, partitions: int):
    """(queues, waiting) of the node's live state, each with a node_id column.

    waiting = the stored queue references: inline ones on `messages`,
    `message_refs`, and paged messages, with the message's size and
    timestamp; read in ranges of message_id."""
    from pyspark.sql import functions as F

    queues = jdbc.read(
        spark, ns.store, 'SELECT "queue_id", "name" AS queue, "address" FROM queues',
        "queue_id BIGINT, queue STRING, address STRING",
    ).withColumn("node_id", F.lit(ns.node_id))
    query = (
        'SELECT "message_id", "queue_id", "size", "timestamp" FROM messages WHERE "queue_id" IS NOT NULL '
        'UNION ALL SELECT r."message_id", r."queue_id", m."size", m."timestamp" '
        'FROM message_refs r JOIN messages m ON m."message_id" = r."message_id" '
        'UNION ALL SELECT "message_id", "queue_id", "size", "timestamp" FROM paged_messages'
    )
    schema = "message_id BIGINT, queue_id BIGINT, size BIGINT, timestamp BIGINT"
    if ns.messages and ns.first_message_id is not None:
        lo, hi = int(ns.first_message_id), int(ns.last_message_id)
        waiting = jdbc.read(spark, ns.store, query, schema, partition=("message_id", lo, hi + 1, partitions))
    else:
        waiting = jdbc.read(spark, ns.store, query, schema)
    return queues, waiting.withColumn("node_id", F.lit(ns.node_id))
