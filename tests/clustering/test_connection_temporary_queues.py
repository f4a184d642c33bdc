"""A connection's temporary queue across a cluster connection (ON_DEMAND), on
real routers. The connection's sessions are spread over A and B by its
load-balancing policy; the queue is made on one node (the connection's
anchor session's) and consumed by a session on the other. What waited in it
before that consumer came, and what is sent to it on either node after,
reaches that consumer; nothing stays behind on the node it was made on;
when the connection's session on the other node ends, what waited in its
copy there goes back to the first node; and when the connection closes the
queue goes on both nodes."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually

from .cluster import start_cluster, wait_bindings

pytestmark = pytest.mark.integration


async def send(node, address: str, bodies: list[str]) -> None:
    async with await connect(node.url) as conn:
        producer = await (await conn.session()).create_producer(address)
        for body in bodies:
            await producer.send(body.encode(), durable=False)


async def queue_info(node, name: str):
    async with await connect(node.url) as conn:
        return await conn.admin.queue(name)


async def test_a_session_on_another_node_gets_what_was_sent_to_it_on_either_node(nodes):
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]}, options="message-load-balancing: ON_DEMAND")
    by_endpoint = {node.endpoint: node for node in cluster.values()}
    requester = await connect(f"({cluster['A'].url},{cluster['B'].url})?useTopologyForLoadBalancing=false"
                              "&connectionLoadBalancingPolicyClassName=RoundRobin")
    try:
        tq = await requester.create_temporary_queue()
        home = by_endpoint[requester._anchor.server.target]
        away = next(node for node in cluster.values() if node is not home)
        session = await requester.session()
        while by_endpoint[session.server.target] is not away:  # round robin: the next one is on the other node
            session = await requester.session()
        await wait_bindings(away, {(home.name, tq.name, 0)})
        await send(away, tq.name, ["w1", "w2", "w3"])  # sent on the other node before any consumer: waits on home
        async def waiting_on_home() -> bool:
            return (await queue_info(home, tq.name)).message_count == 3
        await eventually(waiting_on_home, 10, f"3 messages waiting in {tq.name} on {home.name}")

        consumer = await session.create_consumer(tq)
        await send(home, tq.name, ["h1", "h2"])
        await send(away, tq.name, ["a1", "a2"])
        got = []
        while len(got) < 7 and (m := await consumer.receive(10)) is not None:
            got.append(m.body.decode())
            m.ack()
        assert sorted(got) == ["a1", "a2", "h1", "h2", "w1", "w2", "w3"]
        for origin in "wha":  # each node's messages in their order (between nodes there is none)
            assert [b for b in got if b[0] == origin] == sorted(b for b in got if b[0] == origin)
        assert await consumer.receive(0.3) is None
        assert (await queue_info(home, tq.name)).message_count == 0
        assert (await queue_info(away, tq.name)).temporary

        # The connection's only session on the other node ends with messages in its copy (in the
        # consumer's buffer, then given back): they go to the copy on the queue's first node, not away.
        await send(away, tq.name, ["r1", "r2", "r3"])
        async def buffered() -> bool:
            return (await queue_info(away, tq.name)).delivering_count == 3
        await eventually(buffered, 10, "3 messages delivered to the consumer's buffer on the other node")
        await session.close()
        async def handed_over() -> bool:
            return await queue_info(away, tq.name) is None and (await queue_info(home, tq.name)).message_count == 3
        await eventually(handed_over, 10, f"{tq.name} gone on {away.name} and its 3 messages on {home.name}")
        on_home = await requester.session()
        while by_endpoint[on_home.server.target] is not home:
            on_home = await requester.session()
        again = await on_home.create_consumer(tq)
        rest = []
        while len(rest) < 3 and (m := await again.receive(10)) is not None:
            rest.append(m.body.decode())
            m.ack()
        assert rest == ["r1", "r2", "r3"]
    finally:
        await requester.close()
    for node in cluster.values():
        async def gone(node=node) -> bool:
            return await queue_info(node, tq.name) is None
        await eventually(gone, 10, f"{tq.name} deleted on {node.name}")
