"""Classic replication (ha-policy replication master/slave, issue 12): no lock
anywhere; a slave that loses its master takes over only when a quorum of the
cluster's lives no longer sees the master. Real router processes, and TCP
proxies that cut the network between two of them while both stay up.

The cluster: master M and two more lives L2 and L3 linked to each other by a
cluster connection; the slave S reaches each of the three through a proxy of
its own, so cutting those proxies isolates S and nothing else."""

from __future__ import annotations

import asyncio
import time

import pytest

from meshmq.client import connect
from meshmq.errors import MeshMQError
from tests.fixtures.nodes import Nodes, eventually, free_port
from tests.fixtures.tcp_proxy import TcpProxy

from .test_replication import kill_9_under_load
from .test_shared_store import QUEUE, answers, drain, log_has, node_info, send

pytestmark = pytest.mark.integration

# Links that notice a silent peer within 2 s (defaults: 30 s / 60 s).
LINK = "check-period: 500, connection-ttl: 2000, retry-interval: 200, max-retry-interval: 500"
COMMON = f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"
# A slave's vote rounds. It votes the moment its stream breaks, often before the lives have
# dropped the master from what they see (their link breaks as fast, but a loaded machine may
# answer the vote first): a slave that should take over votes for up to ~5 s; one whose votes
# must fail (the tests that watch it give up) gives up after 3 quick rounds.
SLAVE = "slave: {vote-retries: 10, vote-retry-wait: 500, quorum-vote-wait: 2}"
SLAVE_GIVING_UP = "slave: {vote-retries: 3, vote-retry-wait: 300, quorum-vote-wait: 2}"


@pytest.fixture
def proxies():
    made: list[TcpProxy] = []

    def make(target: str) -> TcpProxy:
        made.append(TcpProxy(target).start())
        return made[-1]

    yield make
    for p in made:
        p.close()


def router(nodes: Nodes, name: str, port: int, connectors: dict[str, str], policy: str = "", start: bool = True):
    names = ", ".join(connectors)
    extra = (f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}\n"
             f"connectors: {{{', '.join(f'{k}: {v!r}' for k, v in connectors.items())}}}\n"
             f"cluster-connections: {{ha: {{static-connectors: [{names}], {LINK}}}}}\n" + COMMON)
    if policy:
        extra += f"ha-policy:\n  replication:\n    {policy}\n"
    return nodes.router(name, extra=extra, start=start)


def cluster(nodes: Nodes, proxies, *, master_policy: str = "master: {vote-retry-wait: 200, quorum-vote-wait: 2}",
            slave_policy: str = SLAVE,
            master_behind_proxies: bool = False, start_slave: bool = True) -> dict:
    """M, L2, L3 linked to each other, and S reaching each of them through a
    proxy of its own (`proxy`). With `master_behind_proxies`, the links
    between M and L2/L3 pass through proxies too (`cut_master`)."""
    ports = {n: free_port() for n in ("m", "l2", "l3", "s")}
    ep = {n: f"127.0.0.1:{p}" for n, p in ports.items()}
    c: dict = {"proxy": {n: proxies(ep[n]) for n in ("m", "l2", "l3")}, "cut_master": []}

    def path(target: str) -> str:
        if not master_behind_proxies:
            return ep[target]
        c["cut_master"].append(proxies(ep[target]))
        return c["cut_master"][-1].endpoint

    c["m"] = router(nodes, "m", ports["m"], {"l2": path("l2"), "l3": path("l3")}, master_policy)
    c["l2"] = router(nodes, "l2", ports["l2"], {"m": path("m"), "l3": ep["l3"]})
    c["l3"] = router(nodes, "l3", ports["l3"], {"m": path("m"), "l2": ep["l2"]})
    to = c["proxy"]
    c["s"] = router(nodes, "s", ports["s"], {"m": to["m"].endpoint, "l2": to["l2"].endpoint,
                                              "l3": to["l3"].endpoint}, slave_policy, start=start_slave)
    return c


async def slave_serving_20(m, s) -> None:
    """10 messages sent to M and copied to S; M killed, S serving, 10 more confirmed by S alone."""
    await send(m, 0, 10)
    await in_sync(m, s)
    await asyncio.to_thread(m.kill9)
    await eventually(lambda: answers(s), 30, "the slave to take over")
    await send(s, 10, 10)


async def _backup_named(live, endpoint: str) -> bool:
    info = await node_info(live)
    return (info.ha_policy, info.backup_connector) == ("replication master", endpoint)


def count(proc, text: str) -> int:
    """Occurrences in the node's log (which spans its restarts)."""
    return proc.log_path.read_text().count(text)


def syncs(master) -> int:
    """How many times a slave became in sync with `master`."""
    return count(master, "is in sync (it may take over")


async def in_sync(master, slave, after: int = 0) -> None:
    await eventually(lambda: syncs(master) > after, 20, "the slave to be in sync")


async def test_kill_9_of_the_master_the_slave_wins_the_vote_and_takes_over_with_every_confirmed_message(
        nodes, proxies):
    c = cluster(nodes, proxies)
    m, s = c["m"], c["s"]
    await send(m, 0, 100)
    await in_sync(m, s)
    await send(m, 100, 100)
    assert not await answers(s)
    # The management API shows the pairing: the master names its in-sync slave.
    await eventually(lambda: _backup_named(m, s.endpoint), 10, "the master to name its slave")
    node_id = m.info["node_id"]
    await asyncio.to_thread(m.kill9)
    await eventually(lambda: answers(s), 30, "the slave to take over")
    info = await node_info(s)
    assert (info.node_id, info.ha_policy) == (node_id, "replication slave")
    assert info.epoch > m.info["epoch"]
    assert await drain(s, 200) == list(range(200))
    assert log_has(s, "won (2 of 2 lives needed agree")  # L2 and L3 no longer saw M
    assert log_has(c["l2"], "voted for it") and log_has(c["l3"], "voted for it")
    # M restarted with its stale journal does not serve it beside S: it asks the lives and stops.
    with pytest.raises(RuntimeError, match="exited with 3"):
        await asyncio.to_thread(m.start)
    assert log_has(m, f"is served at {s.endpoint}") and log_has(m, "Set check-for-live-server: true to fail back")
    assert await drain(s, 1) == []  # S still serves (everything was drained above)


async def test_replication_cut_while_the_others_see_the_master_the_slave_does_not_take_over(nodes, proxies):
    c = cluster(nodes, proxies, slave_policy=SLAVE_GIVING_UP)
    m, s = c["m"], c["s"]
    await send(m, 0, 10)
    await in_sync(m, s)
    c["proxy"]["m"].cut()  # only the stream between M and S
    # S votes; L2 and L3 still see M and vote against, every round.
    await eventually(lambda: log_has(s, "vote-retries (3) exhausted"), 30, "the slave's votes to fail")
    assert count(s, "quorum vote") >= 3 and not log_has(s, "taking over")
    assert log_has(c["l2"], "voted against (the live is seen at") and log_has(c["l3"], "voted against")
    assert not await answers(s)
    # M goes on alone, once the lives hold S's copy stale.
    await send(m, 10, 10)
    assert log_has(m, "hold the lost backup's copy stale")
    # The network heals: S copies M again, and can take over again.
    before = syncs(m)
    c["proxy"]["m"].heal()
    await in_sync(m, s, after=before)
    await asyncio.to_thread(m.kill9)
    await eventually(lambda: answers(s), 30, "the slave to take over")
    assert await drain(s, 20) == list(range(20))


async def test_a_copy_the_master_went_on_without_never_wins_even_once_the_master_is_gone(nodes, proxies):
    """Beyond Artemis: S is cut off from M, M confirms messages S does not have,
    then M dies. L2 and L3 no longer see M, but M told them S's copy is stale:
    S does not take over with a copy that lacks confirmed messages."""
    c = cluster(nodes, proxies, slave_policy="slave: {vote-retries: 3, vote-retry-wait: 3000, quorum-vote-wait: 2}")
    m, s = c["m"], c["s"]
    await send(m, 0, 10)
    await in_sync(m, s)
    c["proxy"]["m"].cut()
    await eventually(lambda: log_has(s, "quorum vote 1/3 lost"), 20, "the slave's first vote to fail")
    await send(m, 10, 10)  # confirmed by M alone: S's copy misses these
    assert log_has(m, "hold the lost backup's copy stale")
    await asyncio.to_thread(m.kill9)
    await eventually(lambda: log_has(s, "vote-retries (3) exhausted"), 30, "the slave's votes to fail")
    assert not await answers(s) and not log_has(s, "taking over")
    assert log_has(c["l2"], "voted against (its live declared that copy stale)")
    # M comes back with every message it confirmed; S copies it again.
    before = syncs(m)
    c["proxy"]["m"].heal()
    await asyncio.to_thread(m.start)
    await in_sync(m, s, after=before)
    assert await drain(m, 20) == list(range(20))


async def test_an_isolated_slave_stays_passive(nodes, proxies):
    c = cluster(nodes, proxies, slave_policy=SLAVE_GIVING_UP)
    m, s = c["m"], c["s"]
    await send(m, 0, 10)
    await in_sync(m, s)
    for p in c["proxy"].values():
        p.cut()
    await eventually(lambda: log_has(s, "vote-retries (3) exhausted"), 30, "the slave's votes to fail")
    # Not one vote for it in any round. A live may still answer "against": S
    # learned L2's and L3's own addresses from M's topology, and until its
    # first probe through a proxy answered (2 s, slow under load) it asks
    # those too, past the cut proxies.
    assert count(s, "lost: 0 of") == 3 and not log_has(s, "taking over")
    assert not await answers(s)
    await send(m, 10, 10)  # M goes on: L2 and L3 took its notice
    for p in c["proxy"].values():
        p.heal()
    before = syncs(m)
    await in_sync(m, s, after=before)
    assert await drain(m, 20) == list(range(20))


async def test_a_master_left_alone_stops_at_once_and_keeps_the_write_it_could_not_confirm(nodes, proxies):
    """The whole cluster shut down with the master last: its slave gone, no
    live is left to take the notice that the slave's copy is stale, so a write
    cannot be confirmed. Stopping does not wait for that notice: the master
    stops within its grace, the write unconfirmed and kept in its store."""
    c = cluster(nodes, proxies)
    m, s = c["m"], c["s"]
    # M's links to L2 and L3 are up (their store-and-forward queues are written): no write
    # of M's after S stops may reach the lives before they stop too.
    await eventually(lambda: count(m, "cluster connection ha: linked to") >= 2, 20, "M's links to L2 and L3")
    await send(m, 0, 10)
    await in_sync(m, s)
    for other in (s, c["l3"], c["l2"]):
        assert await asyncio.to_thread(other.stop) == 0
    sending = asyncio.create_task(send(m, 10, 1))
    await eventually(lambda: log_has(m, "took the notice that the lost backup's copy is stale"), 20,
                     "the master's write to wait for the notice")
    started = time.monotonic()
    assert await asyncio.to_thread(m.stop) == 0
    assert time.monotonic() - started < 10  # (it waited out the test's 15 s stop timeout before)
    assert log_has(m, "stops with a write it could not confirm")
    with pytest.raises(MeshMQError):
        await asyncio.wait_for(sending, 10)
    await asyncio.to_thread(m.start)  # alone again: a master starts active
    assert await drain(m, 11) == list(range(11))


async def test_a_master_cut_off_from_the_cluster_with_vote_on_replication_failure_stops_and_its_slave_takes_over(
        nodes, proxies):
    """M reaches L2 and L3, and they reach M, only through proxies: cutting
    them and S's path to M isolates M. M confirms nothing alone (no live takes
    its notice), loses the vote to stay live and stops; L2 and L3 no longer
    see M and S takes over with every confirmed message."""
    c = cluster(nodes, proxies, master_behind_proxies=True,
                master_policy="master: {vote-on-replication-failure: true, vote-retry-wait: 200, quorum-vote-wait: 2}")
    m, s = c["m"], c["s"]
    await send(m, 0, 10)
    await in_sync(m, s)
    for p in (*c["cut_master"], c["proxy"]["m"]):
        p.cut()
    late = asyncio.ensure_future(send(m, 10, 1))  # never confirmed: M cannot make S's copy stale
    await eventually(lambda: answers(s), 30, "the slave to take over")
    assert await asyncio.to_thread(m.proc.wait, 30) == 3
    assert log_has(m, "vote-on-replication-failure: a quorum of lives does not see this node")
    with pytest.raises(Exception):
        await asyncio.wait_for(late, 10)
    assert await drain(s, 11) == list(range(10))


async def test_the_master_back_with_check_for_live_server_fails_back_and_the_slave_waits_again(nodes, proxies):
    c = cluster(nodes, proxies, master_policy="master: {check-for-live-server: true, vote-retry-wait: 200, "
                                              "quorum-vote-wait: 2}")
    m, s = c["m"], c["s"]
    await slave_serving_20(m, s)
    served_at = (await node_info(s)).epoch
    before = syncs(s)
    # M comes back: it copies the store from S, S steps down, M takes over by the vote.
    await asyncio.to_thread(m.start)
    assert syncs(s) == before + 1 and log_has(s, "asked for failback: stepping down")
    assert log_has(m, "failing back") and (await node_info(m)).epoch > served_at
    # S waits as M's backup again (restart-backup), with a fresh copy.
    await eventually(lambda: syncs(m) >= 2, 30, "the slave to be M's backup again")
    assert not await answers(s)
    assert await drain(m, 20) == list(range(20))
    await asyncio.to_thread(m.kill9)
    await eventually(lambda: answers(s), 30, "the slave to take over again")


async def test_kill_9_of_the_master_under_load_loses_and_doubles_nothing(nodes, proxies):
    c = cluster(nodes, proxies)
    await in_sync(c["m"], c["s"])
    await kill_9_under_load(c["m"], c["s"])


async def test_kill_9_of_the_master_while_it_fails_back_keeps_every_message(nodes, proxies):
    """M asked S to step down and is killed while it waits for the vote: S
    has stepped down (it waits as a backup), M's journal is the copy it took
    from S; M restarted finds nobody serving its node id and serves it."""
    c = cluster(nodes, proxies, master_policy="master: {check-for-live-server: true, vote-retry-wait: 5000, "
                                              "quorum-vote-wait: 2}")
    m, s = c["m"], c["s"]
    await slave_serving_20(m, s)
    steps = count(s, "stepping down so that it serves again")
    m.proc = None
    starting = asyncio.ensure_future(asyncio.to_thread(m.start))  # ready only once it serves: it will not
    await eventually(lambda: count(s, "stepping down so that it serves again") > steps, 30, "S to step down")
    await eventually(lambda: m.proc is not None, 5, "M's process")
    await asyncio.to_thread(m.kill9)
    with pytest.raises(RuntimeError, match="exited"):
        await starting
    await eventually(lambda: count(s, "until this node holds its store") >= 2, 30, "S to wait as a backup again")
    await asyncio.to_thread(m.start)
    assert await drain(m, 20) == list(range(20))


async def test_a_nemesis_killing_master_and_slave_in_turn_under_load_loses_and_doubles_nothing(nodes, proxies):
    """Three producers with duplicate ids; twice over: kill -9 the master (the
    slave takes over), restart it (it fails back, the slave waits as its
    backup again), kill -9 the slave (the master goes on alone), restart it
    (it copies the master again). Then drain: every confirmed message, none twice."""
    from .test_shared_store_nemesis import drain_exactly_once, producer

    c = cluster(nodes, proxies, master_policy="master: {check-for-live-server: true, vote-retry-wait: 200, "
                                              "quorum-vote-wait: 2}")
    m, s = c["m"], c["s"]
    await in_sync(m, s)
    confirmed: set[str] = set()
    stop = asyncio.Event()
    tasks = [asyncio.create_task(producer(p, [m, s], confirmed, stop)) for p in range(3)]

    async def more(n: int, what: str) -> None:
        before = len(confirmed)
        await eventually(lambda: len(confirmed) >= before + n, 30, what)

    try:
        for _ in range(2):
            await more(200, "confirmed sends on the master")
            await asyncio.to_thread(m.kill9)
            await eventually(lambda: answers(s), 30, "the slave to take over")
            await more(200, "confirmed sends on the slave")
            synced = syncs(m)
            await asyncio.to_thread(m.start)  # ready once it failed back
            await eventually(lambda: syncs(m) > synced, 30, "the slave to copy the master again")
            await more(200, "confirmed sends after the failback")
            await asyncio.to_thread(s.kill9)
            await more(200, "confirmed sends on the master alone")
            synced = syncs(m)
            await asyncio.to_thread(s.start)
            await eventually(lambda: syncs(m) > synced, 30, "the restarted slave to copy the master")
    finally:
        stop.set()
        retried = await asyncio.wait_for(asyncio.gather(*tasks), 60)
    assert sum(retried) > 0
    await drain_exactly_once([m, s], confirmed)
    assert len(confirmed) >= 1600


async def test_kill_9_of_the_master_during_the_slaves_copy_keeps_every_message_somewhere(nodes, proxies):
    """Killed while its slave copies the store: the slave serves only with a
    complete copy (and the lives' votes); the master started again serves, or
    fails back from the slave. Either way every confirmed message is there."""
    from .test_shared_store_nemesis import active_url

    c = cluster(nodes, proxies, master_policy="master: {check-for-live-server: true, vote-retry-wait: 200, "
                                              "quorum-vote-wait: 2}", start_slave=False)
    m, s = c["m"], c["s"]
    await send(m, 0, 3000)
    await asyncio.to_thread(s.start)
    await eventually(lambda: log_has(m, "attached; copied the store"), 20, "the copy to start")
    await asyncio.to_thread(m.kill9)
    await asyncio.to_thread(m.start)  # serves its own store, or fails back from the slave that took over
    async with await connect(await active_url([m, s])) as conn:
        consumer = await (await conn.session()).create_consumer(QUEUE)
        got = []
        while (msg := await consumer.receive(3)) is not None:
            got.append(int(msg.properties["n"]))
            consumer.ack(msg)
    assert sorted(got) == list(range(3000))
