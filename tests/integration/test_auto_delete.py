"""Auto-deletion with Artemis's delays and message count on a real router
(services/router/auto_delete.py): `auto-delete-queues-delay`,
`auto-delete-queues-message-count`, `auto-delete-addresses-delay`, set for
the shared router's `autodel-*` addresses (tests/fixtures/nodes.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.fixtures.nodes import eventually
from tests.integration.shared import receive_all, uniq

pytestmark = pytest.mark.integration

# auto-delete-queues-delay and auto-delete-addresses-delay of the autodel-delay / -addr matches: long
# enough that the calls made "within the delay" (a close, then a look or a new consumer) stay within
# it on a loaded machine, where one call can take a few hundred milliseconds.
DELAY_S = 1.5


async def _gone(conn, queue: str) -> bool:
    return await conn.admin.queue(queue) is None


async def _address_gone(conn, address: str) -> bool:
    return all(a.name != address for a in await conn.admin.list_addresses())


async def test_an_auto_created_queue_outlives_its_last_consumer_by_the_delay(conn):
    q = uniq("autodel-delay.q")
    c = await (await conn.session()).create_consumer(q)
    assert await conn.admin.queue(q) is not None
    await c.close()
    left = time.monotonic()
    assert await conn.admin.queue(q) is not None, "deleted at once despite auto-delete-queues-delay"
    await eventually(lambda: _gone(conn, q), 10, f"{q} to be auto-deleted after its delay")
    assert time.monotonic() - left >= DELAY_S * 0.9


async def test_a_consumer_attaching_within_the_delay_keeps_the_queue(conn):
    q = uniq("autodel-delay.keep")
    s = await conn.session()
    await (await s.create_consumer(q)).close()
    again = await s.create_consumer(q)  # within the delay
    await asyncio.sleep(DELAY_S * 2)  # past the first deletion's time: it must not happen
    assert await conn.admin.queue(q) is not None, "the queue went while a consumer was attached"
    p = await s.create_producer(q)
    await p.send(b"still here", routing_type="anycast")
    got = await receive_all(again, 1)
    assert [m.body for m in got] == [b"still here"]
    got[0].ack()
    await eventually(lambda: _count(conn, q, 0), 5, f"{q} to be empty")
    await again.close()
    await eventually(lambda: _gone(conn, q), 10, f"{q} to be auto-deleted once its consumer left again")


async def test_a_queue_holding_up_to_the_message_count_is_deleted_and_one_holding_more_stays(conn):
    s = await conn.session()
    p = await s.create_producer()
    small, big = uniq("autodel-count.small"), uniq("autodel-count.big")
    for q, n in ((small, 2), (big, 3)):
        c = await s.create_consumer(q, window_size=0)  # auto-creates it; takes nothing
        for i in range(n):
            await p.send(b"m%d" % i, address=q, routing_type="anycast")
        await eventually(lambda q=q, n=n: _count(conn, q, n), 5, f"{q} to hold {n}")
        await c.close()
    await eventually(lambda: _gone(conn, small), 5, f"{small} (2 messages, message count 2) to be auto-deleted")
    assert (await conn.admin.queue(big)).message_count == 3, "a queue above the message count must stay"


async def test_message_count_minus_one_deletes_whatever_the_queue_holds(conn):
    q = uniq("autodel-any.q")
    s = await conn.session()
    c = await s.create_consumer(q, window_size=0)
    p = await s.create_producer(q)
    for i in range(5):
        await p.send(b"m%d" % i, routing_type="anycast")
    await eventually(lambda: _count(conn, q, 5), 5, f"{q} to hold 5")
    await c.close()
    await eventually(lambda: _gone(conn, q), 5, f"{q} to be auto-deleted with its 5 messages")


async def test_an_auto_created_address_outlives_its_last_queue_by_the_delay(conn):
    address = uniq("autodel-addr.a")
    c = await (await conn.session()).create_consumer(address)  # auto-creates address and queue
    await c.close()
    await eventually(lambda: _gone(conn, address), 5, "the queue to go at once (no queue delay here)")
    assert not await _address_gone(conn, address), "the address went at once despite auto-delete-addresses-delay"
    await eventually(lambda: _address_gone(conn, address), 10, f"address {address} to be auto-deleted after its delay")


async def test_a_queue_created_within_the_address_delay_keeps_the_address(conn):
    address = uniq("autodel-addr.keep")
    s = await conn.session()
    await (await s.create_consumer(address)).close()
    await eventually(lambda: _gone(conn, address), 5, "the queue to go at once")
    await conn.admin.create_queue(f"{address}.second", address=address, routing_type="anycast")
    await asyncio.sleep(DELAY_S * 2)  # past the address's deletion time: it must not happen
    assert not await _address_gone(conn, address)
    assert await conn.admin.queue(f"{address}.second") is not None


async def _count(conn, q: str, n: int) -> bool:
    info = await conn.admin.queue(q)
    return info is not None and info.message_count == n


SCAN_S = 0.4  # address-queue-scan-period of the router below


@pytest.fixture
def scanning_router(nodes):
    return nodes.router("scanner", extra=f"address-queue-scan-period: {int(SCAN_S * 1000)}\n")


async def test_an_address_a_message_made_but_no_queue_took_goes_after_the_scan_period(scanning_router):
    """A topic nobody subscribes to (or a late reply's address): the address the
    send auto-created has no queue to lose, yet goes, and stays gone after a
    restart; a subscription made within the period keeps it."""
    from meshmq.client import connect

    node = scanning_router
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer()
        for i in range(5):
            await p.send(b"to nobody %d" % i, address="nobody.news", routing_type="multicast")
        sent = time.monotonic()
        assert not await _address_gone(conn, "nobody.news"), "gone at once: a topic would be made per message"
        await eventually(lambda: _address_gone(conn, "nobody.news"), 10, "the unused address to be deleted")
        assert time.monotonic() - sent >= SCAN_S * 0.9

        await p.send(b"first", address="later.news", routing_type="multicast")
        sub = await s.create_consumer(address="later.news", subscription="late", shared=True)
        await asyncio.sleep(SCAN_S * 3)  # past the deletion's time: it must not happen
        assert not await _address_gone(conn, "later.news"), "the address went under its subscription"
        await p.send(b"second", address="later.news", routing_type="multicast")
        got = await receive_all(sub, 1)
        assert [m.body for m in got] == [b"second"]
        got[0].ack()
    node.stop()
    node.start()
    async with await connect(node.url) as conn:
        names = {a.name for a in await conn.admin.list_addresses()}
        assert "nobody.news" not in names and "later.news" in names
