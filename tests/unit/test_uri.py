import pytest

from meshmq.client.options import ClientOptions
from meshmq.client.uri import parse_uri
from meshmq.errors import InvalidRequestError


def test_defaults_and_options():
    u = parse_uri("meshmq://127.0.0.1:61617?consumerWindowSize=-1&sslEnabled=true&clientID=app")
    [server] = u.servers
    assert (server.host, server.port, server.target) == ("127.0.0.1", 61617, "127.0.0.1:61617")
    assert u.options.consumerWindowSize == -1 and u.options.sslEnabled and u.options.clientID == "app"
    assert parse_uri("meshmq://localhost").servers[0].port == 61616
    assert parse_uri("meshmq://localhost").options == ClientOptions()


def test_credentials_in_userinfo():
    u = parse_uri("meshmq://app:s%40cret@127.0.0.1:61616")
    assert (u.options.username, u.options.password) == ("app", "s@cret")


@pytest.mark.parametrize(
    "uri, fragment",
    [
        ("", "empty connection URI"),
        ("tcp://127.0.0.1:61616", "unsupported URI scheme 'tcp'"),
        ("meshmq://127.0.0.1:99999", "bad port"),
        ("meshmq://127.0.0.1:61616?consumerWindowSise=5", "did you mean 'consumerWindowSize'"),
        ("meshmq://127.0.0.1:61616?sslEnabled=maybe", "expected true or false"),
        ("meshmq://127.0.0.1:61616?callTimeout=soon", "expected an integer"),
        ("meshmq://127.0.0.1:61616?minLargeMessageSize=0", "must be positive"),
        # The router refuses windows past Artemis's int (issue 26): the URI says so first.
        ("meshmq://127.0.0.1:61616?consumerWindowSize=2147483648", "or 1..2147483647 bytes"),
        ("meshmq://127.0.0.1:61616?producerWindowSize=9223372036854775807", "or 1..2147483647 bytes"),
        ("meshmq://127.0.0.1:61616?consumerWindowSize=-5", "must be -1 (no limit), 0"),
        ("meshmq://:61616", "no host"),
        ("meshmq://h:1/path", "unexpected path"),
    ],
)
def test_bad_uris_name_the_problem(uri, fragment):
    with pytest.raises(InvalidRequestError) as err:
        parse_uri(uri)
    assert fragment in str(err.value)


def test_static_list_with_shared_options():
    u = parse_uri("(meshmq://127.0.0.1:61616,meshmq://127.0.0.1:61617)?reconnectAttempts=5&useTopologyForLoadBalancing=false")
    assert [s.target for s in u.servers] == ["127.0.0.1:61616", "127.0.0.1:61617"]
    assert u.options.reconnectAttempts == 5 and not u.options.useTopologyForLoadBalancing


@pytest.mark.parametrize(
    "uri, fragment",
    [
        ("(meshmq://a:1,meshmq://b:2", "unclosed '('"),
        ("()", "empty server list"),
        ("(meshmq://a:1?x=1,meshmq://b:2)?y=2", "after the closing parenthesis"),
        ("(meshmq://a:1)extra", "unexpected 'extra'"),
        ("(meshmq://a:1,tcp://b:2)", "unsupported URI scheme 'tcp'"),
        ("meshmq://a:1?connectionLoadBalancingPolicyClassName=Nope", "unknown load-balancing policy 'Nope'"),
        ("meshmq://a:1?connectionLoadBalancingPolicyClassName=no.such.module:P", "cannot import 'no.such.module'"),
        ("meshmq://a:1?retryIntervalMultiplier=0.5", "at least 1.0"),
        ("meshmq://a:1?reconnectAttempts=-2", "reconnectAttempts"),
    ],
)
def test_bad_lists_and_policies_name_the_problem(uri, fragment):
    with pytest.raises(InvalidRequestError) as err:
        parse_uri(uri)
    assert fragment in str(err.value)


@pytest.mark.parametrize("uri", [
    "meshmq://app:hunter2@host:99999",
    "meshmq://app:hunter2@host/path",
    "(meshmq://app:hunter2@h1:1,meshmq://h2:2?password=hunter2&bogus=1",
    "meshmq://h:1?password=hunter2&nosuchoption=1",
])
def test_an_error_quoting_the_uri_never_shows_the_password(uri):
    with pytest.raises(InvalidRequestError) as exc:
        parse_uri(uri)
    assert "hunter2" not in str(exc.value)
