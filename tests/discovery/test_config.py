"""Discovery keys of the node YAML: defaults, and one clear error per mistake,
naming the key and the line."""

from __future__ import annotations

import textwrap

import pytest

from meshmq.config.loader import ConfigError, load_config
from meshmq.config.models import DiscoveryService
from meshmq.discovery import DiscoveryConfigError
from services.discovery.config import served_group


def load(tmp_path, text: str):
    path = tmp_path / "node.yaml"
    path.write_text(textwrap.dedent(text))
    return load_config(path)


def problems(tmp_path, text: str) -> str:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, text)
    return str(err.value)


def test_artemis_defaults(tmp_path):
    config = load(tmp_path, """
        discovery-groups:
          dg1:
            etcd: {}
        broadcast-groups:
          bg1: {discovery-group-ref: dg1}
    """)
    group = config.discovery_groups["dg1"]
    assert group.etcd.endpoints == ("127.0.0.1:2379",)
    assert group.etcd.key_prefix == "/meshmq"
    assert (group.cluster_name, group.refresh_timeout, group.initial_wait_timeout) == ("meshmq", 10000, 10000)
    assert config.broadcast_groups["bg1"].broadcast_period == 2000
    assert (config.discovery.listen.host, config.discovery.listen.port) == ("127.0.0.1", 61636)
    assert served_group(config.discovery_groups, config.discovery) == ("dg1", group)


def test_connector_ref_names_an_acceptor(tmp_path):
    said = problems(tmp_path, """
        acceptors: [{name: grpc, port: 0}]
        discovery-groups:
          dg1: {etcd: {}}
        broadcast-groups:
          bg1: {discovery-group-ref: dg1, connector-ref: grcp}
    """)
    assert "broadcast-groups.bg1.connector-ref: no acceptor named 'grcp' (have: grpc)" in said


def test_a_misspelt_key_gets_a_suggestion(tmp_path):
    said = problems(tmp_path, """
        discovery-groups:
          dg1: {etcd: {}, refersh-timeout: 3000}
    """)
    assert "discovery-groups.dg1.refersh-timeout: unknown key (did you mean 'refresh-timeout'?)" in said


def test_etcd_urls_are_accepted(tmp_path):
    config = load(tmp_path, """
        discovery-groups:
          dg1: {etcd: {endpoints: ["http://127.0.0.1:2379/"]}}
    """)
    assert config.discovery_groups["dg1"].etcd.endpoints == ("127.0.0.1:2379",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            """
            discovery-groups:
              dg1:
                etcd: {endpoints: ["127.0.0.1:2379"]}
                static-connectors: ["127.0.0.1:61616"]
            """,
            ":5: discovery-groups.dg1.static-connectors: etcd and static-connectors are exclusive",
        ),
        (
            """
            discovery-groups:
              dg1:
                refresh-timeout: 5000
            """,
            ":3: discovery-groups.dg1: give one of etcd, discovery-service or static-connectors",
        ),
        (
            """
            discovery-groups:
              dg1:
                group-address: 231.7.7.7
                group-port: 9876
            """,
            ":4: discovery-groups.dg1.group-address: group-address configures UDP multicast or JGroups, "
            "which meshmq replaces with etcd",
        ),
        (
            """
            broadcast-groups:
              bg1:
                discovery-group-ref: dg1
                jgroups-channel: activemq_broadcast_channel
            """,
            "broadcast-groups.bg1.jgroups-channel: jgroups-channel configures UDP multicast or JGroups",
        ),
        (
            """
            discovery-groups:
              dg1:
                etcd: {}
                refresh-timeout: 1500
            """,
            ":5: discovery-groups.dg1.refresh-timeout: 1500 ms is below etcd's smallest lease TTL (2000 ms)",
        ),
        (
            """
            discovery-groups:
              dg1: {etcd: {endpoints: ["https://127.0.0.1:2379"]}}
            """,
            "TLS to etcd is not supported yet",
        ),
        (
            """
            discovery-groups:
              dg1: {etcd: {endpoints: ["etcd-a:2379", "etcd-b:2379"]}}
            """,
            "with several endpoints give IP addresses",
        ),
        (
            """
            discovery-groups:
              dg1: {etcd: {}, refresh-timeout: 4000}
            broadcast-groups:
              bg1: {discovery-group-ref: dg1, broadcast-period: 4000}
            """,
            ":5: broadcast-groups.bg1.broadcast-period: 4000 ms must be less than the refresh-timeout of "
            "discovery group 'dg1' (4000 ms)",
        ),
        (
            """
            discovery-groups:
              dg1: {static-connectors: ["127.0.0.1:61616"]}
            broadcast-groups:
              bg1: {discovery-group-ref: dg1}
            """,
            "broadcast-groups.bg1.discovery-group-ref: discovery group 'dg1' uses static-connectors, "
            "which cannot be announced to",
        ),
        (
            """
            discovery-groups:
              dg1: {etcd: {}}
            broadcast-groups:
              bg1: {discovery-group-ref: dg2}
            """,
            "broadcast-groups.bg1.discovery-group-ref: no discovery group named 'dg2' (have: dg1)",
        ),
        (
            """
            discovery-groups:
              dg1: {discovery-service: "127.0.0.1:61636"}
            discovery:
              discovery-group-ref: dg1
            """,
            "discovery.discovery-group-ref: discovery group 'dg1' points at another discovery service",
        ),
        (
            """
            discovery-groups:
              dg1: {etcd: {}, refresh-timeout: 0}
            """,
            "discovery-groups.dg1.refresh-timeout: Input should be greater than 0",
        ),
    ],
)
def test_mistakes_name_the_key_and_line(tmp_path, text, expected):
    assert expected in problems(tmp_path, text)


def test_the_service_needs_to_know_which_group_to_serve(tmp_path):
    config = load(tmp_path, """
        discovery-groups:
          a: {etcd: {}}
          b: {static-connectors: ["127.0.0.1:1"]}
    """)
    with pytest.raises(DiscoveryConfigError, match=r"name the discovery group to serve \(have: a, b\)"):
        served_group(config.discovery_groups, config.discovery)
    assert served_group(config.discovery_groups, DiscoveryService(discovery_group_ref="b"))[0] == "b"
