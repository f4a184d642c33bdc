"""Request-reply across a cluster connection (ON_DEMAND): the requester on A,
the responder on B. The request is forwarded to B's consumer; the reply, sent
on B to the reply address of A's temporary queue, comes back to A, because
A offers that queue (with its consumer) to B like any other."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect

from .cluster import cluster_state, start_cluster, wait_bindings

pytestmark = pytest.mark.integration

SERVICE = "rr.service"
SERVICE_QUEUE = f"addresses:\n  {SERVICE}: {{anycast: [{{name: {SERVICE}}}]}}\n"


async def test_a_reply_sent_on_b_reaches_the_requester_on_a(nodes):
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]}, options="message-load-balancing: ON_DEMAND",
                            extra=SERVICE_QUEUE)
    async with await connect(cluster["B"].url) as b_conn, await connect(cluster["A"].url) as a_conn:
        b = await b_conn.session()
        service = await b.create_consumer(SERVICE)
        await wait_bindings(cluster["A"], {("B", SERVICE, 1)})
        answered_on_b: list[str] = []

        async def respond():
            while (m := await service.receive(30)) is not None:
                answered_on_b.append(m.reply_to)
                await b.reply(m, b"re:" + m.body)
                m.ack()

        responder = asyncio.create_task(respond())
        try:
            a = await a_conn.session()
            for i in range(5):  # each over a new temporary queue, made just before its request
                reply = await a.request(SERVICE, f"q{i}".encode(), timeout=5)
                assert reply.body == f"re:q{i}".encode()
                assert reply.address == answered_on_b[-1]  # the reply address the request carried to B
            assert len(set(answered_on_b)) == 5
            # B stored nothing for the replies: each went straight on to A.
            assert [await b_conn.admin.list_queues(address=a) for a in answered_on_b] == [[]] * 5
        finally:
            responder.cancel()


async def test_a_cluster_at_rest_stops_offering_its_bindings(nodes):
    """The bindings version travels in every snapshot: raised by what other
    nodes offered too, each snapshot would be answered by a new one, and two
    nodes would re-offer to each other for ever (every 10 ms)."""
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]}, options="message-load-balancing: ON_DEMAND",
                            extra=SERVICE_QUEUE)
    async with await connect(cluster["B"].url) as b_conn:
        await (await b_conn.session()).create_consumer(SERVICE)
        await wait_bindings(cluster["A"], {("B", SERVICE, 1)})

        async def offers() -> list[int]:
            return [[b.demand_received for b in (await cluster_state(cluster[n])).bridges][0] for n in "AB"]
        before = await offers()
        await asyncio.sleep(1.0)  # a hundred offer periods: at rest, none may carry a snapshot
        assert await offers() == before, f"snapshots kept coming: {before} then {await offers()}"
