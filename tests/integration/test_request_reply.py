"""Request-reply against a real router: the JMS headers reply_to,
correlation_id, type, group_id and group_seq as message fields (kept through
a restart, paging and dead-lettering), selectors on them, and the SDK's
request()/reply() over a temporary queue, async and blocking."""

from __future__ import annotations

import asyncio
import threading

import pytest

from meshmq.client import blocking, connect
from tests.fixtures.nodes import eventually
from tests.integration.shared import uniq

pytestmark = pytest.mark.integration

SETTINGS = """
address-settings:
  "rr.paged.#":
    max-size-bytes: 20K
    page-size-bytes: 10K
  "rr.dlq.#":
    max-delivery-attempts: 1
    dead-letter-address: rr.DLQ
"""

HEADERS = dict(reply_to="rr.replies", correlation_id="corr-42", type="OrderPlaced", group_id="customer-7",
               group_seq=3)


def headers_of(msg) -> dict:
    return {k: getattr(msg, k) for k in HEADERS}


async def test_headers_round_trip_and_survive_a_restart(nodes):
    node = nodes.router("rr-restart", extra=SETTINGS)
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer("rr.orders")
        await p.send(b"live", routing_type="anycast", **HEADERS)
        c = await s.create_consumer("rr.orders")
        msg = await c.receive(5)
        assert msg.body == b"live" and headers_of(msg) == HEADERS
        msg.ack()
        await c.close()
        await p.send(b"stored", routing_type="anycast", durable=True, **HEADERS)
        await p.send(b"plain", routing_type="anycast", durable=True)
    node.kill9()
    node.start()
    async with await connect(node.url) as conn:
        s = await conn.session()
        c = await s.create_consumer("rr.orders")
        stored, plain = await c.receive(5), await c.receive(5)
        assert stored.body == b"stored" and headers_of(stored) == HEADERS
        assert plain.body == b"plain" and headers_of(plain) == dict(reply_to="", correlation_id="", type="",
                                                                     group_id="", group_seq=0)
        stored.ack()
        plain.ack()


async def test_headers_survive_paging_and_dead_lettering(nodes):
    node = nodes.router("rr-copies", extra=SETTINGS)
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer()
        for i in range(40):  # ~40 KB into a 20 KB address: the later ones are paged
            await p.send_async(b"." * 1000, address="rr.paged.q", routing_type="anycast",
                               properties={"n": i}, **HEADERS)
        await p.send(b"x", address="rr.paged.q", routing_type="anycast", properties={"n": 40}, **HEADERS)
        addresses = {a.name: a for a in await conn.admin.list_addresses()}
        assert addresses["rr.paged.q"].paging
        c = await s.create_consumer("rr.paged.q")
        for i in range(41):
            m = await c.receive(10)
            assert m is not None and m.properties["n"] == i and headers_of(m) == HEADERS, f"message {i}"
            m.ack()

        await p.send(b"doomed", address="rr.dlq.q", routing_type="anycast", **HEADERS)
        c = await s.create_consumer("rr.dlq.q")
        (await c.receive(5)).nack()  # max-delivery-attempts 1: to rr.DLQ

        async def dead_lettered():
            q = await conn.admin.queue("rr.DLQ")
            return q is not None and q.message_count == 1

        await eventually(dead_lettered, 10, "the message in rr.DLQ")
        dlq = await s.create_consumer("rr.DLQ")
        m = await dlq.receive(5)
        assert m.body == b"doomed" and headers_of(m) == HEADERS
        assert m.properties["_AMQ_ORIG_QUEUE"] == "rr.dlq.q"
        m.ack()


async def test_selectors_on_correlation_id_type_and_group(shared_router):
    q = uniq("rr.sel")
    async with await connect(shared_router.url) as conn:
        s = await conn.session()
        p = await s.create_producer(q)
        sent = [
            dict(correlation_id="a", type="Order", group_id="g1", group_seq=1),
            dict(correlation_id="b", type="Invoice", group_id="g1", group_seq=2),
            dict(correlation_id="c", type="Order", group_id="g2", group_seq=1),
            dict(),
        ]
        for i, h in enumerate(sent):
            await p.send(str(i).encode(), routing_type="anycast", **h)
        # A property spelt like a header counts when the field is unset (a client sending it as a property).
        await p.send(b"4", routing_type="anycast", properties={"_AMQ_GROUP_ID": "g2"})

        async def bodies(selector: str) -> list[bytes]:
            c = await s.create_consumer(q, filter=selector)
            got = []
            while (m := await c.receive(0.5)) is not None:
                got.append(m.body)
            await c.close()  # unacked: back in the queue for the next selector
            return got

        assert await bodies("JMSCorrelationID = 'b'") == [b"1"]
        assert await bodies("JMSType = 'Order'") == [b"0", b"2"]
        assert await bodies("JMSXGroupID = 'g1' AND JMSXGroupSeq > 1") == [b"1"]
        assert await bodies("_AMQ_GROUP_ID = 'g2'") == [b"2", b"4"]
        assert await bodies("JMSXGroupID = 'g2'") == [b"2", b"4"]
        assert await bodies("JMSCorrelationID IS NULL") == [b"3", b"4"]
        assert await bodies("JMSReplyTo IS NULL AND JMSType IS NULL") == [b"3", b"4"]


async def _responder(s, address: str, *, type_out: str = "") -> asyncio.Task:
    c = await s.create_consumer(address)

    async def answer():
        while True:
            m = await c.receive(30)
            if m is None:
                return
            await s.reply(m, b"re:" + m.body, type=type_out)
            m.ack()

    return asyncio.create_task(answer())


async def test_request_gets_its_reply_and_leaves_no_temporary_queue(shared_router):
    service = uniq("rr.service")
    async with await connect(shared_router.url) as conn:
        responder_session = await conn.session()
        await conn.admin.create_queue(service, address=service, routing_type="anycast")
        task = await _responder(responder_session, service, type_out="Answer")
        try:
            s = await conn.session()
            replies = await asyncio.gather(*(s.request(service, f"q{i}".encode(), timeout=10) for i in range(5)))
            assert [r.body for r in replies] == [f"re:q{i}".encode() for i in range(5)]
            assert all(r.type == "Answer" and r.correlation_id for r in replies)
            assert len({r.correlation_id for r in replies}) == 5
            # Each reply came to its own temporary queue, deleted once request() returned
            # (request() closes its consumer without waiting for the router to delete it).
            reply_addresses = {r.address for r in replies}
            assert len(reply_addresses) == 5

            async def temporary_queues_gone() -> bool:
                return all([await conn.admin.list_queues(address=a) == [] for a in reply_addresses])

            await eventually(temporary_queues_gone, 10, "the requests' temporary queues to go")
        finally:
            task.cancel()


async def test_request_times_out_naming_the_address_when_nobody_answers(shared_router):
    service = uniq("rr.nobody")
    async with await connect(shared_router.url) as conn:
        await conn.admin.create_queue(service, address=service, routing_type="anycast")
        s = await conn.session()
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(TimeoutError) as err:
            await s.request(service, b"anyone?", timeout=0.5)
        assert 0.5 <= loop.time() - start < 5
        assert service in str(err.value) and "0.5" in str(err.value)
        # The request is there, with where to answer; its temporary queue is gone.
        c = await s.create_consumer(service)
        m = await c.receive(5)
        assert m.body == b"anyone?" and m.reply_to and m.correlation_id
        m.ack()
        assert await conn.admin.list_queues(address=m.reply_to) == []


def test_blocking_request_and_reply(shared_router):
    service = uniq("rr.blocking")
    with blocking.connect(shared_router.url) as conn:
        conn.admin.create_queue(service, address=service, routing_type="anycast")
        responder = conn.session()
        c = responder.create_consumer(service)
        s = conn.session()
        with pytest.raises(TimeoutError):
            s.request(service, b"first", timeout=0.3)  # nobody answering yet
        stale = c.receive(5)
        assert stale.body == b"first"
        c.ack(stale)

        def answer():
            m = c.receive(10)
            responder.reply(m, m.body.upper())
            c.ack(m)

        t = threading.Thread(target=answer)
        t.start()
        r = s.request(service, b"ping", timeout=10)
        t.join(10)
        assert r.body == b"PING" and r.correlation_id
