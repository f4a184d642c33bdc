"""The journal store on a real SQLite file and a real PostgreSQL: fencing,
schema checks, group commit isolation, and the inline/ref storage of messages."""

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


def test_fencing_refuses_appends_from_an_older_epoch(store_url):
    a = JournalStore(store_url)
    first = a.open("n")
    b = JournalStore(store_url)
    second = b.open("n")
    assert second.epoch == first.epoch + 1 and second.node_id == first.node_id
    old = jpb.AppendRequest(request_id=1, epoch=first.epoch)
    old.add_messages.add(message_id=1, data=b"x", address="a", size=1, timestamp=1, queue_id=1)
    [resp] = a.apply([old])
    assert not resp.ok and resp.reason == "FENCED"
    assert a.count("messages") == 0
    new = jpb.AppendRequest(request_id=2, epoch=second.epoch)
    new.add_messages.add(message_id=1, data=b"x", address="a", size=1, timestamp=1, queue_id=1)
    assert b.apply([new])[0].ok
    assert b.count("messages") == 1
    a.close()
    b.close()


def test_a_failing_request_does_not_fail_the_others_in_its_group(store_url):
    st = JournalStore(store_url)
    o = st.open("n")
    good = jpb.AppendRequest(request_id=1, epoch=o.epoch)
    good.add_messages.add(message_id=10, data=b"x", address="a", size=1, timestamp=1, queue_id=1)
    bad = jpb.AppendRequest(request_id=2, epoch=o.epoch)
    bad.add_messages.add(message_id=10, data=b"dup", address="a", size=1, timestamp=1, queue_id=1)
    later = jpb.AppendRequest(request_id=3, epoch=o.epoch)
    later.add_messages.add(message_id=11, data=b"y", address="a", size=1, timestamp=1, queue_id=1)
    results = st.apply([good, bad, later])
    assert [r.ok for r in results] == [True, False, True]
    assert st.count("messages") == 2
    st.close()


def test_recovery_pages_carry_inline_and_shared_references(store_url):
    st = JournalStore(store_url)
    o = st.open("n")
    r = jpb.AppendRequest(request_id=1, epoch=o.epoch)
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
    d = jpb.AppendRequest(request_id=2, epoch=o.epoch, delete_queues=[1])
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
