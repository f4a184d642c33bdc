"""On PostgreSQL the journal writer commits two independent transactions at
once (services/journal/overlap.py) and still answers them in order; one that
names a message of the transaction in flight waits for it. A real writer
process on a real PostgreSQL; a transaction is held in flight by a row lock
another session holds, so what may pass it is observable."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.pool import NullPool

from meshmq.v1 import journal_pb2 as jpb
from services.journal import schema as s
from services.journal.store import JournalStore
from services.journal.writer_process import WriterProcess
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration

HELD = "held-by-another-session"


def stored(epoch: int, message_id: int, dup: str = "") -> jpb.AppendRequest:
    req = jpb.AppendRequest(epoch=epoch)
    req.add_messages.add(message_id=message_id, data=b"m", address="a", size=1, timestamp=1, queue_id=1)
    if dup:
        req.add_duplicate_ids.add(address="a", duplicate_id=dup, position=message_id)
    return req


def acked(epoch: int, message_id: int) -> jpb.AppendRequest:
    return jpb.AppendRequest(epoch=epoch, delete_messages=[message_id])


class Held:
    """Another session's uncommitted insert of the duplicate id HELD: a transaction
    of the writer's that upserts it waits until this one ends."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine(url, poolclass=NullPool)
        self.conn = self.engine.connect()
        self.txn = self.conn.begin()
        self.conn.execute(s.duplicate_ids.insert().values(address="a", duplicate_id=HELD, position=0))

    def writer_waits(self) -> bool:
        """A backend other than this one is waiting for a lock (the writer's held transaction)."""
        with self.engine.connect() as c:
            return bool(c.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> :me"), {"me": self.pid}).scalar())

    @property
    def pid(self) -> int:
        return self.conn.execute(text("SELECT pg_backend_pid()")).scalar()

    def release(self) -> None:
        self.txn.rollback()
        self.conn.close()
        self.engine.dispose()


def message_ids(url: str) -> set[int]:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as c:
        ids = set(c.execute(select(s.messages.c.message_id)).scalars())
    engine.dispose()
    return ids


async def held_in_flight(w: WriterProcess, epoch: int, url: str) -> tuple[Held, asyncio.Future]:
    """Submit message 1 with the duplicate id another session holds: its transaction
    starts and waits for that session (returned) to end."""
    held = Held(url)
    first = w.submit(stored(epoch, 1, dup=HELD))
    await eventually(held.writer_waits, 10, "the first transaction to wait for the held row")
    return held, first


@pytest.fixture
async def writer(pg_url):
    st = JournalStore(pg_url)
    opened = st.open("n")
    epoch = st.activate(opened.epoch + 1)
    st.close()
    # max-batch-records 1: every request is a transaction of its own
    w = WriterProcess(pg_url, sync=True, node_id=opened.node_id, max_batch_records=1)
    await asyncio.to_thread(w.start)
    await w.attach()
    yield w, epoch
    await w.close()


async def test_an_independent_transaction_commits_while_the_one_before_waits_and_is_answered_after_it(
        writer, pg_url):
    w, epoch = writer
    held, first = await held_in_flight(w, epoch, pg_url)
    try:
        second = w.submit(stored(epoch, 2))
        await eventually(lambda: 2 in message_ids(pg_url), 10, "the second transaction to commit meanwhile")
        assert not first.done() and not second.done()  # answers go out in order
    finally:
        held.release()
    answers = await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert [a.ok for a in answers] == [True, True]
    assert message_ids(pg_url) == {1, 2}


async def test_an_ack_of_a_message_in_flight_waits_for_its_insert(writer, pg_url):
    w, epoch = writer
    held, first = await held_in_flight(w, epoch, pg_url)
    try:
        ack = w.submit(acked(epoch, 1))
        later = w.submit(stored(epoch, 3))  # behind the ack, which waits: it waits too
        # (had the ack run now, it would have deleted nothing and message 1 would survive it)
        done, _ = await asyncio.wait([ack, later], timeout=1.0)
        assert not done and message_ids(pg_url) == set()
    finally:
        held.release()
    answers = await asyncio.wait_for(asyncio.gather(first, ack, later), 10)
    assert [a.ok for a in answers] == [True, True, True]
    assert message_ids(pg_url) == {3}  # stored, then acknowledged: gone
