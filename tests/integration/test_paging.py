"""Address-full policies (services/router/paging.py) against a real router:
PAGE keeps memory bounded and gives every message back in order, across a
kill -9 too; FAIL refuses; DROP drops and counts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from meshmq.client import AddressFullError, connect

pytestmark = pytest.mark.integration

SETTINGS = """
address-settings:
  "paged.#":
    max-size-bytes: 50K
    page-size-bytes: 20K
  "fail.#":
    max-size-messages: 5
    address-full-policy: FAIL
  "drop.#":
    max-size-messages: 5
    address-full-policy: DROP
  "prio.#":
    max-size-messages: 10
    page-size-bytes: 1M
"""


async def fill(conn, address: str, n: int, *, durable: bool = True, routing_type: str = "anycast") -> None:
    s = await conn.session()
    p = await s.create_producer(address)
    futs = [await p.send_async(f"m{i:05d}".encode() + b"." * 1000, durable=durable, routing_type=routing_type)
            for i in range(n)]
    for f in futs:
        await f


async def drain(conn, queue: str, n: int, *, all_of_it: bool = True) -> list[str]:
    s = await conn.session()
    c = await s.create_consumer(queue)
    got = []
    for _ in range(n):
        m = await c.receive(10)
        assert m is not None, f"only {len(got)} of {n} came back"
        got.append(m.body[:6].decode())
        m.ack()
    if all_of_it:
        assert await c.receive(0.3) is None
    await c.close()
    return got


def expected(n: int) -> list[str]:
    return [f"m{i:05d}" for i in range(n)]


async def queue(conn, name: str):
    return await conn.admin.queue(name)


async def test_a_full_address_pages_and_every_message_comes_back_in_order(nodes):
    node = nodes.router("paging", extra=SETTINGS)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("paged.q", address="paged.q", routing_type="anycast")
        await fill(conn, "paged.q", 1000)
        info = await queue(conn, "paged.q")
        assert info.message_count == 1000
        assert info.paged_count >= 900  # ~50 KB of 1 KB messages stay in memory, the rest is paged
        address = {a.name: a for a in await conn.admin.list_addresses()}["paged.q"]
        assert address.paging and address.memory_bytes <= 60_000
        listed = subprocess.run([sys.executable, "-m", "meshmq.cli.main", "queue", "list", "--url", node.url],
                                capture_output=True, text=True, timeout=60)
        rows = [line.split("\t") for line in listed.stdout.splitlines()]
        row = dict(zip(rows[0], next(r for r in rows if r[0] == "paged.q")))
        assert int(row["paged"]) == info.paged_count and int(row["paged-bytes"]) == info.paged_bytes > 0
        assert await drain(conn, "paged.q", 1000) == expected(1000)
        info = await queue(conn, "paged.q")
        assert info.message_count == 0 and info.paged_count == 0


async def test_paged_messages_survive_kill_9_without_being_loaded_into_memory(nodes):
    node = nodes.router("paging-crash", extra=SETTINGS)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("paged.crash", address="paged.crash", routing_type="anycast")
        await fill(conn, "paged.crash", 800)
        assert await drain(conn, "paged.crash", 10, all_of_it=False) == expected(10)
    node.kill9()
    node.start()
    async with await connect(node.url) as conn:
        info = await queue(conn, "paged.crash")
        assert info.message_count == 790 and info.paged_count >= 700
        assert await drain(conn, "paged.crash", 790) == expected(800)[10:]


async def test_every_subscription_gets_every_paged_message_in_order(nodes):
    node = nodes.router("paging-multicast", extra=SETTINGS)
    async with await connect(node.url) as conn:
        s = await conn.session()
        for sub in ("a", "b"):
            await (await s.create_consumer(address="paged.news", subscription=f"sub-{sub}", shared=True)).close()
        await fill(conn, "paged.news", 400, routing_type="multicast")
        assert (await queue(conn, "sub-a")).paged_count > 0
        assert await drain(conn, "sub-a", 400) == expected(400)
        assert await drain(conn, "sub-b", 400) == expected(400)


async def test_non_durable_messages_page_too(nodes):
    node = nodes.router("paging-nondurable", extra=SETTINGS)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("paged.nd", address="paged.nd", routing_type="anycast")
        await fill(conn, "paged.nd", 300, durable=False)
        assert (await queue(conn, "paged.nd")).paged_count > 0
        assert await drain(conn, "paged.nd", 300) == expected(300)


async def test_purge_removes_paged_messages_for_good(nodes):
    node = nodes.router("paging-purge", extra=SETTINGS)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("paged.purge", address="paged.purge", routing_type="anycast")
        await fill(conn, "paged.purge", 300)
        assert await conn.admin.purge_queue("paged.purge") == 300
        assert (await queue(conn, "paged.purge")).message_count == 0
    node.stop()
    node.start()
    async with await connect(node.url) as conn:
        info = await queue(conn, "paged.purge")
        assert info.message_count == 0 and info.paged_count == 0
        await fill(conn, "paged.purge", 3)  # and the queue works normally afterwards
        assert await drain(conn, "paged.purge", 3) == expected(3)


async def test_fail_refuses_sends_while_full_and_accepts_them_again_after(nodes):
    node = nodes.router("paging-fail", extra=SETTINGS)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("fail.q", address="fail.q", routing_type="anycast")
        await fill(conn, "fail.q", 5)
        s = await conn.session()
        p = await s.create_producer("fail.q")
        with pytest.raises(AddressFullError, match="address-full-policy is FAIL"):
            await p.send(b"one too many", routing_type="anycast")
        assert await drain(conn, "fail.q", 5) == expected(5)
        await p.send(b"room again", routing_type="anycast")


async def test_drop_drops_and_counts(nodes):
    node = nodes.router("paging-drop", extra=SETTINGS)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("drop.q", address="drop.q", routing_type="anycast")
        await fill(conn, "drop.q", 12)  # all confirmed: DROP is silent to the producer, as in Artemis
        assert (await queue(conn, "drop.q")).message_count == 5
        address = {a.name: a for a in await conn.admin.list_addresses()}["drop.q"]
        assert address.messages_dropped == 7
        assert await drain(conn, "drop.q", 5) == expected(5)


async def test_paging_through_a_separate_journal_service(nodes):
    journal = nodes.journal("paging-journal")
    node = nodes.router("paging-remote", journal_address=journal.endpoint, extra=SETTINGS)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("paged.remote", address="paged.remote", routing_type="anycast")
        await fill(conn, "paged.remote", 500)
        assert (await queue(conn, "paged.remote")).paged_count > 0
        assert await drain(conn, "paged.remote", 500) == expected(500)


# (n, priority) of 30 messages: the first ten fill the address's memory, the
# other twenty are paged; each part holds 0, 4 and 9, and a 9 is among the last sent.
PRIORITIES = [(n, (0, 9, 4, 0, 4)[n % 5] if n < 29 else 9) for n in range(30)]


def by_priority(items: list[tuple[int, int]]) -> list[int]:
    """Highest priority first, arrival order within a priority."""
    return [n for n, _ in sorted(items, key=lambda item: (-item[1], item[0]))]


async def test_priority_orders_what_is_in_memory_and_each_page_read_back(nodes):
    """Artemis's behaviour, docs/broker.md "Paging": paged messages come back
    in page order, a page at a time, and what is in memory is delivered highest
    priority first. So the ten held in memory go first (by priority), then the
    page (by priority): a 9 in the page comes after a 0 that was in memory."""
    node = nodes.router("paging-priority", extra=SETTINGS)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("prio.q", address="prio.q", routing_type="anycast")
        s = await conn.session()
        p = await s.create_producer("prio.q")
        for n, prio in PRIORITIES:
            await p.send(str(n).encode(), priority=prio, routing_type="anycast")
        info = await queue(conn, "prio.q")
        assert info.message_count == 30 and info.paged_count == 20
        c = await s.create_consumer("prio.q")
        got = []
        for _ in range(30):
            m = await c.receive(10)
            assert m is not None, f"only {len(got)} of 30 came back"
            got.append(int(m.body))
            m.ack()
        assert await c.receive(0.3) is None
        assert got == by_priority(PRIORITIES[:10]) + by_priority(PRIORITIES[10:])
        assert (await queue(conn, "prio.q")).message_count == 0
