"""A router's node-level series, the `?name[]=` filter, and its memory and
disk alarms (docs/metrics.md, docs/broker.md "Alarms"), on real routers."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from meshmq.client import connect
from meshmq.errors import MeshMQError
from tests.fixtures.nodes import eventually
from tests.metrics.test_metrics import METRICS, Scrape, scrape, uniq


@pytest.mark.integration
async def test_the_name_filter_serves_only_the_named_series_on_a_router(nodes) -> None:
    node = nodes.router("filtered", extra=METRICS)
    url = node.info["metrics"]
    q = uniq("filter")
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer(q)
        await p.send(b"x", routing_type="anycast")
    async with httpx.AsyncClient(timeout=10) as client:
        resp = await client.get(url, params=[("name[]", "meshmq_queue_messages"),
                                             ("name[]", "meshmq_router_disk_used_percent")])
    assert resp.status_code == 200
    got = Scrape(resp.text)
    assert {s.name for s in got.samples} == {"meshmq_queue_messages", "meshmq_router_disk_used_percent"}
    assert got.get("meshmq_queue_messages", queue=q, node="filtered") == 1


@pytest.mark.integration
async def test_node_totals_connections_producers_and_routed_per_address(nodes) -> None:
    node = nodes.router("totals", extra=METRICS)
    url = node.info["metrics"]
    q, nowhere = uniq("totals"), uniq("nowhere")
    async with await connect(node.url) as conn:
        s = await conn.session()
        # An address with no queue (multicast, no subscription): what is sent there is unrouted.
        await conn.admin.create_address(nowhere, routing_types=("multicast",))
        p = await s.create_producer(q)
        p2 = await s.create_producer(nowhere)
        for i in range(10):
            await p.send(b"m%d" % i, routing_type="anycast")
        for i in range(3):
            await p2.send(b"lost", routing_type="multicast")
        c = await s.create_consumer(q)
        first = await c.receive(timeout=10)
        first.nack()  # back to the queue: delivered again
        got = 0
        while got < 10:
            batch = await c.receive_batch(10, timeout=10)
            assert batch, f"only {got} of 10 came back"
            for m in batch:
                m.ack()
            got += len(batch)

        async def settled():
            now = await scrape(url)
            return now if now.get("meshmq_router_messages_acknowledged_total") >= 10 else None

        now = await eventually(settled, 30, "the acknowledgements to be counted")
        assert now.get("meshmq_router_connections") >= 1
        assert now.get("meshmq_router_sessions") >= 1
        assert now.get("meshmq_router_producers") == 2
        assert now.get("meshmq_router_consumers") == 1
        assert now.get("meshmq_address_messages_routed_total", address=q) == 10
        assert now.get("meshmq_address_messages_unrouted_total", address=q) == 0
        assert now.get("meshmq_address_messages_unrouted_total", address=nowhere) == 3
        assert now.get("meshmq_address_messages_routed_total", address=nowhere) == 0
        assert now.get("meshmq_router_messages_received_total") == 10
        assert now.get("meshmq_router_messages_redelivered_total") == 1
        # 10 first deliveries and the redelivery of the nacked one.
        assert now.get("meshmq_router_messages_delivered_total") == 11
        assert now.get("meshmq_queue_messages_delivered_total", queue=q) == 11
        assert now.get("meshmq_router_messages") == 0
        assert now.get("meshmq_router_scheduled_messages") == 0
        # The journal's files and the disk they are on, read by the disk scan.
        assert now.get("meshmq_journal_disk_bytes") > 0
        assert 0 < now.get("meshmq_router_disk_free_bytes") <= now.get("meshmq_router_disk_total_bytes")
        assert 0 < now.get("meshmq_router_disk_used_percent") < 100
        assert now.get("meshmq_router_disk_max_usage_percent") == 90
        assert now.get("meshmq_router_disk_scan_timestamp_seconds") > 1.7e9
        assert 1.7e9 < now.get("meshmq_router_start_timestamp_seconds") <= now.get(
            "meshmq_router_disk_scan_timestamp_seconds")
        assert "meshmq_journal_events_kept_from_timestamp_seconds" in now.families


@pytest.mark.integration
async def test_a_scheduled_message_is_counted_by_the_node(nodes) -> None:
    node = nodes.router("later", extra=METRICS)
    q = uniq("later")
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer(q)
        await p.send(b"soon", routing_type="anycast", delivery_delay=60_000)
    now = await scrape(node.info["metrics"])
    assert now.get("meshmq_router_scheduled_messages") == 1
    assert now.get("meshmq_router_messages") == 1


# --- the disk alarm -----------------------------------------------------------------


@pytest.mark.integration
async def test_a_disk_above_max_disk_usage_blocks_producers_until_the_limit_is_raised(nodes) -> None:
    # max-disk-usage 0: any used disk is above it, so the node starts in disk alarm.
    node = nodes.router("diskfull", extra=METRICS + "max-disk-usage: 0\ndisk-scan-period: 200\n")
    url = node.info["metrics"]
    q = uniq("blocked")

    async def alarmed():
        now = await scrape(url)
        return now if now.get("meshmq_router_disk_alarm") == 1 else None

    now = await eventually(alarmed, 10, "the disk alarm")
    assert now.get("meshmq_router_disk_max_usage_percent") == 0
    async with await connect(node.url) as conn:
        admin = conn.admin
        info = await admin.node_info()
        assert info.disk_alarm and info.max_disk_usage == 0 and "above max-disk-usage 0%" in info.disk_alarm_reason
        p = await (await conn.session()).create_producer(q)
        send = asyncio.ensure_future(p.send(b"held", routing_type="anycast"))
        # Blocked: no confirm for as long as the alarm lasts (a second is many disk scans).
        done, _ = await asyncio.wait({send}, timeout=1.0)
        assert not done, "a send was confirmed while the disk was in alarm"
        assert (await admin.queue(q)) is None or (await admin.queue(q)).message_count == 0
        cleared = await admin.set_max_disk_usage(99)
        assert not cleared.disk_alarm and cleared.max_disk_usage == 99
        await eventually(lambda: _done(send), 10, "the held send to be confirmed")
        send.result()
        assert (await admin.queue(q)).message_count == 1
        now = await scrape(url)
        assert now.get("meshmq_router_disk_alarm") == 0
        assert now.get("meshmq_router_disk_max_usage_percent") == 99
        # Bad input is refused with a reason.
        with pytest.raises(MeshMQError, match="max-disk-usage must be"):
            await admin.set_max_disk_usage(101)


async def _done(task: asyncio.Future) -> bool | None:
    return True if task.done() else None


@pytest.mark.integration
async def test_a_fail_address_refuses_sends_during_the_disk_alarm_naming_the_disk(nodes) -> None:
    extra = (METRICS + "max-disk-usage: 0\ndisk-scan-period: 200\n"
             "address-settings:\n  'failing.#': {address-full-policy: FAIL}\n")
    node = nodes.router("diskfail", extra=extra)
    q = uniq("failing")
    async with await connect(node.url) as conn:
        admin = conn.admin

        async def alarmed():
            return True if (await admin.node_info()).disk_alarm else None

        await eventually(alarmed, 10, "the disk alarm")
        p = await (await conn.session()).create_producer(q)
        with pytest.raises(MeshMQError) as refused:
            await p.send(b"refused", routing_type="anycast")
        assert "ADDRESS_FULL" in repr(refused.value) or "full" in str(refused.value)
        assert "max-disk-usage" in str(refused.value)
        await admin.set_max_disk_usage(-1)
        await p.send(b"taken", routing_type="anycast")
        assert (await admin.queue(q)).message_count == 1


@pytest.mark.integration
async def test_the_memory_alarm_is_raised_at_global_max_size_and_clears_as_the_queue_drains(nodes) -> None:
    node = nodes.router("memfull", extra=METRICS + "global-max-size: 20K\n")
    url = node.info["metrics"]
    q = uniq("deep")
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer(q)
        for i in range(50):
            await p.send_async(b"x" * 1024, routing_type="anycast")
        await p.flush()
        now = await scrape(url)
        assert now.get("meshmq_router_memory_alarm") == 1
        assert now.get("meshmq_router_memory_bytes") >= now.get("meshmq_router_memory_limit_bytes") == 20 * 1024
        info = await conn.admin.node_info()
        assert info.memory_alarm and not info.disk_alarm
        c = await s.create_consumer(q)
        got = 0
        while got < 50:
            batch = await c.receive_batch(50, timeout=10)
            assert batch, f"only {got} of 50 came back"
            for m in batch:
                m.ack()
            got += len(batch)

        async def cleared():
            now = await scrape(url)
            return now if now.get("meshmq_router_memory_alarm") == 0 else None

        await eventually(cleared, 30, "the memory alarm to clear")
        assert not (await conn.admin.node_info()).memory_alarm


@pytest.mark.integration
async def test_a_send_held_by_the_disk_alarm_goes_when_it_clears_even_with_memory_still_full(nodes) -> None:
    # A PAGE address with the node at global-max-size pages; the disk alarm blocks it; clearing
    # the alarm alone must let the held send go (paged), memory being still full.
    node = nodes.router("bothfull", extra=METRICS + "global-max-size: 20K\nmax-disk-usage: 99\n")
    q = uniq("paged")
    async with await connect(node.url) as conn:
        admin = conn.admin
        p = await (await conn.session()).create_producer(q)
        for i in range(50):
            await p.send_async(b"x" * 1024, routing_type="anycast")
        await p.flush()
        assert (await admin.node_info()).memory_alarm
        assert (await admin.set_max_disk_usage(0)).disk_alarm
        send = asyncio.ensure_future(p.send(b"held", routing_type="anycast"))
        done, _ = await asyncio.wait({send}, timeout=1.0)
        assert not done, "a send was confirmed while the disk was in alarm"
        info = await admin.set_max_disk_usage(99)
        assert not info.disk_alarm and info.memory_alarm
        await eventually(lambda: _done(send), 10, "the held send to be confirmed")
        send.result()
        assert (await admin.queue(q)).message_count == 51
