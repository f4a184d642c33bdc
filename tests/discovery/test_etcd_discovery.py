"""Discovery on a real etcd: announce, list, watch; kill -9 and graceful stop
of announcing processes; duplicate node ids; etcd going away and coming back;
an unreachable etcd.

Timings use a short refresh-timeout (2000 ms, etcd's smallest lease TTL) and
broadcast-period (500 ms). A node killed with -9 vanishes when its lease
lapses: refresh-timeout after its last keep-alive, which was at most one
broadcast-period before the kill; etcd checks for lapsed leases every 500 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time

import pytest

from meshmq.discovery import Announcer, DiscoveryCore, DiscoveryUnavailableError, NodeIdInUseError, TopologyWatcher
from meshmq.discovery.etcd_backend import EtcdBackend
from meshmq.v1 import discovery_pb2 as dpb

from tests.fixtures.tcp_proxy import TcpProxy

from .procs import Recorder, eventually, node_ids

pytestmark = pytest.mark.integration

BP_MS, RT_MS = 500, 2000
BP, RT = BP_MS / 1000, RT_MS / 1000
# Lease expiry is checked by etcd every 500 ms; the rest is process and watch latency.
# etcd's expiry tick, the watch and a loaded 2-core CI machine; and one keep-alive
# may reach etcd late under load, so the lease can lapse up to one period early.
SLACK_S = 1.5


def core_for(endpoint: str, **kw) -> DiscoveryCore:
    return DiscoveryCore(EtcdBackend([endpoint]), refresh_timeout_ms=RT_MS, **kw)


def cluster_node(node_id: str, cluster: str, port: int = 61616, **fields) -> dpb.ClusterNode:
    return dpb.ClusterNode(node_id=node_id, cluster_name=cluster, node_name=f"name-{node_id}",
                           connector=f"127.0.0.1:{port}", **fields)


@pytest.fixture
async def watch(etcd_session):
    """A factory of watchers on the shared etcd, each with an event recorder; all closed after."""
    opened = []

    async def make(cluster: str, endpoint: str | None = None, min_nodes: int = 0):
        core = core_for(endpoint or etcd_session.endpoint)
        watcher = TopologyWatcher(core, cluster, refresh_timeout_ms=RT_MS)
        recorder = Recorder(watcher)
        watcher.start()
        opened.append((core, watcher, recorder))
        await watcher.wait_ready(min_nodes)
        return core, watcher, recorder

    yield make
    for core, watcher, recorder in opened:
        # Bounded: a teardown stuck on a broken etcd connection must fail, not hang the suite.
        await asyncio.wait_for(recorder.close(), 5)
        await asyncio.wait_for(watcher.close(), 5)
        await asyncio.wait_for(core.close(), 5)


async def test_announce_list_watch_update_and_leave(etcd_session, watch):
    core, watcher, rec = await watch("basic")
    live = Announcer(core, cluster_node("live-1", "basic", 61616, role=dpb.NODE_ROLE_LIVE, group_name="g1"),
                     broadcast_period_ms=BP_MS, refresh_timeout_ms=RT_MS)
    backup = Announcer(core, cluster_node("backup-1", "basic", 61617, role=dpb.NODE_ROLE_BACKUP, group_name="g1"),
                       broadcast_period_ms=BP_MS, refresh_timeout_ms=RT_MS)
    await live.start()
    await backup.start()
    try:
        await _announce_list_watch_update_and_leave(core, watcher, rec, live, backup)
    finally:  # whatever failed, nothing keeps announcing into the next test
        await asyncio.wait_for(backup.stop(), 10)
        await asyncio.wait_for(live.stop(), 10)


async def _announce_list_watch_update_and_leave(core, watcher, rec, live, backup) -> None:
    assert live.lease_ttl_ms == RT_MS

    listed = (await core.list(dpb.ListNodesRequest(cluster_name="basic")))
    assert listed.available
    assert [(n.node_id, n.connector, n.role, n.group_name, n.node_name) for n in listed.nodes] == [
        ("backup-1", "127.0.0.1:61617", dpb.NODE_ROLE_BACKUP, "g1", "name-backup-1"),
        ("live-1", "127.0.0.1:61616", dpb.NODE_ROLE_LIVE, "g1", "name-live-1"),
    ]
    await eventually(lambda: node_ids(watcher.nodes()) == {"live-1", "backup-1"}, 5, "both nodes in the watcher")

    await live.update(backup_connector="127.0.0.1:61617")
    await eventually(lambda: rec.kinds("live-1") == ["NODE_UP", "NODE_UPDATED"], 5, "the update")
    assert {n.node_id: n.backup_connector for n in watcher.nodes()}["live-1"] == "127.0.0.1:61617"

    # Keep-alives hold the nodes past several lease TTLs.
    await asyncio.sleep(2 * RT)
    assert node_ids(watcher.nodes()) == {"live-1", "backup-1"}

    left_at = time.monotonic()
    await backup.stop()
    await eventually(lambda: rec.first(dpb.NODE_DOWN, "backup-1"), 5, "backup-1 to leave")
    # At once, not when its lease lapses (refresh-timeout after its last keep-alive: 1.5 s at
    # the earliest); half of that leaves room for a loaded machine.
    assert rec.first(dpb.NODE_DOWN, "backup-1") - left_at < (RT - BP) / 2
    assert node_ids((await core.list(dpb.ListNodesRequest(cluster_name="basic"))).nodes) == {"live-1"}
    await live.stop()
    await eventually(lambda: rec.downs() == ["backup-1", "live-1"], 2, "live-1 to leave")


@contextlib.asynccontextmanager
async def cut_off_watcher(etcd, cluster: str, grace_ms: int, *node_ids_: str):
    """Nodes announced over their own connection to etcd, watched by a watcher whose
    connection goes through a TcpProxy the test cuts and heals (etcd stays up).
    `grace_ms` is the watcher's refresh-timeout: how long a resync keeps a missing node."""
    proxy = TcpProxy(etcd.endpoint).start()
    announcing = core_for(etcd.endpoint)
    watching = DiscoveryCore(EtcdBackend([proxy.endpoint]), refresh_timeout_ms=grace_ms)
    watcher = TopologyWatcher(watching, cluster, refresh_timeout_ms=grace_ms)
    rec = Recorder(watcher)
    announcers = {n: Announcer(announcing, cluster_node(n, cluster, 61616 + i), broadcast_period_ms=BP_MS,
                               refresh_timeout_ms=RT_MS) for i, n in enumerate(node_ids_)}
    try:
        for announcer in announcers.values():
            await announcer.start()
        assert node_ids(await watcher.wait_ready(len(announcers))) == set(node_ids_)
        yield proxy, announcing, watcher, rec, announcers
    finally:
        for announcer in announcers.values():
            await asyncio.wait_for(announcer.stop(), 10)
        await asyncio.wait_for(rec.close(), 5)
        await asyncio.wait_for(watcher.close(), 5)
        await asyncio.wait_for(watching.close(), 5)
        await asyncio.wait_for(announcing.close(), 5)
        proxy.close()


async def test_a_node_leaving_while_the_watch_is_cut_is_gone_as_soon_as_it_resumes(etcd_session):
    """The watcher's connection to etcd is cut (etcd stays up) while a node
    leaves. On reconnecting, the watcher learns of the leave from etcd's
    history at once; a resync alone would keep the node for the watcher's
    refresh-timeout (here 10 s), since a node missing from a listing may only
    not have announced itself again yet."""
    grace_ms = 10_000
    async with cut_off_watcher(etcd_session, "cut-leave", grace_ms, "stays", "leaves") as (proxy, _, watcher, rec, nodes):
        proxy.cut()
        await eventually(lambda: not watcher.available, 5, "the watcher to notice the cut")
        await nodes["leaves"].stop()  # through its own, intact connection: the key is deleted now
        proxy.heal()
        healed_at = time.monotonic()
        await eventually(lambda: watcher.available, 10, "the watch to resume")
        await eventually(lambda: rec.first(dpb.NODE_DOWN, "leaves"), 5, "the leave to be seen")
        assert rec.first(dpb.NODE_DOWN, "leaves") - healed_at < grace_ms / 1000 / 2
        assert node_ids(watcher.nodes()) == {"stays"}
        assert rec.downs() == ["leaves"]


async def test_a_watch_whose_gap_was_compacted_resumes_from_a_listing(etcd_session, caplog):
    """The history since the watch broke is compacted away: the watch resumes
    anyway, from a fresh listing, and the node that left in the gap goes when
    the resync's grace (the watcher's refresh-timeout) runs out."""
    caplog.set_level(logging.INFO, logger="meshmq.discovery.etcd")
    grace_ms = 3000
    async with cut_off_watcher(etcd_session, "cut-compacted", grace_ms, "leaves") as (proxy, announcing, watcher,
                                                                                      rec, nodes):
        proxy.cut()
        await eventually(lambda: not watcher.available, 5, "the watcher to notice the cut")
        await nodes["leaves"].stop()
        client = announcing.backend.client
        await client.put(b"/meshmq-test/compaction-marker", b"x")
        await client.compact((await client.get(b"/meshmq-test/compaction-marker")).mod_revision)
        proxy.heal()
        healed_at = time.monotonic()
        await eventually(lambda: watcher.available, 10, "the watch to resume")
        await eventually(lambda: rec.first(dpb.NODE_DOWN, "leaves"), grace_ms / 1000 + SLACK_S + 2, "the grace to end")
        assert rec.first(dpb.NODE_DOWN, "leaves") - healed_at >= grace_ms / 1000 - 1
        assert any("was compacted" in r.getMessage() for r in caplog.records), caplog.text


async def test_clusters_do_not_see_each_other(etcd_session, watch):
    core, watcher, _ = await watch("apart-a")
    async with Announcer(core, cluster_node("n", "apart-b"), broadcast_period_ms=BP_MS, refresh_timeout_ms=RT_MS):
        listed = await core.list(dpb.ListNodesRequest(cluster_name="apart-b"))
        assert node_ids(listed.nodes) == {"n"}
        assert watcher.nodes() == []


async def test_kill9_of_an_announcing_process_removes_it_within_refresh_timeout(etcd_session, procs, watch):
    _, watcher, rec = await watch("kill9")
    node = await procs.sim("victim", cluster="kill9", etcd=etcd_session.endpoint,
                           broadcast_period=BP_MS, refresh_timeout=RT_MS).start()
    await eventually(lambda: "victim" in node_ids(watcher.nodes()), 5, "victim to appear")
    await asyncio.sleep(1.3 * BP)  # let a keep-alive or two go out: the kill lands between two of them

    killed_at = time.monotonic()
    node.kill9()
    await eventually(lambda: rec.first(dpb.NODE_DOWN, "victim"), RT + SLACK_S + 1, "victim to vanish")
    gone_after = rec.first(dpb.NODE_DOWN, "victim") - killed_at
    assert RT - 2 * BP - 0.1 <= gone_after <= RT + SLACK_S, gone_after


async def test_graceful_stop_of_an_announcing_process_removes_it_at_once(etcd_session, procs, watch):
    _, watcher, rec = await watch("graceful")
    node = await procs.sim("polite", cluster="graceful", etcd=etcd_session.endpoint,
                           broadcast_period=BP_MS, refresh_timeout=RT_MS).start()
    await eventually(lambda: "polite" in node_ids(watcher.nodes()), 5, "polite to appear")
    stopped_at = time.monotonic()
    node.terminate()
    await eventually(lambda: rec.first(dpb.NODE_DOWN, "polite"), 5, "polite to leave")
    assert rec.first(dpb.NODE_DOWN, "polite") - stopped_at < 1.0  # process exit included; RT is 2 s
    assert await node.wait_exit(5) == 0


async def test_a_second_node_with_a_live_node_id_is_refused(etcd_session, procs, watch):
    core, _, _ = await watch("dup")
    first = await procs.sim("original", cluster="dup", node_id="node-x", etcd=etcd_session.endpoint,
                            broadcast_period=BP_MS, refresh_timeout=RT_MS).start()
    copy = procs.sim("copy", cluster="dup", node_id="node-x", etcd=etcd_session.endpoint,
                     broadcast_period=BP_MS, refresh_timeout=RT_MS).spawn()
    assert await copy.wait_exit(RT + 5) == 3
    said = copy.log_text()
    assert "node id node-x is already live in cluster 'dup': announced by sim-node-x at 127.0.0.1:20000" in said
    assert "do not copy the data directory" in said
    listed = (await core.list(dpb.ListNodesRequest(cluster_name="dup"))).nodes
    assert [n.instance_id for n in listed] == first.info["instance_ids"]  # the live one is untouched


async def test_a_node_restarted_after_kill9_waits_for_its_old_lease_then_announces(etcd_session, procs, watch):
    core, watcher, rec = await watch("phoenix")
    # A lease long enough to outlive the restart on a loaded machine (with 2 s, a
    # slow start found it lapsed already, and there was nothing to wait for).
    lease_ms = 8000
    old = await procs.sim("phoenix-1", cluster="phoenix", node_id="phoenix", etcd=etcd_session.endpoint,
                          broadcast_period=BP_MS, refresh_timeout=lease_ms).start()
    old.kill9()
    new = await procs.sim("phoenix-2", cluster="phoenix", node_id="phoenix", etcd=etcd_session.endpoint,
                          broadcast_period=BP_MS, refresh_timeout=lease_ms).start()
    listed = (await core.list(dpb.ListNodesRequest(cluster_name="phoenix"))).nodes
    assert [n.instance_id for n in listed] == new.info["instance_ids"]
    assert "waiting up to" in new.log_text()
    await eventually(lambda: rec.kinds("phoenix")[-1:] == ["NODE_UP"], 5, "the new run to be up")


async def test_etcd_outage_keeps_the_topology_and_everyone_resumes(etcd, procs, caplog):
    caplog.set_level(logging.INFO)
    sims = [await procs.sim(n, cluster="outage", etcd=etcd.endpoint, broadcast_period=BP_MS,
                            refresh_timeout=RT_MS).start() for n in ("a", "b")]
    core = core_for(etcd.endpoint)
    watcher = TopologyWatcher(core, "outage", refresh_timeout_ms=RT_MS)
    rec = Recorder(watcher)
    try:
        assert node_ids(await watcher.wait_ready(2)) == {"a", "b"}

        etcd.kill9()
        # Longer than refresh-timeout: nobody may vanish while etcd is away,
        # since nobody can tell a dead node from an unreachable etcd.
        await asyncio.sleep(1.5 * RT)
        assert node_ids(watcher.nodes()) == {"a", "b"}
        listed = await core.list(dpb.ListNodesRequest(cluster_name="outage"))
        assert (node_ids(listed.nodes), listed.available) == ({"a", "b"}, False)
        assert "unreachable" in listed.message

        await asyncio.to_thread(etcd.start)  # same ports, same data
        # The watch resumed: a node announced after the restart reaches the same watcher.
        await procs.sim("c", cluster="outage", etcd=etcd.endpoint, broadcast_period=BP_MS,
                        refresh_timeout=RT_MS).start()
        await eventually(lambda: node_ids(watcher.nodes()) == {"a", "b", "c"}, 10, "c to appear")
        for sim in sims:
            await eventually(lambda: "reachable again" in sim.log_text(), 10, f"{sim.name} to reach etcd again")
        assert (await core.list(dpb.ListNodesRequest(cluster_name="outage"))).available
        assert rec.downs() == []

        # Logged once per process, not once per keep-alive (about 8 failed here).
        for sim in sims:
            log = sim.log_text()
            assert log.count("is unreachable") == 1, log
            assert log.count("reachable again") == 1, log
        here = [r.getMessage() for r in caplog.records if etcd.endpoint in r.getMessage()]
        assert sum("is unreachable" in m for m in here) == 1, here
    finally:
        await rec.close()
        await watcher.close()
        await core.close()


async def test_etcd_restarted_empty_nodes_announce_again_and_watchers_see_no_gap(etcd, procs):
    sims = [await procs.sim(n, cluster="wiped", etcd=etcd.endpoint, broadcast_period=BP_MS,
                            refresh_timeout=RT_MS).start() for n in ("a", "b")]
    core = core_for(etcd.endpoint)
    watcher = TopologyWatcher(core, "wiped", refresh_timeout_ms=RT_MS)
    rec = Recorder(watcher)
    try:
        await watcher.wait_ready(2)
        await asyncio.to_thread(etcd.restart, wipe=True)  # every key and lease gone

        probe = EtcdBackend([etcd.endpoint])
        try:
            async def listed():
                return node_ids(await probe.list("wiped"))

            deadline = time.monotonic() + 10
            while await listed() != {"a", "b"}:
                assert time.monotonic() < deadline, "nodes did not announce again"
                await asyncio.sleep(0.05)
        finally:
            await probe.close()
        for sim in sims:
            assert "announcing it again" in sim.log_text()
        # Watchers resynced with a grace of refresh-timeout for nodes not yet back: none left.
        await asyncio.sleep(RT)
        assert node_ids(watcher.nodes()) == {"a", "b"}
        assert rec.downs() == []
    finally:
        await rec.close()
        await watcher.close()
        await core.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_unreachable_etcd_is_a_clear_error_after_initial_wait_timeout():
    endpoint = f"127.0.0.1:{_closed_port()}"
    core = DiscoveryCore(EtcdBackend([endpoint]), refresh_timeout_ms=RT_MS, initial_wait_timeout_ms=1000)
    try:
        started = time.monotonic()
        with pytest.raises(DiscoveryUnavailableError) as err:
            await core.start()
        assert 0.7 <= time.monotonic() - started < 3
        message = str(err.value)
        assert f"etcd at {endpoint} is unreachable after" in message
        assert "Connection refused" in message and "etcd.endpoints" in message

        announcer = Announcer(core, cluster_node("n", "nowhere"), broadcast_period_ms=BP_MS,
                              refresh_timeout_ms=RT_MS, initial_wait_timeout_ms=1000)
        started = time.monotonic()
        with pytest.raises(DiscoveryUnavailableError, match="gave up after initial-wait-timeout, 1000 ms"):
            await announcer.start()
        assert time.monotonic() - started < 3
    finally:
        await core.close()


async def test_several_endpoints_fail_over_to_a_live_member(etcd_session):
    backend = EtcdBackend([f"127.0.0.1:{_closed_port()}", etcd_session.endpoint])
    try:
        await backend.check(5)
        assert await backend.list("failover") == []
    finally:
        await backend.close()


async def test_a_refused_node_id_does_not_disturb_the_live_one(etcd_session, watch):
    core, watcher, rec = await watch("dup-inproc")
    node = cluster_node("same", "dup-inproc")
    async with Announcer(core, node, broadcast_period_ms=BP_MS, refresh_timeout_ms=RT_MS):
        copy = Announcer(core, node, broadcast_period_ms=BP_MS, refresh_timeout_ms=RT_MS)  # new instance id
        with pytest.raises(NodeIdInUseError):
            await copy.start()
        assert rec.kinds("same") == ["NODE_UP"]
