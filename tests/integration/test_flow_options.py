"""The flow-control URI options mean what they mean in Artemis (issue #9 defect 7)."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect
from meshmq.client.uri import parse_uri
from meshmq.errors import InvalidRequestError
from tests.integration.shared import uniq

pytestmark = pytest.mark.integration


async def test_confirmation_window_minus_one_never_blocks_a_send(shared_router):
    async with await connect(f"{shared_router.url}?confirmationWindowSize=-1") as conn:
        s = await conn.session()
        p = await s.create_producer(uniq("nowindow"))
        await asyncio.wait_for(p.send(b"first", routing_type="anycast"), 10)
        futs = [await asyncio.wait_for(p.send_async(b"x" * 1024, routing_type="anycast"), 10) for _ in range(2000)]
        await asyncio.wait_for(asyncio.gather(*futs), 30)


async def test_consumer_window_zero_sends_one_message_per_receive(shared_router):
    q = uniq("slow-consumer")
    async with await connect(f"{shared_router.url}?consumerWindowSize=0") as conn:
        s = await conn.session()
        p = await s.create_producer(q)
        for i in range(3):
            await p.send(f"m{i}".encode(), routing_type="anycast")
        c = await s.create_consumer(q)
        await asyncio.sleep(0.2)
        assert (await conn.admin.queue(q)).delivering_count == 0  # nothing is pushed before receive asks
        first = await c.receive(5)
        assert first.body == b"m0"
        await asyncio.sleep(0.2)
        assert (await conn.admin.queue(q)).delivering_count == 1  # only the one asked for
        first.ack()
        assert [(await c.receive(5)).body for _ in range(2)] == [b"m1", b"m2"]


@pytest.mark.parametrize(
    "option", ["confirmationWindowSize=0", "confirmationWindowSize=-2", "consumerWindowSize=-2"]
)
def test_meaningless_window_values_are_refused_by_name(option):
    with pytest.raises(InvalidRequestError, match=option.split("=")[0]):
        parse_uri(f"meshmq://127.0.0.1:61616?{option}")
