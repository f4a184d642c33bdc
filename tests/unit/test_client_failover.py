"""The decisions of client failover (meshmq/client/failover.py) and the
failover options of client URIs, Artemis's and ActiveMQ's."""

from __future__ import annotations

import itertools

import pytest

from meshmq.client.failover import (
    FailoverEventType, Incidents, failover_candidates, keepalive_options, reconnect_delays, warrants_failover,
)
from meshmq.client.options import ClientOptions, Server
from meshmq.client.uri import parse_uri
from meshmq.errors import (
    ConnectionFailedError, InvalidRequestError, NotActiveError, QueueNotFoundError, ScaledDownError,
    AuthenticationError,
)

A, B, C, D = (Server("127.0.0.1", p) for p in (1, 2, 3, 4))


def test_the_first_round_goes_at_once_then_the_backoff_grows_to_its_cap():
    opts = ClientOptions(retryInterval=100, retryIntervalMultiplier=2.0, maxRetryInterval=500)
    assert list(reconnect_delays(opts, 6)) == [0.0, 0.1, 0.2, 0.4, 0.5, 0.5]


def test_no_attempts_means_no_round_and_minus_one_never_ends():
    assert list(reconnect_delays(ClientOptions(), 0)) == []
    assert len(list(itertools.islice(reconnect_delays(ClientOptions(), -1), 1000))) == 1000


def test_a_lost_session_tries_the_backup_that_took_over_then_the_named_backup_then_its_node():
    # The backup announced the node id at its own connector: it serves the store now.
    assert failover_candidates(A, "n1", members={"n1": B}, backups={"n1": C}, others=[D], any_node=False) == [B, C, A]
    # Before the takeover shows in the topology: the backup the live named, then the live again.
    assert failover_candidates(A, "n1", members={"n1": A}, backups={"n1": B}, others=[D], any_node=False) == [B, A]
    # No backup: the same node again (a transient break).
    assert failover_candidates(A, "n1", members={}, backups={}, others=[D], any_node=False) == [A]


def test_a_failover_uri_may_move_a_session_to_any_listed_node_after_the_backup():
    got = failover_candidates(A, "n1", members={"n1": A}, backups={"n1": B}, others=[A, B, C, D], any_node=True)
    assert got == [B, A, C, D]


@pytest.mark.parametrize("err,moves", [
    (ConnectionFailedError("gone"), True),
    (NotActiveError("passive"), True),
    (ScaledDownError("moved", target="h:1"), True),
    (QueueNotFoundError("q"), False),
    (AuthenticationError("who"), False),
])
def test_only_a_lost_node_warrants_a_failover(err, moves):
    assert warrants_failover(err) is moves


def test_keepalive_notices_silence_within_the_ttl_and_at_most_two_check_periods():
    opts = dict(keepalive_options(ClientOptions(clientFailureCheckPeriod=1000, connectionTTL=2000)))
    assert opts["grpc.keepalive_time_ms"] == 1000 and opts["grpc.keepalive_timeout_ms"] == 1000
    opts = dict(keepalive_options(ClientOptions()))  # Artemis defaults: 30 s, 60 s
    assert opts["grpc.keepalive_time_ms"] == 30000 and opts["grpc.keepalive_timeout_ms"] == 30000
    assert opts["grpc.http2.ping_timeout_ms"] == 30000
    opts = dict(keepalive_options(ClientOptions(clientFailureCheckPeriod=200, connectionTTL=300)))
    assert opts["grpc.keepalive_time_ms"] == 1000  # routers accept a ping a second, no more
    assert "grpc.keepalive_timeout_ms" not in dict(keepalive_options(ClientOptions(clientFailureCheckPeriod=-1)))


def test_listeners_hear_one_detection_and_one_completion_per_node_whatever_the_sessions():
    incidents = Incidents()
    heard = []
    incidents.listeners.append(lambda event, err: heard.append(event))
    err = ConnectionFailedError("gone")
    first, second = incidents.begin(A, err), incidents.begin(A, err)
    assert first is second and heard == [FailoverEventType.FAILURE_DETECTED]
    incidents.end(first, moved_to=B, err=None)
    assert heard == [FailoverEventType.FAILURE_DETECTED]
    incidents.end(second, moved_to=B, err=None)
    assert heard == [FailoverEventType.FAILURE_DETECTED, FailoverEventType.FAILOVER_COMPLETED]


def test_one_session_that_cannot_move_fails_the_incident_and_a_bad_listener_stops_nothing():
    incidents = Incidents()
    heard = []
    incidents.listeners.append(lambda event, err: 1 / 0)
    incidents.listeners.append(lambda event, err: heard.append((event, str(err))))
    a, b = incidents.begin(A, ConnectionFailedError("gone")), incidents.begin(A, ConnectionFailedError("gone"))
    incidents.end(a, moved_to=B, err=None)
    incidents.end(b, moved_to=None, err=ConnectionFailedError("gave up"))
    assert heard == [(FailoverEventType.FAILURE_DETECTED, "gone"), (FailoverEventType.FAILOVER_FAILED, "gave up")]


def test_artemis_failover_options_are_accepted_with_their_defaults():
    opts = parse_uri("meshmq://h:1").options
    assert (opts.reconnectAttempts, opts.clientFailureCheckPeriod, opts.connectionTTL, opts.callFailoverTimeout) == (
        0, 30000, 60000, 30000)
    opts = parse_uri("meshmq://h:1?reconnectAttempts=-1&initialConnectAttempts=-1&callFailoverTimeout=-1").options
    assert (opts.reconnectAttempts, opts.initialConnectAttempts, opts.callFailoverTimeout) == (-1, -1, -1)


@pytest.mark.parametrize("query,named", [
    ("reconnectAttempts=-2", "reconnectAttempts"),
    ("initialConnectAttempts=0", "initialConnectAttempts"),
    ("clientFailureCheckPeriod=0", "clientFailureCheckPeriod"),
    ("connectionTTL=-5", "connectionTTL"),
    ("callFailoverTimeout=abc", "callFailoverTimeout"),
])
def test_bad_failover_options_are_refused_by_name(query, named):
    with pytest.raises(InvalidRequestError, match=named):
        parse_uri(f"meshmq://h:1?{query}")


def test_the_activemq_failover_transport_maps_onto_the_same_options_with_its_defaults():
    parsed = parse_uri("failover:(meshmq://h1:61616,meshmq://h2:61617)")
    o = parsed.options
    assert parsed.servers == (Server("h1", 61616), Server("h2", 61617)) and parsed.any_node_failover
    assert (o.reconnectAttempts, o.initialConnectAttempts, o.retryInterval, o.maxRetryInterval) == (-1, -1, 10, 30000)
    assert (o.retryIntervalMultiplier, o.callFailoverTimeout, o.useTopologyForLoadBalancing) == (2.0, -1, False)
    assert o.connectionLoadBalancingPolicyClassName == "Random" and not parsed.warm_backup


def test_activemq_failover_options_as_given():
    parsed = parse_uri(
        "failover:(meshmq://h1:61616,meshmq://h2:61617)?randomize=false&maxReconnectAttempts=3"
        "&startupMaxReconnectAttempts=0&initialReconnectDelay=50&maxReconnectDelay=400&useExponentialBackOff=false"
        "&timeout=2000&backup=true&updateClusterClients=true&consumerWindowSize=0"
    )
    o = parsed.options
    assert o.connectionLoadBalancingPolicyClassName == "FirstElement"
    assert (o.reconnectAttempts, o.initialConnectAttempts, o.retryInterval, o.maxRetryInterval) == (3, 1, 50, 400)
    assert (o.retryIntervalMultiplier, o.callFailoverTimeout, o.useTopologyForLoadBalancing) == (1.0, 2000, True)
    assert o.consumerWindowSize == 0 and parsed.warm_backup


@pytest.mark.parametrize("uri,says", [
    ("failover:meshmq://h1:1", r"expected failover:\("),
    ("failover:(meshmq://h1:1)?randomize=perhaps", "randomize"),
    ("failover:(meshmq://h1:1)?maxReconnectAttempts=x", "maxReconnectAttempts"),
    ("failover:(meshmq://h1:1)?rebalanceClusterClients=true", "rebalanceClusterClients=true .* rebalance-cluster-clients"),
    ("failover:(meshmq://h1:1)?nosuchOption=1", "nosuchOption"),
    ("failover:(tcp://h1:61616)", "unsupported URI scheme"),
])
def test_a_bad_failover_uri_is_refused_naming_what_is_wrong(uri, says):
    with pytest.raises(InvalidRequestError, match=says):
        parse_uri(uri)
