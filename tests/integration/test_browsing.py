"""Queue browsers from the SDK (session.create_browser, meshmq/client/browser.py)
against a real router: the order a consumer meets, nothing changed by a
browse, selectors, a paged queue browsed whole a page at a time, the blocking
API. The browse permission is tested with the other permissions in
test_authorization.py."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import InvalidRequestError, InvalidSelectorError, QueueNotFoundError, connect
from meshmq.client import blocking
from tests.integration.shared import drain

pytestmark = pytest.mark.integration

PAGING = """
address-settings:
  "browse.paged.#":
    max-size-bytes: 50K
    page-size-bytes: 20K
"""
# (n, priority): the queue hands out priority 9 first, then 4, then 0, each in arrival order.
SENT = [(0, 4), (1, 0), (2, 9), (3, 4), (4, 9), (5, 0)]
CONSUMER_ORDER = [2, 4, 0, 3, 1, 5]


async def send(conn, queue: str, items=SENT, *, body: bytes = b"") -> None:
    await conn.admin.create_queue(queue, routing_type="anycast")
    p = await (await conn.session()).create_producer(queue)
    futs = [await p.send_async(body or f"m{n}".encode(), properties={"n": n}, priority=prio) for n, prio in items]
    await asyncio.gather(*futs)


async def browse_all(browser) -> list:
    return [m async for m in browser]


async def test_a_browser_meets_the_messages_in_consumer_order_and_changes_nothing(shared_router):
    async with await connect(shared_router.url) as conn:
        await send(conn, "browse.order")
        s = await conn.session()
        browser = await s.create_browser("browse.order")
        seen = await browse_all(browser)
        assert [m.properties["n"] for m in seen] == CONSUMER_ORDER
        assert [m.body for m in seen] == [f"m{n}".encode() for n in CONSUMER_ORDER]
        assert [m.priority for m in seen] == [9, 9, 4, 4, 0, 0]
        assert all(m.delivery_count == 0 and m.state == "waiting" for m in seen)
        with pytest.raises(InvalidRequestError):
            seen[0].ack()
        # Each pass is a new one over the queue, as JMS's getEnumeration().
        assert [m.properties["n"] for m in await browse_all(browser)] == CONSUMER_ORDER
        await browser.close()

        info = await conn.admin.queue("browse.order")
        assert info.message_count == 6 and info.delivering_count == 0 and info.messages_acknowledged == 0
        got = await drain(conn, "browse.order", 6)
        assert [m.properties["n"] for m in got] == CONSUMER_ORDER
        assert [m.delivery_count for m in got] == [1] * 6


async def test_a_browser_leaves_out_what_is_being_delivered(shared_router):
    async with await connect(shared_router.url) as conn:
        await send(conn, "browse.delivering")
        c = await (await conn.session()).create_consumer("browse.delivering", filter="n = 2")
        held = await c.receive(5)  # delivered, not acknowledged: the next consumer does not meet it
        assert held is not None
        seen = await browse_all(await (await conn.session()).create_browser("browse.delivering"))
        assert [m.properties["n"] for m in seen] == [n for n in CONSUMER_ORDER if n != 2]


async def test_a_browser_takes_a_selector_with_the_consumer_rules(shared_router):
    async with await connect(shared_router.url) as conn:
        await send(conn, "browse.selector")
        s = await conn.session()
        seen = await browse_all(await s.create_browser("browse.selector", "n >= 3 AND JMSPriority > 0"))
        assert [m.properties["n"] for m in seen] == [4, 3]
        with pytest.raises(InvalidSelectorError) as bad:
            await s.create_browser("browse.selector", "n >>> 3")
        assert "position" in str(bad.value).lower()
        with pytest.raises(QueueNotFoundError):
            await s.create_browser("browse.no-such-queue")
        assert (await conn.admin.queue("browse.selector")).message_count == 6


async def test_a_paged_queue_is_browsed_whole_a_page_at_a_time(nodes):
    node = nodes.router("browse-paging", extra=PAGING)
    total = 600
    async with await connect(node.url) as conn:
        await send(conn, "browse.paged.q", [(n, 4) for n in range(total)], body=b"." * 1000)
        info = await conn.admin.queue("browse.paged.q")
        assert info.message_count == total and info.paged_count >= 500
        browser = await (await conn.session()).create_browser("browse.paged.q", page_size=50)
        seen = await browse_all(browser)
        assert [m.properties["n"] for m in seen] == list(range(total))
        assert seen[-1].state == "paged" and len(seen[-1].body) == 1000
        # Half a pass, then a whole one: a pass read page by page ends cleanly where it is left.
        it = browser.__aiter__()
        assert [(await it.__anext__()).properties["n"] for _ in range(3)] == [0, 1, 2]
        filtered = await browse_all(await (await conn.session()).create_browser("browse.paged.q", "n >= 590"))
        assert [m.properties["n"] for m in filtered] == list(range(590, total))
        await browser.close()

        after = await conn.admin.queue("browse.paged.q")
        assert after.message_count == total and after.paged_count == info.paged_count
        got = await drain(conn, "browse.paged.q", total)
        assert [m.properties["n"] for m in got] == list(range(total))
        assert {m.delivery_count for m in got} == {1}


def test_the_blocking_api_browses_too(shared_router):
    with blocking.connect(shared_router.url) as conn:
        conn.admin.create_queue("browse.blocking", routing_type="anycast")
        s = conn.session()
        p = s.create_producer("browse.blocking")
        for n, prio in SENT:
            p.send(f"m{n}".encode(), properties={"n": n}, priority=prio)
        with s.create_browser("browse.blocking") as browser:
            assert [m.properties["n"] for m in browser] == CONSUMER_ORDER
            assert [m.properties["n"] for m in browser] == CONSUMER_ORDER
        assert [m.properties["n"] for m in s.create_browser("browse.blocking", "n < 2")] == [0, 1]
        with pytest.raises(InvalidSelectorError):
            s.create_browser("browse.blocking", "n >>> 3")
        c = s.create_consumer("browse.blocking")
        m = c.receive(5)
        assert m.properties["n"] == 2 and m.delivery_count == 1
