"""The journal's SQL schema (SQLAlchemy Core), documented in docs/journal-schema.md.

Live state (addresses, queues, messages, message_refs, large_message_chunks,
duplicate_ids) is what recovery reads; `events` is the append-only log of
message life that analytics reads (never bodies). Bump SCHEMA_VERSION with any
change: a store of another version is refused with a clear message rather than
misread.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    false,
)

# 2: messages.message_id is SQLite's rowid and messages.queue_id has no index
# (two B-trees fewer to update per stored and per acknowledged message).
# Version 1 stores are migrated at open (store.py).
# 3: paged_messages, one row per (queue, message) a full address pages
# instead of holding in memory; a version 2 store only gains the table.
# 4: events.from_node_id / from_message_id: on the ENQUEUED of a message
# another node forwarded here, where it came from (analytics follows a
# message across the cluster by it); older stores gain the two columns.
# 5: queues.last_value_key / non_destructive / exclusive, Artemis's queue
# attributes; older stores gain them as "an ordinary queue".
# 6: group_bindings, a LOCAL grouping handler's decisions (clustered grouping);
# queues.group_buckets / group_rebalance / group_rebalance_pause_dispatch /
# group_first_key, the message-group attributes (group_buckets NULL: a queue
# stored before they were kept, which takes the address settings' defaults).
# Older stores gain the table and the columns.
SCHEMA_VERSION = 6

metadata = MetaData()

# A 64-bit key that is SQLite's rowid there: one B-tree per table instead of
# the table plus a separate primary-key index.
_RowKey = BigInteger().with_variant(Integer(), "sqlite")

node_state = Table(
    "node_state",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(255), nullable=False),
)

addresses = Table(
    "addresses",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("routing_types", SmallInteger, nullable=False),
    Column("auto_created", Boolean, nullable=False),
)

queues = Table(
    "queues",
    metadata,
    Column("queue_id", BigInteger, primary_key=True, autoincrement=False),
    Column("name", String(255), nullable=False, index=True),
    Column("address", String(255), nullable=False),
    Column("routing_type", SmallInteger, nullable=False),
    Column("filter", Text, nullable=False),
    Column("auto_created", Boolean, nullable=False),
    Column("last_value_key", String(255), nullable=True),
    Column("non_destructive", Boolean, nullable=False, server_default=false()),
    Column("exclusive", Boolean, nullable=False, server_default=false()),
    # Message groups; group_buckets NULL: not recorded (a queue from before version 6).
    Column("group_buckets", Integer, nullable=True),
    Column("group_rebalance", Boolean, nullable=False, server_default=false()),
    Column("group_rebalance_pause_dispatch", Boolean, nullable=False, server_default=false()),
    Column("group_first_key", String(255), nullable=True),
)

messages = Table(
    "messages",
    metadata,
    Column("message_id", _RowKey, primary_key=True, autoincrement=False),
    Column("address", String(255), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("timestamp", BigInteger, nullable=False),
    Column("large", Boolean, nullable=False),
    # The one stored queue reference, inline (NULL when message_refs holds them).
    # Not indexed: only deleting a queue looks rows up by it (a scan, rarely),
    # while every append and every ack would pay for the index.
    Column("queue_id", BigInteger, nullable=True),
    Column("delivery_count", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
)

message_refs = Table(
    "message_refs",
    metadata,
    Column("queue_id", BigInteger, primary_key=True, autoincrement=False),
    Column("message_id", BigInteger, primary_key=True, autoincrement=False),
    Column("delivery_count", Integer, nullable=False),
)

large_message_chunks = Table(
    "large_message_chunks",
    metadata,
    Column("message_id", BigInteger, primary_key=True, autoincrement=False),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("data", LargeBinary, nullable=False),
)

# A paged message, for one queue: not loaded at recovery, read back in id
# order as the queue drains (ReadPage), deleted when acknowledged. Rows are
# appended in rowid order (a 1 KB row clustered by (queue_id, message_id), a
# WITHOUT ROWID table, cost about a quarter of the paging throughput);
# the small index gives a page as one range scan.
paged_messages = Table(
    "paged_messages",
    metadata,
    Column("page_row", _RowKey, primary_key=True, autoincrement=True),
    Column("queue_id", BigInteger, nullable=False),
    Column("message_id", BigInteger, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("timestamp", BigInteger, nullable=False),
    Column("delivery_count", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
)
Index("paged_messages_queue", paged_messages.c.queue_id, paged_messages.c.message_id, unique=True)

duplicate_ids = Table(
    "duplicate_ids",
    metadata,
    Column("address", String(255), primary_key=True),
    Column("duplicate_id", String(255), primary_key=True),
    Column("position", BigInteger, nullable=False),
)

# Clustered grouping: which node's queue each message group goes to, as the
# LOCAL grouping handler decided (kept so the decisions survive its restart).
group_bindings = Table(
    "group_bindings",
    metadata,
    Column("handler", String(255), primary_key=True),
    Column("group_id", String(512), primary_key=True),
    Column("node_id", String(64), nullable=False),
)

events = Table(
    "events",
    metadata,
    Column("event_id", _RowKey, primary_key=True, autoincrement=True),
    Column("node_id", String(64), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("ts", BigInteger, nullable=False),
    Column("address", String(255), nullable=False),
    Column("queue", String(255), nullable=False),
    Column("message_id", BigInteger, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("delivery_count", Integer, nullable=False),
    Column("message_ts", BigInteger, nullable=False),
    # Set on the ENQUEUED of a forwarded message only (bridge, redistribution,
    # scale-down): the sending node and the message's id there.
    Column("from_node_id", String(64), nullable=True),
    Column("from_message_id", BigInteger, nullable=True),
)
Index("events_ts", events.c.ts)

EVENT_KIND_NAMES = {
    1: "ENQUEUED",
    2: "DELIVERED",
    3: "ACKNOWLEDGED",
    4: "EXPIRED",
    5: "DEAD_LETTERED",
    6: "REMOVED",
}
