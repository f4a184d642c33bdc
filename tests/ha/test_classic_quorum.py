"""Classic replication's quorum as Artemis's own HA examples run it (issue 25):
the vote counts lives, never backups, whatever the static connectors list; a
master frozen while its slave won the vote confirms nothing once resumed; a
live whose backup is merely unreachable goes on confirming within a bound.
Real router processes on loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import Nodes, eventually, free_port

from .test_classic_replication import LINK, SLAVE_GIVING_UP, cluster, count, in_sync, proxies  # noqa: F401  (the fixture)
from .test_shared_store import QUEUE, answers, drain, log_has, node_info, send

pytestmark = pytest.mark.integration

COMMON = f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"
MASTER = "master: {{group-name: {g}, vote-retry-wait: 200, quorum-vote-wait: 2}}"
SLAVE = "slave: {{group-name: {g}, vote-retries: 10, vote-retry-wait: 500, quorum-vote-wait: 2}}"  # as cluster()'s


def symmetric_pairs(nodes: Nodes, pairs: int = 3) -> dict:
    """`pairs` live/backup pairs (live0/backup0 in group g0, ...), every node's
    cluster connection listing every other node, backups included — the
    configuration Artemis's symmetric HA examples use. Messages stay where they
    are sent (message-load-balancing OFF): each pair's store is checked alone."""
    names = [f"{role}{i}" for i in range(pairs) for role in ("live", "backup")]
    ports = {n: free_port() for n in names}
    c: dict = {}
    for name in names:
        others = [o for o in names if o != name]
        group = f"g{name[-1]}"
        policy = (MASTER if name.startswith("live") else SLAVE).format(g=group)
        extra = (f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {ports[name]}}}\n"
                 f"connectors: {{{', '.join(f'{o}: 127.0.0.1:{ports[o]}' for o in others)}}}\n"
                 f"cluster-connections: {{ha: {{static-connectors: [{', '.join(others)}], {LINK}, "
                 "message-load-balancing: 'OFF'}}\n"
                 f"ha-policy:\n  replication:\n    {policy}\n" + COMMON)
        c[name] = nodes.router(name, extra=extra, start=name.startswith("live"))
    for i in range(pairs):  # a backup is ready once it waits passive: start them after the lives
        c[f"backup{i}"].start()
    return c


async def test_three_pairs_listing_every_node_each_backup_takes_over_from_its_own_live_in_turn(nodes):
    """Artemis counts the live servers of the topology: with backups listed in
    every static-connectors, a backup still needs 2 of 3 lives' votes, not 3 of 5."""
    c = symmetric_pairs(nodes)
    for i in range(3):
        await send(c[f"live{i}"], 100 * i, 20)
        await in_sync(c[f"live{i}"], c[f"backup{i}"])
    for i in range(3):
        live, backup = c[f"live{i}"], c[f"backup{i}"]
        node_id = live.info["node_id"]
        await asyncio.to_thread(live.kill9)
        await eventually(lambda b=backup: answers(b), 30, f"backup{i} to take over from live{i}")
        info = await node_info(backup)
        assert info.node_id == node_id
        assert log_has(backup, "lives needed agree") and log_has(backup, "quorum size 3)")
        # Every message confirmed by its live (20, and one more per earlier failover), nothing of another pair's.
        assert await drain(backup, 20 + i) == list(range(100 * i, 100 * i + 20 + i))
        # No other backup activated; every live not yet killed keeps serving.
        for j in range(i + 1, 3):
            assert not await answers(c[f"backup{j}"])
            await send(c[f"live{j}"], 100 * j + 20 + i, 1)
    # The lives killed first still count: the third vote was won with 2 of 3, as the first.
    assert count(c["backup2"], "won (2 of 2 lives needed agree") == 1


@pytest.mark.parametrize("vote_on_failure", [False, True])
async def test_a_master_frozen_while_its_slave_won_the_vote_confirms_nothing_once_resumed(
        nodes, proxies, vote_on_failure):  # noqa: F811
    """M is frozen (SIGSTOP); L2 and L3 stop seeing it and vote S in; S serves.
    M resumed (SIGCONT) finds its stream to S gone, and L2 and L3 refuse its
    stale-copy notice — they voted for that copy: M stops without confirming
    a send, on the connection it had or on a new one."""
    policy = "master: {vote-retry-wait: 200, quorum-vote-wait: 2" + (
        ", vote-on-replication-failure: true}" if vote_on_failure else "}")
    c = cluster(nodes, proxies, master_policy=policy)
    m, s = c["m"], c["s"]
    await send(m, 0, 20)
    await in_sync(m, s)
    conn = await connect(m.url)
    confirmed_after_freeze: list[int] = []

    async def keep_sending(producer, start: int) -> None:
        for n in range(start, start + 1000):
            try:
                await producer.send(b"late", properties={"n": n})
            except Exception:
                return
            confirmed_after_freeze.append(n)

    try:
        producer = await (await conn.session()).create_producer(QUEUE)
        os.kill(m.proc.pid, signal.SIGSTOP)
        try:
            await eventually(lambda: answers(s), 30, "the slave to take over from the frozen master")
            old = asyncio.ensure_future(keep_sending(producer, 1000))  # on its way to the frozen master
        finally:
            os.kill(m.proc.pid, signal.SIGCONT)
        try:  # a new connection, after the resume (the SDK's default URI does not fail over elsewhere)
            async with await connect(m.url) as again:
                await asyncio.wait_for(keep_sending(await (await again.session()).create_producer(QUEUE), 2000), 30)
        except Exception:
            pass  # the master refused the connection, or stopped under it: nothing confirmed either way
        assert await asyncio.to_thread(m.proc.wait, 30) == 3  # it stopped, protecting the store
        await asyncio.wait_for(old, 10)
    finally:
        await conn.close()
    assert m.proc.poll() == 3
    assert confirmed_after_freeze == []
    assert log_has(m, "has taken over this node's store") and log_has(m, "stopping without confirming anything")
    assert log_has(c["l2"], "already voted for that copy")
    assert await drain(s, 30) == list(range(20))  # every message confirmed before the freeze, and only those


async def test_a_live_whose_backup_is_cut_off_goes_on_confirming_within_the_connection_ttl(nodes, proxies):  # noqa: F811
    """S is cut off from every node while M, L2 and L3 see each other: S loses
    every vote, and M confirms again once it gave S up (no acknowledgement for
    connection-ttl, 2 s here) and L2 and L3 took its notice — documented bound:
    connection-ttl plus one notice round (at most quorum-vote-wait)."""
    c = cluster(nodes, proxies, slave_policy=SLAVE_GIVING_UP)
    m, s = c["m"], c["s"]
    await send(m, 0, 10)
    await in_sync(m, s)
    for p in c["proxy"].values():
        p.cut()
    started = time.monotonic()
    await send(m, 10, 10)  # waits for S's acknowledgement, gives S up, then confirms alone
    took = time.monotonic() - started
    # The bound: connection-ttl (2 s) + one notice round (quorum-vote-wait, 2 s); a margin for 2 busy cores.
    assert took < 2.0 + 2.0 + 4.0, took
    assert log_has(m, "hold the lost backup's copy stale")
    await eventually(lambda: log_has(s, "vote-retries (3) exhausted"), 30, "the slave's votes to fail")
    assert not await answers(s)
    assert await drain(m, 20) == list(range(20))
