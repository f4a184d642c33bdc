"""Request-reply over network connectors alone, on real router processes:
the requester on A, the responder on another broker. The requester's reply
destination is made just before its request — a temporary queue (JMS
createTemporaryQueue: `create_consumer(name, temporary=True)`), or the
temporary subscription `session.request()` waits on — and its consumer
becomes demand on the responder's broker (a temporary queue's only with
bridgeTempDestinations, on by default), which is what brings the reply back.
That demand must be there before the request is, or the responder's reply
finds nothing on its broker and is dropped. Demand ordering
(services/router/network/demand_order.py) makes it so: 200 requests in a
tight loop, each gets its reply."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager

import pytest

from meshmq.client import connect

from .network import pinned, start_network, wait_linked, wait_network_consumers

pytestmark = pytest.mark.integration

SERVICE = "rr.service"
REQUESTS = 200

DUPLEX = {"A": {"to-b": ("B", {"duplex": True})}, "B": {}}
# The seed's "two way connector": one connector on each broker, each one-way,
# so the demand for A's reply queue (on B's link) and A's request (on A's)
# travel on two streams with no order between them.
TWO_WAY = {"A": {"to-b": "B"}, "B": {"to-a": "A"}}


@asynccontextmanager
async def responder(url: str):
    """A consumer of SERVICE on the node at `url` that answers every request
    with "re:" and its body; yields the reply addresses it answered."""
    answered: list[str] = []
    async with await connect(pinned(url)) as conn:
        session = await conn.session()
        service = await session.create_consumer(SERVICE)

        async def respond():
            while (m := await service.receive(60)) is not None:
                answered.append(m.reply_to)
                await session.reply(m, b"re:" + m.body)
                m.ack()

        task = asyncio.create_task(respond())
        try:
            yield answered
        finally:
            task.cancel()


async def temporary_queue_request(session, producer, body: bytes, timeout: float) -> bytes:
    """A request as JMS's QueueRequestor makes it: a new temporary queue as
    JMSReplyTo, the reply taken from it (TimeoutError: none came)."""
    reply_to = str(uuid.uuid4())
    replies = await session.create_consumer(reply_to, temporary=True)
    try:
        await producer.send(body, address=SERVICE, reply_to=reply_to, correlation_id=reply_to)
        reply = await replies.receive(timeout)
        if reply is None:
            raise TimeoutError(f"no reply to the request sent to {SERVICE!r} came within {timeout} s")
        replies.ack(reply)
        assert reply.correlation_id == reply_to
        return reply.body
    finally:
        await replies.close()


async def requests_in_a_loop(url: str, count: int, requester: str) -> None:
    """`count` requests one after the other from the node at `url`, each waiting
    at most 5 s for its reply (TimeoutError: a reply was lost)."""
    async with await connect(pinned(url)) as conn:
        session = await conn.session()
        producer = await session.create_producer()
        for i in range(count):
            body = f"q{i}".encode()
            if requester == "request()":
                got = (await session.request(SERVICE, body, timeout=5)).body
            else:
                got = await temporary_queue_request(session, producer, body, 5)
            assert got == b"re:" + body


REQUESTERS = pytest.mark.parametrize("requester", ["temporary queue", "request()"])


@REQUESTERS
@pytest.mark.parametrize("links", [DUPLEX, TWO_WAY], ids=["duplex", "two-way"])
async def test_every_request_gets_its_reply_across_a_network_connector(nodes, links, requester):
    net = start_network(nodes, links)
    await wait_linked(net["A"], len(links["A"]) + len(links["B"]))
    async with responder(net["B"].url) as answered:
        await wait_network_consumers(net["A"], SERVICE, 1)
        await requests_in_a_loop(net["A"].url, REQUESTS, requester)
    # Each over a temporary queue of its own, answered on B.
    assert len(set(answered)) == REQUESTS


async def test_without_bridge_temp_destinations_the_reply_does_not_cross(nodes):
    """bridgeTempDestinations: false, as ActiveMQ does it: a temporary queue
    is never demand over the link, so the request reaches the responder and
    is answered, but the reply finds no queue on the responder's broker: the
    requester times out."""
    net = start_network(nodes, DUPLEX, {"bridgeTempDestinations": False})
    await wait_linked(net["A"], 1)
    async with responder(net["B"].url) as answered, await connect(pinned(net["A"].url)) as a:
        await wait_network_consumers(net["A"], SERVICE, 1)
        session = await a.session()
        with pytest.raises(TimeoutError, match=SERVICE):
            await temporary_queue_request(session, await session.create_producer(), b"q", 2)
        assert len(answered) == 1  # it was answered: the reply is what did not come back
    async with await connect(pinned(net["B"].url)) as b:
        assert await b.admin.list_consumers(answered[0]) == []  # no network subscription for it on B


async def test_request_replies_cross_without_bridge_temp_destinations(nodes):
    """`session.request()` waits on a temporary *subscription* of its own
    reply address: topic demand, not a temporary destination, so it crosses
    whatever bridgeTempDestinations says (as a non-durable topic subscriber
    does in ActiveMQ)."""
    net = start_network(nodes, DUPLEX, {"bridgeTempDestinations": False})
    await wait_linked(net["A"], 1)
    async with responder(net["B"].url):
        await wait_network_consumers(net["A"], SERVICE, 1)
        await requests_in_a_loop(net["A"].url, 5, "request()")


@REQUESTERS
async def test_a_reply_crosses_two_brokers_back_in_a_chain(nodes, requester):
    """A-B-C with networkTTL 2: the responder on C, two links away. B passes
    the reply queue's demand on to C before it takes the request, and the
    request on to C after it (ordered again on that link)."""
    net = start_network(nodes, {"A": {"to-b": ("B", {"duplex": True})}, "B": {"to-c": ("C", {"duplex": True})},
                                "C": {}}, {"networkTTL": 2})
    await wait_linked(net["B"], 2)
    async with responder(net["C"].url) as answered:
        await wait_network_consumers(net["A"], SERVICE, 1)
        await requests_in_a_loop(net["A"].url, REQUESTS, requester)
    assert len(set(answered)) == REQUESTS
