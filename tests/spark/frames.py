"""Hand-made event rows for testing the Spark transformations."""

from __future__ import annotations

from spark.store import EVENT_SCHEMA

_ids = iter(range(1, 10**9))


def ev(kind: str, ts: int, *, node: str = "n1", address: str = "a", queue: str | None = None, mid: int = 1,
       message_ts: int | None = None, came_from: tuple[str, int] | None = None) -> tuple:
    """One event row; `came_from` = (node, message id) on the ENQUEUED of a forwarded message."""
    src_node, src_mid = came_from or (None, None)
    return (next(_ids), node, kind, ts, address, queue or address, mid, ts if message_ts is None else message_ts,
            src_node, src_mid)


def events_frame(spark, rows: list[tuple]):
    return spark.createDataFrame(rows, EVENT_SCHEMA)


def nodes_frame(spark, names: dict[str, str]):
    return spark.createDataFrame(list(names.items()), "node_id STRING, node_name STRING")
