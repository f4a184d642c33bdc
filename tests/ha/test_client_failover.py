"""Automatic client failover in the SDK (issue 13), driven end to end: a live
and its replicating backup (pluggable quorum on a real etcd) as real router
processes, the live killed with -9 or frozen, and the application's objects
carrying on on the backup. The seed's examples, each as a test."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from meshmq.client import FailoverEventType, connect
from meshmq.errors import ConnectionFailedError, DuplicateIdError, TransactionRolledBackError, UnblockedError
from tests.fixtures.examples import load_example
from tests.fixtures.nodes import eventually

from .test_replication import in_sync, pair, stored_messages
from .test_shared_store import QUEUE, answers, drain, send
from .test_shared_store import node as shared_store_node

pytestmark = pytest.mark.integration

# Retry soon: the backup takes over about two seconds after the kill (session-ms 2000).
FAILOVER = "reconnectAttempts=-1&retryInterval=100&maxRetryInterval=200"


async def in_sync_pair(nodes, etcd) -> tuple:
    """A primary and its backup, in sync."""
    primary, backup = pair(nodes, etcd)
    await in_sync(primary, backup)
    return primary, backup


async def failover_client(url: str, options: str = ""):
    """A connection with automatic failover that knows where the live's backup is."""
    conn = await connect(f"{url}?{FAILOVER}{options}")
    await eventually(lambda: conn._backup_of, 10, "the topology to name the backup")
    return conn


async def leftover(proc) -> list[bytes]:
    """Whatever is still in the queue on `proc`."""
    async with await connect(proc.url) as conn:
        consumer = await (await conn.session()).create_consumer(QUEUE)
        got = []
        while (m := await consumer.receive(1)) is not None:
            got.append(m.body)
            consumer.ack(m)
        return got


async def queue_count(conn) -> int:
    return (await conn.admin.queue(QUEUE)).message_count


async def test_client_ack_consumer_acks_half_the_live_dies_and_the_backup_redelivers_the_rest(nodes, etcd):
    """The seed's non-transacted example: 10 received, 0-4 acknowledged, the live
    killed; acking 5 fails, and 5-9 come again from the backup, on the same consumer."""
    primary, backup = await in_sync_pair(nodes, etcd)
    await send(primary, 0, 10)
    conn = await failover_client(primary.url)
    events: list[FailoverEventType] = []
    conn.add_failover_listener(lambda event, err: events.append(event))
    try:
        session = await conn.session()
        consumer = await session.create_consumer(QUEUE)
        received = [await consumer.receive(5) for _ in range(10)]
        assert [m.properties["n"] for m in received] == list(range(10))
        for m in received[:5]:
            m.ack()
        # In the backup's copy, not only applied by the live: an ack the live has not yet
        # stored and streamed dies with it, and its message comes again.
        await eventually(lambda: stored_messages(backup) == 5, 10, "the first five acks to reach the backup's copy")
        await asyncio.to_thread(primary.kill9)
        await eventually(lambda: FailoverEventType.FAILURE_DETECTED in events, 10, "the failure to be detected")
        with pytest.raises(UnblockedError):
            received[5].ack()
        again = [await consumer.receive(15) for _ in range(5)]
        assert [m.properties["n"] for m in again if m is not None] == [5, 6, 7, 8, 9]
        assert all(m.delivery_count >= 2 for m in again)  # the SDK knows it handed them before
        for m in again:
            m.ack()
        assert await consumer.receive(0.5) is None
        assert events == [FailoverEventType.FAILURE_DETECTED, FailoverEventType.FAILOVER_COMPLETED]
        assert session.server.target == backup.endpoint and session.failovers == 1
        # The topology now comes from the backup, which serves the live's node id.
        await eventually(lambda: [s.target for s in conn.topology] == [backup.endpoint], 15,
                         "the topology to follow the backup")
    finally:
        await conn.close()
    assert await leftover(backup) == []  # the acks after the failover were stored on the backup


async def test_transacted_session_rolled_back_by_failover_resends_with_the_same_ids_and_stores_each_once(nodes, etcd):
    """The seed's transacted example: 5 sent in a transaction, the live killed,
    commit raises TransactionRolledBackError; all 10 sent again with the same
    duplicate ids and committed on the same session: exactly 10 stored."""
    primary, backup = await in_sync_pair(nodes, etcd)
    conn = await failover_client(primary.url)
    try:
        session = await conn.session(transacted=True)
        producer = await session.create_producer(QUEUE)
        for i in range(5):
            await producer.send(b"t", properties={"n": i}, duplicate_id=f"tx-{i}")
        await asyncio.to_thread(primary.kill9)
        with pytest.raises(TransactionRolledBackError):
            await session.commit()
        for i in range(10):
            await producer.send(b"t", properties={"n": i}, duplicate_id=f"tx-{i}")
        await session.commit()
        assert session.server.target == backup.endpoint
    finally:
        await conn.close()
    assert sorted(await drain(backup, 10)) == list(range(10))


async def test_a_commit_in_flight_when_the_live_freezes_is_unblocked_and_the_retry_stores_each_message_once(
    nodes, etcd
):
    """The live is frozen (SIGSTOP: no socket closes) while commit() waits for its answer: the
    client notices the silence (clientFailureCheckPeriod), fails over to the backup that took
    over, and the commit raises TransactionRolledBackError; the retry with the same ids stores
    every message once (a message committed before the freeze is refused as a duplicate)."""
    primary, backup = await in_sync_pair(nodes, etcd)
    conn = await failover_client(primary.url, "&clientFailureCheckPeriod=1000&connectionTTL=2000")
    try:
        session = await conn.session(transacted=True)
        producer = await session.create_producer(QUEUE)
        for i in range(3):
            await producer.send(b"t", properties={"n": i}, duplicate_id=f"c-{i}")
        await session.commit()  # 0-2 committed before the freeze
        for i in range(3, 6):
            await producer.send(b"t", properties={"n": i}, duplicate_id=f"c-{i}")
        os.kill(primary.proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(TransactionRolledBackError):
                await asyncio.wait_for(session.commit(), 30)
            stored_before = []
            for i in range(6):  # the whole work again, the committed part included
                try:
                    await producer.send(b"t", properties={"n": i}, duplicate_id=f"c-{i}")
                except DuplicateIdError:
                    stored_before.append(i)  # committed before the freeze: refused, not stored twice
            assert stored_before == [0, 1, 2]
            await session.commit()
        finally:
            primary.kill9()
    finally:
        await conn.close()
    assert sorted(await drain(backup, 6)) == list(range(6))


async def test_without_reconnect_attempts_the_application_gets_the_failure_and_no_failover(nodes, etcd):
    """reconnectAttempts=0 (the default): the session fails with ConnectionFailedError,
    its exception listener hears it, and no failover event is raised."""
    primary, backup = await in_sync_pair(nodes, etcd)
    conn = await connect(primary.url)
    events, heard = [], []
    conn.add_failover_listener(lambda event, err: events.append(event))
    try:
        session = await conn.session()
        session.exception_listener = heard.append
        consumer = await session.create_consumer(QUEUE)
        await asyncio.to_thread(primary.kill9)
        with pytest.raises(ConnectionFailedError):
            await consumer.receive(10)
        assert heard and isinstance(heard[0], ConnectionFailedError)
        assert events == []
    finally:
        await conn.close()


@pytest.mark.parametrize("idempotent", [False, True], ids=["duplicate-ids", "idempotent-producer"])
async def test_a_producer_and_a_consumer_at_5000_msgs_through_a_kill_9_lose_nothing_and_store_nothing_twice(
    nodes, etcd, idempotent
):
    """A producer paced at 5,000 msg/s through a kill -9 of the live: with duplicate ids it
    resends what the failover unblocked; as an idempotent producer it has nothing to do (the
    SDK sends again, the router drops what it had). A consumer acknowledges as it goes. Every
    confirmed message reaches the consumer, none is stored twice, and what the consumer saw
    twice is only what had been delivered to it before the failover (acks in flight are
    lost, as the seed says)."""
    primary, backup = await in_sync_pair(nodes, etcd)
    confirmed: set[str] = set()
    seen: dict[str, int] = {}
    before_failover: set[str] = set()
    stop = asyncio.Event()
    conn = await failover_client(primary.url)

    producers = []
    produced = asyncio.Event()
    deadline = float("inf")

    async def produce() -> int:
        session = await conn.session()
        producer = await session.create_producer(QUEUE, idempotent=idempotent)
        producers.append(producer)
        loop = asyncio.get_running_loop()
        start, i, resent = loop.time(), 0, 0
        while not stop.is_set():
            batch = []
            for _ in range(50):
                body = f"m-{i}"
                dup = "" if idempotent else body
                batch.append((body, await producer.send_async(body.encode(), duplicate_id=dup)))
                i += 1
            for body, fut in batch:
                while True:
                    try:
                        await fut
                        break
                    except DuplicateIdError:
                        break  # stored before the failure cut its confirm off
                    except UnblockedError:
                        assert not idempotent, "an idempotent producer sends again by itself"
                        resent += 1
                        fut = await producer.send_async(body.encode(), duplicate_id=body)
                confirmed.add(body)
            await asyncio.sleep(max(0.0, start + i / 5000 - loop.time()))
        await session.close()
        return producer.resent if idempotent else resent

    async def consume() -> None:
        session = await conn.session()
        consumer = await session.create_consumer(QUEUE)
        loop = asyncio.get_running_loop()
        while not (produced.is_set() and confirmed <= seen.keys()):
            m = await consumer.receive(1)
            if m is None:
                if produced.is_set() and loop.time() > deadline:
                    return  # nothing more is coming: the assertions below say what is missing
                continue
            key = m.body.decode()
            seen[key] = seen.get(key, 0) + 1
            if session.failovers == 0:
                before_failover.add(key)
            try:
                m.ack()
            except UnblockedError:
                pass  # delivered before the failover: it comes again

    tasks = [asyncio.create_task(produce()), asyncio.create_task(consume())]
    try:
        await eventually(lambda: len(confirmed) >= 5000, 30, "5,000 confirmed before the kill")
        # Frozen first, then one more send: it is surely in flight when the kill cuts it off.
        os.kill(primary.proc.pid, signal.SIGSTOP)
        probe = await producers[0].send_async(b"probe", duplicate_id="" if idempotent else "probe")
        await asyncio.to_thread(primary.kill9)
        try:
            await asyncio.wait_for(probe, 30)
            probe_unblocked = False
        except UnblockedError:
            probe_unblocked = True
            await producers[0].send(b"probe", duplicate_id="probe")  # stored once, whatever happened
        confirmed.add("probe")
        await eventually(lambda: answers(backup), 30, "the backup to take over")
        after = len(confirmed)
        await eventually(lambda: len(confirmed) >= after + 5000, 30, "5,000 more confirmed on the backup")
    finally:
        stop.set()
        resent = await asyncio.wait_for(tasks[0], 60)
        deadline = asyncio.get_running_loop().time() + 30
        produced.set()  # `confirmed` is final: the consumer goes on until it has seen all of it
        await asyncio.wait_for(tasks[1], 60)
        await conn.close()
    left = [b.decode() for b in await leftover(backup)]
    missing = confirmed - seen.keys()
    assert not missing, f"{len(missing)} confirmed never consumed, {len(missing & set(left))} of them still queued"
    # The kill cut the probe's confirm off: the application resent it, or the SDK did by itself.
    assert (producers[0].resent > 0 and not probe_unblocked) if idempotent else probe_unblocked
    twice = {k for k, n in seen.items() if n > 1}
    assert twice <= before_failover  # seen again only when delivered before the failover
    assert left == []  # and nothing left over: nothing stored twice


async def test_the_once_and_only_once_example_stores_every_message_once_through_a_kill_9(nodes, etcd):
    primary, backup = await in_sync_pair(nodes, etcd)
    recipe = load_example("transaction_failover")
    run = asyncio.create_task(recipe.main(f"{primary.url}?{FAILOVER}", QUEUE, 400, 5))
    async with await connect(primary.url) as watcher:
        async def some_committed() -> bool:
            return await queue_count(watcher) >= 100

        await eventually(some_committed, 30, "100 messages committed")
    await asyncio.to_thread(primary.kill9)
    await asyncio.wait_for(run, 60)
    got = await leftover(backup)
    assert sorted(got) == sorted(f"message {i}".encode() for i in range(400))


async def test_on_a_shared_store_the_session_moves_to_the_backup_that_took_the_lease(nodes, pg_url):
    """The same through shared store on PostgreSQL: the backup takes the lease after
    the live's kill -9; the consumer gets its unacknowledged message again there, and an
    idempotent producer's unconfirmed sends land once."""
    live = shared_store_node(nodes, "live", pg_url, "master")
    backup = shared_store_node(nodes, "backup", pg_url, "slave")
    conn = await failover_client(live.url)
    try:
        session = await conn.session()
        producer = await session.create_producer(QUEUE, idempotent=True)
        consumer = await session.create_consumer(QUEUE)
        await producer.send(b"first")
        assert (await consumer.receive(5)).body == b"first"  # not acknowledged
        sent = [await producer.send_async(f"n{i}".encode()) for i in range(200)]
        await asyncio.to_thread(live.kill9)
        await asyncio.wait_for(asyncio.gather(*sent), 30)  # every one confirmed, by one node or the other
        got = []
        while (m := await consumer.receive(3)) is not None:
            got.append(m.body)
            m.ack()
        assert session.server.target == backup.endpoint
        assert sorted(got) == sorted([b"first"] + [f"n{i}".encode() for i in range(200)])
    finally:
        await conn.close()


async def test_a_connections_temporary_queue_is_made_again_on_the_backup_and_replies_reach_it(nodes, etcd):
    """A requester's temporary queue (not stored, so not replicated) on the
    live; kill -9 of the live: the sessions that held it (the connection's
    anchor and the consuming session) ask the backup for it again before
    their consumers are made there, so a reply sent to the backup reaches the
    same consumer; when the connection closes it goes on the backup too."""
    primary, backup = await in_sync_pair(nodes, etcd)
    conn = await failover_client(primary.url)
    try:
        tq = await conn.create_temporary_queue()
        session = await conn.session()
        replies = await session.create_consumer(tq)
        await (await (await conn.session()).create_producer(tq.name)).send(b"before", durable=False)
        m = await replies.receive(5)
        assert m is not None and m.body == b"before"
        m.ack()
        await asyncio.to_thread(primary.kill9)
        await eventually(lambda: session.server.target == backup.endpoint and session._ready.is_set(), 30,
                         "the consuming session to fail over to the backup")
        await eventually(lambda: conn._anchor.server.target == backup.endpoint and conn._anchor._ready.is_set(), 30,
                         "the connection's anchor session to fail over to the backup")
        async with await connect(backup.url) as responder:
            info = await responder.admin.queue(tq.name)
            assert info is not None and info.temporary and info.consumer_count == 1
            await (await (await responder.session()).create_producer(tq.name)).send(b"after", durable=False)
        m = await replies.receive(10)
        assert m is not None and m.body == b"after"
        m.ack()
    finally:
        await conn.close()
    async with await connect(backup.url) as check:
        async def gone() -> bool:
            return await check.admin.queue(tq.name) is None
        await eventually(gone, 10, "the temporary queue to go with its connection")
