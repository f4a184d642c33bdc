"""Bridges under failure (issue 11): kill -9 of a target while messages are in
flight, kill -9 of the forwarding node, a node considered down after its
reconnect attempts, and a link with the wrong cluster password. Every
confirmed message is consumed exactly once, on some node."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually

from .cluster import cluster_state, collect, start_cluster, wait_bindings

pytestmark = pytest.mark.integration

QUEUE = "OrderQueue"
ORDERS = f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"
PAIR = {"A": ["B"], "B": ["A"]}


async def bridge(node):
    state = await cluster_state(node)
    return state.bridges[0] if state.bridges else None


async def send(node, count: int, start: int = 0) -> None:
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer(QUEUE)
        await asyncio.gather(*[await p.send_async(b"o" * 100, properties={"n": i}) for i in range(start, start + count)])


async def drain_all(cluster, total: int) -> dict[str, list[int]]:
    conns, consumers = [], {}
    try:
        for name, node in cluster.items():
            conn = await connect(node.url)
            conns.append(conn)
            consumers[name] = await (await conn.session()).create_consumer(QUEUE)
        return await collect(consumers, total, deadline=60)
    finally:
        for conn in conns:
            await conn.close()


def exactly_once(got: dict[str, list[int]], total: int) -> None:
    every = sorted(n for ns in got.values() for n in ns)
    assert every == list(range(total)), f"{len(every)} received, {len(set(every))} distinct, {total} sent"


async def test_kill_9_of_a_target_while_messages_are_in_flight_loses_and_doubles_nothing(nodes):
    cluster = start_cluster(nodes, PAIR, options="message-load-balancing: STRICT, retry-interval: 100", extra=ORDERS)
    await wait_bindings(cluster["A"], {("B", QUEUE, 0)})
    total = 4000
    sending = asyncio.create_task(send(cluster["A"], total))
    await eventually(lambda: _forwarded_at_least(cluster["A"], 300), 30, "A to forward 300 messages to B")
    await asyncio.to_thread(cluster["B"].kill9)
    await sending  # every message is confirmed to the producer: stored on A (its own or B's share)
    await asyncio.to_thread(cluster["B"].start)
    await eventually(lambda: _bridge_idle(cluster["A"]), 60, "A's bridge to forward everything to B again")
    got = await drain_all(cluster, total)
    exactly_once(got, total)
    assert len(got["A"]) == len(got["B"]) == total // 2  # STRICT: every other message


async def test_kill_9_of_the_forwarding_node_resumes_its_store_and_forward_queue(nodes):
    cluster = start_cluster(nodes, PAIR, options="message-load-balancing: STRICT, retry-interval: 100", extra=ORDERS)
    await wait_bindings(cluster["A"], {("B", QUEUE, 0)})
    await asyncio.to_thread(cluster["B"].kill9)
    await send(cluster["A"], 1000)  # B's half waits in A's store-and-forward queue
    b = await bridge(cluster["A"])
    assert b.state in ("retrying", "connecting") and b.pending == 500 and b.confirmed == 0
    await asyncio.to_thread(cluster["A"].kill9)
    await asyncio.to_thread(cluster["A"].start)
    async with await connect(cluster["A"].url) as conn:  # recovered from A's journal
        sf = await conn.admin.queue(f"$.meshmq.sf.cc.{cluster['B'].info['node_id']}")
        assert sf.message_count == 500
    await asyncio.to_thread(cluster["B"].start)
    await eventually(lambda: _bridge_idle(cluster["A"]), 60, "A's recovered queue to reach B")
    got = await drain_all(cluster, 1000)
    exactly_once(got, 1000)
    assert got["B"] == list(range(1, 1000, 2))  # in order


async def test_a_node_is_considered_down_after_its_reconnect_attempts(nodes):
    cluster = start_cluster(
        nodes, PAIR, extra=ORDERS,
        options="message-load-balancing: STRICT, retry-interval: 100, max-retry-interval: 200, reconnect-attempts: 2")
    await wait_bindings(cluster["A"], {("B", QUEUE, 0)})
    await asyncio.to_thread(cluster["B"].kill9)

    async def down():
        b = await bridge(cluster["A"])
        return b.state == "down"
    await eventually(down, 20, "A to consider B down")
    assert "considered down after 2 failed attempts" in cluster["A"].log_path.read_text()
    assert (await cluster_state(cluster["A"])).remote_bindings == []
    await send(cluster["A"], 20)  # nothing more is routed to B
    async with await connect(cluster["A"].url) as conn:
        assert (await conn.admin.queue(QUEUE)).message_count == 20
    assert (await bridge(cluster["A"])).routed == 0
    # B comes back: the bridge, still probing every max-retry-interval, links again.
    await asyncio.to_thread(cluster["B"].start)
    await wait_bindings(cluster["A"], {("B", QUEUE, 0)})
    assert (await bridge(cluster["A"])).state == "connected"


async def test_a_node_never_reached_is_down_after_its_initial_connect_attempts(nodes):
    # max-retry-interval 30 s: once down, the next probe is far off, so the count stays put
    cluster = start_cluster(nodes, {"A": ["B"], "B": []}, start=False,
                            options="retry-interval: 100, max-retry-interval: 30000, initial-connect-attempts: 3")
    await asyncio.to_thread(cluster["A"].start)

    async def down():
        b = await bridge(cluster["A"])
        return b.state == "down"
    await eventually(down, 20, "A to give up on B")
    assert (await bridge(cluster["A"])).retries == 3  # three attempts in all, not four
    assert "considered down after 3 failed attempts" in cluster["A"].log_path.read_text()


async def test_a_wrong_cluster_password_refuses_the_link_with_a_clear_log_line_on_both_sides(nodes):
    """Each side finds that the other cannot prove membership, sends it
    nothing (no Link call reaches either), and says so once, not at every retry."""
    cluster = start_cluster(nodes, PAIR, options="retry-interval: 100", extra=ORDERS, per_node={
        "A": "cluster-password: right-secret-for-this-test\n", "B": "cluster-password: another-secret-entirely\n"})

    for name in ("A", "B"):
        async def refused(node=cluster[name]):
            b = await bridge(node)
            return "cluster-user / cluster-password differ" in b.problem and "did not prove" in b.problem
        await eventually(refused, 20, f"{name}'s link to be refused")
        assert (await cluster_state(cluster[name])).remote_bindings == []
    await asyncio.sleep(1)  # ten more retry-intervals: still one line each
    for name in ("A", "B"):
        text = cluster[name].log_path.read_text()
        assert text.count("did not prove it belongs to this cluster") == 1, text
        assert "refused /meshmq.v1.Cluster/Link from" not in text  # no Link call, with or without a credential, arrived


async def _forwarded_at_least(node, n: int) -> bool:
    b = await bridge(node)
    return b is not None and b.confirmed >= n


async def _bridge_idle(node) -> bool:
    b = await bridge(node)
    return b is not None and b.state == "connected" and b.pending == 0


async def test_a_quiet_link_lives_on_pings_and_a_frozen_node_is_dropped_after_connection_ttl(nodes):
    import os
    import signal

    cluster = start_cluster(nodes, PAIR, extra=ORDERS,
                            options="check-period: 200, connection-ttl: 1000, retry-interval: 100")
    await wait_bindings(cluster["A"], {("B", QUEUE, 0)})
    await asyncio.sleep(2.5)  # idle for 2.5 connection-ttls: pings every check-period keep it up
    assert (await bridge(cluster["A"])).state == "connected"
    assert "broke" not in cluster["A"].log_path.read_text()
    os.kill(cluster["B"].proc.pid, signal.SIGSTOP)  # B stops answering, its socket stays open
    try:
        async def broke():
            return "broke: no answer within call-timeout / connection-ttl" in cluster["A"].log_path.read_text()
        await eventually(broke, 10, "A to give up on the frozen link after connection-ttl")
    finally:
        os.kill(cluster["B"].proc.pid, signal.SIGCONT)

    async def back():
        return (await bridge(cluster["A"])).state == "connected"
    await eventually(back, 20, "A to link to B again once it answers")


async def test_a_node_that_does_not_answer_the_hello_fails_the_attempt_after_call_timeout(nodes):
    import os
    import signal

    cluster = start_cluster(nodes, {"A": ["B"], "B": []}, start=False,
                            options="call-timeout: 500, retry-interval: 100")
    await asyncio.to_thread(cluster["B"].start)
    os.kill(cluster["B"].proc.pid, signal.SIGSTOP)  # the kernel still accepts the connection; nobody answers
    try:
        await asyncio.to_thread(cluster["A"].start)

        async def timed_out():
            b = await bridge(cluster["A"])
            return b is not None and b.retries >= 2 and "call-timeout" in b.problem
        await eventually(timed_out, 10, "A's attempts to time out after call-timeout")
    finally:
        os.kill(cluster["B"].proc.pid, signal.SIGCONT)

    async def linked():
        return (await bridge(cluster["A"])).state == "connected"
    await eventually(linked, 20, "A to link once B answers")


async def test_a_batch_not_confirmed_within_call_timeout_breaks_the_link_and_is_sent_again_once(nodes):
    """B keeps its link alive (pings) but cannot commit: its journal writer is
    stopped. A's batch is not confirmed within call-timeout, so A breaks the
    link and sends it again once B answers; B's bridge duplicate ids keep the
    copy it stored meanwhile from counting twice."""
    import os
    import signal

    import psutil

    cluster = start_cluster(nodes, {"A": ["B"], "B": []}, extra=ORDERS,
                            options="call-timeout: 1000, retry-interval: 200, message-load-balancing: STRICT")
    await wait_bindings(cluster["A"], {("B", QUEUE, 0)})
    writers = [p.pid for p in psutil.Process(cluster["B"].proc.pid).children(recursive=True)]
    assert writers, "B's journal writer process"
    for pid in writers:
        os.kill(pid, signal.SIGSTOP)
    try:
        await send(cluster["A"], 10)  # STRICT: 5 for A's queue, 5 forwarded to B

        async def broke():
            return "not confirmed within call-timeout (1000 ms)" in cluster["A"].log_path.read_text()
        await eventually(broke, 15, "A to break the link over the missing confirm")
    finally:
        for pid in writers:
            os.kill(pid, signal.SIGCONT)
    await eventually(lambda: _bridge_idle(cluster["A"]), 20, "A's forwards to be confirmed")
    exactly_once(await drain_all(cluster, 10), 10)
