"""The fake-node attack (issue 10): a stranger announces itself in the
cluster's etcd, which has no auth here, exactly as a real node would, and so
enters the topology every client balances over. The SDK must never send it a
client's password: without TLS it uses only the URI's own hosts (and says so
once); with TLS a node must prove its announced host name with a certificate
from the trusted CA, and the fake cannot.

The fake node (tests/fixtures/fake_node.py) is a plain grpc.aio server that
answers the Broker and Management services just enough to record the
metadata of every call it gets.
"""

from __future__ import annotations

import logging
import subprocess
import textwrap
import time
import uuid

import aetcd
import grpc
import pytest
from google.protobuf import json_format

from meshmq.client import InvalidRequestError, MeshMQError, connect
from meshmq.v1 import discovery_pb2
from tests.fixtures.fake_node import FakeNode
from tests.integration.test_discovery_uris import announcing

pytestmark = pytest.mark.integration

USER, PASSWORD = "app", "s3cret-topology"
SECURED = f"""
security-enabled: true
users:
  - {{username: {USER}, password: {PASSWORD}}}
"""
SESSIONS = 6


def secured_node(etcd, cluster: str, acceptors: str = "") -> str:
    """Node YAML: security on with one user, announcing to `cluster` in etcd."""
    return SECURED + textwrap.dedent(announcing(etcd, cluster)) + acceptors


async def announce_in_etcd(etcd, cluster: str, connector: str):
    """What an attacker with network access to etcd does: put an announcement
    under the cluster's prefix (key and value as meshmq/discovery/etcd_backend.py
    writes them), under a lease like a real node's. Returns the client and lease."""
    node_id = uuid.uuid4().hex
    node = discovery_pb2.ClusterNode(
        node_id=node_id, cluster_name=cluster, node_name="n-fake", connector=connector,
        role=discovery_pb2.NODE_ROLE_LIVE, instance_id=uuid.uuid4().hex, announced_at_ms=int(time.time() * 1000),
    )
    host, _, port = etcd.endpoint.rpartition(":")
    client = aetcd.Client(host=host, port=int(port))
    lease = await client.lease(60)
    value = json_format.MessageToJson(node, preserving_proto_field_name=True, indent=None, sort_keys=True)
    await client.put(f"/meshmq/{cluster}/nodes/{node_id}".encode(), value.encode(), lease=lease)
    return client, lease


@pytest.fixture
async def fake():
    node = FakeNode()
    yield node
    await node.stop()


@pytest.fixture
async def attacker(etcd_session):
    """Announces fake nodes in the test etcd; each announcement is revoked at the end."""
    announced = []

    async def announce(cluster: str, connector: str):
        client, lease = await announce_in_etcd(etcd_session, cluster, connector)
        announced.append((client, lease))

    yield announce
    for client, lease in announced:
        await lease.revoke()
        await client.close()


class Traffic:
    """SESSIONS sessions with one message sent on each, then a consumer for
    them all; every error is kept (not raised), so that a test checks what the
    fake node got before anything else."""

    def __init__(self) -> None:
        self.placed: list[str] = []
        self.bodies: list[bytes] = []
        self.errors: list[str] = []

    async def run(self, conn, queue: str) -> Traffic:
        for i in range(SESSIONS):
            try:
                s = await conn.session()
                p = await s.create_producer(queue)
                await p.send(f"m{i}".encode(), routing_type="anycast")
                self.placed.append(s.node_id)
            except (MeshMQError, grpc.RpcError) as exc:
                self.errors.append(f"session {i}: {exc!r}")
        try:
            c = await (await conn.session()).create_consumer(queue)
            while len(self.bodies) < SESSIONS and (m := await c.receive(5)) is not None:
                self.bodies.append(m.body)
                m.ack()
        except (MeshMQError, grpc.RpcError) as exc:
            self.errors.append(f"consumer: {exc!r}")
        return self


def unverified_warnings(caplog) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records
        if r.name == "meshmq.client" and r.levelno == logging.WARNING
        and "unauthenticated without TLS" in r.getMessage()
    ]


async def test_fake_node_in_topology_gets_no_session_and_no_password_without_tls(nodes, etcd_session, attacker, fake,
                                                                                caplog):
    caplog.set_level(logging.INFO, logger="meshmq.client")
    cluster = "trust-plain"
    real = nodes.router("trust-real", extra=secured_node(etcd_session, cluster))
    await fake.start()
    await attacker(cluster, fake.endpoint)

    async with await connect(f"meshmq://{USER}:{PASSWORD}@{real.endpoint}?callTimeout=5000") as conn:
        # The attack's premise: the real node pushes the fake one to the client.
        topology = await conn.wait_for_topology(2)
        assert {s.target for s in topology} == {real.endpoint, fake.endpoint}
        traffic = await Traffic().run(conn, "trust.plain")

    assert fake.leaked() == [], f"the fake node got the password on {fake.leaked()}"
    assert fake.calls == [], f"the fake node was called: {[m for m, _ in fake.calls]}"
    assert traffic.errors == []
    assert traffic.placed == [real.info["node_id"]] * SESSIONS
    assert sorted(traffic.bodies) == sorted(f"m{i}".encode() for i in range(SESSIONS))
    [warning] = unverified_warnings(caplog)
    assert fake.endpoint in warning.getMessage() and "sslEnabled=true" in warning.getMessage()


async def test_discovery_uri_with_a_password_and_no_tls_is_refused_before_any_contact(etcd_session, attacker, fake):
    cluster = "trust-discovery"
    await fake.start()
    await attacker(cluster, fake.endpoint)
    url = (f"discovery://(etcd://{etcd_session.endpoint}/{cluster}?initialWaitTimeout=3000&refreshTimeout=2000)"
           f"?username={USER}&password={PASSWORD}&callTimeout=3000")
    outcome = None
    try:
        conn = await connect(url)
        await conn.close()
    except MeshMQError as exc:
        outcome = exc
    assert fake.leaked() == [], f"the fake node got the password on {fake.leaked()}"
    assert fake.calls == []
    assert isinstance(outcome, InvalidRequestError) and "needs sslEnabled=true" in str(outcome), outcome
    assert PASSWORD not in str(outcome)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """The cluster's CA with a certificate for 127.0.0.1 (the real node), and
    what a stranger can get: a certificate for 127.0.0.1 from another CA, and
    one from the cluster's CA itself but for another host name."""
    d = tmp_path_factory.mktemp("trust-certs")

    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    def ca(name):
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
            "-days", "2", "-subj", f"/CN={name}")

    def cert(name, ca_name, san):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN={name}")
        (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca_name}.pem", "-CAkey", f"{ca_name}.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")

    ca("cluster-ca")
    ca("other-ca")
    cert("real", "cluster-ca", "IP:127.0.0.1")
    cert("fake-other-ca", "other-ca", "IP:127.0.0.1")
    cert("fake-other-name", "cluster-ca", "DNS:node9.example.net")
    return d


@pytest.mark.parametrize("fake_cert", ["fake-other-ca", "fake-other-name"])
async def test_with_tls_a_node_without_a_trusted_certificate_for_its_host_name_gets_nothing(
    nodes, etcd_session, attacker, fake, certs, caplog, fake_cert
):
    caplog.set_level(logging.INFO, logger="meshmq.client")
    cluster = f"trust-tls-{fake_cert}"
    real = nodes.router(
        f"trust-tls-{fake_cert}",
        extra=secured_node(etcd_session, cluster, f"""
acceptors:
  - name: tls
    host: 127.0.0.1
    port: 0
    ssl-enabled: true
    cert-path: {certs / 'real.pem'}
    key-path: {certs / 'real.key'}
"""),
    )
    await fake.start(grpc.ssl_server_credentials(
        [((certs / f"{fake_cert}.key").read_bytes(), (certs / f"{fake_cert}.pem").read_bytes())]
    ))
    await attacker(cluster, fake.endpoint)

    # Through etcd (allowed with TLS): the first contact may pick the fake node
    # first, fails its handshake and moves on to the real one.
    url = (f"discovery://(etcd://{etcd_session.endpoint}/{cluster}?initialWaitTimeout=5000&refreshTimeout=2000)"
           f"?sslEnabled=true&trustStorePath={certs / 'cluster-ca.pem'}"
           f"&username={USER}&password={PASSWORD}&callTimeout=5000")
    async with await connect(url) as conn:
        assert conn.node.node_id == real.info["node_id"]
        topology = await conn.wait_for_topology(2)
        assert {s.target for s in topology} == {real.endpoint, fake.endpoint}
        traffic = await Traffic().run(conn, "trust.tls")

    assert fake.leaked() == [], f"the fake node got the password on {fake.leaked()}"
    assert fake.calls == []
    assert traffic.errors == []
    assert traffic.placed == [real.info["node_id"]] * SESSIONS
    assert sorted(traffic.bodies) == sorted(f"m{i}".encode() for i in range(SESSIONS))
    # The fake node was tried (round robin over both) and refused at the handshake.
    refused = [r for r in caplog.records
               if r.name == "meshmq.client" and f"session on {fake.endpoint}" in r.getMessage()]
    assert refused, "no session was ever attempted on the fake node"
    assert unverified_warnings(caplog) == []
