"""deploy/local/secured-3.yaml brought up by `meshmq cluster up`, as
docs/security.md ("A secured 3-node cluster") runs it: TLS from the cluster's
CA on every listener, hashed users, roles, a cluster password. Real processes
on ports picked at run time; the CA is made in tmp, where the copied file
points."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from meshmq.client import AuthenticationError, ConnectionFailedError, PermissionDeniedError, connect
from meshmq.config.loader import load_config
from meshmq.discovery import DiscoveryError, GrpcDiscoveryClient
from meshmq.errors import Reason
from meshmq.launcher import ClusterUpError, LocalCluster, load_cluster_spec
from meshmq.security.certs import create_ca
from meshmq.security.cluster_proof import ClusterProver
from meshmq.transport import channel_credentials, credentials_metadata
from meshmq.v1 import discovery_pb2 as dpb

from .test_local_cluster import forwarded_across, gone

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SECURED_3 = ROOT / "deploy" / "local" / "secured-3.yaml"
# The example passwords written in the file's comments.
APP, ADMIN = ("app", "app-example-pw"), ("admin", "admin-example-pw")
CLI_DEADLINE_S = 90


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "meshmq.cli.main", "cluster", *args], capture_output=True,
                          text=True, timeout=CLI_DEADLINE_S, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.fixture
def secured_file(tmp_path) -> Path:
    """secured-3.yaml copied into tmp at the same depth, so its tls.ca-dir lands in tmp too."""
    copy = tmp_path / "deploy" / "local" / "secured-3.yaml"
    copy.parent.mkdir(parents=True)
    shutil.copy(SECURED_3, copy)
    return copy


def user_url(endpoint: str, user: tuple[str, str] | None, ca: Path | None, **options: str) -> str:
    auth = f"{user[0]}:{user[1]}@" if user else ""
    query = {"sslEnabled": "true", "callTimeout": "5000", **({"trustStorePath": str(ca)} if ca else {}), **options}
    return f"meshmq://{auth}{endpoint}?" + "&".join(f"{k}={v}" for k, v in query.items())


async def test_the_secured_example_up_used_and_down(launched, secured_file):
    spec = load_cluster_spec(secured_file)
    assert spec.ca_dir == secured_file.parents[2] / "run" / "ca"
    run = launched.run_dir()

    # without its CA, nothing starts, and the error says how to make one
    with pytest.raises(ClusterUpError) as info:
        await LocalCluster(spec, run).up()
    assert f"{secured_file}: tls.ca-dir: no CA in {spec.ca_dir}" in str(info.value)
    assert f"meshmq certs ca --dir {spec.ca_dir}" in str(info.value)
    assert not (run / "cluster.json").exists()

    ca_cert, _ = create_ca(spec.ca_dir)
    up = cli("up", "-f", str(secured_file), "--run-dir", str(run))
    assert up.returncode == 0, up.stdout + up.stderr
    assert "all 3 nodes are in the topology of cluster secured-3" in up.stdout
    assert f"?sslEnabled=true&trustStorePath={ca_cert}" in up.stdout  # the printed client URI
    assert "meshmq://USER:PASSWORD@127.0.0.1:" in up.stdout
    state = json.loads((run / "cluster.json").read_text())
    assert state["trust_store"] == str(ca_cert)
    endpoints = {p["name"]: p["endpoint"] for p in state["processes"]}
    pids = [p["pid"] for p in state["processes"]]

    # each listener serves a certificate the launcher issued into the process's directory
    n1 = load_config(run / "n1" / "node.yaml")
    assert (n1.acceptors[0].ssl_enabled, n1.acceptors[0].cert_path) == (True, run / "n1" / "tls" / "n1.pem")
    discovery = load_config(run / "discovery" / "discovery.yaml")
    assert discovery.discovery.listen.ssl_enabled and discovery.cluster_password == n1.cluster_password
    assert [u.username for u in discovery.users] == ["admin", "app"]

    # the app user, over TLS: send and receive on app.orders, on each node
    for name in ("n1", "n2", "n3"):
        url = user_url(endpoints[name], APP, ca_cert, useTopologyForLoadBalancing="false")
        async with await connect(url) as conn:
            assert (await conn.admin.node_info()).name == name
            session = await conn.session()
            await (await session.create_producer("app.orders")).send(f"to {name}".encode(), routing_type="anycast")
            message = await (await session.create_consumer("app.orders")).receive(5)
            assert (message.body, message.proto.user_id) == (f"to {name}".encode(), "app")
    # ...and it trusts the topology the nodes push: TLS verifies every node
    async with await connect(user_url(endpoints["n1"], APP, ca_cert)) as conn:
        assert sorted(s.target for s in await conn.wait_for_topology(3)) == sorted(
            endpoints[n] for n in ("n1", "n2", "n3"))
        # app.# only: admin.x is the admins'
        producer = await (await conn.session()).create_producer("admin.x")
        with pytest.raises(PermissionDeniedError) as refused:
            await producer.send(b"no", routing_type="anycast")
        assert refused.value.reason == Reason.PERMISSION_DENIED
        assert "user 'app'" in str(refused.value) and "'admin.x'" in str(refused.value)
    async with await connect(user_url(endpoints["n1"], ADMIN, ca_cert)) as conn:
        await (await (await conn.session()).create_producer("admin.x")).send(b"yes", routing_type="anycast")
    # the cluster connection: n1 forwards to a consumer on n3 over a TLS link with the cluster password
    await forwarded_across(user_url(endpoints["n1"], ADMIN, ca_cert, useTopologyForLoadBalancing="false"),
                           user_url(endpoints["n3"], APP, ca_cert, useTopologyForLoadBalancing="false"),
                           queue="app.cluster")
    assert "refused a cluster link" not in (run / "n3.log").read_text()

    # the gateway: HTTPS with a certificate from the cluster CA, TLS to the routers, the nodes' users and roles
    with httpx.Client(base_url=endpoints["gateway"], verify=ssl.create_default_context(cafile=str(ca_cert)),
                      timeout=30) as gateway:
        assert endpoints["gateway"].startswith("https://")
        refused_app = gateway.post("/api/v1/auth/token", json={"username": APP[0], "password": APP[1]})
        assert refused_app.status_code == 403 and "view or manage permission" in refused_app.json()["detail"]
        token = gateway.post("/api/v1/auth/token", json={"username": ADMIN[0], "password": ADMIN[1]}).json()
        nodes = gateway.get("/api/v1/nodes", headers={"Authorization": f"Bearer {token['token']}"}).json()
        assert sorted((n["name"], n["up"]) for n in nodes) == [("n1", True), ("n2", True), ("n3", True)]

    # no credentials: refused; no CA to verify the node with (the system's CAs): the handshake fails
    with pytest.raises(AuthenticationError):
        await connect(user_url(endpoints["n1"], None, ca_cert))
    with pytest.raises(ConnectionFailedError) as unverified:
        await connect(user_url(endpoints["n1"], APP, None, callTimeout="3000"))
    assert "CERTIFICATE_VERIFY_FAILED" in str(unverified.value)
    with pytest.raises(ConnectionFailedError):  # nor does a plain-text client get anywhere
        await connect(f"meshmq://{APP[0]}:{APP[1]}@{endpoints['n1']}?callTimeout=3000")

    # the discovery service: TLS, and no List without the cluster credential or a user's
    tls = channel_credentials(ca_cert)
    request = dpb.ListNodesRequest(cluster_name="secured-3")
    stranger = GrpcDiscoveryClient(endpoints["discovery"], credentials=tls)
    cluster = GrpcDiscoveryClient(endpoints["discovery"], credentials=tls,
                                  prover=ClusterProver(n1.cluster_user, n1.cluster_password))
    app = GrpcDiscoveryClient(endpoints["discovery"], credentials=tls, metadata=credentials_metadata(*APP))
    try:
        with pytest.raises(DiscoveryError) as unauthenticated:
            await stranger.list(request)
        assert unauthenticated.value.reason == Reason.UNAUTHENTICATED
        for client in (cluster, app):
            assert len((await client.list(request)).nodes) == 3
    finally:
        for client in (stranger, cluster, app):
            await client.close()

    # status asks discovery with the cluster credential: every node in the topology
    status = cli("status", "--run-dir", str(run))
    assert status.returncode == 0, status.stdout + status.stderr
    rows = [line.split("\t") for line in status.stdout.splitlines()[1:]]
    assert [(r[0], r[2], r[5]) for r in rows] == [
        ("etcd", "yes", "-"), ("discovery", "yes", "-"), ("gateway", "yes", "-"), ("n1", "yes", "yes"),
        ("n2", "yes", "yes"), ("n3", "yes", "yes")]
    assert [r[6] for r in rows[3:]] == ["?", "?", "?"]  # NodeInfo needs a user: status has none

    down = cli("down", "--run-dir", str(run))
    assert down.returncode == 0, down.stdout + down.stderr
    assert all(gone(pid) for pid in pids)
