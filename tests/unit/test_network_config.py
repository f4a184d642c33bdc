"""Network connectors and the tree connector in node config: URIs parsed to
targets or a discovery group, ActiveMQ's names and defaults, and every bad
input reported at its key path with what is wrong."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meshmq.config import defaults
from meshmq.config.loader import ConfigError, effective_config_yaml, load_config_text
from meshmq.config.network import NetworkConnector, TreeConnector, parse_static_uri


def load(text: str):
    return load_config_text(textwrap.dedent(text), source="node.yaml")


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(text)
    return str(info.value).splitlines()


# --- valid configs ---------------------------------------------------------------


def test_a_connector_with_only_a_uri_has_activemqs_defaults() -> None:
    nc = load("network-connectors:\n  to-b:\n    uri: static:(meshmq://b:61616)\n").network_connectors["to-b"]
    assert nc.targets == (("b:61616",),)
    assert nc.discovery is None and nc.discovery_group_ref is None
    assert (nc.duplex, nc.network_ttl, nc.message_ttl, nc.consumer_ttl) == (False, 1, 1, 1)
    assert (nc.conduit_subscriptions, nc.dynamic_only, nc.decrease_network_consumer_priority) == (True, False, False)
    assert (nc.suppress_duplicate_queue_subscriptions, nc.suppress_duplicate_topic_subscriptions) == (False, True)
    assert (nc.prefetch_size, nc.bridge_temp_destinations, nc.replay_when_no_consumers) == (1000, True, False)
    assert (nc.user_name, nc.password) == (None, None)
    for filters in (nc.statically_included_destinations, nc.dynamically_included_destinations,
                    nc.excluded_destinations):
        assert (filters.queues, filters.topics) == ((), ())
    assert nc.prefetch_size == defaults.NC_PREFETCH_SIZE and nc.network_ttl == defaults.NC_NETWORK_TTL


def test_no_network_or_tree_connector_by_default() -> None:
    config = load("")
    assert config.network_connectors == {} and config.tree_connector is None


@pytest.mark.parametrize(("uri", "targets"), [
    ("static:(meshmq://h1:61616,meshmq://h2:61617)", (("h1:61616",), ("h2:61617",))),
    ("static:meshmq://h:5000", (("h:5000",),)),
    ("static://(meshmq://h1:1, meshmq://h2:2)", (("h1:1",), ("h2:2",))),
    ("static:(meshmq://h)", (("h:61616",),)),
    ("static:(meshmq://[::1]:7000)", (("[::1]:7000",),)),
    ("static:(failover:(meshmq://live:61616,meshmq://backup:61617))", (("live:61616", "backup:61617"),)),
    ("static:(meshmq://a:1,failover:(meshmq://live:2,meshmq://backup:3),meshmq://c:4)",
     (("a:1",), ("live:2", "backup:3"), ("c:4",))),
    ("static:failover:(meshmq://live:2,meshmq://backup:3)", (("live:2", "backup:3"),)),
])
def test_static_uris_parse_to_targets(uri: str, targets: tuple) -> None:
    assert NetworkConnector(uri=uri).targets == targets


def test_a_discovery_uri_builds_an_etcd_discovery_group() -> None:
    nc = NetworkConnector(uri="discovery:(etcd://127.0.0.1:2379,127.0.0.2:2379)?clusterName=stores")
    assert nc.targets == ()
    assert nc.discovery is not None and nc.discovery.source == "etcd"
    assert nc.discovery.etcd.endpoints == ("127.0.0.1:2379", "127.0.0.2:2379")
    assert nc.discovery.cluster_name == "stores"
    plain = NetworkConnector(uri="discovery:(etcd://etcd-host:2379)")
    assert plain.discovery.cluster_name == defaults.CLUSTER_NAME
    assert plain.discovery.etcd.endpoints == ("etcd-host:2379",)


def test_every_key_by_its_activemq_name() -> None:
    nc = load("""\
        discovery-groups:
          dg: {etcd: {endpoints: [127.0.0.1:2379]}}
        network-connectors:
          mesh:
            discovery-group-ref: dg
            duplex: true
            networkTTL: 3
            consumerTTL: 2
            conduitSubscriptions: false
            dynamicOnly: true
            decreaseNetworkConsumerPriority: true
            suppressDuplicateQueueSubscriptions: true
            suppressDuplicateTopicSubscriptions: false
            prefetchSize: 10
            bridgeTempDestinations: false
            userName: bridge
            password: secret
            replayWhenNoConsumers: true
            staticallyIncludedDestinations: {queues: [TEST.FOO]}
            dynamicallyIncludedDestinations: {queues: [ORDERS.>], topics: [PRICE.STOCK.*.IBM]}
            excludedDestinations: {topics: [PRICE.STOCK.NYSE.>]}
        """).network_connectors["mesh"]
    assert nc.discovery_group_ref == "dg" and nc.targets == () and nc.discovery is None
    assert (nc.duplex, nc.network_ttl, nc.message_ttl, nc.consumer_ttl) == (True, 3, 3, 2)
    assert (nc.conduit_subscriptions, nc.dynamic_only, nc.decrease_network_consumer_priority) == (False, True, True)
    assert (nc.suppress_duplicate_queue_subscriptions, nc.suppress_duplicate_topic_subscriptions) == (True, False)
    assert (nc.prefetch_size, nc.bridge_temp_destinations, nc.replay_when_no_consumers) == (10, False, True)
    assert (nc.user_name, nc.password) == ("bridge", "secret")
    assert nc.statically_included_destinations.queues == ("TEST.FOO",)
    assert nc.dynamically_included_destinations.queues == ("ORDERS.>",)
    assert nc.dynamically_included_destinations.topics == ("PRICE.STOCK.*.IBM",)
    assert nc.excluded_destinations.topics == ("PRICE.STOCK.NYSE.>",)


def test_python_names_work_in_code() -> None:
    nc = NetworkConnector(uri="static:meshmq://b:1", network_ttl=2, explicit_message_ttl=4, conduit_subscriptions=False)
    assert (nc.message_ttl, nc.consumer_ttl, nc.conduit_subscriptions) == (4, 2, False)


def test_a_tree_leaf_names_its_branch_and_may_have_network_connectors_too() -> None:
    config = load("""\
        tree-connector:
          node-type: leaf
          uri: static:(failover:(meshmq://branch-live:61616,meshmq://branch-backup:61617))
        network-connectors:
          side: {uri: "static:meshmq://peer:61616"}
        """)
    tree = config.tree_connector
    assert tree is not None and tree.node_type == "leaf"
    assert tree.target == ("branch-live:61616", "branch-backup:61617")
    assert tree.prefetch_size == defaults.TC_PREFETCH_SIZE == 1000
    assert config.network_connectors["side"].targets == (("peer:61616",),)
    assert TreeConnector(node_type="branch", uri="static:meshmq://root:1").target == ("root:1",)


def test_effective_config_masks_the_password_and_reloads_equal() -> None:
    config = load("""\
        network-connectors:
          to-b: {uri: "static:(meshmq://b:61616)", userName: u, password: secret, messageTTL: 2}
        tree-connector: {node-type: branch, uri: "static:meshmq://root:61616"}
        """)
    masked = effective_config_yaml(config)
    assert "secret" not in masked and "userName: u" in masked and "messageTTL: 2" in masked
    assert load_config_text(effective_config_yaml(config, show_secrets=True)) == config


# --- bad input: the key path and the problem ------------------------------------

BAD = [
    pytest.param("network-connectors:\n  x:\n    uri: static:(tcp://h:1)\n",
                 "node.yaml:3: network-connectors.x.uri: 'tcp://h:1' in 'static:(tcp://h:1)': tcp:// is an "
                 "ActiveMQ transport; a meshmq router is reached at meshmq://host:port", id="tcp-scheme"),
    pytest.param("network-connectors:\n  x:\n    uri: static:(meshmq://h:1\n",
                 "node.yaml:3: network-connectors.x.uri: unclosed '(' in 'static:(meshmq://h:1'", id="unclosed"),
    pytest.param("network-connectors:\n  x:\n    uri: static:()\n",
                 "node.yaml:3: network-connectors.x.uri: an empty list in 'static:()'", id="empty-list"),
    pytest.param("network-connectors:\n  x:\n    uri: static:(meshmq://h:1,)\n",
                 "node.yaml:3: network-connectors.x.uri: an empty member in 'static:(meshmq://h:1,)'",
                 id="empty-member"),
    pytest.param("network-connectors:\n  x:\n    uri: static:(meshmq://h:99999)\n",
                 "node.yaml:3: network-connectors.x.uri: bad port in 'meshmq://h:99999'", id="port-too-big"),
    pytest.param("network-connectors:\n  x:\n    uri: static:(meshmq://h:abc)\n",
                 "node.yaml:3: network-connectors.x.uri: bad port in 'meshmq://h:abc'", id="port-not-a-number"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://a:1,meshmq://b:2\n",
                 "node.yaml:3: network-connectors.x.uri: several targets in 'static:meshmq://a:1,meshmq://b:2' "
                 "need parentheses", id="list-without-parentheses"),
    pytest.param("network-connectors:\n  x:\n    uri: static:(meshmq://a:1)?networkTTL=2\n",
                 "node.yaml:3: network-connectors.x.uri: options after the list in", id="options-after-list"),
    pytest.param("network-connectors:\n  x:\n    uri: static:(meshmq://a:1?consumerWindowSize=0)\n",
                 "has URI options, which a network link does not read", id="member-options"),
    pytest.param("network-connectors:\n  x:\n    uri: static:(meshmq://u:p@a:1)\n",
                 "carries a username: give userName and password as keys instead", id="userinfo"),
    pytest.param("network-connectors:\n  x:\n    uri: static:(meshmq://a:1,meshmq://a:1)\n",
                 "node.yaml:3: network-connectors.x.uri: a:1 is listed twice", id="duplicate-target"),
    pytest.param("network-connectors:\n  x:\n    uri: multicast://default\n",
                 "node.yaml:3: network-connectors.x.uri: multicast discovery is replaced by etcd", id="multicast"),
    pytest.param("network-connectors:\n  x:\n    uri: meshmq://h:1\n",
                 "node.yaml:3: network-connectors.x.uri: expected static:(meshmq://h1:61616,meshmq://h2:61616) or "
                 "discovery:(etcd://127.0.0.1:2379)?clusterName=meshmq", id="no-static-prefix"),
    pytest.param("network-connectors:\n  x:\n    uri: discovery:(etcd://h:2379)?group=x\n",
                 "node.yaml:3: network-connectors.x.uri: unknown URI option group", id="discovery-option"),
    pytest.param("network-connectors:\n  x:\n    uri: discovery:(etcd://h:0)\n",
                 "node.yaml:3: network-connectors.x.uri: 'discovery:(etcd://h:0)': expected host:port with a port "
                 "from 1 to 65535", id="discovery-bad-port"),
    pytest.param("network-connectors:\n  x:\n    uri: discovery:(multicast://default)\n",
                 "meshmq discovers through etcd", id="discovery-agent"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n    prefetch: 5\n",
                 "node.yaml:4: network-connectors.x.prefetch: unknown key", id="unknown-option"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n    conduit-subscriptions: false\n",
                 "node.yaml:4: network-connectors.x.conduit-subscriptions: unknown key: did you mean "
                 "conduitSubscriptions (ActiveMQ's name)?", id="kebab-activemq-name"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n    network_ttl: 2\n",
                 "node.yaml:4: network-connectors.x.network_ttl: unknown key: did you mean networkTTL "
                 "(ActiveMQ's name)?", id="snake-activemq-name"),
    pytest.param("network-connectors:\n  x:\n    discovery_group_ref: dg\n",
                 "node.yaml:3: network-connectors.x.discovery_group_ref: unknown key: did you mean "
                 "discovery-group-ref (meshmq's cross-reference)?", id="snake-cross-reference"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n    name: x\n",
                 "node.yaml:4: network-connectors.x.name: the network connector's name is its key under "
                 "network-connectors", id="name-key"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n"
                 "    dynamicallyIncludedDestinations: {topics: [PRICE.>.IBM]}\n",
                 "node.yaml:4: network-connectors.x.dynamicallyIncludedDestinations.topics[0]: 'PRICE.>.IBM': '>' "
                 "matches the rest of the name and must be the last word", id="bad-wildcard"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n"
                 "    excludedDestinations: {queues: [ORDERS..EU]}\n",
                 "node.yaml:4: network-connectors.x.excludedDestinations.queues[0]: 'ORDERS..EU' has an empty word",
                 id="empty-word"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n"
                 "    staticallyIncludedDestinations: {queues: [TEST.*]}\n",
                 "node.yaml:4: network-connectors.x.staticallyIncludedDestinations.queues[0]: 'TEST.*' has a "
                 "wildcard: statically included destinations are exact names", id="wildcard-in-static"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n    userName: bridge\n",
                 "node.yaml:2: network-connectors.x.password: give both userName and password, or neither",
                 id="username-without-password"),
    pytest.param("discovery-groups:\n  dg: {etcd: {endpoints: [127.0.0.1:2379]}}\n"
                 "network-connectors:\n  x:\n    uri: static:meshmq://b:1\n    discovery-group-ref: dg\n",
                 "node.yaml:6: network-connectors.x.discovery-group-ref: give uri or discovery-group-ref, not both",
                 id="uri-and-ref"),
    pytest.param("network-connectors:\n  x:\n    duplex: true\n",
                 "node.yaml:2: network-connectors.x: give uri (static:(...) or discovery:(...)) or "
                 "discovery-group-ref", id="neither-uri-nor-ref"),
    pytest.param("network-connectors:\n  x:\n    discovery-group-ref: dg\n",
                 "node.yaml:3: network-connectors.x.discovery-group-ref: no discovery group named 'dg' "
                 "(discovery-groups: none)", id="unknown-discovery-group"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n    networkTTL: 0\n",
                 "node.yaml:4: network-connectors.x.networkTTL: Input should be greater than or equal to 1",
                 id="ttl-zero"),
    pytest.param("network-connectors:\n  x:\n    uri: static:meshmq://b:1\n    prefetchSize: 0\n",
                 "node.yaml:4: network-connectors.x.prefetchSize: Input should be greater than or equal to 1",
                 id="prefetch-zero"),
    pytest.param("tree-connector:\n  node-type: root\n  uri: static:meshmq://b:1\n",
                 "node.yaml:2: tree-connector.node-type: a node without tree-connector is the root: leave "
                 "tree-connector out on it", id="tree-root"),
    pytest.param("tree-connector:\n  node-type: trunk\n  uri: static:meshmq://b:1\n",
                 "node.yaml:2: tree-connector.node-type: Input should be 'leaf' or 'branch'", id="tree-type"),
    pytest.param("tree-connector:\n  node-type: leaf\n",
                 "node.yaml:1: tree-connector.uri: required key is missing", id="tree-no-uri"),
    pytest.param("tree-connector:\n  node-type: leaf\n  uri: static:(meshmq://a:1,meshmq://b:2)\n",
                 "node.yaml:3: tree-connector.uri: 2 targets in 'static:(meshmq://a:1,meshmq://b:2)': a tree node "
                 "has exactly one parent", id="tree-two-targets"),
    pytest.param("tree-connector:\n  node-type: leaf\n  uri: discovery:(etcd://h:2379)\n",
                 "node.yaml:3: tree-connector.uri: discovery is not allowed here: a leaf names its branch",
                 id="tree-discovery"),
    pytest.param("tree-connector:\n  node-type: leaf\n  uri: static:(meshmq://a:1)\n  networkTTL: 2\n",
                 "node.yaml:4: tree-connector.networkTTL: unknown key", id="tree-unknown-key"),
]


@pytest.mark.parametrize(("text", "expected"), BAD)
def test_bad_input_names_the_key_and_the_problem(text: str, expected: str) -> None:
    found = problems(text)
    assert len(found) == 1, found
    assert found[0].startswith(expected) if expected.startswith("node.yaml") else expected in found[0], found[0]


# --- the static URI parser, on generated lists ----------------------------------

_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
_hosts = st.one_of(
    st.lists(_words, min_size=1, max_size=3).map(".".join).filter(lambda h: not h.isdigit()),
    st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t))),
    st.just("[::1]"),
)
_endpoints = st.tuples(_hosts, st.integers(1, 65535)).map(lambda hp: f"{hp[0]}:{hp[1]}")
_targets = st.lists(st.lists(_endpoints, min_size=1, max_size=3), min_size=1, max_size=6).filter(
    lambda targets: len({e for t in targets for e in t}) == sum(map(len, targets)))


def _member(target: list[str]) -> str:
    listed = ",".join(f"meshmq://{endpoint}" for endpoint in target)
    return listed if len(target) == 1 else f"failover:({listed})"


@given(_targets, st.sampled_from(["static:", "static://"]))
def test_a_generated_static_list_parses_back_to_its_targets(targets: list[list[str]], prefix: str) -> None:
    uri = f"{prefix}({','.join(map(_member, targets))})"
    assert parse_static_uri(uri) == tuple(tuple(t) for t in targets)
