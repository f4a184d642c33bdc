"""Slow consumers (services/router/slow_consumers.py) on a real router: KILL
closes a consumer that acknowledges below slow-consumer-threshold while its
queue has messages, telling its session why, and gives its messages back;
an idle consumer is left alone; NOTIFY logs and keeps the consumer."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import SlowConsumerError, connect
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration

SETTINGS = """
address-settings:
  "slow.kill.#":
    slow-consumer-threshold: 50
    slow-consumer-policy: KILL
    slow-consumer-check-period: 1
  "slow.notify.#":
    slow-consumer-threshold: 50
    slow-consumer-check-period: 1
"""


async def fill(conn, queue: str, n: int) -> None:
    await conn.admin.create_queue(queue, routing_type="anycast")
    p = await (await conn.session()).create_producer(queue)
    await asyncio.gather(*[await p.send_async(b"m%d" % i) for i in range(n)])


async def test_kill_closes_a_consumer_below_the_threshold_and_spares_an_idle_one(nodes):
    node = nodes.router("slow-kill", extra=SETTINGS)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("slow.kill.idle", routing_type="anycast")
        s = await conn.session()
        idle = await s.create_consumer("slow.kill.idle")
        await fill(conn, "slow.kill.q", 20)
        slow = await s.create_consumer("slow.kill.q")
        assert await slow.receive(5) is not None  # taken, never acknowledged

        async def killed():
            try:
                await slow.receive(0.2)
            except SlowConsumerError as exc:
                return exc
            return None

        exc = await eventually(killed, 10, "the slow consumer closed")
        text = str(exc)
        assert "slow.kill.q" in text and "slow-consumer-threshold of 50" in text and "KILL" in text, text
        info = await eventually(
            lambda: _queue_without_consumers(conn, "slow.kill.q"), 5, "its messages back in the queue")
        assert info.message_count == 20 and info.delivering_count == 0
        assert [c.queue for c in await conn.admin.list_consumers()] == ["slow.kill.idle"]
        assert await idle.receive(0.1) is None  # still open: an idle consumer is not slow


async def _queue_without_consumers(conn, name: str):
    info = await conn.admin.queue(name)
    return info if info.consumer_count == 0 and info.delivering_count == 0 else None


async def test_notify_logs_and_keeps_the_consumer(nodes):
    node = nodes.router("slow-notify", extra=SETTINGS)
    async with await connect(node.url) as conn:
        await fill(conn, "slow.notify.q", 20)
        c = await (await conn.session()).create_consumer("slow.notify.q")
        first = await c.receive(5)
        await eventually(lambda: "slow consumer: consumer" in node.log_tail(200), 10, "a slow-consumer warning")
        assert "slow.notify.q" in node.log_tail(200)
        first.ack()
        assert (await c.receive(5)) is not None  # the consumer was kept
        assert (await conn.admin.queue("slow.notify.q")).consumer_count == 1
