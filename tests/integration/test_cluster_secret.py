"""The cluster secret never travels (issue 26, items 1 and 2).

A router with a cluster-password proves membership to the other processes of
its cluster by a challenge, never by sending the password: a peer that cannot
prove it holds the password too (a node a stranger registered in etcd, a
listener posing as the HA coordinator) gets a random nonce and nothing else —
no password, no proof, no Link carrying messages, no quorum call. And the
router's channel to the HA coordinator uses the node's TLS, so a coordinator
listening with TLS is reachable. Real routers, a real etcd and a real
coordinator; the strangers are tests/fixtures/fake_node.py."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import textwrap

import grpc
import pytest

from meshmq.security.cluster_proof import ClusterProver
from meshmq.transport import channel_credentials, open_channel
from meshmq.v1 import cluster_pb2, ha_coordinator_pb2, ha_coordinator_pb2_grpc
from tests.fixtures.fake_node import FakeNode
from tests.fixtures.nodes import eventually, free_port
from tests.ha.test_ha_coordinator import NAMESPACE
from tests.integration.test_topology_trust import announce_in_etcd

pytestmark = pytest.mark.integration

SECRET = "cluster-secret-that-must-never-travel"
CLUSTER_SERVICE = cluster_pb2.DESCRIPTOR.services_by_name["Cluster"]
COORDINATOR_SERVICE = ha_coordinator_pb2.DESCRIPTOR.services_by_name["HaCoordinator"]


@pytest.fixture
async def fake():
    node = FakeNode()
    yield node
    await node.stop()


def challenged(fake: FakeNode, at_least: int):
    return lambda: sum(method == "ClusterIdentity/Challenge" for method, _ in fake.calls) >= at_least


async def test_a_fake_node_registered_in_etcd_gets_no_link_and_no_secret(nodes, etcd_session, fake):
    cluster = f"secret-{free_port()}"
    await fake.start(services=(CLUSTER_SERVICE,))
    router = nodes.router("real", extra=textwrap.dedent(f"""
        cluster-password: {SECRET}
        addresses: {{orders: {{anycast: [{{name: orders}}]}}}}
        discovery-groups:
          dg: {{etcd: {{endpoints: ["{etcd_session.endpoint}"]}}, cluster-name: {cluster}, refresh-timeout: 2000}}
        broadcast-groups:
          bg: {{discovery-group-ref: dg, broadcast-period: 500}}
        cluster-connections:
          cc: {{discovery-group-ref: dg, retry-interval: 100, message-load-balancing: STRICT}}
        """))
    client, lease = await announce_in_etcd(etcd_session, cluster, fake.endpoint)
    try:
        # The router tries the fake node again and again (retry-interval 100 ms)...
        await eventually(challenged(fake, 3), 20, "the router to challenge the fake node three times")
        # ...and every time the fake cannot answer, it is sent nothing else.
        assert fake.methods() == {"ClusterIdentity/Challenge"}, fake.calls
        assert fake.carried(SECRET) == [] and all("x-meshmq-cluster-proof" not in md for _, md in fake.calls)
        assert "did not prove it belongs to this cluster" in router.log_path.read_text()
    finally:
        await lease.revoke()
        await client.close()


async def test_a_listener_posing_as_the_ha_coordinator_learns_no_secret(nodes, fake):
    """A plaintext listener where the coordinator should be used to receive
    GetQuorum with the cluster password in its metadata."""
    await fake.start(services=(COORDINATOR_SERVICE,))
    primary = nodes.router("primary", start=False, extra=textwrap.dedent(f"""
        cluster-password: {SECRET}
        ha-policy:
          replication:
            primary: {{manager: {{class-name: coordinator, properties: {{connect-string: '{fake.endpoint}',
              session-ms: 2000, namespace: {NAMESPACE}, retries: 1, retries-ms: 100}}}}}}
        """))
    starting = asyncio.create_task(asyncio.to_thread(primary.start))
    try:
        await eventually(challenged(fake, 1), 20, "the primary to challenge the fake coordinator")
        await asyncio.wait({starting}, timeout=5)  # it goes no further: no quorum it could trust
        assert fake.methods() == {"ClusterIdentity/Challenge"}, fake.calls
        assert fake.carried(SECRET) == [] and all("x-meshmq-cluster-proof" not in md for _, md in fake.calls)
        assert not primary.ready_path.exists()  # passive: it never served
        assert "did not prove it belongs to this cluster" in primary.log_path.read_text()
    finally:
        primary.kill9()
        with contextlib.suppress(RuntimeError):  # "exited with -9": the kill above
            await asyncio.wait_for(starting, 30)


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    """The cluster's CA and one certificate for 127.0.0.1, for both ends."""
    d = tmp_path_factory.mktemp("coordinator-tls")

    def meshmq(*args: str) -> None:
        import sys

        subprocess.run([sys.executable, "-m", "meshmq.cli.main", *args], check=True, capture_output=True, timeout=60)

    meshmq("certs", "ca", "--dir", str(d / "ca"))
    meshmq("certs", "issue", "--ca-dir", str(d / "ca"), "--dir", str(d), "--name", "node", "--host", "127.0.0.1")
    return d


async def test_a_router_reaches_a_tls_coordinator_with_its_own_tls(nodes, etcd, ca):
    """The coordinator listens with TLS (and wants client certificates); the
    primary dials it with the TLS of its acceptor and takes the lock."""
    tls = f"ssl-enabled: true, cert-path: {ca / 'node.pem'}, key-path: {ca / 'node-key.pem'}"
    trust = f"trust-path: {ca / 'ca' / 'ca.pem'}"
    coord = coordinator_with_tls(nodes, etcd, f"{tls}, {trust}, need-client-auth: true")
    port = free_port()
    primary = nodes.router("primary", extra=textwrap.dedent(f"""
        cluster-password: {SECRET}
        acceptors:
          - {{name: tls, host: 127.0.0.1, port: {port}, {tls}, {trust}}}
        ha-policy:
          replication:
            primary: {{manager: {{class-name: coordinator, properties: {{connect-string: '{coord.endpoint}',
              session-ms: 2000, namespace: {NAMESPACE}}}}}}}
        """))
    assert primary.proc.poll() is None
    channel = open_channel(coord.endpoint, credentials=channel_credentials(
        ca / "ca" / "ca.pem", ca / "node.pem", ca / "node-key.pem"))
    try:
        metadata = await ClusterProver("meshmq.cluster", SECRET).metadata(channel, coord.endpoint)
        reply = await ha_coordinator_pb2_grpc.HaCoordinatorStub(channel).ListQuorums(
            ha_coordinator_pb2.ListQuorumsRequest(namespace=NAMESPACE), metadata=metadata, timeout=10)
        [quorum] = reply.quorums
        assert quorum.holder.startswith("primary/") and quorum.sequence == 1
        # Plaintext is not served there at all.
        plain = open_channel(coord.endpoint)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await ha_coordinator_pb2_grpc.HaCoordinatorStub(plain).ListQuorums(
                ha_coordinator_pb2.ListQuorumsRequest(namespace=NAMESPACE), metadata=metadata, timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        await plain.close()
    finally:
        await channel.close()


def coordinator_with_tls(nodes, etcd, listen_tls: str):
    from tests.fixtures.nodes import ServiceProcess

    p = ServiceProcess(nodes.tmp, "coord-tls", "ha-coordinator", (
        f"cluster-password: {SECRET}\n"
        f"ha-coordinator:\n  listen: {{host: 127.0.0.1, port: {free_port()}, {listen_tls}}}\n"
        f"  etcd: {{endpoints: ['{etcd.endpoint}']}}\n"))
    nodes.started.append(p)
    return p.start()


def test_a_secured_cluster_in_plain_text_beyond_loopback_does_not_start_unless_written(tmp_path):
    """Refused before anything is bound or made; the error names the key and the listener."""
    import sys

    from tests.fixtures.nodes import router_config

    config = tmp_path / "node.yaml"
    config.write_text(router_config("plain", tmp_path / "data", extra=textwrap.dedent(f"""
        security-enabled: true
        users: [{{username: app, password: app-pw}}]
        cluster-password: {SECRET}
        acceptors:
          - {{name: grpc, host: 0.0.0.0, port: 0}}
        """)))
    done = subprocess.run([sys.executable, "-m", "meshmq.cli.main", "serve", "router", "--config", str(config),
                           "--quiet"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert ("insecure-cluster: not set, and the router would serve the cluster's traffic in plain text beyond this "
            "machine on acceptors[0] (0.0.0.0:<any free port>)") in done.stderr
    assert not (tmp_path / "data").exists()
