"""Scheduled delivery (`_AMQ_SCHED_DELIVERY`, `_AMQ_SCHED_DELAY`) and
redelivery backoff on a real router: what the broker holds back, until when,
how it counts it, and that a restart keeps the time."""

from __future__ import annotations

import time

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually
from tests.integration.shared import uniq

pytestmark = pytest.mark.integration


def now_ms() -> int:
    return int(time.time() * 1000)


async def test_a_message_scheduled_for_a_time_is_stored_at_once_and_delivered_at_that_time(conn):
    q = uniq("sched.at")
    s = await conn.session()
    await conn.admin.create_queue(q, routing_type="anycast")
    c = await s.create_consumer(q)
    p = await s.create_producer(q)
    at = now_ms() + 3000  # room for the steps before it on a loaded machine
    await p.send(b"later", routing_type="anycast", delivery_time=at)  # confirmed: stored now
    await p.send(b"now", routing_type="anycast")
    first = await c.receive(5)
    assert first.body == b"now"  # the unscheduled one overtakes it
    first.ack()
    # Held as scheduled, not waiting (the ack of the first travels in the background), until its time.
    await eventually(lambda: _counts(conn, q, (1, 1)), (at - now_ms()) / 1000 - 0.2, "one message, scheduled")
    # Nothing arrives until its time (the router's clock is this machine's).
    assert await c.receive(max(0.0, (at - now_ms()) / 1000 - 0.05)) is None
    msg = await c.receive(5)
    arrived = now_ms()
    assert msg.body == b"later" and arrived >= at
    assert msg.delivery_time == at and msg.delivery_count == 1
    msg.ack()
    await eventually(lambda: _counts(conn, q, (0, 0)), 5, "the queue to be empty")


async def test_a_delay_counts_from_the_routers_arrival_and_is_stored_as_a_time(conn):
    q = uniq("sched.delay")
    s = await conn.session()
    await conn.admin.create_queue(q, routing_type="anycast")
    c = await s.create_consumer(q)
    p = await s.create_producer(q)
    before = now_ms()
    await p.send(b"in a while", routing_type="anycast", delivery_delay=1200)
    after = now_ms()
    assert (await conn.admin.queue(q)).scheduled_count == 1
    assert await c.receive(max(0.0, (before + 1200 - now_ms()) / 1000 - 0.05)) is None
    msg = await c.receive(5)
    assert now_ms() >= before + 1200
    # The router turned the delay into the absolute time it keeps (restart, cluster bridges).
    assert before + 1200 <= msg.delivery_time <= after + 1200
    assert msg.proto.delivery_delay == 0 and not msg.properties
    msg.ack()


async def test_artemis_scheduling_properties_schedule_and_a_selector_names_the_time(conn):
    """A client written for Artemis sets `_AMQ_SCHED_DELAY` / `_AMQ_SCHED_DELIVERY`
    as properties: the SDK sends them as the message's fields, and a
    selector on `_AMQ_SCHED_DELIVERY` reads the stored time."""
    q = uniq("sched.props")
    s = await conn.session()
    await conn.admin.create_queue(q, routing_type="anycast")
    p = await s.create_producer(q)
    before = now_ms()
    await p.send(b"delayed", routing_type="anycast", properties={"_AMQ_SCHED_DELAY": 800, "kind": "d"})
    await p.send(b"timed", routing_type="anycast", properties={"_AMQ_SCHED_DELIVERY": before + 600})
    await p.send(b"plain", routing_type="anycast")
    assert (await conn.admin.queue(q)).scheduled_count == 2
    c = await s.create_consumer(q, filter=f"_AMQ_SCHED_DELIVERY >= {before + 700}")
    msg = await c.receive(5)
    assert msg.body == b"delayed" and now_ms() >= before + 800 and msg.properties == {"kind": "d"}
    msg.ack()
    assert await c.receive(0.3) is None  # "timed" (600) and "plain" (none) do not match


async def test_a_scheduled_time_that_is_not_a_long_is_refused_by_the_sdk(conn):
    p = await (await conn.session()).create_producer(uniq("sched.bad"))
    with pytest.raises(ValueError, match="_AMQ_SCHED_DELIVERY"):
        await p.send(b"x", routing_type="anycast", properties={"_AMQ_SCHED_DELIVERY": "tomorrow"})
    with pytest.raises(ValueError, match="must not be negative"):
        await p.send(b"x", routing_type="anycast", delivery_delay=-5)


async def _counts(conn, q, expected):
    info = await conn.admin.queue(q)
    return info is not None and (info.message_count, info.scheduled_count) == expected


# Long enough for a kill -9 and restart on a loaded CI machine (4.5 s was not, once).
DUE_AFTER_RESTART_MS = 10_000


async def test_scheduled_messages_survive_kill9_and_keep_their_original_time(nodes):
    node = nodes.router("sched-restart")
    q = "sched.restart"
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer(q)
        at = now_ms() + DUE_AFTER_RESTART_MS
        await p.send(b"at", routing_type="anycast", delivery_time=at)
        sent = now_ms()
        await p.send(b"delay", routing_type="anycast", delivery_delay=DUE_AFTER_RESTART_MS)
        confirmed = now_ms()
    node.kill9()
    node.start()
    assert now_ms() < at - 500, "the restart took too long for this test to see the wait"
    async with await connect(node.url) as conn:
        info = await conn.admin.queue(q)
        assert (info.message_count, info.scheduled_count) == (2, 2)
        c = await (await conn.session()).create_consumer(q)
        assert await c.receive(max(0.0, (at - now_ms()) / 1000 - 0.05)) is None
        got = [await c.receive(5), await c.receive(5)]
        arrived = now_ms()
        assert sorted(m.body for m in got) == [b"at", b"delay"] and arrived >= at
        times = {m.body: m.delivery_time for m in got}
        # The original times: the delay counted from the first arrival, not from the restart.
        assert times[b"at"] == at
        assert sent + DUE_AFTER_RESTART_MS <= times[b"delay"] <= confirmed + DUE_AFTER_RESTART_MS
        for m in got:
            m.ack()


async def test_redelivery_gaps_grow_by_the_multiplier_and_stop_at_max_redelivery_delay(conn):
    # redeliver-backoff.#: redelivery-delay 200, multiplier 2, max-redelivery-delay 800 (tests/fixtures/nodes.py)
    q = uniq("redeliver-backoff")
    s = await conn.session()
    p = await s.create_producer(q)
    await p.send(b"flaky", routing_type="anycast")
    c = await s.create_consumer(q)
    gaps = []
    msg = await c.receive(5)
    for _ in range(4):
        nacked = time.monotonic()
        msg.nack()
        msg = await c.receive(5)
        gaps.append((time.monotonic() - nacked) * 1000)
    msg.ack()
    expected = [200, 400, 800, 800]  # 200 x 2^(n-1), capped at 800
    for gap, want in zip(gaps, expected):
        assert want - 20 <= gap < want * 1.75, (gaps, expected)
