"""etcd with its own authentication (issue 10): nodes announce with an etcd
user (`discovery-groups.<name>.etcd.username/password`); without one nobody
can write — or read — the topology, so a stranger cannot add a fake node."""

from __future__ import annotations

import aetcd
import grpc
import pytest
from aetcd import rpc

from meshmq.discovery.etcd_backend import grpc_target
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration

CLUSTER = "etcd-auth"


async def enable_auth(endpoint: str, user: str, password: str) -> None:
    """What `etcdctl user add root && etcdctl auth enable` does."""
    async with grpc.aio.insecure_channel(endpoint) as channel:
        auth = rpc.AuthStub(channel)
        await auth.UserAdd(rpc.AuthUserAddRequest(name=user, password=password))
        await auth.UserGrantRole(rpc.AuthUserGrantRoleRequest(user=user, role="root"))
        await auth.AuthEnable(rpc.AuthEnableRequest())


def announcing(endpoint: str, user: str, password: str) -> str:
    return f"""
    discovery-groups:
      dg:
        etcd: {{endpoints: ["{endpoint}"], username: {user}, password: {password}}}
        cluster-name: {CLUSTER}
        refresh-timeout: 2000
    broadcast-groups:
      bg: {{discovery-group-ref: dg, broadcast-period: 500}}
    """


async def test_only_a_node_with_the_etcd_credentials_announces(etcd, nodes):
    await enable_auth(etcd.endpoint, "root", "etcd-root-pw")
    host, port = grpc_target([etcd.endpoint])
    stranger = aetcd.Client(host=host, port=port)
    with pytest.raises(aetcd.exceptions.ClientError):
        await stranger.put(f"/meshmq/{CLUSTER}/nodes/fake".encode(), b"{}")
    with pytest.raises(aetcd.exceptions.ClientError):
        await stranger.get_prefix(f"/meshmq/{CLUSTER}/".encode())
    await stranger.close()

    node = nodes.router("etcd-authed", extra=announcing(etcd.endpoint, "root", "etcd-root-pw"))
    member = aetcd.Client(host=host, port=port, username="root", password="etcd-root-pw")

    async def announced() -> bool:
        keys = [kv.key.decode() for kv in await member.get_prefix(f"/meshmq/{CLUSTER}/".encode())]
        return any(node.info["node_id"] in key for key in keys)

    await eventually(announced, 20, "the node's announcement in etcd")
    keys = [kv.key.decode() for kv in await member.get_prefix(f"/meshmq/{CLUSTER}/".encode())]
    assert keys and not any("fake" in key for key in keys)  # the stranger's write never landed
    await member.close()


def test_etcd_credentials_come_in_pairs_and_are_masked():
    from meshmq.config.loader import ConfigError, effective_config_yaml, load_config_text

    with pytest.raises(ConfigError, match="password: etcd authentication needs both username and password"):
        load_config_text('discovery-groups:\n  dg: {etcd: {endpoints: ["127.0.0.1:2379"], username: u}}\n')
    config = load_config_text(
        'discovery-groups:\n  dg: {etcd: {endpoints: ["127.0.0.1:2379"], username: u, password: hunter2}}\n'
    )
    assert config.discovery_groups["dg"].etcd.password == "hunter2"
    assert "hunter2" not in effective_config_yaml(config)
