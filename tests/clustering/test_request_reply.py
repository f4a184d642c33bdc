"""Request-reply across a cluster connection (ON_DEMAND), on real router
processes: the requester on A, the responder consuming the request queue on
B only, so every request is forwarded to B. The reply is sent on B to the
request's reply_to — a temporary queue on A (JMS createTemporaryQueue:
`create_consumer(name, temporary=True)`), or the temporary subscription
`session.request()` waits on — and comes back to A, because A offers that
queue (with its consumer) to B like any other binding, and a forwarded
request waits on B until B knows the bindings A had when it sent it
(cluster/bindings_order.py). When the requester's connection closes, its
temporary queue goes, and so does B's remote binding for it: a late reply
finds no binding on B and is dropped (or dead-lettered with
send-to-dla-on-no-route), never stored for nobody."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually

from .cluster import cluster_state, start_cluster, wait_bindings

pytestmark = pytest.mark.integration

SERVICE = "rr.service"
SERVICE_QUEUE = f"addresses:\n  {SERVICE}: {{anycast: [{{name: {SERVICE}}}]}}\n"
REQUESTS = 200
REQUESTERS = pytest.mark.parametrize("requester", ["temporary queue", "request()"])


def start(nodes, extra: str = "") -> dict:
    """A and B, each linked to the other, the request queue defined on both."""
    return start_cluster(nodes, {"A": ["B"], "B": ["A"]}, options="message-load-balancing: ON_DEMAND",
                         extra=SERVICE_QUEUE + extra)


@asynccontextmanager
async def responder(node):
    """A consumer of SERVICE on `node` answering every request with "re:" and
    its body; yields the reply addresses it answered, in order."""
    answered: list[str] = []
    async with await connect(node.url) as conn:
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


async def temporary_queue_request(session, producer, body: bytes, timeout: float):
    """A request as JMS's QueueRequestor makes it: a new temporary queue as
    JMSReplyTo, the reply taken from it (None: none came in time)."""
    reply_to = f"tmp.{uuid.uuid4()}"
    replies = await session.create_consumer(reply_to, temporary=True)
    try:
        await producer.send(body, address=SERVICE, reply_to=reply_to, correlation_id=f"c-{body.decode()}")
        reply = await replies.receive(timeout)
        if reply is not None:
            replies.ack(reply)
        return reply
    finally:
        await replies.close()


async def service_queue_added(node) -> int:
    async with await connect(node.url) as conn:
        return (await conn.admin.queue(SERVICE)).messages_added


@REQUESTERS
async def test_every_request_gets_its_reply_across_a_cluster_connection(nodes, requester):
    """200 requests in a tight loop from A, each with a reply destination made
    just before it; each is answered on B and its reply, with its correlation
    id, reaches A."""
    cluster = start(nodes)
    async with responder(cluster["B"]) as answered, await connect(cluster["A"].url) as a_conn:
        await wait_bindings(cluster["A"], {("B", SERVICE, 1)})
        a = await a_conn.session()
        producer = await a.create_producer()
        for i in range(REQUESTS):
            body = f"q{i}".encode()
            if requester == "request()":
                reply = await a.request(SERVICE, body, timeout=5)
            else:
                reply = await temporary_queue_request(a, producer, body, 5)
                assert reply is not None, f"request {i}: no reply came back to A (answered on B: {len(answered)})"
                assert reply.correlation_id == f"c-q{i}"
            assert reply.body == b"re:" + body
            assert reply.address == answered[-1]  # the reply address the request carried to B
    assert len(set(answered)) == REQUESTS  # each over a reply destination of its own
    assert await service_queue_added(cluster["A"]) == 0  # every request was answered on B, none waited on A
    async with await connect(cluster["B"].url) as b_conn:  # B stored nothing for the replies: each went on to A
        assert [q.name for q in await b_conn.admin.list_queues() if q.address in set(answered)] == []
        assert [a.name for a in await b_conn.admin.list_addresses() if a.name in set(answered)] == []


async def test_replies_to_one_temporary_queue_match_their_requests_by_correlation_id(nodes):
    """JMS's other pattern: one temporary queue for the connection, many
    requests in flight at once, each reply matched to its request by its
    correlation id — every request gets exactly one reply, its own."""
    cluster = start(nodes)
    async with responder(cluster["B"]) as answered, await connect(cluster["A"].url) as a_conn:
        await wait_bindings(cluster["A"], {("B", SERVICE, 1)})
        a = await a_conn.session()
        reply_to = f"tmp.{uuid.uuid4()}"
        replies = await a.create_consumer(reply_to, temporary=True)
        producer = await a.create_producer()
        sent = {f"id-{i}": f"q{i}".encode() for i in range(REQUESTS)}
        for correlation_id, body in sent.items():
            await producer.send_async(body, address=SERVICE, reply_to=reply_to, correlation_id=correlation_id)
        await producer.flush()
        got: dict[str, list[bytes]] = {}
        while sum(map(len, got.values())) < REQUESTS and (m := await replies.receive(10)) is not None:
            got.setdefault(m.correlation_id, []).append(m.body)
            replies.ack(m)
        assert (m := await replies.receive(0.5)) is None, f"a reply too many: {m.correlation_id}"
    assert got == {c: [b"re:" + body] for c, body in sent.items()}
    assert answered == [reply_to] * REQUESTS


async def test_concurrent_requests_each_get_their_own_reply(nodes):
    """50 `request()` calls in flight at once on one session of A, answered on B."""
    cluster = start(nodes)
    async with responder(cluster["B"]), await connect(cluster["A"].url) as a_conn:
        await wait_bindings(cluster["A"], {("B", SERVICE, 1)})
        a = await a_conn.session()
        replies = await asyncio.gather(*(a.request(SERVICE, f"q{i}".encode(), timeout=10) for i in range(50)))
    assert [r.body for r in replies] == [f"re:q{i}".encode() for i in range(50)]
    assert len({r.correlation_id for r in replies}) == 50


DEAD_LETTERS = """
address-settings:
  "tmp.#": {send-to-dla-on-no-route: true, dead-letter-address: DLA}
"""
DLA_QUEUE = "  DLA: {anycast: [{name: DLA}]}\n"


@pytest.mark.parametrize("late_reply", ["dropped", "dead-lettered"])
async def test_a_temporary_queue_and_its_remote_binding_go_with_the_requesters_connection(nodes, late_reply):
    """The requester's connection closes: its temporary queue goes on A and
    B forgets it; a reply sent on B after that finds no binding there and,
    as Artemis does with a message no queue takes, is dropped — or, with
    send-to-dla-on-no-route, goes to B's dead-letter address. Either way it
    waits in no store-and-forward queue and brings back no queue on A."""
    cluster = start(nodes, (DLA_QUEUE + DEAD_LETTERS) if late_reply == "dead-lettered" else "")
    at_rest = {("A", SERVICE, 0), *([("A", "DLA", 0)] if late_reply == "dead-lettered" else [])}
    reply_to = f"tmp.{uuid.uuid4()}"
    async with await connect(cluster["A"].url) as a_conn:
        await (await a_conn.session()).create_consumer(reply_to, temporary=True)
        await wait_bindings(cluster["B"], {*at_rest, ("A", reply_to, 1)})
    await wait_bindings(cluster["B"], at_rest)  # the connection closed: B forgot the queue
    async with await connect(cluster["A"].url) as a_conn:
        assert await a_conn.admin.queue(reply_to) is None
    async with await connect(cluster["B"].url) as b_conn:
        b = await b_conn.session()
        await (await b.create_producer()).send(b"late", address=reply_to, correlation_id="late")
        state = await b_conn.admin.cluster_state()
        assert [(br.routed, br.pending) for br in state.bridges] == [(0, 0)]  # nothing for A to forward
        if late_reply == "dead-lettered":
            dla = await b.create_consumer("DLA")
            m = await dla.receive(5)
            assert m is not None and m.body == b"late" and m.correlation_id == "late"
            dla.ack(m)
        assert [q.name for q in await b_conn.admin.list_queues() if q.address == reply_to] == []
    async with await connect(cluster["A"].url) as a_conn:
        assert await a_conn.admin.queue(reply_to) is None


@pytest.mark.parametrize("late_reply", ["dropped", "dead-lettered"])
async def test_a_reply_on_its_way_when_the_requesters_node_went_is_not_stranded(nodes, late_reply):
    """The requester's node is killed with its temporary queue; B, retrying
    the link, still routes the reply there: it waits in B's store-and-forward
    queue. A restarts (its temporary queue did not survive): B forwards the
    reply, A finds no queue for it and routes it as if sent on A — dropped,
    or to A's dead-letter address with send-to-dla-on-no-route. B's
    store-and-forward queue is empty again either way."""
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]},
                            options="message-load-balancing: ON_DEMAND, retry-interval: 100",
                            extra=SERVICE_QUEUE + ((DLA_QUEUE + DEAD_LETTERS) if late_reply == "dead-lettered" else ""))
    reply_to = f"tmp.{uuid.uuid4()}"
    a_conn = await connect(cluster["A"].url)
    await (await a_conn.session()).create_consumer(reply_to, temporary=True)
    await wait_bindings(cluster["B"], {("A", SERVICE, 0), ("A", reply_to, 1),
                                       *([("A", "DLA", 0)] if late_reply == "dead-lettered" else [])})
    await asyncio.to_thread(cluster["A"].kill9)
    await a_conn.close()
    async with await connect(cluster["B"].url) as b_conn:
        b = await b_conn.session()
        await (await b.create_producer()).send(b"late", address=reply_to, correlation_id="late")
        [bridge] = (await b_conn.admin.cluster_state()).bridges
        assert bridge.state != "connected" and (bridge.routed, bridge.pending) == (1, 1)
    await asyncio.to_thread(cluster["A"].start)

    async def forwarded() -> bool:
        [bridge] = (await cluster_state(cluster["B"])).bridges
        return bridge.state == "connected" and bridge.pending == 0 and bridge.confirmed == 1
    await eventually(forwarded, 30, "B to forward the late reply to A")
    async with await connect(cluster["A"].url) as a_conn:
        assert await a_conn.admin.queue(reply_to) is None
        if late_reply == "dead-lettered":
            dla = await (await a_conn.session()).create_consumer("DLA")
            m = await dla.receive(5)
            assert m is not None and m.body == b"late" and m.correlation_id == "late"
            dla.ack(m)
        else:
            assert "the temporary queue it was sent to is gone" in cluster["A"].log_path.read_text()


async def test_a_cluster_at_rest_stops_offering_its_bindings(nodes):
    """The bindings version travels in every snapshot: raised by what other
    nodes offered too, each snapshot would be answered by a new one, and two
    nodes would re-offer to each other for ever (every 10 ms)."""
    cluster = start(nodes)
    async with await connect(cluster["B"].url) as b_conn:
        await (await b_conn.session()).create_consumer(SERVICE)
        await wait_bindings(cluster["A"], {("B", SERVICE, 1)})

        async def offers() -> list[int]:
            return [[b.demand_received for b in (await cluster_state(cluster[n])).bridges][0] for n in "AB"]
        before = await offers()
        await asyncio.sleep(1.0)  # a hundred offer periods: at rest, none may carry a snapshot
        assert await offers() == before, f"snapshots kept coming: {before} then {await offers()}"
