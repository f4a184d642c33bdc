"""The sequences docs/protocol.md shows, spoken frame by frame on a raw gRPC
stream as a third SDK written from that page would: send and confirm with a
rejection, consumer credit (window 0) and acks, close_consumer's uncounted
unseen deliveries, a transaction committed and one rolled back, a nack
inside a transaction, a large message both ways, a request kind the router
does not know, the drain when the client half-closes, and CloseConnection.
Each asserts what the page says the router does."""

from __future__ import annotations

import contextlib

import grpc
import pytest

from meshmq.client import connect
from meshmq.config import defaults
from meshmq.transport import open_channel
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import messages_pb2 as mpb
from tests.fixtures.nodes import Nodes
from tests.integration.raw_session import ANSWER_S, Raw
from tests.integration.shared import uniq

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def router(tmp_path_factory):
    n = Nodes(tmp_path_factory.mktemp("protocol-sequences"))
    yield n.router("protocol")
    n.stop_all()


@contextlib.asynccontextmanager
async def raw(router, *, transacted: bool = False):
    channel = open_channel(router.endpoint)
    try:
        s = Raw(channel)
        await s.send(open=bpb.OpenSession(client_id="raw", transacted=transacted))
        opened = await s.expect("opened")
        assert opened.session_id and opened.node_id
        yield s
        s.call.cancel()
    finally:
        await channel.close()


def msg(body: bytes, **fields) -> mpb.Message:
    return mpb.Message(body=body, durable=True, routing_type=mpb.ANYCAST, **fields)


async def produce(router, queue: str, bodies: list[bytes]) -> None:
    async with raw(router) as s:
        await s.send(create_producer=bpb.CreateProducer(producer_id=1, address=queue))
        await s.expect("producer_created")
        await s.send(send=bpb.SendBatch(producer_id=1, batch_id=1, messages=[msg(b) for b in bodies]))
        confirm = await s.expect("confirm")
        assert (confirm.batch_id, list(confirm.rejections)) == (1, [])


async def test_send_confirm_rejects_only_the_duplicate_and_stores_the_rest(router):
    queue = uniq("proto.send")
    async with raw(router) as s:
        await s.send(create_producer=bpb.CreateProducer(producer_id=1, address=queue, window_size=1 << 20))
        assert (await s.expect("producer_created")).producer_id == 1
        await s.send(send=bpb.SendBatch(producer_id=1, batch_id=1, messages=[
            msg(b"m0", duplicate_id="d"), msg(b"m1", duplicate_id="d"), msg(b"m2")]))
        await s.send(send=bpb.SendBatch(producer_id=1, batch_id=2, messages=[msg(b"m3")]))
        first, second = await s.expect("confirm"), await s.expect("confirm")
        assert (first.producer_id, first.batch_id) == (1, 1)
        assert [(r.index, r.reason) for r in first.rejections] == [(1, "DUPLICATE_ID")]
        assert (second.batch_id, list(second.rejections)) == (2, [])

        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=2, queue=queue, window_size=-1))
        assert (await s.expect("consumer_created")).queue == queue
        got = []
        while len(got) < 3:
            got += (await s.expect("deliveries")).deliveries
        assert [d.message.body for d in got] == [b"m0", b"m2", b"m3"]
        assert [d.delivery_id for d in got] == [1, 2, 3]
        assert all(d.delivery_count == 1 and d.message.message_id and d.message.node_id for d in got)


async def test_window_zero_lets_one_message_through_per_flow_and_unseen_deliveries_are_not_counted(router):
    queue = uniq("proto.credit")
    await produce(router, queue, [b"a", b"b", b"c"])
    async with raw(router) as s:
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=1, queue=queue, window_size=0))
        await s.expect("consumer_created")
        await s.quiet()  # no credit, no delivery
        await s.send(flow=bpb.Flow(consumer_id=1, credits=1))
        first = (await s.expect("deliveries")).deliveries
        assert [(d.delivery_id, d.message.body) for d in first] == [(1, b"a")]
        await s.quiet()  # one byte of credit let exactly one message through
        await s.send(flow=bpb.Flow(consumer_id=1, credits=1))
        assert [d.delivery_id for d in (await s.expect("deliveries")).deliveries] == [2]
        # The application saw only delivery 1: delivery 2 goes back uncounted.
        await s.send(close_consumer=bpb.CloseConsumer(consumer_id=1, last_handed_delivery_id=1))
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=2, queue=queue, window_size=-1))
        await s.expect("consumer_created")
        again = []
        while len(again) < 3:
            again += (await s.expect("deliveries")).deliveries
        assert [(d.message.body, d.delivery_count) for d in again] == [(b"a", 2), (b"b", 1), (b"c", 1)]
        await s.send(ack=bpb.AckBatch(consumer_id=2, delivery_ids=[d.delivery_id for d in again]))
        await s.send(flow=bpb.Flow(consumer_id=1, credits=1))  # a closed consumer's credit: ignored
        await s.quiet()
    async with raw(router) as s:  # acknowledged: gone
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=1, queue=queue, window_size=-1))
        await s.expect("consumer_created")
        await s.quiet()


async def test_a_close_that_asks_is_answered_once_what_the_consumer_held_is_back_in_its_queue(router):
    """Protocol 4: `answer` on CloseConsumer gets ConsumerClosed after the
    deliveries already sent, and by then the held messages are back in the
    queue (a consumer on another session gets them, the unseen one uncounted);
    a close of a consumer already closed is answered too, one never made is
    refused with its id, and a close without `answer` gets nothing."""
    queue = uniq("proto.close")
    await produce(router, queue, [b"a", b"b"])
    async with raw(router) as s, raw(router) as other:
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=1, queue=queue, window_size=-1))
        await s.expect("consumer_created")
        held = []
        while len(held) < 2:
            held += (await s.expect("deliveries")).deliveries
        await s.send(close_consumer=bpb.CloseConsumer(consumer_id=1, last_handed_delivery_id=1, answer=True))
        assert (await s.expect("consumer_closed")).consumer_id == 1
        await other.send(create_consumer=bpb.CreateConsumer(consumer_id=7, queue=queue, window_size=-1))
        await other.expect("consumer_created")
        again = []
        while len(again) < 2:
            again += (await other.expect("deliveries")).deliveries
        assert [(d.message.body, d.delivery_count) for d in again] == [(b"a", 2), (b"b", 1)]
        await s.send(close_consumer=bpb.CloseConsumer(consumer_id=1, answer=True))  # closed already
        assert (await s.expect("consumer_closed")).consumer_id == 1
        refused = await s.refused(close_consumer=bpb.CloseConsumer(consumer_id=9, answer=True))
        assert (refused.reason, refused.consumer_id) == ("INVALID_REQUEST", 9)
        await other.send(close_consumer=bpb.CloseConsumer(consumer_id=7))  # no answer asked: none comes
        await other.quiet()


async def test_a_transaction_commits_sends_and_acks_together_and_a_rollback_redelivers_after_its_answer(router):
    source, target = uniq("proto.tx.in"), uniq("proto.tx.out")
    await produce(router, source, [b"x", b"y"])
    async with raw(router, transacted=True) as s:
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=1, queue=source, window_size=-1))
        await s.expect("consumer_created")
        got = []
        while len(got) < 2:
            got += (await s.expect("deliveries")).deliveries
        await s.send(create_producer=bpb.CreateProducer(producer_id=2, address=target))
        await s.expect("producer_created")
        await s.send(ack=bpb.AckBatch(consumer_id=1, delivery_ids=[1]))
        await s.send(send=bpb.SendBatch(producer_id=2, batch_id=1, messages=[msg(b"r0")]))
        assert (await s.expect("confirm")).batch_id == 1  # admitted and confirmed before the commit
        await s.send(commit=bpb.TxRequest(request_id=9))
        result = await s.expect("tx_result")
        assert (result.request_id, result.committed) == (9, True)

        # Delivery 2 is acknowledged in the next transaction, which is rolled back.
        await s.send(ack=bpb.AckBatch(consumer_id=1, delivery_ids=[2]))
        await s.send(rollback=bpb.TxRequest(request_id=10, handed=[
            bpb.HandedPosition(consumer_id=1, last_handed_delivery_id=2)]))
        result = await s.expect("tx_result")
        assert (result.request_id, result.committed) == (10, False)
        again = (await s.expect("deliveries")).deliveries  # after the TxResult, on the same stream
        assert [(d.message.body, d.delivery_count, d.delivery_id) for d in again] == [(b"y", 2, 3)]

    async with raw(router) as s:  # the commit stored r0 and removed x
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=1, queue=target, window_size=-1))
        await s.expect("consumer_created")
        assert [d.message.body for d in (await s.expect("deliveries")).deliveries] == [b"r0"]
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=2, queue=source, window_size=-1))
        await s.expect("consumer_created")
        assert [d.message.body for d in (await s.expect("deliveries")).deliveries] == [b"y"]

    async with raw(router) as s:  # commit and rollback need a transacted session
        await s.send(commit=bpb.TxRequest(request_id=4))
        error = await s.expect("error")
        assert (error.request_id, error.reason) == (4, "NOT_TRANSACTED")


async def test_a_large_message_travels_as_a_header_and_chunks_both_ways(router):
    queue = uniq("proto.large")
    pieces = [b"a" * 1000, b"b" * 1000, b"c" * 500]
    async with raw(router) as s:
        await s.send(create_producer=bpb.CreateProducer(producer_id=1, address=queue))
        await s.expect("producer_created")
        header = msg(b"", large=True, body_size=sum(map(len, pieces)))
        await s.send(send=bpb.SendBatch(producer_id=1, batch_id=7, messages=[header]))
        for i, data in enumerate(pieces):
            await s.send(large_chunk=bpb.LargeChunk(producer_id=1, batch_id=7, data=data, last=i == len(pieces) - 1))
        confirm = await s.expect("confirm")
        assert (confirm.batch_id, list(confirm.rejections)) == (7, [])

        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=2, queue=queue, window_size=-1))
        await s.expect("consumer_created")
        (delivery,) = (await s.expect("deliveries")).deliveries
        assert delivery.message.large and delivery.message.body == b""
        assert delivery.message.body_size == 2500
        body = b""
        while True:
            chunk = await s.expect("large_chunk")
            assert (chunk.consumer_id, chunk.delivery_id) == (2, delivery.delivery_id)
            body += chunk.data
            if chunk.last:
                break
        assert body == b"".join(pieces)

        # A body that does not add up to body_size is refused in the confirm.
        await s.send(send=bpb.SendBatch(producer_id=1, batch_id=8, messages=[msg(b"", large=True, body_size=10)]))
        await s.send(large_chunk=bpb.LargeChunk(producer_id=1, batch_id=8, data=b"short", last=True))
        confirm = await s.expect("confirm")
        assert [(r.index, r.reason) for r in confirm.rejections] == [(0, "INVALID_REQUEST")]


async def test_a_request_kind_the_router_does_not_know_is_refused_and_the_session_goes_on(router):
    queue = uniq("proto.unknown")
    async with raw(router) as s:
        await s.call.write(b"\xf2\x01\x00")  # field 30 of SessionRequest: no kind this router knows
        error = await s.expect("error")
        assert (error.reason, error.request_id, error.producer_id, error.consumer_id, error.fatal) == (
            "INVALID_REQUEST", 0, 0, 0, False)
        assert "unexpected request" in error.message
        await s.send(open=bpb.OpenSession(client_id="again"))  # a second open: refused, the session goes on
        assert (await s.expect("error")).reason == "INVALID_REQUEST"
        await s.send(create_producer=bpb.CreateProducer(producer_id=1, address=queue))
        await s.expect("producer_created")


async def test_half_closing_drains_the_confirms_then_ends_the_call_with_ok(router):
    queue = uniq("proto.drain")
    async with raw(router) as s:
        await s.send(create_producer=bpb.CreateProducer(producer_id=1, address=queue))
        await s.send(send=bpb.SendBatch(producer_id=1, batch_id=1, messages=[msg(b"last words")]))
        await s.call.done_writing()
        assert (await s.expect("producer_created")).producer_id == 1
        assert (await s.expect("confirm")).batch_id == 1
        assert await s.read() is grpc.aio.EOF
        assert await s.call.code() == grpc.StatusCode.OK


async def test_the_first_request_must_be_open(router):
    channel = open_channel(router.endpoint)
    try:
        s = Raw(channel)
        await s.send(create_producer=bpb.CreateProducer(producer_id=1, address="x"))
        assert await s.read() is grpc.aio.EOF
        assert await s.call.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert ("meshmq-reason", "INVALID_REQUEST") in tuple(await s.call.trailing_metadata())
    finally:
        await channel.close()


async def test_a_nack_in_a_transacted_session_takes_effect_at_once(router):
    queue = uniq("proto.nack")
    await produce(router, queue, [b"n"])
    async with raw(router, transacted=True) as s:
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=1, queue=queue, window_size=-1))
        await s.expect("consumer_created")
        (first,) = (await s.expect("deliveries")).deliveries
        await s.send(nack=bpb.NackBatch(consumer_id=1, delivery_ids=[first.delivery_id]))
        (again,) = (await s.expect("deliveries")).deliveries  # no commit or rollback asked for it
        assert (again.message.body, again.delivery_count, again.delivery_id) == (b"n", 2, 2)


async def test_close_connection_ends_the_session_with_connection_failed(router):
    from meshmq.v1 import management_pb2 as mgpb
    from meshmq.v1 import management_pb2_grpc as mggrpc

    async with raw(router) as s:
        channel = open_channel(router.endpoint)
        try:
            management = mggrpc.ManagementStub(channel)
            connections = (await management.ListConnections(mgpb.ListConnectionsRequest())).connections
            ours = [c for c in connections if "raw" in c.client_id.split(",")]
            assert ours, connections
            for c in ours:
                await management.CloseConnection(mgpb.CloseConnectionRequest(connection_id=c.connection_id))
        finally:
            await channel.close()
        assert await s.read() is grpc.aio.EOF
        assert await s.call.code() == grpc.StatusCode.UNAVAILABLE
        assert ("meshmq-reason", "CONNECTION_FAILED") in tuple(await s.call.trailing_metadata())


async def test_the_router_says_its_protocol_and_accepts_a_client_that_says_none_by_default(router):
    async with raw(router) as s:  # no protocol_version: a client from before versions (protocol 1)
        await s.send(create_producer=bpb.CreateProducer(producer_id=1, address=uniq("proto.v1")))
        await s.expect("producer_created")
    channel = open_channel(router.endpoint)
    try:
        s = Raw(channel)
        await s.send(open=bpb.OpenSession(client_id="v", protocol_version=defaults.PROTOCOL_VERSION))
        opened = await s.expect("opened")
        assert (opened.protocol_version, opened.min_protocol_version) == (defaults.PROTOCOL_VERSION, 1)
        s.call.cancel()
    finally:
        await channel.close()


async def test_a_router_with_a_minimum_protocol_tells_an_older_client_no_and_serves_the_sdks(tmp_path):
    """min-client-protocol-version: 2 refuses a client that says no version
    (UNSUPPORTED_VERSION, naming both), and the Python SDK, which says 2, works."""
    n = Nodes(tmp_path)
    try:
        node = n.router("strict", extra="min-client-protocol-version: 2\n")
        channel = open_channel(node.endpoint)
        try:
            s = Raw(channel)
            await s.send(open=bpb.OpenSession(client_id="old"))
            assert await s.read() is grpc.aio.EOF
            assert await s.call.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert ("meshmq-reason", "UNSUPPORTED_VERSION") in tuple(await s.call.trailing_metadata())
            assert "session protocol 2 or newer" in await s.call.details()
        finally:
            await channel.close()
        async with await connect(node.url) as conn:
            session = await conn.session()
            producer = await session.create_producer("proto.v2")
            await producer.send(b"spoken in 2", routing_type="anycast")
            consumer = await session.create_consumer("proto.v2")
            got = await consumer.receive(5)
            assert got is not None and got.body == b"spoken in 2"
    finally:
        n.stop_all()
