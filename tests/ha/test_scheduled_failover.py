"""Scheduled delivery across an HA failover (issue 29): messages scheduled a
few seconds ahead are sent to the live, the live is killed with -9 before
their time, and the backup that takes over holds them as scheduled and
delivers each no earlier than its time, every one once. The time is a field
of the stored message (services/router/scheduled.py), so the backup recovers
it as the live would after a restart: over replication and over a shared store."""

from __future__ import annotations

import asyncio
import time

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually

from .test_replication import in_sync, pair
from .test_shared_store import QUEUE, answers
from .test_shared_store import node as shared_store_node

pytestmark = pytest.mark.integration

COUNT = 20
# Far enough ahead that the backup has taken over (about two seconds after
# the kill) and can be seen holding them before the first one is due.
AHEAD_MS = 8000


def now_ms() -> int:
    return int(time.time() * 1000)


async def send_scheduled(live) -> dict[int, int]:
    """COUNT messages on the live, message n due 100 ms after message n-1;
    also one not scheduled, which is waiting at once. Returns n -> delivery time."""
    start = now_ms() + AHEAD_MS
    times = {n: start + 100 * n for n in range(COUNT)}
    async with await connect(live.url) as conn:
        producer = await (await conn.session()).create_producer(QUEUE)
        for n, at in times.items():
            await producer.send(b"s", properties={"n": n}, delivery_time=at)
        await producer.send(b"now", properties={"n": -1})
        info = await conn.admin.queue(QUEUE)
        assert (info.message_count, info.scheduled_count) == (COUNT + 1, COUNT)
    return times


async def delivered_on_time(backup, times: dict[int, int]) -> None:
    """After the takeover: the backup counts them as scheduled before the first
    is due, then delivers each at or after its time, every one once."""
    async with await connect(backup.url) as conn:
        info = await conn.admin.queue(QUEUE)
        assert now_ms() < min(times.values()), "the takeover took longer than the test allows"
        assert (info.message_count, info.scheduled_count) == (COUNT + 1, COUNT)
        consumer = await (await conn.session()).create_consumer(QUEUE)
        first = await consumer.receive(5)
        assert first.properties["n"] == -1  # the unscheduled one, at once
        first.ack()
        got = []
        while len(got) < COUNT:
            m = await consumer.receive(AHEAD_MS / 1000 + 10)
            assert m is not None, f"only {sorted(got)} of {COUNT} scheduled messages came"
            n = int(m.properties["n"])
            assert now_ms() >= times[n], f"message {n} delivered {times[n] - now_ms()} ms before its time"
            assert m.delivery_time == times[n]
            got.append(n)
            m.ack()
        assert await consumer.receive(0.5) is None
        assert got == list(range(COUNT))  # each due after the one before: in time order, none twice

        async def empty() -> bool:
            info = await conn.admin.queue(QUEUE)
            return (info.message_count, info.scheduled_count) == (0, 0)
        await eventually(empty, 10, "the backup's queue to be empty")


async def test_scheduled_messages_survive_a_kill_9_of_the_primary_over_replication(nodes, etcd):
    primary, backup = pair(nodes, etcd)
    await in_sync(primary, backup)
    times = await send_scheduled(primary)
    await asyncio.to_thread(primary.kill9)
    await eventually(lambda: answers(backup), 30, "the backup to take over")
    await delivered_on_time(backup, times)


async def test_scheduled_messages_survive_a_kill_9_of_the_live_on_a_shared_store(nodes, pg_url):
    live = shared_store_node(nodes, "live", pg_url, "master")
    backup = shared_store_node(nodes, "backup", pg_url, "slave")
    times = await send_scheduled(live)
    await asyncio.to_thread(live.kill9)
    await eventually(lambda: answers(backup), 20, "the backup to take over")
    await delivered_on_time(backup, times)
