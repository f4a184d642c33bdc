"""kill -9 during a stream of durable sends and acks, then restart: every
confirmed, unacknowledged durable message comes back exactly once and in
order; acknowledged ones may only come back if their ack was not yet stored;
non-durable messages are gone; queues, addresses and duplicate ids survive."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import DuplicateIdError, connect
from meshmq.errors import MeshMQError

pytestmark = pytest.mark.integration

QUEUE = "crash.orders"
VOLATILE = "crash.volatile"


async def stream_until_killed(node, kill_after_confirms: int = 1500):
    """Send and ack concurrently; kill -9 the node mid-stream. Returns what the client saw."""
    confirmed: set[int] = set()
    acked: set[int] = set()
    conn = await connect(node.url)
    await conn.admin.create_queue("crash.keepme", routing_type="anycast")
    s = await conn.session()
    p = await s.create_producer(QUEUE)
    # non-durable messages to a durable queue: gone after the crash
    for i in range(20):
        await p.send(b"v", address=VOLATILE, durable=False, routing_type="anycast")
    consumer = await s.create_consumer(QUEUE)
    killed = asyncio.Event()

    async def produce():
        seq = 0
        while not killed.is_set():
            seq += 1
            try:
                fut = await p.send_async(b"m%d" % seq, properties={"seq": seq}, duplicate_id=f"seq-{seq}", routing_type="anycast")
            except MeshMQError:
                return
            fut.add_done_callback(lambda f, n=seq: None if f.exception() else confirmed.add(n))
            if seq % 200 == 0:
                await asyncio.sleep(0)

    async def consume():
        while not killed.is_set():
            try:
                msg = await consumer.receive(0.5)
            except MeshMQError:
                return
            if msg is None:
                continue
            n = msg.properties["seq"]
            if n % 3:  # ack two of three; the third stays unacknowledged (delivering)
                msg.ack()
                acked.add(n)

    async def killer():
        while len(confirmed) < kill_after_confirms:
            await asyncio.sleep(0.01)
        node.kill9()
        killed.set()

    await asyncio.wait_for(asyncio.gather(produce(), consume(), killer()), 120)
    try:
        await asyncio.wait_for(conn.close(), 5)
    except Exception:
        pass
    return confirmed, acked


async def check_recovered(node, confirmed: set[int], acked: set[int]) -> None:
    async with await connect(node.url) as conn:
        names = {q.name for q in await conn.admin.list_queues()}
        assert {QUEUE, VOLATILE, "crash.keepme"} <= names
        s = await conn.session()
        c = await s.create_consumer(QUEUE)
        seqs = []
        while True:
            msg = await c.receive(2)
            if msg is None:
                break
            seqs.append(msg.properties["seq"])
            msg.ack()
        assert confirmed - acked, "the scenario left no unacknowledged confirmed message to check"
        assert len(seqs) == len(set(seqs)), "a message came back twice"
        assert seqs == sorted(seqs), "recovered messages are out of order"
        missing = (confirmed - acked) - set(seqs)
        assert not missing, f"{len(missing)} confirmed, unacknowledged messages lost, e.g. {sorted(missing)[:5]}"
        assert (await conn.admin.queue(VOLATILE)).message_count == 0
        # the duplicate-id cache survived: a confirmed id is still refused
        p = await s.create_producer(QUEUE)
        some = min(confirmed)
        with pytest.raises(DuplicateIdError):
            await p.send(b"again", duplicate_id=f"seq-{some}", routing_type="anycast")


def _durable_queue_config() -> str:
    return """
    addresses:
      crash.volatile: {anycast: [{name: crash.volatile}]}
    """


async def test_kill9_and_restart_on_sqlite(nodes):
    node = nodes.router("crash-sqlite", extra=_durable_queue_config())
    confirmed, acked = await stream_until_killed(node)
    assert len(confirmed) >= 1500
    node.start()
    await check_recovered(node, confirmed, acked)


async def test_kill9_and_restart_on_postgresql(nodes, pg_url):
    node = nodes.router("crash-pg", journal_url=pg_url, extra=_durable_queue_config())
    confirmed, acked = await stream_until_killed(node)
    node.start()
    await check_recovered(node, confirmed, acked)


async def test_journal_as_its_own_process_kill9_both(nodes):
    journal = nodes.journal("journal-svc")
    node = nodes.router("remote-journal", journal_address=journal.endpoint, extra=_durable_queue_config())
    confirmed, acked = await stream_until_killed(node, kill_after_confirms=800)
    journal.kill9()
    journal.start()
    node.start()
    await check_recovered(node, confirmed, acked)


async def test_node_id_is_created_once_and_kept(nodes):
    node = nodes.router("identity")
    first = node.info["node_id"]
    node.stop()
    node.start()
    assert node.info["node_id"] == first
    async with await connect(node.url) as conn:
        info = await conn.admin.node_info()
        assert info.node_id == first and info.epoch == 2


async def test_multicast_and_filtered_subscriptions_recover_in_order(nodes):
    """Messages stored once for two subscriptions and messages stored for one
    (filtered out of the other) interleave in one queue; both come back in order."""
    node = nodes.router("multicast-recovery")
    async with await connect(node.url) as conn:
        s = await conn.session()
        await s.create_consumer(address="prices", subscription="all-prices", shared=True)
        await s.create_consumer(address="prices", subscription="even-prices", shared=True, filter="n / 2 * 2 = n")
        p = await s.create_producer("prices")
        for n in range(1, 41):
            await p.send_async(str(n).encode(), properties={"n": n}, routing_type="multicast")
        await p.send(b"41", properties={"n": 41}, routing_type="multicast")
        await p.send(b"volatile", properties={"n": 0}, durable=False, routing_type="multicast")
    node.kill9()
    node.start()
    async with await connect(node.url) as conn:
        s = await conn.session()
        all_c = await s.create_consumer(address="prices", subscription="all-prices", shared=True)
        even_c = await s.create_consumer(address="prices", subscription="even-prices", shared=True, filter="n / 2 * 2 = n")

        async def drain(c):
            out = []
            while (m := await c.receive(1)) is not None:
                out.append(m.properties["n"])
                m.ack()
            return out

        assert await drain(all_c) == list(range(1, 42))
        assert await drain(even_c) == list(range(2, 41, 2))


async def test_router_halts_when_its_journal_dies_and_recovers_after_restart(nodes):
    journal = nodes.journal("dying-journal")
    node = nodes.router("orphaned", journal_address=journal.endpoint)
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer("halt.q")
        await p.send(b"stored before", routing_type="anycast")
        journal.kill9()
        with pytest.raises(MeshMQError):
            await p.send(b"never confirmed", routing_type="anycast")
    # memory and store no longer agree: the router stops itself rather than go on
    assert node.proc.wait(30) == 3
    assert "cannot write its journal" in node.log_tail()
    journal.start()
    node.start()
    async with await connect(node.url) as conn:
        c = await (await conn.session()).create_consumer("halt.q")
        assert (await c.receive(5)).body == b"stored before"
        assert await c.receive(0.5) is None


async def test_a_second_router_on_the_same_store_fences_the_first(nodes, tmp_path):
    store = f"sqlite:///{tmp_path}/shared.db"
    first = nodes.router("first", journal_url=store)
    second = nodes.router("second", journal_url=store)
    assert first.info["node_id"] == second.info["node_id"]  # the copied-identity case
    async with await connect(first.url) as conn:
        p = await (await conn.session()).create_producer("fence.q")
        with pytest.raises(MeshMQError):
            await p.send(b"from the stale owner", routing_type="anycast")
    assert first.proc.wait(30) == 3
    assert "was fenced" in first.log_tail()
    async with await connect(second.url) as conn:
        s = await conn.session()
        await (await s.create_producer("fence.q")).send(b"from the new owner", routing_type="anycast")
        c = await s.create_consumer("fence.q")
        assert (await c.receive(5)).body == b"from the new owner"
        assert await c.receive(0.5) is None
