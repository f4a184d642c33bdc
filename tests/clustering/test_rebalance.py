"""rebalance-cluster-clients (ActiveMQ's rebalanceClusterClients): when a node
joins, connected clients spread their sessions over the cluster again, each
session at a quiet moment, with nothing lost, unblocked or redelivered.

Real routers announcing themselves in a real etcd; the client connects while
only A is up, then B joins."""

from __future__ import annotations

import asyncio
import contextlib

from meshmq.client import connect
from tests.fixtures.nodes import eventually

JOBS = "jobs"


def _group(etcd, cluster: str, rebalance: bool) -> str:
    return (f"rebalance-cluster-clients: {str(rebalance).lower()}\n"
            f"discovery-groups:\n  dg: {{etcd: {{endpoints: [\"{etcd.endpoint}\"]}}, "
            f"cluster-name: {cluster}, refresh-timeout: 4000}}\n"
            "broadcast-groups:\n  bg: {discovery-group-ref: dg, broadcast-period: 500}\n"
            f"addresses:\n  {JOBS}: {{anycast: [{{name: {JOBS}}}]}}\n")


@contextlib.asynccontextmanager
async def _client_on_a(nodes, etcd, name: str, *, rebalance: bool = True, extra: str = ""):
    """Node A alone in a fresh cluster and a client connected to it; (the nodes' YAML, A, the connection)."""
    group = _group(etcd, f"{name}-{id(nodes)}", rebalance)
    a = nodes.router("A", extra=group + extra)
    async with await connect(a.url) as conn:
        yield group, a, conn


async def _count(node, queue: str = JOBS) -> int:
    async with await connect(node.url) as conn:
        return (await conn.admin.queue(queue)).message_count


async def test_sessions_spread_over_a_joining_node_and_messages_handed_before_the_move_are_acked_where_they_came_from(
    nodes, etcd_session
):
    async with _client_on_a(nodes, etcd_session, "rb") as (group, a, conn):
        sessions = [await conn.session() for _ in range(4)]
        producers = [await s.create_producer(JOBS) for s in sessions]
        for i, p in enumerate(producers):
            for j in range(5):
                await p.send(b"", properties={"n": i * 100 + j})
        consumers = [await s.create_consumer(JOBS, window_size=0) for s in sessions]
        held = [await c.receive(timeout=5) for c in consumers]  # handed, not acknowledged yet
        assert all(m is not None and m.delivery_count == 1 for m in held)
        errors = []
        for s in sessions:
            s.exception_listener = errors.append

        b = nodes.router("B", extra=group)
        await eventually(lambda: conn.rebalances == 1, 20, "the client to follow A's rebalance request")
        on = lambda: sorted(s.server.target for s in sessions)  # noqa: E731
        await eventually(lambda: on() == sorted([a.endpoint, a.endpoint, b.endpoint, b.endpoint]), 20,
                         "two sessions to move to B")
        moved = [s for s in sessions if s.server.target == b.endpoint]
        assert all(s.moves == 1 and s.failovers == 0 for s in moved)

        # Acks of what was handed before the move go to A, where it came from: acked, not redelivered.
        for c, m in zip(consumers, held):
            c.ack(m)
        await eventually(lambda: all(s._old is None for s in sessions), 20, "the streams left on A to settle")
        assert await _count(a) == 16 and await _count(b) == 0

        # Each session goes on where it is now: two send to A, two to B.
        for i, p in enumerate(producers):
            for j in range(5, 10):
                await p.send(b"", properties={"n": i * 100 + j})
        assert await _count(a) == 26 and await _count(b) == 10

        got = [m.properties["n"] for m in held]
        counts = [m.delivery_count for m in held]
        for c in consumers:
            while (m := await c.receive(timeout=0.5)) is not None:
                got.append(m.properties["n"])
                counts.append(m.delivery_count)
                c.ack(m)
        assert sorted(got) == sorted(i * 100 + j for i in range(4) for j in range(10))  # each exactly once
        assert set(counts) == {1}  # nothing delivered twice
        assert errors == []
        assert await _count(a) == 0 and await _count(b) == 0


async def test_a_transacted_session_moves_only_between_transactions(nodes, etcd_session):
    async with _client_on_a(nodes, etcd_session, "rbtx") as (group, a, conn):
        plain = await conn.session()
        tx = await conn.session(transacted=True)
        producer = await tx.create_producer(JOBS)
        await producer.send(b"", properties={"n": 1})  # work in the open transaction

        b = nodes.router("B", extra=group)
        await eventually(lambda: conn.rebalances == 1, 20, "the client to follow A's rebalance request")
        # The plan keeps the first session on A and moves the second; the transaction holds it.
        assert plain.server.target == a.endpoint
        assert tx.server.target == a.endpoint and tx._move_target is not None

        await tx.commit()  # the transaction ends on A ...
        await eventually(lambda: tx.server.target == b.endpoint, 20, "the transacted session to move after commit")
        assert await _count(a) == 1
        await producer.send(b"", properties={"n": 2})  # ... and the next one runs on B
        await tx.commit()
        assert await _count(b) == 1 and await _count(a) == 1
        assert plain.server.target == a.endpoint and tx.failovers == 0


async def test_without_rebalance_cluster_clients_sessions_stay_where_they_are(nodes, etcd_session):
    async with _client_on_a(nodes, etcd_session, "rboff", rebalance=False) as (group, a, conn):
        sessions = [await conn.session() for _ in range(2)]
        b = nodes.router("B", extra=group)
        await conn.wait_for_topology(2, timeout=20)  # the same push would have asked for a rebalance
        assert conn.rebalances == 0
        assert [s.server.target for s in sessions] == [a.endpoint, a.endpoint]
        assert (await conn.session()).server.target in {a.endpoint, b.endpoint}  # new sessions balance as before


async def test_a_session_whose_queue_the_joining_node_lacks_stays(nodes, etcd_session):
    only_on_a = "  only-on-a: {anycast: [{name: only-on-a}]}\n"
    async with _client_on_a(nodes, etcd_session, "rbq", extra=only_on_a) as (group, a, conn):
        sessions = [await conn.session() for _ in range(2)]
        consumer = await sessions[1].create_consumer("only-on-a")
        nodes.router("B", extra=group)
        await eventually(lambda: conn.rebalances == 1, 20, "the client to follow A's rebalance request")
        await eventually(lambda: sessions[1]._move_target is None and sessions[1]._moving is None, 20,
                         "the move to be given up")
        assert [s.server.target for s in sessions] == [a.endpoint, a.endpoint]
        await (await sessions[0].create_producer("only-on-a")).send(b"still here")
        assert (await consumer.receive(timeout=5)).body == b"still here"



async def test_producers_sending_through_the_move_lose_nothing_and_see_no_error(nodes, etcd_session):
    """Sends in flight when a session moves are confirmed on the stream they left."""
    async with _client_on_a(nodes, etcd_session, "rbload") as (group, a, conn):
        sessions = [await conn.session() for _ in range(2)]
        producers = [await s.create_producer(JOBS) for s in sessions]
        sent = [0, 0]
        joined = asyncio.Event()

        async def keep_sending(i: int) -> None:
            # Until the move and 200 more after it, each confirmed (send_async futures gathered).
            after = None
            pending = []
            while after is None or sent[i] < after:
                pending.append(await producers[i].send_async(b"x" * 100))
                sent[i] += 1
                if after is None and sessions[1].moves:
                    after = sent[i] + 200
                if len(pending) >= 50:
                    await asyncio.gather(*pending)
                    pending = []
                if not joined.is_set() and sent[i] >= 300:
                    joined.set()
            await asyncio.gather(*pending)

        async def join():
            await joined.wait()
            return await asyncio.to_thread(nodes.router, "B", extra=group)

        *_, b = await asyncio.wait_for(asyncio.gather(keep_sending(0), keep_sending(1), join()), 60)
        assert [s.moves for s in sessions] == [0, 1] and [s.failovers for s in sessions] == [0, 0]
        a_count, b_count = await _count(a), await _count(b)
        assert b_count >= 200 and a_count + b_count == sum(sent)  # every confirmed message stored once
