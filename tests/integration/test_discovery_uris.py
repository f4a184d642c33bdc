"""Clients find a cluster through etcd for the first contact, then follow the
topology the node pushes (the Artemis clustering chapter: "Server discovery", "Client-Side Load balancing")."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from meshmq.client import ConnectionFailedError, InvalidRequestError, connect
from meshmq.client.uri import parse_uri

pytestmark = pytest.mark.integration


def announcing(etcd, cluster: str) -> str:
    return f"""
    discovery-groups:
      dg: {{etcd: {{endpoints: ["{etcd.endpoint}"]}}, cluster-name: {cluster}, refresh-timeout: 2000, initial-wait-timeout: 5000}}
    broadcast-groups:
      bg: {{discovery-group-ref: dg, broadcast-period: 500}}
    """


async def test_etcd_uri_finds_the_cluster_and_sessions_follow_the_pushed_topology(nodes, etcd):
    a = nodes.router("disc-a", extra=announcing(etcd, "uris"))
    b = nodes.router("disc-b", extra=announcing(etcd, "uris"))
    ids = {a.info["node_id"]: "a", b.info["node_id"]: "b"}
    url = f"meshmq+etcd://{etcd.endpoint}/uris?initialWaitTimeout=5000&refreshTimeout=2000"
    async with await connect(url) as conn:
        await conn.wait_for_topology(2)
        picks = [ids[(await conn.session()).node_id] for _ in range(8)]
        assert Counter(picks) == {"a": 4, "b": 4}
        assert all(picks[i] != picks[i + 1] for i in range(7))  # round robin alternates
        # a node killed with -9 leaves the pushed topology within refresh-timeout,
        # whichever node the client follows (its watch moves on if that one died)
        victim, survivor = (b, "a") if ids[conn.node.node_id] == "a" else (a, "b")
        victim.kill9()
        await conn.wait_for_topology(1, timeout=15)
        assert {ids[(await conn.session()).node_id] for _ in range(4)} == {survivor}


async def test_activemq_discovery_form_applies_outer_options_to_discovered_transports(nodes, etcd):
    a = nodes.router("disc-c", extra=announcing(etcd, "amq"))
    nodes.router("disc-d", extra=announcing(etcd, "amq"))
    url = (
        f"discovery://(etcd://{etcd.endpoint}/amq?refreshTimeout=2000&initialWaitTimeout=5000)"
        "?connectionLoadBalancingPolicyClassName=FirstElement&consumerWindowSize=0"
    )
    parsed = parse_uri(url)
    assert parsed.discovery.cluster_name == "amq" and parsed.options.consumerWindowSize == 0
    async with await connect(url) as conn:
        topology = await conn.wait_for_topology(2)
        first = min(topology, key=lambda s: s.target)
        nodes_by_endpoint = {a.endpoint: a.info["node_id"]}
        chosen = {(await conn.session()).node_id for _ in range(3)}
        assert len(chosen) == 1  # FirstElement: always the same node, the first of the topology
        if first.target in nodes_by_endpoint:
            assert chosen == {nodes_by_endpoint[first.target]}


async def test_no_node_in_time_or_unreachable_etcd_is_a_clear_error(etcd):
    with pytest.raises(ConnectionFailedError, match="no meshmq node found in cluster 'empty'"):
        await asyncio.wait_for(connect(f"meshmq+etcd://{etcd.endpoint}/empty?initialWaitTimeout=1000"), 20)
    with pytest.raises(ConnectionFailedError, match="within initialWaitTimeout"):
        await asyncio.wait_for(connect("meshmq+etcd://127.0.0.1:1/c?initialWaitTimeout=1000"), 20)


@pytest.mark.parametrize(
    "uri, fragment",
    [
        ("meshmq+etcd:///c", "no etcd endpoint"),
        ("meshmq+etcd://127.0.0.1:2379", "names no cluster"),
        ("meshmq+etcd://127.0.0.1:x/c", "bad etcd endpoint"),
        ("meshmq+etcd://127.0.0.1:2379/c?refreshTimeout=500", "at least 2000"),
        ("meshmq+etcd://127.0.0.1:2379/c?initialWaitTimeout=soon", "expected an integer"),
        ("discovery://(multicast://default)", "discovers through etcd"),
        ("discovery://(etcd://127.0.0.1:2379/c?consumerWindowSize=1)", "put them after the parenthesis"),
        ("discovery://etcd://127.0.0.1:2379/c", "expected discovery://(etcd://"),
        ("meshmq+etcd://127.0.0.1:2379/c?bogus=1", "unknown URI option 'bogus'"),
    ],
)
def test_bad_discovery_uris_name_the_problem(uri, fragment):
    with pytest.raises(InvalidRequestError) as err:
        parse_uri(uri)
    assert fragment in str(err.value)
