"""Who may scrape metrics with security enabled (meshmq/metrics_access.py): the
Basic header parsed, and the 401/403/None decision over configured users and roles."""

from __future__ import annotations

import base64

from meshmq.config.models import BrokerConfig
from meshmq.metrics_access import ScrapeAccess, basic_credentials, metrics_tls


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


CONFIG = {
    "security-enabled": True,
    "users": [{"username": "mon", "password": "m", "roles": ["monitoring"]},
              {"username": "app", "password": "p", "roles": ["apps"]}],
    "security-settings": {"#": {"send": ["apps"]}, "activemq.management": {"view": ["monitoring"]}},
}


def test_basic_credentials_are_parsed_and_anything_else_is_none():
    assert basic_credentials(basic("mon", "a:b")) == ("mon", "a:b")  # the password may hold a colon
    for header in ("", "Bearer abc", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode(),
                   "Basic " + base64.b64encode(b":pw").decode()):
        assert basic_credentials(header) is None, header


def test_a_scrape_needs_a_known_user_with_view_on_management():
    access = ScrapeAccess.from_config(BrokerConfig.model_validate(CONFIG))
    for header in ("", basic("mon", "wrong"), basic("ghost", "m")):
        refusal = access.refusal(header)
        assert refusal.status == 401 and dict(refusal.headers)["WWW-Authenticate"].startswith('Basic realm=')
    forbidden = access.refusal(basic("app", "p"))
    assert forbidden.status == 403 and "'activemq.management'" in forbidden.body
    assert access.refusal(basic("mon", "m")) is None


def test_without_security_anyone_scrapes_over_plain_http():
    config = BrokerConfig.model_validate({**CONFIG, "security-enabled": False})
    assert ScrapeAccess.from_config(config) is None and metrics_tls(config) is None
