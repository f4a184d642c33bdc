"""The discovery service as its own process: nodes announce through it over
gRPC (the service holds their leases), watchers and List reach it over gRPC.
Also the static-connectors backend and start-up failures."""

from __future__ import annotations

import asyncio
import time

import pytest

from meshmq.discovery import (
    Announcer,
    DiscoveryConfigError,
    DiscoveryCore,
    GrpcDiscoveryClient,
    NodeIdInUseError,
    TopologyWatcher,
)
from meshmq.discovery.etcd_backend import EtcdBackend
from meshmq.ports import free_port
from meshmq.v1 import discovery_pb2 as dpb

from .procs import Recorder, eventually, node_ids

pytestmark = pytest.mark.integration

BP_MS, RT_MS = 500, 2000
BP, RT = BP_MS / 1000, RT_MS / 1000
# etcd's expiry tick, the watch and a loaded 2-core CI machine; and one keep-alive
# may reach etcd late under load, so the lease can lapse up to one period early.
SLACK_S = 1.5




def etcd_service_yaml(endpoint: str, cluster: str, *, port: int = 0, refresh_timeout: int = RT_MS,
                      initial_wait_timeout: int = 10000) -> str:
    return f"""
        name: discovery-test
        discovery-groups:
          dg1:
            etcd: {{endpoints: ["{endpoint}"]}}
            cluster-name: {cluster}
            refresh-timeout: {refresh_timeout}
            initial-wait-timeout: {initial_wait_timeout}
        discovery:
          listen: {{host: 127.0.0.1, port: {port}}}
    """


@pytest.fixture
async def grpc_watch():
    """Watchers through a discovery service, each with an event recorder."""
    opened = []

    async def make(endpoint: str, cluster: str, refresh_timeout_ms: int = RT_MS):
        client = GrpcDiscoveryClient(endpoint)
        watcher = TopologyWatcher(client, cluster, refresh_timeout_ms=refresh_timeout_ms)
        recorder = Recorder(watcher)
        watcher.start()
        opened.append((client, watcher, recorder))
        await watcher.wait_ready(0)
        return client, watcher, recorder

    yield make
    for client, watcher, recorder in opened:
        await recorder.close()
        await watcher.close()
        await client.close()


async def test_nodes_announced_through_the_service(etcd_session, procs, grpc_watch):
    svc = await procs.discovery_service("svc", etcd_service_yaml(etcd_session.endpoint, "svc")).start()
    assert svc.info["backend"] == f"etcd at {etcd_session.endpoint}"
    client, watcher, rec = await grpc_watch(svc.endpoint, "svc")
    killed = await procs.sim("s-killed", cluster="svc", service=svc.endpoint, broadcast_period=BP_MS,
                             refresh_timeout=RT_MS).start()
    polite = await procs.sim("s-polite", cluster="svc", service=svc.endpoint, broadcast_period=BP_MS,
                             refresh_timeout=RT_MS).start()
    await eventually(lambda: node_ids(watcher.nodes()) == {"s-killed", "s-polite"}, 5, "both nodes")
    listed = await client.list(dpb.ListNodesRequest(cluster_name="svc"))
    assert listed.available and node_ids(listed.nodes) == {"s-killed", "s-polite"}
    await asyncio.sleep(1.3 * BP)

    # kill -9 of the node: its stream breaks, the service stops renewing, the lease lapses.
    killed_at = time.monotonic()
    killed.kill9()
    await eventually(lambda: rec.first(dpb.NODE_DOWN, "s-killed"), RT + SLACK_S + 1, "s-killed to vanish")
    gone_after = rec.first(dpb.NODE_DOWN, "s-killed") - killed_at
    assert RT - 2 * BP - 0.1 <= gone_after <= RT + SLACK_S, gone_after

    # Graceful stop: the node says leave, the service revokes at once.
    stopped_at = time.monotonic()
    polite.terminate()
    await eventually(lambda: rec.first(dpb.NODE_DOWN, "s-polite"), 5, "s-polite to leave")
    assert rec.first(dpb.NODE_DOWN, "s-polite") - stopped_at < 1.0
    assert "node s-polite (sim-s-polite) left cluster svc" in svc.log_text()
    assert "announce stream of node s-killed (sim-s-killed) ended without a leave" in svc.log_text()


async def test_the_service_refuses_a_live_node_id(etcd_session, procs):
    svc = await procs.discovery_service("svc", etcd_service_yaml(etcd_session.endpoint, "svc-dup")).start()
    direct = DiscoveryCore(EtcdBackend([etcd_session.endpoint]), refresh_timeout_ms=RT_MS)
    node = dpb.ClusterNode(node_id="taken", cluster_name="svc-dup", node_name="first", connector="127.0.0.1:7000")
    client = GrpcDiscoveryClient(svc.endpoint)
    try:
        async with Announcer(direct, node, broadcast_period_ms=BP_MS, refresh_timeout_ms=RT_MS):
            copy = Announcer(client, node, broadcast_period_ms=BP_MS, refresh_timeout_ms=RT_MS)
            with pytest.raises(NodeIdInUseError, match="node id taken is already live in cluster 'svc-dup'"):
                await copy.start()
            bad = Announcer(client, dpb.ClusterNode(node_id="x/y", cluster_name="svc-dup", connector="127.0.0.1:1"),
                            broadcast_period_ms=BP_MS, refresh_timeout_ms=RT_MS)
            with pytest.raises(DiscoveryConfigError, match="node_id 'x/y' must be 1 to 200 printable characters"):
                await bad.start()
    finally:
        await client.close()
        await direct.close()


async def test_a_service_restart_within_refresh_timeout_is_invisible_to_watchers(etcd_session, procs):
    # A restart of the service takes a Python start-up, over 5 s on a loaded two-core machine (the
    # lease then lapsed before the node resumed it): a lease that outlasts a slow restart.
    rt_ms = 12_000
    port = free_port()
    svc = await procs.discovery_service(
        "svc", etcd_service_yaml(etcd_session.endpoint, "svc-restart", port=port, refresh_timeout=rt_ms)
    ).start()
    node = await procs.sim("held", cluster="svc-restart", service=svc.endpoint, broadcast_period=BP_MS,
                           refresh_timeout=rt_ms).start()
    direct = DiscoveryCore(EtcdBackend([etcd_session.endpoint]), refresh_timeout_ms=rt_ms)
    watcher = TopologyWatcher(direct, "svc-restart", refresh_timeout_ms=rt_ms)
    rec = Recorder(watcher)
    try:
        assert node_ids(await watcher.wait_ready(1)) == {"held"}
        svc.kill9()
        await svc.start()  # same port
        await eventually(lambda: "resumed the announcement of node held" in svc.log_text(), rt_ms / 1000,
                         "the node to rejoin within the lease")
        await asyncio.sleep(rt_ms / 1000)  # past the old lease's TTL: it was taken over, not left to lapse
        assert node_ids(watcher.nodes()) == {"held"}
        assert rec.downs() == []
        assert [n.instance_id for n in watcher.nodes()] == node.info["instance_ids"]
        assert node.log_text().count("is unreachable") == 1
    finally:
        await rec.close()
        await watcher.close()
        await direct.close()


async def test_static_connectors(procs, grpc_watch):
    svc = await procs.discovery_service("static", """
        discovery-groups:
          fixed:
            static-connectors: ["127.0.0.1:61616", "127.0.0.1:61617"]
            cluster-name: plain
    """).start()
    assert svc.info["backend"] == "static-connectors 127.0.0.1:61616,127.0.0.1:61617"
    client, watcher, _ = await grpc_watch(svc.endpoint, "plain")
    listed = await client.list(dpb.ListNodesRequest(cluster_name="plain"))
    assert [(n.node_id, n.connector, n.static) for n in listed.nodes] == [
        ("static:127.0.0.1:61616", "127.0.0.1:61616", True),
        ("static:127.0.0.1:61617", "127.0.0.1:61617", True),
    ]
    assert [n.connector for n in watcher.nodes()] == ["127.0.0.1:61616", "127.0.0.1:61617"]
    announcer = Announcer(client, dpb.ClusterNode(node_id="n", cluster_name="plain", connector="127.0.0.1:1"),
                          broadcast_period_ms=BP_MS, refresh_timeout_ms=RT_MS)
    with pytest.raises(DiscoveryConfigError, match="static-connectors .* cannot be announced to"):
        await announcer.start()


async def test_the_service_does_not_start_without_etcd(procs):
    endpoint = f"127.0.0.1:{free_port()}"
    svc = procs.discovery_service("no-etcd", etcd_service_yaml(endpoint, "x", initial_wait_timeout=1000)).spawn()
    assert await svc.wait_exit(10) == 2
    said = svc.log_text()
    assert f"error: etcd at {endpoint} is unreachable after" in said
    assert "Connection refused" in said and "etcd.endpoints" in said


async def test_the_service_does_not_start_with_a_config_mixing_sources(procs):
    svc = procs.discovery_service("mixed", """
        discovery-groups:
          dg1:
            etcd: {endpoints: ["127.0.0.1:2379"]}
            static-connectors: ["127.0.0.1:61616"]
    """).spawn()
    assert await svc.wait_exit(10) == 2
    assert ("mixed.yaml:5: discovery-groups.dg1.static-connectors: etcd and static-connectors are exclusive"
            in svc.log_text())


async def test_etcd_outage_behind_the_service(etcd, procs, grpc_watch):
    svc = await procs.discovery_service("svc", etcd_service_yaml(etcd.endpoint, "svc-outage")).start()
    client, watcher, rec = await grpc_watch(svc.endpoint, "svc-outage")
    node = await procs.sim("behind", cluster="svc-outage", service=svc.endpoint, broadcast_period=BP_MS,
                           refresh_timeout=RT_MS).start()
    await eventually(lambda: node_ids(watcher.nodes()) == {"behind"}, 5, "the node")

    etcd.kill9()
    await asyncio.sleep(1.5 * RT)  # longer than refresh-timeout: nobody may vanish meanwhile
    assert node_ids(watcher.nodes()) == {"behind"}
    assert not watcher.available
    listed = await client.list(dpb.ListNodesRequest(cluster_name="svc-outage"))
    assert (node_ids(listed.nodes), listed.available) == ({"behind"}, False)

    await asyncio.to_thread(etcd.start)
    await eventually(lambda: "reachable again" in node.log_text(), 10, "keep-alives to succeed again")
    await eventually(lambda: watcher.available, 10, "the watch to resume")
    assert node_ids(watcher.nodes()) == {"behind"}
    assert rec.downs() == []
    said = node.log_text()
    assert said.count("is unreachable: the service cannot reach its backend") == 1, said
    assert svc.log_text().count(f"etcd at {etcd.endpoint} is unreachable") == 1, svc.log_text()
