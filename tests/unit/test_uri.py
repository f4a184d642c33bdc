import pytest

from meshmq.client.uri import ClientOptions, parse_uri
from meshmq.errors import InvalidRequestError


def test_defaults_and_options():
    u = parse_uri("meshmq://127.0.0.1:61617?consumerWindowSize=-1&sslEnabled=true&clientID=app")
    assert (u.host, u.port, u.target) == ("127.0.0.1", 61617, "127.0.0.1:61617")
    assert u.options.consumerWindowSize == -1 and u.options.sslEnabled and u.options.clientID == "app"
    assert parse_uri("meshmq://localhost").port == 61616
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
        ("meshmq://:61616", "no host"),
        ("meshmq://h:1/path", "unexpected path"),
    ],
)
def test_bad_uris_name_the_problem(uri, fragment):
    with pytest.raises(InvalidRequestError) as err:
        parse_uri(uri)
    assert fragment in str(err.value)
