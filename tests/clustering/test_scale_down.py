"""Scale-down (issue 11, `ha-policy: live-only: scale-down`): a node stopped
gracefully sends all of its messages to another node, to the back of the
same queues, in order, with their duplicate ids and delivery counts."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect
from meshmq.errors import DuplicateIdError, ScaledDownError
from tests.fixtures.nodes import eventually, free_port

from .cluster import collect

pytestmark = pytest.mark.integration

JOBS = "jobs"


def node_yaml(port: int, connectors: dict[str, int], scale_down: str = "", group: str | None = None) -> str:
    conns = "\n".join(f"  {n}: 127.0.0.1:{p}" for n, p in connectors.items()) or "  {}"
    policy = ""
    if scale_down or group:
        items = [f"connectors: [{scale_down}]"] if scale_down else ["connectors: []"]
        if group:
            items.append(f"group-name: {group}")
        if not scale_down:
            items.append("enabled: false")
        policy = "ha-policy:\n  live-only:\n    scale-down: {" + ", ".join(items) + "}\n"
    return (f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}\nconnectors:\n{conns}\n{policy}"
            f"addresses:\n  {JOBS}: {{anycast: [{{name: {JOBS}}}]}}\n"
            "  events: {multicast: [{name: audit}]}\n")


async def send(node, address: str, numbers, **kw) -> None:
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer(address)
        await asyncio.gather(*[await p.send_async(b"x", properties={"n": n}, **kw(n) if callable(kw) else {})
                               for n in numbers])


async def test_scale_down_moves_everything_to_the_back_of_the_same_queues_in_order(nodes):
    pa, pb = free_port(), free_port()
    a = nodes.router("A", extra=node_yaml(pa, {"b": pb}))
    b = nodes.router("B", extra=node_yaml(pb, {"a": pa}, scale_down="a"))
    async with await connect(a.url) as conn:
        p = await (await conn.session()).create_producer(JOBS)
        for n in range(10):
            await p.send(b"a", properties={"n": n})
    async with await connect(b.url) as conn:
        s = await conn.session()
        p = await s.create_producer(JOBS)
        futures = [await p.send_async(b"b", properties={"n": 1000 + n}, durable=n % 2 == 0, duplicate_id=f"b-{n}")
                   for n in range(1000)]
        events = await s.create_producer("events")
        futures += [await events.send_async(b"e", properties={"n": n}, routing_type="multicast") for n in range(5)]
        await asyncio.gather(*futures)
        # Three messages handed to an application and given back: delivery count 1 each.
        c = await s.create_consumer(JOBS, window_size=0)
        for _ in range(3):
            assert (await c.receive(timeout=5)) is not None
        await c.close()
    assert b.stop() == 0
    assert "scaled down 1005 messages to A" in b.log_path.read_text()
    async with await connect(a.url) as conn:
        s = await conn.session()
        jobs = await s.create_consumer(JOBS)
        got = await collect({"jobs": jobs}, 1010)
        assert got["jobs"] == list(range(10)) + [1000 + n for n in range(1000)]
        audit = await s.create_consumer("audit")
        assert (await collect({"audit": audit}, 5))["audit"] == list(range(5))
        # Duplicate ids came along: a client resending to A after B went is caught.
        p = await s.create_producer(JOBS)
        with pytest.raises(DuplicateIdError):
            await p.send(b"again", duplicate_id="b-7")


async def test_connected_clients_are_told_where_to_reconnect(nodes):
    pa, pb = free_port(), free_port()
    a = nodes.router("A", extra=node_yaml(pa, {"b": pb}))
    b = nodes.router("B", extra=node_yaml(pb, {"a": pa}, scale_down="a"))
    await send(b, JOBS, range(5))
    async with await connect(b.url) as conn:
        consumer = await (await conn.session()).create_consumer(JOBS, window_size=0)
        stopping = asyncio.get_running_loop().run_in_executor(None, b.stop)
        with pytest.raises(ScaledDownError) as err:
            while True:  # takes what comes (unacknowledged, so it moves too) until the redirect
                await consumer.receive(timeout=30)
        assert err.value.target == a.endpoint and err.value.target_node_id == a.info["node_id"]
        assert await stopping == 0
    # Following the redirect finds the messages there.
    async with await connect(f"meshmq://{err.value.target}") as conn:
        assert (await conn.admin.queue(JOBS)).message_count == 5


async def test_delivery_counts_come_along(nodes):
    pa, pb = free_port(), free_port()
    a = nodes.router("A", extra=node_yaml(pa, {"b": pb}))
    b = nodes.router("B", extra=node_yaml(pb, {"a": pa}, scale_down="a"))
    await send(b, JOBS, range(3))
    async with await connect(b.url) as conn:
        s = await conn.session()
        c = await s.create_consumer(JOBS, window_size=0)
        first = await c.receive(timeout=5)
        assert first.delivery_count == 1
        await c.close()
    assert b.stop() == 0
    async with await connect(a.url) as conn:
        c = await (await conn.session()).create_consumer(JOBS)
        counts = [(int(m.properties["n"]), m.delivery_count) for m in [await c.receive(timeout=5) for _ in range(3)]]
        assert counts == [(0, 2), (1, 1), (2, 1)]


async def test_only_a_node_of_the_same_group_is_chosen(nodes):
    pa, pb, pc = free_port(), free_port(), free_port()
    a = nodes.router("A", extra=node_yaml(pa, {}, group="other"))
    c = nodes.router("C", extra=node_yaml(pc, {}, group="g1"))
    b = nodes.router("B", extra=node_yaml(pb, {"a": pa, "c": pc}, scale_down="a, c", group="g1"))
    await send(b, JOBS, range(20))
    assert b.stop() == 0
    log = b.log_path.read_text()
    assert "scaled down 20 messages to C" in log
    for node, count in ((a, 0), (c, 20)):
        async with await connect(node.url) as conn:
            assert (await conn.admin.queue(JOBS)).message_count == count


async def test_with_no_node_to_take_them_the_node_says_why_and_keeps_them(nodes):
    pa, pb = free_port(), free_port()  # nothing listens on pa
    b = nodes.router("B", extra=node_yaml(pb, {"a": pa}, scale_down="a"))
    await send(b, JOBS, range(10))
    assert b.stop() == 4
    log = b.log_path.read_text()
    assert "scale-down failed: no node to scale down to: 127.0.0.1:%d (UNAVAILABLE" % pa in log
    assert "10 messages stay in this node's store" in log
    # Not lost: they are there after a restart.
    b.start()
    async with await connect(b.url) as conn:
        assert (await conn.admin.queue(JOBS)).message_count == 10


async def test_scale_down_finds_its_target_through_the_discovery_group(nodes, etcd_session):
    group = (f"discovery-groups:\n  dg: {{etcd: {{endpoints: [\"{etcd_session.endpoint}\"]}}, "
             f"cluster-name: sd-{id(nodes)}, refresh-timeout: 4000}}\n"
             "broadcast-groups:\n  bg: {discovery-group-ref: dg, broadcast-period: 500}\n"
             f"addresses:\n  {JOBS}: {{anycast: [{{name: {JOBS}}}]}}\n")
    a = nodes.router("A", extra=group)
    b = nodes.router("B", extra=group + "ha-policy:\n  live-only:\n    scale-down: {discovery-group-ref: dg}\n")
    await send(b, JOBS, range(7))
    assert b.stop() == 0
    assert "scaled down 7 messages to A" in b.log_path.read_text()
    async with await connect(a.url) as conn:
        assert (await conn.admin.queue(JOBS)).message_count == 7


async def test_with_reconnect_attempts_a_session_follows_the_redirect_to_where_its_messages_went(nodes):
    """Artemis's "Scale Down and Clients": the client reconnects to the node the messages
    moved to, and the same consumer goes on with them there."""
    from meshmq.client import FailoverEventType

    pa, pb = free_port(), free_port()
    a = nodes.router("A", extra=node_yaml(pa, {"b": pb}))
    b = nodes.router("B", extra=node_yaml(pb, {"a": pa}, scale_down="a"))
    await send(b, JOBS, range(5))
    conn = await connect(f"{b.url}?reconnectAttempts=20&retryInterval=200")
    events = []
    conn.add_failover_listener(lambda event, err: events.append(event))
    try:
        session = await conn.session()
        consumer = await session.create_consumer(JOBS, window_size=0)
        first = await consumer.receive(timeout=5)  # handed, not acknowledged: it moves too
        assert first.properties["n"] == 0
        stopping = asyncio.get_running_loop().run_in_executor(None, b.stop)
        # Receive only once the session has followed the redirect: a receive before
        # B handles its stop may be answered by B (message 1, handed before the stop,
        # then moved with the rest and handed again by A: at-least-once, as Artemis).
        await eventually(lambda: FailoverEventType.FAILOVER_COMPLETED in events, 30, "the session to follow B's redirect")
        got = [(await consumer.receive(timeout=30)).properties["n"] for _ in range(5)]
        assert sorted(got) == [0, 1, 2, 3, 4]
        assert await stopping == 0
        assert session.node_id == a.info["node_id"]
        assert events == [FailoverEventType.FAILURE_DETECTED, FailoverEventType.FAILOVER_COMPLETED]
    finally:
        await conn.close()
