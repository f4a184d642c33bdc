"""A connection's temporary queue (JMS createTemporaryQueue) on a real router:
it outlives the session that made it and the consumers on it, any session of
the connection consumes from it and no other connection does, `delete()` is
refused while a consumer is on it, and it goes when the connection closes —
or when the client process dies without closing anything."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from meshmq.client import MeshMQError, PermissionDeniedError, connect
from meshmq.errors import Reason
from meshmq.client.blocking import connect as connect_blocking
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration


async def queue_gone(admin, name: str) -> None:
    async def gone() -> bool:
        return await admin.queue(name) is None
    await eventually(gone, timeout=10, what=f"temporary queue {name} deleted")


async def send(conn, address: str, bodies: list[bytes]) -> None:
    producer = await (await conn.session()).create_producer(address)
    for body in bodies:
        await producer.send(body, durable=False)


async def take(session, queue, n: int) -> list[bytes]:
    consumer = await session.create_consumer(queue)
    got = []
    for _ in range(n):
        m = await consumer.receive(5)
        assert m is not None, f"only {got} of {n} came"
        m.ack()
        got.append(m.body)
    assert await consumer.receive(0.2) is None
    await consumer.close()
    return got


async def test_it_lives_as_long_as_its_connection_and_any_of_its_sessions_consumes(conn, shared_router):
    async with await connect(shared_router.url) as requester, await connect(shared_router.url) as other:
        first = await requester.session()
        tq = await first.create_temporary_queue()
        info = await conn.admin.queue(tq.name)
        assert info.temporary and not info.durable and info.address == tq.name
        await send(other, str(tq), [b"a", b"b", b"c"])
        await first.close()  # the session that made it ends: the queue stays, with what it holds
        assert (await conn.admin.queue(tq.name)).message_count == 3
        assert await take(await requester.session(), tq, 3) == [b"a", b"b", b"c"]
        await send(other, tq.name, [b"d", b"e"])  # its last consumer left: still there
        assert await take(await requester.session(), tq.name, 2) == [b"d", b"e"]
        with pytest.raises(PermissionDeniedError) as refused:  # another connection, same (no) user
            await (await other.session()).create_consumer(tq.name)
        assert "only the connection that created it" in str(refused.value) and repr(tq.name) in str(refused.value)
        await send(other, tq.name, [b"left"])
    await queue_gone(conn.admin, tq.name)  # the connection closed: gone with what it held


async def test_delete_is_refused_while_a_consumer_is_on_it(conn, shared_router):
    async with await connect(shared_router.url) as requester:
        session = await requester.session()
        tq = await session.create_temporary_queue()
        consumer = await (await requester.session()).create_consumer(tq)
        with pytest.raises(MeshMQError) as refused:
            await tq.delete()
        assert refused.value.reason is Reason.QUEUE_IN_USE
        assert await conn.admin.queue(tq.name) is not None
        await consumer.close()
        await tq.delete()
        assert tq.deleted and await conn.admin.queue(tq.name) is None
        await tq.delete()  # twice: nothing more
        other = await session.create_temporary_queue()  # the connection goes on making them
        assert other.name != tq.name and await conn.admin.queue(other.name) is not None


async def test_a_consumer_closed_on_one_session_is_gone_for_a_delete_sent_on_another(conn, shared_router):
    """A consumer's close travels on its own session's stream, behind whatever
    that session sent before it (here 3,000 sends not yet confirmed), while the
    delete goes on the temporary queue's own session. The close returns only
    once the router answered it (protocol 4), so the delete right after it is
    never refused QUEUE_IN_USE — and the SDK no longer asks again on a router
    speaking 4, so a close still on its way would fail this at once."""
    async with await connect(shared_router.url) as requester:
        tq = await (await requester.session()).create_temporary_queue()
        busy = await requester.session()
        consumer = await busy.create_consumer(tq)
        producer = await busy.create_producer(f"busy.{tq.name}")  # (no queue there: dropped once routed)
        for round_ in range(3):
            sends = [await producer.send_async(b"x" * 200, durable=False) for _ in range(1000)]
            await consumer.close()
            await tq.delete()
            assert await conn.admin.queue(tq.name) is None, f"round {round_}"
            await asyncio.gather(*sends)
            tq = await (await requester.session()).create_temporary_queue()
            consumer = await busy.create_consumer(tq)


async def test_two_connections_temporary_queues_are_apart_and_each_goes_with_its_own(conn, shared_router):
    a = await connect(shared_router.url)
    async with await connect(shared_router.url) as b:
        qa = await (await a.session()).create_temporary_queue()
        qb = await (await b.session()).create_temporary_queue()
        await a.close()
        await queue_gone(conn.admin, qa.name)
        assert await conn.admin.queue(qb.name) is not None


def test_the_blocking_api_makes_uses_and_deletes_one(shared_router):
    with connect_blocking(shared_router.url) as c:
        tq = c.session().create_temporary_queue()
        c.session().create_producer(str(tq)).send(b"x", durable=False)
        consumer = c.session().create_consumer(tq)
        m = consumer.receive(5)
        assert m is not None and m.body == b"x"
        consumer.ack(m)
        consumer.close()
        tq.delete()
        assert c.admin.queue(tq.name) is None
        other = c.create_temporary_queue()  # the connection's own, as the async API has it
        assert c.admin.queue(other.name).temporary


CLIENT = textwrap.dedent("""
    import asyncio, sys
    from meshmq.client import connect

    async def main():
        conn = await connect(sys.argv[1])
        tq = await (await conn.session()).create_temporary_queue()
        await (await conn.session()).create_consumer(tq)
        print(tq.name, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
""")


async def test_a_client_killed_with_its_connection_open_leaves_no_temporary_queue(conn, shared_router, tmp_path):
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, str(script), shared_router.url], stdout=subprocess.PIPE, text=True,
                            env=env)
    try:
        name = proc.stdout.readline().strip()
        assert name, "the client printed no queue"
        assert (await conn.admin.queue(name)).consumer_count == 1
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    await queue_gone(conn.admin, name)
