"""Which nodes may receive a client's credentials (meshmq/client/trust.py)."""

import pytest

from meshmq.client.trust import may_receive_credentials, session_candidates, topology_is_verified
from meshmq.client.options import ClientOptions, Server
from meshmq.client.uri import parse_uri
from meshmq.errors import InvalidRequestError

A, B, STRANGER = Server("10.0.0.1", 61616), Server("10.0.0.2", 61616), Server("10.0.0.66", 61616)


@pytest.mark.parametrize(
    "options, verified",
    [
        (ClientOptions(), True),  # no username: no credentials to leak
        (ClientOptions(username="app", password="pw"), False),
        (ClientOptions(username="app", password="pw", sslEnabled=True), True),
        (ClientOptions(sslEnabled=True), True),
    ],
)
def test_topology_is_verified_by_tls_or_irrelevant_without_credentials(options, verified):
    assert topology_is_verified(options) is verified


def test_unverified_topology_is_limited_to_the_uri_hosts():
    c = session_candidates([A, B, STRANGER], [A, B], use_topology=True, verified=False)
    assert c.servers == (A, B) and c.withheld == (STRANGER,)


def test_unverified_topology_keeps_its_liveness_view_of_the_uri_hosts():
    # B left the cluster: the topology says so, and sessions avoid it.
    c = session_candidates([A, STRANGER], [A, B], use_topology=True, verified=False)
    assert c.servers == (A,) and c.withheld == (STRANGER,)


def test_unverified_topology_with_none_of_the_uri_hosts_falls_back_to_the_uri_list():
    # e.g. the URI says localhost and the node announces 127.0.0.1: names are compared as written
    uri = [Server("localhost", 61616)]
    c = session_candidates([Server("127.0.0.1", 61616)], uri, use_topology=True, verified=False)
    assert c.servers == tuple(uri) and c.withheld == (Server("127.0.0.1", 61616),)


def test_host_names_compare_without_case():
    assert may_receive_credentials(Server("Node1.Example", 61616), [Server("node1.example", 61616)], verified=False)
    assert not may_receive_credentials(Server("node1.example", 61617), [Server("node1.example", 61616)], verified=False)


def test_verified_topology_is_used_whole():
    c = session_candidates([A, B, STRANGER], [A], use_topology=True, verified=True)
    assert c.servers == (A, B, STRANGER) and c.withheld == ()


def test_without_topology_balancing_the_uri_list_is_used_and_nothing_is_withheld():
    c = session_candidates([A, B, STRANGER], [A, B], use_topology=False, verified=False)
    assert c.servers == (A, B) and c.withheld == ()


def test_before_the_topology_arrives_the_uri_list_is_used():
    assert session_candidates([], [A], use_topology=True, verified=False) == session_candidates(
        [], [A], use_topology=True, verified=True
    )
    assert session_candidates([], [A], use_topology=True, verified=False).servers == (A,)


def test_discovery_uri_with_a_topology_and_no_uri_hosts_uses_the_topology_when_verified():
    c = session_candidates([A, STRANGER], [], use_topology=False, verified=True)
    assert c.servers == (A, STRANGER)


@pytest.mark.parametrize(
    "uri",
    [
        "discovery://(etcd://127.0.0.1:2379/c)?username=app&password=pw-secret",
        "meshmq+etcd://127.0.0.1:2379/c?username=app&password=pw-secret",
    ],
)
def test_discovery_uri_with_a_username_needs_tls(uri):
    with pytest.raises(InvalidRequestError, match="needs sslEnabled=true") as err:
        parse_uri(uri)
    assert "pw-secret" not in str(err.value)
    assert parse_uri(uri + "&sslEnabled=true").options.username == "app"


def test_discovery_uri_without_a_username_is_unchanged():
    assert parse_uri("discovery://(etcd://127.0.0.1:2379/c)").discovery.cluster_name == "c"


def test_client_channels_never_override_the_name_tls_verifies():
    from meshmq.client.connection import _channel_options

    options = _channel_options(ClientOptions())
    assert not {"grpc.ssl_target_name_override", "grpc.default_authority"} & {name for name, _ in options}
