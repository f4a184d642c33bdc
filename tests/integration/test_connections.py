"""Client connections through management (services/router/connections.py) on a
real router: ListConnections shows a client's connection with its sessions,
producers, consumers, credit and messages in flight; CloseConnection ends its
sessions with CONNECTION_FAILED, the deliveries go back to the queue, and a
client with failover reconnects."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect
from meshmq.errors import ConnectionFailedError, MeshMQError
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration


async def _theirs(admin, sessions: int):
    """The one connection with `sessions` sessions (management calls open none)."""
    found = [c for c in await admin.list_connections() if c.session_count == sessions]
    return found[0] if len(found) == 1 else None


async def test_listing_counts_a_clients_sessions_producers_consumers_and_in_flight(nodes):
    node = nodes.router("conn-list")
    async with await connect(node.url) as admin, await connect(node.url) as client:
        await admin.admin.create_queue("conn.q", routing_type="anycast")
        s1 = await client.session()
        s2 = await client.session()
        p = await s1.create_producer("conn.q")
        await asyncio.gather(*[await p.send_async(b"m%d" % i) for i in range(5)])
        await s2.create_producer("conn.q")
        c = await s2.create_consumer("conn.q")
        got = [await c.receive(5) for _ in range(2)]  # delivered, not acknowledged
        assert all(m is not None for m in got)
        info = await eventually(lambda: _theirs(admin.admin, 2), 10, "the client's connection listed")
        assert info.producers == 2 and info.consumers == 1
        assert info.in_flight >= 2  # the consumer's window may hold the other three too
        queue = await admin.admin.queue("conn.q")
        assert info.in_flight == queue.delivering_count
        assert info.credits >= 0 and info.since > 0 and info.client_address
        assert info.node_name == "conn-list"
        assert sorted((x.producers, x.consumers) for x in info.sessions) == [(1, 0), (1, 1)]
        assert sum(x.in_flight for x in info.sessions) == info.in_flight


async def test_close_fails_the_clients_sessions_and_returns_their_deliveries(nodes):
    node = nodes.router("conn-close")
    async with await connect(node.url) as admin, await connect(f"{node.url}?reconnectAttempts=0") as client:
        await admin.admin.create_queue("conn.c", routing_type="anycast")
        s = await client.session()
        p = await s.create_producer("conn.c")
        await asyncio.gather(*[await p.send_async(b"m%d" % i) for i in range(3)])
        c = await s.create_consumer("conn.c")
        assert await c.receive(5) is not None
        # The admin's management calls open no session: the client's is the one with the consumer.
        conns = [x for x in await admin.admin.list_connections() if x.consumers == 1]
        assert len(conns) == 1, conns
        info = conns[0]
        assert await admin.admin.close_connection(info.connection_id) == 1

        async def failed():
            try:
                await c.receive(0.2)
            except MeshMQError as exc:
                return exc
            return None

        exc = await eventually(failed, 10, "the client's session failed")
        assert isinstance(exc, ConnectionFailedError), exc
        assert "closed by an administrator" in str(exc)
        q = await eventually(lambda: _back(admin.admin), 10, "the delivery back in the queue")
        assert q.message_count == 3 and q.consumer_count == 0
        assert all(x.connection_id != info.connection_id for x in await admin.admin.list_connections())
        with pytest.raises(MeshMQError, match="no connection"):
            await admin.admin.close_connection(info.connection_id)


async def _back(admin):
    q = await admin.queue("conn.c")
    return q if q.delivering_count == 0 and q.consumer_count == 0 else None


async def test_a_client_with_failover_reconnects_after_close(nodes):
    node = nodes.router("conn-failover")
    async with await connect(node.url) as admin, \
            await connect(f"{node.url}?reconnectAttempts=5&retryInterval=100") as client:
        await admin.admin.create_queue("conn.f", routing_type="anycast")
        s = await client.session()
        p = await s.create_producer("conn.f")
        await (await p.send_async(b"before"))
        conns = [x for x in await admin.admin.list_connections() if x.producers == 1]
        assert len(conns) == 1, conns
        assert await admin.admin.close_connection(conns[0].connection_id) == 1

        async def sent_again():
            try:
                await (await p.send_async(b"after"))
                return True
            except MeshMQError:
                return None

        assert await eventually(sent_again, 15, "a send after the reconnect")
        q = await admin.admin.queue("conn.f")
        assert q.message_count >= 2
        after = [x for x in await admin.admin.list_connections() if x.producers == 1]
        assert len(after) == 1 and after[0].since >= conns[0].since
