"""Address-full-policy BLOCK (services/router/producer_flow.py) against a real
router: a producer sending to a full address waits, nothing is lost or
reordered, and it goes on once a consumer makes room; a client that ignores
its window is refused past it instead of filling the router's memory."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import AddressFullError, connect
from tests.fixtures.nodes import eventually
from tests.integration.test_paging import drain

pytestmark = pytest.mark.integration

SETTINGS = """
address-settings:
  "block.#":
    max-size-bytes: 40K  # ~20 messages of 1 KB, each counted with its ~1,000 bytes of overhead (paging.py)
    address-full-policy: BLOCK
"""
BODY = 1000


def body(i: int) -> bytes:
    return f"m{i:05d}".encode() + b"." * (BODY - 6)


async def test_a_producer_waits_while_the_address_is_full_and_loses_nothing(nodes):
    node = nodes.router("blocking", extra=SETTINGS)
    async with await connect(node.url + "?producerWindowSize=8192&confirmationWindowSize=-1") as conn:
        await conn.admin.create_queue("block.q", address="block.q", routing_type="anycast")
        s = await conn.session()
        p = await s.create_producer("block.q")

        async def produce() -> None:
            for i in range(200):
                await p.send_async(body(i), durable=True, routing_type="anycast")
            await p.flush()

        producing = asyncio.create_task(produce())

        async def full() -> bool:
            return (await conn.admin.queue("block.q")).message_count >= 20

        await eventually(full, 20, "the address to fill")
        # Blocked: the producer does not get through while nobody consumes ...
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(producing), 1.0)
        info = await conn.admin.queue("block.q")
        address = {a.name: a for a in await conn.admin.list_addresses()}["block.q"]
        # ... and what the address holds stays near its 40 KB (one batch may overshoot: it is paged).
        assert 20 <= info.message_count <= 40, info
        assert address.memory_bytes <= 44_000, address
        assert address.messages_dropped == 0
        # A consumer makes room: every message arrives, in order, and the producer finishes.
        assert await drain(conn, "block.q", 200) == [f"m{i:05d}" for i in range(200)]
        await asyncio.wait_for(producing, 10)


async def test_a_client_past_its_window_is_refused_not_buffered(nodes):
    """producerWindowSize=-1 and confirmationWindowSize=-1: the client never
    waits, so the router holds at most 1 MiB for it and refuses the rest."""
    node = nodes.router("blocking-rogue", extra=SETTINGS)
    async with await connect(node.url + "?producerWindowSize=-1&confirmationWindowSize=-1") as conn:
        await conn.admin.create_queue("block.rogue", address="block.rogue", routing_type="anycast")
        s = await conn.session()
        p = await s.create_producer("block.rogue")
        total = 1600  # ~1.6 MB: more than the 40 KB limit plus the 1 MiB the router holds
        futures = [await p.send_async(body(i), durable=True, routing_type="anycast") for i in range(total)]
        drainer = asyncio.create_task(drain_when_refused(conn, futures))
        outcomes = await asyncio.gather(*futures, return_exceptions=True)
        confirmed = [i for i, o in enumerate(outcomes) if o is None]
        refused = [o for o in outcomes if o is not None]
        assert refused and all(isinstance(o, AddressFullError) for o in refused), refused[:3]
        assert "window" in str(refused[0])
        assert len(confirmed) + len(refused) == total
        got = await drainer
        assert got == [f"m{i:05d}" for i in confirmed]  # every confirmed one, none refused, in order


async def drain_when_refused(conn, futures) -> list[str]:
    """Once the first refusal is in, consume (making room for what is held)."""
    await eventually(lambda: _any_failed(futures), 20, "the first refusal")
    s = await conn.session()
    c = await s.create_consumer("block.rogue")
    got = []
    while True:
        m = await c.receive(2)
        if m is None:
            break
        got.append(m.body[:6].decode())
        m.ack()
    return got


def _any_failed(futures) -> bool:
    return any(f.done() and f.exception() is not None for f in futures)
