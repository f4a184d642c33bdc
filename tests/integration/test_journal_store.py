"""The journal store on a real SQLite file and a real PostgreSQL: schema checks, group commit isolation, and the inline/ref storage of messages."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from meshmq.v1 import journal_pb2 as jpb
from services.journal.store import JournalStore, StoreError

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/journal.db"
    return request.getfixturevalue("pg_url")


def activated(url: str, node_name: str = "n") -> tuple[JournalStore, int]:
    """A store opened and activated as a router does at start; returns it and the epoch appends carry."""
    st = JournalStore(url)
    opened = st.open(node_name)
    return st, st.activate(opened.epoch + 1)


def test_a_failing_request_does_not_fail_the_others_in_its_group(store_url):
    st, epoch = activated(store_url)
    good = jpb.AppendRequest(request_id=1, epoch=epoch)
    good.add_messages.add(message_id=10, data=b"x", address="a", size=1, timestamp=1, queue_id=1)
    bad = jpb.AppendRequest(request_id=2, epoch=epoch)
    bad.add_messages.add(message_id=10, data=b"dup", address="a", size=1, timestamp=1, queue_id=1)
    later = jpb.AppendRequest(request_id=3, epoch=epoch)
    later.add_messages.add(message_id=11, data=b"y", address="a", size=1, timestamp=1, queue_id=1)
    results = st.apply([good, bad, later])
    assert [r.ok for r in results] == [True, False, True]
    assert st.count("messages") == 2
    st.close()


def test_recovery_pages_carry_inline_and_shared_references(store_url):
    st, epoch = activated(store_url)
    r = jpb.AppendRequest(request_id=1, epoch=epoch)
    r.add_queues.add(queue_id=1, name="q1", address="a", routing_type=2)
    r.add_queues.add(queue_id=2, name="q2", address="a", routing_type=2)
    r.add_messages.add(message_id=1, data=b"one", address="a", size=3, timestamp=1, queue_id=1)
    r.add_messages.add(message_id=2, data=b"two", address="a", size=3, timestamp=1)
    r.add_refs.add(queue_id=1, message_id=2)
    r.add_refs.add(queue_id=2, message_id=2, delivery_count=3)
    assert st.apply([r])[0].ok
    pages = list(st.load_pages())
    msgs = [m for p in pages for m in p.messages]
    refs = [(f.queue_id, f.message_id, f.delivery_count) for p in pages for f in p.refs]
    assert [(m.message_id, m.queue_id) for m in msgs] == [(1, 1), (2, 0)]
    assert refs == [(1, 2, 0), (2, 2, 3)]
    # deleting queue 1 removes its inline message and its shared reference
    d = jpb.AppendRequest(request_id=2, epoch=epoch, delete_queues=[1])
    assert st.apply([d])[0].ok
    assert st.count("messages") == 1 and st.count("message_refs") == 1
    st.close()


def test_store_of_another_schema_version_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path}/journal.db"
    st = JournalStore(url)
    st.open("n")
    with st.engine.begin() as conn:
        conn.execute(text("UPDATE node_state SET value = '0' WHERE key = 'schema_version'"))
    st.close()
    with pytest.raises(StoreError, match="schema version 0"):
        JournalStore(url).open("n")


def test_unreachable_postgresql_is_a_clear_error():
    st = JournalStore("postgresql+psycopg://nobody@127.0.0.1:1/none")
    with pytest.raises(StoreError, match="unreachable"):
        st.open("n")


def _make_v1_store(url: str) -> None:
    """A store as schema version 1 left it: messages keyed by a BIGINT primary
    key (a separate index on SQLite) and an index on messages.queue_id."""
    from sqlalchemy import BigInteger, Boolean, Column, Integer, LargeBinary, MetaData, String, Table

    from services.journal import schema as s
    from services.journal.store import create_store_engine

    v1 = MetaData()
    for table in s.metadata.tables.values():
        if table.name != "messages":
            table.to_metadata(v1)
    Table(
        "messages", v1,
        Column("message_id", BigInteger, primary_key=True, autoincrement=False),
        Column("address", String(255), nullable=False),
        Column("size", BigInteger, nullable=False),
        Column("timestamp", BigInteger, nullable=False),
        Column("large", Boolean, nullable=False),
        Column("queue_id", BigInteger, nullable=True, index=True),
        Column("delivery_count", Integer, nullable=False),
        Column("data", LargeBinary, nullable=False),
    )
    engine = create_store_engine(url)
    with engine.begin() as conn:
        v1.create_all(conn)
        conn.execute(
            text("INSERT INTO node_state (key, value) VALUES ('node_id', 'v1-node'), ('epoch', '3'), "
                 "('schema_version', '1'), ('reserved_message_ids_to', '100')")
        )
        conn.execute(
            text("INSERT INTO queues (queue_id, name, address, routing_type, filter, auto_created) "
                 "VALUES (1, 'q1', 'a', 2, '', false), (2, 'q2', 'a', 2, '', false)")
        )
        conn.execute(
            text("INSERT INTO messages (message_id, address, size, timestamp, large, queue_id, delivery_count, data) "
                 "VALUES (7, 'a', 3, 1, false, 1, 2, :one), (8, 'a', 3, 1, false, NULL, 0, :two)"),
            {"one": b"one", "two": b"two"},
        )
        conn.execute(text("INSERT INTO message_refs (queue_id, message_id, delivery_count) VALUES (1, 8, 0), (2, 8, 1)"))
    engine.dispose()


def test_a_version_1_store_is_migrated_at_open_keeping_every_message(store_url):
    from sqlalchemy import inspect

    _make_v1_store(store_url)
    st = JournalStore(store_url)
    opened = st.open("n")
    assert opened.schema_version == 6 and opened.node_id == "v1-node" and opened.epoch == 3
    pages = list(st.load_pages())
    assert [(m.message_id, m.queue_id, m.delivery_count, m.data) for p in pages for m in p.messages] == [
        (7, 1, 2, b"one"),
        (8, 0, 0, b"two"),
    ]
    assert [(f.queue_id, f.message_id, f.delivery_count) for p in pages for f in p.refs] == [(1, 8, 0), (2, 8, 1)]
    with st.engine.connect() as conn:
        assert [ix["name"] for ix in inspect(conn).get_indexes("messages")] == []
        assert conn.execute(text("SELECT value FROM node_state WHERE key = 'schema_version'")).scalar() == "6"
        if st.engine.dialect.name == "sqlite":
            # message_id is the rowid now: no separate primary-key index
            assert conn.exec_driver_sql("PRAGMA index_list(messages)").all() == []
    more = jpb.AppendRequest(request_id=1, epoch=st.activate(opened.epoch + 1), delete_messages=[7])
    more.add_messages.add(message_id=9, data=b"x", address="a", size=1, timestamp=1, queue_id=2)
    assert st.apply([more])[0].ok
    assert st.count("messages") == 2
    st.close()
    # and a second open finds version 2 and leaves it alone
    again = JournalStore(store_url)
    assert again.open("n").schema_version == 6 and again.count("messages") == 2
    again.close()


def _table_contents(st: JournalStore) -> dict[str, list]:
    from services.journal import schema as s

    with st.engine.connect() as conn:
        out = {}
        for name, table in s.metadata.tables.items():
            if name == "node_state":
                continue
            cols = [c for c in table.columns if c.name not in ("event_id", "node_id")]
            query = table.select().with_only_columns(*cols)
            if name == "events":
                query = query.order_by(table.c.event_id)
            rows = [tuple(row) for row in conn.execute(query)]
            # events keep their order of writing; other tables are sets
            out[name] = rows if name == "events" else sorted(rows)
        return out


def _interleaved_requests(epoch: int) -> list[jpb.AppendRequest]:
    """Row-only requests around definition changes, with later requests undoing earlier ones."""
    reqs = [jpb.AppendRequest(request_id=i + 1, epoch=epoch) for i in range(7)]
    a, b, c, d, e, f, g = reqs
    a.add_addresses.add(name="addr", routing_types=1)
    a.add_queues.add(queue_id=1, name="q1", address="addr", routing_type=1)
    a.add_queues.add(queue_id=2, name="q2", address="addr", routing_type=2)
    b.add_messages.add(message_id=10, data=b"ten", address="addr", size=3, timestamp=1, queue_id=1)
    b.add_messages.add(message_id=11, data=b"eleven", address="addr", size=6, timestamp=1)
    b.add_refs.add(queue_id=1, message_id=11)
    b.add_refs.add(queue_id=2, message_id=11)
    b.add_duplicate_ids.add(address="addr", duplicate_id="x", position=1)
    b.events.add(timestamp=5, kind=jpb.ENQUEUED, address="addr", queue="q1", message_id=10, size=3, message_timestamp=1)
    c.delete_messages.append(10)  # acknowledged in the very next request
    c.update_delivery_counts.add(queue_id=2, message_id=11, delivery_count=2)
    c.delete_duplicate_ids.add(address="addr", duplicate_id="x", position=1)
    c.add_duplicate_ids.add(address="addr", duplicate_id="y", position=2)
    c.events.add(timestamp=6, kind=jpb.ACKNOWLEDGED, address="addr", queue="q1", message_id=10, size=3,
                 delivery_count=1, message_timestamp=1)
    d.delete_refs.add(queue_id=1, message_id=11)
    d.add_messages.add(message_id=12, data=b"twelve", address="addr", size=6, timestamp=2, queue_id=2)
    d.add_duplicate_ids.add(address="addr", duplicate_id="x", position=3)  # x again after its eviction
    e.delete_queues.append(2)  # a definition between row-only requests
    e.delete_addresses.append("addr")
    f.add_addresses.add(name="addr", routing_types=2)  # ... and the address comes straight back
    f.add_queues.add(queue_id=3, name="q2", address="addr", routing_type=2)
    g.add_messages.add(message_id=13, data=b"thirteen", address="addr", size=8, timestamp=3, queue_id=3)
    g.delete_duplicate_ids.add(address="addr", duplicate_id="y", position=2)
    g.events.add(timestamp=7, kind=jpb.ENQUEUED, address="addr", queue="q2", message_id=13, size=8, message_timestamp=3,
                 from_node_id="other-node", from_message_id=99)  # forwarded here: where it came from is kept
    return reqs


def test_a_group_of_requests_stores_what_applying_them_one_by_one_stores(store_url, tmp_path, request):
    together, epoch = activated(store_url)
    assert all(r.ok for r in together.apply(_interleaved_requests(epoch)))
    grouped = _table_contents(together)
    assert [e[-2:] for e in grouped["events"]] == [(None, None), (None, None), ("other-node", 99)]
    together.close()
    if "sqlite" in store_url:
        other_url = f"sqlite:///{tmp_path}/one-by-one.db"
    else:
        other_url = request.getfixturevalue("make_pg_url")()
    alone, epoch = activated(other_url)
    for req in _interleaved_requests(epoch):
        assert alone.apply([req])[0].ok
    assert _table_contents(alone) == grouped
    assert grouped["messages"] and grouped["duplicate_ids"] == [("addr", "x", 3)]
    assert [(a[0], a[1]) for a in grouped["addresses"]] == [("addr", 2)]
    alone.close()


def test_the_wal_starts_over_under_a_steady_stream_of_commits(tmp_path, monkeypatch):
    """A background checkpoint alone never lets SQLite restart a WAL that is
    written to without pause; the writer finishing it keeps the WAL short."""
    from services.journal import store as store_mod

    monkeypatch.setattr(store_mod, "CHECKPOINT_PERIOD_S", 0.02)
    monkeypatch.setattr(store_mod, "WAL_RESTART_FRAMES", 200)
    st, epoch = activated(f"sqlite:///{tmp_path}/journal.db")
    st.start_checkpointer()
    body = b"x" * 1000
    reported: list[int] = []  # WAL length (frames) each background checkpoint saw
    for n in range(160):  # 8,000 messages stored and acknowledged: ~9,000 WAL frames
        req = jpb.AppendRequest(request_id=n + 1, epoch=epoch)
        first = n * 50 + 1
        for mid in range(first, first + 50):
            req.add_messages.add(message_id=mid, data=body, address="a", size=1000, timestamp=1, queue_id=1)
        req.delete_messages.extend(range(max(1, first - 50), first))
        assert st.apply([req])[0].ok
        reported.append(st._wal_frames)
    st.close()
    assert any(reported), "no background checkpoint ran during the stream"
    # without the restart the background checkpoint reports an ever longer WAL (~9,000 frames)
    assert max(reported) < 2000, f"the WAL kept growing: {max(reported)} frames"


GROUP_COLUMNS = ("group_buckets", "group_rebalance", "group_rebalance_pause_dispatch", "group_first_key")


@pytest.mark.parametrize("old_version", [4, 5])
def test_queue_attributes_are_stored_and_an_older_store_gains_them(store_url, old_version):
    st, epoch = activated(store_url)
    r = jpb.AppendRequest(request_id=1, epoch=epoch)
    r.add_queues.add(queue_id=1, name="plain", address="a", routing_type=1)
    assert st.apply([r])[0].ok
    st.close()
    # as a version 4 store had it (no attribute columns), or a version 5 one (no group columns)
    from sqlalchemy import create_engine

    engine = create_engine(store_url)
    dropped = GROUP_COLUMNS + (("last_value_key", "non_destructive", "exclusive") if old_version == 4 else ())
    with engine.begin() as conn:
        for column in dropped:
            conn.execute(text(f'ALTER TABLE queues DROP COLUMN "{column}"'))
        conn.execute(text(f"UPDATE node_state SET value = '{old_version}' WHERE key = 'schema_version'"))
    engine.dispose()
    st, epoch = activated(store_url)
    r = jpb.AppendRequest(request_id=2, epoch=epoch)
    r.add_queues.add(queue_id=2, name="cache", address="a", routing_type=2, last_value_key="k", non_destructive=True)
    r.add_queues.add(queue_id=3, name="jobs", address="a", routing_type=1, exclusive=True, group_buckets=-1)
    r.add_queues.add(queue_id=4, name="orders", address="a", routing_type=1, group_buckets=8, group_rebalance=True,
                     group_rebalance_pause_dispatch=True, group_first_key="JMSXGroupFirstForConsumer")
    assert st.apply([r])[0].ok
    loaded = {q.name: q for p in st.load_pages() for q in p.queues}
    queues = {name: (q.last_value_key, q.non_destructive, q.exclusive) for name, q in loaded.items()}
    assert queues == {"plain": ("", False, False), "cache": ("k", True, False), "jobs": ("", False, True),
                      "orders": ("", False, False)}
    # the queue stored before the columns existed (and one stored without them) says so: unset group_buckets
    assert [name for name, q in loaded.items() if not q.HasField("group_buckets")] == ["plain", "cache"]
    groups = {name: (q.group_buckets, q.group_rebalance, q.group_rebalance_pause_dispatch, q.group_first_key)
              for name, q in loaded.items() if q.HasField("group_buckets")}
    assert groups == {"jobs": (-1, False, False, ""), "orders": (8, True, True, "JMSXGroupFirstForConsumer")}
    assert st.open("n").schema_version == 6
    st.close()
