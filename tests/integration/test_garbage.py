"""Bytes that are not the request a method takes: refused with
INVALID_ARGUMENT and reason INVALID_REQUEST, logged once (rate-limited) and
without a traceback, and the node keeps serving; the SDK refuses a message
too big for one frame before sending it."""

from __future__ import annotations

import random

import grpc
import pytest
from google.protobuf import message_factory

from meshmq.client import MessageTooLargeError, connect
from meshmq.errors import REASON_METADATA_KEY
from meshmq.transport import MAX_CLIENT_FRAME
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import management_pb2 as mgpb
from tests.integration.shared import uniq

pytestmark = pytest.mark.integration


def undecodable(cls, rng: random.Random) -> list[bytes]:
    """Random byte strings that really fail to decode as `cls` (checked, not assumed)."""
    out = [b"\x0f", b"\xff\xff\xff\xff\xff"]
    while len(out) < 6:
        data = rng.randbytes(rng.randint(1, 64))
        try:
            cls.FromString(data)
        except Exception:
            out.append(data)
    return out


def reason_of(err: grpc.aio.AioRpcError) -> str | None:
    return dict(err.trailing_metadata() or ()).get(REASON_METADATA_KEY)


async def test_every_broker_and_management_method_refuses_garbage_cleanly(nodes):
    router = nodes.router("garbage")
    rng = random.Random(9)
    calls = 0
    services = (bpb.DESCRIPTOR.services_by_name["Broker"], mgpb.DESCRIPTOR.services_by_name["Management"])
    async with grpc.aio.insecure_channel(router.endpoint) as ch:
        for service in services:
            for m in service.methods:
                path = f"/{service.full_name}/{m.name}"
                cls = message_factory.GetMessageClass(m.input_type)
                for data in undecodable(cls, rng):
                    calls += 1
                    if m.client_streaming:
                        call = ch.stream_stream(path, request_serializer=None, response_deserializer=None)(iter([data]))
                        with pytest.raises(grpc.aio.AioRpcError) as err:
                            async for _ in call:
                                pass
                    elif m.server_streaming:
                        call = ch.unary_stream(path, request_serializer=None, response_deserializer=None)(data)
                        with pytest.raises(grpc.aio.AioRpcError) as err:
                            async for _ in call:
                                pass
                    else:
                        with pytest.raises(grpc.aio.AioRpcError) as err:
                            await ch.unary_unary(path, request_serializer=None, response_deserializer=None)(data)
                    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (path, err.value)
                    assert reason_of(err.value) == "INVALID_REQUEST", path
                    assert "could not be decoded" in err.value.details()
    assert calls == 6 * sum(len(s.methods) for s in services)
    log = router.log_path.read_text()
    assert "Traceback" not in log
    assert 1 <= log.count("undecodable") <= 3  # rate-limited: one line per 10 s
    async with await connect(router.url) as conn:  # still serving
        s = await conn.session()
        p = await s.create_producer("after-garbage")
        await p.send(b"fine", routing_type="anycast")
        assert (await (await s.create_consumer("after-garbage")).receive(5)).body == b"fine"


async def test_garbage_mid_session_ends_it_with_invalid_argument_after_confirming_what_came_before(nodes):
    router = nodes.router("garbage-mid")
    async with grpc.aio.insecure_channel(router.endpoint) as ch:
        frames = [
            bpb.SessionRequest(open=bpb.OpenSession(client_id="raw")).SerializeToString(),
            bpb.SessionRequest(create_producer=bpb.CreateProducer(producer_id=1, address="mid")).SerializeToString(),
            bpb.SessionRequest(send=bpb.SendBatch(producer_id=1, batch_id=1, messages=[
                {"body": b"before", "routing_type": 1}])).SerializeToString(),
            b"\x0f",
        ]
        call = ch.stream_stream("/meshmq.v1.Broker/Session", request_serializer=None,
                                response_deserializer=bpb.SessionResponse.FromString)(iter(frames))
        kinds = []
        with pytest.raises(grpc.aio.AioRpcError) as err:
            async for resp in call:
                kinds.append(resp.WhichOneof("kind"))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and reason_of(err.value) == "INVALID_REQUEST"
        assert kinds == ["opened", "producer_created", "confirm"]
    async with await connect(router.url) as conn:
        c = await (await conn.session()).create_consumer("mid")
        assert (await c.receive(5)).body == b"before"


async def test_sdk_refuses_properties_that_do_not_fit_one_frame(shared_router):
    async with await connect(shared_router.url) as conn:
        s = await conn.session()
        p = await s.create_producer(uniq("fat-props"))
        fat = {f"p{i}": "x" * (2**20) for i in range(17)}  # 17 MiB of properties, a tiny body
        with pytest.raises(MessageTooLargeError, match="bytes encoded"):
            await p.send(b"x", properties=fat, routing_type="anycast")
        await p.send(b"still fine", routing_type="anycast")  # the session survived
