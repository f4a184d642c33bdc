"""Regression tests for the ways the router lost confirmed or unread
messages in normal operation (issue #9), each against a real router."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.errors import MeshMQError, Reason
from tests.integration.shared import receive_all, uniq

pytestmark = pytest.mark.integration


async def queue_names(conn) -> set[str]:
    return {q.name for q in await conn.admin.list_queues()}


async def test_auto_delete_never_drops_messages_whose_commit_is_in_flight(conn):
    """A send, then the close of the auto-created queue's last consumer, on one
    ordered stream: the close is handled while the send's commit is in flight.
    The queue must stay (the message is on its way in) and deliver it."""
    s = await conn.session()
    for i in range(20):
        q = uniq("autodel-race")
        c = await s.create_consumer(q)  # auto-creates the queue
        p = await s.create_producer(q)
        confirmed = await p.send_async(f"m{i}".encode(), routing_type="anycast")
        await asyncio.sleep(0)  # the producer's batch goes out before the close
        await c.close()
        await confirmed
        c = await s.create_consumer(q)
        m = await c.receive(5)
        assert m is not None and m.body == f"m{i}".encode(), f"round {i}: a confirmed message was lost"
        m.ack()
        await c.close()


async def test_unseen_buffered_messages_do_not_count_as_delivery_attempts(conn):
    """15 sent; eleven times a consumer takes one and closes: nothing is dead-lettered."""
    q = uniq("unseen")
    s = await conn.session()
    p = await s.create_producer(q)
    for i in range(15):
        await p.send(f"m{i}".encode(), routing_type="anycast")
    dlq_before = (await conn.admin.queue("DLQ")).messages_added
    seen = []
    for _ in range(11):
        c = await s.create_consumer(q)  # the whole backlog lands in its buffer
        m = await c.receive(5)
        seen.append((m.body, m.delivery_count))
        m.ack()
        await c.close()
    assert seen == [(f"m{i}".encode(), 1) for i in range(11)]
    info = await conn.admin.queue(q)
    assert info.message_count == 4 and info.messages_killed == 0
    assert (await conn.admin.queue("DLQ")).messages_added == dlq_before
    c = await s.create_consumer(q)
    rest = await receive_all(c, 4)
    assert [(m.body, m.delivery_count) for m in rest] == [(f"m{i}".encode(), 1) for i in range(11, 15)]


async def test_a_handed_but_unacknowledged_message_still_counts(conn):
    q = uniq("handed")
    s = await conn.session()
    p = await s.create_producer(q)
    await p.send(b"seen", routing_type="anycast")
    c = await s.create_consumer(q)
    assert (await c.receive(5)).delivery_count == 1
    await c.close()  # handed to the application, not acknowledged: an attempt
    c = await s.create_consumer(q)
    assert (await c.receive(5)).delivery_count == 2


async def test_closing_the_session_counts_only_the_messages_handed_to_the_application(conn):
    """A session closed with a consumer's buffer full: the message the
    application took is an attempt, the ones it never saw are not (as when the
    consumer itself is closed)."""
    q = uniq("session-close")
    s = await conn.session()
    p = await s.create_producer(q)
    for i in range(5):
        await p.send(f"m{i}".encode(), routing_type="anycast")
    reader = await conn.session()
    c = await reader.create_consumer(q)  # the whole backlog lands in its buffer
    assert (await c.receive(5)).body == b"m0"  # handed, not acknowledged
    await reader.close()
    c = await s.create_consumer(q)
    rest = await receive_all(c, 5)
    assert [(m.body, m.delivery_count) for m in rest] == [(b"m0", 2)] + [(f"m{i}".encode(), 1) for i in range(1, 5)]


async def test_messages_in_a_redelivery_delay_belong_to_their_queue(conn):
    """Counted, keeping an auto-created queue alive, then redelivered; and purged with the queue."""
    q = uniq("redeliver-delay")  # redelivery-delay: 300 ms
    s = await conn.session()
    p = await s.create_producer(q)
    await p.send(b"later", routing_type="anycast")
    c = await s.create_consumer(q)
    (await c.receive(5)).nack()
    await c.close()  # the last consumer of an auto-created queue goes while the message waits out its delay
    await s.create_producer(q)  # answered after the router handled the close (one ordered stream)
    assert q in await queue_names(conn)
    assert (await conn.admin.queue(q)).message_count == 1
    c = await s.create_consumer(q)
    again = await c.receive(5)
    assert again.body == b"later" and again.delivery_count == 2
    again.nack()
    assert (await conn.admin.queue(q)).message_count == 1
    assert await conn.admin.purge_queue(q) == 1
    assert await c.receive(0.6) is None  # the purged message does not come back after the delay
    assert (await conn.admin.queue(q)).message_count == 0


async def test_a_refused_send_does_not_burn_its_duplicate_id(conn):
    address = uniq("nocreate")  # auto-create-addresses: false
    s = await conn.session()
    p = await s.create_producer(address)
    with pytest.raises(MeshMQError) as err:
        await p.send(b"order", duplicate_id="order-7", routing_type="anycast")
    assert err.value.reason is Reason.ADDRESS_NOT_FOUND
    await conn.admin.create_queue(address, address=address, routing_type="anycast")
    await p.send(b"order", duplicate_id="order-7", routing_type="anycast")  # the retry is not a duplicate
    c = await s.create_consumer(address)
    assert (await c.receive(5)).body == b"order"


async def test_rollback_gives_the_messages_back_in_order(conn):
    q = uniq("tx-order")
    plain = await conn.session()
    p = await plain.create_producer(q)
    for i in range(1, 6):
        await p.send(f"m{i}".encode(), routing_type="anycast")
    tx = await conn.session(transacted=True)
    c = await tx.create_consumer(q)
    m1 = await c.receive(5)
    assert m1.body == b"m1"
    m1.ack()
    await tx.rollback()
    again = await receive_all(c, 5)
    assert [(m.body, m.delivery_count) for m in again] == [
        (b"m1", 2), (b"m2", 1), (b"m3", 1), (b"m4", 1), (b"m5", 1)
    ]
    for m in again:
        m.ack()
    await tx.commit()
    assert (await conn.admin.queue(q)).message_count == 0


async def test_unroutable_multicast_message_reaches_the_dead_letter_queue(conn):
    address = uniq("noroute")  # send-to-dla-on-no-route, dead-letter-address DLQ
    s = await conn.session()
    dlq = await s.create_consumer("DLQ", filter=f"_AMQ_ORIG_ADDRESS = '{address}'")  # DLQ is shared
    p = await s.create_producer(address)
    await p.send(b"nobody listens", routing_type="multicast")
    dead = await dlq.receive(5)
    assert dead.body == b"nobody listens" and dead.properties["_AMQ_ORIG_ADDRESS"] == address
    dead.ack()
    dla = {a.name: a for a in (await conn.admin.list_addresses())}["DLQ"]
    assert list(dla.routing_types) == [1]  # still anycast only, as declared
