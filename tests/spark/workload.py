"""A real broker workload whose outcome the report must reproduce.

`run_workload` drives one router through the SDK and returns what it did:
counts per address and the wall-clock bounds (ms) that every latency must fit
in. Everything is durable, so everything is in the event log.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

from meshmq.client import connect

#: Node config for workload nodes: a DLQ, one-shot poison address, a fast expiry reaper.
NODE_EXTRA = """
addresses:
  DLQ: {anycast: [{name: DLQ}]}
address-settings:
  "#":
    dead-letter-address: DLQ
  "poison.#":
    max-delivery-attempts: 1
message-expiry-scan-period: 100
"""

DELAY_BEFORE_CONSUMING_S = 0.3


def sqlite_url(path: Path) -> str:
    """The store URL the broker uses for a SQLite journal file."""
    return f"sqlite:///{path}"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Workload:
    """What one node was asked to do, and when."""

    orders: int  # anycast "orders", all acknowledged
    news: int = 0  # multicast "news" to 2 durable subscriptions, all acknowledged
    pending: int = 0  # anycast "pending", never consumed
    poison: int = 0  # anycast "poison.q", nacked once -> dead-lettered to DLQ (copy waits there)
    expiring: int = 0  # anycast "expiring.q" with a 50 ms ttl, never consumed -> expired (dropped)
    started_ms: int = 0  # before the first send
    sent_ms: int = 0  # after the last orders/news send was confirmed
    consuming_ms: int = 0  # before the first receive
    stopped_ms: int = 0  # after the node stopped (every ack stored by then)
    news_subscriptions: tuple[str, ...] = ("news.a", "news.b")
    enqueued_by_address: dict[str, int] = field(default_factory=dict)

    @property
    def acknowledged(self) -> int:
        return self.orders + self.news * len(self.news_subscriptions)

    @property
    def enqueued(self) -> int:
        return sum(self.enqueued_by_address.values())

    def expect(self) -> None:
        self.enqueued_by_address = {
            a: n for a, n in {
                "orders": self.orders,
                "news": self.news * len(self.news_subscriptions),
                "pending": self.pending,
                "poison.q": self.poison,
                "DLQ": self.poison,
                "expiring.q": self.expiring,
            }.items() if n
        }


async def _until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def _drain(consumer, n: int) -> None:
    for i in range(n):
        msg = await consumer.receive(10)
        assert msg is not None, f"only {i} of {n} messages arrived"
        msg.ack()
    await consumer.close()


async def run_workload(node, w: Workload) -> Workload:
    """Run `w` against the router `node` (a tests.fixtures.nodes.ServiceProcess), then stop it."""
    w.expect()
    w.started_ms = now_ms()
    async with await connect(node.url) as conn:
        s = await conn.session()
        subs = [await s.create_consumer(address="news", subscription=name, shared=True) for name in w.news_subscriptions] if w.news else []
        orders = await s.create_producer("orders")
        futs = [await orders.send_async(f"order {i}".encode(), routing_type="anycast") for i in range(w.orders)]
        if w.news:
            news = await s.create_producer("news")
            futs += [await news.send_async(f"news {i}".encode(), routing_type="multicast") for i in range(w.news)]
        await asyncio.gather(*futs)
        w.sent_ms = now_ms()

        await asyncio.sleep(DELAY_BEFORE_CONSUMING_S)
        w.consuming_ms = now_ms()
        await _drain(await s.create_consumer("orders"), w.orders)
        for sub in subs:
            await _drain(sub, w.news)

        if w.pending:
            p = await s.create_producer("pending")
            for i in range(w.pending):
                await p.send(f"pending {i}".encode(), routing_type="anycast")
        if w.expiring:
            p = await s.create_producer("expiring.q")
            for i in range(w.expiring):
                await p.send(b"short-lived", ttl=50, routing_type="anycast")
        if w.poison:
            p = await s.create_producer("poison.q")
            for i in range(w.poison):
                await p.send(b"poison", routing_type="anycast")
            c = await s.create_consumer("poison.q")
            for _ in range(w.poison):
                (await c.receive(10)).nack()
            await c.close()

        async def settled() -> bool:
            """Every ack, nack and expiry has been applied by the router."""
            for name in ("orders", *(w.news_subscriptions if w.news else ())):
                info = await conn.admin.queue(name)
                if info is not None and info.message_count:
                    return False
            if w.expiring:
                info = await conn.admin.queue("expiring.q")  # None once auto-deleted: then it is empty
                if info is not None and info.messages_expired < w.expiring:
                    return False
            if w.poison and (await conn.admin.queue("DLQ")).message_count < w.poison:
                return False
            return True

        await _until(settled, 15, "the workload's acks, nacks and expiries")
    node.stop()  # SIGTERM: a clean shutdown commits everything the router holds
    w.stopped_ms = now_ms()
    return w


@dataclass
class StoreNode:
    """A stopped node: its store and what its workload did."""

    name: str
    url: str  # the store, as the broker names it
    path: Path | None
    workload: Workload
