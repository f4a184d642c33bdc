"""Event retention (journal.event-retention): the event log keeps what is
younger than the retention, and what is left is always every event from some
instant on — on a real SQLite file and a real PostgreSQL, and through a router."""

from __future__ import annotations

import sqlite3
import time

import pytest
from sqlalchemy import text

from meshmq.client import connect
from meshmq.v1 import journal_pb2 as jpb
from services.journal.store import JournalStore
from tests.fixtures.nodes import eventually

from .test_journal_store import activated, store_url  # noqa: F401 - the fixture, on both backends

pytestmark = pytest.mark.integration


def with_events(st: JournalStore, epoch: int, stamps: list[int]) -> None:
    """One ENQUEUED event per stamp (message id = its position), and one stored message."""
    r = jpb.AppendRequest(request_id=1, epoch=epoch)
    r.add_messages.add(message_id=1_000_000, data=b"kept", address="a", size=4, timestamp=1, queue_id=1)
    for i, ts in enumerate(stamps):
        r.events.add(kind=1, timestamp=ts, address="a", queue="q", message_id=i, size=1, message_timestamp=ts)
    assert st.apply([r])[0].ok


def event_stamps(st: JournalStore) -> list[int]:
    with st.engine.connect() as conn:
        return sorted(ts for (ts,) in conn.execute(text("SELECT ts FROM events")))


def kept_from(st: JournalStore) -> int | None:
    with st.engine.connect() as conn:
        value = conn.execute(text("SELECT value FROM node_state WHERE key = 'events_kept_from'")).scalar()
    return None if value is None else int(value)


def prune(st: JournalStore, epoch: int, before_ts: int, max_rows: int, request_id: int = 2) -> jpb.AppendResponse:
    req = jpb.AppendRequest(request_id=request_id, epoch=epoch)
    req.prune_events.before_ts = before_ts
    req.prune_events.max_rows = max_rows
    (answer,) = st.apply([req])
    return answer


def test_pruning_deletes_the_oldest_whole_milliseconds_until_the_cutoff(store_url):  # noqa: F811
    st, epoch = activated(store_url)
    # 3 events per millisecond from 100 to 1099, and 1,500 in the one millisecond 2000.
    stamps = [100 + i // 3 for i in range(3000)] + [2000] * 1500 + [5000, 5001]
    with_events(st, epoch, stamps)
    answers = []
    reader = JournalStore(store_url)
    while (answer := prune(st, epoch, before_ts=5000, max_rows=400)).pruned_events:
        assert answer.ok
        answers.append(answer.pruned_events)
        # What is left is every event from some instant on, and the store says which
        # (in node_state, in the answer, and to whoever opens it next).
        since = kept_from(st)
        assert event_stamps(st) == sorted(ts for ts in stamps if ts >= since)
        assert answer.events_kept_from == since == reader.open("reader").events_kept_from
    # 400 rows at a time is 133 whole milliseconds (399 rows); the millisecond
    # holding 1,500 goes whole; the cutoff is exclusive.
    assert answers[0] == 399 and 1500 in answers and sum(answers) == 4500
    # Where the last deletion ended: after the millisecond 2000 (nothing between it and 5000).
    assert event_stamps(st) == [5000, 5001] and kept_from(st) == 2001
    assert st.count("messages") == 1  # the live state is not the event log
    reader.close()
    st.close()


def test_a_prune_from_an_older_epoch_deletes_nothing(store_url):  # noqa: F811
    st, epoch = activated(store_url)
    with_events(st, epoch, [10, 20, 30])
    assert prune(st, epoch, before_ts=5, max_rows=100).pruned_events == 0
    assert kept_from(st) is None  # nothing deleted, nothing claimed
    st.activate(epoch + 1)  # a backup took the store over
    answer = prune(st, epoch, before_ts=1000, max_rows=100)
    assert not answer.ok and answer.reason == "FENCED"
    assert event_stamps(st) == [10, 20, 30] and kept_from(st) is None
    st.close()


def test_a_prune_in_a_group_with_appends_stores_them_and_prunes(store_url):  # noqa: F811
    st, epoch = activated(store_url)
    with_events(st, epoch, [10, 20])
    before, after = (jpb.AppendRequest(request_id=i, epoch=epoch) for i in (2, 4))
    before.add_messages.add(message_id=7, data=b"x", address="a", size=1, timestamp=1, queue_id=1)
    before.events.add(kind=1, timestamp=50, address="a", queue="q", message_id=7, size=1, message_timestamp=50)
    after.add_messages.add(message_id=8, data=b"y", address="a", size=1, timestamp=1, queue_id=1)
    middle = jpb.AppendRequest(request_id=3, epoch=epoch)
    middle.prune_events.before_ts, middle.prune_events.max_rows = 40, 100
    answers = st.apply([before, middle, after])
    assert [a.ok for a in answers] == [True, True, True] and answers[1].pruned_events == 2
    assert event_stamps(st) == [50] and st.count("messages") == 3
    st.close()


async def test_a_router_deletes_events_older_than_its_retention(nodes):
    retention_ms = 4000
    node = nodes.router("retention", extra=f"""
        journal:
          event-retention: {retention_ms}
          event-retention-scan-period: 200
        """)
    db = nodes.tmp / "retention-data" / "journal.db"

    async def send_and_consume(bodies: list[bytes]) -> None:
        async with await connect(node.url) as conn:
            s = await conn.session()
            p = await s.create_producer("kept.q")
            for b in bodies:
                await p.send(b, routing_type="anycast")
            c = await s.create_consumer("kept.q")
            for _ in bodies:
                m = await c.receive(5)
                c.ack(m)

    def events() -> list[tuple[str, int]]:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT kind, ts FROM events").fetchall()

    def stored_kept_from() -> int:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("SELECT value FROM node_state WHERE key = 'events_kept_from'").fetchone()[0])

    async def node_info():
        async with await connect(node.url) as conn:
            return await conn.admin.node_info()

    async def shown_pruned(n: int):
        info = await node_info()
        return info if info.events_pruned == n else None

    await send_and_consume([b"old-%d" % i for i in range(20)])
    await eventually(lambda: len(events()) == 40, 10, "20 ENQUEUED and 20 ACKNOWLEDGED events")
    first = max(ts for _, ts in events())
    await eventually(lambda: not events(), 15, "the first events to pass their retention and go")
    assert time.time() * 1000 - first >= retention_ms  # not before their time
    # Management shows it (and nothing more can go until new events come).
    info = await eventually(lambda: shown_pruned(40), 10, "the node to show 40 events pruned")
    assert info.event_log_enabled and info.event_retention == retention_ms
    assert info.events_kept_from == stored_kept_from() > first
    sent = int(time.time() * 1000)
    await send_and_consume([b"new-%d" % i for i in range(5)])
    await eventually(lambda: len(events()) == 10, 10, "the new events")
    assert min(ts for _, ts in events()) >= sent
    kept = stored_kept_from()
    assert first < kept <= sent
    # A restarted node (scanning too seldom to prune again here) shows the store's horizon.
    node.stop()
    node.config_path.write_text(node.config_path.read_text().replace("scan-period: 200", "scan-period: 600000"))
    node.start()
    info = await node_info()
    assert (info.events_kept_from, info.events_pruned, info.event_retention) == (kept, 0, retention_ms)


async def test_with_the_event_log_off_messages_are_stored_and_no_event_is(nodes):
    """journal.event-log-enabled: false — the store keeps what recovery needs
    (a restart gives back what was not acknowledged) and writes no event row."""
    node = nodes.router("no-log", extra="""
        journal:
          event-log-enabled: false
        """)
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer("quiet.q")
        for i in range(10):
            await p.send(b"m%d" % i, routing_type="anycast")
        c = await s.create_consumer("quiet.q")
        for i in range(4):
            m = await c.receive(5)
            assert m.body == b"m%d" % i
            c.ack(m)
        await s.close()  # acknowledgements are stored when the session closes, at the latest
    node.stop()
    node.start()
    async with await connect(node.url) as conn:
        c = await (await conn.session()).create_consumer("quiet.q")
        got = []
        while (m := await c.receive(2)) is not None:
            got.append(m.body)
            c.ack(m)
    assert got == [b"m%d" % i for i in range(4, 10)]
    with sqlite3.connect(nodes.tmp / "no-log-data" / "journal.db") as db:
        assert db.execute("SELECT count(*) FROM events").fetchone() == (0,)
