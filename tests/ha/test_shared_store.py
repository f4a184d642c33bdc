"""Shared store on SQL (issue 12): a live and its backup share one PostgreSQL
store; whoever holds the lease serves it, and the journal's epoch fences the
other. Real router processes and a real PostgreSQL; every node on a loopback
port picked at run time (a backup listens only once active)."""

from __future__ import annotations

import asyncio
import os
import signal

import grpc
import pytest

from meshmq.client import NotActiveError, connect
from meshmq.errors import MeshMQError, from_rpc_error
from meshmq.transport import open_channel
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import management_pb2_grpc as mggrpc
from tests.fixtures.nodes import Nodes, eventually, free_port

pytestmark = pytest.mark.integration

QUEUE = "orders"
# Short lease times, so that a failover takes about two seconds (docs/ha.md),
# with room for a loaded CI machine: a live stalled past the expiration
# would lose its store.
LEASE = "  jdbc-lock-renew-period: 250\n  jdbc-lock-expiration: 1500\n"


def node(nodes: Nodes, name: str, pg_url: str, role: str, policy: str = "", start: bool = True, extra: str = ""):
    port = free_port()
    extra = extra + (f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}\n"
             f"journal:\n  url: {pg_url}\n{LEASE}"
             f"ha-policy:\n  shared-store:\n    {role}: {{{policy}}}\n"
             f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n")
    return nodes.router(name, extra=extra, start=start)


async def send(proc, start: int, count: int) -> None:
    async with await connect(proc.url) as conn:
        producer = await (await conn.session()).create_producer(QUEUE)
        await asyncio.gather(*[await producer.send_async(b"o", properties={"n": i}) for i in range(start, start + count)])


async def drain(proc, count: int) -> list[int]:
    async with await connect(proc.url) as conn:
        consumer = await (await conn.session()).create_consumer(QUEUE)
        got = []
        while (m := await consumer.receive(2)) is not None:
            got.append(int(m.properties["n"]))
            consumer.ack(m)
        return got


async def node_info(proc):
    """GetNodeInfo from this very node (no redirect followed): its NodeInfo, or the error it answered."""
    channel = open_channel(proc.endpoint)
    try:
        return await mggrpc.ManagementStub(channel).GetNodeInfo(mgpb.GetNodeInfoRequest(), timeout=2)
    except grpc.RpcError as exc:
        return from_rpc_error(exc)
    except MeshMQError as exc:
        return exc
    finally:
        await channel.close()


async def answers(proc) -> bool:
    """The node itself serves (a passive backup answers NOT_ACTIVE)."""
    return not isinstance(await node_info(proc), Exception)


def log_has(proc, text: str) -> bool:
    return text in proc.log_path.read_text()


async def test_kill_9_of_the_live_the_backup_takes_over_with_every_confirmed_message(nodes, pg_url):
    live = node(nodes, "live", pg_url, "master")
    backup = node(nodes, "backup", pg_url, "slave")
    assert live.info["active"] and not backup.info["active"]

    async def says_where_the_live_is():  # passive: it answers, but only to say where the live is
        refused = await node_info(backup)
        assert isinstance(refused, NotActiveError), refused
        return refused if refused.live == live.endpoint else None  # once it has looked at the lease
    refused = await eventually(says_where_the_live_is, 10, "the backup to name the live")
    assert "node backup is a passive backup waiting for its store" in str(refused)
    async with await connect(backup.url) as conn:  # the SDK follows it there
        assert (await conn.admin.node_info()).name == "live"
    await send(live, 0, 300)
    live_id = live.info["node_id"]
    await asyncio.to_thread(live.kill9)
    await eventually(lambda: answers(backup), 20, "the backup to take over")
    async with await connect(backup.url) as conn:
        info = await conn.admin.node_info()
    assert info.node_id == live_id  # the same node, served by another process
    assert (info.ha_policy, info.epoch) == ("shared-store slave", 2)  # activated at a newer epoch
    assert await drain(backup, 300) == list(range(300))
    assert log_has(backup, "holds the lease; activating")


async def test_a_frozen_live_that_resumes_after_the_takeover_cannot_commit_and_halts(nodes, pg_url):
    live = node(nodes, "live", pg_url, "master")
    backup = node(nodes, "backup", pg_url, "slave")
    await send(live, 0, 10)
    # A session opened before the freeze; its send arrives at the live after it resumes.
    conn = await connect(live.url)
    try:
        producer = await (await conn.session()).create_producer(QUEUE)
        os.kill(live.proc.pid, signal.SIGSTOP)
        try:
            await eventually(lambda: answers(backup), 20, "the backup to take over from the frozen live")
            late = asyncio.ensure_future(producer.send(b"late", properties={"n": 99}))
            await asyncio.sleep(0.2)  # the send is on its way to the frozen live
        finally:
            os.kill(live.proc.pid, signal.SIGCONT)
        with pytest.raises(Exception):
            await asyncio.wait_for(late, 20)  # never confirmed
    finally:
        await conn.close()
    assert await asyncio.to_thread(live.proc.wait, 20) == 3  # halted, protecting the store
    said = live.log_path.read_text()
    assert "refused" in said or "another node holds the lease" in said
    assert await drain(backup, 11) == list(range(10))  # the late message was not stored


@pytest.mark.parametrize("failover_on_shutdown", [False, True])
async def test_a_normal_stop_of_the_live_fails_over_only_with_failover_on_shutdown(nodes, pg_url, failover_on_shutdown):
    live = node(nodes, "live", pg_url, "master", f"failover-on-shutdown: {str(failover_on_shutdown).lower()}")
    backup = node(nodes, "backup", pg_url, "slave")
    await send(live, 0, 5)
    assert await asyncio.to_thread(live.stop) == 0
    if failover_on_shutdown:
        await eventually(lambda: answers(backup), 20, "the backup to take over after the live's normal stop")
        assert await drain(backup, 5) == list(range(5))
    else:
        await eventually(lambda: log_has(live, "lease released (paused)"), 5, "the live to pause the lease")
        # The backup polls every 250 ms: eight polls see the paused lease and stay passive.
        await asyncio.sleep(2.0)
        assert not await answers(backup)
        restarted = await asyncio.to_thread(live.start)  # the live takes its store back
        assert await drain(restarted, 5) == list(range(5))


async def test_the_restarted_live_fails_back_and_the_backup_waits_again(nodes, pg_url):
    live = node(nodes, "live", pg_url, "master")
    backup = node(nodes, "backup", pg_url, "slave")  # allow-failback and restart-backup: true (defaults)
    await send(live, 0, 5)
    await asyncio.to_thread(live.kill9)
    await eventually(lambda: answers(backup), 20, "the backup to take over")
    await send(backup, 5, 5)
    await asyncio.to_thread(live.start)  # waits (wait-for-activation) until the backup gave the store back
    assert live.info["active"]
    assert log_has(backup, "asks for its store back (allow-failback)")
    await eventually(lambda: log_has(backup, "waiting as backup"), 10, "the backup to wait again")
    assert backup.proc.poll() is None and not await answers(backup)
    assert await drain(live, 10) == list(range(10))
    assert live.info["epoch"] > 0


def test_shared_store_on_sqlite_is_refused_with_the_reason(nodes):
    proc = nodes.router("sqlite", extra="ha-policy:\n  shared-store:\n    master: {}\n", start=False)
    with pytest.raises(RuntimeError, match="exited with 2") as err:
        proc.start()
    assert "journal.url: ha-policy shared-store needs a PostgreSQL store" in str(err.value)


async def test_wait_for_activation_false_reports_a_passive_start_at_once(nodes, pg_url):
    first = node(nodes, "first", pg_url, "master")
    second = node(nodes, "second", pg_url, "master", "wait-for-activation: false")  # returns while the first serves
    assert (first.info["active"], second.info["active"]) == (True, False)
    assert not await answers(second)
    await send(first, 0, 3)
    await asyncio.to_thread(first.kill9)
    await eventually(lambda: answers(second), 20, "the second master to take the store")
    assert await drain(second, 3) == [0, 1, 2]


async def test_the_live_names_its_waiting_backup_in_the_topology_clients_get(nodes, pg_url):
    live = node(nodes, "live", pg_url, "master")
    channel = open_channel(live.endpoint)
    stub = mggrpc.ManagementStub(channel)

    async def named(expected: str) -> bool:
        """The backup connector of the live's entry in the topology it pushes to clients."""
        async for topology in stub.WatchTopology(mgpb.WatchTopologyRequest(), timeout=2):
            return topology.members[0].backup_connector == expected
        return False
    try:
        assert await named("")  # alone
        backup = node(nodes, "backup", pg_url, "slave")
        await eventually(lambda: named(backup.endpoint), 10, "the live to name its backup")
        await asyncio.to_thread(backup.stop)
        # A backup is named while seen within jdbc-lock-expiration (1.5 s here).
        await eventually(lambda: named(""), 10, "the live to stop naming the stopped backup")
    finally:
        await channel.close()
    assert log_has(live, f"backup at {backup.endpoint} waits to take over this node's store")
    assert log_has(live, "no backup waits to take over this node's store any more")


async def test_kill_9_of_the_live_while_it_fails_back_leaves_the_store_to_the_backup(nodes, pg_url):
    """The restarted live asks for its store back and dies mid-way (before or
    just after it took the lease): the reservation lapses and the backup
    serves again, with every confirmed message."""
    live = node(nodes, "live", pg_url, "master", start=False)
    backup = node(nodes, "backup", pg_url, "slave")
    await eventually(lambda: answers(backup), 20, "the backup to take the free store")
    await send(backup, 0, 50)
    live.ready_path.unlink(missing_ok=True)
    # Started in the background: its start-up waits until the backup gave the store up.
    starting = asyncio.ensure_future(asyncio.to_thread(live.start))
    try:
        await eventually(lambda: log_has(backup, "asks for its store back (allow-failback)"), 20,
                         "the live to ask for its store")
    finally:
        os.kill(live.proc.pid, signal.SIGKILL)  # the request is made: kill it wherever it is in taking over
        try:
            await starting
        except RuntimeError:
            pass  # it died before reporting ready (the backup takes ~2 s to stop serving)
    await eventually(lambda: answers(backup), 30, "the backup to serve again")
    assert await drain(backup, 50) == list(range(50))


async def test_the_database_goes_away_the_live_stops_serving_and_the_backup_takes_over_when_it_is_back(nodes):
    """A private PostgreSQL, stopped under the pair: the live cannot renew its
    lease for jdbc-lock-expiration and halts (a backup may hold the store by
    then); once the database is back the backup takes the lapsed lease, with
    every message confirmed before the outage."""
    from tests.fixtures.postgres import _PrivateServer

    pg = _PrivateServer()
    await asyncio.to_thread(pg.start)
    try:
        live = node(nodes, "live", pg.url, "master")
        backup = node(nodes, "backup", pg.url, "slave")
        await send(live, 0, 20)
        port = pg.port
        await asyncio.to_thread(pg.stop)
        assert await asyncio.to_thread(live.proc.wait, 30) == 3
        assert log_has(live, "the lease was not renewed for")
        await eventually(lambda: log_has(backup, "cannot reach the lease"), 10, "the backup to miss the database")
        assert not await answers(backup)
        assert await asyncio.to_thread(pg._start_on, port)
        await eventually(lambda: answers(backup), 30, "the backup to take over once the database is back")
        assert await drain(backup, 20) == list(range(20))
    finally:
        await asyncio.to_thread(pg.cleanup)


async def test_with_security_a_passive_backup_tells_only_a_user_where_the_live_is(nodes, pg_url):
    secured = "security-enabled: true\nusers: [{username: app, password: app-pw}]\n"
    live = node(nodes, "live", pg_url, "master", extra=secured)
    backup = node(nodes, "backup", pg_url, "slave", extra=secured)
    channel = open_channel(backup.endpoint)
    stub = mggrpc.ManagementStub(channel)

    async def refusal(metadata=()) -> NotActiveError:
        with pytest.raises(grpc.RpcError) as err:
            await stub.GetNodeInfo(mgpb.GetNodeInfoRequest(), metadata=metadata, timeout=2)
        return from_rpc_error(err.value)
    try:
        user = (("x-meshmq-username", "app"), ("x-meshmq-password", "app-pw"))
        await eventually(lambda: _live_named(refusal(user), live.endpoint), 10, "the backup to name the live to a user")
        stranger = await refusal()
        assert isinstance(stranger, NotActiveError) and stranger.live == ""
        wrong = await refusal((("x-meshmq-username", "app"), ("x-meshmq-password", "guess")))
        assert isinstance(wrong, NotActiveError) and wrong.live == ""
    finally:
        await channel.close()


async def _live_named(refusal, endpoint: str) -> bool:
    err = await refusal
    return isinstance(err, NotActiveError) and err.live == endpoint


async def test_a_backup_on_port_0_waits_again_on_the_same_port_after_failing_back(nodes, pg_url):
    """Port 0 is picked once: the endpoint a backup reported stays its own
    through failback and restart-backup (the launcher records it)."""
    live = node(nodes, "live", pg_url, "master", start=False)
    backup = nodes.router("backup", extra=(
        "acceptors:\n  - {name: grpc, host: 127.0.0.1, port: 0}\n"
        f"journal:\n  url: {pg_url}\n{LEASE}"
        "ha-policy:\n  shared-store:\n    slave: {}\n"))
    await eventually(lambda: answers(backup), 20, "the backup to take the free store")
    await asyncio.to_thread(live.start)  # fails back
    await eventually(lambda: log_has(backup, "waiting as backup"), 20, "the backup to wait again")
    refused = await node_info(backup)  # on the endpoint it reported at its start
    assert isinstance(refused, NotActiveError), refused


async def test_a_backup_with_scale_down_moves_the_store_to_another_live_when_it_takes_over(nodes, pg_url):
    """Artemis's "Scale Down and Backups": instead of serving, the backup that took the
    store over sends every message to another live at once and stops; the store is left
    (empty) for its live, which a restart takes back."""
    other_port = free_port()
    other = nodes.router("other", extra=(f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {other_port}}}\n"
                                         f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"))
    live = node(nodes, "live", pg_url, "master")
    backup = node(nodes, "backup", pg_url, "slave", "scale-down: {connectors: [other]}",
                  extra=f"connectors:\n  other: 127.0.0.1:{other_port}\n")
    await send(live, 0, 200)
    await asyncio.to_thread(live.kill9)
    exited = await asyncio.to_thread(backup.proc.wait, 60)
    assert exited == 0, backup.log_tail()
    assert log_has(backup, "scaled down 200 messages to")
    assert await drain(other, 200) == list(range(200))  # every confirmed message, in order
    await asyncio.to_thread(live.start)  # the live takes its (now empty) store back
    assert await drain(live, 0) == []


async def test_a_backup_whose_scale_down_finds_no_node_serves_the_store_itself(nodes, pg_url):
    live = node(nodes, "live", pg_url, "master")
    backup = node(nodes, "backup", pg_url, "slave", "scale-down: {connectors: [nobody]}",
                  extra=f"connectors:\n  nobody: 127.0.0.1:{free_port()}\n")
    await send(live, 0, 50)
    await asyncio.to_thread(live.kill9)
    await eventually(lambda: log_has(backup, "Serving the store instead"), 30, "the scale-down to fail")
    assert await drain(backup, 50) == list(range(50))
