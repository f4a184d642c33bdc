"""Session frames with values that mean nothing (issue 26): a window of -5 or
2^63-1, routing type 77, credit or acks for a consumer the session never had,
a large message announcing 2^63 bytes. Each is refused at once with reason
INVALID_REQUEST naming the value, the session goes on, and a client using the
same node meanwhile loses nothing. Force-deleting an empty auto-created queue
with a consumer attached deletes it and tells the consumer why.

The frames are written one by one on a raw gRPC stream, as a client that is
not the SDK would send them."""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import pytest

from meshmq.client import connect
from meshmq.config.defaults import MAX_WINDOW_SIZE
from meshmq.errors import InvalidRequestError, QueueNotFoundError
from meshmq.message_limits import MAX_LARGE_BODY_BYTES
from meshmq.transport import open_channel
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import messages_pb2 as mpb
from tests.fixtures.nodes import Nodes, eventually
from tests.integration.raw_session import ANSWER_S, Raw
from tests.integration.shared import uniq

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def router(tmp_path_factory):
    n = Nodes(tmp_path_factory.mktemp("session-refusals"))
    yield n.router("refusals")
    n.stop_all()


@contextlib.asynccontextmanager
async def raw_session(router):
    channel = open_channel(router.endpoint)
    try:
        session = Raw(channel)
        await session.send(open=bpb.OpenSession(client_id="raw"))
        await session.expect("opened")
        yield session
        session.call.cancel()
    finally:
        await channel.close()


@contextlib.asynccontextmanager
async def canary(router):
    """An SDK client sending and receiving durable messages all along; at the
    end every message it sent has come back, once and in order."""
    queue = uniq("canary")
    sent: list[bytes] = []
    stop = asyncio.Event()
    async with await connect(router.url) as conn:
        session = await conn.session()
        producer = await session.create_producer(queue)

        async def produce() -> None:
            while not stop.is_set():
                body = f"m{len(sent)}".encode()
                await producer.send(body, routing_type="anycast", durable=True)
                sent.append(body)
                await asyncio.sleep(0.005)

        task = asyncio.create_task(produce())
        try:
            await eventually(lambda: sent, ANSWER_S, "the canary's first send")
            yield
            await eventually(lambda: len(sent) >= 5, ANSWER_S, "the canary to go on sending")
        finally:
            stop.set()
            await task
        consumer = await session.create_consumer(queue)
        received = []
        while len(received) < len(sent):
            message = await consumer.receive(ANSWER_S)
            assert message is not None, f"canary: {len(received)} of {len(sent)} came back"
            received.append(message.body)
            message.ack()
        assert received == sent
        assert await consumer.receive(0.2) is None


def assert_no_traceback(router) -> None:
    assert router.proc.poll() is None
    assert "Traceback" not in router.log_path.read_text(), router.log_tail()


SIZES = [-5, -2, -(2**63), 2**63 - 1, MAX_WINDOW_SIZE + 1]


async def test_window_sizes_out_of_range_are_refused_by_name_and_the_session_goes_on(router):
    queue = uniq("windows")
    async with canary(router), raw_session(router) as s:
        for i, size in enumerate(SIZES, start=1):
            error = await s.refused(create_consumer=bpb.CreateConsumer(consumer_id=i, queue=queue, window_size=size))
            assert error.consumer_id == i and f"window_size {size} is out of range" in error.message, error
            error = await s.refused(create_producer=bpb.CreateProducer(producer_id=i, address=queue, window_size=size))
            assert error.producer_id == i and f"window_size {size} is out of range" in error.message, error
        # What the SDK sends stays valid, and the session still works.
        for i, size in enumerate((-1, 0, MAX_WINDOW_SIZE), start=100):
            await s.send(create_producer=bpb.CreateProducer(producer_id=i, address=queue, window_size=size))
            assert (await s.expect("producer_created")).producer_id == i
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=100, queue=queue, window_size=-1,
                                                        routing_type=mpb.ANYCAST))
        assert (await s.expect("consumer_created")).consumer_id == 100
        await s.send(send=bpb.SendBatch(producer_id=100, batch_id=1, messages=[
            mpb.Message(body=b"after", routing_type=mpb.ANYCAST)]))
        answers = {(await s.next()).WhichOneof("kind") for _ in range(2)}
        assert answers == {"confirm", "deliveries"}
    assert_no_traceback(router)


async def test_an_unknown_routing_type_is_refused_whatever_the_consumer_is_on(router):
    queue, topic = uniq("rt77"), uniq("rt77-topic")
    async with canary(router), raw_session(router) as s:
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=1, queue=queue, routing_type=mpb.ANYCAST))
        await s.expect("consumer_created")
        refused = {  # the queue exists now (its routing type was ignored); a subscription has none to take
            2: bpb.CreateConsumer(consumer_id=2, queue=queue, routing_type=77),
            3: bpb.CreateConsumer(consumer_id=3, address=topic, routing_type=77),
            4: bpb.CreateConsumer(consumer_id=4, queue=uniq("rt77-new"), routing_type=-1),
        }
        for cid, request in refused.items():
            error = await s.refused(create_consumer=request)
            assert error.consumer_id == cid and f"unknown routing type {request.routing_type}" in error.message
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=3, address=topic, routing_type=mpb.MULTICAST))
        await s.expect("consumer_created")
    assert_no_traceback(router)


async def test_credit_and_acks_for_a_consumer_the_session_never_had_are_refused(router):
    queue = uniq("unknown-ids")
    async with canary(router), raw_session(router) as s:
        frames = {
            "flow credit": dict(flow=bpb.Flow(consumer_id=4242, credits=1024)),
            "acknowledgement": dict(ack=bpb.AckBatch(consumer_id=4242, delivery_ids=[1])),
            "negative acknowledgement": dict(nack=bpb.NackBatch(consumer_id=4242, delivery_ids=[1])),
            "close": dict(close_consumer=bpb.CloseConsumer(consumer_id=4242)),
        }
        for what, frame in frames.items():
            error = await s.refused(**frame)
            assert error.consumer_id == 4242
            assert error.message == f"{what} for consumer 4242, which this session does not have"
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=1, queue=queue, window_size=0))
        await s.expect("consumer_created")
        for credits in (0, -5, -(2**63)):
            error = await s.refused(flow=bpb.Flow(consumer_id=1, credits=credits))
            assert f"credits {credits} must be a positive number of bytes" in error.message
        # A consumer the session closed: what is still on its way for it is no error.
        await s.send(close_consumer=bpb.CloseConsumer(consumer_id=1))
        await s.send(ack=bpb.AckBatch(consumer_id=1, delivery_ids=[1]))
        await s.send(flow=bpb.Flow(consumer_id=1, credits=10))
        await s.send(create_producer=bpb.CreateProducer(producer_id=7, address=queue))
        assert (await s.expect("producer_created")).producer_id == 7
    assert_no_traceback(router)


@pytest.mark.parametrize("announced", [2**63, 2**64 - 1, MAX_LARGE_BODY_BYTES + 1])
async def test_a_large_message_announcing_an_absurd_size_is_refused_at_once(router, announced):
    queue = uniq("large-lie")
    async with canary(router), raw_session(router) as s:
        await s.send(create_producer=bpb.CreateProducer(producer_id=1, address=queue))
        await s.expect("producer_created")
        header = mpb.Message(large=True, body_size=announced, routing_type=mpb.ANYCAST)
        await s.send(send=bpb.SendBatch(producer_id=1, batch_id=1, messages=[header]))
        confirm = await s.expect("confirm")  # no chunk was sent: answered on the header alone
        [rejection] = confirm.rejections
        assert rejection.reason == "INVALID_REQUEST"
        assert rejection.detail == (f"large message announces a body of {announced} bytes; "
                                    f"the limit is {MAX_LARGE_BODY_BYTES}")
        # Chunks that follow the refused header are dropped; the session goes on.
        await s.send(large_chunk=bpb.LargeChunk(producer_id=1, batch_id=1, data=b"x" * 10, last=True))
        await s.send(send=bpb.SendBatch(producer_id=1, batch_id=2, messages=[
            mpb.Message(body=b"after", routing_type=mpb.ANYCAST)]))
        confirm = await s.expect("confirm")
        assert (confirm.batch_id, list(confirm.rejections)) == (2, [])
    async with await connect(router.url) as conn:
        consumer = await (await conn.session()).create_consumer(queue)
        assert (await consumer.receive(ANSWER_S)).body == b"after"
        assert await consumer.receive(0.2) is None
    assert_no_traceback(router)


async def test_force_deleting_an_empty_auto_created_queue_with_a_consumer_closes_the_consumer(router):
    queue = uniq("auto")
    async with canary(router), await connect(router.url) as conn:
        consumer = await (await conn.session()).create_consumer(queue)  # auto-creates the queue
        for _ in range(2):  # it used to fail every time
            assert queue in {q.name for q in await conn.admin.list_queues()}
            assert await conn.admin.delete_queue(queue, force=True) == 0
            assert queue not in {q.name for q in await conn.admin.list_queues()}
            with pytest.raises(QueueNotFoundError, match=f"queue '{queue}' was deleted"):
                await consumer.receive(ANSWER_S)
            consumer = await (await conn.session()).create_consumer(queue)
    assert_no_traceback(router)


async def test_the_sdk_refuses_credit_below_one_byte_before_sending_it(router):
    queue = uniq("grant")
    async with await connect(router.url) as conn:
        session = await conn.session()
        consumer = await session.create_consumer(queue, window_size=0)
        for credits in (0, -5):
            with pytest.raises(InvalidRequestError, match=f"credits must be a positive number of bytes, not {credits}"):
                consumer.grant(credits)
        await (await session.create_producer(queue)).send(b"still", routing_type="anycast")
        assert (await consumer.receive(ANSWER_S)).body == b"still"  # the consumer was not broken by it


async def test_a_negative_scheduled_time_or_delay_is_refused_by_name_and_the_rest_of_the_batch_goes_on(router):
    queue = uniq("sched-negative")
    async with canary(router), raw_session(router) as s:
        await s.send(create_producer=bpb.CreateProducer(producer_id=1, address=queue))
        await s.expect("producer_created")
        await s.send(send=bpb.SendBatch(producer_id=1, batch_id=1, messages=[
            mpb.Message(body=b"a", routing_type=mpb.ANYCAST, delivery_time=-1),
            mpb.Message(body=b"b", routing_type=mpb.ANYCAST, delivery_delay=-20),
            mpb.Message(body=b"c", routing_type=mpb.ANYCAST)]))
        confirm = await s.expect("confirm")
        assert [(r.index, r.reason) for r in confirm.rejections] == [(0, "INVALID_REQUEST"), (1, "INVALID_REQUEST")]
        assert all("must not be negative" in r.detail and "delivery_time" in r.detail for r in confirm.rejections)
        await s.send(create_consumer=bpb.CreateConsumer(consumer_id=1, queue=queue, routing_type=mpb.ANYCAST,
                                                        window_size=-1))
        await s.expect("consumer_created")
        deliveries = await s.expect("deliveries")
        assert [d.message.body for d in deliveries.deliveries] == [b"c"]
    assert_no_traceback(router)


async def test_a_grouping_proposal_to_a_node_without_a_local_handler_is_refused_with_a_reason(router):
    """Cluster.Propose on a node that holds no LOCAL grouping handler (a
    misconfigured REMOTE, or anyone): INVALID_REQUEST with the reason metadata
    every refusal carries (the fuzz test found it without one)."""
    from meshmq.errors import from_rpc_error
    from meshmq.v1 import cluster_pb2 as cpb
    from meshmq.v1 import cluster_pb2_grpc as cgrpc

    channel = open_channel(router.endpoint)
    try:
        with pytest.raises(grpc.RpcError) as refused:
            await cgrpc.ClusterStub(channel).Propose(
                cpb.GroupProposal(address="orders", group_id="g.orders", node_id="x"), timeout=ANSWER_S)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        err = from_rpc_error(refused.value)
        assert isinstance(err, InvalidRequestError) and "holds no LOCAL grouping handler" in str(err)
    finally:
        await channel.close()
    assert_no_traceback(router)
