"""Synchronous SQL access for one node's journal.

Only the journal's writer process calls `apply` (writer_process.py); reads
(`load_pages`, `read_large`) run in the journal service's process on their
own connections, which SQLite's WAL mode lets run beside the writer. Nothing
here is ever called on an event loop.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from itertools import chain
import uuid
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import and_, create_engine, delete, event, func, inspect, select, text, update
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from meshmq.errors import FencedError, InvalidRequestError, Reason
from meshmq.pg_sessions import stuck_transaction_options
from meshmq.v1 import journal_pb2 as jpb

from . import schema as s
from .overlap import only_rows

log = logging.getLogger("meshmq.journal")

LOAD_PAGE_MESSAGES = 2000
CHECKPOINT_PERIOD_S = 0.25
# The writer finishes a checkpoint once the WAL is this long (16 MiB of 4 KiB pages).
WAL_RESTART_FRAMES = 4096
WAL_SIZE_LIMIT = 64 * 2**20
# The queues columns an older store may lack (_add_queue_attributes), with their DDL.
QUEUE_ATTRIBUTE_COLUMNS = (
    ("last_value_key", "VARCHAR(255)"),
    ("non_destructive", "BOOLEAN NOT NULL DEFAULT FALSE"),
    ("exclusive", "BOOLEAN NOT NULL DEFAULT FALSE"),
    ("group_buckets", "INTEGER"),
    ("group_rebalance", "BOOLEAN NOT NULL DEFAULT FALSE"),
    ("group_rebalance_pause_dispatch", "BOOLEAN NOT NULL DEFAULT FALSE"),
    ("group_first_key", "VARCHAR(255)"),
)


class StoreError(RuntimeError):
    """The store cannot be used (unreachable, wrong schema, ...); the message says why."""


def describe_url(url: str) -> str:
    """The URL with any password hidden, for logs and NodeInfo."""
    return make_url(url).render_as_string(hide_password=True)


def _sqlite_pragmas(sync: bool):
    def on_connect(dbapi_conn, _record) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        # FULL: the WAL is fsynced at every commit, so a confirmed message is on disk.
        cur.execute(f"PRAGMA synchronous={'FULL' if sync else 'OFF'}")
        cur.execute("PRAGMA busy_timeout=10000")
        cur.execute("PRAGMA foreign_keys=OFF")
        # Checkpoints run on the checkpointer thread, never inside a commit
        # (an in-commit checkpoint stalls every waiting producer).
        cur.execute("PRAGMA wal_autocheckpoint=0")
        cur.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        # Debian's SQLite zeroes deleted content (SECURE_DELETE), rewriting every
        # page an ack frees: a fifth of the WAL traffic. FAST zeroes only where
        # that costs no extra I/O; acknowledged bodies may linger in free pages
        # until reused, as records do in Artemis's journal files until compaction.
        cur.execute("PRAGMA secure_delete=FAST")
        # Statement journals (multi-row statements inside a transaction) in
        # memory: Debian's build would create, write and unlink a temp file each time.
        cur.execute("PRAGMA temp_store=MEMORY")
        cur.close()

    return on_connect


def create_store_engine(url: str, *, sync: bool = True, stuck_transaction_ms: int = 0) -> Engine:
    """An engine for a journal URL: SQLite (file, WAL) or PostgreSQL (psycopg 3).
    `stuck_transaction_ms` (PostgreSQL, > 0): see stuck_transaction_options."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, connect_args={"check_same_thread": False, "timeout": 10})
        event.listen(engine, "connect", _sqlite_pragmas(sync))
        return engine
    if backend == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        connect_args: dict = {"connect_timeout": 5}
        if stuck_transaction_ms > 0:
            connect_args.update(stuck_transaction_options(stuck_transaction_ms))
        engine = create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
        from . import pg_arrays  # psycopg only where PostgreSQL is used (see _failed_in_pipeline)

        event.listen(engine, "connect", lambda c, _r: pg_arrays.register(c))
        if not sync:
            event.listen(engine, "connect", lambda c, _r: c.execute("SET synchronous_commit = off"))
        return engine
    raise StoreError(f"unsupported journal URL {describe_url(url)!r}: use sqlite:///PATH or postgresql://...")


class JournalStore:
    """One node's durable state in SQL. See docs/journal-schema.md."""

    def __init__(self, url: str, *, sync: bool = True, stuck_transaction_ms: int = 0) -> None:
        self.url = url
        self.engine = create_store_engine(url, sync=sync, stuck_transaction_ms=stuck_transaction_ms)
        self.node_id = ""
        self._backend = self.engine.dialect.name
        self._prepare_statements()
        self._checkpointer: threading.Thread | None = None
        self._stop = threading.Event()
        # WAL length seen by the last background checkpoint (SQLite).
        self._wal_frames = 0

    def start_checkpointer(self) -> None:
        """SQLite only: move WAL pages into the database off the commit path.

        Call it in the process that writes (the writer process): the writer
        finishes the checkpoints this thread starts (see `apply`).
        """
        if self._backend != "sqlite" or self._checkpointer is not None:
            return
        self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="journal-checkpointer", daemon=True)
        self._checkpointer.start()

    def _checkpoint_loop(self) -> None:
        with self.engine.connect() as conn:
            while not self._stop.wait(CHECKPOINT_PERIOD_S):
                try:
                    # PASSIVE never blocks the writer; frames written meanwhile are left over.
                    _, frames, _ = conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self._wal_frames = frames
                except DBAPIError as exc:
                    log.warning("WAL checkpoint failed: %s", exc)

    def _restart_wal(self, conn: Connection) -> None:
        """Backfill the frames written since the last background pass, between
        two of the writer's transactions.

        Under a steady stream of commits a background checkpoint never sees
        the whole WAL copied when a transaction begins, so SQLite never starts
        the WAL over: it grew without bound (measured: 160 MB in 8 s at 25k
        msg/s) and every page lookup walked a longer WAL index (a transaction
        went from 2 ms to 9 ms). Done here, nothing is committed in between,
        the next transaction restarts the WAL, and the copy is small because
        the background pass did most of it.
        """
        conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self._wal_frames = 0

    # ---------------------------------------------------------------- open

    def open(self, node_name: str) -> jpb.OpenResponse:
        """Create or check the schema and create the node id once; return the
        epoch as stored (0 before the first activation).

        Open fences nobody and takes nothing an owner relies on: once the
        store exists it writes only a changed node name, so a second opener
        (a backup on a shared store, a tool) can read beside the live owner.
        """
        try:
            with self.engine.begin() as conn:
                self._ensure_schema(conn)
                state = dict(conn.execute(select(s.node_state.c.key, s.node_state.c.value)).all())
                node_id = state.get("node_id")
                if node_id is None:
                    node_id = str(uuid.uuid4())
                    log.info("created node id %s (store %s)", node_id, describe_url(self.url))
                wanted = {
                    "node_id": node_id,
                    "node_name": node_name,
                    "schema_version": str(s.SCHEMA_VERSION),
                    # Written on first start only; after that the owner's (activate, append).
                    "epoch": state.get("epoch", "0"),
                    "reserved_message_ids_to": state.get("reserved_message_ids_to", "1"),
                }
                for key, value in wanted.items():
                    if state.get(key) != value:
                        self._put(conn, key, value)
        except OperationalError as exc:
            raise self._unreachable(exc) from exc
        self.node_id = node_id
        return jpb.OpenResponse(
            node_id=node_id,
            epoch=int(wanted["epoch"]),
            next_message_id=int(wanted["reserved_message_ids_to"]),
            store=describe_url(self.url),
            schema_version=s.SCHEMA_VERSION,
            events_kept_from=int(state.get("events_kept_from") or 0),
        )

    def activate(self, epoch: int) -> int:
        """Record `epoch`, granted by whoever activates the node, if it is
        greater than the stored one; from then on appends from any older
        epoch are refused. Returns the epoch recorded.

        Raises FencedError (changing nothing) for a grant that is not newer:
        it must never take the store from the owner holding that epoch.
        """
        if not self.node_id:
            raise InvalidRequestError("activate before open: open the journal store first")
        try:
            with self.engine.begin() as conn:
                cur = conn.connection.cursor()
                try:
                    # Checked and written under the write lock appends read the
                    # epoch under, so two grants, or a grant and an append, serialize.
                    stored = self._lock_epoch(cur)
                    if epoch <= stored:
                        raise FencedError(
                            f"activation at epoch {epoch} refused: the store is at epoch {stored}; "
                            "a grant must be newer than the stored epoch"
                        )
                    cur.execute(self._sql["set_epoch"], (str(epoch),))
                finally:
                    cur.close()
                # Rows a fenced owner left half written (a message whose references
                # never came, chunks of a large message never stored) are nobody's now.
                conn.execute(
                    s.messages.delete().where(
                        s.messages.c.queue_id.is_(None),
                        ~s.messages.c.message_id.in_(select(s.message_refs.c.message_id)),
                    )
                )
                conn.execute(
                    s.large_message_chunks.delete().where(
                        ~s.large_message_chunks.c.message_id.in_(select(s.messages.c.message_id))
                    )
                )
        except OperationalError as exc:
            raise self._unreachable(exc) from exc
        log.info("journal store %s activated at epoch %d (was %d)", describe_url(self.url), epoch, stored)
        return epoch

    def _lock_epoch(self, cur) -> int:
        """The stored epoch, read on a DBAPI cursor under the write lock
        (SQLite: BEGIN IMMEDIATE; PostgreSQL: FOR UPDATE), held until the
        transaction ends."""
        for stmt in self._sql["lock_epoch"]:
            cur.execute(stmt)
        row = cur.fetchone()
        return int(row[0]) if row else 0

    def _unreachable(self, exc: OperationalError) -> StoreError:
        return StoreError(f"journal store {describe_url(self.url)} is unreachable: {exc.orig}")

    def _ensure_schema(self, conn: Connection) -> None:
        insp = inspect(conn)
        if insp.has_table("node_state"):
            version = conn.execute(
                select(s.node_state.c.value).where(s.node_state.c.key == "schema_version")
            ).scalar()
            if version is not None and int(version) == 1:
                self._migrate_from_v1(conn)
            elif version is not None and int(version) == 2:
                log.info("journal store %s: schema version 2 -> 3 (adds paged_messages)", describe_url(self.url))
            elif version is not None and int(version) not in (3, 4, 5, s.SCHEMA_VERSION):
                raise StoreError(
                    f"journal store {describe_url(self.url)} has schema version {version}; "
                    f"this meshmq uses version {s.SCHEMA_VERSION}. Migrate or use a new store."
                )
            if version is not None and int(version) < 4:
                self._add_event_origin(conn)
            if version is not None:
                self._add_queue_attributes(conn)
        s.metadata.create_all(conn)

    def _migrate_from_v1(self, conn: Connection) -> None:
        """Version 1 -> 2: drop the index on messages.queue_id; on SQLite also
        rebuild `messages` so message_id is the rowid. Runs inside open's
        transaction: a failure leaves the store at version 1."""
        conn.exec_driver_sql("DROP INDEX IF EXISTS ix_messages_queue_id")
        if self._backend == "sqlite":
            conn.exec_driver_sql("ALTER TABLE messages RENAME TO messages_v1")
            s.messages.create(conn)
            cols = ", ".join(c.name for c in s.messages.columns)
            conn.exec_driver_sql(f"INSERT INTO messages ({cols}) SELECT {cols} FROM messages_v1")
            conn.exec_driver_sql("DROP TABLE messages_v1")
        log.info("journal store %s migrated from schema version 1 to %d", describe_url(self.url), s.SCHEMA_VERSION)

    def _add_event_origin(self, conn: Connection) -> None:
        """Version 3 (or older, after their own steps) -> 4: events gain
        from_node_id / from_message_id, NULL on every existing row."""
        if not inspect(conn).has_table("events"):
            return
        have = {c["name"] for c in inspect(conn).get_columns("events")}
        for column, sql_type in (("from_node_id", "VARCHAR(64)"), ("from_message_id", "BIGINT")):
            if column not in have:
                conn.exec_driver_sql(f"ALTER TABLE events ADD COLUMN {column} {sql_type}")
        log.info("journal store %s: schema version -> 4 (events record where a forwarded message came from)",
                 describe_url(self.url))

    def _add_queue_attributes(self, conn: Connection) -> None:
        """Queues gain the attribute columns they lack: last_value_key /
        non_destructive / exclusive (version 5; every existing queue is an
        ordinary one) and the group_* columns (version 6; group_buckets NULL:
        the router gives such a queue the address settings' defaults). Run at
        every open of an existing store: versions 5 and 6 were never released
        without these columns, but a store written while they were being built
        may lack some; only the missing ones are added."""
        if not inspect(conn).has_table("queues"):
            return
        have = {c["name"] for c in inspect(conn).get_columns("queues")}
        added = []
        for column, ddl in QUEUE_ATTRIBUTE_COLUMNS:
            if column not in have:
                conn.exec_driver_sql(f'ALTER TABLE queues ADD COLUMN "{column}" {ddl}')
                added.append(column)
        if added:
            log.info("journal store %s: schema version -> %d (queues gain %s)", describe_url(self.url),
                     s.SCHEMA_VERSION, ", ".join(added))

    def _put(self, conn: Connection, key: str, value: str) -> None:
        done = conn.execute(update(s.node_state).where(s.node_state.c.key == key).values(value=value))
        if done.rowcount == 0:
            conn.execute(s.node_state.insert().values(key=key, value=value))

    # ---------------------------------------------------------------- append

    def _prepare_statements(self) -> None:
        q = self.engine.dialect.identifier_preparer.quote
        mark = "?" if self.engine.dialect.paramstyle == "qmark" else "%s"

        def stmt(text_: str) -> str:
            # Identifiers in {braces} are quoted for the dialect; ? becomes its placeholder.
            return text_.format_map(_Quoted(q)).replace("?", mark)

        pg = self._backend == "postgresql"
        if pg:
            from . import pg_arrays

        def values(table, *columns: str) -> _MultiRow | _PgArrayRows:
            head = f"INSERT INTO {q(table.name)} ({', '.join(q(c) for c in columns)})"
            if pg:
                types = [table.c[c].type.compile(dialect=self.engine.dialect) for c in columns]
                return _PgArrayRows(head + " SELECT * FROM unnest(" + ", ".join(f"%b::{t}[]" for t in types) + ")",
                                    [pg_arrays.array_kind(t) for t in types])
            return _MultiRow(head + " VALUES ", "(" + ", ".join([mark] * len(columns)) + ")")

        def in_list(head: str) -> _MultiRow | _PgAnyList:
            if pg:
                return _PgAnyList(stmt(head) + " = ANY(%b)", pg_arrays.Int8Array)
            return _MultiRow(stmt(head) + " IN (", mark, ", ", ")")

        self._multi = {
            "add_message": values(s.messages, "message_id", "address", "size", "timestamp", "large", "queue_id",
                                  "delivery_count", "data"),
            "add_ref": values(s.message_refs, "queue_id", "message_id", "delivery_count"),
            "add_event": values(s.events, "node_id", "kind", "ts", "address", "queue", "message_id", "size",
                                "delivery_count", "message_ts", "from_node_id", "from_message_id"),
            "del_message": in_list("DELETE FROM {messages} WHERE {message_id}"),
            "del_ref": in_list("DELETE FROM {message_refs} WHERE {queue_id} = ? AND {message_id}"),
            "add_paged": values(s.paged_messages, "queue_id", "message_id", "size", "timestamp", "delivery_count",
                                "data"),
            "del_paged": in_list("DELETE FROM {paged_messages} WHERE {queue_id} = ? AND {message_id}"),
        }
        epoch_sql = stmt("SELECT {value} FROM {node_state} WHERE {key} = 'epoch'")
        self._sql = {
            # PostgreSQL in pipeline mode: lock the epoch row, then fail the transaction
            # (division by zero: _failed_in_pipeline) unless the stored epoch is the one given.
            # A share lock: the writer's transactions in flight together (overlap.py) do not
            # wait for each other, and an activation's update waits for all of them.
            "check_epoch": (epoch_sql + " FOR SHARE", stmt(
                "SELECT CASE WHEN coalesce(max({value}), '0') = %s THEN 1 "
                "ELSE length(coalesce(max({value}), '0')) / 0 END FROM {node_state} WHERE {key} = 'epoch'")),
            "lock_epoch": ("BEGIN IMMEDIATE", epoch_sql) if self._backend == "sqlite" else (epoch_sql + " FOR UPDATE",),
            "set_epoch": stmt("UPDATE {node_state} SET {value} = ? WHERE {key} = 'epoch'"),
            "add_queue": stmt("INSERT INTO {queues} ({queue_id}, {name}, {address}, {routing_type}, {filter}, {auto_created}, "
                              "{last_value_key}, {non_destructive}, {exclusive}, {group_buckets}, {group_rebalance}, "
                              "{group_rebalance_pause_dispatch}, {group_first_key}) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
            "add_chunk": stmt("INSERT INTO {large_message_chunks} ({message_id}, {seq}, {data}) VALUES (?, ?, ?)"),
            "copy_chunks": stmt(
                "INSERT INTO {large_message_chunks} ({message_id}, {seq}, {data}) "
                "SELECT ?, {seq}, {data} FROM {large_message_chunks} WHERE {message_id} = ?"
            ),
            "del_dup": stmt("DELETE FROM {duplicate_ids} WHERE {address} = ? AND {duplicate_id} = ? AND {position} = ?"),
            "set_count": stmt("UPDATE {message_refs} SET {delivery_count} = ? WHERE {queue_id} = ? AND {message_id} = ?"),
            "set_inline_count": stmt(
                "UPDATE {messages} SET {delivery_count} = ? WHERE {queue_id} = ? AND {message_id} = ?"
            ),
            "del_message": stmt("DELETE FROM {messages} WHERE {message_id} = ?"),
            "del_chunks": stmt("DELETE FROM {large_message_chunks} WHERE {message_id} = ?"),
            "del_queue_refs": stmt("DELETE FROM {message_refs} WHERE {queue_id} = ?"),
            "del_queue_inline": stmt("DELETE FROM {messages} WHERE {queue_id} = ?"),
            "del_queue_paged": stmt("DELETE FROM {paged_messages} WHERE {queue_id} = ?"),
            "set_paged_count": stmt(
                "UPDATE {paged_messages} SET {delivery_count} = ? WHERE {queue_id} = ? AND {message_id} = ?"
            ),
            "del_queue": stmt("DELETE FROM {queues} WHERE {queue_id} = ?"),
            "del_address": stmt("DELETE FROM {addresses} WHERE {name} = ?"),
            # Event retention: the oldest event, the (max_rows+1)-th oldest before the
            # cutoff, and how far a previous prune went.
            "prune_bounds": stmt(
                "SELECT (SELECT min({ts}) FROM {events}), "
                "(SELECT {ts} FROM {events} WHERE {ts} < ? ORDER BY {ts} LIMIT 1 OFFSET ?), "
                "(SELECT {value} FROM {node_state} WHERE {key} = 'events_kept_from')"),
            # PostgreSQL answers a pipelined DELETE's row count only with its results: count them.
            "prune": stmt("WITH gone AS (DELETE FROM {events} WHERE {ts} < ? RETURNING 1) SELECT count(*) FROM gone")
            if pg else stmt("DELETE FROM {events} WHERE {ts} < ?"),
            "set_kept_from": stmt(
                "INSERT INTO {node_state} ({key}, {value}) VALUES ('events_kept_from', ?) "
                "ON CONFLICT ({key}) DO UPDATE SET {value} = excluded.{value}"),
        }
        dup = s.duplicate_ids
        if self._backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as upsert
        else:
            from sqlalchemy.dialects.postgresql import insert as upsert
        ins = upsert(dup)
        self._upsert_dup = ins.on_conflict_do_update(
            index_elements=[dup.c.address, dup.c.duplicate_id], set_={"position": ins.excluded.position}
        )
        gb = s.group_bindings
        gins = upsert(gb)
        self._upsert_group = gins.on_conflict_do_update(index_elements=[gb.c.handler, gb.c.group_id],
                                                        set_={"node_id": gins.excluded.node_id})
        ains = upsert(s.addresses)
        self._upsert_address = ains.on_conflict_do_update(
            index_elements=[s.addresses.c.name],
            set_={"routing_types": ains.excluded.routing_types, "auto_created": ains.excluded.auto_created},
        )

    def apply(self, requests: list[jpb.AppendRequest]) -> list[jpb.AppendResponse]:
        """Apply requests in order in ONE transaction (group commit).

        If that transaction fails for a reason other than the store being
        unreachable, each request is retried alone so one bad request cannot
        fail the others.
        """
        dbapi = self.engine.dialect.dbapi
        try:
            if self._wal_frames > WAL_RESTART_FRAMES:
                with self.engine.connect() as conn:
                    self._restart_wal(conn)
            try:
                with self.engine.connect() as conn, self._pipeline(conn), conn.begin():
                    return self._apply_all(conn, requests, assume_epoch=self._backend == "postgresql")
            except (DBAPIError, dbapi.Error) as exc:
                if not _failed_in_pipeline(getattr(exc, "orig", None) or exc):
                    raise
                # Some request is from another epoch than the store's, or some statement
                # failed and which one the pipeline cannot say: the transaction was rolled
                # back, so redo it statement by statement, which names the reason (FENCED).
                with self.engine.begin() as conn:
                    return self._apply_all(conn, requests)
        except (OperationalError, dbapi.OperationalError) as exc:
            msg = f"journal store unavailable: {getattr(exc, 'orig', None) or exc}"
            log.error(msg)
            return [_failed(r, Reason.STORE_UNAVAILABLE, msg) for r in requests]
        except (DBAPIError, dbapi.Error):
            if len(requests) == 1:
                log.exception("journal append %d failed", requests[0].request_id)
                return [_failed(requests[0], Reason.INTERNAL, "journal append failed; see the journal log")]
        out: list[jpb.AppendResponse] = []
        for req in requests:
            out.extend(self.apply([req]))
        return out

    def _apply_all(self, conn: Connection, requests: list[jpb.AppendRequest], *,
                   assume_epoch: bool = False) -> list[jpb.AppendResponse]:
        """`assume_epoch` (PostgreSQL, in pipeline mode): when every request has the same
        epoch, check it in the transaction instead of reading it first, so the whole
        transaction is one round trip; a mismatch fails the transaction when it ends
        (`_failed_in_pipeline`), and `apply` goes the slow way."""
        # The hot statements go straight to this transaction's DBAPI cursor:
        # SQLAlchemy's per-statement work would cost more than the SQL.
        cur = conn.connection.cursor()
        try:
            epochs = {r.epoch for r in requests}
            if assume_epoch and len(epochs) == 1:
                (epoch,) = epochs
                for stmt in self._sql["check_epoch"]:
                    cur.execute(stmt, (str(epoch),) if "%s" in stmt else None)
                return self._apply_checked(conn, cur, requests, epoch)
            # Read under the write lock, so an owner activated between this
            # check and the commit cannot be overwritten.
            return self._apply_checked(conn, cur, requests, self._lock_epoch(cur))
        finally:
            cur.close()

    def _pipeline(self, conn: Connection):
        """PostgreSQL: a transaction's statements after the epoch check, and its commit,
        go out in pipeline mode: without waiting for each one's answer, one round trip
        for them all (psycopg syncs when the block ends). Nothing elsewhere."""
        if self._backend != "postgresql":
            return contextlib.nullcontext()
        return conn.connection.driver_connection.pipeline()

    def _apply_checked(self, conn: Connection, cur, requests: list[jpb.AppendRequest],
                       epoch: int) -> list[jpb.AppendResponse]:
        """Apply the requests stamped with the store's `epoch`; the others are refused (FENCED)."""
        out = []
        group: list[jpb.AppendRequest] = []  # consecutive row-only requests
        for req in requests:
            if req.epoch != epoch:
                out.append(
                    _failed(
                        req,
                        Reason.FENCED,
                        f"append from epoch {req.epoch} refused: the store was activated at epoch {epoch}",
                    )
                )
                continue
            out.append(jpb.AppendResponse(request_id=req.request_id, ok=True))
            if only_rows(req):
                group.append(req)
                continue
            if group:
                self._apply_rows(conn, cur, group)
                group = []
            self._apply_rows(conn, cur, [req])
            if req.HasField("prune_events"):
                out[-1].pruned_events, out[-1].events_kept_from = self._prune_events(cur, req.prune_events)
        if group:
            self._apply_rows(conn, cur, group)
        return out

    def _apply_rows(self, conn: Connection, cur, reqs: list[jpb.AppendRequest]) -> None:
        """Apply requests as one: each kind of change for all of them in one
        set of multi-row statements, kinds in the order below.

        Several requests go together only when each holds nothing but message
        rows, references, delivery counts, duplicate ids and events
        (`overlap.only_rows`): ids are never reused, so adding every request's rows
        before deleting any gives what applying them one by one would, with a
        fraction of the statements. Definitions and large messages are applied
        one request at a time.
        """
        run = cur.executemany
        sql = self._sql
        multi = self._multi
        for r in reqs:
            if r.reserve_message_ids_to:
                conn.execute(
                    update(s.node_state)
                    .where(s.node_state.c.key == "reserved_message_ids_to")
                    .values(value=str(r.reserve_message_ids_to))
                )
            if r.add_addresses:
                conn.execute(
                    self._upsert_address,
                    [{"name": a.name, "routing_types": a.routing_types, "auto_created": a.auto_created} for a in r.add_addresses],
                )
            if r.add_queues:
                run(
                    sql["add_queue"],
                    [(q.queue_id, q.name, q.address, q.routing_type, q.filter, q.auto_created,
                      q.last_value_key or None, q.non_destructive, q.exclusive,
                      q.group_buckets if q.HasField("group_buckets") else None, q.group_rebalance,
                      q.group_rebalance_pause_dispatch, q.group_first_key or None) for q in r.add_queues],
                )
        rows = [
            (m.message_id, m.address, m.size, m.timestamp, m.large, m.queue_id or None, m.delivery_count, m.data)
            for r in reqs
            for m in r.add_messages
        ]
        if rows:
            multi["add_message"].run(cur, rows)
        rows = [(f.queue_id, f.message_id, f.delivery_count) for r in reqs for f in r.add_refs]
        if rows:
            multi["add_ref"].run(cur, rows)
        rows = [
            (pm.queue_id, pm.message_id, pm.size, pm.timestamp, pm.delivery_count, pm.data)
            for r in reqs
            for pm in r.add_paged
        ]
        if rows:
            multi["add_paged"].run(cur, rows)
        for r in reqs:
            if r.add_large_chunks:
                run(sql["add_chunk"], [(c.message_id, c.seq, c.data) for c in r.add_large_chunks])
            for cp in r.copy_large_messages:
                cur.execute(sql["copy_chunks"], (cp.to_message_id, cp.from_message_id))
        for r in reqs:
            if r.add_group_bindings or r.delete_group_bindings:
                self._apply_group_bindings(conn, r)
        dups = [
            {"address": d.address, "duplicate_id": d.duplicate_id, "position": d.position}
            for r in reqs
            for d in r.add_duplicate_ids
        ]
        if dups:
            conn.execute(self._upsert_dup, dups)
        rows = [(d.address, d.duplicate_id, d.position) for r in reqs for d in r.delete_duplicate_ids]
        if rows:
            run(sql["del_dup"], rows)
        rows = [(f.delivery_count, f.queue_id, f.message_id) for r in reqs for f in r.update_delivery_counts]
        if rows:
            run(sql["set_count"], rows)
            run(sql["set_inline_count"], rows)
        rows = [(f.delivery_count, f.queue_id, f.message_id) for r in reqs for f in r.update_paged_delivery_counts]
        if rows:
            run(sql["set_paged_count"], rows)
        for queue_id, ids in _by_queue(f for r in reqs for f in r.delete_paged).items():
            multi["del_paged"].run(cur, ids, (queue_id,))
        rows = [(q,) for r in reqs for q in r.purge_paged]
        if rows:
            run(sql["del_queue_paged"], rows)
        for queue_id, ids in _by_queue(f for r in reqs for f in r.delete_refs).items():
            multi["del_ref"].run(cur, ids, (queue_id,))
        rows = [(m,) for r in reqs for m in r.delete_messages]
        if rows:
            multi["del_message"].run(cur, rows)
        for r in reqs:
            if r.delete_large_messages:
                ids = [(m,) for m in r.delete_large_messages]
                run(sql["del_message"], ids)
                run(sql["del_chunks"], ids)
            if r.delete_queues:
                qs = [(q,) for q in r.delete_queues]
                run(sql["del_queue_refs"], qs)
                run(sql["del_queue_inline"], qs)
                run(sql["del_queue_paged"], qs)
                run(sql["del_queue"], qs)
            if r.delete_addresses:
                run(sql["del_address"], [(a,) for a in r.delete_addresses])
        node = self.node_id
        kinds = s.EVENT_KIND_NAMES
        rows = [
            (node, kinds.get(e.kind, "UNKNOWN"), e.timestamp, e.address, e.queue, e.message_id, e.size,
             e.delivery_count, e.message_timestamp, e.from_node_id or None, e.from_message_id or None)
            for r in reqs
            for e in r.events
        ]
        if rows:
            multi["add_event"].run(cur, rows)

    def _apply_group_bindings(self, conn: Connection, r: jpb.AppendRequest) -> None:
        """A LOCAL grouping handler's decisions: each added one replaces any
        earlier decision of its group; deletions after additions (a decision
        replaced and forgotten in one request is forgotten)."""
        gb = s.group_bindings
        if r.add_group_bindings:
            conn.execute(
                self._upsert_group,
                [{"handler": b.handler, "group_id": b.group_id, "node_id": b.node_id} for b in r.add_group_bindings],
            )
        for b in r.delete_group_bindings:
            conn.execute(delete(gb).where(gb.c.handler == b.handler, gb.c.group_id == b.group_id))

    def _prune_events(self, cur, prune: jpb.PruneEvents) -> tuple[int, int]:
        """Delete the oldest events before `prune.before_ts`, about `max_rows` of
        them, whole milliseconds at a time: what is left is always every event
        from some instant on. That instant is recorded as node_state
        `events_kept_from` when something was deleted (an idle store claims
        nothing), and analytics starts reading there (an acknowledgement whose
        ENQUEUED was pruned is then outside the window, not an anomaly).
        Returns how many went and, when any did, the instant recorded (else 0)."""
        oldest, nth, kept_from = cur.execute(self._sql["prune_bounds"], (prune.before_ts, prune.max_rows)).fetchone()
        if oldest is None or oldest >= prune.before_ts:
            return 0, 0  # nothing before the cutoff (any more)
        # Fewer than max_rows + 1 before the cutoff: all of them. Otherwise up to the
        # millisecond of the (max_rows+1)-th, or past it when that is the oldest one
        # (a single millisecond holding more than max_rows goes whole).
        bound = prune.before_ts if nth is None else nth if nth > oldest else nth + 1
        cur.execute(self._sql["prune"], (bound,))
        pruned = cur.fetchone()[0] if self._backend == "postgresql" else cur.rowcount
        if kept_from is None or bound > int(kept_from):
            cur.execute(self._sql["set_kept_from"], (str(bound),))
        return pruned, max(bound, int(kept_from or 0))

    # ---------------------------------------------------------------- reads

    def load_pages(self) -> Iterator[jpb.LoadResponse]:
        """Everything recovery needs, in pages: definitions first, then messages by id."""
        with self.engine.connect() as conn:
            head = jpb.LoadResponse()
            for name, rt, auto in conn.execute(
                select(s.addresses.c.name, s.addresses.c.routing_types, s.addresses.c.auto_created)
            ):
                head.addresses.add(name=name, routing_types=rt, auto_created=bool(auto))
            for row in conn.execute(select(s.queues).order_by(s.queues.c.queue_id)):
                qr = head.queues.add(
                    queue_id=row.queue_id,
                    name=row.name,
                    address=row.address,
                    routing_type=row.routing_type,
                    filter=row.filter,
                    auto_created=bool(row.auto_created),
                    last_value_key=row.last_value_key or "",
                    non_destructive=bool(row.non_destructive),
                    exclusive=bool(row.exclusive),
                )
                if row.group_buckets is not None:  # NULL: stored before the group attributes were kept
                    qr.group_buckets = row.group_buckets
                    qr.group_rebalance = bool(row.group_rebalance)
                    qr.group_rebalance_pause_dispatch = bool(row.group_rebalance_pause_dispatch)
                    qr.group_first_key = row.group_first_key or ""
            pm = s.paged_messages
            for queue_id, n, size in conn.execute(
                select(pm.c.queue_id, func.count(), func.sum(pm.c.size)).group_by(pm.c.queue_id)
            ):
                head.paged.add(queue_id=queue_id, messages=n, bytes=int(size or 0))
            yield head
            dup = s.duplicate_ids
            page = jpb.LoadResponse()
            for a, d, p in conn.execute(
                select(dup.c.address, dup.c.duplicate_id, dup.c.position).order_by(dup.c.address, dup.c.position)
            ):
                page.duplicate_ids.add(address=a, duplicate_id=d, position=p)
                if len(page.duplicate_ids) >= 5000:
                    yield page
                    page = jpb.LoadResponse()
            if page.duplicate_ids:
                yield page
            gb = s.group_bindings
            page = jpb.LoadResponse()
            for handler, group_id, node_id in conn.execute(
                select(gb.c.handler, gb.c.group_id, gb.c.node_id).order_by(gb.c.handler, gb.c.group_id)
            ):
                page.group_bindings.add(handler=handler, group_id=group_id, node_id=node_id)
                if len(page.group_bindings) >= 5000:
                    yield page
                    page = jpb.LoadResponse()
            if page.group_bindings:
                yield page
            last = 0
            m, refs = s.messages, s.message_refs
            while True:
                rows = conn.execute(
                    select(
                        m.c.message_id, m.c.data, m.c.address, m.c.size, m.c.timestamp, m.c.large,
                        m.c.queue_id, m.c.delivery_count,
                    )
                    .where(m.c.message_id > last)
                    .order_by(m.c.message_id)
                    .limit(LOAD_PAGE_MESSAGES)
                ).all()
                if not rows:
                    return
                page = jpb.LoadResponse()
                for mid, data, address, size, ts, large, queue_id, count in rows:
                    page.messages.add(
                        message_id=mid, data=data, address=address, size=size, timestamp=ts, large=bool(large),
                        queue_id=queue_id or 0, delivery_count=count,
                    )
                first, last = rows[0][0], rows[-1][0]
                for q, mid, count in conn.execute(
                    select(refs.c.queue_id, refs.c.message_id, refs.c.delivery_count)
                    .where(refs.c.message_id.between(first, last))
                    .order_by(refs.c.message_id, refs.c.queue_id)
                ):
                    page.refs.add(queue_id=q, message_id=mid, delivery_count=count)
                yield page

    def read_page(self, queue_id: int, after_message_id: int, max_messages: int, max_bytes: int) -> list[jpb.PagedMessage]:
        """One queue's next paged messages after `after_message_id`, oldest first:
        at most `max_messages`, and no more than `max_bytes` once one is taken."""
        pm = s.paged_messages
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(pm.c.message_id, pm.c.size, pm.c.delivery_count, pm.c.data)
                .where(and_(pm.c.queue_id == queue_id, pm.c.message_id > after_message_id))
                .order_by(pm.c.message_id)
                .limit(max(1, max_messages))
            ).all()
        out, total = [], 0
        for mid, size, count, data in rows:
            if out and max_bytes and total + size > max_bytes:
                break
            total += size
            out.append(jpb.PagedMessage(queue_id=queue_id, message_id=mid, size=size, delivery_count=count, data=data))
        return out

    def read_large(self, message_id: int, from_seq: int, max_chunks: int) -> list[jpb.LargeMessageChunk]:
        c = s.large_message_chunks
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(c.c.seq, c.c.data)
                .where(and_(c.c.message_id == message_id, c.c.seq >= from_seq))
                .order_by(c.c.seq)
                .limit(max(1, max_chunks))
            ).all()
        return [jpb.LargeMessageChunk(message_id=message_id, seq=seq, data=data) for seq, data in rows]

    def count(self, table_name: str) -> int:
        """Row count of one journal table (used by tests and diagnostics)."""
        table = s.metadata.tables[table_name]
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table)).scalar() or 0)

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def close(self) -> None:
        self._stop.set()
        if self._checkpointer is not None:
            self._checkpointer.join()
            self._checkpointer = None
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        self.engine.dispose()


_CHUNK_SIZES = (512, 256, 128, 64, 32, 16, 8, 4, 2, 1)


class _MultiRow:
    """One statement for many rows: `head` followed by k groups of `group`.

    A batch of n rows runs as a few statements whose sizes are powers of two
    (so only ten distinct SQL texts per statement exist, all cached by the
    driver). One statement per chunk instead of one step per row keeps the
    per-row work in SQLite's C code.
    """

    def __init__(self, head: str, group: str, joiner: str = ", ", tail: str = "") -> None:
        self._head, self._group, self._joiner, self._tail = head, group, joiner, tail
        self._sql: dict[int, str] = {}

    def sql(self, k: int) -> str:
        text_ = self._sql.get(k)
        if text_ is None:
            text_ = self._sql[k] = self._head + self._joiner.join([self._group] * k) + self._tail
        return text_

    def run(self, cur, rows: list[tuple], prefix: tuple = ()) -> None:
        """Execute on a DBAPI cursor."""
        i, n = 0, len(rows)
        for size in _CHUNK_SIZES:
            while n - i >= size:
                params = prefix + tuple(chain.from_iterable(rows[i : i + size]))
                cur.execute(self.sql(size), params)
                i += size


class _PgArrayRows:
    """PostgreSQL: many rows as one INSERT ... SELECT FROM unnest(one array per
    column). The statement text and its parameter count never change with the
    number of rows, so psycopg parses and prepares it once; a multi-row VALUES
    list would be parsed again for every batch (psycopg caches no statement
    over 4 KiB), which cost more than PostgreSQL took to store the rows. The
    arrays go in binary (%b): their text form escapes every bytea element;
    each is packed a column at a time (pg_arrays.py), not by psycopg's
    element-by-element list dumper."""

    def __init__(self, sql: str, kinds: list[type]) -> None:
        self._sql = sql
        self._kinds = kinds

    def run(self, cur, rows: list[tuple], prefix: tuple = ()) -> None:
        cur.execute(self._sql, prefix + tuple(kind(column) for kind, column in zip(self._kinds, zip(*rows))))


class _PgAnyList:
    """PostgreSQL: `... = ANY(%b)` with the ids as one array parameter (see _PgArrayRows)."""

    def __init__(self, sql: str, kind: type) -> None:
        self._sql = sql
        self._kind = kind

    def run(self, cur, rows: list[tuple], prefix: tuple = ()) -> None:
        cur.execute(self._sql, prefix + (self._kind([row[0] for row in rows]),))


class _Quoted(dict):
    """format_map helper: {name} -> the dialect-quoted identifier."""

    def __init__(self, quote) -> None:
        super().__init__()
        self._quote = quote

    def __missing__(self, key: str) -> str:
        return self._quote(key)


def _failed_in_pipeline(exc: BaseException) -> bool:
    """A pipelined transaction failed on a statement, not on the connection: the
    check_epoch statement's failure (PostgreSQL's division_by_zero, 22012: nothing
    else the journal runs divides), or psycopg's PipelineAborted, which is what a
    statement queued after the failing one reports when its result is read first
    (which of the two surfaces depends on when the answers arrive). psycopg
    is imported here, not at the top: an SQLite journal never loads it (a
    fifth of the writer process's start-up)."""
    if getattr(exc, "sqlstate", None) == "22012":
        return True
    import psycopg.errors

    return isinstance(exc, psycopg.errors.PipelineAborted)


def _by_queue(refs) -> dict[int, list[tuple[int]]]:
    """Message ids of `MessageRef`s grouped by queue, for one multi-row delete per queue."""
    grouped: dict[int, list[tuple[int]]] = {}
    for f in refs:
        grouped.setdefault(f.queue_id, []).append((f.message_id,))
    return grouped


def _failed(req: jpb.AppendRequest, reason: Reason, message: str) -> jpb.AppendResponse:
    return jpb.AppendResponse(request_id=req.request_id, ok=False, reason=reason.value, message=message)
