"""Client failover without a backup (issue 13): a session reattaches to its own
node when that node comes back, a `failover:` URI moves it to another listed
node, and a new session never fails because one node of the topology is dead.
Real router processes on loopback."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import pytest

from meshmq.client import FailoverEventType, connect
from meshmq.errors import MeshMQError
from tests.fixtures.examples import load_example
from tests.fixtures.nodes import eventually, free_port
from tests.fixtures.tcp_proxy import TcpProxy

from .test_discovery_uris import announcing

pytestmark = pytest.mark.integration

QUEUE = "jobs"
DECLARE = f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"


def on_port(port: int) -> str:
    return f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}\n" + DECLARE


async def send(url: str, *bodies: str) -> None:
    async with await connect(url) as conn:
        producer = await (await conn.session()).create_producer(QUEUE)
        for body in bodies:
            await producer.send(body.encode())


async def no_session_left(url: str, after: str) -> None:
    """Wait (10 s) until the node at `url` holds no session — the watcher's own
    management calls open none — or fail saying how many it still holds."""
    async with await connect(url) as watcher:
        counts: list[int] = []

        async def none_left() -> bool:
            counts.append(sum(x.session_count for x in await watcher.admin.list_connections()))
            return counts[-1] == 0

        try:
            await eventually(none_left, 10, "the node to hold no session")
        except TimeoutError:
            raise AssertionError(f"{url} holds {counts[-1]} session(s) {after}") from None


@dataclass
class SlowLinkSetup:
    a: object
    b: object
    c: object
    link: TcpProxy
    conn: object
    session: object
    consumer: object
    producer: object
    events: list


@contextlib.asynccontextmanager
async def b_behind_a_slow_link(nodes, prefix: str, params: str = "", delay: float = 1.0):
    """Nodes a, b and c, and a connection listing them in that order with b reached
    through a link that delays everything `delay` seconds each way; its session on a,
    with a consumer and a producer of the queue, and the failover events it hears."""
    a, b, c = (nodes.router(f"{prefix}{n}", extra=on_port(free_port())) for n in "abc")
    link = TcpProxy(b.endpoint, delay=delay).start()
    url = (f"failover:(meshmq://{a.endpoint},meshmq://{link.endpoint},meshmq://{c.endpoint})?randomize=false"
           "&initialReconnectDelay=100&maxReconnectDelay=200" + params)
    conn = await connect(url)
    events: list = []
    conn.add_failover_listener(lambda event, err: events.append(event))
    try:
        session = await conn.session()
        assert session.node_id == a.info["node_id"]
        consumer = await session.create_consumer(QUEUE)
        producer = await session.create_producer(QUEUE)
        yield SlowLinkSetup(a, b, c, link, conn, session, consumer, producer, events)
    finally:
        await conn.close()
        link.close()


async def test_a_session_reattaches_to_its_node_when_it_comes_back_and_gets_its_unacked_messages_again(nodes):
    node = nodes.router("solo", extra=on_port(free_port()))
    await send(node.url, "a", "b")
    conn = await connect(f"{node.url}?reconnectAttempts=-1&retryInterval=100&maxRetryInterval=300")
    events = []
    conn.add_failover_listener(lambda event, err: events.append(event))
    try:
        session = await conn.session()
        consumer = await session.create_consumer(QUEUE)
        first = await consumer.receive(5)
        assert first.body == b"a"  # handed, never acknowledged
        await asyncio.to_thread(node.kill9)
        await eventually(lambda: events == [FailoverEventType.FAILURE_DETECTED], 10, "the failure to be seen")
        await asyncio.to_thread(node.start)  # the same store, the same port
        got = [await consumer.receive(15) for _ in range(2)]
        assert [m.body for m in got] == [b"a", b"b"]
        for m in got:
            m.ack()
        producer = await session.create_producer(QUEUE)  # the session is whole again
        await producer.send(b"c")
        assert (await consumer.receive(5)).body == b"c"
        # A non-durable queue the session created is created again, filter and all, by the next
        # failover (a queue the consumer alone would auto-create has no filter).
        await session.create_queue("scratch", filter="kind = 'keep'", durable=False)
        scratch = await session.create_consumer("scratch")
        await asyncio.to_thread(node.kill9)
        await eventually(lambda: len(events) == 3, 10, "the second failure to be seen")
        await asyncio.to_thread(node.start)  # without the queue: it was not durable
        await producer.send(b"dropped", address="scratch", properties={"kind": "drop"})  # waits out the failover
        await producer.send(b"kept", address="scratch", properties={"kind": "keep"})
        assert (await scratch.receive(5)).body == b"kept"
        assert events == [FailoverEventType.FAILURE_DETECTED, FailoverEventType.FAILOVER_COMPLETED] * 2
        assert session.failovers == 2
    finally:
        await conn.close()


async def test_acking_in_a_transaction_a_message_handed_before_a_failover_rolls_the_transaction_back(nodes):
    """Its delivery id was the old stream's: sent on the new one it named another message
    there (here b, which the application never acknowledged) and the commit took that one."""
    from meshmq.errors import TransactionRolledBackError

    node = nodes.router("txstale", extra=on_port(free_port()))
    await send(node.url, "a", "b")
    conn = await connect(f"{node.url}?reconnectAttempts=-1&retryInterval=100&maxRetryInterval=300")
    events = []
    conn.add_failover_listener(lambda event, err: events.append(event))
    try:
        session = await conn.session(transacted=True)
        consumer = await session.create_consumer(QUEUE, window_size=0)
        first = await consumer.receive(5)
        assert first.body == b"a"  # handed; the transaction has no work yet
        await asyncio.to_thread(node.kill9)
        await eventually(lambda: events == [FailoverEventType.FAILURE_DETECTED], 10, "the failure to be seen")
        await asyncio.to_thread(node.start)
        await eventually(lambda: len(events) == 2, 15, "the session to reattach")
        async with await connect(node.url) as other:  # someone else takes a meanwhile
            taker = await (await other.session()).create_consumer(QUEUE, window_size=0)
            a = await taker.receive(5)
            assert a.body == b"a"
            a.ack()
            await taker.close()
        second = await consumer.receive(15)
        assert second.body == b"b"  # the first delivery on the new stream
        first.ack()  # from before the failover
        with pytest.raises(TransactionRolledBackError):
            await session.commit()
        async with await connect(node.url) as check:
            assert (await check.admin.queue(QUEUE)).message_count == 1  # b was not taken with it
    finally:
        await conn.close()


async def test_a_failover_uri_moves_the_session_to_the_next_listed_node(nodes):
    a = nodes.router("fa", extra=on_port(free_port()))
    b = nodes.router("fb", extra=on_port(free_port()))
    url = f"failover:(meshmq://{a.endpoint},meshmq://{b.endpoint})?randomize=false&initialReconnectDelay=50"
    conn = await connect(url)
    events = []
    conn.add_failover_listener(lambda event, err: events.append(event))
    try:
        session = await conn.session()
        assert session.node_id == a.info["node_id"]  # randomize=false: the first listed
        consumer = await session.create_consumer(QUEUE)
        producer = await session.create_producer(QUEUE)
        await producer.send(b"on a")
        assert (await consumer.receive(5)).body == b"on a"
        await asyncio.to_thread(a.kill9)
        await eventually(lambda: events, 10, "the failure to be seen")  # (a send before it would be unblocked)
        await producer.send(b"on b")  # waits out the failover, then goes to b
        assert session.node_id == b.info["node_id"]
        assert (await consumer.receive(5)).body == b"on b"
    finally:
        await conn.close()


async def test_new_sessions_skip_a_dead_node_the_topology_still_lists(nodes, etcd):
    """After kill -9 of one of three nodes, and before discovery drops it
    (refresh-timeout), every new session opens on one of the two others."""
    announce = announcing(etcd, "skip").replace("refresh-timeout: 2000", "refresh-timeout: 30000")
    procs = [nodes.router(f"skip-{i}", extra=announce) for i in range(3)]
    conn = await connect(procs[0].url)
    try:
        await conn.wait_for_topology(3)
        victim = procs[1]
        await asyncio.to_thread(victim.kill9)
        assert len(conn.topology) == 3
        opened = []
        for _ in range(12):
            try:
                opened.append((await conn.session()).node_id)
            except MeshMQError as exc:  # a typed error at worst, never a raw gRPC one
                pytest.fail(f"a session failed to open: {exc!r}")
        assert victim.info["node_id"] not in opened
        assert set(opened) == {procs[0].info["node_id"], procs[2].info["node_id"]}
    finally:
        await conn.close()


async def test_the_application_level_failover_example_rebuilds_on_the_next_node(nodes):
    recipe = load_example("application_failover")
    a = nodes.router("app-a", extra=on_port(free_port()))
    b = nodes.router("app-b", extra=on_port(free_port()))
    await send(a.url, *(f"a{i}" for i in range(5)))
    await send(b.url, *(f"b{i}" for i in range(5)))
    run = asyncio.create_task(recipe.consume(QUEUE, [a.url, b.url], 10))
    async with await connect(a.url) as watcher:
        async def a_drained() -> bool:
            return (await watcher.admin.queue(QUEUE)).message_count == 0

        await eventually(a_drained, 15, "the example to take a's messages")
    await asyncio.to_thread(a.kill9)
    received = await asyncio.wait_for(run, 30)
    assert received == [f"a{i}".encode() for i in range(5)] + [f"b{i}".encode() for i in range(5)]


def test_the_blocking_api_fails_over_the_same_way(nodes):
    from meshmq.client import blocking
    from tests.fixtures.nodes import wait_for

    node = nodes.router("blocking", extra=on_port(free_port()))
    events = []
    with blocking.connect(f"{node.url}?reconnectAttempts=-1&retryInterval=100&maxRetryInterval=300") as conn:
        conn.add_failover_listener(lambda event, err: events.append(event))
        session = conn.session()
        producer = session.create_producer(QUEUE, idempotent=True)
        consumer = session.create_consumer(QUEUE)
        producer.send(b"before")
        assert consumer.receive(5).body == b"before"  # handed, not acknowledged
        node.kill9()
        wait_for(lambda: events == [FailoverEventType.FAILURE_DETECTED], 10, "the failure to be seen")
        node.start()
        producer.send(b"after")  # waits out the failover
        got = [consumer.receive(10).body for _ in range(2)]
        assert got == [b"before", b"after"]
        assert events == [FailoverEventType.FAILURE_DETECTED, FailoverEventType.FAILOVER_COMPLETED]


async def test_closing_a_session_while_it_fails_over_ends_its_unconfirmed_sends(nodes):
    """An idempotent producer keeps its unconfirmed sends for the next stream; if the
    session is closed before there is one, they raise instead of waiting for ever."""
    import os
    import signal

    node = nodes.router("gone", extra=on_port(free_port()))
    conn = await connect(f"{node.url}?reconnectAttempts=-1&retryInterval=100&maxRetryInterval=300")
    events = []
    conn.add_failover_listener(lambda event, err: events.append(event))
    try:
        session = await conn.session()
        producer = await session.create_producer(QUEUE, idempotent=True)
        os.kill(node.proc.pid, signal.SIGSTOP)
        pending = await producer.send_async(b"never confirmed")
        await asyncio.to_thread(node.kill9)
        await eventually(lambda: events == [FailoverEventType.FAILURE_DETECTED], 10, "the failure to be seen")
        assert producer.unconfirmed == 1  # kept to send again
        await asyncio.wait_for(session.close(), 10)
        with pytest.raises(MeshMQError):
            await asyncio.wait_for(pending, 5)
        assert events == [FailoverEventType.FAILURE_DETECTED, FailoverEventType.FAILOVER_FAILED]
    finally:
        await conn.close()



async def test_a_failover_attempt_that_times_out_leaves_no_session_on_the_slow_node(nodes, caplog):
    """A candidate that does not answer within the attempt's time (here callTimeout: a
    link with a second's delay each way) is given up for the next one, and its stream
    goes with it: the slow node, reading the open late, closes that session at once
    instead of keeping one nobody uses (whose consumers would hold messages nobody reads)."""
    import logging

    caplog.set_level(logging.INFO, logger="meshmq.client")
    # No keep-alive (clientFailureCheckPeriod=-1): the slow link stays up; an attempt waits callTimeout.
    async with b_behind_a_slow_link(nodes, "t", "&clientFailureCheckPeriod=-1&callTimeout=1000") as t:
        await asyncio.to_thread(t.a.kill9)
        await eventually(lambda: t.events, 10, "the failure to be seen")  # (a send before it would be unblocked)
        await t.producer.send(b"on c")  # waits out the failover: a is dead, b too slow, c answers
        assert t.session.node_id == t.c.info["node_id"]
        assert (await t.consumer.receive(5)).body == b"on c"
        timed_out = [r.getMessage() for r in caplog.records
                     if t.link.endpoint in r.getMessage() and "no answer from the router" in r.getMessage()]
        assert timed_out, "no attempt on b timed out"
        await no_session_left(t.b.url, f"after {len(timed_out)} attempt(s) there timed out")


async def test_a_non_durable_queue_the_new_node_refuses_fails_alone_and_the_session_goes_on(nodes, caplog):
    """b takes the session but refuses to make its non-durable queue again (b's
    security-settings deny create-non-durable-queue): the queue fails alone, as a
    producer or consumer whose create fails there does — the session serves on b,
    the refusal is logged with what was refused, and b holds this one session."""
    import logging

    from tests.integration.test_authorization import EVERYTHING

    def secured(port: int, denied: str = "") -> str:
        granted = ", ".join(f"{p}: [apps]" for p in EVERYTHING if p != denied)
        return (on_port(port) + "security-enabled: true\nusers: [{username: app, password: app-pw, roles: [apps]}]\n"
                f"security-settings:\n  '#': {{{granted}}}\n  activemq.management: {{manage: [apps]}}\n")

    caplog.set_level(logging.WARNING, logger="meshmq.client")
    a = nodes.router("ra", extra=secured(free_port()))
    b = nodes.router("rb", extra=secured(free_port(), denied="create-non-durable-queue"))
    url = (f"failover:(meshmq://{a.endpoint},meshmq://{b.endpoint})?randomize=false&username=app&password=app-pw"
           "&initialReconnectDelay=100&maxReconnectDelay=200")
    async with await connect(url) as conn:
        events = []
        conn.add_failover_listener(lambda event, err: events.append(event))
        session = await conn.session()
        assert session.node_id == a.info["node_id"]
        await session.create_queue("scratch", durable=False)
        consumer = await session.create_consumer(QUEUE)
        producer = await session.create_producer(QUEUE)
        await asyncio.to_thread(a.kill9)
        await eventually(lambda: FailoverEventType.FAILOVER_COMPLETED in events, 20, "the failover to complete")
        assert session.node_id == b.info["node_id"]
        await producer.send(b"on b")
        assert (await consumer.receive(5)).body == b"on b"
        [refused] = [r.getMessage() for r in caplog.records if "non-durable queue scratch not made again" in
                     r.getMessage()]
        assert b.endpoint in refused and "create-non-durable-queue" in refused, refused
        async with await connect(f"meshmq://app:app-pw@{b.endpoint}") as watcher:
            assert "scratch" not in {q.name for q in await watcher.admin.list_queues()}
            assert sum(x.session_count for x in await watcher.admin.list_connections()) == 1


async def test_an_attempt_that_loses_its_node_after_the_open_moves_on_to_the_next_one(nodes, caplog):
    """b answers the failover's open, then its link is cut while the session's
    producer and consumer are being made again there (b is reached through a link
    with 1.5 s of delay each way, so the cut falls between the open's answer and
    the creates' answers): that attempt fails like a lost node — its stream ended,
    b left with no session — and the session moves on to c and serves there."""
    import gc
    import logging
    import time

    caplog.set_level(logging.INFO, logger="meshmq.client")
    # 1.5 s each way: the cut below has 1.5 s on either side of it, for a loaded machine's
    # late timers and slow polls.
    async with b_behind_a_slow_link(nodes, "l", delay=1.5) as t, await connect(t.b.url) as watcher:  # b itself
        async def sessions_on_b() -> int:
            return sum(x.session_count for x in await watcher.admin.list_connections())

        session_on_a = t.session.session_id
        await asyncio.to_thread(t.a.kill9)
        await eventually(sessions_on_b, 30, "the failover's open to reach b", interval=0.02)
        opened_on_b = time.monotonic()
        # The open's answer reaches the client a delay after b took it; the creates it then
        # sends reach b another delay later, and their answers the client a third: cut
        # halfway through that window, when the attempt has its open and waits for the rest.
        await asyncio.sleep(max(0.0, opened_on_b + 2 * t.link.delay - time.monotonic()))
        t.link.cut()
        await eventually(lambda: FailoverEventType.FAILOVER_COMPLETED in t.events, 30, "the failover to complete")
        assert t.session.node_id == t.c.info["node_id"]
        lost_after_open = [r.getMessage() for r in caplog.records
                           if f"to {t.link.endpoint}:" in r.getMessage() and "outcome is unknown" in r.getMessage()]
        assert lost_after_open, [r.getMessage() for r in caplog.records if t.link.endpoint in r.getMessage()]
        # It names the session the application had (its id on a), not the one b's open gave it.
        assert all(m.startswith(f"failover of session {session_on_a} to ") for m in lost_after_open), lost_after_open
        await t.producer.send(b"on c")
        assert (await t.consumer.receive(5)).body == b"on c"
        await no_session_left(t.b.url, "after the attempt there lost its link")
        async with await connect(t.c.url) as on_c:
            assert sum(x.session_count for x in await on_c.admin.list_connections()) == 1
        # The creates that attempt left unanswered are nobody's: none is left failed and
        # unread, which asyncio would log as "exception never retrieved" into the
        # application's log once it is collected (whenever that is: the flag is read instead).
        unread = [f for f in gc.get_objects() if isinstance(f, asyncio.Future) and f.done()
                  and not f.cancelled() and f._log_traceback and t.link.endpoint in str(f._exception)]
        assert not unread, unread
